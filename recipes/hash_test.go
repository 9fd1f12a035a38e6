package recipes

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// shuffledJSON writes v as JSON with object keys in a random order and random
// insignificant whitespace.
func shuffledJSON(t testing.TB, v any, rng *rand.Rand) []byte {
	t.Helper()
	var buf bytes.Buffer
	ws := func() {
		buf.WriteString([]string{"", " ", "\n", "\t", "\n  ", "\r\n"}[rng.IntN(6)])
	}
	var write func(v any)
	write = func(v any) {
		ws()
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			buf.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					buf.WriteByte(',')
				}
				ws()
				kb, _ := json.Marshal(k)
				buf.Write(kb)
				ws()
				buf.WriteByte(':')
				write(v[k])
			}
			ws()
			buf.WriteByte('}')
		case []any:
			buf.WriteByte('[')
			for i, x := range v {
				if i > 0 {
					buf.WriteByte(',')
				}
				write(x)
			}
			buf.WriteByte(']')
		default:
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(b)
		}
		ws()
	}
	write(v)
	return buf.Bytes()
}

func TestHashIgnoresFormatKeyOrderAndWhitespace(t *testing.T) {
	src := readFile(t, examplePath)
	wantSource, err := HashSource(src)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	wantEffective := Hash(doc)

	rng := rand.New(rand.NewPCG(1, 2))
	v := exampleValue(t)
	for i := range 5 {
		js := shuffledJSON(t, v, rng)
		if i == 0 && !bytes.HasPrefix(bytes.TrimSpace(js), []byte("{")) {
			t.Fatal("not JSON")
		}
		got, err := HashSource(js)
		if err != nil {
			t.Fatal(err)
		}
		if got != wantSource {
			t.Fatalf("shuffled JSON #%d: source hash %s, want %s", i, got, wantSource)
		}
		d, err := Parse(js)
		if err != nil {
			t.Fatalf("shuffled JSON #%d: %v", i, err)
		}
		if Hash(d) != wantEffective {
			t.Fatalf("shuffled JSON #%d: effective hash differs", i)
		}
	}

	// The same document as YAML in another layout (flow style, reordered keys).
	yamlAgain := []byte(strings.Replace(minimalYAML, "version: v1\n", "", 1) + "version: 'v1'\n")
	a, _ := HashSource([]byte(minimalYAML))
	b, err := HashSource(yamlAgain)
	if err != nil || a != b {
		t.Errorf("reordered YAML hashes differently: %s vs %s (%v)", a, b, err)
	}
	flow := []byte(`{version: v1, recipes: [{decisions: [{rules: {conditions: [], operator: AND}, name: all}], name: r}],
	  providers: {models: [{backend_refs: [{provider: demo}], name: m}], defaults: {default_model: m}}}`)
	if c, err := HashSource(flow); err != nil || c != a {
		t.Errorf("flow-style YAML hashes differently: %s vs %s (%v)", c, a, err)
	}
}

func TestHashChangesWithContent(t *testing.T) {
	base := exampleValue(t)
	baseDoc, err := Parse(toJSON(t, base))
	if err != nil {
		t.Fatal(err)
	}
	baseSrc, _ := HashSource(toJSON(t, base))
	changes := []struct {
		ptr string
		val any
	}{
		{"/listeners/0/port", 8802},
		{"/providers/models/0/pricing/prompt_per_1m", 0.11},
		{"/recipes/0/signals/complexity/0/threshold", "0.2"},
		{"/recipes/0/decisions/1/priority", 201},
		{"/recipes/0/decisions/0/plugins/0/configuration/message", "no"},
		{"/recipes/0/signals/keywords/0/keywords/0", "Urgent"},
	}
	for _, c := range changes {
		v := exampleValue(t)
		set(t, v, c.ptr, c.val)
		src, _ := HashSource(toJSON(t, v))
		if src == baseSrc {
			t.Errorf("changing %s left the source hash unchanged", c.ptr)
		}
		d, err := Parse(toJSON(t, v))
		if err != nil {
			t.Fatalf("%s: %v", c.ptr, err)
		}
		if Hash(d) == Hash(baseDoc) {
			t.Errorf("changing %s left the effective hash unchanged", c.ptr)
		}
	}
}

func TestSourceAndEffectiveHashes(t *testing.T) {
	// Spelling out a default changes the source hash, not the effective one.
	explicit := minimalYAML + "listeners: [{name: public, address: 127.0.0.1, port: 8801, timeout: 5m}]\n"
	a, _ := HashSource([]byte(minimalYAML))
	b, _ := HashSource([]byte(explicit))
	if a == b {
		t.Error("source hashes should differ")
	}
	d1, err := Parse([]byte(minimalYAML))
	if err != nil {
		t.Fatal(err)
	}
	d2, err := Parse([]byte(explicit))
	if err != nil {
		t.Fatal(err)
	}
	if Hash(d1) != Hash(d2) {
		t.Error("effective hashes should agree")
	}
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(Hash(d1)) {
		t.Errorf("hash format: %s", Hash(d1))
	}
	// ParseSource returns the canonical source.
	_, canon, err := ParseSource([]byte(minimalYAML))
	if err != nil || HashBytes(canon) != a {
		t.Errorf("ParseSource canonical bytes: %v", err)
	}
}

func TestCanonicalForm(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b": 1, "a": [true, null, "x"]}`, `{"a":[true,null,"x"],"b":1}`},
		{`{"n": 1.0}`, `{"n":1}`},
		{`{"n": 1e0}`, `{"n":1}`},
		{`{"n": -0}`, `{"n":0}`},
		{`{"n": 0.10}`, `{"n":0.1}`},
		{`{"n": 1E3}`, `{"n":1000}`},
		{`{"n": 12345678901234567890}`, `{"n":12345678901234567890}`},
		{`{"n": 1e-7}`, `{"n":1e-7}`},
		{`{"s": "<a&b>\u00e9"}`, `{"s":"<a&b>é"}`},
		{"num: 1.50\ns: x\n", `{"num":1.5,"s":"x"}`},
	}
	for _, tt := range tests {
		got, err := CanonicalSource([]byte(tt.in))
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("CanonicalSource(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	// Canonical(doc) parses back to the same effective document.
	doc, err := Parse(readFile(t, examplePath))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Canonical(doc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(c)
	if err != nil {
		t.Fatalf("Canonical output does not parse:\n%v", err)
	}
	c2, _ := Canonical(back)
	if !bytes.Equal(c, c2) {
		t.Error("Canonical is not a fixed point")
	}
}
