package deploy

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/ortlib"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/recipes"
)

func routeBuiltin(t *testing.T, models signal.Models, text string) *engine.Result {
	t.Helper()
	doc, err := recipes.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	gen, err := engine.Compile(doc, "test", engine.Options{Models: models})
	if err != nil {
		t.Fatal(err)
	}
	res, err := gen.Route(context.Background(), "", &engine.Request{Model: engine.ModelMoM,
		Input: signal.Input{Text: text, UserTexts: []string{text}, AllTexts: []string{text}}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func methods(res *engine.Result) map[string]string {
	out := map[string]string{}
	for _, s := range res.Signals {
		out[s.Kind] = s.Method
	}
	return out
}

// Without ONNX Runtime the router still starts: one warning names the
// command that fetches the library, and the signals report the fallbacks.
func TestSignalModelsWithoutONNXRuntime(t *testing.T) {
	t.Setenv(ortlib.EnvLibrary, filepath.Join(t.TempDir(), "libonnxruntime.so.1"))
	var logs bytes.Buffer
	models, closeModels, err := LocalModels(context.Background(), ModelsONNX, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer closeModels()
	if models.Domain != nil || models.Jailbreak != nil || models.Embedder != nil {
		t.Fatalf("models %+v without a runtime", models)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), ortlib.FetchCommand) {
		t.Errorf("want one warning naming %q, got:\n%s", ortlib.FetchCommand, logs.String())
	}
	got := methods(routeBuiltin(t, models, "Prove that every finite group of prime order is cyclic"))
	if got[recipes.KindDomain] != signal.MethodLexicalBayes || got[recipes.KindJailbreak] != signal.MethodLexicalBayes ||
		got[recipes.KindEmbedding] != signal.MethodHashedNgrams {
		t.Errorf("methods %v, want the lexical fallbacks", got)
	}
}

func TestSignalModelsDefault(t *testing.T) {
	orttest.Library(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	var logs bytes.Buffer
	models, closeModels, err := LocalModels(context.Background(), ModelsONNX, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer closeModels()
	if strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("unexpected warning:\n%s", logs.String())
	}
	got := methods(routeBuiltin(t, models, "Prove that every finite group of prime order is cyclic"))
	if got[recipes.KindDomain] != defaultmodels.MethodDomain || got[recipes.KindJailbreak] != defaultmodels.MethodJailbreak ||
		got[recipes.KindEmbedding] != defaultmodels.MethodEmbedder {
		t.Errorf("methods %v, want the default ONNX models", got)
	}
	lexical, closeLexical, err := LocalModels(context.Background(), ModelsLexical, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || lexical.Domain != nil {
		t.Fatalf("--signal-models lexical: %+v, %v", lexical, err)
	}
	closeLexical()
	if _, _, err := LocalModels(context.Background(), "bert", slog.New(slog.NewTextHandler(&logs, nil))); err == nil {
		t.Error("an unknown --signal-models value was accepted")
	}
}
