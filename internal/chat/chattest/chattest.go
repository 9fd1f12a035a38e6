// Package chattest reads OpenAI chat-completion answers in tests: the text of
// an event stream and of a one-choice completion, failing the test on
// anything else.
package chattest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// StreamContent is the content of a chat-completion event stream's chunks,
// joined, and whether it ended with [DONE].
func StreamContent(t testing.TB, body []byte) (content string, done bool) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 4<<20)
	var b strings.Builder
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		for _, ch := range c.Choices {
			b.WriteString(ch.Delta.Content)
		}
	}
	return b.String(), done
}

// CompletionContent is the content of a one-choice chat.completion.
func CompletionContent(t testing.TB, body string) string {
	t.Helper()
	var c struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &c); err != nil || c.Object != "chat.completion" || len(c.Choices) != 1 {
		t.Fatalf("not a one-choice chat.completion (%v): %s", err, body)
	}
	return c.Choices[0].Message.Content
}
