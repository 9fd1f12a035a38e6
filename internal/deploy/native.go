package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/junction-router/junction/internal/inference/nativeapi"
	"github.com/junction-router/junction/internal/inference/worker/client"
	"github.com/junction-router/junction/recipes"
)

// NativeAPI builds the native API listener of doc (global.services.native_api)
// over the running deployments: its handler and address, or a nil handler
// when it is not enabled. Keys are read from their sources now; a missing
// one is an error naming its path, so the listener never opens without the
// keys it was configured with.
func NativeAPI(doc *recipes.Document, deps *Set) (http.Handler, string, error) {
	n := doc.Global.Services.NativeAPI
	if n == nil || !n.Enabled {
		return nil, "", nil
	}
	pools := map[string]*client.Pool{}
	if deps != nil {
		for _, d := range deps.deps {
			pools[d.cfg.Name] = d.pool
		}
	}
	var o nativeapi.Options
	for _, name := range n.Published(doc.Global.ModelCatalog) {
		p, ok := pools[name]
		if !ok {
			return nil, "", fmt.Errorf("global.services.native_api publishes deployment %q, which junction serve did not start; restart junction serve after changing deployments", name)
		}
		o.Deployments = append(o.Deployments, nativeapi.Deployment{Name: name, Pool: p})
	}
	for i, k := range n.APIKeys {
		path := fmt.Sprintf("/global/services/native_api/api_keys/%d", i)
		var tok string
		if k.Env != "" {
			if tok = strings.TrimSpace(os.Getenv(k.Env)); tok == "" {
				return nil, "", fmt.Errorf("%s/env: environment variable %s (key %q) is not set or empty", path, k.Env, k.Name)
			}
		} else {
			b, err := os.ReadFile(k.File)
			if err != nil {
				return nil, "", fmt.Errorf("%s/file: key %q: %w", path, k.Name, err)
			}
			if tok = strings.TrimSpace(string(b)); tok == "" {
				return nil, "", fmt.Errorf("%s/file: key %q: the file is empty", path, k.Name)
			}
		}
		o.Keys = append(o.Keys, nativeapi.Key{Name: k.Name, Token: tok, Models: k.Models})
	}
	o.MaxBodyBytes = n.MaxBodyBytes
	h, err := nativeapi.New(o)
	if err != nil {
		return nil, "", err
	}
	return h, n.Addr(), nil
}

// NativeAPIGuard refuses a configuration whose native API differs from the
// one serve started with: its listener opens at start-up.
func NativeAPIGuard(started *recipes.Document) func(*recipes.Document) error {
	key := func(doc *recipes.Document) []byte {
		var n *recipes.NativeAPI
		if doc != nil {
			n = doc.Global.Services.NativeAPI
		}
		b, _ := json.Marshal(n)
		return b
	}
	want := key(started)
	return func(doc *recipes.Document) error {
		if !bytes.Equal(key(doc), want) {
			return errors.New("global.services.native_api differs from the one junction serve started with; its listener opens at start-up, so restart junction serve to apply this change")
		}
		return nil
	}
}
