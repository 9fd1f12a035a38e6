// Package extmodeltest runs a fake judge: a real HTTP server that answers
// POST /v1/chat/completions like an OpenAI-compatible model, with answers a
// test scripts. Tests of external-model callers point a
// global.external_models entry at it.
package extmodeltest

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/junction-router/junction/recipes"
)

// Answer is one scripted reply.
type Answer struct {
	// Content is the assistant message's text.
	Content string
	// Status, when not 0 or 200, is answered instead of a completion.
	Status int
	// Delay holds the reply back (to provoke timeouts).
	Delay time.Duration
}

// Request is what the judge received.
type Request struct {
	Model         string
	System, User  string
	Temperature   float64
	MaxTokens     int
	Authorization string
}

// Judge is the fake model server.
type Judge struct {
	srv *httptest.Server

	mu       sync.Mutex
	script   []Answer
	fallback Answer
	requests []Request
}

// New starts a judge that answers script in order and then repeats the last
// answer; it stops when the test ends.
func New(t testing.TB, script ...Answer) *Judge {
	t.Helper()
	j := &Judge{script: script}
	if len(script) > 0 {
		j.fallback = script[len(script)-1]
	}
	j.srv = httptest.NewServer(http.HandlerFunc(j.serve))
	t.Cleanup(j.srv.Close)
	return j
}

// Script replaces the remaining answers.
func (j *Judge) Script(script ...Answer) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.script = script
	if len(script) > 0 {
		j.fallback = script[len(script)-1]
	}
}

// Requests returns what the judge has received so far.
func (j *Judge) Requests() []Request {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Request(nil), j.requests...)
}

// ExternalModel is a global.external_models entry naming this judge.
func (j *Judge) ExternalModel(name, role string, timeoutSeconds int) recipes.ExternalModel {
	host, port, _ := net.SplitHostPort(j.srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return recipes.ExternalModel{
		Name:              name,
		ModelRole:         role,
		LLMModelName:      "fake-judge",
		LLMEndpoint:       recipes.ExternalEndpoint{Address: host, Port: p, Protocol: "http"},
		LLMTimeoutSeconds: timeoutSeconds,
	}
}

func (j *Judge) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Temperature float64 `json:"temperature"`
		MaxTokens   int     `json:"max_tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	got := Request{Model: body.Model, Temperature: body.Temperature, MaxTokens: body.MaxTokens, Authorization: r.Header.Get("Authorization")}
	for _, m := range body.Messages {
		switch m.Role {
		case "system":
			got.System = m.Content
		case "user":
			got.User = m.Content
		}
	}
	j.mu.Lock()
	j.requests = append(j.requests, got)
	a := j.fallback
	if len(j.script) > 0 {
		a, j.script = j.script[0], j.script[1:]
	}
	j.mu.Unlock()

	if a.Delay > 0 {
		select {
		case <-time.After(a.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if a.Status != 0 && a.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.Status)
		_, _ = w.Write([]byte(`{"error":{"message":"scripted failure"}}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id":      "chatcmpl-fake",
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   body.Model,
		"choices": []map[string]any{{
			"index":         0,
			"message":       map[string]string{"role": "assistant", "content": a.Content},
			"finish_reason": "stop",
		}},
	})
}
