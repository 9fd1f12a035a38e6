package defaultmodels_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/inference"
	"github.com/junction-router/junction/internal/inference/defaultmodels"
	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/recipes"
)

// exampleConfig is the shared example configuration (a copy kept beside the
// recipes package's tests): keywords, pii, domain, jailbreak, embedding,
// complexity and language signals.
const exampleConfig = "../../../recipes/testdata/example-config.yaml"

// shortPrompt is a one-line prompt; longPrompt about 500 tokens of the
// models' vocabulary (benchPrompts checks the count).
const shortPrompt = "Can you explain how photosynthesis works in plants, and why leaves change colour in autumn?"

var longPrompt = strings.Repeat(`The committee reviewed the quarterly report, which showed that revenue from the new product line `+
	`grew faster than expected while operating costs rose only slightly. Several members asked whether the growth `+
	`would continue once the introductory discounts ended, and the finance director explained that retention in `+
	`the first cohorts had been high. `, 6) + `What should the committee prioritise next quarter, and which metrics should it watch?`

func benchModels(b testing.TB) signal.Models {
	b.Helper()
	rt, err := inference.Open(inference.Options{LibraryPath: orttest.Library(b), Device: "cpu", Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Close() })
	ms, err := defaultmodels.Open(context.Background(), rt, b.TempDir(), 1)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ms.Close() })
	return ms.Signals
}

func benchInput(text string) *signal.Input {
	return &signal.Input{Text: text, UserTexts: []string{text}, AllTexts: []string{text}}
}

// BenchmarkRouteExample is one routing decision of the example configuration
// on the default ONNX models, as serve makes it (signals concurrent), for a
// one-line and a ~500-token prompt; kind/* evaluates each signal kind alone,
// one after another, to show where the time goes (under signal.Detached, as
// the engine runs the model kinds: the model call on the calling goroutine);
// parallel/* routes several requests at once.
func BenchmarkRouteExample(b *testing.B) {
	models := benchModels(b)
	doc, canon, err := recipes.LoadFile(exampleConfig)
	if err != nil {
		b.Fatal(err)
	}
	g, err := engine.Compile(doc, recipes.HashBytes(canon), engine.Options{Models: models})
	if err != nil {
		b.Fatal(err)
	}
	lang, err := signal.NewLanguageDetector("de")
	if err != nil {
		b.Fatal(err)
	}
	sets, err := signal.CompileWith(context.Background(), doc.Recipes[0].Signals, nil, models, signal.Options{Language: lang})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// Each call's text differs (a request number at the end), as a router's
	// requests do: a text seen before would find its embedding and tokens
	// remembered.
	texts := func(base string) func() *signal.Input {
		n := 0
		return func() *signal.Input {
			n++
			return benchInput(base + " (request " + strconv.Itoa(n) + ")")
		}
	}
	for _, p := range []struct{ name, text string }{{"short", shortPrompt}, {"500-tokens", longPrompt}} {
		b.Run("route/"+p.name, func(b *testing.B) {
			next := texts(p.text)
			b.ReportAllocs()
			cpu := processCPU(b)
			for b.Loop() {
				req := &engine.Request{Model: engine.ModelMoM, Input: *next()}
				if _, err := g.Route(ctx, "", req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N)/1e3, "cpu-µs/op")
		})
		// Several requests at once, as a busy server routes them: the CPU
		// per request when the cores have other requests' work to take.
		b.Run("parallel/"+p.name, func(b *testing.B) {
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(4)
			cpu := processCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					in := benchInput(p.text + " (request " + strconv.FormatInt(n.Add(1), 10) + ")")
					if _, err := g.Route(ctx, "", &engine.Request{Model: engine.ModelMoM, Input: *in}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N)/1e3, "cpu-µs/op")
		})
		for _, s := range sets {
			b.Run("kind/"+s.Kind()+"/"+p.name, func(b *testing.B) {
				next := texts(p.text)
				b.ReportAllocs()
				for b.Loop() {
					for _, r := range s.Evaluate(signal.Detached(ctx), next()) {
						if r.Error != "" {
							b.Fatal(r.Kind, r.Name, r.Error)
						}
					}
				}
			})
		}
	}
}

// processCPU is the CPU time (user and system, all threads) the process has
// used: a request's CPU beside its wall time, which on a shared machine is
// mostly waiting.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
