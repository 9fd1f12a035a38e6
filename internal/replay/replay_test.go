package replay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/cost"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/replay/replayconfig"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/sqlite"
	"github.com/junction-router/junction/recipes"
)

func openStore(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestRecordInputRedactsAndBounds(t *testing.T) {
	in := recordInput("mail me at jane.doe@example.com or call 415-555-0134", []string{"old question", "mail me at jane.doe@example.com or call 415-555-0134"},
		[]string{"You are helpful.", "old question", "an answer", "mail me at jane.doe@example.com or call 415-555-0134"}, 1000)
	b, _ := json.Marshal(in)
	if strings.Contains(string(b), "jane.doe") || strings.Contains(string(b), "0134") || !strings.Contains(in.Text, "[EMAIL]") || !strings.Contains(in.Text, "[PHONE]") {
		t.Fatalf("not redacted: %s", b)
	}
	if in.Truncated || len(in.AllTexts) != 4 || len(in.UserTexts) != 2 || strings.Join(in.Redacted, ",") != "EMAIL,PHONE" {
		t.Fatalf("input: %s", b)
	}
	// A small budget keeps the routing text and the newest texts.
	in = recordInput("newest", []string{"older user text", "newest"}, []string{"system prompt text", "older user text", "newest"}, 20)
	if !in.Truncated || in.Text != "newest" || strings.Join(in.UserTexts, "|") != "newest" || strings.Join(in.AllTexts, "|") != "newest" {
		t.Fatalf("budget 20: %+v", in)
	}
	// A routing text past the budget is cut at a rune boundary.
	in = recordInput(strings.Repeat("é", 10), nil, nil, 5)
	if in.Text != "éé" || !in.Truncated {
		t.Fatalf("cut: %q", in.Text)
	}
}

func event(decision, model string, plugins ...recipes.PluginRef) *dataplane.ReplayEvent {
	return &dataplane.ReplayEvent{RequestID: "req", Endpoint: "/v1/chat/completions", Start: time.Now(), Latency: 12 * time.Millisecond, Status: 200,
		Result: &engine.Result{Recipe: "r", RequestedModel: "MoM", Decision: decision, Model: model, Plugins: plugins,
			Signals: []signal.Result{{Kind: "keyword", Name: "k", Matched: true, Score: 1, Value: "secret keyword text"}}},
		Model: &recipes.Model{Name: model, Pricing: &recipes.Pricing{PromptPer1M: 1, CompletionPer1M: 2}},
		Usage: &cost.Usage{PromptTokens: 100, CompletionTokens: 50}, Input: signal.Input{Text: "hello", UserTexts: []string{"hello"}, AllTexts: []string{"hello"}}}
}

func ref(config string) recipes.PluginRef {
	return recipes.PluginRef{Type: "router_replay", Configuration: json.RawMessage(config)}
}

func count(t *testing.T, st storage.Replays, q storage.ReplayQuery) int {
	n := 0
	if err := st.ScanReplays(context.Background(), q, 1000, func(storage.Replay) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRecorderSamplesBoundsAndFlushes(t *testing.T) {
	st := openStore(t)
	var mu sync.Mutex
	n := 0
	rec := New(Options{Store: st, Sample: func(rate float64) bool {
		mu.Lock()
		defer mu.Unlock()
		if rate >= 1 {
			return true
		}
		n++
		return n%2 == 0 // every other request at a rate below 1
	}})
	defer rec.Close()
	for range 10 {
		rec.Record(event("half", "m", ref(`{"sample_rate":0.5}`)))
		rec.Record(event("bounded", "m", ref(`{"max_records":3}`)))
		rec.Record(event("off", "m", ref(`{"enabled":false}`)))
		rec.Record(event("none", "m")) // no router_replay
	}
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h, b, o := count(t, st, storage.ReplayQuery{Decision: "half"}), count(t, st, storage.ReplayQuery{Decision: "bounded"}), count(t, st, storage.ReplayQuery{Decision: "off"}); h != 5 || b != 3 || o != 0 {
		t.Fatalf("half %d (want 5), bounded %d (want 3), off %d (want 0)", h, b, o)
	}
	if s := rec.Stats(); s.Recorded != 15 || s.SampledOut != 5 || s.Dropped != 0 || s.Failed != 0 {
		t.Fatalf("stats %+v", s)
	}
	var one storage.Replay
	_ = st.ScanReplays(context.Background(), storage.ReplayQuery{Decision: "bounded"}, 1, func(r storage.Replay) error { one = r; return nil })
	r, err := Decode(one.Record)
	if err != nil {
		t.Fatal(err)
	}
	if r.Input != nil || r.Cost == nil || *r.Cost != 0.0002 || r.LatencyMS != 12 || r.Usage.PromptTokens != 100 || len(r.Signals) != 1 {
		t.Fatalf("record %s", one.Record)
	}
	if strings.Contains(string(one.Record), "secret keyword text") {
		t.Fatalf("a signal's value (request text) was recorded: %s", one.Record)
	}
	rec.Close()
	rec.Record(event("bounded", "m", ref(`{}`))) // after Close: nothing, no panic
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// heldStore holds every write until released: the queue fills and the
// recorder drops instead of waiting.
type heldStore struct {
	storage.Replays
	release chan struct{}
}

func (h heldStore) PutReplays(ctx context.Context, rs []storage.Replay, b map[string]storage.ReplayBounds) error {
	<-h.release
	return h.Replays.PutReplays(ctx, rs, b)
}

func TestRecorderNeverWaitsForTheStore(t *testing.T) {
	held := heldStore{Replays: openStore(t), release: make(chan struct{})}
	rec := New(Options{Store: held, Queue: 2, Batch: 1})
	start := time.Now()
	for range 50 {
		rec.Record(event("d", "m", ref(`{}`)))
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Record waited %v for a held store", d)
	}
	close(held.release)
	rec.Close()
	s := rec.Stats()
	if s.Dropped < 45 || s.Recorded+s.Dropped != 50 {
		t.Fatalf("stats %+v: want most dropped, the rest recorded", s)
	}
}

// builtinRecords routes texts with the built-in configuration (model-free)
// and keeps a record of each, as the recorder would.
func builtinRecords(t testing.TB, st storage.Replays, texts []string, n int, prompt bool) (*recipes.Document, *signal.LanguageDetector) {
	t.Helper()
	return builtinRecordsWith(t, st, texts, n, prompt, signal.Models{})
}

// csModel is a domain "model" that calls every text computer science.
type csModel struct{}

func (csModel) Classify(_ context.Context, texts []string) ([][]signal.LabelScore, error) {
	out := make([][]signal.LabelScore, len(texts))
	for i := range out {
		out[i] = []signal.LabelScore{{Label: "computer science", Score: 0.99}, {Label: "math", Score: 0.01}}
	}
	return out, nil
}

func (csModel) Method() string { return "test:cs-model" }

// builtinRecordsWith is builtinRecords routing with models.
func builtinRecordsWith(t testing.TB, st storage.Replays, texts []string, n int, prompt bool, models signal.Models) (*recipes.Document, *signal.LanguageDetector) {
	t.Helper()
	doc, err := recipes.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	lang, err := signal.NewLanguageDetector("de")
	if err != nil {
		t.Skipf("no language detection in this build: %v", err)
	}
	gen, err := engine.Compile(doc, "", engine.Options{Language: lang, Models: models})
	if err != nil {
		t.Fatal(err)
	}
	c := mustConfig(t, `{"max_records":1000000}`)
	c.RecordPrompt = prompt
	batch := make([]storage.Replay, 0, 500)
	for i := range n {
		text := texts[i%len(texts)]
		in := signal.Input{Text: text, UserTexts: []string{text}, AllTexts: []string{"You are helpful.", text}}
		res, err := gen.Route(context.Background(), "", &engine.Request{Model: engine.ModelMoM, Input: in})
		if err != nil {
			t.Fatal(err)
		}
		m, _ := gen.Model(res.Model)
		ev := &dataplane.ReplayEvent{RequestID: "req", Status: 200, Latency: time.Duration(10+i%7) * time.Millisecond, Result: res, Model: m,
			Usage: &cost.Usage{PromptTokens: int64(len(text) / 4), CompletionTokens: 200}, Input: in}
		r := build(ev, c, storage.NewReplayID(), time.Now())
		raw, _ := json.Marshal(r)
		batch = append(batch, storage.Replay{ID: r.ID, Recipe: r.Recipe, Decision: r.Decision, Model: r.Model, Status: 200, Record: raw})
		if len(batch) == cap(batch) || i == n-1 {
			if err := st.PutReplays(context.Background(), batch, nil); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return doc, lang
}

func mustConfig(t testing.TB, raw string) replayconfig.Replay {
	c, err := replayconfig.ParseReplay([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func domainTexts(t testing.TB) []string {
	f, err := os.Open("../../../shared/data/domain/train.jsonl")
	if err != nil {
		t.Skipf("the labelled data is not here: %v", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var v struct{ Text string }
		if json.Unmarshal(sc.Bytes(), &v) == nil && v.Text != "" {
			out = append(out, v.Text)
		}
	}
	return out
}

// codeTo sends the code decision to model.
func codeTo(doc *recipes.Document, model string) *recipes.Document {
	cand := *doc
	cand.Recipes = append([]recipes.Recipe(nil), doc.Recipes...)
	r := &cand.Recipes[0]
	r.Decisions = append([]recipes.Decision(nil), r.Decisions...)
	for i := range r.Decisions {
		if r.Decisions[i].Name == "code" {
			r.Decisions[i].ModelRefs = []recipes.ModelRef{{Model: model}}
		}
	}
	return &cand
}

func TestEvaluate(t *testing.T) {
	st := openStore(t)
	texts := []string{"Write a Python function that reverses a linked list.", "What is the derivative of x^3?", "hello, how are you?", "Ich brauche dringend Hilfe mit meiner Rechnung"}
	doc, lang := builtinRecords(t, st, texts, 40, true)
	// The active configuration reproduces every record.
	ev, err := Evaluate(context.Background(), st, doc, doc, Window{}, 0, lang)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Records != 40 || ev.Evaluated != 40 || ev.Changed != 0 || ev.BaselineMismatches != 0 {
		t.Fatalf("the active configuration as candidate: %+v", ev)
	}
	// Moved to small, which the window has latencies of.
	ev, err = Evaluate(context.Background(), st, codeTo(doc, "small"), doc, Window{Limit: 20}, 3, lang)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(ev)
	if ev.Records != 20 || ev.Changed != 5 || ev.ModelChanged != 5 || ev.DecisionChanged != 0 || len(ev.Changes) != 3 {
		t.Fatalf("code to big: %s", b)
	}
	var code *DecisionDelta
	for i := range ev.ByDecision {
		if ev.ByDecision[i].Decision == "code" {
			code = &ev.ByDecision[i]
		}
	}
	if code == nil || code.Changed != 5 || code.CostDelta == 0 || code.CostUnknown != 0 || code.LatencyUnknown != 0 || code.LatencyAfterMS == code.LatencyBeforeMS {
		t.Fatalf("code's delta: %s", b)
	}
	if len(ev.Transitions) != 1 || ev.Transitions[0].FromModel != "coder" || ev.Transitions[0].ToModel != "small" || ev.Transitions[0].Requests != 5 {
		t.Fatalf("transitions: %s", b)
	}
	// Moved to big, which no record of the window reached: its latency is
	// unknown, its cost is not.
	ev, err = Evaluate(context.Background(), st, codeTo(doc, "big"), doc, Window{Limit: 20}, 3, lang)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ev.ByDecision {
		if d.Decision == "code" && (d.LatencyUnknown != 5 || d.CostUnknown != 0 || d.CostDelta <= 0) {
			t.Fatalf("code to big: %+v", d)
		}
	}
	// Records without the input are routed from their recorded signals:
	// the same changes.
	bare := openStore(t)
	builtinRecords(t, bare, texts, 40, false)
	ev, err = Evaluate(context.Background(), bare, codeTo(doc, "small"), doc, Window{Limit: 20}, 3, lang)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Evaluated != 20 || ev.FromSignals != 20 || ev.Changed != 5 || ev.BaselineMismatches != 0 {
		t.Fatalf("from recorded signals: %+v", ev)
	}
	if _, err := Evaluate(context.Background(), st, doc, doc, Window{Limit: MaxWindow + 1}, 0, lang); err == nil {
		t.Fatal("a window past MaxWindow was accepted")
	}
}

// A record with its text is re-routed with the model-free kinds evaluated
// from the text and the model-backed signals' recorded results standing in:
// traffic a domain model routed replays as it was routed, not as the
// lexical fallback would have routed it; a keyword rule the candidate adds
// is evaluated from the text.
func TestEvaluateStandsRecordedModelResults(t *testing.T) {
	st := openStore(t)
	texts := []string{"hello, how are you?", "Ich brauche dringend Hilfe mit meiner Rechnung", "What is the derivative of x^3?"}
	doc, lang := builtinRecordsWith(t, st, texts, 30, true, signal.Models{Domain: csModel{}})
	ev, err := Evaluate(context.Background(), st, doc, doc, Window{}, 0, lang)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Evaluated != 30 || ev.Changed != 0 || ev.BaselineMismatches != 0 || ev.FromSignals != 0 {
		t.Fatalf("the active configuration over records a domain model routed: %+v", ev)
	}
	// The candidate routes "hello" by a new keyword to small, ahead of code.
	cand := *doc
	cand.Recipes = append([]recipes.Recipe(nil), doc.Recipes...)
	r := &cand.Recipes[0]
	r.Signals.Keywords = append(append([]recipes.KeywordSignal(nil), r.Signals.Keywords...), recipes.KeywordSignal{Name: "greeting", Keywords: []string{"hello"}})
	r.Decisions = append([]recipes.Decision{{Name: "greet", Priority: 1000, Rules: recipes.RuleNode{Operator: "OR", Conditions: []recipes.RuleNode{{Type: "keyword", Name: "greeting"}}},
		ModelRefs: []recipes.ModelRef{{Model: "small"}}}}, r.Decisions...)
	ev, err = Evaluate(context.Background(), st, &cand, doc, Window{}, 0, lang)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Changed != 10 || ev.DecisionChanged != 10 || ev.BaselineMismatches != 0 {
		b, _ := json.Marshal(ev)
		t.Fatalf("a keyword decision over recorded traffic: %s", b)
	}
}

// BenchmarkEvaluate10k evaluates a candidate over 10,000 recorded
// requests (MMLU questions routed by the built-in configuration), routing
// on one goroutine and on GOMAXPROCS (what Evaluate does), interleaved.
func BenchmarkEvaluate10k(b *testing.B) {
	st := openStore(b)
	doc, lang := builtinRecords(b, st, domainTexts(b), 10_000, true)
	cand := codeTo(doc, "big")
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for range b.N {
				ev, err := evaluate(context.Background(), st, cand, doc, Window{Limit: 10_000}, 0, lang, workers)
				if err != nil || ev.Evaluated != 10_000 {
					b.Fatalf("%v %+v", err, ev)
				}
				b.ReportMetric(float64(ev.Changed), "changed")
				b.ReportMetric(float64(ev.BaselineMismatches), "baseline_mismatches")
			}
		})
	}
}

func TestShadowTimeoutAndErrors(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(502)
			return
		}
		time.Sleep(300 * time.Millisecond)
	}))
	defer slow.Close()
	st := openStore(t)
	rec := New(Options{Store: st})
	defer rec.Close()
	shadowed := func(id, path, config string) {
		ev := event("d", "m", ref(`{}`), recipes.PluginRef{Type: "shadow_dispatch", Configuration: json.RawMessage(config)})
		ev.RequestID = id
		ev.Shadow = func(model string) (*dataplane.ShadowRequest, error) {
			if model == "missing" {
				return nil, errors.New("shadow model \"missing\" is not a configured model")
			}
			u, _ := url.Parse(slow.URL + path)
			return &dataplane.ShadowRequest{Model: &recipes.Model{Name: model}, URL: u, Header: http.Header{}, Body: []byte(`{}`)}, nil
		}
		rec.Record(ev)
	}
	shadowed("timeout", "/", `{"model":"s","timeout_ms":50}`)
	shadowed("fail", "/fail", `{"model":"s"}`)
	shadowed("missing", "/", `{"model":"missing"}`)
	shadowed("off", "/", `{"model":"s","enabled":false}`)
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"timeout": "timeout after 50ms", "fail": "answered 502", "missing": "not a configured model", "off": ""} {
		var r Record
		_ = st.ScanReplays(context.Background(), storage.ReplayQuery{RequestID: id}, 1, func(rp storage.Replay) error {
			r, _ = Decode(rp.Record)
			return nil
		})
		switch {
		case r.ID == "":
			t.Errorf("%s: no record", id)
		case want == "" && r.Shadow != nil:
			t.Errorf("%s: a shadow with enabled false: %+v", id, r.Shadow)
		case want != "" && (r.Shadow == nil || !strings.Contains(r.Shadow.Error, want)):
			t.Errorf("%s: shadow %+v, want an error with %q", id, r.Shadow, want)
		}
	}
	if s := rec.Stats(); s.Shadows != 3 || s.Recorded != 4 {
		t.Errorf("stats %+v", s)
	}
}
