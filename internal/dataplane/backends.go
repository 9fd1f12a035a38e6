package dataplane

import (
	"errors"
	"net/url"
	"strings"
	"sync"

	"github.com/junction-router/junction/internal/translate"
	"github.com/junction-router/junction/recipes"
)

// DefaultChatPath is appended to a base_url without chat_path.
const DefaultChatPath = "/chat/completions"

// DemoBase is the URL in-process demo backends are addressed by; no socket
// is ever opened to it.
const DemoBase = "http://demo.invalid"

// Backends chooses where a request for a model goes. The gateway's
// implementation prefers healthy backends and caches parsed URLs; under
// Envoy the cluster is Envoy's business and the first backend_ref only
// supplies the path, extra headers and credentials.
type Backends interface {
	// Pick returns the backend_ref a request for m is sent to; ok is false
	// when m has none.
	Pick(m *recipes.Model) (ref *recipes.BackendRef, ok bool)
	// Target returns where chat requests for ref go, for a model of the
	// given api_format.
	Target(ref *recipes.BackendRef, apiFormat string) (*url.URL, error)
}

// FirstBackend picks a model's first backend_ref. Its zero value is ready to
// use and safe for concurrent use; targets are parsed once per backend.
type FirstBackend struct {
	targets sync.Map // targetKey → targetEntry
}

type targetKey struct {
	base, path, format string
	demo               bool
}

type targetEntry struct {
	u   *url.URL
	err error
}

// Pick returns m's first backend_ref.
func (f *FirstBackend) Pick(m *recipes.Model) (*recipes.BackendRef, bool) {
	if len(m.BackendRefs) == 0 {
		return nil, false
	}
	return &m.BackendRefs[0], true
}

// Target returns ChatURL(ref, apiFormat), parsed once. Callers must not
// modify it.
func (f *FirstBackend) Target(ref *recipes.BackendRef, apiFormat string) (*url.URL, error) {
	k := targetKey{base: ref.BaseURL, path: ref.ChatPath, format: apiFormat, demo: IsDemo(ref)}
	if e, ok := f.targets.Load(k); ok {
		te := e.(targetEntry)
		return te.u, te.err
	}
	u, err := ChatURL(ref, apiFormat)
	f.targets.Store(k, targetEntry{u, err})
	return u, err
}

// IsDemo reports whether ref is answered by the in-process demo backend.
func IsDemo(ref *recipes.BackendRef) bool {
	return ref.BaseURL == "" && ref.Provider == recipes.DemoProvider
}

// ChatURL is where a chat request for ref goes: base_url + (chat_path, else
// /chat/completions, or /messages for api_format anthropic).
func ChatURL(ref *recipes.BackendRef, apiFormat string) (*url.URL, error) {
	base := ref.BaseURL
	if IsDemo(ref) {
		base = DemoBase
	}
	if base == "" {
		return nil, errors.New("the backend_ref has no base_url")
	}
	path := ref.ChatPath
	if path == "" {
		path = DefaultChatPath
		if IsAnthropic(apiFormat) {
			path = translate.AnthropicPath
		}
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(strings.TrimRight(base, "/") + path)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("the backend base_url must be http:// or https://")
	}
	return u, nil
}

// DisplayURL is u as error messages show it: without credentials, query or
// fragment, which may carry secrets.
func DisplayURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery, c.Fragment = "", ""
	return c.String()
}
