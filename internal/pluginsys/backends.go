package pluginsys

import (
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/internal/memstore"
	"github.com/junction-router/junction/internal/plugin/wasm"
)

// EngineBackends are the host functions' backends drawn from the engine:
// the models' embedder and "domain" and "jailbreak" classifiers (a nil one:
// the model-free fallback, as the signals use), an in-memory response cache
// and in-memory vector stores, the wall clock (see wasm.Backends). It lives
// here, on the serve side, so that internal/plugin/wasm and the author
// harness built on it need not import the engine.
func EngineBackends(models signal.Models) (hostapi.Backends, *memstore.Cache, *memstore.Vectors, error) {
	var emb hostapi.Embedder // a nil models.Embedder must stay a nil interface
	if models.Embedder != nil {
		emb = models.Embedder
	}
	cls := map[string]wasm.Classifier{}
	if models.Domain != nil {
		cls["domain"] = wasm.Classify(models.Domain.Classify)
	}
	if models.Jailbreak != nil {
		cls["jailbreak"] = wasm.Classify(models.Jailbreak.Classify)
	}
	return wasm.Backends(emb, cls)
}
