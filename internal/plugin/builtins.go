package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/junction-router/junction/hostapi/abi"
	"github.com/junction-router/junction/internal/chat"
)

// ---- system_prompt ----------------------------------------------------------

// systemPrompt gives the request a system prompt, the way vLLM Semantic Router
// does. Only a first message with role "system" counts as the existing system
// message.
//
//   - mode insert (the default): the prompt goes before the existing system
//     message's text, separated by a blank line ("\n\n"). With string content
//     the result is prompt + "\n\n" + content (just the prompt when the content
//     is empty or null). With an array of content parts, a leading text part gets
//     the prompt and the blank line prepended to its text; otherwise a new text
//     part holding the prompt is put first. The message's other fields and parts
//     keep their bytes.
//   - mode replace: the existing system message's content becomes the prompt
//     (a string); its other fields (name, …) are kept.
//
// With no system message first, both modes put a new {"role":"system",
// "content":prompt} message before the others. enabled: false turns the plugin
// off (reported skipped).
type systemPrompt struct {
	prompt  string
	insert  bool
	enabled bool
	// Precomputed JSON: the prompt as a string literal, the literal of
	// prompt+"\n\n" without its closing quote (to splice before an existing
	// string's contents), the new system message and a new text part.
	promptLit, prefixLit []byte
	message, part        json.RawMessage
}

func compileSystemPrompt(raw json.RawMessage) (instance, error) {
	o, err := decodeObject(TypeSystemPrompt, "configuration", raw)
	if err != nil {
		return nil, err
	}
	var prompt, mode string
	var enabled *bool
	if err := o.str("system_prompt", &prompt); err != nil {
		return nil, err
	}
	if err := o.str("mode", &mode); err != nil {
		return nil, err
	}
	if err := o.boolean("enabled", &enabled); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(prompt) == "" {
		return nil, o.errf("system_prompt", "is required and must not be empty")
	}
	p := &systemPrompt{prompt: prompt, enabled: enabled == nil || *enabled}
	switch mode {
	case "", "insert":
		p.insert = true
	case "replace":
	default:
		return nil, o.errf("mode", "must be insert or replace, not %q", mode)
	}
	p.promptLit = encodeString(prompt)
	prefix := encodeString(prompt + "\n\n")
	p.prefixLit = prefix[:len(prefix)-1]
	p.message = json.RawMessage(`{"role":"system","content":` + string(p.promptLit) + `}`)
	p.part = json.RawMessage(`{"type":"text","text":` + string(p.promptLit) + `}`)
	return p, nil
}

func (p *systemPrompt) run(req *Request) (*mutations, error) {
	if !p.enabled {
		return &mutations{skipped: true, detail: "disabled by its configuration (enabled: false)"}, nil
	}
	if req.Chat == nil {
		return nil, fmt.Errorf("the request has no chat body")
	}
	first, _, err := arrayPrefix(req.Chat.Fields["messages"], 1)
	if err != nil {
		return nil, fmt.Errorf("messages: %v", err)
	}
	if len(first) == 1 {
		msg := first[0]
		ms, err := objectMembers(msg)
		if err != nil {
			return nil, fmt.Errorf("messages[0]: %v", err)
		}
		if isRole(lookup(msg, ms, "role"), "system") {
			return p.edit(msg, ms)
		}
	}
	return &mutations{
		detail:   "added a system message before the first message",
		messages: []messageEdit{{index: 0, insert: true, raw: p.message, msg: chat.Message{Role: "system", Content: p.prompt}}},
	}, nil
}

// edit changes the content of the existing system message msg.
func (p *systemPrompt) edit(msg []byte, ms []member) (*mutations, error) {
	content := bytes.TrimSpace(lookup(msg, ms, "content"))
	next, text := p.promptLit, p.prompt
	detail := "replaced the system message's content"
	if p.insert {
		detail = "prepended to the system message"
		switch {
		case isNull(content) || string(content) == `""`:
		case content[0] == '"':
			old, err := unquote(content)
			if err != nil {
				return nil, fmt.Errorf("messages[0].content: %v", err)
			}
			next, text = concatLit(p.prefixLit, content), p.prompt+"\n\n"+old
		case content[0] == '[':
			var err error
			if next, err = p.prependPart(content); err != nil {
				return nil, fmt.Errorf("messages[0].content: %v", err)
			}
			if text, err = chat.ContentText(next); err != nil {
				return nil, fmt.Errorf("messages[0].content: %v", err)
			}
		default:
			return nil, fmt.Errorf("messages[0].content must be a string or an array of content parts")
		}
	}
	return &mutations{
		detail:   detail,
		messages: []messageEdit{{index: 0, raw: setMember(msg, ms, "content", next), msg: chat.Message{Role: "system", Content: text}}},
	}, nil
}

// prependPart puts the prompt before an array content's text.
func (p *systemPrompt) prependPart(content []byte) ([]byte, error) {
	parts, rest, err := arrayPrefix(content, 1)
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 {
		pm, err := objectMembers(parts[0])
		if err == nil && isRole(lookup(parts[0], pm, "type"), "text") {
			if text := bytes.TrimSpace(lookup(parts[0], pm, "text")); len(text) > 0 && text[0] == '"' {
				if string(text) == `""` {
					parts[0] = setMember(parts[0], pm, "text", p.promptLit)
				} else {
					parts[0] = setMember(parts[0], pm, "text", concatLit(p.prefixLit, text))
				}
				return joinArray(parts, rest), nil
			}
		}
	}
	parts = slices.Insert(parts, 0, p.part)
	return joinArray(parts, rest), nil
}

// concatLit joins an open string literal (no closing quote) and a complete one.
func concatLit(open, lit []byte) []byte {
	out := make([]byte, 0, len(open)+len(lit)-1)
	out = append(out, open...)
	return append(out, lit[1:]...)
}

// isRole reports whether the raw JSON value is the string want.
func isRole(raw []byte, want string) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == len(want)+2 && raw[0] == '"' && string(raw[1:len(raw)-1]) == want {
		return true
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == want
}

// ---- header_mutation --------------------------------------------------------

// headerMutation edits the upstream request headers: add appends a value
// (keeping values already there), update sets the header to one value (adding
// it when absent), delete removes it. A header may appear in only one of the
// three lists (several add entries for one name append several values).
// Hop-by-hop headers, Host, Content-Length and Authorization cannot be changed.
// The report names the headers changed, never their values.
type headerMutation struct {
	m mutations // the same for every request
}

func compileHeaderMutation(raw json.RawMessage) (instance, error) {
	o, err := decodeObject(TypeHeaderMutation, "configuration", raw)
	if err != nil {
		return nil, err
	}
	add, err := o.objects("add")
	if err != nil {
		return nil, err
	}
	update, err := o.objects("update")
	if err != nil {
		return nil, err
	}
	var del []string
	if err := o.strings("delete", &del); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	h := &headerMutation{}
	where := map[string]string{} // canonical name → the list it is in
	var added, set, removed []string
	for _, list := range []struct {
		name  string
		kind  headerKind
		pairs []*object
	}{{"add", headerAdd, add}, {"update", headerSet, update}} {
		for _, pair := range list.pairs {
			var name, value string
			if err := pair.str("name", &name); err != nil {
				return nil, err
			}
			if err := pair.str("value", &value); err != nil {
				return nil, err
			}
			if err := pair.check(); err != nil {
				return nil, err
			}
			if _, ok := pair.members["value"]; !ok || isNull(pair.members["value"]) {
				return nil, pair.errf("value", "is required")
			}
			canon, err := checkHeaderName(pair, "name", name)
			if err != nil {
				return nil, err
			}
			if !abi.ValidHeaderValue(value) {
				return nil, pair.errf("value", "must not contain line breaks or other control characters")
			}
			if prev, ok := where[canon]; ok && (prev != list.name || list.name == "update") {
				return nil, pair.errf("name", "%s already appears in %s; a header may be in only one of add, update and delete (update once)", canon, prev)
			}
			where[canon] = list.name
			h.m.headers = append(h.m.headers, headerOp{kind: list.kind, name: canon, value: value})
			if list.kind == headerAdd {
				added = appendOnce(added, canon)
			} else {
				set = append(set, canon)
			}
		}
	}
	for i, name := range del {
		field := fmt.Sprintf("delete[%d]", i)
		canon, err := checkHeaderName(o, field, name)
		if err != nil {
			return nil, err
		}
		if prev, ok := where[canon]; ok {
			return nil, o.errf(field, "%s already appears in %s; a header may be in only one of add, update and delete", canon, prev)
		}
		where[canon] = "delete"
		h.m.headers = append(h.m.headers, headerOp{kind: headerDel, name: canon})
		removed = append(removed, canon)
	}
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "added "+strings.Join(added, ", "))
	}
	if len(set) > 0 {
		parts = append(parts, "set "+strings.Join(set, ", "))
	}
	if len(removed) > 0 {
		parts = append(parts, "removed "+strings.Join(removed, ", "))
	}
	h.m.detail = strings.Join(parts, "; ")
	if h.m.detail == "" {
		h.m.detail = "no headers configured"
	}
	return h, nil
}

func (h *headerMutation) run(*Request) (*mutations, error) { return &h.m, nil }

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// checkHeaderName validates a configured header name and returns its canonical form.
func checkHeaderName(o *object, field, name string) (string, error) {
	if name == "" {
		return "", o.errf(field, "is required")
	}
	if !abi.ValidHeaderName(name) {
		return "", o.errf(field, "%q is not a valid header name (letters, digits and !#$%%&'*+-.^_`|~ only)", name)
	}
	canon := http.CanonicalHeaderKey(name)
	if why := abi.ForbiddenHeader(canon); why != "" {
		return "", o.errf(field, "%s cannot be changed by a plugin: %s", canon, why)
	}
	return canon, nil
}

// ---- request_params ---------------------------------------------------------

// requestParams polices top-level request parameters, in this order:
// blocked_params are removed; max_tokens and max_completion_tokens above
// max_tokens_limit are lowered to it, and n above max_n to max_n (absent
// values are not added); strip_unknown removes every top-level field that is
// not an OpenAI chat-completions parameter (openAIParams). model and messages
// are never removed. Removing stream, stream_options or tools also resets
// chat.Request's parsed view of them.
type requestParams struct {
	blocked        []string
	maxTokensLimit *int64
	maxN           *int64
	stripUnknown   bool
	limitLit, nLit json.RawMessage
}

// openAIParams are the request parameters of the OpenAI chat-completions API
// (as of openai-go v3.96, plus stream), and chat_template_kwargs: the vLLM and
// SGLang extension that reasoning families are switched with, which routing
// itself writes.
var openAIParams = map[string]bool{
	"chat_template_kwargs": true,
	"model":                true, "messages": true, "audio": true, "frequency_penalty": true, "function_call": true,
	"functions": true, "logit_bias": true, "logprobs": true, "max_completion_tokens": true,
	"max_tokens": true, "metadata": true, "modalities": true, "moderation": true, "n": true,
	"parallel_tool_calls": true, "prediction": true, "presence_penalty": true,
	"prompt_cache_key": true, "prompt_cache_options": true, "prompt_cache_retention": true,
	"reasoning_effort": true, "response_format": true, "safety_identifier": true, "seed": true,
	"service_tier": true, "stop": true, "store": true, "stream": true, "stream_options": true,
	"temperature": true, "tool_choice": true, "tools": true, "top_logprobs": true, "top_p": true,
	"user": true, "verbosity": true, "web_search_options": true,
}

func compileRequestParams(raw json.RawMessage) (instance, error) {
	o, err := decodeObject(TypeRequestParams, "configuration", raw)
	if err != nil {
		return nil, err
	}
	p := &requestParams{}
	var strip *bool
	if err := o.strings("blocked_params", &p.blocked); err != nil {
		return nil, err
	}
	if err := o.integer("max_tokens_limit", &p.maxTokensLimit); err != nil {
		return nil, err
	}
	if err := o.integer("max_n", &p.maxN); err != nil {
		return nil, err
	}
	if err := o.boolean("strip_unknown", &strip); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	p.stripUnknown = strip != nil && *strip
	for i, name := range p.blocked {
		field := fmt.Sprintf("blocked_params[%d]", i)
		if name == "" {
			return nil, o.errf(field, "must not be empty")
		}
		if why, ok := bodyOwned[name]; ok {
			return nil, o.errf(field, "cannot block %s: %s", name, why)
		}
	}
	if p.maxTokensLimit != nil {
		if *p.maxTokensLimit < 1 {
			return nil, o.errf("max_tokens_limit", "must be at least 1, not %d", *p.maxTokensLimit)
		}
		p.limitLit = strconv.AppendInt(nil, *p.maxTokensLimit, 10)
	}
	if p.maxN != nil {
		if *p.maxN < 1 {
			return nil, o.errf("max_n", "must be at least 1, not %d", *p.maxN)
		}
		p.nLit = strconv.AppendInt(nil, *p.maxN, 10)
	}
	return p, nil
}

func (p *requestParams) run(req *Request) (*mutations, error) {
	if req.Chat == nil {
		return nil, fmt.Errorf("the request has no chat body")
	}
	fields := req.Chat.Fields
	m := &mutations{}
	var detail []byte
	note := func(parts ...string) {
		if len(detail) > 0 {
			detail = append(detail, "; "...)
		}
		for _, s := range parts {
			detail = append(detail, s...)
		}
	}
	for _, name := range p.blocked {
		if _, ok := fields[name]; ok && !slices.Contains(m.del, name) {
			m.del = append(m.del, name)
			note("removed ", name)
		}
	}
	for _, c := range [...]struct {
		name  string
		limit *int64
		lit   json.RawMessage
	}{{"max_tokens", p.maxTokensLimit, p.limitLit}, {"max_completion_tokens", p.maxTokensLimit, p.limitLit}, {"n", p.maxN, p.nLit}} {
		raw, ok := fields[c.name]
		if c.limit == nil || !ok || isNull(raw) || slices.Contains(m.del, c.name) {
			continue
		}
		v, ok := parseInt(raw)
		if !ok {
			return nil, fmt.Errorf("%s is %s, not an integer", c.name, jsonKind(raw))
		}
		if v > *c.limit {
			m.set = append(m.set, field{name: c.name, raw: c.lit})
			note("lowered ", c.name, " from ", strconv.FormatInt(v, 10), " to ", string(c.lit))
		}
	}
	if p.stripUnknown {
		n := len(m.del)
		for name := range fields {
			if !openAIParams[name] && !slices.Contains(m.del[:n], name) {
				m.del = append(m.del, name)
			}
		}
		if unknown := m.del[n:]; len(unknown) > 0 {
			slices.Sort(unknown)
			note("stripped ", strings.Join(unknown, ", "))
		}
	}
	if len(detail) == 0 {
		m.detail = "nothing to change"
	} else {
		m.detail = string(detail)
	}
	return m, nil
}

// ---- fast_response ----------------------------------------------------------

// fastResponse answers the request at once with the configured message
// (status 200, reported as the selected model or "junction"); no backend is
// called and later plugins do not run.
type fastResponse struct {
	message string
}

// FastResponseModel is the model name a fast response reports when no model
// was selected.
const FastResponseModel = "junction"

func compileFastResponse(raw json.RawMessage) (instance, error) {
	o, err := decodeObject(TypeFastResponse, "configuration", raw)
	if err != nil {
		return nil, err
	}
	f := &fastResponse{}
	if err := o.str("message", &f.message); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(f.message) == "" {
		return nil, o.errf("message", "is required and must not be empty")
	}
	return f, nil
}

func (f *fastResponse) run(req *Request) (*mutations, error) {
	model := req.Model
	if model == "" {
		model = FastResponseModel
	}
	return &mutations{
		detail:    "answered without calling a backend",
		immediate: &Immediate{Status: http.StatusOK, Content: f.message, Model: model},
	}, nil
}
