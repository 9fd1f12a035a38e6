// Command system_prompt is the benchmark's wasm twin of the native
// system_prompt plugin (internal/plugin): insert or replace the system prompt.
// The built-in plugin itself lives in plugins/; this one exists so that the
// host's cost can be measured against the native code doing the same work.
package main

import (
	"encoding/json"
	"errors"

	"github.com/junction-router/junction/sdk"
)

type systemPrompt struct {
	Prompt string `json:"system_prompt"`
	Mode   string `json:"mode"`
	insert bool
	msg    []byte
}

func (p *systemPrompt) OnRequest(req *sdk.Request, res *sdk.Result) error {
	first, ok := req.Message(0) // decodes only the first message
	if !ok || first.Role != "system" {
		res.InsertMessageJSON(0, p.msg)
		res.Detail("added a system message before the first message")
		return nil
	}
	content := p.Prompt
	detail := "replaced the system message's content"
	if p.insert {
		detail = "prepended to the system message"
		if first.Content != "" {
			content = p.Prompt + "\n\n" + first.Content
		}
	}
	res.ReplaceMessage(0, sdk.MessageJSON("system", content))
	res.Detail(detail)
	return nil
}

const schema = `{"type":"object","properties":{"system_prompt":{"type":"string","minLength":1},"mode":{"enum":["insert","replace"]},"enabled":{"type":"boolean"}},"required":["system_prompt"],"additionalProperties":false}`

func init() {
	sdk.Register(sdk.Descriptor{Type: "system_prompt", Version: "bench", Schema: []byte(schema),
		Operations: []sdk.Operation{{Name: "inject", Kind: "mutation"}}},
		func(config []byte) (sdk.Plugin, error) {
			var p systemPrompt
			if err := json.Unmarshal(config, &p); err != nil {
				return nil, err
			}
			if p.Prompt == "" {
				return nil, errors.New("system_prompt is required")
			}
			p.insert = p.Mode != "replace"
			p.msg = sdk.MessageJSON("system", p.Prompt)
			return &p, nil
		})
}

func main() {}
