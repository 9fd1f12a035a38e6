package wasm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/plugin/native"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/wasm"
	"github.com/junction-router/junction/recipes"
)

const (
	systemPromptDir   = "../../../hostapi/testdata/bench/system_prompt"
	headerMutationDir = "../../../hostapi/testdata/bench/header_mutation"
)

// body4K is a chat request of about 4 KiB: a system message and turns of
// questions and answers.
func body4K() string {
	var b strings.Builder
	b.WriteString(`{"model":"auto","temperature":0.2,"max_tokens":800,"messages":[{"role":"system","content":"You are a helpful assistant."}`)
	for i := 0; b.Len() < 4000; i++ {
		fmt.Fprintf(&b, `,{"role":"user","content":"Question %d: please explain how the routing of this request works in detail."},{"role":"assistant","content":"Answer %d: it is routed by signals and decisions, then plugins run."}`, i, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

// fresh copies base so a plugin can change it without touching base.
func fresh(base *chat.Request) *plugin.Request {
	c := *base
	c.Fields = make(map[string]json.RawMessage, len(base.Fields))
	for k, v := range base.Fields {
		c.Fields[k] = v
	}
	c.Messages = append([]chat.Message(nil), base.Messages...)
	return &plugin.Request{Chat: &c, Decision: "d", Model: "small"}
}

type benchEnv struct {
	host *hostapi.Host
	mods *wasm.Modules
	wasm *plugin.Stage
}

// newBenchEnv loads the benchmark twins of system_prompt and header_mutation,
// trusted (as built-in modules are) or not (as third-party modules are).
func newBenchEnv(tb testing.TB, trusted bool) *benchEnv {
	return newBenchEnvWith(tb, trusted, hostapi.Limits{})
}

func newBenchEnvWith(tb testing.TB, trusted bool, lim hostapi.Limits) *benchEnv {
	tb.Helper()
	ctx := context.Background()
	backends, _, _, err := wasm.Backends(nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	host, err := hostapi.New(ctx, hostapi.Config{CacheDir: plugintest.CacheDir(), Backends: backends})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = host.Close(ctx) })
	var reg hostapi.Registry
	for typ, dir := range map[string]string{"system_prompt": systemPromptDir, "header_mutation": headerMutationDir} {
		wasmBytes, err := plugintest.BuildPackage(dir)
		if err != nil {
			tb.Fatal(err)
		}
		register := reg.Register
		if trusted {
			register = reg.RegisterTrusted
		}
		if err := register(typ, wasmBytes); err != nil {
			tb.Fatal(err)
		}
	}
	// A generous deadline: on a shared, overloaded machine a call can be
	// descheduled for longer than the default 250 ms, and a deadline fault
	// would make a new instance, which the chain benchmark checks does not
	// happen.
	lim.CallTimeout = 10 * time.Second
	mods, err := wasm.Load(ctx, host, &reg, lim)
	if err != nil {
		tb.Fatal(err)
	}
	return &benchEnv{host: host, mods: mods, wasm: plugin.New(mods)}
}

var (
	sysRef = recipes.PluginRef{Type: "system_prompt", Configuration: json.RawMessage(`{"system_prompt":"You are a careful mathematician. Show your reasoning.","mode":"insert"}`)}
	hdrRef = recipes.PluginRef{Type: "header_mutation", Configuration: json.RawMessage(`{"add":[{"name":"x-route-family","value":"code"}],"update":[{"name":"x-tier","value":"gold"}],"delete":["x-debug"]}`)}
)

// BenchmarkPluginCall measures one plugin call through the stage, natively
// and in the wasm host, on a 4 KiB request. Both run in the same benchmark,
// alternating blocks of calls, and the reported metrics are the medians of
// the blocks: native-ns/op, wasm-ns/op, added-ns/op and wasm/native.
func BenchmarkPluginCall(b *testing.B) {
	for _, trust := range []struct {
		name    string
		trusted bool
	}{{"trusted", true}, {"interruptible", false}} {
		b.Run(trust.name, func(b *testing.B) { benchPluginCall(b, newBenchEnv(b, trust.trusted)) })
	}
}

func benchPluginCall(b *testing.B, env *benchEnv) {
	native := native.Stage()
	base, err := chat.Parse([]byte(body4K()))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, ref := range []recipes.PluginRef{sysRef, hdrRef} {
		b.Run(ref.Type, func(b *testing.B) {
			refs := []recipes.PluginRef{ref}
			// run returns the wall time and the process's CPU time of n calls:
			// on a shared, overloaded machine the CPU time is the steadier
			// measure of what a call costs.
			run := func(r plugin.Runner, n int) (wall, cpu time.Duration) {
				start, cpu0 := time.Now(), cpuTime()
				for i := 0; i < n; i++ {
					o, err := r.Request(ctx, refs, fresh(base))
					if err != nil || o.Reports[0].Status != plugin.StatusApplied {
						b.Fatalf("%s: %+v %v", ref.Type, o.Reports, err)
					}
				}
				return time.Since(start), cpuTime() - cpu0
			}
			run(native, 100)
			run(env.wasm, 100)
			const block = 200
			var nat, was, natCPU, wasCPU []float64
			b.ResetTimer()
			for b.Loop() {
				w, c := run(native, block)
				nat, natCPU = append(nat, float64(w.Nanoseconds())/block), append(natCPU, float64(c.Nanoseconds())/block)
				w, c = run(env.wasm, block)
				was, wasCPU = append(was, float64(w.Nanoseconds())/block), append(wasCPU, float64(c.Nanoseconds())/block)
			}
			mn, mw := median(nat), median(was)
			b.ReportMetric(mn, "native-ns/op")
			b.ReportMetric(mw, "wasm-ns/op")
			b.ReportMetric(mw-mn, "added-ns/op")
			b.ReportMetric(mw/mn, "wasm/native")
			cn, cw := median(natCPU), median(wasCPU)
			b.ReportMetric(cn, "native-cpu-ns/op")
			b.ReportMetric(cw, "wasm-cpu-ns/op")
			b.ReportMetric(cw-cn, "added-cpu-ns/op")
			// The fastest block: the least disturbed by other processes.
			b.ReportMetric(slices.Min(nat), "native-min-ns/op")
			b.ReportMetric(slices.Min(was), "wasm-min-ns/op")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkChain runs the example configuration's plugin chain for the
// "code" and "hard_math" decisions in one list (system_prompt and
// header_mutation in the wasm host, request_params natively) under 64
// concurrent requests. The pools are warmed first; the benchmark fails if a
// request had to make an instance.
func BenchmarkChain(b *testing.B) {
	for _, pool := range []int{64, 2 * runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("pool=%d", pool), func(b *testing.B) { benchChain(b, pool) })
	}
}

// benchChain runs the chain with at most pool instances per binding, all
// made before the benchmark starts.
func benchChain(b *testing.B, pool int) {
	env := newBenchEnvWith(b, true, hostapi.Limits{MaxInstances: pool})
	refs := []recipes.PluginRef{
		sysRef, hdrRef,
		{Type: "request_params", Configuration: json.RawMessage(`{"max_tokens_limit":4096,"blocked_params":["logit_bias"]}`)},
	}
	doc := &recipes.Document{Recipes: []recipes.Recipe{{Name: "r", Decisions: []recipes.Decision{{Name: "d", Plugins: refs}}}}}
	ctx := context.Background()
	const concurrency = 64
	if err := env.mods.Warm(ctx, doc, pool); err != nil {
		b.Fatal(err)
	}
	instances := func() int64 {
		var n int64
		for _, ref := range refs[:2] {
			bd, err := env.mods.Binding(ctx, ref.Type, ref.Configuration)
			if err != nil {
				b.Fatal(err)
			}
			n += bd.Instances()
		}
		return n
	}
	before := instances()
	base, err := chat.Parse([]byte(body4K()))
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range []struct {
		name   string
		runner plugin.Runner
	}{{"native", native.Stage()}, {"wasm", env.wasm}} {
		b.Run(r.name, func(b *testing.B) {
			b.SetParallelism(max(1, concurrency/max(1, runtimeProcs())))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := r.runner.Request(ctx, refs, fresh(base)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
	if after := instances(); after != before {
		b.Fatalf("instances went from %d to %d: requests made instances (faults: %v deadline)", before, after,
			env.host.Faults("system_prompt", hostapi.FaultDeadline)+env.host.Faults("header_mutation", hostapi.FaultDeadline))
	}
}

// BenchmarkLoad measures compiling a module and making its first instance,
// cold (a new host without a cache) and from the on-disk compilation cache
// (a new host whose cache directory already holds the module, as after a
// restart).
func BenchmarkLoad(b *testing.B) {
	wasmBytes, err := plugintest.BuildPackage(systemPromptDir)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	ctx := context.Background()
	load := func(cacheDir string) *hostapi.Module {
		h, err := hostapi.New(ctx, hostapi.Config{CacheDir: cacheDir})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close(ctx)
		m, err := h.Load(ctx, wasmBytes)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	load(dir) // fill the disk cache
	for _, c := range []struct{ name, dir string }{{"cold", ""}, {"disk-cache", dir}} {
		b.Run(c.name, func(b *testing.B) {
			var comp, inst []float64
			for b.Loop() {
				m := load(c.dir)
				comp = append(comp, float64(m.CompileTime.Microseconds())/1000)
				inst = append(inst, float64(m.FirstInstantiateTime.Microseconds())/1000)
			}
			b.ReportMetric(median(comp), "compile-ms")
			b.ReportMetric(median(inst), "first-instantiate-ms")
			b.ReportMetric(float64(len(wasmBytes))/1024, "module-KiB")
		})
	}
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
