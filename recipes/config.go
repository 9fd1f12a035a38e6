// Package recipes holds Junction's configuration document: its Go types, the JSON
// Schema that validates it, loading from YAML or JSON, defaults, semantic
// validation with JSON-pointer paths, canonical hashing, and the built-in recipes.
//
// It imports nothing else of Junction's; everything else imports it. It must not
// compile signals or open connections: it describes, the engine acts.
package recipes

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Document is the whole configuration: listeners, providers (models and their
// backends), recipes (signals and decisions) and global services.
type Document struct {
	Version   string     `json:"version"`
	Listeners []Listener `json:"listeners,omitempty"`
	Providers Providers  `json:"providers"`
	Recipes   []Recipe   `json:"recipes"`
	Global    Global     `json:"global,omitempty"`
}

// Listener is one data-plane HTTP listener of the standalone gateway.
type Listener struct {
	Name    string   `json:"name"`
	Address string   `json:"address,omitempty"`
	Port    int      `json:"port"`
	Timeout Duration `json:"timeout,omitempty"`
	// Entrypoint names the recipe this listener routes with; empty means the default recipe.
	Entrypoint string `json:"entrypoint,omitempty"`
	// APIKeys, when non-empty, are the bearer tokens a client must present.
	APIKeys []string `json:"api_keys,omitempty"`
	// MaxBodyBytes bounds a request body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
}

// Providers lists the backend models and the defaults routing falls back on.
type Providers struct {
	Defaults          ProviderDefaults           `json:"defaults"`
	ReasoningFamilies map[string]ReasoningFamily `json:"reasoning_families,omitempty"`
	Models            []Model                    `json:"models"`
}

// ProviderDefaults are used when no decision matches or a modelRef leaves a value unset.
type ProviderDefaults struct {
	DefaultModel           string `json:"default_model"`
	DefaultReasoningEffort string `json:"default_reasoning_effort,omitempty"`
}

// ReasoningFamily says how a model family switches reasoning on and off.
type ReasoningFamily struct {
	// Type is "chat_template_kwargs" (a boolean flag inside chat_template_kwargs)
	// or "reasoning_effort" (a top-level effort string).
	Type      string `json:"type"`
	Parameter string `json:"parameter"`
}

// Reasoning family types.
const (
	FamilyChatTemplateKwargs = "chat_template_kwargs"
	FamilyReasoningEffort    = "reasoning_effort"
)

// Model is one backend model that decisions can select.
type Model struct {
	Name            string       `json:"name"`
	Description     string       `json:"description,omitempty"`
	ReasoningFamily string       `json:"reasoning_family,omitempty"`
	APIFormat       string       `json:"api_format,omitempty"`
	Pricing         *Pricing     `json:"pricing,omitempty"`
	BackendRefs     []BackendRef `json:"backend_refs"`
	// PIIPolicy restricts which personal-data types may be sent to this model.
	// Nil allows every type.
	PIIPolicy *PIIPolicy `json:"pii_policy,omitempty"`
}

// Pricing is the price of a model per one million tokens.
type Pricing struct {
	Currency         string   `json:"currency,omitempty"`
	PromptPer1M      float64  `json:"prompt_per_1m"`
	CompletionPer1M  float64  `json:"completion_per_1m"`
	CachedInputPer1M *float64 `json:"cached_input_per_1m,omitempty"`
	CacheWritePer1M  *float64 `json:"cache_write_per_1m,omitempty"`
}

// PIIPolicy lists the personal-data types a model may receive.
type PIIPolicy struct {
	AllowByDefault bool     `json:"allow_by_default"`
	TypesAllowed   []string `json:"pii_types_allowed,omitempty"`
}

// Allows reports whether the policy lets a request carrying typ through.
func (p *PIIPolicy) Allows(typ string) bool {
	if p == nil || p.AllowByDefault {
		return true
	}
	for _, t := range p.TypesAllowed {
		if strings.EqualFold(t, typ) {
			return true
		}
	}
	return false
}

// BackendRef is one endpoint that serves a model.
type BackendRef struct {
	BaseURL  string `json:"base_url"`
	Provider string `json:"provider,omitempty"`
	// ChatPath overrides the path appended to BaseURL; default "/chat/completions".
	ChatPath     string            `json:"chat_path,omitempty"`
	ExtraHeaders map[string]string `json:"extra_headers,omitempty"`
	// APIKeyEnv names an environment variable holding the upstream key (never the key itself).
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// ForwardClientAuth passes the client's own credentials (Authorization,
	// x-api-key, api-key) to this backend; without it they never reach one.
	// Exclusive with APIKeyEnv.
	ForwardClientAuth bool `json:"forward_client_auth,omitempty"`
	// Timeout bounds one upstream call; 0 means the listener's timeout.
	Timeout Duration `json:"timeout,omitempty"`
}

// Recipe is a named set of signals and the decisions that route on them.
type Recipe struct {
	Name        string     `json:"name"`
	Description string     `json:"description,omitempty"`
	Signals     Signals    `json:"signals,omitempty"`
	Decisions   []Decision `json:"decisions,omitempty"`
	// Reliability and Fallback are the defaults of the recipe's decisions
	// (and of its default route).
	Reliability *Reliability `json:"reliability,omitempty"`
	Fallback    *Fallback    `json:"fallback,omitempty"`
}

// Signals are the recipe's named detectors, grouped by kind.
type Signals struct {
	Keywords   []KeywordSignal    `json:"keywords,omitempty"`
	Domains    []DomainSignal     `json:"domains,omitempty"`
	PII        []PIISignal        `json:"pii,omitempty"`
	Jailbreak  []JailbreakSignal  `json:"jailbreak,omitempty"`
	Context    []ContextSignal    `json:"context,omitempty"`
	Language   []LanguageSignal   `json:"language,omitempty"`
	Embeddings []EmbeddingSignal  `json:"embeddings,omitempty"`
	Complexity []ComplexitySignal `json:"complexity,omitempty"`
}

// KeywordSignal matches literal keywords in the request text.
type KeywordSignal struct {
	Name string `json:"name"`
	// Operator is OR (any keyword) or AND (all keywords); default OR.
	Operator      string   `json:"operator,omitempty"`
	Keywords      []string `json:"keywords"`
	CaseSensitive bool     `json:"case_sensitive,omitempty"`
	// WordBoundary requires whole-word matches; default true.
	WordBoundary *bool `json:"word_boundary,omitempty"`
}

// DomainSignal matches when the domain classifier's category maps to this name.
type DomainSignal struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// MMLUCategories are the classifier categories that map to Name. Empty means
	// identity mapping when Name equals a category (case-insensitive).
	MMLUCategories []string `json:"mmlu_categories,omitempty"`
	// Threshold is the minimum probability; default 0 (the top category wins).
	Threshold float64 `json:"threshold,omitempty"`
}

// PIISignal matches when personal data of the listed types is present.
type PIISignal struct {
	Name string `json:"name"`
	// Types are entity type names (EMAIL, PHONE, ...); empty means every type.
	Types     []string `json:"types,omitempty"`
	Threshold float64  `json:"threshold,omitempty"`
	// OnUnscanned is "block" (default: unscanned input matches) or "allow".
	OnUnscanned string `json:"on_unscanned,omitempty"`
	// Action "block" answers 403 when this signal matches; default "route" (only a condition).
	Action string `json:"action,omitempty"`
}

// JailbreakSignal matches prompt-injection or jailbreak attempts.
type JailbreakSignal struct {
	Name        string  `json:"name"`
	Threshold   float64 `json:"threshold,omitempty"`
	OnUnscanned string  `json:"on_unscanned,omitempty"`
	// Action "block" answers 403 when this signal matches; default "route".
	Action string `json:"action,omitempty"`
}

// Signal actions and unscanned policies.
const (
	ActionRoute    = "route"
	ActionBlock    = "block"
	UnscannedBlock = "block"
	UnscannedAllow = "allow"
)

// ContextSignal matches on the request's token count.
type ContextSignal struct {
	Name      string `json:"name"`
	MinTokens int    `json:"min_tokens,omitempty"`
	// MaxTokens 0 means no upper bound.
	MaxTokens int `json:"max_tokens,omitempty"`
}

// LanguageSignal matches when the detected language is one of Languages (ISO 639-1).
type LanguageSignal struct {
	Name      string   `json:"name"`
	Languages []string `json:"languages"`
}

// EmbeddingSignal matches when the request is similar enough to a candidate.
type EmbeddingSignal struct {
	Name       string   `json:"name"`
	Candidates []string `json:"candidates"`
	Threshold  float64  `json:"threshold"`
	// Aggregation is "max" (default) or "mean" over candidate similarities.
	Aggregation string `json:"aggregation,omitempty"`
}

// ComplexitySignal grades a request hard, medium or easy.
type ComplexitySignal struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Threshold is a decimal string in [0,1]: score above it is hard, below its
	// negative easy, between medium.
	Threshold Decimal       `json:"threshold,omitempty"`
	HardAbove Decimal       `json:"hard_above,omitempty"`
	EasyBelow Decimal       `json:"easy_below,omitempty"`
	HardBelow Decimal       `json:"hard_below,omitempty"`
	EasyAbove Decimal       `json:"easy_above,omitempty"`
	Hard      *CandidateSet `json:"hard,omitempty"`
	Easy      *CandidateSet `json:"easy,omitempty"`
	// Composer lists conditions that must also hold for the signal to grade.
	Composer []RuleNode `json:"composer,omitempty"`
}

// CandidateSet is a list of example phrasings.
type CandidateSet struct {
	Candidates []string `json:"candidates"`
}

// Complexity levels, written after a colon in a condition name ("load:hard").
const (
	LevelHard   = "hard"
	LevelMedium = "medium"
	LevelEasy   = "easy"
)

// Decision is a prioritized rule with the models and plugins it routes to.
type Decision struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	Priority    int         `json:"priority,omitempty"`
	Rules       RuleNode    `json:"rules"`
	ModelRefs   []ModelRef  `json:"modelRefs,omitempty"`
	Plugins     []PluginRef `json:"plugins,omitempty"`
	// Algorithm selects among ModelRefs; default first healthy.
	Algorithm *Algorithm `json:"algorithm,omitempty"`
	// PreferredEndpoints name backend_refs (base_url or host:port) tried
	// before a model's other backends.
	PreferredEndpoints []string `json:"preferred_endpoints,omitempty"`
	// Reliability and Fallback override the recipe's and the router's
	// (reliability.go).
	Reliability *Reliability `json:"reliability,omitempty"`
	Fallback    *Fallback    `json:"fallback,omitempty"`
}

// Algorithm names a model-selection algorithm and its options.
type Algorithm struct {
	Type    string          `json:"type"`
	Options json.RawMessage `json:"options,omitempty"`
}

// RuleNode is either a boolean node (Operator with Conditions) or a leaf
// condition (Type and Name of a signal).
type RuleNode struct {
	Operator   string     `json:"operator,omitempty"`
	Conditions []RuleNode `json:"conditions,omitempty"`
	Type       string     `json:"type,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// Rule operators.
const (
	OpAND = "AND"
	OpOR  = "OR"
	OpNOT = "NOT"
)

// IsLeaf reports whether the node is a signal condition rather than an operator.
func (n RuleNode) IsLeaf() bool { return n.Operator == "" }

// ModelRef is one candidate model of a decision.
type ModelRef struct {
	Model           string  `json:"model"`
	UseReasoning    *bool   `json:"use_reasoning,omitempty"`
	ReasoningEffort string  `json:"reasoning_effort,omitempty"`
	Weight          float64 `json:"weight,omitempty"`
}

// PluginRef binds a decision plugin with its configuration.
type PluginRef struct {
	Type          string          `json:"type"`
	Configuration json.RawMessage `json:"configuration,omitempty"`
	// OnError is "skip" (default: the request goes on without this plugin) or "fail".
	OnError string `json:"on_error,omitempty"`
	// Module, when set, loads the plugin type from a WebAssembly module file
	// instead of the modules built into the binary.
	Module *PluginModule `json:"module,omitempty"`
}

// PluginModule is a plugin module file and the sha256 its bytes must have
// (so a recipe pins exactly the module it was written for).
type PluginModule struct {
	// Path is the .wasm file; a relative path is relative to the working
	// directory of the process.
	Path string `json:"path"`
	// SHA256 is the lower-case hex digest of the file.
	SHA256 string `json:"sha256"`
}

// Plugin error policies.
const (
	OnErrorSkip = "skip"
	OnErrorFail = "fail"
)

// Global holds process-wide services.
type Global struct {
	Services     Services      `json:"services,omitempty"`
	Extproc      Endpoint      `json:"extproc,omitempty"`
	ModelCatalog *ModelCatalog `json:"model_catalog,omitempty"`
	Router       *Router       `json:"router,omitempty"`
	Storage      *Storage      `json:"storage,omitempty"`
	// State is where state shared by replicas lives (rate-limit counters).
	State *State `json:"state,omitempty"`
	// RateLimits bound requests and tokens per key and window; they apply
	// live (a change takes effect with the next request).
	RateLimits []RateLimit `json:"rate_limits,omitempty"`
	// ExternalModels are remote OpenAI-compatible models that classifier
	// backends ask (spec 001 external_models).
	ExternalModels []ExternalModel `json:"external_models,omitempty"`
}

// Router holds router-wide switches (global.router).
type Router struct {
	// Enabled turns the router-side model runtime on (default true): with
	// false, junction serve starts and attaches to none of
	// global.model_catalog.deployments, and bindings to them are refused
	// (a bound signal would otherwise have nothing to ask).
	Enabled *bool `json:"enabled,omitempty"`
	// Reliability and Fallback are the router-wide defaults every recipe
	// and decision starts from.
	Reliability *Reliability `json:"reliability,omitempty"`
	Fallback    *Fallback    `json:"fallback,omitempty"`
}

// ModelRuntimeEnabled reports global.router.enabled (true when unset).
func (g *Global) ModelRuntimeEnabled() bool {
	return g.Router == nil || g.Router.Enabled == nil || *g.Router.Enabled
}

// ModelCatalog holds settings of model-backed signals.
type ModelCatalog struct {
	// SignalTimeoutMS bounds signal evaluation; 0 means the spec's default.
	SignalTimeoutMS int `json:"signal_timeout_ms,omitempty"`
	// Deployments are model runtime workers the router starts and supervises
	// (or attaches to); Bindings say which signal kinds use them. Without
	// them the signals run the default models in-process.
	Deployments []ModelDeployment `json:"deployments,omitempty"`
	Bindings    *ModelBindings    `json:"bindings,omitempty"`
}

// Services are the non-data-plane listeners and features.
type Services struct {
	ManagementAPI ManagementAPI `json:"management_api,omitempty"`
	API           APIService    `json:"api,omitempty"`
	Observability Observability `json:"observability,omitempty"`
	ResponseAPI   ResponseAPI   `json:"response_api,omitempty"`
	NativeAPI     *NativeAPI    `json:"native_api,omitempty"`
	// ResponseCache is where the response_cache plugins keep their
	// entries; nil is in memory with the default bounds.
	ResponseCache *ResponseCacheService `json:"response_cache,omitempty"`
}

// ResponseCacheService configures the response cache's store: Backend
// "memory" (the default; forgotten at exit), "embedded" (a SQLite file in
// the data directory, kept across restarts) or "redis" (shared by the
// replicas through global.state's Redis; the default when global.state.backend
// is redis), bounded in entries and bytes for the whole cache (with redis,
// each replica's index). Read at start.
type ResponseCacheService struct {
	Backend    string `json:"backend,omitempty"`
	MaxEntries int    `json:"max_entries,omitempty"`
	MaxBytes   int64  `json:"max_bytes,omitempty"`
}

// Response cache backends and default bounds.
const (
	ResponseCacheMemory     = "memory"
	ResponseCacheEmbedded   = "embedded"
	ResponseCacheRedis      = "redis" // global.state's Redis; the default with global.state.backend redis
	DefaultCacheMaxEntries  = 100000
	DefaultCacheMaxBytes    = 256 << 20
	maxResponseCacheEntries = 10000000
)

// Endpoint is an address and port.
type Endpoint struct {
	Address string `json:"address,omitempty"`
	Port    int    `json:"port,omitempty"`
}

// ManagementAPI configures the management listener.
type ManagementAPI struct {
	Address string `json:"address,omitempty"`
	Port    int    `json:"port,omitempty"`
	Auth    Auth   `json:"auth,omitempty"`
	// RateLimit bounds the routes that run models (permission
	// classify.invoke) per principal; nil leaves them unlimited.
	RateLimit *ManagementRateLimit `json:"rate_limit,omitempty"`
}

// ManagementRateLimit allows Requests model-running management calls per
// Window (default DefaultRateLimitWindow) for each principal: the bearer
// token's name, or the client address when authentication is off. Over it
// the answer is 429 RATE_LIMIT_EXCEEDED (document 001's code). Applies live.
type ManagementRateLimit struct {
	Requests int64    `json:"requests"`
	Window   Duration `json:"window,omitempty"`
}

// Auth configures management authentication. Mode "bearer" requires every
// route but GET /health to present a token; Roles grant permissions and Tokens
// say where each principal's token is read from (never the token itself).
type Auth struct {
	Mode   string      `json:"mode,omitempty"`
	Roles  []AuthRole  `json:"roles,omitempty"`
	Tokens []AuthToken `json:"tokens,omitempty"`
}

// AuthRole is a named set of management permissions ("config.read",
// "config.write", "secret_view", ...; "*" grants every permission).
type AuthRole struct {
	Name        string   `json:"name"`
	Permissions []string `json:"permissions"`
}

// AuthToken is one principal's bearer token source: exactly one of Env (an
// environment variable holding the token) or File (a file holding it, trailing
// whitespace ignored).
type AuthToken struct {
	// Name identifies the principal in audit records.
	Name  string   `json:"name"`
	Roles []string `json:"roles"`
	Env   string   `json:"env,omitempty"`
	File  string   `json:"file,omitempty"`
}

// ManagementPermissions are the permission names a management role may grant.
var ManagementPermissions = []string{
	"ready.read", "config.read", "config.write", "secret_view", "data.read", "data.write",
	"classify.invoke", "audit.read", "learning.ingest", "cache.read", "cache.invalidate", "cache.manage",
}

// APIService configures the utility APIs.
type APIService struct {
	BatchClassification BatchClassification `json:"batch_classification,omitempty"`
}

// BatchClassification bounds batch classification calls.
type BatchClassification struct {
	MaxBatchSize int `json:"max_batch_size,omitempty"`
}

// Observability configures metrics and tracing.
type Observability struct {
	Metrics MetricsConfig `json:"metrics,omitempty"`
	Tracing Tracing       `json:"tracing,omitempty"`
}

// MetricsConfig is the metrics listener; Enabled nil means on.
type MetricsConfig struct {
	Enabled *bool  `json:"enabled,omitempty"`
	Address string `json:"address,omitempty"`
	Port    int    `json:"port,omitempty"`
}

// Tracing configures OpenTelemetry tracing (internal/tracing builds it at
// start; a change needs a restart). Omitted fields take the defaults named
// on each.
type Tracing struct {
	Enabled bool `json:"enabled,omitempty"`
	// Provider is "opentelemetry", the only one (the default).
	Provider string          `json:"provider,omitempty"`
	Exporter TracingExporter `json:"exporter,omitempty"`
	// Sampling decides which new traces are recorded; a request that
	// arrives with a sampled traceparent is always recorded (parent-based).
	Sampling *TracingSampling `json:"sampling,omitempty"`
	// Resource holds resource attributes (name → string, number or bool)
	// added to service.name junction and service.version; the key
	// service_name is read as service.name.
	Resource json.RawMessage `json:"resource,omitempty"`
	// CaptureContent puts prompts and answers on the model-call spans
	// (gen_ai.input.messages, gen_ai.output.messages). Off by default:
	// request text is personal data in most deployments.
	CaptureContent bool `json:"capture_content,omitempty"`
}

// TracingExporter says where traces go: OTLP over gRPC (the default, port
// 4317) or over HTTP with protobuf bodies (protocol http/protobuf, port
// 4318).
type TracingExporter struct {
	// Type is "otlp", the only one (the default).
	Type string `json:"type,omitempty"`
	// Protocol is "grpc" (default) or "http/protobuf", as
	// OTEL_EXPORTER_OTLP_PROTOCOL names them.
	Protocol string `json:"protocol,omitempty"`
	// Endpoint is host:port (default jaeger:4317, or jaeger:4318 over HTTP)
	// or, over HTTP, a URL (http://host:4318, with a path other than
	// /v1/traces when the collector wants one).
	Endpoint string `json:"endpoint,omitempty"`
	// Insecure sends without TLS; nil means true (the spec's default).
	Insecure *bool `json:"insecure,omitempty"`
}

// Tracing sampling types.
const (
	SamplingRatio     = "ratio"
	SamplingAlwaysOn  = "always_on"
	SamplingAlwaysOff = "always_off"
)

// TracingSampling is the head sampler of new traces.
type TracingSampling struct {
	// Type is ratio (default), always_on or always_off.
	Type string `json:"type,omitempty"`
	// Rate is the share of new traces recorded with type ratio, 0 to 1;
	// nil means 1.
	Rate *float64 `json:"rate,omitempty"`
}

// ResponseAPI configures the /v1/responses store (responseapi.go: its
// defaults and checks). Every field is read at start.
type ResponseAPI struct {
	Enabled bool `json:"enabled,omitempty"`
	// Store is memory (the default), embedded (alias sqlite) or redis
	// (global.state's Redis, shared by the replicas; the default when
	// global.state.backend is redis).
	Store string `json:"store,omitempty"`
	// TTL is how long a response is kept after it was last used (stored,
	// or its conversation continued); zero is DefaultResponseTTL.
	TTL Duration `json:"ttl,omitempty"`
	// MaxEntries and MaxBytes bound the responses kept, the least recently
	// used removed first; zero is the store's default
	// (DefaultResponseMaxEntries, DefaultResponseMaxBytes).
	MaxEntries int   `json:"max_entries,omitempty"`
	MaxBytes   int64 `json:"max_bytes,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("300s", "1m30s").
type Duration struct{ time.Duration }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string; a bare number is taken as seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var secs float64
		if err2 := json.Unmarshal(b, &secs); err2 != nil {
			return fmt.Errorf("duration must be a string like \"30s\"")
		}
		d.Duration = time.Duration(secs * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: use a value like \"30s\" or \"2m\"", s)
	}
	d.Duration = v
	return nil
}

// Decimal is a number written as a decimal string ("0.1", "-0.25"), as the spec's
// complexity thresholds are. The zero value means unset.
type Decimal string

// IsSet reports whether a value was given.
func (d Decimal) IsSet() bool { return d != "" }

// Float parses the decimal.
func (d Decimal) Float() (float64, error) {
	return strconv.ParseFloat(strings.TrimSpace(string(d)), 64)
}

// UnmarshalJSON accepts a string or a bare number.
func (d *Decimal) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*d = Decimal(s)
		return nil
	}
	var f json.Number
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("decimal must be a string like \"0.1\"")
	}
	*d = Decimal(f.String())
	return nil
}
