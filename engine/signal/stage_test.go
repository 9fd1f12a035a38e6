package signal

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// recordingSend answers each item with "<round>:<item>" and records the
// calls it got.
type recordingSend struct {
	mu    sync.Mutex
	calls []string
}

func (r *recordingSend) send(_ context.Context, round string, items []any) ([]any, error) {
	r.mu.Lock()
	r.calls = append(r.calls, fmt.Sprintf("%s%v", round, items))
	r.mu.Unlock()
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = fmt.Sprintf("%s:%v", round, it)
	}
	return out, nil
}

func (r *recordingSend) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// Participants that all ask one key share one call; it goes as soon as the
// last of them has asked, with no timer.
func TestStageOneCallPerKey(t *testing.T) {
	var rec recordingSend
	st := NewStage()
	var wg sync.WaitGroup
	ctxs := make([]context.Context, 3)
	parts := make([]*Participant, 3)
	for i := range ctxs {
		ctxs[i], parts[i] = st.Join(t.Context())
	}
	got := make([]any, 3)
	for i := range ctxs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer parts[i].Finish()
			var err error
			if got[i], err = Ask(ctxs[i], "dep", i, rec.send); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if calls := rec.list(); len(calls) != 1 || len(calls[0]) != len("first[0 1 2]") {
		t.Fatalf("calls %q, want one first-round call with three items", calls)
	}
	for i, g := range got {
		if g != fmt.Sprintf("first:%d", i) {
			t.Errorf("participant %d got %v", i, g)
		}
	}
}

// A participant that finishes without asking releases the others' call; a
// question asked after the first call goes in a later round, 2 ms after the
// first at most even while another participant is still running.
func TestStageRounds(t *testing.T) {
	var rec recordingSend
	st := NewStage()
	actx, a := st.Join(t.Context())
	_, b := st.Join(t.Context())
	_, c := st.Join(t.Context())
	done := make(chan any)
	go func() {
		v, err := Ask(actx, "dep", "x", rec.send)
		if err != nil {
			t.Error(err)
		}
		done <- v
	}()
	time.Sleep(5 * time.Millisecond)
	if calls := rec.list(); len(calls) != 0 {
		t.Fatalf("sent %q while two participants could still ask", calls)
	}
	b.Finish()
	c.Finish()
	if v := <-done; v != "first:x" {
		t.Fatalf("got %v", v)
	}
	// c is finished, a runs again: a's next question is a later round; with
	// a second running participant it waits for the 2 ms bound.
	st2ctx, d := st.Join(t.Context())
	_ = st2ctx
	start := time.Now()
	v, err := Ask(actx, "dep", "y", rec.send)
	if err != nil || v != "later:y" {
		t.Fatalf("later ask: %v %v", v, err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("the later round waited %v", el)
	}
	d.Finish()
	a.Finish()
	if calls := rec.list(); len(calls) != 2 || calls[1] != "later[y]" {
		t.Errorf("calls %q", calls)
	}
}

// Without a stage a question is sent alone; an asker whose deadline passes
// stops waiting.
func TestStageAloneAndDeadline(t *testing.T) {
	var rec recordingSend
	if v, err := Ask(t.Context(), "dep", 7, rec.send); err != nil || v != "first:7" {
		t.Fatalf("alone: %v %v", v, err)
	}
	st := NewStage()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	actx, a := st.Join(ctx)
	_, b := st.Join(ctx) // never asks, never finishes in time
	if _, err := Ask(actx, "dep", 1, rec.send); err != context.DeadlineExceeded {
		t.Errorf("err %v, want the deadline", err)
	}
	a.Finish()
	b.Finish() // the abandoned question goes now; nobody waits for it
}

// isStaged sees through the wrappers that carry a policy.
func TestIsStaged(t *testing.T) {
	var c Classifier = stagedFake{}
	w, _ := WithOnUnscanned(c, "allow")
	if !isStaged(w) || isStaged(&fakeClassifier{}) {
		t.Error("isStaged")
	}
}

type stagedFake struct{}

func (stagedFake) Staged()        {}
func (stagedFake) Method() string { return "staged" }
func (stagedFake) Classify(context.Context, []string) ([][]LabelScore, error) {
	return nil, nil
}

// A bundled call carries how long its first question waited (the frontend's
// bundle wait histogram); a call outside a stage carries none.
func TestStageBundleWait(t *testing.T) {
	var got []time.Duration
	var staged []bool
	send := func(ctx context.Context, round string, items []any) ([]any, error) {
		w, ok := BundleWait(ctx)
		got, staged = append(got, w), append(staged, ok)
		return items, nil
	}
	if _, err := Ask(t.Context(), "dep", 1, send); err != nil {
		t.Fatal(err)
	}
	st := NewStage()
	actx, a := st.Join(t.Context())
	_, b := st.Join(t.Context())
	done := make(chan error, 1)
	go func() { _, err := Ask(actx, "dep", 2, send); done <- err }()
	time.Sleep(10 * time.Millisecond) // b still running: the question waits
	b.Finish()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	a.Finish()
	if len(got) != 2 || staged[0] || !staged[1] || got[1] < 10*time.Millisecond {
		t.Fatalf("waits %v staged %v", got, staged)
	}
}
