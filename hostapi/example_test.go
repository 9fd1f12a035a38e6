package hostapi_test

import (
	"context"
	"fmt"

	"github.com/junction-router/junction/hostapi"
	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/hostapi/plugintest"
)

// The host's life cycle: load a module once (wazero compiles it), bind it to
// one configuration (the binding pools instances), and call the binding for
// each request. The call returns what the plugin asked for; the caller (the
// router's plugin stage) applies it.
func Example() {
	ctx := context.Background()
	// A CacheDir keeps compiled modules across runs; the test one is shared.
	h, err := hostapi.New(ctx, hostapi.Config{CacheDir: plugintest.CacheDir()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close(ctx)

	wasm, err := plugintest.BuildPackage("testdata/hello") // a Go plugin built for wasip1
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := h.Load(ctx, wasm)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("loaded", m.Type(), m.Descriptor().Version)

	b, err := h.Bind(ctx, m, []byte(`{"greeting":"Answer in one sentence."}`), hostapi.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close(ctx)
	res, err := b.Call(ctx, &abi.Request{
		Phase: abi.PhaseRequest, Mode: abi.ModeLive, Decision: "general", Model: "small",
		Messages: []abi.Message{{Role: "user", Content: "What is wazero?"}},
		Body:     []byte(`{"model":"small","messages":[{"role":"user","content":"What is wazero?"}]}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("detail:", res.Detail)
	for _, mu := range res.Mutations {
		fmt.Printf("%s index=%d name=%q value=%s\n", abi.OpName(mu.Op), mu.Index, mu.Name, mu.Value)
	}
	// Output:
	// loaded hello 0.1.0
	// detail: greeted
	// message_insert index=0 name="" value={"role":"system","content":"Answer in one sentence."}
	// header_add index=0 name="x-hello" value=live/general
}
