package sdk_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/junction-router/junction/hostapi/plugintest"
)

// A plugin is a Go main package that registers one sdk.Plugin from init and
// is built for wasip1 (testdata/maxtokens/main.go is the whole of one). The
// sdk's calls reach a host only inside wasm, so the way to see a plugin run
// is hostapi/plugintest: it builds the package, loads it into the real host
// and runs a request through it, as an author's own tests do.
func Example() {
	t := &testing.T{} // in a real test, the *testing.T of the test function
	p := plugintest.New(t, plugintest.Build(t, "testdata/maxtokens"))
	for _, body := range []string{
		`{"model":"auto","max_tokens":8000,"messages":[{"role":"user","content":"Hi"}]}`,
		`{"model":"auto","max_tokens":100,"messages":[{"role":"user","content":"Hi"}]}`,
	} {
		out := p.Run(t, plugintest.Fixture{Config: `{"limit":512}`, Body: body, Header: http.Header{}})
		fmt.Println(out.Report.Status, out.Report.Detail)
		fmt.Println(string(out.Body))
	}
	// Output:
	// applied capped at 512
	// {"max_tokens":512,"messages":[{"role":"user","content":"Hi"}],"model":"auto"}
	// skipped max_tokens already within the limit
	// {"max_tokens":100,"messages":[{"role":"user","content":"Hi"}],"model":"auto"}
}
