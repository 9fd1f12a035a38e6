// Command maxtokens is the plugin sdk's example (see ../../example_test.go):
// it caps a request's max_tokens at the configured limit. Everything a plugin
// author writes is here: a type with OnRequest, its configuration's schema,
// and one sdk.Register call from init.
package main

import (
	"encoding/json"
	"strconv"

	"github.com/junction-router/junction/sdk"
)

type maxTokens struct {
	Limit int64 `json:"limit"`
}

// OnRequest runs for every request whose decision names the plugin; it says
// what to change through res, and the host applies it after it returns.
func (m *maxTokens) OnRequest(req *sdk.Request, res *sdk.Result) error {
	if raw, ok := req.Field("max_tokens"); ok {
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil && n <= m.Limit {
			res.Skip("max_tokens already within the limit")
			return nil
		}
	}
	res.SetFieldInt("max_tokens", m.Limit)
	res.Detail("capped at " + strconv.FormatInt(m.Limit, 10))
	return nil
}

const schema = `{
  "type": "object",
  "properties": {"limit": {"type": "integer", "minimum": 1}},
  "required": ["limit"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Descriptor{
		Type:        "max_tokens",
		Version:     "0.1.0",
		Description: "caps max_tokens",
		Schema:      []byte(schema),
		Operations:  []sdk.Operation{{Name: "cap", Kind: "mutation"}},
	}, func(config []byte) (sdk.Plugin, error) {
		var m maxTokens
		if err := json.Unmarshal(config, &m); err != nil {
			return nil, err
		}
		return &m, nil
	})
}

func main() {}
