// Package reasoning writes a routing decision's reasoning mode into a request in
// the syntax of the selected model's family: a boolean inside
// chat_template_kwargs (qwen3 enable_thinking, deepseek thinking) or a top-level
// reasoning_effort string (gpt-style).
package reasoning

import (
	"encoding/json"

	"github.com/junction-router/junction/recipes"
)

// DefaultEffort is used when neither the modelRef nor the provider defaults set one.
const DefaultEffort = "medium"

// Mode is the reasoning setting chosen for one request.
type Mode struct {
	Enabled bool   `json:"enabled"`
	Effort  string `json:"effort,omitempty"`
	// Family and Param say how the mode is written; empty when the model has no family.
	Family string `json:"family,omitempty"`
	Type   string `json:"type,omitempty"`
	Param  string `json:"param,omitempty"`
}

// Resolve decides the mode for ref on a model of family familyName. Effort
// precedence: the modelRef, then the provider default, then medium. An unset
// use_reasoning means off.
func Resolve(ref recipes.ModelRef, defaults recipes.ProviderDefaults, familyName string, family *recipes.ReasoningFamily) Mode {
	m := Mode{Enabled: ref.UseReasoning != nil && *ref.UseReasoning}
	if m.Enabled {
		m.Effort = ref.ReasoningEffort
		if m.Effort == "" {
			m.Effort = defaults.DefaultReasoningEffort
		}
		if m.Effort == "" {
			m.Effort = DefaultEffort
		}
	}
	if family != nil {
		m.Family, m.Type, m.Param = familyName, family.Type, family.Parameter
	}
	return m
}

// Apply writes m into the request's top-level fields. chat_template_kwargs
// flags are set to false explicitly when off, so a backend's own default cannot
// turn thinking on; reasoning_effort is removed when off. Other keys of
// chat_template_kwargs the client sent are kept.
func Apply(fields map[string]json.RawMessage, m Mode) error {
	switch m.Type {
	case recipes.FamilyChatTemplateKwargs:
		raw, ok := fields["chat_template_kwargs"]
		if !ok && plainKey(m.Param) {
			// The common case, no kwargs from the client: the object
			// json.Marshal would write for the one flag, without the map.
			v := "false"
			if m.Enabled {
				v = "true"
			}
			fields["chat_template_kwargs"] = json.RawMessage(`{"` + m.Param + `":` + v + `}`)
			return nil
		}
		kw := map[string]json.RawMessage{}
		if ok {
			// A client value that is not an object is replaced: routing owns this field.
			_ = json.Unmarshal(raw, &kw)
			if kw == nil {
				kw = map[string]json.RawMessage{}
			}
		}
		if m.Enabled {
			kw[m.Param] = json.RawMessage("true")
		} else {
			kw[m.Param] = json.RawMessage("false")
		}
		b, err := json.Marshal(kw)
		if err != nil {
			return err
		}
		fields["chat_template_kwargs"] = b
	case recipes.FamilyReasoningEffort:
		param := m.Param
		if param == "" {
			param = "reasoning_effort"
		}
		if m.Enabled {
			b, _ := json.Marshal(m.Effort)
			fields[param] = b
		} else {
			delete(fields, param)
		}
	}
	return nil
}

// plainKey reports whether json.Marshal writes k as a map key with no
// escapes: letters, digits, '_', '-' and '.' only.
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
