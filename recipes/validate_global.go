package recipes

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Validation of what surrounds the recipes: listeners, providers and their
// backends, the global services and their ports, and management auth.

func (c *checker) listeners() {
	seen := map[string]int{}
	for i, l := range c.doc.Listeners {
		p := fmt.Sprintf("/listeners/%d", i)
		if l.Name == "" {
			c.add(p+"/name", CodeMissingField, "a listener needs a name")
		} else if j, dup := seen[l.Name]; dup {
			c.add(p+"/name", CodeDuplicate, "listener name %q is already used by /listeners/%d", l.Name, j)
		} else {
			seen[l.Name] = i
		}
		c.address(p+"/address", l.Address)
		c.port(p+"/port", l.Port)
		if l.Timeout.Duration < 0 {
			c.add(p+"/timeout", CodeInvalidValue, "must not be negative (got %s)", l.Timeout.Duration)
		}
		if l.MaxBodyBytes < 0 {
			c.add(p+"/max_body_bytes", CodeInvalidValue, "must not be negative (got %d)", l.MaxBodyBytes)
		}
		if l.Entrypoint != "" {
			if _, ok := c.doc.Recipe(l.Entrypoint); !ok {
				c.add(p+"/entrypoint", CodeUnknownRef, "listener %q routes with recipe %q, which is not in recipes%s",
					l.Name, l.Entrypoint, knownList(l.Entrypoint, c.recipeNames()))
			}
		}
		for k, key := range l.APIKeys {
			if strings.TrimSpace(key) == "" {
				c.add(fmt.Sprintf("%s/api_keys/%d", p, k), CodeInvalidValue, "an API key must not be empty")
			}
		}
	}
}

func (c *checker) providers() {
	pr := c.doc.Providers
	// Reasoning families, in name order for stable output.
	names := make([]string, 0, len(pr.ReasoningFamilies))
	for n := range pr.ReasoningFamilies {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := pr.ReasoningFamilies[n]
		p := "/providers/reasoning_families/" + escapePointer(n)
		if n == "" {
			c.add(p, CodeInvalidValue, "a reasoning family needs a non-empty name")
		}
		switch f.Type {
		case FamilyChatTemplateKwargs, FamilyReasoningEffort:
		default:
			c.add(p+"/type", CodeInvalidValue, "must be %s or %s (got %q)", FamilyChatTemplateKwargs, FamilyReasoningEffort, f.Type)
		}
		if strings.TrimSpace(f.Parameter) == "" {
			c.add(p+"/parameter", CodeMissingField, "name the request parameter that switches reasoning (for example enable_thinking)")
		}
	}

	models := c.modelNames()
	if len(pr.Models) == 0 {
		c.add("/providers/models", CodeMissingField, "configure at least one model")
	}
	if dm := pr.Defaults.DefaultModel; dm == "" {
		c.add("/providers/defaults/default_model", CodeMissingField, "name the model used when no decision matches%s", knownList("", models))
	} else if _, ok := c.doc.Model(dm); !ok {
		c.add("/providers/defaults/default_model", CodeUnknownRef, "default_model %q is not in providers.models%s", dm, knownList(dm, models))
	}
	if e := pr.Defaults.DefaultReasoningEffort; e != "" {
		c.effort("/providers/defaults/default_reasoning_effort", e)
	}

	seen := map[string]int{}
	for i, m := range pr.Models {
		p := fmt.Sprintf("/providers/models/%d", i)
		switch {
		case m.Name == "":
			c.add(p+"/name", CodeMissingField, "a model needs a name")
		case isReserved(m.Name):
			c.add(p+"/name", CodeInvalidValue, "%q is reserved: clients send MoM or auto to ask for routing; choose another name", m.Name)
		default:
			if j, dup := seen[m.Name]; dup {
				c.add(p+"/name", CodeDuplicate, "model name %q is already used by /providers/models/%d", m.Name, j)
			} else {
				seen[m.Name] = i
			}
		}
		if m.ReasoningFamily != "" {
			if _, ok := pr.ReasoningFamilies[m.ReasoningFamily]; !ok {
				c.add(p+"/reasoning_family", CodeUnknownRef, "model %q uses reasoning family %q, which is not in providers.reasoning_families%s",
					m.Name, m.ReasoningFamily, knownList(m.ReasoningFamily, names))
			}
		}
		switch m.APIFormat {
		case "", "openai", "anthropic":
		default:
			c.add(p+"/api_format", CodeInvalidValue, "must be openai or anthropic (got %q)", m.APIFormat)
		}
		if pc := m.Pricing; pc != nil {
			nonNeg := func(field string, v float64) {
				if v < 0 {
					c.add(p+"/pricing/"+field, CodeInvalidValue, "a price must not be negative (got %v)", v)
				}
			}
			nonNeg("prompt_per_1m", pc.PromptPer1M)
			nonNeg("completion_per_1m", pc.CompletionPer1M)
			if pc.CachedInputPer1M != nil {
				nonNeg("cached_input_per_1m", *pc.CachedInputPer1M)
			}
			if pc.CacheWritePer1M != nil {
				nonNeg("cache_write_per_1m", *pc.CacheWritePer1M)
			}
		}
		if pp := m.PIIPolicy; pp != nil {
			for k, t := range pp.TypesAllowed {
				c.piiType(fmt.Sprintf("%s/pii_policy/pii_types_allowed/%d", p, k), t)
			}
		}
		if len(m.BackendRefs) == 0 {
			c.add(p+"/backend_refs", CodeMissingField, "model %q needs at least one backend", m.Name)
		}
		for j, b := range m.BackendRefs {
			c.backend(fmt.Sprintf("%s/backend_refs/%d", p, j), b)
		}
	}
}

// DemoProvider is the provider whose backends the gateway answers in-process.
const DemoProvider = "demo"

func (c *checker) backend(p string, b BackendRef) {
	if b.Provider == DemoProvider {
		if b.BaseURL != "" {
			c.add(p+"/base_url", CodeConflict, "provider %q is answered in-process and takes no base_url; remove base_url or name the real provider", DemoProvider)
		}
	} else {
		c.baseURL(p+"/base_url", b.BaseURL)
	}
	if b.ChatPath != "" && !strings.HasPrefix(b.ChatPath, "/") {
		c.add(p+"/chat_path", CodeInvalidValue, "must start with / (got %q)", b.ChatPath)
	}
	hdrs := make([]string, 0, len(b.ExtraHeaders))
	for h := range b.ExtraHeaders {
		hdrs = append(hdrs, h)
	}
	sort.Strings(hdrs)
	for _, h := range hdrs {
		hp := p + "/extra_headers/" + escapePointer(h)
		if !isToken(h) {
			c.add(hp, CodeInvalidValue, "%q is not a valid HTTP header name", h)
		}
		if strings.ContainsAny(b.ExtraHeaders[h], "\r\n\x00") {
			c.add(hp, CodeInvalidValue, "a header value must not contain line breaks")
		}
	}
	if b.APIKeyEnv != "" && !isEnvName(b.APIKeyEnv) {
		c.add(p+"/api_key_env", CodeInvalidValue, "name an environment variable (letters, digits, _), not the key itself")
	}
	if b.APIKeyEnv != "" && b.ForwardClientAuth {
		c.add(p+"/forward_client_auth", CodeConflict, "a backend takes its key from api_key_env or from the client, not both; remove one")
	}
	if b.Timeout.Duration < 0 {
		c.add(p+"/timeout", CodeInvalidValue, "must not be negative (got %s)", b.Timeout.Duration)
	}
}

func (c *checker) baseURL(p, raw string) {
	if raw == "" {
		c.add(p, CodeMissingField, "every backend needs a base_url such as http://127.0.0.1:8000/v1 unless its provider is %q", DemoProvider)
		return
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		c.add(p, CodeInvalidValue, "must be an absolute http or https URL such as http://127.0.0.1:8000/v1 (got %q)", raw)
		return
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		c.add(p, CodeInvalidValue, "scheme must be http or https (got %q)", u.Scheme)
	}
	if u.User != nil {
		c.add(p, CodeInvalidValue, "must not carry credentials; put the key in an environment variable and name it in api_key_env")
	}
	if u.Fragment != "" || u.RawQuery != "" {
		c.add(p, CodeInvalidValue, "must not have a query or fragment (got %q)", raw)
	}
}

func (c *checker) global() {
	s := &c.doc.Global.Services
	c.address("/global/services/management_api/address", s.ManagementAPI.Address)
	c.port("/global/services/management_api/port", s.ManagementAPI.Port)
	switch s.ManagementAPI.Auth.Mode {
	case "", "none", "bearer":
	default:
		c.add("/global/services/management_api/auth/mode", CodeInvalidValue, "must be none or bearer (got %q)", s.ManagementAPI.Auth.Mode)
	}
	c.managementAuth(&s.ManagementAPI.Auth)
	if rl := s.ManagementAPI.RateLimit; rl != nil {
		if rl.Requests < 1 {
			c.add("/global/services/management_api/rate_limit/requests", CodeInvalidValue, "must be at least 1 request per window (got %d); remove rate_limit for no limit", rl.Requests)
		}
		if w := rl.Window.Duration; w < 0 || (w > 0 && w < time.Second) {
			c.add("/global/services/management_api/rate_limit/window", CodeInvalidValue, "must be at least 1s (got %s)", w)
		}
	}
	c.storage()
	c.state()
	c.responseAPI()
	if n := s.API.BatchClassification.MaxBatchSize; n < 1 {
		c.add("/global/services/api/batch_classification/max_batch_size", CodeInvalidValue, "must be at least 1 (got %d)", n)
	}
	m := s.Observability.Metrics
	c.address("/global/services/observability/metrics/address", m.Address)
	c.port("/global/services/observability/metrics/port", m.Port)
	c.tracing()
	c.address("/global/extproc/address", c.doc.Global.Extproc.Address)
	c.port("/global/extproc/port", c.doc.Global.Extproc.Port)
	if mc := c.doc.Global.ModelCatalog; mc != nil && mc.SignalTimeoutMS < 0 {
		c.add("/global/model_catalog/signal_timeout_ms", CodeInvalidValue, "must not be negative (got %d)", mc.SignalTimeoutMS)
	}
	if mc := c.doc.Global.ModelCatalog; mc != nil {
		c.deployments(mc)
	}
	c.nativeAPI()
	if r := c.doc.Global.Router; r != nil {
		c.reliability("/global/router/reliability", r.Reliability)
		c.fallback("/global/router/fallback", r.Fallback)
	}
	if !c.doc.Global.ModelRuntimeEnabled() {
		if mc := c.doc.Global.ModelCatalog; mc != nil {
			for _, nb := range mc.Bindings.Each() {
				c.add("/global/model_catalog/bindings/"+nb.Kind, CodeConflict,
					"global.router.enabled is false, so no model deployment runs and the %s signal would have nothing to ask; remove this binding (the signal then runs in-process) or set global.router.enabled: true", nb.Kind)
			}
		}
	}
}

// ports reports two listening sockets on the same port and overlapping address.
func (c *checker) ports() {
	type sock struct {
		path, what, addr string
		port             int
	}
	var socks []sock
	for i, l := range c.doc.Listeners {
		socks = append(socks, sock{fmt.Sprintf("/listeners/%d/port", i), fmt.Sprintf("listener %q", l.Name), l.Address, l.Port})
	}
	g := c.doc.Global
	socks = append(socks, sock{"/global/services/management_api/port", "the management API", g.Services.ManagementAPI.Address, g.Services.ManagementAPI.Port})
	if m := g.Services.Observability.Metrics; m.Enabled == nil || *m.Enabled {
		socks = append(socks, sock{"/global/services/observability/metrics/port", "metrics", m.Address, m.Port})
	}
	socks = append(socks, sock{"/global/extproc/port", "ext_proc", g.Extproc.Address, g.Extproc.Port})
	if n := g.Services.NativeAPI; n != nil && n.Enabled {
		port := n.Port
		if port == 0 {
			port = DefaultNativeAPIPort
		}
		addr := n.Address
		if addr == "" {
			addr = DefaultAddress
		}
		socks = append(socks, sock{"/global/services/native_api/port", "the native API", addr, port})
	}
	for i := range socks {
		for j := 0; j < i; j++ {
			a, b := socks[i], socks[j]
			if a.port != 0 && a.port == b.port && addrsOverlap(a.addr, b.addr) {
				c.add(a.path, CodeConflict, "port %d on %s is already used by %s (%s); choose another port", a.port, a.addr, b.what, strings.TrimSuffix(b.path, "/port"))
				break
			}
		}
	}
}

func addrsOverlap(a, b string) bool {
	wild := func(s string) bool { return s == "" || s == "0.0.0.0" || s == "::" || s == "[::]" }
	return a == b || wild(a) || wild(b)
}

func (c *checker) address(p, a string) {
	if a == "" {
		return // defaults fill it
	}
	host := strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
	if net.ParseIP(host) != nil {
		return
	}
	if strings.Contains(a, "://") || strings.Contains(a, "/") {
		c.add(p, CodeInvalidValue, "must be a host name or IP address such as 127.0.0.1, not a URL (got %q)", a)
		return
	}
	if strings.Contains(a, ":") {
		c.add(p, CodeInvalidValue, "must be a host name or IP address without a port; put the port in port (got %q)", a)
		return
	}
	for _, r := range a {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			c.add(p, CodeInvalidValue, "%q is not a valid host name or IP address", a)
			return
		}
	}
}

func (c *checker) port(p string, port int) {
	if port < 1 || port > 65535 {
		c.add(p, CodeInvalidValue, "must be a port between 1 and 65535 (got %d)", port)
	}
}

func (c *checker) effort(p, e string) {
	switch e {
	case "low", "medium", "high":
	default:
		c.add(p, CodeInvalidValue, "must be low, medium or high (got %q)", e)
	}
}

// managementAuth checks roles and token sources: unique names, known
// permissions, known roles, exactly one source per token, and at least one
// token when bearer mode is on (otherwise nobody could call the API).
func (c *checker) managementAuth(a *Auth) {
	const base = "/global/services/management_api/auth"
	known := map[string]bool{"*": true}
	for _, p := range ManagementPermissions {
		known[p] = true
	}
	roles := map[string]bool{}
	for i, r := range a.Roles {
		p := fmt.Sprintf("%s/roles/%d", base, i)
		if roles[r.Name] {
			c.add(p+"/name", CodeDuplicate, "role %q is defined twice", r.Name)
		}
		roles[r.Name] = true
		for j, perm := range r.Permissions {
			if !known[perm] {
				c.add(fmt.Sprintf("%s/permissions/%d", p, j), CodeInvalidValue, "unknown permission %q; use one of %s or \"*\"", perm, strings.Join(ManagementPermissions, ", "))
			}
		}
	}
	names := map[string]bool{}
	for i, t := range a.Tokens {
		p := fmt.Sprintf("%s/tokens/%d", base, i)
		if names[t.Name] {
			c.add(p+"/name", CodeDuplicate, "token %q is defined twice", t.Name)
		}
		names[t.Name] = true
		if (t.Env == "") == (t.File == "") {
			c.add(p, CodeConflict, "token %q needs exactly one source: env (an environment variable name) or file (a path); tokens are never written inline", t.Name)
		}
		for j, r := range t.Roles {
			if !roles[r] {
				c.add(fmt.Sprintf("%s/roles/%d", p, j), CodeUnknownRef, "token %q names role %q, which is not in auth.roles", t.Name, r)
			}
		}
	}
	if a.Mode == "bearer" && len(a.Tokens) == 0 {
		c.add(base+"/tokens", CodeMissingField, "bearer mode needs at least one token source (name, roles, env or file)")
	}
}

// isToken reports whether s is an HTTP token (RFC 9110), as header names are.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(ch)) {
			return false
		}
	}
	return true
}

func isEnvName(s string) bool {
	for i, r := range s {
		if r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return s != ""
}

func (c *checker) storage() {
	st := c.doc.Global.Storage
	if st == nil {
		return
	}
	switch st.Backend {
	case "", StorageBackendEmbedded:
		if st.Postgres != nil {
			c.add("/global/storage/postgres", CodeInvalidValue, "postgres is set but backend is %q; set backend: postgres or remove postgres", StorageBackend(st))
		}
	case StorageBackendPostgres:
		p := "/global/storage/postgres"
		switch {
		case st.Postgres == nil:
			c.add(p, CodeMissingField, "backend postgres needs postgres: {dsn_env: <environment variable holding the DSN>}")
		case st.Postgres.DSNEnv == "":
			c.add(p+"/dsn_env", CodeMissingField, "name the environment variable that holds the PostgreSQL DSN (e.g. JUNCTION_POSTGRES_DSN)")
		case !isEnvName(st.Postgres.DSNEnv):
			c.add(p+"/dsn_env", CodeInvalidValue, "must be an environment variable name (letters, digits, _), not the DSN itself (got %q)", st.Postgres.DSNEnv)
		}
		if st.Postgres != nil && (st.Postgres.MaxConns < 0 || st.Postgres.MaxConns > 1000) {
			c.add(p+"/max_conns", CodeInvalidValue, "must be between 1 and 1000 (got %d; 0 means %d)", st.Postgres.MaxConns, DefaultPostgresMaxConns)
		}
	default:
		c.add("/global/storage/backend", CodeInvalidValue, "must be embedded or postgres (got %q)", st.Backend)
	}
	if e := st.Embedding; e != nil {
		p := "/global/storage/embedding"
		switch {
		case e.Deployment != "" && e.Endpoint != "":
			c.add(p, CodeInvalidValue, "name either a deployment or an endpoint, not both")
		case e.Deployment != "":
			found := false
			if mc := c.doc.Global.ModelCatalog; mc != nil {
				for _, d := range mc.Deployments {
					found = found || d.Name == e.Deployment
				}
			}
			if !found {
				c.add(p+"/deployment", CodeUnknownRef, "deployment %q is not in global.model_catalog.deployments", e.Deployment)
			}
		case e.Endpoint != "":
			if u, err := url.Parse(e.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				c.add(p+"/endpoint", CodeInvalidValue, "must be an http(s) URL of an OpenAI-compatible embeddings endpoint (got %q)", e.Endpoint)
			}
			if e.Model == "" {
				c.add(p+"/model", CodeMissingField, "an embeddings endpoint needs the model to ask for")
			}
		default:
			c.add(p, CodeMissingField, "name a deployment or an endpoint (leave embedding out to use the router's own embedding model)")
		}
	}
	seen := map[string]int{}
	for i, kb := range st.KnowledgeBases {
		p := fmt.Sprintf("/global/storage/knowledge_bases/%d", i)
		if j, dup := seen[kb.Name]; dup {
			c.add(p+"/name", CodeDuplicate, "knowledge base name %q is already used by /global/storage/knowledge_bases/%d", kb.Name, j)
		} else {
			seen[kb.Name] = i
		}
		if len(kb.Filters) > 0 {
			var f map[string]any
			if json.Unmarshal(kb.Filters, &f) != nil || f["type"] == nil {
				c.add(p+"/filters", CodeInvalidValue, "must be a filter object with a type (eq, ne, gt, gte, lt, lte, in, nin, and, or)")
			}
		}
	}
}
