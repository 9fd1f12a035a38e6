package signal

import (
	"testing"
	"time"

	"github.com/junction-router/junction/recipes"
)

func TestLanguageDetect(t *testing.T) {
	d := detector(t)
	for _, tc := range []struct{ text, want string }{
		{"Please summarize this article about the economy in three sentences.", "en"},
		{"Fasse diesen Artikel über die Wirtschaft in drei Sätzen zusammen.", "de"},
		{"Resume este artículo sobre la economía en tres frases, por favor.", "es"},
		{"Comment puis-je réinitialiser mon mot de passe ?", "fr"},
		{"Как сбросить пароль от моей учётной записи?", "ru"},
		{"我想了解更多关于机器学习的知识", "zh"},
		{"日本語のテキストをトークン化するとどうなりますか", "ja"},
		{"", LanguageUndetermined},
		{"12345 !!!", LanguageUndetermined},
		{"ok", LanguageUndetermined},
		{"hello", LanguageUndetermined},
		{"What is the capital of France?", "en"},
		{"How do I reset my password?", "en"},
		{"Kannst du mir helfen?", "de"},
		{"你好吗今天", "zh"},
	} {
		code, conf := d.Detect(tc.text)
		if code != tc.want {
			t.Errorf("Detect(%q) = %s (%.2f), want %s", tc.text, code, conf, tc.want)
		}
		if (code == LanguageUndetermined) != (conf == 0) || conf < 0 || conf > 1 {
			t.Errorf("Detect(%q) confidence %v", tc.text, conf)
		}
	}
}

func TestLanguageSignal(t *testing.T) {
	s := compileOne(t, recipes.Signals{Language: []recipes.LanguageSignal{
		{Name: "german", Languages: []string{"de"}},
		{Name: "romance", Languages: []string{"FR", "es", "it", "pt"}},
	}}, Models{})
	for _, tc := range []struct {
		text           string
		value          string
		german, romanc bool
	}{
		{"Wie kann ich mein Passwort zurücksetzen, wenn ich die E-Mail nicht mehr habe?", "de", true, false},
		{"¿Cómo puedo restablecer mi contraseña si ya no tengo el correo?", "es", false, true},
		{"How do I reset my password if I no longer have the email address?", "en", false, false},
		{"", LanguageUndetermined, false, false},
	} {
		got := byName(evalText(s, tc.text))
		g, r := got["german"], got["romance"]
		if g.Value != tc.value || g.Matched != tc.german || r.Matched != tc.romanc || g.Method != MethodLingua {
			t.Errorf("%q: german=%+v romance=%+v", tc.text, g, r)
		}
		if tc.value != LanguageUndetermined && (g.Score <= 0 || g.Score > 1) {
			t.Errorf("%q: score %v", tc.text, g.Score)
		}
	}
	if s.Cheap() {
		t.Error("language detection is not cheap")
	}
	ctx, cancel := contextCancelled()
	defer cancel()
	if r := s.Evaluate(ctx, &Input{Text: "Hallo Welt, wie geht es dir heute?"})[0]; r.Error != CodeDeadline || r.Matched {
		t.Errorf("cancelled: %+v", r)
	}
}

func TestLanguageCompileErrors(t *testing.T) {
	det := detector(t)
	for name, sig := range map[string]recipes.LanguageSignal{
		"no languages": {Name: "l"},
		"unknown code": {Name: "l", Languages: []string{"xx"}},
		// The shared detector was built without Latin.
		"not a candidate": {Name: "l", Languages: []string{"la"}},
	} {
		_, err := CompileWith(t.Context(), recipes.Signals{Language: []recipes.LanguageSignal{sig}}, nil, Models{}, Options{Language: det})
		if err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
	if _, err := NewLanguageDetector("klingon"); err == nil {
		t.Error("NewLanguageDetector accepted an unknown code")
	}
}

// A detector for an extra language must know it; its models load at build
// time, so detection right after is fast.
func TestNewLanguageDetectorExtraLanguage(t *testing.T) {
	d, err := NewLanguageDetector("la", "ca")
	if err != nil {
		t.Fatal(err)
	}
	if !d.Knows("LA") || !d.Knows("en") || d.Knows("xx") {
		t.Fatal("Knows is wrong")
	}
	start := time.Now()
	if code, _ := d.Detect("Bon dia, com estàs? Vull reservar una taula per a dues persones."); code != "ca" {
		t.Errorf("Catalan detected as %s", code)
	}
	if el := time.Since(start); el > 200*time.Millisecond {
		t.Errorf("first detection took %v; models were not preloaded", el)
	}
}

func BenchmarkLanguage(b *testing.B) {
	s := compileOne(b, recipes.Signals{Language: []recipes.LanguageSignal{{Name: "german", Languages: []string{"de"}}}}, Models{})
	in := &Input{Text: "Wie kann ich mein Passwort zurücksetzen, wenn ich keinen Zugriff mehr auf meine E-Mail habe?"}
	b.ReportAllocs()
	for b.Loop() {
		s.Evaluate(b.Context(), in)
	}
}

func BenchmarkLanguageLong(b *testing.B) {
	s := compileOne(b, recipes.Signals{Language: []recipes.LanguageSignal{{Name: "german", Languages: []string{"de"}}}}, Models{})
	in := &Input{Text: benchText + benchText + benchText + benchText + benchText}
	b.ReportAllocs()
	for b.Loop() {
		s.Evaluate(b.Context(), in)
	}
}
