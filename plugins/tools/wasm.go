package tools

import (
	"fmt"
	"strconv"

	"github.com/junction-router/junction/plugins/internal/guest"
	"github.com/junction-router/junction/sdk"
)

// Descriptor is what the module says about itself.
var Descriptor = sdk.Descriptor{
	Type: Type, Version: Version, Schema: Schema,
	Description: "Narrow the tools offered: allow/block lists, strip earlier tool history, semantic top_k selection.",
	Operations: []sdk.Operation{
		{Name: "static_policy", Kind: "preview", Description: "apply allow and block lists; no backend involved"},
		{Name: "semantic_selection", Kind: "probe", Description: "embed the last user message and the tools, keep the top_k above threshold"},
		{Name: "filter_tools", Kind: "mutation", Description: "replace the request's tools (and drop a tool_choice naming a removed tool)"},
		{Name: "strip_tool_history", Kind: "mutation", Description: "remove earlier turns' tool calls and results"},
	},
}

// maxMemo bounds the per-instance memo of tool embeddings.
const maxMemo = 4096

type plugin struct {
	c *Config
	// memo keeps tool-description embeddings across requests on this
	// instance: tool lists repeat, and embedding them is the cost.
	memo map[string][]float32
}

// Register declares the plugin to the SDK; the guest's init calls it.
func Register() {
	sdk.Register(Descriptor, func(config []byte) (sdk.Plugin, error) {
		c, err := ParseConfig(config)
		if err != nil {
			return nil, err
		}
		return &plugin{c: c, memo: map[string][]float32{}}, nil
	})
}

func (p *plugin) embed(texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if v, ok := p.memo[t]; ok && i > 0 {
			out[i] = v
			continue
		}
		v, err := sdk.Embed(t)
		if err != nil {
			return nil, err
		}
		out[i] = v
		if i > 0 {
			if len(p.memo) >= maxMemo {
				clear(p.memo)
			}
			p.memo[t] = v
		}
	}
	return out, nil
}

// OnRequest filters the request's tools.
func (p *plugin) OnRequest(req *sdk.Request, res *sdk.Result) error {
	msgs, err := guest.Messages(req)
	if err != nil {
		return err
	}
	in := Input{Messages: msgs}
	in.Tools, _ = req.Field("tools")
	in.ToolChoice, _ = req.Field("tool_choice")
	if req.Mode() != sdk.ModePreview {
		in.Embed = p.embed
	}
	r, err := p.c.Run(in)
	if err != nil {
		return err
	}
	// The host changes tools only through tool ops; removing every tool
	// leaves the request without a tools field.
	for _, name := range r.Removed {
		res.RemoveTool(name)
	}
	if r.DeleteToolChoice {
		res.RemoveField("tool_choice")
	}
	guest.Emit(res, r.Edits)
	res.Value("tools_offered", strconv.Itoa(r.Offered))
	res.Value("tools_selected", strconv.Itoa(r.Selected))
	for name, s := range r.Scores {
		res.Value("similarity."+name, fmt.Sprintf("%.4f", s))
	}
	if !r.Changed() {
		res.Skip(r.Detail)
		return nil
	}
	res.Detail(r.Detail)
	return nil
}
