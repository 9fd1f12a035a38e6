package deploy

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/ortlib"
)

// Values of LocalModels' mode (serve's --signal-models).
const (
	ModelsONNX    = "onnx"
	ModelsLexical = "lexical"
)

// LocalModels returns the models behind the domain, jailbreak and embedding
// signals: the default ONNX models (internal/inference/defaultmodels) run by ONNX
// Runtime, or, with mode lexical or when ONNX Runtime or a model cannot be
// loaded, none, so that the signals use their lexical fallbacks (their results
// say so in method: lexical-bayes, hashed-ngrams). A failed load is one warning,
// not an error: the router works without models. close releases what was
// loaded.
func LocalModels(ctx context.Context, mode string, log *slog.Logger) (models signal.Models, close func(), err error) {
	close = func() {}
	switch mode {
	case ModelsLexical:
		return models, close, nil
	case ModelsONNX, "":
	default:
		return models, close, fmt.Errorf("--signal-models %q: use %s or %s", mode, ModelsONNX, ModelsLexical)
	}
	// One thread per session: the models are a few gathers and a small
	// matrix product, and the router runs many requests at once.
	rt, err := inference.Open(inference.Options{Device: "cpu", Threads: 1})
	if err != nil {
		log.Warn("ONNX Runtime is not available, so the domain, jailbreak and embedding signals use the lexical fallbacks (method lexical-bayes, hashed-ngrams); run `"+ortlib.FetchCommand+"` in the Junction repository (or set "+ortlib.EnvLibrary+") to use the default ONNX models",
			"error", err)
		return models, close, nil
	}
	ms, err := defaultmodels.Open(ctx, rt, "", 1)
	if err != nil {
		_ = rt.Close()
		log.Warn("the default ONNX models could not be loaded, so the domain, jailbreak and embedding signals use the lexical fallbacks (method lexical-bayes, hashed-ngrams)", "error", err)
		return models, close, nil
	}
	log.Info("signal models loaded", "domain", defaultmodels.MethodDomain, "jailbreak", defaultmodels.MethodJailbreak,
		"embedding", defaultmodels.MethodEmbedder, "onnxruntime", rt.Version())
	return ms.Signals, func() { _ = ms.Close(); _ = rt.Close() }, nil
}
