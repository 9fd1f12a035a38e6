package mgmt

import "testing"

func TestAuditRingAndChain(t *testing.T) {
	a := newAudit(5)
	for i := 0; i < 8; i++ {
		a.Record(AuditEntry{Action: []string{"x", "y"}[i%2]})
	}
	if bad := a.Verify(); bad != 0 {
		t.Fatalf("chain broken at %d", bad)
	}
	p := a.List("", 0, 100)
	if len(p.Entries) != 5 || p.OldestSequence != 4 || !p.Truncated || p.Entries[0].Sequence != 4 {
		t.Fatalf("ring: %+v", p)
	}
	if p := a.List("", 3, 100); p.Truncated {
		t.Fatal("a reader that saw sequence 3 lost nothing")
	}
	if p := a.List("y", 0, 1); len(p.Entries) != 1 || p.Entries[0].Action != "y" || !p.HasMore || p.NextSequence != 4 {
		t.Fatalf("filter: %+v", p)
	}
	// Tampering breaks the chain.
	a.ring[(a.start+2)%a.size].Action = "z"
	if a.Verify() == 0 {
		t.Fatal("an edited entry was not detected")
	}
}
