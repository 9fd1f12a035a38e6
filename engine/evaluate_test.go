package engine_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/recipes"
)

// probeClassifier records how the engine calls it: whether under a
// signal.Detached context, and how many of its calls (shared by every
// probe of a test) were in flight at once. With block set it ignores ctx
// and returns only when block is closed, as a forward pass that cannot be
// interrupted does.
type probeClassifier struct {
	label string
	p     *probe
	block chan struct{}
}

type probe struct {
	mu       sync.Mutex
	calls    int
	detached int
	inflight int
	most     int
}

func (c probeClassifier) Method() string { return "probe" }

func (c probeClassifier) Classify(ctx context.Context, texts []string) ([][]signal.LabelScore, error) {
	p := c.p
	p.mu.Lock()
	p.calls++
	if signal.IsDetached(ctx) {
		p.detached++
	}
	p.inflight++
	p.most = max(p.most, p.inflight)
	p.mu.Unlock()
	if c.block != nil {
		<-c.block
	} else {
		time.Sleep(5 * time.Millisecond)
	}
	p.mu.Lock()
	p.inflight--
	p.mu.Unlock()
	out := make([][]signal.LabelScore, len(texts))
	for i := range texts {
		out[i] = []signal.LabelScore{{Label: c.label, Score: 0.9}, {Label: "other", Score: 0.1}}
	}
	return out, nil
}

// The model-backed sets of a request run on at most two goroutines, their
// model calls directly on them (Detached), beside the language and lexical
// sets.
func TestModelSetsRunInTurn(t *testing.T) {
	p := &probe{}
	g := compileFile(t, example, engine.Options{Models: signal.Models{
		Domain: probeClassifier{label: "math", p: p}, Jailbreak: probeClassifier{label: "benign", p: p}}})
	for i := 0; i < 3; i++ {
		res, err := g.Route(context.Background(), "", ask("MoM", "Prove that there are infinitely many primes"))
		if err != nil {
			t.Fatal(err)
		}
		if d := findSignal(res, "domain"); d.Error != "" || d.Value != "math" {
			t.Fatalf("domain %+v", d)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls != 6 || p.detached != 6 || p.most > 2 {
		t.Fatalf("%d calls, %d detached, at most %d at once; want 6, 6, at most 2", p.calls, p.detached, p.most)
	}
}

// A model call that does not return is abandoned at the signal deadline:
// the request does not wait for it, though it runs on the model sets'
// goroutine rather than on one of its own.
func TestModelSetAbandonedAtDeadline(t *testing.T) {
	doc, _, err := recipes.LoadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Global.ModelCatalog == nil {
		doc.Global.ModelCatalog = &recipes.ModelCatalog{}
	}
	doc.Global.ModelCatalog.SignalTimeoutMS = 20
	block := make(chan struct{})
	defer close(block)
	p := &probe{}
	g, err := engine.Compile(doc, "", engine.Options{Models: signal.Models{
		Domain: probeClassifier{label: "math", p: p, block: block}, Jailbreak: probeClassifier{label: "benign", p: p}}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := g.Route(context.Background(), "", ask("MoM", "Prove that there are infinitely many primes"))
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 500*time.Millisecond {
		t.Fatalf("routing waited %v past the 20ms signal budget", waited)
	}
	if d := findSignal(res, "domain"); d.Error != signal.CodeDeadline {
		t.Fatalf("domain %+v, want error deadline", d)
	}
	// The language signal ran beside the blocked model call.
	if l := findSignal(res, "language"); l.Error != "" || l.Value == "" {
		t.Fatalf("language %+v", l)
	}
}

// localProbe is a classifier whose calls are a run in this process
// (signal.LocalRunner): probes of one run value answer a text from one run,
// as a joint model's heads do. It records whether each call ran on the
// goroutine that called Route.
type localProbe struct {
	label string
	run   *int
	mu    *sync.Mutex
	onReq *[]bool
}

func (c localProbe) Method() string { return "local-probe" }
func (c localProbe) LocalRun() any  { return c.run }

func (c localProbe) Classify(ctx context.Context, texts []string) ([][]signal.LabelScore, error) {
	buf := make([]byte, 64<<10)
	stack := string(buf[:runtime.Stack(buf, false)])
	c.mu.Lock()
	*c.onReq = append(*c.onReq, strings.Contains(stack, "engine.(*Generation).Route("))
	c.mu.Unlock()
	out := make([][]signal.LabelScore, len(texts))
	for i := range texts {
		out[i] = []signal.LabelScore{{Label: c.label, Score: 0.9}, {Label: "other", Score: 0.1}}
	}
	return out, nil
}

// A request's model sets run on its own goroutine when one local run
// answers them all, its text is small and its budget large; on the lanes
// otherwise (two runs, a long text, a tight budget, a model elsewhere).
func TestOneLocalRunOnRequestGoroutine(t *testing.T) {
	doc, _, err := recipes.LoadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	short := "Prove that there are infinitely many primes"
	long := strings.Repeat("Prove that there are infinitely many primes. ", 100)
	for _, tc := range []struct {
		name      string
		sameRun   bool
		text      string
		timeoutMS int
		want      bool
	}{
		{"one run", true, short, 0, true},
		{"two runs", false, short, 0, false},
		{"long text", true, long, 0, false},
		{"tight budget", true, short, 50, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := *doc
			if tc.timeoutMS > 0 {
				mc := recipes.ModelCatalog{}
				if doc.Global.ModelCatalog != nil {
					mc = *doc.Global.ModelCatalog
				}
				mc.SignalTimeoutMS = tc.timeoutMS
				d.Global.ModelCatalog = &mc
			}
			var mu sync.Mutex
			var onReq []bool
			run, other := new(int), new(int)
			jbRun := run
			if !tc.sameRun {
				jbRun = other
			}
			g, err := engine.Compile(&d, "", engine.Options{Models: signal.Models{
				Domain:    localProbe{label: "math", run: run, mu: &mu, onReq: &onReq},
				Jailbreak: localProbe{label: "benign", run: jbRun, mu: &mu, onReq: &onReq}}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := g.Route(context.Background(), "", ask("MoM", tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if s := findSignal(res, "domain"); s.Error != "" || s.Value != "math" {
				t.Fatalf("domain %+v", s)
			}
			if s := findSignal(res, "jailbreak"); s.Error != "" {
				t.Fatalf("jailbreak %+v", s)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(onReq) != 2 {
				t.Fatalf("%d model calls, want 2", len(onReq))
			}
			for _, on := range onReq {
				if on != tc.want {
					t.Fatalf("model calls on the request's goroutine: %v, want %v", onReq, tc.want)
				}
			}
		})
	}
}
