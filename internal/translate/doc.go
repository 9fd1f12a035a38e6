// Package translate converts requests and answers between the wire protocols
// Junction speaks on its two sides: clients send OpenAI chat completions or
// Responses-style requests; backends speak OpenAI chat completions or the
// Anthropic Messages API.
//
// One file per protocol pair and direction, named <in>_<out>.go after what
// is read and what is written, each with its test: openai_anthropic.go (a
// chat request for a Messages API backend), anthropic_openai.go (its
// answers, errors and event streams back as chat completions),
// responses_openai.go (a Responses API request as a chat request) and
// openai_responses.go (chat answers and chunk streams back as a response).
//
// Translators are pure functions of the bytes they are given (and, for
// streams, of the events seen so far): they do no I/O and make no routing
// decisions. A request that cannot be expressed in the target protocol is
// refused with an *Error naming the offending field, never silently
// changed in meaning.
package translate

import "fmt"

// Error is a request that cannot be translated; Param names the offending
// field the way OpenAI errors do ("messages[2].content").
type Error struct {
	Param   string
	Message string
}

func (e *Error) Error() string { return e.Message }

func badf(param, format string, args ...any) *Error {
	return &Error{Param: param, Message: fmt.Sprintf(format, args...)}
}
