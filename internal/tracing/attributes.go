package tracing

import "go.opentelemetry.io/otel/attribute"

// Attribute names of Junction's spans. The model call follows
// OpenTelemetry's GenAI semantic conventions (gen_ai.*, development
// status: the names of the release current in 2026); the rest is
// Junction's own, under junction.*.
const (
	GenAIOperationName      = attribute.Key("gen_ai.operation.name")
	GenAIProviderName       = attribute.Key("gen_ai.provider.name")
	GenAIRequestModel       = attribute.Key("gen_ai.request.model")
	GenAIRequestMaxTokens   = attribute.Key("gen_ai.request.max_tokens")
	GenAIRequestTemperature = attribute.Key("gen_ai.request.temperature")
	GenAIResponseModel      = attribute.Key("gen_ai.response.model")
	GenAIResponseID         = attribute.Key("gen_ai.response.id")
	GenAIResponseFinish     = attribute.Key("gen_ai.response.finish_reasons")
	GenAIUsageInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	GenAIUsageOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	GenAIInputMessages      = attribute.Key("gen_ai.input.messages")
	GenAIOutputMessages     = attribute.Key("gen_ai.output.messages")
	ServerAddress           = attribute.Key("server.address")
	ServerPort              = attribute.Key("server.port")
	ErrorType               = attribute.Key("error.type")
	HTTPRequestMethod       = attribute.Key("http.request.method")
	HTTPRoute               = attribute.Key("http.route")
	HTTPResponseStatusCode  = attribute.Key("http.response.status_code")
	URLPath                 = attribute.Key("url.path")
	RPCSystem               = attribute.Key("rpc.system")
	RequestID               = attribute.Key("junction.request_id")
	Recipe                  = attribute.Key("junction.recipe")
	Decision                = attribute.Key("junction.decision")
	ReasonCode              = attribute.Key("junction.reason_code")
	Confidence              = attribute.Key("junction.confidence")
	SelectionMethod         = attribute.Key("junction.selection_method")
	SelectedModel           = attribute.Key("junction.model")
	ReasoningEnabled        = attribute.Key("junction.reasoning.enabled")
	Blocked                 = attribute.Key("junction.blocked")
	SignalKind              = attribute.Key("junction.signal.kind")
	SignalName              = attribute.Key("junction.signal.name")
	SignalMatched           = attribute.Key("junction.signal.matched")
	SignalScore             = attribute.Key("junction.signal.score")
	SignalMethod            = attribute.Key("junction.signal.method")
	SignalError             = attribute.Key("junction.signal.error")
	PluginType              = attribute.Key("junction.plugin.type")
	PluginMode              = attribute.Key("junction.plugin.mode")
	PluginRuntime           = attribute.Key("junction.plugin.runtime")
	PluginStatus            = attribute.Key("junction.plugin.status")
	PluginPhase             = attribute.Key("junction.plugin.phase")
	Backend                 = attribute.Key("junction.backend")
	Stream                  = attribute.Key("junction.stream")
	ExtprocPhase            = attribute.Key("junction.ext_proc.phase")
	ManagementAction        = attribute.Key("junction.management.action")
	ManagementConfigVersion = attribute.Key("junction.management.config_version")
)

// GenAI operation and provider values.
const (
	OperationChat     = "chat"
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)
