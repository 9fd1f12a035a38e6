//go:build !nolingua

package langid

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	lingua "github.com/pemistahl/lingua-go"
)

// BenchmarkDetectDistinct detects the language of one-line prompts that
// differ from call to call (the first words of each text of ../shared/data,
// at most 100 bytes), as a router's requests do: BenchmarkDetect repeats
// one text, whose n-grams' table entries stay in the CPU's caches, while
// distinct texts mostly find them in memory, as serve does.
func BenchmarkDetectDistinct(b *testing.B) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "data")
	if d := os.Getenv("JUNCTION_SHARED_DATA"); d != "" {
		dir = d
	}
	var texts []string
	for _, name := range []string{"domain/train.jsonl", "jailbreak/train.jsonl"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			b.Skipf("the shared data is needed (set JUNCTION_SHARED_DATA to its folder): %v", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<22)
		for sc.Scan() {
			var rec struct{ Text string }
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			t := rec.Text
			if len(t) > 100 {
				t = strings.ToValidUTF8(t[:100], "")
			}
			texts = append(texts, t)
		}
		f.Close()
	}
	var langs []lingua.Language
	for _, c := range candidates[:10] {
		langs = append(langs, lingua.GetLanguageFromIsoCode639_1(c))
	}
	d, err := Load(Options{CacheDir: DefaultCacheDir()}, langs...)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		d.Confidences(texts[i%len(texts)])
		i++
	}
}
