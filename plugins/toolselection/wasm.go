package toolselection

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/junction-router/junction/plugins/internal/guest"
	"github.com/junction-router/junction/sdk"
)

// Descriptor is what the module says about itself.
var Descriptor = sdk.Descriptor{
	Type: Type, Version: Version, Schema: Schema,
	Description: "Keep the tools relevant to the prompt by embedding similarity (top_k, similarity_threshold, always_keep), from the request's tools or a tools database.",
	Operations: []sdk.Operation{
		{Name: "static_policy", Kind: "preview", Description: "show the candidates, top_k, threshold and always_keep list; nothing is embedded"},
		{Name: "semantic_selection", Kind: "probe", Description: "embed the last user message and the candidate tools, keep the top_k at or above similarity_threshold plus always_keep"},
		{Name: "filter_tools", Kind: "mutation", Description: "remove the request's unselected tools (and a tool_choice naming one), or add the selected tools_db entries"},
	},
}

// Register declares the plugin to the SDK; the guest's init calls it.
func Register() { guest.Register(Descriptor, ParseConfig) }

// OnRequest selects the request's tools. It embeds through req (a backend
// call the host denies in preview), so it runs the same natively and as a
// module.
func (c *Config) OnRequest(req *sdk.Request, res *sdk.Result) error {
	msgs, err := guest.Messages(req)
	if err != nil {
		return err
	}
	in := Input{Messages: msgs}
	in.Tools, _ = req.Field("tools")
	in.ToolChoice, _ = req.Field("tool_choice")
	if req.Mode() != sdk.ModePreview {
		in.Embed = func(texts []string) ([][]float32, error) {
			out := make([][]float32, len(texts))
			for i, t := range texts {
				v, err := req.Embed(t)
				if err != nil {
					return nil, err
				}
				out[i] = v
			}
			return out, nil
		}
	}
	r, err := c.Run(in)
	if err != nil {
		return err
	}
	res.Value("source", r.Source)
	res.Value("candidates", strconv.Itoa(r.Candidates))
	if r.Skipped != "" {
		res.Skip(r.Detail)
		return nil
	}
	res.Value("selected", strconv.Itoa(len(r.Kept)))
	res.Value("kept", strings.Join(r.Kept, ","))
	for _, name := range r.Names {
		if s, ok := r.Scores[name]; ok {
			res.Value("similarity."+name, fmt.Sprintf("%.4f", s))
		}
	}
	for _, name := range r.Remove {
		res.RemoveTool(name)
	}
	for _, raw := range r.Add {
		res.AddTool(raw)
	}
	if r.DeleteToolChoice {
		res.RemoveField("tool_choice")
	}
	if len(r.Remove) == 0 && len(r.Add) == 0 {
		res.Skip(r.Detail + "; nothing removed")
		return nil
	}
	res.Detail(r.Detail)
	return nil
}
