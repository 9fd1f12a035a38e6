package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Probability is a decimal string from 0.0 to 1.0 ("0.5"); CRDs keep numbers exact this way.
//
// +kubebuilder:validation:Pattern=`^(0(\.[0-9]+)?|1(\.0+)?|\.[0-9]+)$`
type Probability string

// Decimal is a decimal string, possibly negative ("-0.25").
//
// +kubebuilder:validation:Pattern=`^-?([0-9]+(\.[0-9]*)?|\.[0-9]+)$`
type Decimal string

// Duration is a duration string such as "30s", "1m30s" or "0s" (which turns a timeout off).
//
// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
type Duration string

// ConfigSpec is the routing configuration (spec 001 "Operator resource schema").
//
// +kubebuilder:validation:XValidation:rule="!(has(self.response_cache) && has(self.semantic_cache))",message="semantic_cache is the deprecated alias of response_cache: set one of them"
// +kubebuilder:validation:XValidation:rule="has(self.complexity_model) || !has(self.complexity_rules) || self.complexity_rules.all(r, !has(r.hard_below) && !has(r.easy_above))",message="complexity_rules with hard_below/easy_above (lower score is harder) need a score-type backend in complexity_model; with local scoring use threshold or hard_above/easy_below"
type ConfigSpec struct {
	// Routing is a canonical Junction configuration document (version, listeners, providers, recipes, global)
	// passed through; the other fields are layered onto it.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Routing *runtime.RawExtension `json:"routing,omitempty"`

	// DecisionModel selects a declared deployment for default judgment tasks.
	// +optional
	DecisionModel *DecisionModel `json:"decision_model,omitempty"`

	// ModelDeployments are the canonical model deployments: Junction's global.model_catalog (deployments,
	// bindings, signal_timeout_ms), passed through.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	ModelDeployments *runtime.RawExtension `json:"model_deployments,omitempty"`

	// ModelAdmission are admission budgets keyed by deployment.
	// +optional
	ModelAdmission map[string]AdmissionBudget `json:"model_admission,omitempty"`

	// +optional
	EmbeddingModels *EmbeddingModels `json:"embedding_models,omitempty"`

	// ResponseCache configures the response cache.
	// +optional
	ResponseCache *CacheConfig `json:"response_cache,omitempty"`
	// SemanticCache is the deprecated alias of response_cache; set one of them.
	// +optional
	SemanticCache *CacheConfig `json:"semantic_cache,omitempty"`

	// +optional
	Tools *ToolsSelection `json:"tools,omitempty"`
	// +optional
	PromptGuard *PromptGuard `json:"prompt_guard,omitempty"`
	// +optional
	Classifier *Classifier `json:"classifier,omitempty"`

	// ComplexityRules grade requests hard, medium or easy.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	// +optional
	ComplexityRules []ComplexityRule `json:"complexity_rules,omitempty"`

	// ComplexityModel is an optional remote scoring backend; without it scoring is local.
	// +optional
	ComplexityModel *ComplexityModel `json:"complexity_model,omitempty"`

	// ExternalModels are remote models named by classifier backends.
	// +listType=map
	// +listMapKey=name
	// +optional
	ExternalModels []ExternalModel `json:"external_models,omitempty"`

	// Strategy orders decisions: priority (higher first).
	// +kubebuilder:validation:Enum=priority
	// +optional
	Strategy string `json:"strategy,omitempty"`

	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1024
	// +optional
	Decisions []DecisionConfig `json:"decisions,omitempty"`

	// ReasoningEffort is the default effort; validated by the model family.
	// +optional
	ReasoningEffort string `json:"reasoning_effort,omitempty"`

	// +optional
	API *APIConfig `json:"api,omitempty"`
	// +optional
	Observability *ObservabilityConfig `json:"observability,omitempty"`
	// StreamedBody needs the gateway to send bodies in streamed mode.
	// +optional
	StreamedBody *StreamedBody `json:"streamed_body,omitempty"`
}

// DecisionModel selects a deployment.
type DecisionModel struct {
	// +kubebuilder:validation:MinLength=1
	Deployment string `json:"deployment"`
}

// AdmissionBudget bounds what a deployment admits at once.
type AdmissionBudget struct {
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxInflight *int32 `json:"max_inflight,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxQueuedTokens *int64 `json:"max_queued_tokens,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxBytes *int64 `json:"max_bytes,omitempty"`
}

// EmbeddingModels are the embedding models of the router.
type EmbeddingModels struct {
	// +optional
	Qwen3ModelPath string `json:"qwen3_model_path,omitempty"`
	// +optional
	MmBertModelPath string `json:"mmbert_model_path,omitempty"`
	// +kubebuilder:default=true
	// +optional
	UseCPU *bool `json:"use_cpu,omitempty"`
	// +optional
	EmbeddingConfig *EmbeddingConfig `json:"embedding_config,omitempty"`
	// +optional
	Endpoint *EmbeddingEndpoint `json:"endpoint,omitempty"`
}

// EmbeddingConfig selects the embedding backend and model.
//
// +kubebuilder:validation:XValidation:rule="!has(self.target_dimension) || !has(self.model_type) || self.model_type != 'mmbert' || self.target_dimension in [64, 128, 256, 512, 768]",message="the local multilingual model (mmbert) supports target_dimension 64, 128, 256, 512 or 768"
type EmbeddingConfig struct {
	// +kubebuilder:validation:Enum=model_runtime;openai_compatible
	// +optional
	Backend string `json:"backend,omitempty"`
	// +kubebuilder:validation:Enum=qwen3;gemma;mmbert;remote
	// +optional
	ModelType string `json:"model_type,omitempty"`
	// +kubebuilder:default=true
	// +optional
	PreloadEmbeddings *bool `json:"preload_embeddings,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	TargetDimension *int32 `json:"target_dimension,omitempty"`
	// +kubebuilder:validation:Enum=3;6;11;22
	// +optional
	TargetLayer *int32 `json:"target_layer,omitempty"`
	// +kubebuilder:default=false
	// +optional
	EnableSoftMatching *bool `json:"enable_soft_matching,omitempty"`
	// +kubebuilder:default="0.5"
	// +optional
	MinScoreThreshold Decimal `json:"min_score_threshold,omitempty"`
}

// EmbeddingEndpoint is an OpenAI-compatible /v1/embeddings endpoint.
type EmbeddingEndpoint struct {
	// +optional
	BaseURL string `json:"base_url,omitempty"`
	// +optional
	Model string `json:"model,omitempty"`
	// APIKeyEnv is the name of an environment variable holding the key, never the key.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +optional
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	TimeoutSeconds *int32 `json:"timeout_seconds,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxRetries *int32 `json:"max_retries,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxResponseBytes *int64 `json:"max_response_bytes,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	Dimensions *int32 `json:"dimensions,omitempty"`
}

// CacheConfig configures the response cache and where it keeps entries.
//
// +kubebuilder:validation:XValidation:rule="!has(self.backend_type) || self.backend_type != 'vector_database' || has(self.vector_database)",message="backend_type vector_database needs vector_database"
// +kubebuilder:validation:XValidation:rule="!has(self.backend_type) || self.backend_type != 'key_value' || has(self.key_value)",message="backend_type key_value needs key_value"
type CacheConfig struct {
	// +kubebuilder:default=false
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// +kubebuilder:validation:Enum=memory;vector_database;key_value
	// +kubebuilder:default=memory
	// +optional
	BackendType string `json:"backend_type,omitempty"`
	// +optional
	SimilarityThreshold Probability `json:"similarity_threshold,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxEntries *int32 `json:"max_entries,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSeconds *int32 `json:"ttl_seconds,omitempty"`
	// +kubebuilder:validation:Enum=fifo;lru;lfu
	// +optional
	EvictionPolicy string `json:"eviction_policy,omitempty"`
	// +optional
	InMemory *InMemoryIndex `json:"in_memory,omitempty"`
	// +optional
	VectorDatabase *VectorDatabaseBackend `json:"vector_database,omitempty"`
	// +optional
	KeyValue *KeyValueBackend `json:"key_value,omitempty"`
}

// InMemoryIndex is the in-process semantic index.
type InMemoryIndex struct {
	// +kubebuilder:default=false
	// +optional
	UseHNSW *bool `json:"use_hnsw,omitempty"`
	// +kubebuilder:default=16
	// +kubebuilder:validation:Minimum=2
	// +optional
	HNSWM *int32 `json:"hnsw_m,omitempty"`
	// +kubebuilder:default=200
	// +kubebuilder:validation:Minimum=1
	// +optional
	HNSWEfConstruction *int32 `json:"hnsw_ef_construction,omitempty"`
	// +kubebuilder:default=1000
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxMemoryEntries *int32 `json:"max_memory_entries,omitempty"`
}

// TLSFiles are TLS files mounted in the router's pods: each an absolute path under one of spec.volumeMounts
// (a Secret mounted with spec.volumes), which the controller checks.
//
// +kubebuilder:validation:XValidation:rule="has(self.cert_file) == has(self.key_file)",message="a client certificate needs both cert_file and key_file: set both or neither"
// +kubebuilder:validation:XValidation:rule="(has(self.enabled) && self.enabled) || !(has(self.ca_file) || has(self.cert_file) || has(self.key_file))",message="TLS files are read only with enabled: true: set it, or remove ca_file, cert_file and key_file"
type TLSFiles struct {
	// +kubebuilder:default=false
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// CertFile is the client certificate (PEM), with KeyFile.
	// +kubebuilder:validation:MinLength=1
	// +optional
	CertFile string `json:"cert_file,omitempty"`
	// KeyFile is the client certificate's private key (PEM), with CertFile.
	// +kubebuilder:validation:MinLength=1
	// +optional
	KeyFile string `json:"key_file,omitempty"`
	// CAFile holds the certificates (PEM) the server's is checked against; empty: the system's roots.
	// +kubebuilder:validation:MinLength=1
	// +optional
	CAFile string `json:"ca_file,omitempty"`
}

// VectorDatabaseBackend keeps cache entries in a vector database.
type VectorDatabaseBackend struct {
	// +kubebuilder:default={}
	// +optional
	Connection VectorDatabaseConnection `json:"connection,omitempty"`
	// +kubebuilder:default={}
	// +optional
	Collection VectorDatabaseCollection `json:"collection,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Search *runtime.RawExtension `json:"search,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Development *runtime.RawExtension `json:"development,omitempty"`
}

// VectorDatabaseConnection reaches the vector database.
type VectorDatabaseConnection struct {
	// +optional
	Host string `json:"host,omitempty"`
	// +kubebuilder:default=19530
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// +optional
	Database string `json:"database,omitempty"`
	// Timeout in seconds.
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=0
	// +optional
	Timeout *int32 `json:"timeout,omitempty"`
	// +kubebuilder:default={}
	// +optional
	Auth VectorDatabaseAuth `json:"auth,omitempty"`
	// +optional
	TLS *TLSFiles `json:"tls,omitempty"`
}

// VectorDatabaseAuth is the vector database's login; the password by Secret reference.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.password) && has(self.password_secret_ref))",message="set password_secret_ref or password, not both (prefer password_secret_ref)"
type VectorDatabaseAuth struct {
	// +kubebuilder:default=false
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// +optional
	Username string `json:"username,omitempty"`
	// Password in plain text; use password_secret_ref instead.
	// +optional
	Password string `json:"password,omitempty"`
	// +optional
	PasswordSecretRef *corev1.SecretKeySelector `json:"password_secret_ref,omitempty"`
}

// VectorDatabaseCollection is the collection cache entries live in.
type VectorDatabaseCollection struct {
	// +kubebuilder:default=semantic_cache
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Description string `json:"description,omitempty"`
	// +optional
	VectorField *VectorField `json:"vector_field,omitempty"`
	// +optional
	Index *VectorDatabaseIndex `json:"index,omitempty"`
}

// VectorDatabaseIndex is the collection's index.
type VectorDatabaseIndex struct {
	// +kubebuilder:validation:Enum=HNSW;IVF_FLAT;IVF_SQ8;IVF_PQ
	// +kubebuilder:default=HNSW
	// +optional
	Type string `json:"type,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Params *runtime.RawExtension `json:"params,omitempty"`
}

// VectorField is the field holding embeddings.
type VectorField struct {
	// +kubebuilder:default=embedding
	// +optional
	Name string `json:"name,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	Dimension *int32 `json:"dimension,omitempty"`
	// +kubebuilder:validation:Enum=COSINE;IP;L2
	// +kubebuilder:default=COSINE
	// +optional
	MetricType string `json:"metric_type,omitempty"`
}

// KeyValueBackend keeps cache entries in a key-value store (Redis).
type KeyValueBackend struct {
	// +kubebuilder:default={}
	// +optional
	Connection KeyValueConnection `json:"connection,omitempty"`
	// +kubebuilder:default={}
	// +optional
	Index KeyValueIndex `json:"index,omitempty"`
	// +kubebuilder:default={}
	// +optional
	Search KeyValueSearch `json:"search,omitempty"`
	// +kubebuilder:default={}
	// +optional
	Development KeyValueDevelopment `json:"development,omitempty"`
}

// KeyValueConnection reaches the key-value store; the password by Secret reference. Mode and addresses are
// Junction's: a Redis Cluster (mode cluster) is reached through its seed nodes (addresses), or through host
// and port as the one seed (a managed cluster's configuration endpoint).
//
// +kubebuilder:validation:XValidation:rule="!(has(self.password) && has(self.password_secret_ref))",message="set password_secret_ref or password, not both (prefer password_secret_ref)"
// +kubebuilder:validation:XValidation:rule="!has(self.addresses) || size(self.addresses) == 0 || (has(self.mode) && self.mode == 'cluster')",message="addresses lists a Redis Cluster's seed nodes: set mode: cluster, or name the one server as host and port"
// +kubebuilder:validation:XValidation:rule="!(has(self.mode) && self.mode == 'cluster' && has(self.database) && self.database != 0)",message="a Redis Cluster has database 0 only: remove database"
type KeyValueConnection struct {
	// Mode is standalone (one server at host and port) or cluster (a Redis Cluster).
	// +kubebuilder:validation:Enum=standalone;cluster
	// +optional
	Mode string `json:"mode,omitempty"`
	// Addresses are a Redis Cluster's seed nodes as host:port (mode cluster; one is enough, the client learns
	// the others). With mode cluster and no addresses, host and port name the one seed.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Addresses []string `json:"addresses,omitempty"`
	// +optional
	Host string `json:"host,omitempty"`
	// +kubebuilder:default=6379
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +optional
	Database *int32 `json:"database,omitempty"`
	// Password in plain text; use password_secret_ref instead.
	// +optional
	Password string `json:"password,omitempty"`
	// +optional
	PasswordSecretRef *corev1.SecretKeySelector `json:"password_secret_ref,omitempty"`
	// Timeout in seconds.
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=0
	// +optional
	Timeout *int32 `json:"timeout,omitempty"`
	// +optional
	TLS *TLSFiles `json:"tls,omitempty"`
}

// KeyValueIndex is the search index over cache entries.
type KeyValueIndex struct {
	// +kubebuilder:default=semantic_cache_idx
	// +optional
	Name string `json:"name,omitempty"`
	// +kubebuilder:default="doc:"
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// +kubebuilder:default={}
	// +optional
	VectorField VectorField `json:"vector_field,omitempty"`
	// +kubebuilder:validation:Enum=HNSW;FLAT
	// +kubebuilder:default=HNSW
	// +optional
	IndexType string `json:"index_type,omitempty"`
	// +kubebuilder:default={}
	// +optional
	Params KeyValueIndexParams `json:"params,omitempty"`
}

// KeyValueIndexParams are HNSW parameters.
type KeyValueIndexParams struct {
	// +kubebuilder:default=16
	// +kubebuilder:validation:Minimum=2
	// +optional
	M *int32 `json:"M,omitempty"`
	// +kubebuilder:default=64
	// +kubebuilder:validation:Minimum=1
	// +optional
	EfConstruction *int32 `json:"efConstruction,omitempty"`
}

// KeyValueSearch bounds a lookup.
type KeyValueSearch struct {
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +optional
	TopK *int32 `json:"topk,omitempty"`
}

// KeyValueDevelopment are switches for development set-ups.
type KeyValueDevelopment struct {
	// +kubebuilder:default=false
	// +optional
	DropIndexOnStartup *bool `json:"drop_index_on_startup,omitempty"`
	// +kubebuilder:default=true
	// +optional
	AutoCreateIndex *bool `json:"auto_create_index,omitempty"`
}

// ToolsSelection picks the tools offered to a model by similarity.
type ToolsSelection struct {
	// +kubebuilder:default=false
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	TopK *int32 `json:"top_k,omitempty"`
	// +kubebuilder:default="0.2"
	// +optional
	SimilarityThreshold Decimal `json:"similarity_threshold,omitempty"`
	// +kubebuilder:default="config/tools_db.json"
	// +optional
	ToolsDBPath string `json:"tools_db_path,omitempty"`
	// +kubebuilder:default=true
	// +optional
	FallbackToEmpty *bool `json:"fallback_to_empty,omitempty"`
}

// PromptGuard blocks jailbreak and prompt-injection attempts.
type PromptGuard struct {
	// +kubebuilder:default=false
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// +optional
	ModelID string `json:"model_id,omitempty"`
	// +optional
	Threshold Probability `json:"threshold,omitempty"`
	// +optional
	UseCPU *bool `json:"use_cpu,omitempty"`
	// +optional
	JailbreakMappingPath string `json:"jailbreak_mapping_path,omitempty"`
	// ExternalModel names an external_models entry with model_role guardrail.
	// +optional
	ExternalModel string `json:"external_model,omitempty"`
}

// Classifier holds the category and personal-data models.
type Classifier struct {
	// +optional
	CategoryModel *CategoryModel `json:"category_model,omitempty"`
	// +optional
	PIIModel *PIIModel `json:"pii_model,omitempty"`
}

// CategoryModel is the domain classifier.
type CategoryModel struct {
	// +optional
	ModelID string `json:"model_id,omitempty"`
	// +optional
	Threshold Probability `json:"threshold,omitempty"`
	// +optional
	UseCPU *bool `json:"use_cpu,omitempty"`
	// +optional
	CategoryMappingPath string `json:"category_mapping_path,omitempty"`
}

// PIIModel is the personal-data classifier.
type PIIModel struct {
	// +optional
	ModelID string `json:"model_id,omitempty"`
	// +optional
	Threshold Probability `json:"threshold,omitempty"`
	// +optional
	UseCPU *bool `json:"use_cpu,omitempty"`
	// +optional
	PIIMappingPath string `json:"pii_mapping_path,omitempty"`
}

// ComplexityRule grades a request hard, medium or easy. Exactly one way of setting boundaries: threshold
// (symmetric margin), hard_above with easy_below (higher score harder), or hard_below with easy_above (lower
// score harder).
//
// +kubebuilder:validation:XValidation:rule="!has(self.threshold) || !(has(self.hard_above) || has(self.easy_below) || has(self.hard_below) || has(self.easy_above))",message="threshold is exclusive with the boundary pairs hard_above/easy_below and hard_below/easy_above"
// +kubebuilder:validation:XValidation:rule="!(has(self.hard_above) || has(self.easy_below)) || !(has(self.hard_below) || has(self.easy_above))",message="the boundary pairs hard_above/easy_below and hard_below/easy_above are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="has(self.hard_above) == has(self.easy_below)",message="hard_above and easy_below are used together"
// +kubebuilder:validation:XValidation:rule="has(self.hard_below) == has(self.easy_above)",message="hard_below and easy_above are used together"
// +kubebuilder:validation:XValidation:rule="!has(self.hard_above) || !has(self.easy_below) || double(self.hard_above) >= double(self.easy_below)",message="hard_above must be at least easy_below (higher score is harder)"
// +kubebuilder:validation:XValidation:rule="!has(self.hard_below) || !has(self.easy_above) || double(self.hard_below) <= double(self.easy_above)",message="hard_below must be at most easy_above (lower score is harder)"
type ComplexityRule struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +optional
	Description string `json:"description,omitempty"`
	// Threshold: above it hard, below its negative easy, between medium; local scoring only.
	// +optional
	Threshold Probability `json:"threshold,omitempty"`
	// +optional
	HardAbove Decimal `json:"hard_above,omitempty"`
	// +optional
	EasyBelow Decimal `json:"easy_below,omitempty"`
	// +optional
	HardBelow Decimal `json:"hard_below,omitempty"`
	// +optional
	EasyAbove Decimal `json:"easy_above,omitempty"`
	// Hard and Easy are example phrasings; read by the local path only.
	// +optional
	Hard *CandidateSet `json:"hard,omitempty"`
	// +optional
	Easy *CandidateSet `json:"easy,omitempty"`
	// Composer lists conditions that must also hold.
	// +optional
	Composer *Composer `json:"composer,omitempty"`
	// PrototypeScoring completely overrides the family's scoring.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	PrototypeScoring *runtime.RawExtension `json:"prototype_scoring,omitempty"`
}

// CandidateSet is a list of example phrasings.
type CandidateSet struct {
	// +kubebuilder:validation:MinItems=1
	Candidates []string `json:"candidates"`
}

// Composer holds conditions that must hold as well.
type Composer struct {
	// +kubebuilder:validation:Enum=AND;OR
	// +kubebuilder:default=AND
	// +optional
	Operator string `json:"operator,omitempty"`
	// +kubebuilder:validation:MinItems=1
	Conditions []Condition `json:"conditions"`
}

// Condition names a signal by type and name.
type Condition struct {
	// +kubebuilder:validation:MinLength=1
	Type string `json:"type"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ComplexityModel is a remote complexity scoring backend.
type ComplexityModel struct {
	// Backend names an external_models entry that scores complexity.
	// +kubebuilder:validation:MinLength=1
	Backend string `json:"backend"`
}

// ExternalModel is a remote model classifier backends ask.
type ExternalModel struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:Enum=classification;guardrail
	// +optional
	ModelRole string `json:"model_role,omitempty"`
	// +optional
	LLMModelName string           `json:"llm_model_name,omitempty"`
	LLMEndpoint  ExternalEndpoint `json:"llm_endpoint"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	LLMTimeoutSeconds *int32 `json:"llm_timeout_seconds,omitempty"`
	// APIKeyEnv names an environment variable (set from a Secret in spec.env) holding the key.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +optional
	APIKeyEnv string `json:"api_key_env,omitempty"`
}

// ExternalEndpoint is where an external model answers.
type ExternalEndpoint struct {
	// +kubebuilder:validation:MinLength=1
	Address string `json:"address"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
	// +kubebuilder:validation:Enum=http;https
	// +kubebuilder:default=http
	// +optional
	Protocol string `json:"protocol,omitempty"`
}

// DecisionConfig is one prioritized decision.
type DecisionConfig struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +optional
	Description string `json:"description,omitempty"`
	// Priority: higher is evaluated first.
	// +optional
	Priority int32 `json:"priority,omitempty"`
	// Rules: an operator (AND, OR, NOT) with conditions, nested; leaves name a signal by type and name.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Rules runtime.RawExtension `json:"rules"`
	// +optional
	ModelRefs []ModelRef `json:"modelRefs,omitempty"`
	// +optional
	PreferredEndpoints []string `json:"preferred_endpoints,omitempty"`
	// Plugins are raw plugin references (type, configuration, on_error).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Plugins []runtime.RawExtension `json:"plugins,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Algorithm *runtime.RawExtension `json:"algorithm,omitempty"`
	// +optional
	Reliability *Reliability `json:"reliability,omitempty"`
	// +optional
	Fallback *Fallback `json:"fallback,omitempty"`
}

// ModelRef is one candidate model of a decision.
type ModelRef struct {
	// +kubebuilder:validation:MinLength=1
	Model string `json:"model"`
	// +optional
	UseReasoning *bool `json:"use_reasoning,omitempty"`
	// +optional
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// Reliability bounds a decision's upstream exchange. The back-off and retry_after_max fields apply in
// standalone mode only.
type Reliability struct {
	// +optional
	TotalTimeout Duration `json:"total_timeout,omitempty"`
	// +optional
	PerTryTimeout Duration `json:"per_try_timeout,omitempty"`
	// +optional
	IdleTimeout Duration `json:"idle_timeout,omitempty"`
	// +optional
	FirstByteTimeout Duration `json:"first_byte_timeout,omitempty"`
	// +optional
	RetryBackOffBase Duration `json:"retry_back_off_base,omitempty"`
	// +optional
	RetryBackOffMax Duration `json:"retry_back_off_max,omitempty"`
	// +optional
	RetryAfterMax Duration `json:"retry_after_max,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=5
	// +optional
	RetryCount *int32 `json:"retry_count,omitempty"`
	// RetryOn holds proxy condition names ("5xx,reset,connect-failure").
	// +optional
	RetryOn *string `json:"retry_on,omitempty"`
	// +kubebuilder:validation:items:Minimum=100
	// +kubebuilder:validation:items:Maximum=599
	// +optional
	RetriableStatusCodes []int32 `json:"retriable_status_codes,omitempty"`
}

// Fallback tries further candidates after a failure. Omitted fields keep the recipe's or router's value.
type Fallback struct {
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// MaxAttempts counts the first candidate.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxAttempts *int32 `json:"max_attempts,omitempty"`
	// +optional
	TotalTimeout Duration `json:"total_timeout,omitempty"`
	// +optional
	PerAttemptTimeout Duration `json:"per_attempt_timeout,omitempty"`
	// +kubebuilder:validation:items:Minimum=100
	// +kubebuilder:validation:items:Maximum=599
	// +optional
	RetryableStatusCodes []int32 `json:"retryable_status_codes,omitempty"`
}

// APIConfig configures the utility APIs.
type APIConfig struct {
	// +optional
	BatchClassification *BatchClassification `json:"batch_classification,omitempty"`
}

// BatchClassification bounds batch classification.
type BatchClassification struct {
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxBatchSize *int32 `json:"max_batch_size,omitempty"`
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=0
	// +optional
	ConcurrencyThreshold *int32 `json:"concurrency_threshold,omitempty"`
	// +kubebuilder:default=8
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxConcurrency *int32 `json:"max_concurrency,omitempty"`
	// +optional
	Metrics *BatchMetrics `json:"metrics,omitempty"`
}

// BatchMetrics configures batch classification metrics.
type BatchMetrics struct {
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// +kubebuilder:default=true
	// +optional
	DetailedGoroutineTracking *bool `json:"detailed_goroutine_tracking,omitempty"`
	// +kubebuilder:default=false
	// +optional
	HighResolutionTiming *bool `json:"high_resolution_timing,omitempty"`
	// +kubebuilder:default="1.0"
	// +optional
	SampleRate Probability `json:"sample_rate,omitempty"`
	// +optional
	DurationBuckets []Decimal `json:"duration_buckets,omitempty"`
	// +optional
	SizeBuckets []int32 `json:"size_buckets,omitempty"`
}

// ObservabilityConfig configures metrics and tracing.
type ObservabilityConfig struct {
	// +optional
	Tracing *Tracing `json:"tracing,omitempty"`
	// +optional
	Metrics *ObservabilityMetrics `json:"metrics,omitempty"`
}

// ObservabilityMetrics turns the metrics listener on or off (its port is spec.metrics).
type ObservabilityMetrics struct {
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// Tracing configures OpenTelemetry tracing.
type Tracing struct {
	// +kubebuilder:default=false
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// +kubebuilder:validation:Enum=opentelemetry
	// +kubebuilder:default=opentelemetry
	// +optional
	Provider string `json:"provider,omitempty"`
	// +optional
	Exporter *TracingExporter `json:"exporter,omitempty"`
	// +optional
	Sampling *TracingSampling `json:"sampling,omitempty"`
	// Resource attributes (service_name, deployment_environment, ...).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Resource *runtime.RawExtension `json:"resource,omitempty"`
}

// TracingExporter says where traces go.
type TracingExporter struct {
	// +kubebuilder:validation:Enum=otlp
	// +kubebuilder:default=otlp
	// +optional
	Type string `json:"type,omitempty"`
	// +kubebuilder:default="jaeger:4317"
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// +kubebuilder:default=true
	// +optional
	Insecure *bool `json:"insecure,omitempty"`
}

// TracingSampling is the head sampler.
type TracingSampling struct {
	// +kubebuilder:validation:Enum=always_on;always_off;ratio
	// +optional
	Type string `json:"type,omitempty"`
	// +optional
	Rate Probability `json:"rate,omitempty"`
}

// StreamedBody says whether the gateway sends request bodies in streamed mode.
type StreamedBody struct {
	// +kubebuilder:default=false
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}
