//go:build !nolingua

package langid

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	lingua "github.com/pemistahl/lingua-go"
)

// candidates are serve's common languages (engine/signal) plus a few whose
// scripts exercise lingua's rules: Korean, Greek and Hebrew are alphabets of
// one language, Polish, Ukrainian and Catalan have unique characters, Arabic
// is another script, and Afrikaans, the zero Language, takes part in
// lingua's unigram-count quirk.
var candidates = []lingua.IsoCode639_1{
	lingua.EN, lingua.ES, lingua.FR, lingua.DE, lingua.IT, lingua.PT, lingua.NL, lingua.RU, lingua.ZH, lingua.JA,
	lingua.KO, lingua.EL, lingua.HE, lingua.PL, lingua.UK, lingua.CA, lingua.AR, lingua.AF,
}

// edgeTexts are short and odd texts, and a few sentences per candidate.
var edgeTexts = []string{
	"", " ", "12345 !!!", "ok", "hello", "🙂🙂🙂", "👍 thanks", "a", "ab", "abc", "ß", "Ñ", "¿qué?",
	"What is the capital of France?", "How do I reset my password?", "Kannst du mir helfen?",
	"你好吗今天", "我想了解更多关于机器学习的知识", "日本語のテキストをトークン化するとどうなりますか",
	"東京は日本の首都です", "中文 and English mixed 混合", "Привет, how are you? 你好",
	"안녕하세요 반갑습니다", "한국어 text with English", "Καλημέρα σας, τι κάνετε;", "שלום, מה שלומך היום?",
	"مرحبا كيف حالك اليوم؟", "Dzień dobry, jak się masz? Źle.", "Добрий день, як справи? Її їжа є.",
	"Bon dia, com estàs? Vull reservar una taula per a dues persones.",
	"Goeie môre, hoe gaan dit met jou vandag?", "Goedemorgen, hoe gaat het met je vandaag?",
	"Fasse diesen Artikel über die Wirtschaft in drei Sätzen zusammen.",
	"Resume este artículo sobre la economía en tres frases, por favor.",
	"Comment puis-je réinitialiser mon mot de passe ?", "Riassumi questo articolo in tre frasi, per favore.",
	"Resuma este artigo em três frases, por favor. Não sei.", "Как сбросить пароль от моей учётной записи?",
	"İstanbul'da hava nasıl?", "Tiếng Việt có dấu", "x1 y2 z3 42 3.14 0xdeadbeef", "func main() { fmt.Println(\"hi\") }",
	"SELECT * FROM users WHERE id = 1;", "naïve café résumé", "ÆØÅ æøå", "\xff\xfe invalid utf8 \xc3",
	"Straße", "la la la la", "der die das", "the the the the the", "ελληνικά and русский and 中文",
	"ひらがな カタカナ 漢字", "カタカナ", "ありがとう", "謝謝你", "Ｆｕｌｌｗｉｄｔｈ ｌｅｔｔｅｒｓ",
}

// sharedTexts are the texts of ../shared/data (the shared data's JSON Lines
// files, each line's "text").
func sharedTexts(t *testing.T) []string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "data")
	if d := os.Getenv("JUNCTION_SHARED_DATA"); d != "" {
		dir = d
	}
	var out []string
	for _, name := range []string{"domain/train.jsonl", "jailbreak/train.jsonl"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("the shared data is needed for this test (set JUNCTION_SHARED_DATA to its folder): %v", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<22)
		for sc.Scan() {
			var rec struct{ Text string }
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out = append(out, rec.Text)
		}
		f.Close()
	}
	return out
}

// prefixes adds each text's first 2, 4 and 8 words, so that short texts
// (lingua's 1- to 5-gram path, under 120 letters) are covered as well as
// long ones (trigrams only), and cuts texts at 512 bytes as engine/signal does.
func prefixes(texts []string) []string {
	var out []string
	for _, t := range texts {
		if len(t) > 512 {
			t = strings.ToValidUTF8(t[:512], "")
		}
		out = append(out, t)
		w := strings.Fields(t)
		for _, n := range []int{2, 4, 8} {
			if n < len(w) {
				out = append(out, strings.Join(w[:n], " "))
			}
		}
	}
	return out
}

func undetermined(top, second float64) bool { return top <= 0 || top == second }

// TestAgreesWithLingua runs lingua and this package over every text of the
// shared data (and their short prefixes) and the edge texts, and requires
// the same most likely language, the same undetermined answers and the same
// top confidence to 1e-9.
func TestAgreesWithLingua(t *testing.T) {
	if testing.Short() || raceBuild {
		// Loading both detectors' models takes about 40 s under the race
		// detector; TestConcurrentDetect covers concurrency there.
		t.Skip("loads lingua's high-accuracy models twice (skipped with -short and under -race)")
	}
	texts := append(prefixes(sharedTexts(t)), edgeTexts...)
	old := lingua.NewLanguageDetectorBuilder().FromIsoCodes639_1(candidates...).WithPreloadedLanguageModels().Build()
	var langs []lingua.Language
	for _, c := range candidates {
		langs = append(langs, lingua.GetLanguageFromIsoCode639_1(c))
	}
	d, err := New(langs...)
	if err != nil {
		t.Fatal(err)
	}
	agree, random, bad := 0, 0, 0
	same := func(want []lingua.ConfidenceValue, got []Confidence) bool {
		wu, gu := undetermined(want[0].Value(), want[1].Value()), undetermined(got[0].Value, got[1].Value)
		return wu == gu && (wu || (want[0].Language() == got[0].Language &&
			math.Abs(want[0].Value()-got[0].Value) <= 1e-9))
	}
	for _, text := range texts {
		want := old.ComputeLanguageConfidenceValues(text)
		got := d.Confidences(text)
		if same(want, got) {
			agree++
			continue
		}
		// Lingua's own answer is random when two scripts tie for the most
		// words (it sorts map keys with an unstable sort): count it as
		// agreement when one of lingua's answers is this package's.
		again := false
		for range 50 {
			if again = same(old.ComputeLanguageConfidenceValues(text), got); again {
				break
			}
		}
		if again {
			random++
			t.Logf("lingua answers %q at random; langid gives one of its answers, %v", text, got[0].Language)
			continue
		}
		if bad++; bad <= 20 {
			t.Errorf("%q: lingua %v %.12f (second %v %.12f), langid %v %.12f (second %v %.12f)", text,
				want[0].Language(), want[0].Value(), want[1].Language(), want[1].Value(),
				got[0].Language, got[0].Value, got[1].Language, got[1].Value)
		}
	}
	t.Logf("%d of %d texts agree (%.3f%%); on %d more lingua answers at random and langid gives one of its answers",
		agree, len(texts), 100*float64(agree)/float64(len(texts)), random)
}

// raceBuild is set in race builds (race_test.go).
var raceBuild = false

// TestConcurrentDetect checks that one detector answers goroutines at once
// exactly as it answers them one after another (it is shared by a
// generation's requests).
func TestConcurrentDetect(t *testing.T) {
	// Three languages of three kinds (Latin script, a one-language
	// alphabet, unique characters) load in a fraction of the time.
	d, err := New(lingua.English, lingua.Korean, lingua.Polish)
	if err != nil {
		t.Fatal(err)
	}
	texts := prefixes(edgeTexts)
	want := make([][]Confidence, len(texts))
	for i, text := range texts {
		want[i] = d.Confidences(text)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range texts {
				i = (i + g*7) % len(texts)
				got := d.Confidences(texts[i])
				if !slices.Equal(got, want[i]) {
					t.Errorf("%q: concurrently %v, alone %v", texts[i], got, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestNewErrors(t *testing.T) {
	if _, err := New(); err == nil {
		t.Error("New with no languages succeeded")
	}
	if _, err := New(lingua.Unknown); err == nil {
		t.Error("New with the unknown language succeeded")
	}
}

func TestSplitWords(t *testing.T) {
	for in, want := range map[string]string{
		"hello, world": "hello|world",
		"abc中文 def":    "abc中文|def",
		"中文abc":        "中|文|abc",
		"x1y 42 \xffz": "x|y|z",
		"カタカナ ひらがな":    "カ|タ|カ|ナ|ひ|ら|が|な",
		"안녕 hi":        "안|녕|hi",
		"🙂 naïve":      "naïve",
		"":             "",
	} {
		if got := strings.Join(splitWords(in), "|"); got != want {
			t.Errorf("splitWords(%q) = %q, want %q", in, got, want)
		}
	}
}

const (
	benchShort = "Wie kann ich mein Passwort zurücksetzen, wenn ich keinen Zugriff mehr auf meine E-Mail habe?"
	benchLong  = "Please summarize the following meeting notes for the engineering team. We discussed the migration " +
		"of the billing service to the new cluster, the timeline for deprecating the old API, and who owns the " +
		"on-call rotation next quarter. Several people raised concerns about the database failover tests, which " +
		"have been flaky, and we agreed to investigate before the next release. Action items are listed below."
)

// BenchmarkDetect compares lingua (as engine/signal has used it: high
// accuracy, serve's ten common languages) with this package on a one-line
// German request (1- to 5-grams) and a ~400-byte English one (trigrams).
func BenchmarkDetect(b *testing.B) {
	codes := candidates[:10]
	var langs []lingua.Language
	for _, c := range codes {
		langs = append(langs, lingua.GetLanguageFromIsoCode639_1(c))
	}
	old := lingua.NewLanguageDetectorBuilder().FromIsoCodes639_1(codes...).WithPreloadedLanguageModels().Build()
	d, err := New(langs...)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, text string }{{"short", benchShort}, {"long", benchLong}} {
		b.Run("lingua/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				old.ComputeLanguageConfidenceValues(tc.text)
			}
		})
		b.Run("langid/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d.Confidences(tc.text)
			}
		})
	}
}

// BenchmarkLoadLangid reports the live heap a loaded detector of serve's ten
// common languages holds (heap-MB) and its load time (ns/op).
func BenchmarkLoadLangid(b *testing.B) {
	var langs []lingua.Language
	for _, c := range candidates[:10] {
		langs = append(langs, lingua.GetLanguageFromIsoCode639_1(c))
	}
	var d *Detector
	for b.Loop() {
		before := heap()
		var err error
		if d, err = New(langs...); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(heap()-before)/(1<<20), "heap-MB")
	}
	runtime.KeepAlive(d)
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkLoadLingua reports the heap lingua's models take for the same
// languages. Lingua caches models process-wide, so only the first load
// counts: run it alone, with -benchtime 1x.
func BenchmarkLoadLingua(b *testing.B) {
	for b.Loop() {
		before := heap()
		d := lingua.NewLanguageDetectorBuilder().FromIsoCodes639_1(candidates[:10]...).WithPreloadedLanguageModels().Build()
		b.ReportMetric(float64(heap()-before)/(1<<20), "heap-MB")
		runtime.KeepAlive(d)
	}
}
