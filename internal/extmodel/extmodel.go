// Package extmodel asks a remote OpenAI-compatible chat model (a
// global.external_models entry) a constrained classification question: the
// system prompt names the allowed labels, the call runs at temperature 0
// with a few output tokens, and the answer must be exactly one allowed label.
// Anything else is an error, never a guess.
package extmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/junction-router/junction/recipes"
)

// Error kinds a caller maps to its own codes.
var (
	// ErrTimeout: the model did not answer within llm_timeout_seconds (or
	// the caller's context ended first).
	ErrTimeout = errors.New("external model timed out")
	// ErrUpstream: the endpoint could not be reached or answered a non-2xx
	// status.
	ErrUpstream = errors.New("external model failed")
	// ErrUnparseable: the answer was not one of the allowed labels.
	ErrUnparseable = errors.New("external model answer is not an allowed label")
)

// maxResponseBytes bounds what is read of an answer: a label fits easily.
const maxResponseBytes = 1 << 20

// Client calls one external model.
type Client struct {
	name    string
	model   string
	url     string
	apiKey  string
	timeout time.Duration
	http    *http.Client
}

// New builds a client for m. The key, when api_key_env names one, is read
// from the environment now; a named but unset variable is an error so the
// model is never called without its key.
func New(m recipes.ExternalModel, hc *http.Client) (*Client, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	c := &Client{
		name:    m.Name,
		model:   m.LLMModelName,
		url:     m.LLMEndpoint.BaseURL() + "/v1/chat/completions",
		timeout: Timeout(m),
		http:    hc,
	}
	if m.APIKeyEnv != "" {
		c.apiKey = os.Getenv(m.APIKeyEnv)
		if c.apiKey == "" {
			return nil, fmt.Errorf("external model %q: environment variable %s (api_key_env) is unset; set it in junction serve's environment", m.Name, m.APIKeyEnv)
		}
	}
	return c, nil
}

// Timeout is how long one call to m may take: llm_timeout_seconds, or
// recipes.DefaultExternalModelTimeoutSeconds when it is unset.
func Timeout(m recipes.ExternalModel) time.Duration {
	if m.LLMTimeoutSeconds > 0 {
		return time.Duration(m.LLMTimeoutSeconds) * time.Second
	}
	return recipes.DefaultExternalModelTimeoutSeconds * time.Second
}

// Name is the external_models entry's name.
func (c *Client) Name() string { return c.name }

// Question is one constrained classification.
type Question struct {
	// Task says what to judge, for example "Does the text make factual
	// claims that need checking?".
	Task string
	// Labels are the only acceptable answers.
	Labels []string
	// Input is the text to judge (never logged).
	Input string
}

// Classify asks q and returns the label the model chose.
func (c *Client) Classify(ctx context.Context, q Question) (string, error) {
	if len(q.Labels) == 0 {
		return "", errors.New("extmodel: a question needs at least one label")
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	system := q.Task + "\nAnswer with exactly one of these labels and nothing else: " + strings.Join(q.Labels, ", ") + "."
	body, err := json.Marshal(chatRequest{
		Model: c.model,
		Messages: []chatMessage{
			{Role: "system", Content: system},
			{Role: "user", Content: q.Input},
		},
		Temperature: 0,
		MaxTokens:   maxTokens(q.Labels),
	})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrUpstream, c.name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("%w: %q gave no answer within %s", ErrTimeout, c.name, c.timeout)
		}
		return "", fmt.Errorf("%w: %q could not be reached: %v", ErrUpstream, c.name, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("%w: %q gave no answer within %s", ErrTimeout, c.name, c.timeout)
		}
		return "", fmt.Errorf("%w: reading the answer of %q: %v", ErrUpstream, c.name, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", &StatusError{Model: c.name, Status: resp.StatusCode}
	}
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil || len(cr.Choices) == 0 {
		return "", fmt.Errorf("%w: %q did not answer a chat completion", ErrUnparseable, c.name)
	}
	return parseLabel(cr.Choices[0].Message.Content, q.Labels, c.name)
}

// StatusError is a non-2xx answer; it matches ErrUpstream.
type StatusError struct {
	Model  string
	Status int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("external model %q answered HTTP %d", e.Model, e.Status)
}

// Is makes a StatusError match ErrUpstream.
func (e *StatusError) Is(target error) bool { return target == ErrUpstream }

// parseLabel accepts the answer only when, trimmed of whitespace, a final
// full stop and surrounding quotes, it equals an allowed label (ignoring
// case); it returns the label as the caller spelled it.
func parseLabel(answer string, labels []string, model string) (string, error) {
	a := strings.TrimSpace(answer)
	a = strings.TrimSuffix(a, ".")
	a = strings.Trim(a, "\"'`")
	a = strings.TrimSpace(a)
	for _, l := range labels {
		if strings.EqualFold(a, l) {
			return l, nil
		}
	}
	return "", fmt.Errorf("%w: %q answered something other than %s", ErrUnparseable, model, strings.Join(labels, ", "))
}

// maxTokens leaves room for the longest label plus a little slack.
func maxTokens(labels []string) int {
	longest := 0
	for _, l := range labels {
		longest = max(longest, len(l))
	}
	return longest/2 + 8
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
	MaxTokens   int           `json:"max_tokens"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatResponse struct {
	Choices []struct {
		Message chatMessage `json:"message"`
	} `json:"choices"`
}
