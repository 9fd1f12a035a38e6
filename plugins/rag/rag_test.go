package rag

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/plugins/internal/chatmsg"
)

func parse(t *testing.T, raw string) []chatmsg.Message {
	t.Helper()
	m, err := chatmsg.Parse(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func applied(t *testing.T, m []chatmsg.Message, edits []chatmsg.Edit) []chatmsg.Message {
	t.Helper()
	out, err := chatmsg.Apply(chatmsg.Raws(m), edits)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	return parse(t, string(b))
}

const conv = `[{"role":"system","content":"sys"},{"role":"user","content":"old"},{"role":"assistant","content":"a"},{"role":"user","content":"what is the refund window?"}]`

var docs = []Passage{
	{Text: "Refunds are accepted within 30 days.", Source: "policy.md", Score: 0.9},
	{Text: "Shipping takes 5 days.", Source: "shipping.md", Score: 0.4},
	{Text: "  ", Score: 0.95},
}

func TestInjectSystem(t *testing.T) {
	c, err := ParseConfig([]byte(`{"store":"kb","min_score":0.5}`))
	if err != nil {
		t.Fatal(err)
	}
	m := parse(t, conv)
	if Query(m) != "what is the refund window?" {
		t.Fatalf("query %q", Query(m))
	}
	res := c.Inject(m, docs, nil)
	if res.Injected != 1 || res.Skipped {
		t.Fatalf("%+v", res)
	}
	after := applied(t, m, res.Edits)
	if len(after) != 5 || after[1].Role != "system" || after[0].Text != "sys" {
		t.Fatalf("context should follow the leading system message: %+v", after)
	}
	if !strings.Contains(after[1].Text, "[1] (policy.md) Refunds are accepted within 30 days.") || strings.Contains(after[1].Text, "Shipping") {
		t.Errorf("context %q", after[1].Text)
	}
}

func TestInjectTool(t *testing.T) {
	c, _ := ParseConfig([]byte(`{"store":"kb","injection":"tool","template":"CTX:\n{context}"}`))
	m := parse(t, conv)
	res := c.Inject(m, docs[:2], nil)
	after := applied(t, m, res.Edits)
	if len(after) != 6 {
		t.Fatalf("%d messages", len(after))
	}
	call, result := after[4], after[5]
	if call.Role != "assistant" || len(call.ToolCallIDs) != 1 || result.Role != "tool" || result.ToolCallID != call.ToolCallIDs[0] {
		t.Fatalf("tool call and result not paired: %s %s", call.Raw, result.Raw)
	}
	if !strings.HasPrefix(result.Text, "CTX:\n[1]") || !strings.Contains(result.Text, "[2] (shipping.md)") {
		t.Errorf("result %q", result.Text)
	}
}

func TestOnFailure(t *testing.T) {
	boom := errors.New("store offline")
	for policy, check := range map[string]func(*Result) bool{
		"warn":  func(r *Result) bool { return r.Warning != "" && !r.Skipped && r.Block == "" && len(r.Edits) == 0 },
		"skip":  func(r *Result) bool { return r.Skipped && r.Block == "" && len(r.Edits) == 0 },
		"block": func(r *Result) bool { return r.Block != "" && len(r.Edits) == 0 },
	} {
		c, err := ParseConfig([]byte(`{"store":"kb","on_failure":"` + policy + `"}`))
		if err != nil {
			t.Fatal(err)
		}
		res := c.Inject(parse(t, conv), nil, boom)
		if !check(res) || !strings.Contains(res.Detail, "store offline") {
			t.Errorf("%s: %+v", policy, res)
		}
	}
}

func TestMaxContextChars(t *testing.T) {
	c, _ := ParseConfig([]byte(`{"store":"kb","max_context_chars":20}`))
	res := c.Inject(parse(t, conv), docs[:2], nil)
	if res.Chars > 20 || res.Injected != 1 {
		t.Errorf("chars %d injected %d", res.Chars, res.Injected)
	}
}

func TestSupplied(t *testing.T) {
	p, err := ParseSupplied(json.RawMessage(`["plain", {"text":"t","source":"s","score":0.5}]`))
	if err != nil || len(p) != 2 || p[1].Source != "s" {
		t.Fatalf("%v %+v", err, p)
	}
	if _, err := ParseSupplied(json.RawMessage(`[1]`)); err == nil {
		t.Error("a number is not a passage")
	}
}

func TestConfigErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		`{}`:                                    "configuration.store",
		`{"store":"kb","injection":"user"}`:     "configuration.injection",
		`{"store":"kb","on_failure":"explode"}`: "configuration.on_failure",
		`{"store":"kb","template":"no marker"}`: "configuration.template",
		`{"store":"kb","top_k":0.5}`:            "configuration.top_k",
		`{"store":"kb","top_k":51}`:             "configuration.top_k",
		`{"store":"kb","min_score":2}`:          "configuration.min_score",
		`{"store":"kb","filters":{"type":"like","key":"a","value":1}}`:                "configuration.filters.type must be eq, ne",
		`{"store":"kb","filters":{"type":"and","filters":[{"type":"eq","value":1}]}}`: "configuration.filters.filters[0] a \"eq\" comparison needs a key",
		`{"store":"kb","filters":"lang=en"}`:                                          "configuration.filters",
	} {
		if _, err := ParseConfig([]byte(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", cfg, err, want)
		}
	}
}

func TestRetrieveArgs(t *testing.T) {
	c, err := ParseConfig([]byte(`{"store":"handbook"}`))
	if err != nil {
		t.Fatal(err)
	}
	a := c.RetrieveArgs("refund window")
	// Unset top_k and min_score leave the knowledge base's own.
	if a != (abi.RetrieveArgs{Source: "handbook", Query: "refund window"}) {
		t.Fatalf("defaults: %+v", a)
	}
	c, err = ParseConfig([]byte(`{"store":"vs_1","top_k":4,"min_score":0,
		"filters":{ "type": "and", "filters": [{"type":"eq","key":"lang","value":"en"}, {"type":"gte","key":"year","value":0}] }}`))
	if err != nil {
		t.Fatal(err)
	}
	a = c.RetrieveArgs("q")
	want := abi.RetrieveArgs{Source: "vs_1", Query: "q", K: 4, MinScore: 0, HasMinScore: true,
		Filter: `{"type":"and","filters":[{"type":"eq","key":"lang","value":"en"},{"type":"gte","key":"year","value":0}]}`}
	if a != want {
		t.Fatalf("args:\n%+v\nwant\n%+v", a, want)
	}
}

func TestPassagesFromHits(t *testing.T) {
	got := Passages([]abi.VectorHit{
		{ID: "vs_1/file_1#0", Score: 0.8, Payload: []byte(`{"text":"Refunds within 30 days.","source":"policy.pdf","file_id":"file_1","vector_store_id":"vs_1","chunk_index":0,"attributes":{}}`)},
		{ID: "vs_1/file_2#3", Score: 0.5, Payload: []byte(`{"text":"No source here."}`)},
		{ID: "raw", Score: 0.1, Payload: []byte("plain text")},
	})
	want := []Passage{{"Refunds within 30 days.", "policy.pdf", float64(float32(0.8))}, {"No source here.", "vs_1/file_2#3", 0.5}, {"plain text", "raw", float64(float32(0.1))}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v", got)
	}
}

func TestSourcesScoresAndTopK(t *testing.T) {
	c, _ := ParseConfig([]byte(`{"store":"kb"}`))
	many := []Passage{{"a", "1.md", 0.9}, {"b", "2.md", 0.8}, {"c", "3.md", 0.7}, {"d", "4.md", 0.6}}
	// Retrieved: the host already applied the source's k; all are kept.
	res := c.Inject(parse(t, conv), many, nil)
	if res.Injected != 4 || !reflect.DeepEqual(res.Sources, []string{"1.md", "2.md", "3.md", "4.md"}) || res.Scores[3] != 0.6 {
		t.Fatalf("retrieved: %+v", res)
	}
	// Supplied (a preview): an unset top_k keeps DefaultTopK.
	res = c.InjectSupplied(parse(t, conv), many)
	if res.Injected != DefaultTopK {
		t.Fatalf("supplied: %+v", res)
	}
	// Nothing found is a skip that says so.
	res = c.Inject(parse(t, conv), nil, nil)
	if !res.Skipped || !strings.Contains(res.Detail, "nothing was found") {
		t.Fatalf("empty: %+v", res)
	}
}
