package native_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/plugin"
	"github.com/junction-router/junction/internal/plugin/native"
	"github.com/junction-router/junction/recipes"
)

// benchBody is a realistic request: a system message and a conversation of
// turns messages.
func benchBody(turns int) string {
	var b strings.Builder
	b.WriteString(`{"model":"auto","temperature":0.2,"max_tokens":8000,"n":3,"logit_bias":{"50256":-100},"user":"u-1","x_trace":"abc","messages":[{"role":"system","content":"You are a helpful assistant."}`)
	for i := 0; i < turns; i++ {
		fmt.Fprintf(&b, `,{"role":"user","content":"Question %d: please explain how the routing of this request works in some detail."},{"role":"assistant","content":"Answer %d: it is routed by signals and decisions, then plugins run."}`, i, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

// fresh returns a copy of base that a plugin can change without touching base
// (the maps and slices are copied; the raw values are shared, as the stage
// never writes into them).
func fresh(base *chat.Request) *plugin.Request {
	c := *base
	// Built by inserting, the way json.Unmarshal builds chat.Request.Fields.
	c.Fields = make(map[string]json.RawMessage, len(base.Fields))
	for k, v := range base.Fields {
		c.Fields[k] = v
	}
	c.Messages = append([]chat.Message(nil), base.Messages...)
	return &plugin.Request{Chat: &c, Decision: "d", Model: "small"}
}

var sink *plugin.Request

func benchRun(b *testing.B, turns int, refs []recipes.PluginRef) {
	base, err := chat.Parse([]byte(benchBody(turns)))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("cached", func(b *testing.B) {
		n := native.Stage()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := n.Request(ctx, refs, fresh(base)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("prepared", func(b *testing.B) {
		p, err := native.Stage().Prepare(refs)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Request(ctx, fresh(base)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-each-request", func(b *testing.B) {
		// What the stage would cost if every request decoded the configuration.
		b.ReportAllocs()
		for b.Loop() {
			if _, err := native.Stage().Request(ctx, refs, fresh(base)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("copy-only", func(b *testing.B) {
		// The cost of fresh() alone, to subtract from the above.
		b.ReportAllocs()
		for b.Loop() {
			sink = fresh(base)
		}
	})
}

func BenchmarkSystemPrompt(b *testing.B) {
	for _, mode := range []string{"insert", "replace"} {
		refs := []recipes.PluginRef{{Type: TypeSystemPrompt, Configuration: json.RawMessage(
			`{"system_prompt":"You are a careful mathematician. Show your reasoning.","mode":"` + mode + `"}`)}}
		for _, turns := range []int{1, 50} {
			b.Run(fmt.Sprintf("%s/turns=%d", mode, turns), func(b *testing.B) { benchRun(b, turns, refs) })
		}
	}
}

func BenchmarkRequestParams(b *testing.B) {
	refs := []recipes.PluginRef{{Type: TypeRequestParams, Configuration: json.RawMessage(
		`{"blocked_params":["logit_bias","user"],"max_tokens_limit":4096,"max_n":1,"strip_unknown":true}`)}}
	for _, turns := range []int{1, 50} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) { benchRun(b, turns, refs) })
	}
}

func BenchmarkDecision(b *testing.B) {
	// A decision with all four native plugins' worth of work but no answer:
	// system_prompt, header_mutation and request_params.
	refs := []recipes.PluginRef{
		{Type: TypeSystemPrompt, Configuration: json.RawMessage(`{"system_prompt":"Be brief.","mode":"insert"}`)},
		{Type: TypeHeaderMutation, Configuration: json.RawMessage(`{"add":[{"name":"x-route-family","value":"code"}]}`)},
		{Type: TypeRequestParams, Configuration: json.RawMessage(`{"max_tokens_limit":4096,"blocked_params":["logit_bias"]}`)},
	}
	b.Run("turns=10", func(b *testing.B) { benchRun(b, 10, refs) })
}
