// Command header_mutation is the benchmark's wasm twin of the native
// header_mutation plugin (internal/plugin): add, update and delete upstream
// headers.
package main

import (
	"encoding/json"

	"github.com/junction-router/junction/sdk"
)

type header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type headerMutation struct {
	Add    []header `json:"add"`
	Update []header `json:"update"`
	Delete []string `json:"delete"`
}

func (h *headerMutation) OnRequest(req *sdk.Request, res *sdk.Result) error {
	for _, d := range h.Delete {
		res.RemoveHeader(d)
	}
	for _, u := range h.Update {
		res.SetHeader(u.Name, u.Value)
	}
	for _, a := range h.Add {
		res.AddHeader(a.Name, a.Value)
	}
	res.Detail("changed headers")
	return nil
}

const schema = `{"type":"object","properties":{
 "add":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string","minLength":1},"value":{"type":"string"}},"required":["name","value"]}},
 "update":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string","minLength":1},"value":{"type":"string"}},"required":["name","value"]}},
 "delete":{"type":"array","items":{"type":"string"}}},"additionalProperties":false}`

func init() {
	sdk.Register(sdk.Descriptor{Type: "header_mutation", Version: "bench", Schema: []byte(schema),
		Operations: []sdk.Operation{{Name: "headers", Kind: "mutation"}}},
		func(config []byte) (sdk.Plugin, error) {
			var h headerMutation
			if err := json.Unmarshal(config, &h); err != nil {
				return nil, err
			}
			return &h, nil
		})
}

func main() {}
