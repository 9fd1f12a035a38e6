// Command langprompt is a third-party Junction plugin: it gives the request
// the system prompt written for the caller's language, as the router's
// language signals detected it ("language:german" → "Antworte auf Deutsch.").
// The first configured signal that matched wins; with none, the default
// prompt is used, or the plugin reports skipped.
package main

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/junction-router/junction/sdk"
)

//go:embed schema.json
var schema []byte

type choice struct {
	Signal string `json:"signal"`
	Prompt string `json:"prompt"`
}

type config struct {
	Prompts []choice `json:"prompts"`
	Default string   `json:"default"`
}

type plugin struct{ cfg config }

// OnRequest inserts the chosen prompt as the first message, or prepends it
// to an existing leading system message.
func (p *plugin) OnRequest(req *sdk.Request, res *sdk.Result) error {
	prompt, why := p.cfg.Default, "no language signal matched; default prompt"
	for _, c := range p.cfg.Prompts {
		if req.Matched("language", c.Signal) {
			prompt, why = c.Prompt, "language signal "+c.Signal
			break
		}
	}
	if prompt == "" {
		res.Skip("no configured language signal matched and there is no default")
		return nil
	}
	msgs := req.Messages()
	if len(msgs) > 0 && msgs[0].Role == "system" {
		raw, _ := req.MessageJSON(0)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("messages[0]: %w", err)
		}
		text := prompt
		if msgs[0].Content != "" {
			text += "\n\n" + msgs[0].Content
		}
		m["content"], _ = json.Marshal(text)
		b, _ := json.Marshal(m)
		res.ReplaceMessage(0, b)
	} else {
		res.InsertMessage(0, "system", prompt)
	}
	res.Detail("system prompt chosen by " + why)
	return nil
}

func init() {
	sdk.Register(sdk.Descriptor{
		Type:        "language_prompt",
		Version:     "0.1.0",
		Description: "Pick the system prompt by the caller's language (the router's language signals).",
		Schema:      schema,
		Operations: []sdk.Operation{
			{Name: "choose_prompt", Kind: "mutation", Description: "insert or prepend the language's system prompt"},
		},
	}, func(raw []byte) (sdk.Plugin, error) {
		var c config
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, err
		}
		if len(c.Prompts) == 0 && c.Default == "" {
			return nil, errors.New("give prompts, a default, or both")
		}
		return &plugin{cfg: c}, nil
	})
}

// A reactor's main never runs; the host calls the exported handlers.
func main() {}
