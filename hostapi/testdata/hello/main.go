// Command hello is a test plugin: it adds a system message with its
// configured greeting and an x-hello header, and in the response phase
// stores the answer in the cache. Each host function is reachable through
// the request's "x-call" header so tests can exercise them.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/junction-router/junction/sdk"
)

type hello struct {
	Greeting string `json:"greeting"`
	Respond  bool   `json:"respond"`
}

func (h *hello) OnRequest(req *sdk.Request, res *sdk.Result) error {
	if call, ok := req.Header("x-call"); ok {
		return hostCall(call, req, res)
	}
	if h.Respond {
		res.Respond(200, h.Greeting)
		return nil
	}
	res.InsertMessage(0, "system", h.Greeting)
	res.AddHeader("x-hello", req.Mode().String()+"/"+req.Decision())
	res.Detail("greeted")
	res.Value("messages", strconv.Itoa(len(req.Messages())))
	return nil
}

func (h *hello) OnResponse(resp *sdk.Response, res *sdk.Result) error {
	err := sdk.CacheStore("hello", "last", resp.Body(), 60, nil)
	if err != nil {
		res.Skip("not stored: " + err.Error())
		return nil
	}
	res.Detail("stored")
	return nil
}

// hostCall runs one host function and reports its outcome as a value.
func hostCall(call string, req *sdk.Request, res *sdk.Result) error {
	var out string
	var err error
	switch call {
	case "embed":
		var v []float32
		v, err = sdk.Embed(req.LastUserMessage())
		out = strconv.Itoa(len(v))
	case "vector_search":
		var hits []sdk.VectorHit
		hits, err = sdk.VectorSearch("docs", []float32{1, 0}, 2)
		for _, h := range hits {
			out += h.ID + ":" + string(h.Payload) + ";"
		}
	case "retrieve":
		var hits []sdk.VectorHit
		hits, err = sdk.Retrieve(sdk.RetrieveArgs{Source: "docs", Query: req.LastUserMessage(), K: 2, Filter: `{"type":"eq","key":"lang","value":"en"}`})
		for _, h := range hits {
			out += h.ID + ";"
		}
	case "memory_recall":
		var hits []sdk.VectorHit
		hits, err = sdk.Recall("u1", req.LastUserMessage(), 2, 0)
		out = strconv.Itoa(len(hits))
	case "memory_remember":
		err = sdk.Remember("u2", req.LastUserMessage())
	case "cache_lookup":
		var e sdk.CacheEntry
		e, err = sdk.CacheLookup("hello", "last", nil, 0)
		out = string(e.Value)
	case "cache_store":
		err = sdk.CacheStore("hello", "k", []byte("v"), 0, nil)
	case "classify":
		var cs []sdk.Class
		cs, err = sdk.Classify("domain", req.LastUserMessage())
		if len(cs) > 0 {
			out = cs[0].Label
		}
	case "token_count":
		var n int
		n, err = sdk.TokenCount(req.LastUserMessage())
		out = strconv.Itoa(n)
	case "now":
		var n int64
		n, err = sdk.Now()
		out = strconv.FormatInt(n, 10)
	case "config":
		var b []byte
		b, err = sdk.Config()
		out = string(b)
	case "big":
		// An answer larger than the SDK's scratch buffer goes through
		// junction.result.
		var b []byte
		b, err = sdk.Config()
		out = strconv.Itoa(len(b))
	case "log":
		sdk.Log(sdk.LevelInfo, "hello from the plugin")
	case "panic":
		panic("asked to panic")
	default:
		return fmt.Errorf("unknown x-call %q", call)
	}
	if err != nil {
		switch {
		case errors.Is(err, sdk.ErrDenied):
			out = "denied"
		case errors.Is(err, sdk.ErrUnavailable):
			out = "unavailable"
		case errors.Is(err, sdk.ErrNotFound):
			out = "not_found"
		default:
			out = "error: " + err.Error()
		}
	}
	res.Value(call, out)
	return nil
}

const schema = `{
  "type": "object",
  "properties": {
    "greeting": {"type": "string", "minLength": 1},
    "respond": {"type": "boolean"},
    "padding": {"type": "string"}
  },
  "required": ["greeting"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Descriptor{
		Type:        "hello",
		Version:     "0.1.0",
		Description: "test plugin",
		Phases:      []string{"request", "response"},
		Schema:      []byte(schema),
		Operations: []sdk.Operation{
			{Name: "greet", Kind: "mutation"},
			{Name: "store", Kind: "mutation"},
		},
	}, func(config []byte) (sdk.Plugin, error) {
		var h hello
		if err := json.Unmarshal(config, &h); err != nil {
			return nil, err
		}
		return &h, nil
	})
}

func main() {}
