package memory

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/junction-router/junction/plugins/internal/guest"
	"github.com/junction-router/junction/sdk"
)

// SuppliedField is the top-level request field a preview puts its
// supplied_memories in. The plugin reads it only in preview mode, and removes
// it from the body in every mode so that it never reaches a backend.
const SuppliedField = "supplied_memories"

// Descriptor is what the module says about itself.
var Descriptor = sdk.Descriptor{
	Type: Type, Version: Version, Schema: Schema,
	Description: "Recall a user's memories relevant to the last message into a system message, and remember what the user states about themselves (live only).",
	Operations: []sdk.Operation{
		{Name: "inject_supplied_memories", Kind: "preview", Description: "inject the preview's supplied_memories and show what would be remembered; nothing is recalled or kept"},
		{Name: "recall", Kind: "probe", Description: "recall the scope's memories most similar to the last user message"},
		{Name: "inject_memories", Kind: "mutation", Description: "insert the memories as a system message after the leading system messages"},
		{Name: "remember", Kind: "mutation", Description: "live only: keep the first-person statements and 'remember that ...' requests of the last user message (persists)"},
	},
}

// Register declares the plugin to the SDK; the guest's init calls it.
func Register() { guest.Register(Descriptor, ParseConfig) }

// OnRequest recalls, injects and remembers.
func (c *Config) OnRequest(req *sdk.Request, res *sdk.Result) error {
	supplied, hasSupplied := req.Field(SuppliedField)
	if hasSupplied {
		res.RemoveField(SuppliedField)
	}
	var user string
	if raw, ok := req.Field("user"); ok {
		_ = json.Unmarshal(raw, &user) // a user that is not a string is no scope
	}
	scope, from, err := c.Scope(req.Header, user)
	if err != nil {
		return err
	}
	if scope == "" {
		where := "the request's user field"
		if c.ScopeHeader != "" {
			where = "header " + c.ScopeHeader + " or " + where
		}
		res.Skip("no scope: the request has no " + where + ", so there are no memories to recall or keep")
		return nil
	}
	msgs, err := guest.Messages(req)
	if err != nil {
		return err
	}
	last := Query(msgs)
	if last == "" {
		res.Skip("no user message to recall memories for")
		return nil
	}
	mode := req.Mode()
	var memories []Recalled
	var notes []string
	switch {
	case mode == sdk.ModePreview && hasSupplied:
		if memories, err = ParseSupplied(supplied); err != nil {
			return err
		}
	case mode == sdk.ModePreview:
		notes = append(notes, "preview: no supplied_memories were given, and a preview recalls nothing")
	default:
		hits, err := sdk.Recall(scope, last, c.TopK, float32(*c.MinScore))
		if err != nil {
			// Unavailable (no data directory) or failing: go on without.
			notes = append(notes, "recall failed: "+err.Error())
			sdk.Log(sdk.LevelWarn, "memory: recall failed: "+err.Error())
			res.Value("warning", "recall failed: "+err.Error())
		}
		memories = Memories(hits)
	}
	r := c.Inject(msgs, memories)
	guest.Emit(res, r.Edits)
	if r.Detail != "" {
		notes = append([]string{r.Detail}, notes...)
	} else if mode != sdk.ModePreview || hasSupplied {
		notes = append([]string{"no memory of the scope was relevant enough to inject"}, notes...)
	}
	res.Value("recalled", strconv.Itoa(len(memories)))
	res.Value("injected", strconv.Itoa(r.Injected))
	if mode != sdk.ModeLive && r.Injected > 0 {
		// What was injected, for the one previewing; live reports counts only.
		b, _ := json.Marshal(r.Texts)
		res.Value("memories", string(b))
	}
	acted := r.Injected > 0
	var statements []string
	if *c.Remember {
		statements = Statements(last)
	}
	switch {
	case !*c.Remember:
		notes = append(notes, "remember is off")
	case len(statements) == 0:
		notes = append(notes, "the last user message states nothing to remember")
	case mode != sdk.ModeLive:
		b, _ := json.Marshal(statements)
		res.Value("would_remember", string(b))
		acted = true
		notes = append(notes, "would remember "+Count(len(statements), "statement", "statements")+" in live mode (nothing is kept in "+mode.String()+")")
	default:
		kept, failed := 0, 0
		for _, s := range statements {
			if err := sdk.Remember(scope, s); err != nil {
				failed++
				if errors.Is(err, sdk.ErrUnavailable) {
					break
				}
				continue
			}
			kept++
		}
		res.Value("remembered", strconv.Itoa(kept))
		acted = acted || kept > 0
		notes = append(notes, "remembered "+Count(kept, "statement", "statements"))
		if failed > 0 {
			res.Value("remember_failed", strconv.Itoa(failed))
			notes = append(notes, strconv.Itoa(failed)+" could not be kept")
			sdk.Log(sdk.LevelWarn, "memory: "+strconv.Itoa(failed)+" statements could not be remembered")
		}
	}
	detail := "scope from " + from + ": " + strings.Join(notes, "; ")
	if !acted {
		res.Skip(detail)
		return nil
	}
	res.Detail(detail)
	return nil
}

// Memories reads memory_recall's hits: payloads are JSON {"id", "text",
// "created_at"}.
func Memories(hits []sdk.VectorHit) []Recalled {
	out := make([]Recalled, 0, len(hits))
	for _, h := range hits {
		var p struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(h.Payload, &p) != nil || p.Text == "" {
			continue
		}
		out = append(out, Recalled{Text: p.Text, Score: float64(h.Score)})
	}
	return out
}
