package pluginsys

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/respcache"
)

// TestKeepRecoveryRecordsWhatWasTakenOut: a record holds the original
// messages the forwarded request lacks (a dropped turn, the original of a
// shortened tool output, one of two identical messages), never a message
// another plugin added, under the request's recipe, decision and model; a
// run that changed nothing, or that context_compression did not apply,
// keeps nothing.
func TestKeepRecoveryRecordsWhatWasTakenOut(t *testing.T) {
	p := &System{recovery: respcache.NewMemory(respcache.Options{}), log: slog.New(slog.DiscardHandler)}
	before := json.RawMessage(`[{"role":"user","content":"old"},{"role":"assistant","content":"same"},{"role":"assistant","content":"same"},{"role":"tool","content":"a long output"},{"role":"user","content":"new"}]`)
	after := `[{"role":"system","content":"Be brief."},{"role":"assistant","content":"same"},{"role":"tool","content":"a lo… output"},{"role":"user","content":"new"}]`
	req := &plugin.Request{Chat: &chat.Request{Fields: map[string]json.RawMessage{"messages": json.RawMessage(after)}}, Recipe: "default", Decision: "general", Model: "small"}
	applied := []plugin.Report{{Type: "system_prompt", Status: plugin.StatusApplied}, {Type: "context_compression", Status: plugin.StatusApplied}}
	ctx := context.Background()
	rec, ok := p.keepRecovery(ctx, req, before, applied)
	if !ok {
		t.Fatal("nothing kept")
	}
	if _, ok := p.keepRecovery(ctx, req, before, []plugin.Report{{Type: "context_compression", Status: plugin.StatusSkipped}}); ok {
		t.Fatal("kept a record of a run context_compression did not apply")
	}
	if _, ok := p.keepRecovery(ctx, req, json.RawMessage(after), applied); ok {
		t.Fatal("kept a record of a run that took nothing out")
	}
	ns := RecoveryNamespace + "/recipe=default/decision=general/model=small"
	if st, err := p.recovery.Stats(10); err != nil || st.Entries != 1 || len(st.Top) != 1 || st.Top[0].Namespace != ns {
		t.Fatalf("records: %+v %v", st, err)
	}
	e, found, err := p.recovery.Lookup(ctx, ns, rec.ID, nil, 0)
	if err != nil || !found {
		t.Fatalf("record %s not found: %v", rec.ID, err)
	}
	var stored RecoveryRecord
	if err := json.Unmarshal(e.Value, &stored); err != nil || stored.ID != rec.ID {
		t.Fatalf("stored %s: %v", e.Value, err)
	}
	var got []string
	for _, m := range stored.Messages {
		got = append(got, string(m))
	}
	want := `{"role":"user","content":"old"} {"role":"assistant","content":"same"} {"role":"tool","content":"a long output"}`
	if strings.Join(got, " ") != want || !strings.HasPrefix(rec.ID, "cr_") || len(rec.ID) != 35 || rec.Decision != "general" || rec.Created.IsZero() {
		t.Fatalf("record %+v: %s", rec, strings.Join(got, " "))
	}
}
