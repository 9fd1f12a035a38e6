package toolselection

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/lexical"
	"github.com/junction-router/junction/plugins/internal/chatmsg"
)

func msgs(t *testing.T, user string) []chatmsg.Message {
	t.Helper()
	b, _ := json.Marshal([]map[string]string{{"role": "system", "content": "be brief"}, {"role": "user", "content": user}})
	m, err := chatmsg.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// hashed is the host's model-free embedder (what serve embeds with when no
// embedding model is configured).
func hashed(texts []string) ([][]float32, error) {
	return lexical.NewHashedEmbedder(0).Embed(context.Background(), texts)
}

const fourTools = `[
 {"type":"function","function":{"name":"get_weather","description":"Get the current weather forecast for a city"}},
 {"type":"function","function":{"name":"send_email","description":"Send an email message to a recipient"}},
 {"type":"function","function":{"name":"get_time","description":"Current time"}},
 {"type":"function","function":{"name":"search_flights","description":"Search airline flights between airports"}}]`

func TestConfig(t *testing.T) {
	c, err := ParseConfig(nil)
	if err != nil || c.TopK != DefaultTopK || c.Threshold() != 0.2 || !*c.FallbackToEmpty {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	for raw, want := range map[string]float64{`{"similarity_threshold":"0.35"}`: 0.35, `{"similarity_threshold":0.5}`: 0.5, `{"similarity_threshold":" -0.1 "}`: -0.1} {
		c, err := ParseConfig([]byte(raw))
		if err != nil || c.Threshold() != want {
			t.Errorf("%s: %v %v", raw, c, err)
		}
	}
	for cfg, want := range map[string]string{
		`{"top_k":0.5}`:                            "configuration.top_k",
		`{"top_k":100000}`:                         "configuration.top_k",
		`{"similarity_threshold":"high"}`:          "configuration.similarity_threshold",
		`{"similarity_threshold":"2"}`:             "configuration.similarity_threshold",
		`{"similarity_threshold":"NaN"}`:           "configuration.similarity_threshold",
		`{"always_keep":[""]}`:                     "configuration.always_keep[0]",
		`{"tools_db_path":"config/tools_db.json"}`: "put the file's tool definitions in tools_db",
		`{"tools_db":[{"type":"function"}]}`:       "configuration.tools_db[0]",
		`{"tools_db":[5]}`:                         "configuration.tools_db",
		`{"tools_db":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"a"}}]}`: "repeats",
		`{"fallback_to_empty":"no"}`: "configuration.fallback_to_empty",
	} {
		if _, err := ParseConfig([]byte(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", cfg, err, want)
		}
	}
}

func TestSelect(t *testing.T) {
	c, _ := ParseConfig([]byte(`{"top_k":1,"similarity_threshold":"0.05","always_keep":["get_time"]}`))
	r, err := c.Run(Input{Messages: msgs(t, "what is the weather forecast in Paris city"), Tools: json.RawMessage(fourTools),
		ToolChoice: json.RawMessage(`{"type":"function","function":{"name":"send_email"}}`), Embed: hashed})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Kept, ",") != "get_weather,get_time" || strings.Join(r.Remove, ",") != "send_email,search_flights" || !r.DeleteToolChoice {
		t.Fatalf("%+v", r)
	}
	// Preview: nothing embedded, nothing removed.
	r, err = c.Run(Input{Messages: msgs(t, "weather"), Tools: json.RawMessage(fourTools)})
	if err != nil || r.Skipped == "" || len(r.Remove) != 0 || !strings.Contains(r.Detail, "4 candidate tools") {
		t.Fatalf("preview: %+v %v", r, err)
	}
	// Nothing reaches the threshold: fallback_to_empty keeps always_keep only; false keeps all.
	c, _ = ParseConfig([]byte(`{"similarity_threshold":"0.99","always_keep":["get_time"]}`))
	r, _ = c.Run(Input{Messages: msgs(t, "zzz qqq"), Tools: json.RawMessage(fourTools), Embed: hashed})
	if strings.Join(r.Kept, ",") != "get_time" {
		t.Fatalf("fallback_to_empty: %+v", r)
	}
	c, _ = ParseConfig([]byte(`{"similarity_threshold":"0.99","fallback_to_empty":false}`))
	r, _ = c.Run(Input{Messages: msgs(t, "zzz qqq"), Tools: json.RawMessage(fourTools), Embed: hashed})
	if len(r.Kept) != 4 || len(r.Remove) != 0 {
		t.Fatalf("fallback_to_empty false: %+v", r)
	}
}

func TestToolsDB(t *testing.T) {
	c, err := ParseConfig([]byte(`{"top_k":1,"similarity_threshold":0,"tools_db":` + fourTools + `}`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Run(Input{Messages: msgs(t, "send an email to my boss"), Embed: hashed})
	if err != nil || r.Source != "tools_db" || len(r.Add) != 1 || !strings.Contains(string(r.Add[0]), "send_email") {
		t.Fatalf("%+v %v", r, err)
	}
	// The request's own tools win over the database.
	r, _ = c.Run(Input{Messages: msgs(t, "send an email"), Tools: json.RawMessage(`[{"type":"function","function":{"name":"x"}}]`), Embed: hashed})
	if r.Source != "request" || len(r.Add) != 0 {
		t.Fatalf("%+v", r)
	}
}

func TestHostileTools(t *testing.T) {
	c, _ := ParseConfig(nil)
	many := "[" + strings.Repeat(`{"type":"function","function":{"name":"t"}},`, MaxTools) + `{"type":"function"}]`
	for tools, want := range map[string]string{
		`{"a":1}`: "tools must be an array",
		`[1,2]`:   "tools[0]",
		`[{`:      "tools must be an array",
		many:      "at most",
	} {
		if _, err := c.Run(Input{Messages: msgs(t, "hi"), Tools: json.RawMessage(tools), Embed: hashed}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.30s: %v, want %s", tools, err, want)
		}
	}
	// An embedder that fails, or answers the wrong count, fails the step.
	bad := []func([]string) ([][]float32, error){
		func([]string) ([][]float32, error) { return nil, fmt.Errorf("down") },
		func([]string) ([][]float32, error) { return [][]float32{{1}}, nil },
	}
	for _, e := range bad {
		if _, err := c.Run(Input{Messages: msgs(t, "hi"), Tools: json.RawMessage(fourTools), Embed: e}); err == nil {
			t.Error("no error")
		}
	}
	// A tool without a function, a name with odd characters, a huge prompt.
	r, err := c.Run(Input{Messages: msgs(t, strings.Repeat("weather ", 100000)),
		Tools: json.RawMessage(`[{"type":"code_interpreter"},{"type":"function","function":{"name":"we\u0000ird\nname","description":"weather"}}]`), Embed: hashed})
	if err != nil || r.Candidates != 2 {
		t.Fatalf("%+v %v", r, err)
	}
}

// labelled is the labelled set in testdata/recall.json.
type labelled struct {
	Tools []struct{ Name, Description string }
	Cases []struct{ Query, Tool string }
}

// RecallAtK measures, on the labelled set, how often the needed tool is
// among the k tools ranked most similar to the prompt, for each k.
func recallAtK(t *testing.T, embed func([]string) ([][]float32, error), ks []int) map[int]float64 {
	t.Helper()
	raw, err := os.ReadFile("testdata/recall.json")
	if err != nil {
		t.Fatal(err)
	}
	var set labelled
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	names, descrs := make([]string, len(set.Tools)), make([]string, len(set.Tools))
	for i, tl := range set.Tools {
		names[i], descrs[i] = tl.Name, tl.Description
	}
	hits := map[int]int{}
	for _, c := range set.Cases {
		if !slices.Contains(names, c.Tool) {
			t.Fatalf("case %q needs unknown tool %s", c.Query, c.Tool)
		}
		ranked, err := Rank(embed, c.Query, names, descrs)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			if slices.Contains(ranked[:k], c.Tool) {
				hits[k]++
			}
		}
	}
	out := map[int]float64{}
	for _, k := range ks {
		out[k] = float64(hits[k]) / float64(len(set.Cases))
	}
	return out
}

// The figures in README.md: recall of the needed tool at k with the host's
// model-free hashed n-gram embedder. The floors keep a regression visible.
func TestRecallAtK(t *testing.T) {
	r := recallAtK(t, hashed, []int{1, 3, 5})
	t.Logf("hashed n-gram embedder: recall@1 %.3f, recall@3 %.3f, recall@5 %.3f (72 prompts, 24 tools)", r[1], r[3], r[5])
	if r[1] < 0.6 || r[3] < 0.75 || r[5] < 0.75 {
		t.Fatalf("recall fell: %v", r)
	}
}
