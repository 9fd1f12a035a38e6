package demobackend_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/junction-router/junction/internal/demobackend"
)

// The demo's Messages API answers are read by Anthropic's own Go SDK, so the
// demo is a faithful stand-in for an Anthropic-style backend in tests.
func TestMessagesAnswerReadByAnthropicSDK(t *testing.T) {
	srv := httptest.NewServer(demobackend.New(demobackend.Options{}))
	defer srv.Close()
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
	params := anthropic.MessageNewParams{
		Model:     "claude-demo",
		MaxTokens: 2048,
		System:    []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello there"))},
		Thinking:  anthropic.ThinkingConfigParamOfEnabled(1024),
	}
	msg, err := client.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || !strings.Contains(msg.Content[0].Text, `[demo:claude-demo anthropic] reasoning on (thinking.budget_tokens=1024) — you said: "hello there"`) {
		t.Fatalf("content %+v", msg.Content)
	}
	if msg.StopReason != anthropic.StopReasonEndTurn || msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
		t.Fatalf("stop %q usage %+v", msg.StopReason, msg.Usage)
	}

	stream := client.Messages.NewStreaming(context.Background(), params)
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) != 1 || acc.Content[0].Text != msg.Content[0].Text {
		t.Fatalf("streamed %+v, want the text %q", acc.Content, msg.Content[0].Text)
	}
	if acc.Usage.OutputTokens != msg.Usage.OutputTokens || acc.StopReason != anthropic.StopReasonEndTurn {
		t.Fatalf("streamed usage %+v stop %q", acc.Usage, acc.StopReason)
	}
}

func TestMessagesErrorsAreAnthropicShaped(t *testing.T) {
	srv := httptest.NewServer(demobackend.New(demobackend.Options{Status: 529}))
	defer srv.Close()
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
	_, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "m", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))},
	})
	var apiErr *anthropic.Error
	if err == nil || !asError(err, &apiErr) || apiErr.StatusCode != 529 {
		t.Fatalf("err %v", err)
	}
}

func asError(err error, target **anthropic.Error) bool {
	return errors.As(err, target)
}
