package plugintest_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/junction-router/junction/hostapi/plugintest"
)

// A plugin author's test: build the plugin package to wasm, load it into the
// real host, run a request fixture through the router's plugin stage and
// look at what it did.
func Example() {
	t := &testing.T{} // in a real test, the *testing.T of the test function
	p := plugintest.New(t, plugintest.Build(t, "../testdata/hello"))
	out := p.Run(t, plugintest.Fixture{
		Config:   `{"greeting":"Answer in one sentence."}`,
		Decision: "general",
		Body:     `{"model":"auto","messages":[{"role":"user","content":"What is wazero?"}]}`,
		Header:   http.Header{},
	})
	fmt.Println(out.Report.Status, out.Report.Detail)
	fmt.Println(string(out.Body))
	fmt.Println(out.Header.Get("X-Hello"))
	m := out.Report.Module
	fmt.Println(m.Mode, m.BackendCalls, m.Persisted)
	// Output:
	// applied greeted
	// {"messages":[{"role":"system","content":"Answer in one sentence."},{"role":"user","content":"What is wazero?"}],"model":"auto"}
	// live/general
	// live 0 false
}
