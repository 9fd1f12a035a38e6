package recipes

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ExternalModel is one entry of global.external_models (spec 001): a remote,
// OpenAI-compatible model that a classifier backend asks instead of a local
// model. The fact-check, user-feedback and NLI diagnostics use the first
// entry with model_role classification.
type ExternalModel struct {
	Name string `json:"name"`
	// ModelRole is classification (classifier backends) or guardrail (the
	// prompt guard).
	ModelRole    string           `json:"model_role,omitempty"`
	LLMModelName string           `json:"llm_model_name,omitempty"`
	LLMEndpoint  ExternalEndpoint `json:"llm_endpoint"`
	// LLMTimeoutSeconds bounds one call (minimum 1; 0 means the default).
	LLMTimeoutSeconds int `json:"llm_timeout_seconds,omitempty"`
	// APIKeyEnv names an environment variable holding the bearer key, never
	// the key itself.
	APIKeyEnv string `json:"api_key_env,omitempty"`
}

// ExternalEndpoint is where an external model listens.
type ExternalEndpoint struct {
	Address string `json:"address"`
	Port    int    `json:"port"`
	// Protocol is http or https (default http).
	Protocol string `json:"protocol,omitempty"`
}

// External model roles (ExternalModel.ModelRole).
const (
	ExternalRoleClassification = "classification"
	ExternalRoleGuardrail      = "guardrail"
)

// DefaultExternalModelTimeoutSeconds bounds an external model call when the
// entry names no llm_timeout_seconds.
const DefaultExternalModelTimeoutSeconds = 10

// BaseURL is the endpoint's base URL without the /v1 path.
func (e ExternalEndpoint) BaseURL() string {
	proto := e.Protocol
	if proto == "" {
		proto = "http"
	}
	host := strings.TrimSuffix(strings.TrimPrefix(e.Address, "["), "]")
	return proto + "://" + net.JoinHostPort(host, strconv.Itoa(e.Port))
}

// ExternalModel returns the first global.external_models entry with role.
func (g *Global) ExternalModel(role string) (ExternalModel, bool) {
	for _, m := range g.ExternalModels {
		if m.ModelRole == role {
			return m, true
		}
	}
	return ExternalModel{}, false
}

func (c *checker) externalModels() {
	seen := map[string]int{}
	for i, m := range c.doc.Global.ExternalModels {
		p := fmt.Sprintf("/global/external_models/%d", i)
		switch {
		case m.Name == "":
			c.add(p+"/name", CodeMissingField, "every external model needs a name")
		default:
			if j, dup := seen[m.Name]; dup {
				c.add(p+"/name", CodeDuplicate, "external model name %q is already used by /global/external_models/%d", m.Name, j)
			}
			seen[m.Name] = i
		}
		switch m.ModelRole {
		case ExternalRoleClassification, ExternalRoleGuardrail:
		case "":
			c.add(p+"/model_role", CodeMissingField, "name the role: classification (classifier backends) or guardrail (the prompt guard)")
		default:
			c.add(p+"/model_role", CodeInvalidValue, "must be classification or guardrail (got %q)", m.ModelRole)
		}
		if m.LLMModelName == "" {
			c.add(p+"/llm_model_name", CodeMissingField, "name the model the endpoint serves (sent as the request's model)")
		}
		ep := p + "/llm_endpoint"
		if m.LLMEndpoint.Address == "" {
			c.add(ep+"/address", CodeMissingField, "name the host or IP address of the model's endpoint")
		} else {
			c.address(ep+"/address", m.LLMEndpoint.Address)
		}
		if m.LLMEndpoint.Port < 1 || m.LLMEndpoint.Port > 65535 {
			c.add(ep+"/port", CodeInvalidValue, "must be 1 to 65535 (got %d)", m.LLMEndpoint.Port)
		}
		switch m.LLMEndpoint.Protocol {
		case "", "http", "https":
		default:
			c.add(ep+"/protocol", CodeInvalidValue, "must be http or https (got %q)", m.LLMEndpoint.Protocol)
		}
		if m.LLMTimeoutSeconds < 0 {
			c.add(p+"/llm_timeout_seconds", CodeInvalidValue, "must be at least 1 (got %d)", m.LLMTimeoutSeconds)
		}
		if m.APIKeyEnv != "" && !isEnvName(m.APIKeyEnv) {
			c.add(p+"/api_key_env", CodeInvalidValue, "name an environment variable (letters, digits, _), not the key itself")
		}
	}
}
