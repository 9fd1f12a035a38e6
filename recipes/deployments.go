package recipes

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
)

// ModelDeployment is one model runtime deployment (global.model_catalog.
// deployments[]): workers `junction serve` starts and supervises on Unix
// sockets (managed), or workers an operator runs that it reaches by address
// (attached). A deployment is managed unless it, or each of its replicas,
// names an endpoint.
type ModelDeployment struct {
	// Name identifies the deployment in bindings, status and metrics.
	Name string `json:"name"`
	// Provider is "model_runtime" (the only one; the default when empty).
	Provider string `json:"provider,omitempty"`
	// Artifact is what a managed worker serves: a built-in model name (as
	// `junction worker` knows them), "defaults" (every built-in default model
	// in one process; bindings then name the model with head), or an
	// absolute model directory. For an attached worker it is informational.
	Artifact string `json:"artifact,omitempty"`
	// Revision pins the artifact: a 40-character commit, or an absolute
	// local path holding the artifact's files.
	Revision string `json:"revision,omitempty"`
	// Device is the managed workers' device: auto, cpu, cuda or cuda:N.
	Device string `json:"device,omitempty"`
	// Profile is the runtime profile (exact, shared_context, batching,
	// max_speed; this build's worker runs only exact).
	Profile string           `json:"profile,omitempty"`
	Input   *DeploymentInput `json:"input,omitempty"`
	// OnUnscanned decides how the jailbreak and personal-data signals bound
	// to this deployment match content they left unscanned (the worker was
	// unavailable or failed, the signal deadline passed, an input was over
	// its budget): "block" (it matches) or "allow". Empty leaves it to each
	// signal's own on_unscanned, whose default is block; when set it
	// overrides them.
	OnUnscanned string `json:"on_unscanned,omitempty"`
	// Endpoint attaches to one operator-run worker instead of starting one:
	// "unix:/path/to.sock", "host:port" or "http://host:port".
	Endpoint string `json:"endpoint,omitempty"`
	// ServedName is the model name requests carry (default: the artifact's
	// name, its last path element for a directory).
	ServedName string `json:"served_name,omitempty"`
	// Replicas, when given, replace the single implicit replica: each is a
	// managed worker (device) or an attached one (endpoint, served_name).
	// Requests go round-robin over the ready ones.
	Replicas []DeploymentReplica `json:"replicas,omitempty"`
}

// DeploymentInput bounds what the deployment reads of each input.
type DeploymentInput struct {
	// MaxTokens is the token budget per input (0: the model's own limit).
	MaxTokens int `json:"max_tokens,omitempty"`
	// Overflow is reject, truncate or window (default: window for the
	// jailbreak binding, so a safety scan reads the whole text; truncate
	// otherwise).
	Overflow string `json:"overflow,omitempty"`
}

// DeploymentReplica is one worker of a deployment: Device for a managed one,
// Endpoint (and optionally ServedName) for an attached one.
type DeploymentReplica struct {
	Device     string `json:"device,omitempty"`
	Endpoint   string `json:"endpoint,omitempty"`
	ServedName string `json:"served_name,omitempty"`
}

// ModelBindings say which deployment serves each model-backed signal kind;
// a kind without a binding runs in-process.
type ModelBindings struct {
	Domain     *ModelBinding `json:"domain,omitempty"`
	Jailbreak  *ModelBinding `json:"jailbreak,omitempty"`
	Embeddings *ModelBinding `json:"embeddings,omitempty"`
	// NLI, FactCheck and UserFeedback bind the management diagnostics of
	// those names to a deployment's sequence classifier (classify only);
	// a binding wins over the global.external_models classification model.
	NLI          *ModelBinding `json:"nli,omitempty"`
	FactCheck    *ModelBinding `json:"fact_check,omitempty"`
	UserFeedback *ModelBinding `json:"user_feedback,omitempty"`
}

// ModelBinding binds a signal kind to a deployment.
type ModelBinding struct {
	Deployment string `json:"deployment"`
	// Contract is the worker surface the signal calls: classify (domain,
	// jailbreak) or embeddings (embeddings); the kind's own when empty.
	// decisions makes a domain or jailbreak signal ask the deployment a
	// choice question instead, and every such signal of a request asks its
	// deployment in one decisions call (the request stage rule).
	Contract string `json:"contract,omitempty"`
	// Head is the served model that answers, for a worker that serves
	// several (default: the replica's served name).
	Head string `json:"head,omitempty"`
}

// Values of deployment fields.
const (
	ProviderModelRuntime = "model_runtime"
	ContractClassify     = "classify"
	ContractEmbeddings   = "embeddings"
	ContractDecisions    = "decisions"
	// ArtifactDefaults runs every built-in default model in one worker.
	ArtifactDefaults = "defaults"
)

// EffectiveReplicas returns the deployment's replicas: the configured list,
// or the one implicit replica (attached when Endpoint is set, else managed
// on Device).
func (d *ModelDeployment) EffectiveReplicas() []DeploymentReplica {
	if len(d.Replicas) > 0 {
		return d.Replicas
	}
	if d.Endpoint != "" {
		return []DeploymentReplica{{Endpoint: d.Endpoint, ServedName: d.ServedName}}
	}
	return []DeploymentReplica{{Device: d.Device}}
}

// Each returns the bindings by kind key (domain, jailbreak, embeddings,
// then the diagnostics nli, fact_check, user_feedback), skipping unset
// ones, in that order.
func (b *ModelBindings) Each() []NamedBinding {
	if b == nil {
		return nil
	}
	var out []NamedBinding
	for _, nb := range []NamedBinding{{"domain", b.Domain}, {"jailbreak", b.Jailbreak}, {"embeddings", b.Embeddings},
		{"nli", b.NLI}, {"fact_check", b.FactCheck}, {"user_feedback", b.UserFeedback}} {
		if nb.Binding != nil {
			out = append(out, nb)
		}
	}
	return out
}

// NamedBinding is a binding with its signal kind key.
type NamedBinding struct {
	Kind    string
	Binding *ModelBinding
}

var (
	deploymentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	builtinName    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	commitRe       = regexp.MustCompile(`^[0-9a-f]{40}$`)
	deviceRe       = regexp.MustCompile(`^(auto|cpu|cuda(:[0-9]+)?)$`)
)

// deployments checks global.model_catalog.deployments and bindings.
func (c *checker) deployments(mc *ModelCatalog) {
	const base = "/global/model_catalog"
	names := map[string]int{}
	for i := range mc.Deployments {
		d := &mc.Deployments[i]
		p := fmt.Sprintf("%s/deployments/%d", base, i)
		switch {
		case d.Name == "":
			c.add(p+"/name", CodeMissingField, "a deployment needs a name (bindings, status and metrics use it)")
		case !deploymentName.MatchString(d.Name):
			c.add(p+"/name", CodeInvalidValue, "%q: use 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit", d.Name)
		default:
			if j, dup := names[d.Name]; dup {
				c.add(p+"/name", CodeDuplicate, "deployment %q is already declared at %s/deployments/%d", d.Name, base, j)
			} else {
				names[d.Name] = i
			}
		}
		if d.Provider != "" && d.Provider != ProviderModelRuntime {
			c.add(p+"/provider", CodeInvalidValue, "must be %s (got %q)", ProviderModelRuntime, d.Provider)
		}
		if d.Endpoint != "" && len(d.Replicas) > 0 {
			c.add(p+"/endpoint", CodeConflict, "give either endpoint (one attached worker) or replicas, not both")
		}
		if d.Endpoint != "" && d.Device != "" {
			c.add(p+"/device", CodeConflict, "device applies to workers the router starts; the worker at endpoint %q chooses its own device", d.Endpoint)
		}
		if d.Endpoint != "" {
			c.workerEndpoint(p+"/endpoint", d.Endpoint)
		}
		if d.Device != "" && !deviceRe.MatchString(d.Device) {
			c.add(p+"/device", CodeInvalidValue, "must be auto, cpu, cuda or cuda:N (got %q)", d.Device)
		}
		switch d.Profile {
		case "", "exact", "shared_context", "batching", "max_speed":
		default:
			c.add(p+"/profile", CodeInvalidValue, "must be exact, shared_context, batching or max_speed (got %q)", d.Profile)
		}
		switch d.OnUnscanned {
		case "", UnscannedBlock, UnscannedAllow:
		default:
			c.add(p+"/on_unscanned", CodeInvalidValue, "must be block (unscanned content matches the signals bound to %q) or allow (got %q)", d.Name, d.OnUnscanned)
		}
		if d.Input != nil {
			if d.Input.MaxTokens < 0 {
				c.add(p+"/input/max_tokens", CodeInvalidValue, "must not be negative (got %d; 0 means the model's limit)", d.Input.MaxTokens)
			}
			switch d.Input.Overflow {
			case "", "reject", "truncate", "window":
			default:
				c.add(p+"/input/overflow", CodeInvalidValue, "must be reject, truncate or window (got %q)", d.Input.Overflow)
			}
		}
		managed := false
		for j, r := range d.Replicas {
			rp := fmt.Sprintf("%s/replicas/%d", p, j)
			switch {
			case r.Endpoint != "" && r.Device != "":
				c.add(rp, CodeConflict, "a replica has either device (a worker the router starts) or endpoint (one an operator runs), not both")
			case r.Endpoint == "" && r.Device == "":
				c.add(rp, CodeMissingField, "a replica needs device (a worker the router starts, e.g. cpu) or endpoint (one an operator runs)")
			case r.Endpoint != "":
				c.workerEndpoint(rp+"/endpoint", r.Endpoint)
			default:
				managed = true
				if r.ServedName != "" {
					c.add(rp+"/served_name", CodeConflict, "served_name belongs to an attached replica (endpoint); a managed replica serves the deployment's served_name")
				}
				if !deviceRe.MatchString(r.Device) {
					c.add(rp+"/device", CodeInvalidValue, "must be auto, cpu, cuda or cuda:N (got %q)", r.Device)
				}
			}
		}
		if len(d.Replicas) == 0 && d.Endpoint == "" {
			managed = true
		}
		if managed {
			c.artifact(p, d)
		} else if d.Revision != "" {
			c.revision(p+"/revision", d.Revision)
		}
	}
	if mc.Bindings == nil {
		return
	}
	for _, nb := range mc.Bindings.Each() {
		p := base + "/bindings/" + nb.Kind
		b := nb.Binding
		want := ContractClassify
		if nb.Kind == "embeddings" {
			want = ContractEmbeddings
		}
		diagnostic := nb.Kind == "nli" || nb.Kind == "fact_check" || nb.Kind == "user_feedback"
		switch {
		case b.Contract == "" || b.Contract == want:
		case diagnostic:
			c.add(p+"/contract", CodeInvalidValue, "the %s diagnostic calls the worker's classify surface: write contract: classify or leave it out (got %q)", nb.Kind, b.Contract)
		case b.Contract == ContractDecisions && want == ContractClassify:
		case want == ContractClassify:
			c.add(p+"/contract", CodeInvalidValue, "the %s signal calls the worker's classify surface, or asks a question with decisions: write contract: classify or decisions, or leave it out (got %q)", nb.Kind, b.Contract)
		default:
			c.add(p+"/contract", CodeInvalidValue, "the %s signal calls the worker's %s surface: write contract: %s or leave it out (got %q)", nb.Kind, want, want, b.Contract)
		}
		if b.Deployment == "" {
			c.add(p+"/deployment", CodeMissingField, "name the deployment that serves the %s signal", nb.Kind)
			continue
		}
		i, ok := names[b.Deployment]
		if !ok {
			var known []string
			for _, d := range mc.Deployments {
				known = append(known, d.Name)
			}
			c.add(p+"/deployment", CodeUnknownRef, "deployment %q is not in %s/deployments%s", b.Deployment, base, knownList(b.Deployment, known))
			continue
		}
		if mc.Deployments[i].Artifact == ArtifactDefaults && b.Head == "" {
			c.add(p+"/head", CodeMissingField, "deployment %q serves every built-in default model: name the one that answers the %s signal with head", b.Deployment, nb.Kind)
		}
	}
}

// artifact checks what a managed worker is to serve.
func (c *checker) artifact(p string, d *ModelDeployment) {
	a := d.Artifact
	switch {
	case a == "":
		c.add(p+"/artifact", CodeMissingField, "deployment %q starts a worker: name its artifact (a built-in model such as jailbreak-glove, defaults, or an absolute model directory), or give endpoint to attach to a running worker", d.Name)
	case strings.Contains(a, "/") && !filepath.IsAbs(a):
		c.add(p+"/artifact", CodeInvalidValue, "%q: a model directory must be an absolute path (the workers do not share the router's working directory)", a)
	case !strings.Contains(a, "/") && !builtinName.MatchString(a):
		c.add(p+"/artifact", CodeInvalidValue, "%q is not a built-in model name or an absolute model directory", a)
	}
	if d.Revision != "" {
		c.revision(p+"/revision", d.Revision)
		if a == ArtifactDefaults {
			c.add(p+"/revision", CodeConflict, "artifact defaults serves several models; a revision pins one")
		}
	}
}

func (c *checker) revision(p, rev string) {
	if !commitRe.MatchString(rev) && !filepath.IsAbs(rev) {
		c.add(p, CodeInvalidValue, "%q: give an immutable 40-character commit (lower-case hex) or an absolute local path; branch and tag names are not accepted", rev)
	}
}

// workerEndpoint checks a worker address: unix:/abs/path, host:port or
// http(s)://host:port.
func (c *checker) workerEndpoint(p, e string) {
	switch {
	case strings.HasPrefix(e, "unix:"):
		if path := strings.TrimPrefix(e, "unix:"); !filepath.IsAbs(path) {
			c.add(p, CodeInvalidValue, "%q: a Unix socket address is unix: followed by an absolute path", e)
		}
	case strings.Contains(e, "://"):
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			c.add(p, CodeInvalidValue, "%q: give http://host:port (no path, query or credentials), host:port or unix:/path", e)
		}
	default:
		host, port, err := net.SplitHostPort(e)
		if err != nil || host == "" || port == "" {
			c.add(p, CodeInvalidValue, "%q: give host:port, http://host:port or unix:/path", e)
		}
	}
}
