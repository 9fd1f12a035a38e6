package contextcompression

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/junction-router/junction/plugins/internal/chatmsg"
)

// words counts whitespace-separated words: a predictable tokenizer.
func words(s string) (int, error) { return len(strings.Fields(s)), nil }

func conversation(t *testing.T, turns int, toolWords int) []chatmsg.Message {
	t.Helper()
	var raws []json.RawMessage
	raws = append(raws, chatmsg.New("system", "you are helpful"))
	for i := 0; i < turns; i++ {
		raws = append(raws, chatmsg.New("user", fmt.Sprintf("question %d with five words", i)))
		id := fmt.Sprintf("call%d", i)
		raws = append(raws, chatmsg.NewToolCall(id, "lookup", "{}"))
		raws = append(raws, chatmsg.NewTool(id, strings.Repeat("data ", toolWords)))
		raws = append(raws, chatmsg.New("assistant", fmt.Sprintf("answer %d", i)))
	}
	b, _ := json.Marshal(raws)
	m, err := chatmsg.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func apply(t *testing.T, m []chatmsg.Message, edits []chatmsg.Edit) []chatmsg.Message {
	t.Helper()
	out, err := chatmsg.Apply(chatmsg.Raws(m), edits)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	after, err := chatmsg.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return after
}

func total(t *testing.T, m []chatmsg.Message) int {
	n := 0
	for _, x := range m {
		w, _ := words(x.Text)
		n += w + MessageOverhead
	}
	return n
}

func TestWithinBudgetChangesNothing(t *testing.T) {
	c, _ := ParseConfig([]byte(`{"max_tokens":100000}`))
	m := conversation(t, 3, 10)
	edits, rep, err := c.Compress(m, words)
	if err != nil || len(edits) != 0 || rep.TokensAfter != rep.TokensBefore || !strings.HasPrefix(rep.Detail(), "within budget") {
		t.Fatalf("%v %v %+v", err, edits, rep)
	}
}

func TestDropsOldestTurnsKeepsSystemAndRecent(t *testing.T) {
	m := conversation(t, 6, 10)
	budget := total(t, m) / 2
	c, _ := ParseConfig([]byte(fmt.Sprintf(`{"max_tokens":%d,"keep_recent_turns":2}`, budget)))
	edits, rep, err := c.Compress(m, words)
	if err != nil {
		t.Fatal(err)
	}
	after := apply(t, m, edits)
	if got := total(t, after); got > budget || got != rep.TokensAfter {
		t.Fatalf("after %d tokens (report %d), budget %d", got, rep.TokensAfter, budget)
	}
	if after[0].Role != "system" {
		t.Fatal("system message dropped")
	}
	// The newest two turns are whole, and every tool result still follows its call.
	if after[len(after)-1].Text != "answer 5" || after[len(after)-5].Text != "answer 4" {
		t.Fatalf("recent turns not kept: %v", after)
	}
	for i, x := range after {
		if x.Role == "tool" && (i == 0 || len(after[i-1].ToolCallIDs) == 0 || after[i-1].ToolCallIDs[0] != x.ToolCallID) {
			t.Fatalf("tool result %d separated from its call", i)
		}
	}
	// Oldest turns go first: question 0 is gone.
	for _, x := range after {
		if strings.HasPrefix(x.Text, "question 0") {
			t.Fatal("oldest turn kept while newer ones were dropped")
		}
	}
	if rep.MessagesAfter != len(after) || rep.DroppedMessages != len(m)-len(after) || rep.DroppedTurns == 0 {
		t.Errorf("report %+v", rep)
	}
}

func TestShortensToolOutputsFirst(t *testing.T) {
	m := conversation(t, 3, 400)
	c, _ := ParseConfig([]byte(`{"max_tokens":600,"keep_recent_turns":1,"tool_output_max_tokens":50}`))
	edits, rep, err := c.Compress(m, words)
	if err != nil {
		t.Fatal(err)
	}
	after := apply(t, m, edits)
	if rep.TruncatedToolOutputs != 2 || rep.DroppedTurns != 0 {
		t.Fatalf("report %+v", rep)
	}
	if len(after) != len(m) {
		t.Fatalf("messages dropped although shortening was enough")
	}
	if !strings.Contains(after[3].Text, "removed by context_compression") {
		t.Errorf("old tool output not shortened: %.80q", after[3].Text)
	}
	if strings.Contains(after[11].Text, "removed") {
		t.Error("the newest turn's tool output was shortened")
	}
}

func TestOverBudgetReported(t *testing.T) {
	m := conversation(t, 2, 100)
	c, _ := ParseConfig([]byte(`{"max_tokens":10,"keep_recent_turns":1}`))
	_, rep, err := c.Compress(m, words)
	if err != nil || !rep.OverBudget || !strings.Contains(rep.Detail(), "still over budget") {
		t.Fatalf("%v %+v", err, rep)
	}
}

func TestConfigErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		`{}`:                "configuration.max_tokens",
		`{"max_tokens":-1}`: "configuration.max_tokens",
		`{"max_tokens":10,"keep_recent_turns":-1}`: "configuration.keep_recent_turns",
		`{"max_tokens":10,"budget":3}`:             "configuration.budget",
	} {
		if _, err := ParseConfig([]byte(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", cfg, err, want)
		}
	}
}
