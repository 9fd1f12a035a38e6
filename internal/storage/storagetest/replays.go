package storagetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/storage"
)

func replay(recipe, decision, model, body string) storage.Replay {
	return storage.Replay{Recipe: recipe, Decision: decision, Model: model, Status: 200, RequestID: "req-" + body, Record: []byte(`{"x":"` + body + `"}`)}
}

func testReplays(t *testing.T, s storage.Store) {
	ctx := context.Background()
	var rs []storage.Replay
	for i := range 5 {
		d, m := "code", "big"
		if i%2 == 1 {
			d, m = "chat", "small"
		}
		rs = append(rs, replay("r", d, m, fmt.Sprint(i)))
	}
	rs = append(rs, replay("r", "", "small", "none"))
	if err := s.PutReplays(ctx, rs, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if !strings.HasPrefix(r.ID, "rpl_") || r.CreatedAt.IsZero() {
			t.Fatalf("PutReplays did not assign an id and time: %+v", r)
		}
	}
	got := must(s.GetReplay(ctx, rs[2].ID))
	if got.Decision != "code" || got.Model != "big" || string(got.Record) != `{"x":"2"}` || got.RequestID != "req-2" || got.Status != 200 {
		t.Errorf("GetReplay = %+v", got)
	}
	_, err := s.GetReplay(ctx, "rpl_nope")
	wantErr(t, err, storage.ErrNotFound, "GetReplay of an unknown id")

	ids := func(p storage.Page[storage.Replay]) string {
		var out []string
		for _, r := range p.Data {
			out = append(out, strings.TrimPrefix(string(r.Record), `{"x":"`)[:1])
		}
		return strings.Join(out, ",")
	}
	if p := must(s.ListReplays(ctx, storage.ReplayQuery{Decision: "code"}, storage.ListOptions{})); ids(p) != "4,2,0" || p.HasMore {
		t.Errorf("decision code: %s", ids(p))
	}
	if p := must(s.ListReplays(ctx, storage.ReplayQuery{Model: "small"}, storage.ListOptions{Limit: 2})); ids(p) != "n,3" || !p.HasMore {
		t.Errorf("model small, 2: %s %v", ids(p), p.HasMore)
	} else if p2 := must(s.ListReplays(ctx, storage.ReplayQuery{Model: "small"}, storage.ListOptions{Limit: 2, After: p.Data[1].ID})); ids(p2) != "1" || p2.HasMore {
		t.Errorf("model small after: %s", ids(p2))
	}
	if p := must(s.ListReplays(ctx, storage.ReplayQuery{Decision: "-"}, storage.ListOptions{})); ids(p) != "n" {
		t.Errorf("no decision: %s", ids(p))
	}
	if p := must(s.ListReplays(ctx, storage.ReplayQuery{RequestID: "req-3"}, storage.ListOptions{})); ids(p) != "3" {
		t.Errorf("request id: %s", ids(p))
	}
	if p := must(s.ListReplays(ctx, storage.ReplayQuery{Since: time.Now().Add(time.Hour)}, storage.ListOptions{})); len(p.Data) != 0 {
		t.Errorf("since the future: %s", ids(p))
	}
	if p := must(s.ListReplays(ctx, storage.ReplayQuery{Until: time.Now().Add(time.Hour), Since: time.Now().Add(-time.Hour)}, storage.ListOptions{Order: "asc", Limit: 1})); ids(p) != "0" {
		t.Errorf("window asc: %s", ids(p))
	}
	var seen []string
	if err := s.ScanReplays(ctx, storage.ReplayQuery{Recipe: "r"}, 3, func(r storage.Replay) error {
		seen = append(seen, r.ID)
		return nil
	}); err != nil || len(seen) != 3 || seen[0] != rs[5].ID {
		t.Errorf("ScanReplays: %v %v", seen, err)
	}
	stop := errors.New("stop")
	if err := s.ScanReplays(ctx, storage.ReplayQuery{}, 10, func(storage.Replay) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("ScanReplays did not return fn's error: %v", err)
	}
	if err := s.UpdateReplay(ctx, rs[0].ID, []byte(`{"x":"0","shadow":{}}`)); err != nil {
		t.Fatal(err)
	}
	if got := must(s.GetReplay(ctx, rs[0].ID)); string(got.Record) != `{"x":"0","shadow":{}}` {
		t.Errorf("after UpdateReplay: %s", got.Record)
	}
	wantErr(t, s.UpdateReplay(ctx, "rpl_nope", []byte(`{}`)), storage.ErrNotFound, "UpdateReplay of an unknown id")
	wantErr(t, s.PutReplays(ctx, []storage.Replay{{Recipe: "r"}}, nil), storage.ErrInvalid, "an empty record")
}

func testReplayBounds(t *testing.T, s storage.Store) {
	ctx := context.Background()
	put := func(decision string, n int, b storage.ReplayBounds) {
		for i := range n {
			r := replay("r", decision, "m", fmt.Sprint(i%10))
			if err := s.PutReplays(ctx, []storage.Replay{r}, map[string]storage.ReplayBounds{storage.BoundsKey("r", decision): b}); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func(decision string) int {
		n := 0
		must(0, s.ScanReplays(ctx, storage.ReplayQuery{Recipe: "r", Decision: decision}, 1000, func(storage.Replay) error { n++; return nil }))
		return n
	}
	put("count", 12, storage.ReplayBounds{MaxRecords: 5})
	if n := count("count"); n != 5 {
		t.Errorf("max_records 5 kept %d", n)
	}
	// Each record is 10 bytes: 35 bytes keep 3.
	put("bytes", 8, storage.ReplayBounds{MaxBytes: 35})
	if n := count("bytes"); n != 3 {
		t.Errorf("max_bytes 35 kept %d records of 10 bytes", n)
	}
	// Other scopes are not pruned by a scope's bounds.
	put("free", 7, storage.ReplayBounds{})
	put("count", 1, storage.ReplayBounds{MaxRecords: 2})
	if count("free") != 7 || count("count") != 2 {
		t.Errorf("scopes: free %d, count %d", count("free"), count("count"))
	}
	old := replay("r", "age", "m", "o")
	old.CreatedAt = time.Now().Add(-2 * time.Hour)
	if err := s.PutReplays(ctx, []storage.Replay{old}, nil); err != nil {
		t.Fatal(err)
	}
	put("age", 2, storage.ReplayBounds{MaxAge: time.Hour})
	if n := count("age"); n != 2 {
		t.Errorf("max_age kept %d (the old one should go)", n)
	}
}

func testOutcomes(t *testing.T, s storage.Store) {
	ctx := context.Background()
	rs := []storage.Replay{replay("r", "code", "m", "a"), replay("r", "chat", "m", "b")}
	if err := s.PutReplays(ctx, rs, nil); err != nil {
		t.Fatal(err)
	}
	score := 0.9
	o := storage.Outcome{ReplayID: rs[0].ID, Target: "decision", Verdict: "correct", Score: &score, Source: "judge", Principal: "alice", IdempotencyKey: "k1"}
	first, created, err := s.AddOutcome(ctx, o)
	if err != nil || !created || !strings.HasPrefix(first.ID, "out_") || first.Category != "code" || first.Score == nil || *first.Score != 0.9 {
		t.Fatalf("AddOutcome = %+v %v %v", first, created, err)
	}
	again, created, err := s.AddOutcome(ctx, o)
	if err != nil || created || again.ID != first.ID {
		t.Errorf("a retry with the same key: %+v %v %v", again, created, err)
	}
	other := o
	other.Verdict = "incorrect"
	_, _, err = s.AddOutcome(ctx, other)
	wantErr(t, err, storage.ErrConflict, "the same key for another outcome")
	bob := o
	bob.Principal = "bob"
	if _, created, err := s.AddOutcome(ctx, bob); err != nil || !created {
		t.Errorf("another principal's key is its own: %v %v", created, err)
	}
	for _, v := range []string{"incorrect", "correct", "incorrect"} {
		if _, _, err := s.AddOutcome(ctx, storage.Outcome{ReplayID: rs[1].ID, Target: "decision", Verdict: v, Principal: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.AddOutcome(ctx, storage.Outcome{ReplayID: rs[1].ID, Target: "answer", Verdict: "good", Principal: "alice"}); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.AddOutcome(ctx, storage.Outcome{ReplayID: "rpl_nope", Target: "decision", Verdict: "correct"})
	wantErr(t, err, storage.ErrNotFound, "an outcome of an unknown replay")
	_, _, err = s.AddOutcome(ctx, storage.Outcome{ReplayID: rs[0].ID, Target: "decision"})
	wantErr(t, err, storage.ErrInvalid, "an outcome without a verdict")
	// Retries racing each other are one outcome.
	var wg sync.WaitGroup
	ids := make([]string, 8)
	errs := make([]error, 8)
	createdN := 0
	var mu sync.Mutex
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kept, created, err := s.AddOutcome(ctx, storage.Outcome{ReplayID: rs[1].ID, Target: "answer", Verdict: "good", Principal: "carol", IdempotencyKey: "race"})
			ids[i], errs[i] = kept.ID, err
			if created {
				mu.Lock()
				createdN++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("racing retries: %v %v", ids, errs)
		}
	}
	if createdN != 1 {
		t.Fatalf("racing retries created %d outcomes", createdN)
	}
	tally := must(s.TallyOutcomes(ctx, "decision", []string{"correct"}))
	want := []storage.OutcomeTally{{Category: "chat", Correct: 1, Total: 3}, {Category: "code", Correct: 2, Total: 2}}
	if fmt.Sprint(tally) != fmt.Sprint(want) {
		t.Errorf("TallyOutcomes = %v, want %v", tally, want)
	}
}
