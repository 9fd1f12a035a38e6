package recipes

import (
	"strings"
	"testing"
)

// Paths into the example document used below.
const (
	rec0       = "/recipes/0"
	sigs       = rec0 + "/signals"
	cplx       = sigs + "/complexity/0"
	urgentRule = rec0 + "/decisions/3/rules"
)

func TestSemanticProblems(t *testing.T) {
	type mut = func(t *testing.T, v map[string]any)
	tests := []struct {
		name     string
		mutate   mut
		wantPath string
		wantCode string
		wantMsg  string
	}{
		// Listeners.
		{"duplicate listener name", func(t *testing.T, v map[string]any) {
			set(t, v, "/listeners/-", y(t, "{name: public, port: 8802}"))
		}, "/listeners/1/name", CodeDuplicate, `listener name "public" is already used by /listeners/0`},
		{"listener port reused on the same address", func(t *testing.T, v map[string]any) {
			set(t, v, "/listeners/-", y(t, "{name: second, port: 8801}"))
		}, "/listeners/1/port", CodeConflict, `port 8801 on 127.0.0.1 is already used by listener "public"`},
		{"listener port reused against a wildcard address", func(t *testing.T, v map[string]any) {
			set(t, v, "/listeners/-", y(t, "{name: second, port: 8801, address: 0.0.0.0}"))
		}, "/listeners/1/port", CodeConflict, "already used"},
		{"listener port clashes with metrics", func(t *testing.T, v map[string]any) {
			set(t, v, "/listeners/0/port", 9190)
		}, "/global/services/observability/metrics/port", CodeConflict, `port 9190 on 127.0.0.1 is already used by listener "public"`},
		{"unknown entrypoint", func(t *testing.T, v map[string]any) {
			set(t, v, "/listeners/0/entrypoint", "defualt")
		}, "/listeners/0/entrypoint", CodeUnknownRef, `routes with recipe "defualt", which is not in recipes (known: default); did you mean "default"?`},
		{"negative listener timeout", func(t *testing.T, v map[string]any) {
			set(t, v, "/listeners/0/timeout", "-5s")
		}, "/listeners/0/timeout", CodeInvalidValue, "must not be negative"},
		{"negative max_body_bytes", func(t *testing.T, v map[string]any) {
			set(t, v, "/listeners/0/max_body_bytes", -1)
		}, "/listeners/0/max_body_bytes", CodeInvalidValue, "must not be negative"},
		{"address with a port", func(t *testing.T, v map[string]any) {
			set(t, v, "/listeners/0/address", "127.0.0.1:8801")
		}, "/listeners/0/address", CodeInvalidValue, "without a port"},
		{"address as URL", func(t *testing.T, v map[string]any) {
			set(t, v, "/global/services/management_api/address", "http://localhost")
		}, "/global/services/management_api/address", CodeInvalidValue, "not a URL"},
		{"blank api key", func(t *testing.T, v map[string]any) {
			set(t, v, "/listeners/0/api_keys", []any{" "})
		}, "/listeners/0/api_keys/0", CodeInvalidValue, "must not be empty"},

		// Providers.
		{"duplicate model name", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/1/name", "small")
		}, "/providers/models/1/name", CodeDuplicate, `model name "small" is already used by /providers/models/0`},
		{"reserved model name", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/-", y(t, "{name: MoM, backend_refs: [{provider: demo}]}"))
		}, "/providers/models/3/name", CodeInvalidValue, "reserved"},
		{"default_model names no model", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/defaults/default_model", "smal")
		}, "/providers/defaults/default_model", CodeUnknownRef, `default_model "smal" is not in providers.models (known: small, big, coder)`},
		{"unknown reasoning family", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/0/reasoning_family", "qwen4")
		}, "/providers/models/0/reasoning_family", CodeUnknownRef, `reasoning family "qwen4", which is not in providers.reasoning_families (known: deepseek, gpt, qwen3)`},
		{"empty reasoning parameter", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/reasoning_families/gpt/parameter", " ")
		}, "/providers/reasoning_families/gpt/parameter", CodeMissingField, "request parameter"},
		{"relative base_url", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/0/backend_refs/0/base_url", "127.0.0.1:18001/v1")
		}, "/providers/models/0/backend_refs/0/base_url", CodeInvalidValue, "absolute http or https URL"},
		{"non-http base_url", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/0/backend_refs/0/base_url", "ftp://example.com/v1")
		}, "/providers/models/0/backend_refs/0/base_url", CodeInvalidValue, "scheme must be http or https"},
		{"empty base_url", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/2/backend_refs/0/base_url", "")
		}, "/providers/models/2/backend_refs/0/base_url", CodeMissingField, "needs a base_url"},
		{"base_url with credentials", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/0/backend_refs/0/base_url", "http://user:pw@example.com/v1")
		}, "/providers/models/0/backend_refs/0/base_url", CodeInvalidValue, "api_key_env"},
		{"demo backend with base_url", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/0/backend_refs/0/provider", "demo")
		}, "/providers/models/0/backend_refs/0/base_url", CodeConflict, "takes no base_url"},
		{"chat_path without slash", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/2/backend_refs/0/chat_path", "v1/chat/completions")
		}, "/providers/models/2/backend_refs/0/chat_path", CodeInvalidValue, "must start with /"},
		{"bad header name", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/1/backend_refs/0/extra_headers/x team", "a")
		}, "/providers/models/1/backend_refs/0/extra_headers/x team", CodeInvalidValue, "not a valid HTTP header name"},
		{"header value with newline", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/1/backend_refs/0/extra_headers/x-team", "a\r\nb: c")
		}, "/providers/models/1/backend_refs/0/extra_headers/x-team", CodeInvalidValue, "line breaks"},
		{"api_key_env holds a key", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/0/backend_refs/0/api_key_env", "sk-abc123")
		}, "/providers/models/0/backend_refs/0/api_key_env", CodeInvalidValue, "environment variable"},
		{"rate limit key", func(t *testing.T, v map[string]any) {
			set(t, v, "/global/rate_limits", y(t, "[{name: a, key: ip, requests: 1}]"))
		}, "/global/rate_limits/0/key", CodeInvalidValue, "header:<name>"},
		{"rate limit without a bound", func(t *testing.T, v map[string]any) {
			set(t, v, "/global/rate_limits", y(t, "[{name: a, key: user}]"))
		}, "/global/rate_limits/0", CodeMissingField, "requests, tokens or both"},
		{"rate limit names", func(t *testing.T, v map[string]any) {
			set(t, v, "/global/rate_limits", y(t, "[{name: a, key: user, tokens: 5}, {name: a, key: 'header:X-Team', requests: 1}]"))
		}, "/global/rate_limits/1/name", CodeDuplicate, "already used"},
		{"rate limit window", func(t *testing.T, v map[string]any) {
			set(t, v, "/global/rate_limits", y(t, "[{name: a, key: model, requests: 1, window: 10ms}]"))
		}, "/global/rate_limits/0/window", CodeInvalidValue, "at least 1s"},
		{"external model names", func(t *testing.T, v map[string]any) {
			set(t, v, "/global/external_models", y(t, "[{name: j, model_role: classification, llm_model_name: m, llm_endpoint: {address: 127.0.0.1, port: 8000}}, {name: j, model_role: guardrail, llm_model_name: m, llm_endpoint: {address: 127.0.0.1, port: 8001}}]"))
		}, "/global/external_models/1/name", CodeDuplicate, "already used"},
		{"external model address is a URL", func(t *testing.T, v map[string]any) {
			set(t, v, "/global/external_models", y(t, "[{name: j, model_role: classification, llm_model_name: m, llm_endpoint: {address: 'judge.local/v1', port: 8000}}]"))
		}, "/global/external_models/0/llm_endpoint/address", CodeInvalidValue, "not a URL"},
		{"external model api_key_env holds a key", func(t *testing.T, v map[string]any) {
			set(t, v, "/global/external_models", y(t, "[{name: j, model_role: classification, llm_model_name: m, llm_endpoint: {address: judge.local, port: 8000}, api_key_env: sk-abc123}]"))
		}, "/global/external_models/0/api_key_env", CodeInvalidValue, "environment variable"},
		{"api_key_env and forward_client_auth", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/0/backend_refs/0/api_key_env", "BIG_KEY")
			set(t, v, "/providers/models/0/backend_refs/0/forward_client_auth", true)
		}, "/providers/models/0/backend_refs/0/forward_client_auth", CodeConflict, "not both"},
		{"negative backend timeout", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/0/backend_refs/0/timeout", -3)
		}, "/providers/models/0/backend_refs/0/timeout", CodeInvalidValue, "must not be negative"},
		{"negative prompt price", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/0/pricing/prompt_per_1m", -0.1)
		}, "/providers/models/0/pricing/prompt_per_1m", CodeInvalidValue, "must not be negative"},
		{"negative cached input price", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/1/pricing/cached_input_per_1m", -1)
		}, "/providers/models/1/pricing/cached_input_per_1m", CodeInvalidValue, "must not be negative"},
		{"unknown pii type in policy", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/0/pii_policy", y(t, "{allow_by_default: false, pii_types_allowed: [EMAIL, ADDRESS]}"))
		}, "/providers/models/0/pii_policy/pii_types_allowed/1", CodeInvalidValue, `unknown personal-data type "ADDRESS"`},

		// Recipes, decisions, signals.
		{"duplicate recipe name", func(t *testing.T, v map[string]any) {
			set(t, v, "/recipes/-", y(t, "{name: default}"))
		}, "/recipes/1/name", CodeDuplicate, `recipe name "default" is already used by /recipes/0`},
		{"duplicate decision name", func(t *testing.T, v map[string]any) {
			set(t, v, rec0+"/decisions/1/name", "block_attacks")
		}, rec0 + "/decisions/1/name", CodeDuplicate, `decision name "block_attacks" is already used by /recipes/0/decisions/0`},
		{"duplicate signal name within a kind", func(t *testing.T, v map[string]any) {
			set(t, v, sigs+"/domains/1/name", "math")
		}, sigs + "/domains/1/name", CodeDuplicate, `domain signal name "math" is already used by /recipes/0/signals/domains/0`},
		{"modelRef names no model", func(t *testing.T, v map[string]any) {
			set(t, v, rec0+"/decisions/2/modelRefs/0/model", "codr")
		}, rec0 + "/decisions/2/modelRefs/0/model", CodeUnknownRef,
			`decision "code" references model "codr", which is not in providers.models (known: small, big, coder); did you mean "coder"?`},
		{"negative modelRef weight", func(t *testing.T, v map[string]any) {
			set(t, v, rec0+"/decisions/5/modelRefs/1/weight", -1)
		}, rec0 + "/decisions/5/modelRefs/1/weight", CodeInvalidValue, "must not be negative"},
		{"blank plugin type", func(t *testing.T, v map[string]any) {
			set(t, v, rec0+"/decisions/0/plugins/0/type", "")
		}, rec0 + "/decisions/0/plugins/0/type", CodeMissingField, "plugin type"},
		{"blank algorithm type", func(t *testing.T, v map[string]any) {
			set(t, v, rec0+"/decisions/5/algorithm", y(t, "{type: ' '}"))
		}, rec0 + "/decisions/5/algorithm/type", CodeMissingField, "algorithm"},

		// Rule leaves must name a signal of their kind in the same recipe.
		{"keyword leaf names no keyword signal", func(t *testing.T, v map[string]any) {
			set(t, v, urgentRule+"/conditions/0/name", "urgnet")
		}, urgentRule + "/conditions/0/name", CodeUnknownRef,
			`decision "urgent_support" references keyword signal "urgnet", which is not in signals.keywords of recipe "default" (known: urgent); did you mean "urgent"?`},
		{"domain leaf names no domain signal", func(t *testing.T, v map[string]any) {
			set(t, v, rec0+"/decisions/2/rules/conditions/0/name", "computing")
		}, rec0 + "/decisions/2/rules/conditions/0/name", CodeUnknownRef, "not in signals.domains"},
		{"embedding leaf names no embedding signal", func(t *testing.T, v map[string]any) {
			set(t, v, urgentRule+"/conditions/1/name", "refund")
		}, urgentRule + "/conditions/1/name", CodeUnknownRef, "not in signals.embeddings"},
		{"leaf kind must match the signal's kind", func(t *testing.T, v map[string]any) {
			set(t, v, urgentRule+"/conditions/1/type", "keyword")
		}, urgentRule + "/conditions/1/name", CodeUnknownRef, `keyword signal "billing_question", which is not in signals.keywords`},
		{"pii leaf names no pii signal", func(t *testing.T, v map[string]any) {
			set(t, v, rec0+"/decisions/4/rules/conditions/0/name", "contacts")
		}, rec0 + "/decisions/4/rules/conditions/0/name", CodeUnknownRef, "not in signals.pii"},
		{"jailbreak leaf names no jailbreak signal", func(t *testing.T, v map[string]any) {
			set(t, v, rec0+"/decisions/0/rules/conditions/0/name", "attacks")
		}, rec0 + "/decisions/0/rules/conditions/0/name", CodeUnknownRef, "not in signals.jailbreak"},
		{"language leaf names no language signal", func(t *testing.T, v map[string]any) {
			set(t, v, urgentRule+"/conditions/2/conditions/0/name", "deutsch")
		}, urgentRule + "/conditions/2/conditions/0/name", CodeUnknownRef, "not in signals.language"},
		{"context leaf names no context signal", func(t *testing.T, v map[string]any) {
			set(t, v, urgentRule+"/conditions/2/conditions/1/conditions/0/name", "long")
		}, urgentRule + "/conditions/2/conditions/1/conditions/0/name", CodeUnknownRef, "not in signals.context"},
		{"signal from no recipe at all", func(t *testing.T, v map[string]any) {
			del(t, v, sigs+"/keywords")
		}, urgentRule + "/conditions/0/name", CodeUnknownRef, "(none are defined)"},
		{"complexity leaf without a level", func(t *testing.T, v map[string]any) {
			set(t, v, rec0+"/decisions/1/rules/conditions/1/name", "reasoning_load")
		}, rec0 + "/decisions/1/rules/conditions/1/name", CodeInvalidValue,
			`a complexity condition names a level: write "reasoning_load:hard", "reasoning_load:medium" or "reasoning_load:easy"`},
		{"complexity leaf with a bad level", func(t *testing.T, v map[string]any) {
			set(t, v, rec0+"/decisions/1/rules/conditions/1/name", "reasoning_load:extreme")
		}, rec0 + "/decisions/1/rules/conditions/1/name", CodeInvalidValue, `complexity level "extreme" is not hard, medium or easy`},
		{"complexity leaf names no complexity signal", func(t *testing.T, v map[string]any) {
			set(t, v, rec0+"/decisions/1/rules/conditions/1/name", "load:hard")
		}, rec0 + "/decisions/1/rules/conditions/1/name", CodeUnknownRef, `complexity signal "load", which is not in signals.complexity`},

		// Operator nodes.
		{"NOT with two conditions", func(t *testing.T, v map[string]any) {
			set(t, v, urgentRule+"/conditions/2/conditions/1/conditions/-", y(t, "{type: keyword, name: urgent}"))
		}, urgentRule + "/conditions/2/conditions/1/conditions", CodeInvalidValue, "NOT takes exactly one condition (got 2)"},
		{"NOT with no condition", func(t *testing.T, v map[string]any) {
			set(t, v, urgentRule+"/conditions/2/conditions/1/conditions", []any{})
		}, urgentRule + "/conditions/2/conditions/1/conditions", CodeInvalidValue, "NOT takes exactly one condition (got 0)"},
		{"empty OR", func(t *testing.T, v map[string]any) {
			set(t, v, rec0+"/decisions/0/rules/conditions", []any{})
		}, rec0 + "/decisions/0/rules/conditions", CodeInvalidValue, "an empty OR never matches"},
		{"rules nested too deep", func(t *testing.T, v map[string]any) {
			node := y(t, "{type: keyword, name: urgent}")
			for range MaxRuleDepth + 1 {
				node = map[string]any{"operator": "AND", "conditions": []any{node}}
			}
			set(t, v, rec0+"/decisions/3/rules", node)
		}, rec0 + "/decisions/3/rules" + strings.Repeat("/conditions/0", MaxRuleDepth), CodeInvalidValue, "nest deeper"},

		// Complexity boundaries.
		{"threshold above 1", func(t *testing.T, v map[string]any) {
			set(t, v, cplx+"/threshold", "1.5")
		}, cplx + "/threshold", CodeInvalidValue, "between 0 and 1"},
		{"threshold below 0", func(t *testing.T, v map[string]any) {
			set(t, v, cplx+"/threshold", "-0.1")
		}, cplx + "/threshold", CodeInvalidValue, "between 0 and 1"},
		{"threshold with hard_above", func(t *testing.T, v map[string]any) {
			set(t, v, cplx+"/hard_above", "0.2")
			set(t, v, cplx+"/easy_below", "-0.2")
		}, cplx + "/hard_above", CodeConflict, "mutually exclusive"},
		{"hard_above without easy_below", func(t *testing.T, v map[string]any) {
			del(t, v, cplx+"/threshold")
			set(t, v, cplx+"/hard_above", "0.2")
		}, cplx + "/easy_below", CodeMissingField, "used together; set easy_below too"},
		{"easy_below without hard_above", func(t *testing.T, v map[string]any) {
			del(t, v, cplx+"/threshold")
			set(t, v, cplx+"/easy_below", "0.2")
		}, cplx + "/hard_above", CodeMissingField, "used together; set hard_above too"},
		{"hard_above below easy_below", func(t *testing.T, v map[string]any) {
			del(t, v, cplx+"/threshold")
			set(t, v, cplx+"/hard_above", "-0.3")
			set(t, v, cplx+"/easy_below", "0.2")
		}, cplx + "/hard_above", CodeConflict, "hard_above (-0.3) must be at least easy_below (0.2)"},
		{"hard_below needs a score backend", func(t *testing.T, v map[string]any) {
			del(t, v, cplx+"/threshold")
			set(t, v, cplx+"/hard_below", "-0.2")
			set(t, v, cplx+"/easy_above", "0.2")
		}, cplx + "/hard_below", CodeUnsupported, "score-type backend"},
		{"hard_below above easy_above", func(t *testing.T, v map[string]any) {
			del(t, v, cplx+"/threshold")
			set(t, v, cplx+"/hard_below", "0.5")
			set(t, v, cplx+"/easy_above", "0.2")
		}, cplx + "/hard_below", CodeConflict, "hard_below (0.5) must be at most easy_above (0.2)"},
		{"easy_above without hard_below", func(t *testing.T, v map[string]any) {
			del(t, v, cplx+"/threshold")
			set(t, v, cplx+"/easy_above", "0.2")
		}, cplx + "/hard_below", CodeMissingField, "set hard_below too"},
		{"both boundary pairs", func(t *testing.T, v map[string]any) {
			del(t, v, cplx+"/threshold")
			set(t, v, cplx+"/hard_above", "0.2")
			set(t, v, cplx+"/easy_below", "-0.2")
			set(t, v, cplx+"/hard_below", "-0.2")
			set(t, v, cplx+"/easy_above", "0.2")
		}, cplx + "/hard_below", CodeConflict, "mutually exclusive"},
		{"no boundaries", func(t *testing.T, v map[string]any) {
			del(t, v, cplx+"/threshold")
		}, cplx, CodeMissingField, "has no boundaries"},
		{"empty hard candidates", func(t *testing.T, v map[string]any) {
			set(t, v, cplx+"/hard/candidates", []any{})
		}, cplx + "/hard/candidates", CodeMissingField, "needs hard example phrasings"},
		{"missing easy candidates", func(t *testing.T, v map[string]any) {
			del(t, v, cplx+"/easy")
		}, cplx + "/easy", CodeMissingField, "needs easy example phrasings"},
		{"complexity name with a colon", func(t *testing.T, v map[string]any) {
			set(t, v, cplx+"/name", "load:x")
		}, cplx + "/name", CodeInvalidValue, "must not contain a colon"},
		{"composer names no signal", func(t *testing.T, v map[string]any) {
			set(t, v, cplx+"/composer", y(t, "[{type: domain, name: maths}]"))
		}, cplx + "/composer/0/name", CodeUnknownRef, `complexity signal "reasoning_load" references domain signal "maths"`},
		{"composer on complexity", func(t *testing.T, v map[string]any) {
			set(t, v, cplx+"/composer", y(t, "[{type: complexity, name: 'reasoning_load:hard'}]"))
		}, cplx + "/composer/0/type", CodeInvalidValue, "cannot depend on a complexity signal"},

		// Other signal values.
		{"embedding threshold above 1", func(t *testing.T, v map[string]any) {
			set(t, v, sigs+"/embeddings/0/threshold", 75)
		}, sigs + "/embeddings/0/threshold", CodeInvalidValue, "between 0 and 1"},
		{"embedding without candidates", func(t *testing.T, v map[string]any) {
			set(t, v, sigs+"/embeddings/0/candidates", []any{})
		}, sigs + "/embeddings/0/candidates", CodeMissingField, "at least one candidate"},
		{"blank embedding candidate", func(t *testing.T, v map[string]any) {
			set(t, v, sigs+"/embeddings/0/candidates/2", "  ")
		}, sigs + "/embeddings/0/candidates/2", CodeInvalidValue, "must not be empty"},
		{"unknown pii type", func(t *testing.T, v map[string]any) {
			set(t, v, sigs+"/pii/0/types/1", "TELEPHONE")
		}, sigs + "/pii/0/types/1", CodeInvalidValue, `unknown personal-data type "TELEPHONE" (known: PERSON, EMAIL, PHONE, SSN, LOCATION, CREDIT_CARD, IP_ADDRESS, IBAN)`},
		{"pii threshold above 1", func(t *testing.T, v map[string]any) {
			set(t, v, sigs+"/pii/0/threshold", 1.5)
		}, sigs + "/pii/0/threshold", CodeInvalidValue, "between 0 and 1"},
		{"negative jailbreak threshold", func(t *testing.T, v map[string]any) {
			set(t, v, sigs+"/jailbreak/0/threshold", -0.5)
		}, sigs + "/jailbreak/0/threshold", CodeInvalidValue, "between 0 and 1"},
		{"domain threshold above 1", func(t *testing.T, v map[string]any) {
			set(t, v, sigs+"/domains/0/threshold", 2)
		}, sigs + "/domains/0/threshold", CodeInvalidValue, "between 0 and 1"},
		{"three-letter language code", func(t *testing.T, v map[string]any) {
			set(t, v, sigs+"/language/0/languages/0", "deu")
		}, sigs + "/language/0/languages/0", CodeInvalidValue, `"deu" is not an ISO 639-1 language code`},
		{"unknown two-letter language code", func(t *testing.T, v map[string]any) {
			set(t, v, sigs+"/language/0/languages", []any{"de", "xx"})
		}, sigs + "/language/0/languages/1", CodeInvalidValue, "ISO 639-1"},
		{"negative min_tokens", func(t *testing.T, v map[string]any) {
			set(t, v, sigs+"/context/0/min_tokens", -1)
		}, sigs + "/context/0/min_tokens", CodeInvalidValue, "must not be negative"},
		{"max_tokens below min_tokens", func(t *testing.T, v map[string]any) {
			set(t, v, sigs+"/context/0/max_tokens", 100)
		}, sigs + "/context/0/max_tokens", CodeConflict, "below min_tokens"},

		// Global.
		{"negative max_batch_size", func(t *testing.T, v map[string]any) {
			set(t, v, "/global/services/api/batch_classification/max_batch_size", -5)
		}, "/global/services/api/batch_classification/max_batch_size", CodeInvalidValue, "at least 1"},
		{"negative signal timeout", func(t *testing.T, v map[string]any) {
			set(t, v, "/global/model_catalog", y(t, "{signal_timeout_ms: -1}"))
		}, "/global/model_catalog/signal_timeout_ms", CodeInvalidValue, "must not be negative"},
		{"management port clashes with ext_proc", func(t *testing.T, v map[string]any) {
			set(t, v, "/global/extproc/port", 8080)
		}, "/global/extproc/port", CodeConflict, "already used by the management API"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := exampleValue(t)
			tt.mutate(t, v)
			_, err := Parse(toJSON(t, v))
			assertProblem(t, err, tt.wantPath, tt.wantCode, tt.wantMsg)
		})
	}
}

// TestAccepted lists changes that must stay valid.
func TestAccepted(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(t *testing.T, v map[string]any)
		check  func(t *testing.T, d *Document)
	}{
		{"decision without modelRefs uses the default model", func(t *testing.T, v map[string]any) {
			del(t, v, rec0+"/decisions/4/modelRefs")
		}, nil},
		{"external classification model", func(t *testing.T, v map[string]any) {
			set(t, v, "/global/external_models", y(t, "[{name: judge, model_role: classification, llm_model_name: qwen3-8b, llm_endpoint: {address: '::1', port: 8000, protocol: https}, llm_timeout_seconds: 3, api_key_env: JUDGE_KEY}]"))
		}, func(t *testing.T, d *Document) {
			m, ok := d.Global.ExternalModel(ExternalRoleClassification)
			if !ok || m.LLMEndpoint.BaseURL() != "https://[::1]:8000" || m.LLMTimeoutSeconds != 3 || m.APIKeyEnv != "JUDGE_KEY" {
				t.Fatalf("external model = %+v, %v; base URL %q", m, ok, m.LLMEndpoint.BaseURL())
			}
		}},
		{"empty AND is the catch-all", func(t *testing.T, v map[string]any) {
			set(t, v, rec0+"/decisions/4/rules", y(t, "{operator: AND, conditions: []}"))
		}, nil},
		{"same name in two signal kinds", func(t *testing.T, v map[string]any) {
			set(t, v, sigs+"/keywords/0/name", "math")
			set(t, v, urgentRule+"/conditions/0/name", "math")
		}, nil},
		{"pii types are case-insensitive", func(t *testing.T, v map[string]any) {
			set(t, v, sigs+"/pii/0/types", []any{"email", "Ip_Address"})
		}, func(t *testing.T, d *Document) {
			if got := d.Recipes[0].Signals.PII[0].Types; got[0] != "EMAIL" || got[1] != "IP_ADDRESS" {
				t.Errorf("types = %v", got)
			}
		}},
		{"language codes are case-insensitive", func(t *testing.T, v map[string]any) {
			set(t, v, sigs+"/language/0/languages", []any{"DE", "Fr"})
		}, func(t *testing.T, d *Document) {
			if got := d.Recipes[0].Signals.Language[0].Languages; got[0] != "de" || got[1] != "fr" {
				t.Errorf("languages = %v", got)
			}
		}},
		{"hard_above and easy_below", func(t *testing.T, v map[string]any) {
			del(t, v, cplx+"/threshold")
			set(t, v, cplx+"/hard_above", "0.2")
			set(t, v, cplx+"/easy_below", "-0.25")
		}, nil},
		{"equal hard_above and easy_below", func(t *testing.T, v map[string]any) {
			del(t, v, cplx+"/threshold")
			set(t, v, cplx+"/hard_above", "0")
			set(t, v, cplx+"/easy_below", "0")
		}, nil},
		{"threshold as a bare number", func(t *testing.T, v map[string]any) {
			set(t, v, cplx+"/threshold", 0.1)
		}, func(t *testing.T, d *Document) {
			if got := d.Recipes[0].Signals.Complexity[0].Threshold; got != "0.1" {
				t.Errorf("threshold = %q", got)
			}
		}},
		{"demo backend without base_url", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/0/backend_refs/0", y(t, "{provider: demo}"))
		}, nil},
		{"metrics port reused while metrics are off", func(t *testing.T, v map[string]any) {
			set(t, v, "/global/services/observability/metrics", y(t, "{enabled: false, port: 8801}"))
		}, nil},
		{"same port on different addresses", func(t *testing.T, v map[string]any) {
			set(t, v, "/listeners/-", y(t, "{name: lan, address: 192.168.1.5, port: 8801}"))
		}, nil},
		{"listener without entrypoint", func(t *testing.T, v map[string]any) {
			del(t, v, "/listeners/0/entrypoint")
		}, func(t *testing.T, d *Document) {
			if d.Entrypoint(d.Listeners[0]) != "default" {
				t.Error("entrypoint should fall back to the default recipe")
			}
		}},
		{"anthropic api format and https", func(t *testing.T, v map[string]any) {
			set(t, v, "/providers/models/0/api_format", "anthropic")
			set(t, v, "/providers/models/0/backend_refs/0/base_url", "https://api.example.com/v1")
		}, nil},
		{"free-form plugin configuration and tracing sampling", func(t *testing.T, v map[string]any) {
			set(t, v, rec0+"/decisions/0/plugins/0/configuration/anything", y(t, "{nested: [1, 2, {x: y}]}"))
			set(t, v, "/global/services/observability/tracing/sampling", y(t, "{type: ratio, rate: 0.5}"))
			set(t, v, "/global/services/observability/tracing/resource", y(t, "{service_name: junction}"))
			set(t, v, rec0+"/decisions/5/algorithm", y(t, "{type: static, options: {whatever: true}}"))
		}, nil},
		{"duration as bare seconds", func(t *testing.T, v map[string]any) {
			set(t, v, "/listeners/0/timeout", 90)
		}, func(t *testing.T, d *Document) {
			if d.Listeners[0].Timeout.Seconds() != 90 {
				t.Errorf("timeout = %v", d.Listeners[0].Timeout)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := exampleValue(t)
			tt.mutate(t, v)
			doc, err := Parse(toJSON(t, v))
			if err != nil {
				t.Fatalf("should be accepted:\n%v", err)
			}
			if tt.check != nil {
				tt.check(t, doc)
			}
		})
	}
}

func TestValidateHandBuiltDocument(t *testing.T) {
	doc := &Document{
		Version: "v1",
		Providers: Providers{
			Defaults: ProviderDefaults{DefaultModel: "m"},
			Models:   []Model{{Name: "m", BackendRefs: []BackendRef{{BaseURL: "http://127.0.0.1:9/v1", Provider: "openai"}}}},
		},
		Recipes: []Recipe{{
			Name: "r",
			Decisions: []Decision{
				{Name: "all", Rules: RuleNode{Operator: OpAND}}, // nil conditions: an empty AND
			},
		}},
	}
	doc.ApplyDefaults()
	if err := doc.Validate(); err != nil {
		t.Fatalf("valid hand-built document: %v", err)
	}
	// Round trip: the canonical form parses back to the same document.
	b, err := Canonical(doc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatalf("canonical form does not parse: %v\n%s", err, b)
	}
	if Hash(back) != Hash(doc) {
		t.Error("canonical round trip changed the hash")
	}

	doc.Recipes[0].Decisions[0].ModelRefs = []ModelRef{{Model: "n"}}
	doc.Recipes[0].Decisions = append(doc.Recipes[0].Decisions, Decision{Name: "x", Rules: RuleNode{Operator: "XOR"}})
	err = doc.Validate()
	assertProblem(t, err, "/recipes/0/decisions/1/rules/operator", CodeInvalidValue, "AND, OR, NOT")

	doc.Recipes[0].Decisions = doc.Recipes[0].Decisions[:1]
	err = doc.Validate()
	assertProblem(t, err, "/recipes/0/decisions/0/modelRefs/0/model", CodeUnknownRef, `references model "n"`)

	var nilDoc *Document
	if nilDoc.Validate() == nil {
		t.Error("nil document validated")
	}
}
