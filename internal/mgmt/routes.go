package mgmt

import (
	"net/http"
	"strings"
)

// route is one management endpoint. The table below is the single source of
// the router, the permission checks, discovery and the OpenAPI document.
type route struct {
	method, path string
	// perm is the permission a caller needs; PermPublic for none.
	perm string
	// sensitivity: public, internal (operational data) or sensitive
	// (configuration, text under test, audit).
	sensitivity string
	tag         string
	summary     string
	// audit is the audit action recorded after the call; empty for reads.
	audit string
	// in is a value of the request body type (nil: no body); out of the
	// success body type (nil: free-form JSON). status is the success status.
	in, out any
	status  int
	// alsoOK are further success statuses with the same body (an
	// idempotent retry's 200 beside a creation's 201).
	alsoOK []int
	// errs are the error statuses the route documents (besides 401/403).
	errs  []int
	query []string
	// contentType of the success answer; application/json when empty.
	contentType string
	// inType is the request body's media type; application/json when empty.
	inType string
	// inRequired are fields of in this route requires besides those its type's oas tags require (a type
	// shared by a create, which needs them, and a replace, which takes them from the path).
	inRequired []string
	h          http.HandlerFunc
}

const (
	sensPublic    = "public"
	sensInternal  = "internal"
	sensSensitive = "sensitive"
)

func (s *Server) routeTable() []route {
	bad := []int{400}
	rs := []route{
		// discovery and health
		{method: "GET", path: "/health", perm: PermPublic, sensitivity: sensPublic, tag: "health", summary: "process liveness (always public)", out: HealthResponse{}, h: s.health},
		{method: "GET", path: "/ready", perm: PermReadyRead, sensitivity: sensPublic, tag: "health", summary: "200 once startup completed, else 503", out: ReadyStatus{}, errs: []int{503}, h: s.ready},
		{method: "GET", path: "/startup-status", perm: PermReadyRead, sensitivity: sensPublic, tag: "health", summary: "startup phases and model deployments; 503 until startup completes", out: StartupStatus{}, errs: []int{503}, h: s.startupStatus},
		{method: "GET", path: "/api/v1/status", perm: PermReadyRead, sensitivity: sensInternal, tag: "health", summary: "replica-local status document (schema_version v1)", out: StatusDocument{}, h: s.status},
		{method: "GET", path: "/api/v1", perm: PermReadyRead, sensitivity: sensPublic, tag: "discovery", summary: "endpoint discovery with permission and sensitivity", out: Discovery{}, h: s.discovery},
		{method: "GET", path: "/openapi.json", perm: PermReadyRead, sensitivity: sensPublic, tag: "discovery", summary: "this OpenAPI 3.0 document; path and method narrow it to one operation", query: []string{"path", "method"}, errs: []int{400, 404}, h: s.openAPI},
		{method: "GET", path: "/docs", perm: PermPublic, sensitivity: sensPublic, tag: "discovery", summary: "API browser (works offline)", contentType: "text/html", h: s.docs},

		// configuration
		{method: "GET", path: "/api/v1/config", perm: PermConfigRead, sensitivity: sensSensitive, tag: "config", summary: "the persisted canonical document, with ETag, x-router-config-version and x-router-config-hash; secrets redacted without secret_view", h: s.getConfig},
		{method: "POST", path: "/api/v1/config/validate", perm: PermConfigRead, sensitivity: sensSensitive, tag: "config", summary: "validate and normalize a document (YAML or JSON) without writing", in: map[string]any{}, out: ValidateResponse{}, errs: bad, h: s.validateConfig},
		{method: "POST", path: "/api/v1/config/plan", perm: PermConfigRead, sensitivity: sensSensitive, tag: "config", summary: "current and candidate ETags and the changed sections, without writing", in: map[string]any{}, out: PlanResponse{}, errs: []int{400, 409}, h: s.planConfig},
		{method: "PATCH", path: "/api/v1/config", perm: PermConfigWrite, sensitivity: sensSensitive, tag: "config", audit: "config.update", summary: "JSON merge patch; needs If-Match; validates, persists, activates", in: map[string]any{}, out: MutationResult{}, errs: []int{400, 409, 412, 428, 503}, h: s.patchConfig},
		{method: "PUT", path: "/api/v1/config", perm: PermConfigWrite, sensitivity: sensSensitive, tag: "config", audit: "config.replace", summary: "replace the document (YAML or JSON); needs If-Match", in: map[string]any{}, out: MutationResult{}, errs: []int{400, 409, 412, 428, 503}, h: s.putConfig},
		{method: "GET", path: "/api/v1/config/versions", perm: PermConfigRead, sensitivity: sensInternal, tag: "config", summary: "history, newest first", query: []string{"limit"}, out: VersionsResponse{}, errs: bad, h: s.versions},
		{method: "POST", path: "/api/v1/config/rollback", perm: PermConfigWrite, sensitivity: sensSensitive, tag: "config", audit: "config.rollback", summary: "restore a version (version: number or timestamp, or config_version) as a new version; needs If-Match", in: RollbackRequest{}, out: MutationResult{}, errs: []int{400, 404, 409, 412, 428, 503}, h: s.rollback},
		{method: "GET", path: "/api/v1/config/hash", perm: PermConfigRead, sensitivity: sensInternal, tag: "config", summary: "persisted, generated and active hashes and the activation state", out: HashStatus{}, h: s.hash},
		{method: "GET", path: "/api/v1/config/recipes", perm: PermConfigRead, sensitivity: sensInternal, tag: "config", summary: "recipes and the listeners that enter them", out: RecipeList{}, h: s.listRecipes},
		{method: "POST", path: "/api/v1/config/recipes/validate", perm: PermConfigRead, sensitivity: sensSensitive, tag: "config", summary: "validate a recipe mutation without writing", in: RecipeValidateRequest{}, out: ValidateResponse{}, errs: bad, h: s.validateRecipe},
		{method: "GET", path: "/api/v1/config/recipes/{name}", perm: PermConfigRead, sensitivity: sensSensitive, tag: "config", summary: "one recipe as persisted", errs: []int{404}, h: s.getRecipe},
		{method: "PUT", path: "/api/v1/config/recipes/{name}", perm: PermConfigWrite, sensitivity: sensSensitive, tag: "config", audit: "config.recipe.put", summary: "create or replace a recipe; needs If-Match", in: map[string]any{}, out: MutationResult{}, errs: []int{400, 409, 412, 428, 503}, h: s.putRecipe},
		{method: "DELETE", path: "/api/v1/config/recipes/{name}", perm: PermConfigWrite, sensitivity: sensSensitive, tag: "config", audit: "config.recipe.delete", summary: "delete a recipe no listener uses; needs If-Match", out: MutationResult{}, errs: []int{404, 409, 412, 428, 503}, h: s.deleteRecipe},

		// preview and diagnostics
		{method: "POST", path: "/api/v1/routing/preview", perm: PermClassifyInvoke, sensitivity: sensSensitive, tag: "diagnostics", summary: "every configured signal, matched rules, decision and selection; calls no backend", in: PreviewRequest{}, out: PreviewResponse{}, errs: []int{400, 404, 408}, h: s.routingPreview},
		{method: "POST", path: "/api/v1/diagnostics/nli", perm: PermClassifyInvoke, sensitivity: sensSensitive, tag: "diagnostics", summary: "premise/hypothesis entailment: the model deployment bound as global.model_catalog.bindings.nli (a pair classifier), else the global.external_models classification model", in: NLIRequest{}, out: NLIResponse{}, errs: []int{400, 408, 500, 503}, h: s.nli},
		{method: "POST", path: "/api/v1/diagnostics/embeddings", perm: PermClassifyInvoke, sensitivity: sensSensitive, tag: "diagnostics", summary: "text embeddings from the recipe's embedding binding", in: EmbeddingsRequest{}, out: EmbeddingsResponse{}, errs: []int{400, 404, 408, 503}, h: s.embeddings},
		{method: "POST", path: "/api/v1/diagnostics/similarity", perm: PermClassifyInvoke, sensitivity: sensSensitive, tag: "diagnostics", summary: "cosine similarity of a text pair", in: SimilarityRequest{}, out: SimilarityResponse{}, errs: []int{400, 404, 408}, h: s.similarity},
		{method: "POST", path: "/api/v1/diagnostics/similarity/batch", perm: PermClassifyInvoke, sensitivity: sensSensitive, tag: "diagnostics", summary: "similarity of a query to each candidate, in input order", in: SimilarityBatchRequest{}, out: SimilarityBatchResponse{}, errs: []int{400, 404, 408}, h: s.similarityBatch},
		{method: "GET", path: "/api/v1/diagnostics/models", perm: PermClassifyInvoke, sensitivity: sensInternal, tag: "diagnostics", summary: "prepared model bindings of a recipe", query: []string{"recipe"}, out: BindingList{}, errs: []int{404}, h: s.listBindings},
	}
	for _, task := range []string{"labels", "label-scores", "tokens", "embeddings", "rerank"} {
		rs = append(rs, route{method: "POST", path: "/api/v1/diagnostics/models/" + task, perm: PermClassifyInvoke, sensitivity: sensSensitive, tag: "diagnostics",
			summary: "typed model call (" + task + ") on a recipe's binding", in: ModelCallRequest{}, out: ModelCallResponse{}, errs: []int{400, 404, 408, 422}, h: s.modelCall(task)})
	}
	for _, prefix := range []string{"/api/v1/diagnostics/classify/", "/api/v1/classify/"} {
		earlier := prefix == "/api/v1/classify/"
		note := ""
		if earlier {
			note = " (earlier revision)"
		}
		combined := route{method: "POST", path: prefix + "combined", perm: PermClassifyInvoke, sensitivity: sensSensitive, tag: "classify", summary: "intent, personal data and security together" + note, in: CombinedRequest{}, out: CombinedResponse{}, errs: []int{400, 408, 503}, h: s.classifyCombined}
		if earlier {
			combined.summary, combined.out, combined.errs, combined.h = "placeholder of the earlier revision: 501 NOT_IMPLEMENTED", nil, []int{501}, s.notImplemented("combined classification on the earlier-revision path is a placeholder; use POST /api/v1/diagnostics/classify/combined")
		}
		rs = append(rs,
			route{method: "POST", path: prefix + "intent", perm: PermClassifyInvoke, sensitivity: sensSensitive, tag: "classify", summary: "intent (domain) classification" + note, in: IntentRequest{}, out: IntentResponse{}, errs: []int{400, 408, 503}, h: s.classifyIntent},
			route{method: "POST", path: prefix + "pii", perm: PermClassifyInvoke, sensitivity: sensSensitive, tag: "classify", summary: "personal-data detection" + note, in: PIIRequest{}, out: PIIResponse{}, errs: bad, h: s.classifyPII},
			route{method: "POST", path: prefix + "security", perm: PermClassifyInvoke, sensitivity: sensSensitive, tag: "classify", summary: "jailbreak and prompt-injection classification" + note, in: SecurityRequest{}, out: SecurityResponse{}, errs: []int{400, 408, 503}, h: s.classifySecurity},
			route{method: "POST", path: prefix + "fact-check", perm: PermClassifyInvoke, sensitivity: sensSensitive, tag: "classify", summary: "whether a text needs fact checking: the model deployment bound as global.model_catalog.bindings.fact_check, else the global.external_models classification model" + note, in: TextRequest{}, out: FactCheckResponse{}, errs: []int{400, 408, 500, 503}, h: s.classifyFactCheck},
			route{method: "POST", path: prefix + "user-feedback", perm: PermClassifyInvoke, sensitivity: sensSensitive, tag: "classify", summary: "user feedback type: the model deployment bound as global.model_catalog.bindings.user_feedback, else the global.external_models classification model" + note, in: TextRequest{}, out: FeedbackResponse{}, errs: []int{400, 408, 500, 503}, h: s.classifyUserFeedback},
			combined,
			route{method: "POST", path: prefix + "batch", perm: PermClassifyInvoke, sensitivity: sensSensitive, tag: "classify", summary: "one classifier over a batch" + note, in: BatchRequest{}, out: BatchResponse{}, errs: []int{400, 408, 503}, h: s.classifyBatch},
		)
	}
	rs = append(rs, []route{
		{method: "GET", path: "/info/models", perm: PermConfigRead, sensitivity: sensInternal, tag: "classify", summary: "model info (earlier revision)", out: ModelInfo{}, h: s.infoModels},
		{method: "GET", path: "/info/classifier", perm: PermConfigRead, sensitivity: sensInternal, tag: "classify", summary: "classifier info (earlier revision)", out: ClassifierInfo{}, h: s.infoClassifier},
		{method: "GET", path: "/metrics/classification", perm: PermConfigRead, sensitivity: sensInternal, tag: "classify", summary: "placeholder of the earlier revision: 501", errs: []int{501}, h: s.notImplemented("use GET /api/v1/observability/classification-metrics")},
		{method: "GET", path: "/config/classification", perm: PermConfigRead, sensitivity: sensInternal, tag: "classify", summary: "placeholder of the earlier revision: 501", errs: []int{501}, h: s.notImplemented("classification settings live in the recipes of /api/v1/config")},
		{method: "PUT", path: "/config/classification", perm: PermConfigWrite, sensitivity: sensInternal, tag: "classify", summary: "placeholder of the earlier revision: 501", errs: []int{501}, h: s.notImplemented("classification settings live in the recipes of /api/v1/config")},

		// inventory
		{method: "GET", path: "/api/v1/inventory/models", perm: PermConfigRead, sensitivity: sensInternal, tag: "inventory", summary: "model bindings of the serving generation", out: Inventory{}, h: s.inventoryModels},
		{method: "GET", path: "/api/v1/inventory/classifier", perm: PermConfigRead, sensitivity: sensInternal, tag: "inventory", summary: "classifier inventory (secrets redacted without secret_view)", out: ClassifierInfo{}, h: s.infoClassifier},
		{method: "GET", path: "/api/v1/inventory/embedding-models", perm: PermConfigRead, sensitivity: sensInternal, tag: "inventory", summary: "embedding bindings", out: Inventory{}, h: s.inventoryEmbeddings},
		{method: "GET", path: "/v1/models", perm: PermConfigRead, sensitivity: sensInternal, tag: "inventory", summary: "OpenAI model list (MoM first)", out: ModelListResponse{}, h: s.modelList},
		{method: "GET", path: "/api/v1/observability/classification-metrics", perm: PermConfigRead, sensitivity: sensInternal, tag: "inventory", summary: "diagnostics call counts and latency per task", out: ClassificationMetrics{}, h: s.classificationMetrics},

		// plugins
		{method: "GET", path: "/api/v1/plugins", perm: PermConfigRead, sensitivity: sensInternal, tag: "plugins", summary: "plugin descriptors", out: PluginList{}, h: s.listPlugins},
		{method: "GET", path: "/api/v1/plugins/{type}", perm: PermConfigRead, sensitivity: sensInternal, tag: "plugins", summary: "one plugin descriptor", out: PluginDescriptor{}, errs: []int{404}, h: s.getPlugin},
		{method: "GET", path: "/api/v1/plugins/{type}/bindings", perm: PermConfigRead, sensitivity: sensInternal, tag: "plugins", summary: "active bindings of a plugin type", query: []string{"recipe", "decision"}, out: PluginBindings{}, errs: []int{404}, h: s.pluginBindings},
		{method: "POST", path: "/api/v1/plugins/{type}/preview", perm: PermConfigRead, sensitivity: sensSensitive, tag: "plugins", summary: "preview (default) or probe a plugin on a request; never persists, never calls a generation backend", in: PluginPreviewRequest{}, out: PluginPreviewResponse{}, errs: []int{400, 404, 503}, h: s.pluginPreview},
		{method: "GET", path: "/api/v1/plugins/context_compression/capabilities", perm: PermConfigRead, sensitivity: sensInternal, tag: "plugins", summary: "context compression capabilities", out: Capabilities{}, h: s.compressionCapabilities},
		{method: "GET", path: "/api/v1/plugins/context_compression/health", perm: PermConfigRead, sensitivity: sensInternal, tag: "plugins", summary: "context compression health: the runtime, the serving configuration's bindings and their configuration checks (ok, or degraded with the problems); 503 while no runtime runs it", out: CompressionHealth{}, errs: []int{503}, h: s.compressionHealth},
		{method: "GET", path: "/api/v1/observability/plugins/context_compression/stats", perm: PermConfigRead, sensitivity: sensInternal, tag: "plugins", summary: "context compression's live runs since the plugin system started: compressed, within budget, failed; tokens before, after and saved; messages dropped, tool outputs shortened. 503 while no runtime runs it or without the serving plugin system", out: CompressionStats{}, errs: []int{503}, h: s.compressionStats},

		// observability
		{method: "GET", path: "/api/v1/observability/audit", perm: PermAuditRead, sensitivity: sensSensitive, tag: "observability", summary: "hash-chained audit ring (latest 10,000)", query: []string{"action", "limit", "after_sequence"}, out: AuditPage{}, errs: bad, h: s.audit},
		{method: "POST", path: "/api/v1/observability/outcomes", perm: PermLearningIngest, sensitivity: sensSensitive, tag: "observability", audit: "observability.outcome.create",
			summary: "attach a user's or judge's verdict to a replay record (target decision: verdict correct or incorrect, measured as router_classification_accuracy{category}); Idempotency-Key makes a retry one outcome (200 with replayed true); provenance is the authenticated principal",
			in:      OutcomeRequest{}, out: OutcomeObject{}, status: http.StatusCreated, alsoOK: []int{http.StatusOK}, errs: []int{400, 404, 409, 503}, h: s.replayRoute(s.submitOutcome)},
		{method: "GET", path: "/api/v1/observability/replays", perm: PermDataRead, sensitivity: sensSensitive, tag: "observability",
			summary: "router_replay's decision records, newest first; recipe, decision (- for none), model, request_id and since/until (RFC 3339 or Unix seconds) narrow",
			query:   append(append([]string{}, replayQuery...), listQuery...), out: ListPage[ReplaySummary]{}, errs: []int{400, 503}, h: s.replayRoute(s.listReplays)},
		{method: "GET", path: "/api/v1/observability/replays/{id}", perm: PermDataRead, sensitivity: sensSensitive, tag: "observability",
			summary: "one decision record: signals, matched rules, decision, model, latency, usage, cost, status, the routing input when recorded (texts need secret_view), a shadow's outcome",
			out:     ReplayObject{}, errs: []int{404, 503}, h: s.replayRoute(s.getReplay)},
		{method: "POST", path: "/api/v1/observability/replays/evaluate", perm: PermDataRead, sensitivity: sensSensitive, tag: "observability",
			summary: "route a window of recorded traffic with a candidate (config, patch or recipe_patch) (the model-free signals from the recorded input, the model-backed ones from their recorded results): which requests change decision or model, cost and latency deltas by decision; nothing is applied (needs config.read too)",
			in:      ReplayEvaluateRequest{}, out: ReplayEvaluation{}, errs: []int{400, 404, 408, 503}, h: s.replayRoute(s.evaluateReplays)},
	}...)
	// Stored data (503 while storage is not configured).
	sr := func(rt route) route {
		rt.sensitivity, rt.tag = sensSensitive, "storage"
		rt.errs = append(append([]int{}, rt.errs...), 503)
		what := "file store"
		switch {
		case strings.Contains(rt.path, "/knowledge-bases"):
			what = "knowledge-base store"
		case strings.Contains(rt.path, "/memories"):
			what = "memory store"
		case strings.Contains(rt.path, "/vector-stores"):
			what = "vector store"
		}
		rt.h = s.storageRoute(what, rt.h)
		return rt
	}
	kbMut := []int{400, 404, 409, 412}
	paged := func(extra ...string) []string { return append(append([]string{}, extra...), listQuery...) }
	for _, rt := range []route{
		{method: "GET", path: "/api/v1/storage/knowledge-bases", perm: PermDataRead, summary: "knowledge bases of the active configuration, with their vector stores' status and file counts", out: KnowledgeBaseList{}, h: s.listKnowledgeBases},
		{method: "POST", path: "/api/v1/storage/knowledge-bases", perm: PermDataWrite, audit: "storage.knowledge_base.create", summary: "create a knowledge base (global.storage.knowledge_bases): persisted, then activated in the background (202; poll /api/v1/config/hash); If-Match optional", in: KnowledgeBaseRequest{}, inRequired: []string{"name"}, out: KnowledgeBaseMutation{}, status: http.StatusAccepted, errs: kbMut, h: s.createKnowledgeBase},
		{method: "GET", path: "/api/v1/storage/knowledge-bases/{name}", perm: PermDataRead, summary: "one knowledge base of the active configuration", out: KnowledgeBaseObject{}, errs: []int{404}, h: s.getKnowledgeBase},
		{method: "PUT", path: "/api/v1/storage/knowledge-bases/{name}", perm: PermDataWrite, audit: "storage.knowledge_base.replace", summary: "replace a knowledge base (202, activated in the background); If-Match optional", in: KnowledgeBaseRequest{}, out: KnowledgeBaseMutation{}, status: http.StatusAccepted, errs: kbMut, h: s.replaceKnowledgeBase},
		{method: "DELETE", path: "/api/v1/storage/knowledge-bases/{name}", perm: PermDataWrite, audit: "storage.knowledge_base.delete", summary: "delete a knowledge base (202, activated in the background; its vector stores stay); If-Match optional", out: KnowledgeBaseMutation{}, status: http.StatusAccepted, errs: kbMut, h: s.deleteKnowledgeBase},
		{method: "GET", path: "/api/v1/storage/knowledge-bases/{name}/map/metadata", perm: PermDataRead, summary: "what a knowledge base holds: its stores, chunk count, embedding model, retrieval settings", out: KnowledgeBaseMap{}, errs: []int{404}, h: s.kbMetadata},
		{method: "GET", path: "/api/v1/storage/knowledge-bases/{name}/map/data.ndjson", perm: PermDataRead, summary: "every chunk of a knowledge base, one JSON object per line (streamed; vectors with include_vectors=true)", query: []string{"include_vectors"}, out: KnowledgeBaseChunk{}, contentType: "application/x-ndjson", errs: []int{400, 404}, h: s.kbData},

		{method: "GET", path: "/api/v1/storage/memories", perm: PermDataRead, summary: "memories, newest first; scope narrows to one scope", query: paged("scope"), out: ListPage[MemoryObject]{}, errs: bad, h: s.listMemories},
		{method: "DELETE", path: "/api/v1/storage/memories", perm: PermDataWrite, audit: "storage.memory.delete_scope", summary: "delete every memory of a scope (scope required)", query: []string{"scope"}, out: ScopeDeleted{}, errs: bad, h: s.deleteScope},
		{method: "GET", path: "/api/v1/storage/memories/{id}", perm: PermDataRead, summary: "one memory", out: MemoryObject{}, errs: []int{404}, h: s.getMemory},
		{method: "DELETE", path: "/api/v1/storage/memories/{id}", perm: PermDataWrite, audit: "storage.memory.delete", summary: "delete one memory", out: Deleted{}, errs: []int{404}, h: s.deleteMemory},

		{method: "GET", path: "/api/v1/storage/vector-stores", perm: PermDataRead, summary: "vector stores (OpenAI list shape)", query: listQuery, out: ListPage[VectorStoreObject]{}, errs: bad, h: s.listVectorStores},
		{method: "POST", path: "/api/v1/storage/vector-stores", perm: PermDataWrite, audit: "storage.vector_store.create", summary: "create a vector store (name unique) embedded with the stored-data model; file_ids are attached and ingested", in: VectorStoreCreateRequest{}, out: VectorStoreObject{}, errs: []int{400, 404, 409}, h: s.createVectorStore},
		{method: "GET", path: "/api/v1/storage/vector-stores/{id}", perm: PermDataRead, summary: "one vector store", out: VectorStoreObject{}, errs: []int{404}, h: s.getVectorStore},
		{method: "POST", path: "/api/v1/storage/vector-stores/{id}", perm: PermDataWrite, audit: "storage.vector_store.update", summary: "rename a vector store or replace its metadata", in: VectorStoreUpdateRequest{}, out: VectorStoreObject{}, errs: []int{400, 404, 409}, h: s.updateVectorStore},
		{method: "DELETE", path: "/api/v1/storage/vector-stores/{id}", perm: PermDataWrite, audit: "storage.vector_store.delete", summary: "delete a vector store and its chunks (not the files); refused while a knowledge base searches it", out: Deleted{}, errs: []int{404, 409}, h: s.deleteVectorStore},
		{method: "POST", path: "/api/v1/storage/vector-stores/{id}/search", perm: PermDataRead, summary: "search a vector store (query, max_num_results 1-50, filters, ranking_options.score_threshold)", in: VectorStoreSearchRequest{}, out: SearchResultsPage{}, errs: []int{400, 404, 408, 409}, h: s.searchVectorStore},
		{method: "GET", path: "/api/v1/storage/vector-stores/{id}/files", perm: PermDataRead, summary: "files of a vector store; filter by status (in_progress, completed, failed, cancelled)", query: paged("filter"), out: ListPage[VectorStoreFileObject]{}, errs: []int{400, 404}, h: s.listVectorStoreFiles},
		{method: "POST", path: "/api/v1/storage/vector-stores/{id}/files", perm: PermDataWrite, audit: "storage.vector_store.file.attach", summary: "attach an uploaded document (status in_progress until ingested)", in: VectorStoreFileRequest{}, out: VectorStoreFileObject{}, errs: []int{400, 404, 409}, h: s.attachFile},
		{method: "GET", path: "/api/v1/storage/vector-stores/{id}/files/{file_id}", perm: PermDataRead, summary: "a file of a vector store: status, last_error", out: VectorStoreFileObject{}, errs: []int{404}, h: s.getVectorStoreFile},
		{method: "DELETE", path: "/api/v1/storage/vector-stores/{id}/files/{file_id}", perm: PermDataWrite, audit: "storage.vector_store.file.detach", summary: "detach a file and drop its chunks (the file stays)", out: Deleted{}, errs: []int{404}, h: s.detachFile},

		{method: "GET", path: "/api/v1/storage/files", perm: PermDataRead, summary: "uploaded files (OpenAI list shape); purpose narrows", query: paged("purpose"), out: ListPage[FileObject]{}, errs: bad, h: s.listFiles},
		{method: "POST", path: "/api/v1/storage/files", perm: PermDataWrite, audit: "storage.file.create", summary: "upload a file: multipart/form-data with file and purpose; bounded by global.storage.max_file_bytes (413)", in: FileUpload{}, inType: "multipart/form-data", out: FileObject{}, errs: []int{400, 413}, h: s.uploadFile},
		{method: "GET", path: "/api/v1/storage/files/{id}", perm: PermDataRead, summary: "one file", out: FileObject{}, errs: []int{404}, h: s.getFile},
		{method: "DELETE", path: "/api/v1/storage/files/{id}", perm: PermDataWrite, audit: "storage.file.delete", summary: "delete a file and detach it from every vector store", out: Deleted{}, errs: []int{404}, h: s.deleteFile},
		{method: "GET", path: "/api/v1/storage/files/{id}/content", perm: PermDataRead, summary: "the file's bytes, with its media type, length and filename", contentType: "*/*", errs: []int{404}, h: s.fileContent},
	} {
		rs = append(rs, sr(rt))
	}
	cr := func(rt route) route {
		rt.sensitivity, rt.tag = sensSensitive, "storage"
		rt.errs = append(append([]int{}, rt.errs...), 503)
		rt.h = s.cacheRoute(rt.h)
		return rt
	}
	for _, rt := range []route{
		{method: "GET", path: "/api/v1/storage/response-cache/capabilities", perm: PermCacheRead, summary: "what the response cache supports: backends, modes, scopes, invalidation kinds, flush scopes", out: CacheCapabilities{}, h: s.cacheCapabilities},
		{method: "GET", path: "/api/v1/storage/response-cache/health", perm: PermCacheRead, summary: "whether the response cache's backend answers, and its entries", out: CacheHealth{}, h: s.cacheHealth},
		{method: "GET", path: "/api/v1/storage/response-cache/stats", perm: PermCacheRead, summary: "entries, bytes, hits and misses by kind, hit ratio, evictions, the largest namespaces (top, 0-100, default 20), flush epochs", query: []string{"top"}, out: CacheStatsBody{}, errs: []int{400}, h: s.cacheStats},
		{method: "POST", path: "/api/v1/storage/response-cache/test", perm: PermCacheRead, summary: "what a binding's response_cache plugin would do with a chat completion request: hit (exact or semantic, the similarity), miss and why, or skipped; a dry run that counts nowhere", in: CacheTestRequest{}, out: CacheTestResult{}, errs: []int{400, 404}, h: s.cacheTest},
		{method: "POST", path: "/api/v1/storage/response-cache/invalidate", perm: PermCacheInvalidate, audit: "storage.response_cache.invalidate", summary: "remove the entries selected by namespace_prefix, recipe, model, decision, key_prefix and older_than (seconds or RFC 3339); dry_run only counts them", in: CacheInvalidateRequest{}, out: CacheInvalidated{}, errs: []int{400}, h: s.cacheInvalidate},
		{method: "POST", path: "/api/v1/storage/response-cache/flush", perm: PermCacheManage, audit: "storage.response_cache.flush", summary: "advance the epoch of a scope (a namespace prefix and/or recipe, decision, model; nothing: global): no entry stored before answers again", in: CacheFlushRequest{}, out: CacheFlushed{}, errs: []int{400}, h: s.cacheFlush},
	} {
		rs = append(rs, cr(rt))
	}
	rs = append(rs, route{method: "POST", path: "/api/v1/storage/context-recovery/invalidate", perm: PermCacheInvalidate, sensitivity: sensSensitive, tag: "storage",
		audit: "storage.context_recovery.invalidate", in: RecoveryInvalidateRequest{}, out: RecoveryInvalidated{}, errs: []int{400, 503},
		summary: "remove the context recovery records (what context_compression dropped from live requests) selected by recipe, decision, model, id_prefix and older_than (seconds or RFC 3339); dry_run only counts them", h: s.recoveryInvalidate})
	return rs
}
