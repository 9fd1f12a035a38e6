// Package contextcompression is the built-in context_compression plugin: it
// keeps a conversation within a token budget. It never touches system (or
// developer) messages or the newest keep_recent_turns turns (a turn is a user
// message and everything after it up to the next user message). Over budget,
// it first shortens older tool outputs to tool_output_max_tokens (keeping
// their head and tail), then drops whole older turns, oldest first, so that a
// tool call is never separated from its result. It reports what it kept.
//
// The package is the plugin's logic, testable on the host; guest/ wraps it as
// a wasm module that counts tokens with the host's tokenizer. It must not do
// I/O.
package contextcompression

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/junction-router/junction/plugins/internal/chatmsg"
	"github.com/junction-router/junction/plugins/internal/pconfig"
)

// Type is the plugin type recipes name; Version is the plugin's version.
const (
	Type    = "context_compression"
	Version = "1.0.0"
)

// Schema is the configuration's JSON Schema (draft 2020-12).
//
//go:embed schema.json
var Schema []byte

// Config is the plugin's configuration.
type Config struct {
	// MaxTokens is the budget for the messages.
	MaxTokens int `json:"max_tokens"`
	// KeepRecentTurns is how many of the newest turns are never compressed
	// (default 2).
	KeepRecentTurns *int `json:"keep_recent_turns,omitempty"`
	// ToolOutputMaxTokens shortens older tool outputs above it (0: never).
	ToolOutputMaxTokens int `json:"tool_output_max_tokens,omitempty"`
}

// Defaults and bounds.
const (
	DefaultKeepRecentTurns = 2
	// MessageOverhead is the tokens a message costs beyond its text (role and
	// separators), as chat templates spend them.
	MessageOverhead = 4
	maxBudget       = 10_000_000
)

// ParseConfig decodes and checks a configuration.
func ParseConfig(raw []byte) (*Config, error) {
	c := &Config{}
	if err := pconfig.Decode(raw, c); err != nil {
		return nil, err
	}
	if c.MaxTokens < 1 || c.MaxTokens > maxBudget {
		return nil, pconfig.Errorf("max_tokens", "is required: the token budget for the messages, between 1 and %d (got %d)", maxBudget, c.MaxTokens)
	}
	if c.KeepRecentTurns == nil {
		n := DefaultKeepRecentTurns
		c.KeepRecentTurns = &n
	}
	if *c.KeepRecentTurns < 0 || *c.KeepRecentTurns > 1000 {
		return nil, pconfig.Errorf("keep_recent_turns", "must be between 0 and 1000, not %d", *c.KeepRecentTurns)
	}
	if c.ToolOutputMaxTokens < 0 || c.ToolOutputMaxTokens > maxBudget {
		return nil, pconfig.Errorf("tool_output_max_tokens", "must be between 0 (off) and %d, not %d", maxBudget, c.ToolOutputMaxTokens)
	}
	return c, nil
}

// Counter counts the tokens of a text.
type Counter func(string) (int, error)

// EstimateTokens is the fallback counter: about four bytes a token, the usual
// figure for English with BPE tokenizers.
func EstimateTokens(s string) (int, error) { return (len(s) + 3) / 4, nil }

// Report says what the plugin kept and why.
type Report struct {
	Budget, TokensBefore, TokensAfter int
	MessagesBefore, MessagesAfter     int
	DroppedTurns, DroppedMessages     int
	TruncatedToolOutputs              int
	// OverBudget: even after compressing everything it may, the messages
	// exceed the budget (the protected part alone is larger).
	OverBudget bool
}

// Detail is the report as one line (never any message text).
func (r Report) Detail() string {
	if r.TokensBefore <= r.Budget {
		return fmt.Sprintf("within budget: %d of %d tokens, %d messages kept", r.TokensBefore, r.Budget, r.MessagesBefore)
	}
	s := fmt.Sprintf("kept %d of %d messages, %d → %d tokens (budget %d); dropped %d turns (%d messages), shortened %d tool outputs",
		r.MessagesAfter, r.MessagesBefore, r.TokensBefore, r.TokensAfter, r.Budget, r.DroppedTurns, r.DroppedMessages, r.TruncatedToolOutputs)
	if r.OverBudget {
		s += "; still over budget: the system messages and the newest turns alone exceed it"
	}
	return s
}

// Values are the report's figures for the host's report.
func (r Report) Values() [][2]string {
	return [][2]string{
		{"budget_tokens", fmt.Sprint(r.Budget)},
		{"tokens_before", fmt.Sprint(r.TokensBefore)},
		{"tokens_after", fmt.Sprint(r.TokensAfter)},
		{"messages_kept", fmt.Sprint(r.MessagesAfter)},
		{"messages_dropped", fmt.Sprint(r.DroppedMessages)},
		{"tool_outputs_shortened", fmt.Sprint(r.TruncatedToolOutputs)},
		// 0 or 1, so that the host's sums count the runs left over budget.
		{"over_budget", fmt.Sprint(b2i(r.OverBudget))},
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Compress plans the compression of msgs.
func (c *Config) Compress(msgs []chatmsg.Message, count Counter) ([]chatmsg.Edit, Report, error) {
	rep := Report{Budget: c.MaxTokens, MessagesBefore: len(msgs)}
	tokens := make([]int, len(msgs))
	total := 0
	for i, m := range msgs {
		n, err := count(m.Text)
		if err != nil {
			return nil, rep, fmt.Errorf("counting tokens: %w", err)
		}
		tokens[i] = n + MessageOverhead
		total += tokens[i]
	}
	rep.TokensBefore, rep.TokensAfter, rep.MessagesAfter = total, total, len(msgs)
	if total <= c.MaxTokens {
		return nil, rep, nil
	}
	// turn[i] is the turn message i belongs to (-1 before the first user
	// message); protected is the first index of the newest turns.
	turnStarts := []int{}
	for i, m := range msgs {
		if m.Role == "user" {
			turnStarts = append(turnStarts, i)
		}
	}
	protected := len(msgs)
	if k := *c.KeepRecentTurns; k > 0 {
		if k >= len(turnStarts) {
			protected = 0
		} else {
			protected = turnStarts[len(turnStarts)-k]
		}
	}
	next := chatmsg.Raws(msgs)
	pinned := func(i int) bool {
		return i >= protected || msgs[i].Role == "system" || msgs[i].Role == "developer"
	}
	// 1. Shorten older tool outputs.
	if c.ToolOutputMaxTokens > 0 {
		for i, m := range msgs {
			if pinned(i) || m.Role != "tool" || tokens[i]-MessageOverhead <= c.ToolOutputMaxTokens {
				continue
			}
			short := shorten(m.Text, tokens[i]-MessageOverhead, c.ToolOutputMaxTokens)
			raw, err := chatmsg.SetMember(m.Raw, "content", chatmsg.String(short))
			if err != nil {
				return nil, rep, fmt.Errorf("messages[%d]: %v", i, err)
			}
			n, err := count(short)
			if err != nil {
				return nil, rep, fmt.Errorf("counting tokens: %w", err)
			}
			total += n + MessageOverhead - tokens[i]
			tokens[i] = n + MessageOverhead
			next[i] = raw
			rep.TruncatedToolOutputs++
		}
	}
	// 2. Drop whole older turns, oldest first. Messages before the first user
	// message that are not system messages count as one turn of their own.
	units := [][2]int{} // [start, end)
	start := 0
	for _, s := range append(turnStarts, len(msgs)) {
		if s > start {
			units = append(units, [2]int{start, s})
		}
		start = s
	}
	for _, u := range units {
		if total <= c.MaxTokens {
			break
		}
		if u[0] >= protected {
			break
		}
		dropped := 0
		for i := u[0]; i < u[1] && i < protected; i++ {
			if pinned(i) {
				continue
			}
			total -= tokens[i]
			next[i] = nil
			dropped++
		}
		if dropped > 0 {
			rep.DroppedTurns++
			rep.DroppedMessages += dropped
		}
	}
	rep.TokensAfter = total
	rep.MessagesAfter = len(msgs) - rep.DroppedMessages
	rep.OverBudget = total > c.MaxTokens
	return chatmsg.Transform(msgs, next), rep, nil
}

// shorten keeps the head and tail of a tool output so that it is about
// limit tokens, with a marker saying how much was cut.
func shorten(text string, tokens, limit int) string {
	keep := len(text) * limit / tokens
	head := keep * 2 / 3
	tail := keep - head
	for head > 0 && head < len(text) && text[head]&0xC0 == 0x80 {
		head--
	}
	cut := len(text) - tail
	for cut < len(text) && text[cut]&0xC0 == 0x80 {
		cut++
	}
	if cut < head {
		cut = head
	}
	var b strings.Builder
	b.WriteString(text[:head])
	fmt.Fprintf(&b, "\n[… about %d tokens of tool output removed by context_compression …]\n", tokens-limit)
	b.WriteString(text[cut:])
	return b.String()
}
