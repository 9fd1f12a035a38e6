// Package client calls model runtime workers (`junction worker`, package
// internal/inference/worker) over their HTTP API for the router's model-backed
// signals: a Pool spreads requests round-robin over the ready replicas of one
// deployment (Unix socket or TCP), and Classifier and Embedder adapt POST
// /v1/classify and POST /v1/embeddings to signal.Classifier and
// signal.Embedder.
//
// Every call runs under its context's deadline, reuses connections (one
// keep-alive pool per replica), bounds the answer it reads, and fails with an
// *Error that names the deployment and replica and says what the worker
// answered. The package must not start, stop or health-check workers
// (internal/inference/worker/supervise and the router's wiring do) and must not log
// request text.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/junction-router/junction/engine/signal"
)

// Outcomes of a call, as the router's router_model_runtime_requests_total
// labels them.
const (
	OutcomeOK          = "ok"
	OutcomeTimeout     = "timeout"     // the caller's deadline passed or it gave up
	OutcomeUnavailable = "unavailable" // no ready replica, connection failed, or 503
	OutcomeOverloaded  = "overloaded"  // 429: the worker's queue is full
	OutcomeRejected    = "rejected"    // 4xx: the worker refused the request
	OutcomeFailed      = "failed"      // 5xx, a malformed answer, or an item error
)

// Reasons an answer could not be interpreted (Call.Unknown, Error.Unknown),
// as the router's router_model_runtime_unknown_answers_total labels them.
const (
	UnknownMalformedBody = "malformed_body" // a 200 answer that is not the surface's JSON
	UnknownTooLarge      = "too_large"      // longer than the answer bound
	UnknownWrongCount    = "wrong_count"    // not one result per input
	UnknownBadIndex      = "bad_index"      // an index out of range or repeated
	UnknownEmptyResult   = "empty_result"   // a result with no label scores or an empty vector
	UnknownLabel         = "unknown_label"  // labels the binding cannot read (ClassifyOptions.Accept)
)

// DefaultMaxResponseBytes bounds the answer read from a worker.
const DefaultMaxResponseBytes = 32 << 20

// Replica is one worker of a deployment.
type Replica struct {
	// Name labels the replica in errors and metrics ("0", "1", ...).
	Name string
	// HTTP sends the requests (for a Unix socket, a client whose transport
	// dials it; supervise.UnixClient); BaseURL prefixes their paths.
	HTTP    *http.Client
	BaseURL string
	// Model is the served model name requests carry when the binding names
	// no head.
	Model string
}

// Call describes one finished call, for metrics.
type Call struct {
	Deployment string
	// Replica is the replica that answered last ("" when none was tried).
	Replica string
	// Surface is the worker endpoint: classify, embeddings or decisions.
	Surface string
	// Round is, for a decisions call of a request stage, whether it was the
	// stage's first call to the deployment or a later one
	// (signal.RoundFirst, signal.RoundLater); "" otherwise.
	Round   string
	Outcome string
	// Unknown says why the answer could not be interpreted (one of the
	// Unknown constants), "" when it could or none came.
	Unknown string
	// Bundled says the call was a request stage's bundled call; BundleWait
	// is how long its first question waited before it went.
	Bundled    bool
	BundleWait time.Duration
	// Canceled says the caller canceled the call before its deadline
	// (Outcome is then timeout); the replica outcome is "canceled".
	Canceled bool
	// Duration is the whole call, failover included.
	Duration time.Duration
	// Attempt is the last replica's request, from sending it to reading
	// the answer; Server the phases of that answer's Server-Timing header
	// (parse, tokenize, queue, forward, post, serialize, total), none when
	// the worker sent no such header.
	Attempt time.Duration
	Server  []Phase
}

// Phase is one Server-Timing entry.
type Phase struct {
	Name     string
	Duration time.Duration
}

// Transport is the part of Attempt the worker did not account for (the
// connection, HTTP framing, the wire), and whether it is known: only an
// answer with a Server-Timing total gives it.
func (c Call) Transport() (time.Duration, bool) {
	for _, p := range c.Server {
		if p.Name == "total" {
			return max(c.Attempt-p.Duration, 0), true
		}
	}
	return 0, false
}

// Observer records one call.
type Observer func(Call)

// Admission is told of every request sent to a replica: once when it is
// sent (n 1, bytes its body's length) and once when its answer has been
// read or it failed (n -1, bytes negated), so that the caller can keep the
// in-flight count and admitted bytes of each replica.
type Admission func(replica string, n int, bytes int64)

// Options configure a Pool.
type Options struct {
	// Deployment names the pool in errors and metrics.
	Deployment string
	Replicas   []Replica
	// MaxResponseBytes bounds each answer (DefaultMaxResponseBytes).
	MaxResponseBytes int64
	Observe          Observer
	Admit            Admission
}

// Pool sends requests round-robin to the ready replicas of one deployment.
// A replica starts not ready: the caller marks it with SetReady as its
// health checks see it.
type Pool struct {
	deployment string
	replicas   []*replica
	next       atomic.Uint64
	maxBytes   int64
	observe    Observer
	admit      Admission
}

type replica struct {
	Replica
	ready atomic.Bool
}

// New returns a pool over the replicas.
func New(o Options) (*Pool, error) {
	if o.Deployment == "" {
		return nil, errors.New("client: a pool needs its deployment's name")
	}
	if len(o.Replicas) == 0 {
		return nil, fmt.Errorf("client: deployment %q has no replica", o.Deployment)
	}
	p := &Pool{deployment: o.Deployment, maxBytes: o.MaxResponseBytes, observe: o.Observe, admit: o.Admit}
	if p.maxBytes <= 0 {
		p.maxBytes = DefaultMaxResponseBytes
	}
	for i, r := range o.Replicas {
		if r.HTTP == nil || r.BaseURL == "" {
			return nil, fmt.Errorf("client: deployment %q replica %d has no HTTP client or base URL", o.Deployment, i)
		}
		if r.Name == "" {
			r.Name = fmt.Sprint(i)
		}
		r.BaseURL = strings.TrimSuffix(r.BaseURL, "/")
		p.replicas = append(p.replicas, &replica{Replica: r})
	}
	return p, nil
}

// Deployment is the pool's deployment name.
func (p *Pool) Deployment() string { return p.deployment }

// SetReady marks replica i ready (requests go to it) or not.
func (p *Pool) SetReady(i int, ready bool) { p.replicas[i].ready.Store(ready) }

// Ready reports whether some replica is ready.
func (p *Pool) Ready() bool {
	for _, r := range p.replicas {
		if r.ready.Load() {
			return true
		}
	}
	return false
}

// Error is a failed call to a deployment.
type Error struct {
	Deployment string
	Replica    string // "" when no replica was tried
	Outcome    string // one of the Outcome constants
	Status     int    // the worker's HTTP status, 0 when none came
	Code       string // the worker's error code, when it sent one
	// Unknown says why a 200 answer could not be interpreted (an Unknown
	// constant); "" for other failures.
	Unknown string
	Err     error
}

func (e *Error) Error() string {
	where := fmt.Sprintf("model deployment %q", e.Deployment)
	if e.Replica != "" {
		where += " (replica " + e.Replica + ")"
	}
	if e.Status != 0 {
		return fmt.Sprintf("%s: worker answered %d %s: %v", where, e.Status, e.Code, e.Err)
	}
	return fmt.Sprintf("%s: %v", where, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// pick returns the next ready replica after those already tried, or nil.
func (p *Pool) pick(tried map[*replica]bool) *replica {
	n := len(p.replicas)
	start := int(p.next.Add(1) % uint64(n))
	for k := range n {
		r := p.replicas[(start+k)%n]
		if r.ready.Load() && !tried[r] {
			return r
		}
	}
	return nil
}

// call POSTs body (built for the replica chosen) to path, decodes the
// answer into out and reads it with check (whose error fails the call). A
// replica that cannot be reached, or answers 503, is
// passed over for the next ready one while the deadline allows.
func (p *Pool) call(ctx context.Context, path string, body func(r *replica) any, out any, check func() error) error {
	return p.callRound(ctx, "", path, body, out, check)
}

// callRound is call for one round of a request stage.
func (p *Pool) callRound(ctx context.Context, round, path string, body func(r *replica) any, out any, check func() error) error {
	start := time.Now()
	c := Call{Deployment: p.deployment, Surface: strings.TrimPrefix(path, "/v1/"), Round: round}
	c.BundleWait, c.Bundled = signal.BundleWait(ctx)
	var tried map[*replica]bool
	var last *Error
	for {
		r := p.pick(tried)
		if r == nil {
			if last == nil {
				last = &Error{Deployment: p.deployment, Outcome: OutcomeUnavailable,
					Err: errors.New("no replica is ready (the worker is starting or restarting; see /startup-status)")}
			}
			break
		}
		err := p.once(ctx, r, path, body(r), out, &c)
		if err == nil {
			c.Replica, c.Outcome = r.Name, OutcomeOK
			cerr := check()
			if cerr != nil {
				c.Outcome = OutcomeFailed
				var e *Error
				if errors.As(cerr, &e) {
					e.Replica = r.Name
					c.Unknown = e.Unknown
				}
			}
			p.record(&c, start)
			return cerr
		}
		last = err
		if err.Outcome != OutcomeUnavailable || ctx.Err() != nil || len(p.replicas) == 1 {
			break
		}
		if tried == nil {
			tried = map[*replica]bool{}
		}
		tried[r] = true
	}
	c.Replica, c.Outcome, c.Unknown = last.Replica, last.Outcome, last.Unknown
	// A caller that gave up before its deadline (its request ended) canceled
	// the call: a timeout for the deployment, "canceled" for the replica.
	c.Canceled = last.Outcome == OutcomeTimeout && errors.Is(ctx.Err(), context.Canceled)
	p.record(&c, start)
	return last
}

func (p *Pool) record(c *Call, start time.Time) {
	if p.observe != nil {
		c.Duration = time.Since(start)
		p.observe(*c)
	}
}

// serverTiming parses a Server-Timing header ("name;dur=ms, ..."); entries
// without a duration are left out.
func serverTiming(h string, into []Phase) []Phase {
	into = into[:0]
	for len(h) > 0 {
		var entry string
		entry, h, _ = strings.Cut(h, ",")
		name, params, _ := strings.Cut(entry, ";")
		name = strings.TrimSpace(name)
		for params != "" {
			var kv string
			kv, params, _ = strings.Cut(params, ";")
			if v, ok := strings.CutPrefix(strings.TrimSpace(kv), "dur="); ok {
				if ms, err := strconv.ParseFloat(v, 64); err == nil && name != "" && ms >= 0 {
					into = append(into, Phase{Name: name, Duration: time.Duration(ms * float64(time.Millisecond))})
				}
			}
		}
	}
	return into
}

// workerError is the worker's whole-request error body.
type workerError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (p *Pool) once(ctx context.Context, r *replica, path string, body, out any, c *Call) *Error {
	fail := func(outcome string, status int, code string, err error) *Error {
		return &Error{Deployment: p.deployment, Replica: r.Name, Outcome: outcome, Status: status, Code: code, Err: err}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return fail(OutcomeFailed, 0, "", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.BaseURL+path, bytes.NewReader(raw))
	if err != nil {
		return fail(OutcomeFailed, 0, "", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if p.admit != nil {
		n := int64(len(raw))
		p.admit(r.Name, 1, n)
		defer p.admit(r.Name, -1, -n)
	}
	sent := time.Now()
	c.Server = c.Server[:0]
	resp, err := r.HTTP.Do(req)
	if err != nil {
		c.Attempt = time.Since(sent)
		if ctx.Err() != nil {
			return fail(OutcomeTimeout, 0, "", ctx.Err())
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fail(OutcomeTimeout, 0, "", err)
		}
		return fail(OutcomeUnavailable, 0, "", fmt.Errorf("cannot reach the worker: %w", err))
	}
	defer resp.Body.Close()
	c.Server = serverTiming(resp.Header.Get("Server-Timing"), c.Server)
	data, err := io.ReadAll(io.LimitReader(resp.Body, p.maxBytes+1))
	c.Attempt = time.Since(sent)
	if err != nil {
		if ctx.Err() != nil {
			return fail(OutcomeTimeout, resp.StatusCode, "", ctx.Err())
		}
		return fail(OutcomeUnavailable, resp.StatusCode, "", fmt.Errorf("reading the answer: %w", err))
	}
	if int64(len(data)) > p.maxBytes {
		e := fail(OutcomeFailed, resp.StatusCode, "", fmt.Errorf("the answer is larger than %d bytes", p.maxBytes))
		if resp.StatusCode == http.StatusOK {
			e.Unknown = UnknownTooLarge
		}
		return e
	}
	if resp.StatusCode != http.StatusOK {
		var we workerError
		_ = json.Unmarshal(data, &we)
		msg := we.Error.Message
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		outcome := OutcomeFailed
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			outcome = OutcomeOverloaded
		case resp.StatusCode == http.StatusServiceUnavailable:
			outcome = OutcomeUnavailable
		case resp.StatusCode == http.StatusGatewayTimeout:
			outcome = OutcomeTimeout
		case resp.StatusCode >= 400 && resp.StatusCode < 500:
			outcome = OutcomeRejected
		}
		return fail(outcome, resp.StatusCode, we.Error.Code, errors.New(msg))
	}
	if err := json.Unmarshal(data, out); err != nil {
		e := fail(OutcomeFailed, resp.StatusCode, "", fmt.Errorf("malformed answer: %w", err))
		e.Unknown = UnknownMalformedBody
		return e
	}
	return nil
}

// itemError is the worker's per-item error.
type itemError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ClassifyOptions shape the classify requests of one binding.
type ClassifyOptions struct {
	// Head is the served model that answers (default: the replica's Model).
	Head string
	// Overflow is reject, truncate or window ("": the worker's default,
	// truncate); MaxTokens the token budget per input (0: the model's).
	Overflow  string
	MaxTokens int
	// Accept, when set, says whether the binding can read a distribution's
	// labels (a jailbreak signal needs an attack or a benign label); an
	// answer it refuses fails the call as unknown_label.
	Accept func([]signal.LabelScore) bool
}

// Classifier is signal.Classifier over POST /v1/classify.
type Classifier struct {
	pool   *Pool
	method string
	opt    ClassifyOptions
}

// NewClassifier returns a classifier over the pool; method names it in
// routing output.
func NewClassifier(p *Pool, method string, o ClassifyOptions) *Classifier {
	return &Classifier{pool: p, method: method, opt: o}
}

var _ signal.Classifier = (*Classifier)(nil)

// Method names the binding in routing output.
func (c *Classifier) Method() string { return c.method }

// ModelFacts: the deployment and served model that answer, and, for a
// windowed binding (overflow window), its token budget as the whole
// input's bound. The worker's own window size and overlap are not known
// here.
func (c *Classifier) ModelFacts() signal.ModelFacts {
	f := signal.ModelFacts{ResourceID: "worker:" + c.pool.deployment}
	if c.opt.Head != "" {
		f.ResourceID += "/" + c.opt.Head
	}
	if c.opt.Overflow == "window" {
		f.Windowed, f.DocumentMaxTokens = true, c.opt.MaxTokens
	}
	return f
}

// classifyBody is a classify request; Input is []string (texts) or
// []TextPair (sequence pairs), which the worker tells apart by shape.
type classifyBody struct {
	Model   string `json:"model"`
	Input   any    `json:"input"`
	Options struct {
		Overflow  string `json:"overflow,omitempty"`
		MaxTokens int    `json:"max_tokens,omitempty"`
	} `json:"options"`
}

type classifyAnswer struct {
	Results []struct {
		Index         int                `json:"index"`
		Probabilities map[string]float64 `json:"probabilities"`
		Scores        map[string]float64 `json:"scores"`
		Error         *itemError         `json:"error"`
	} `json:"results"`
}

// Classify returns one distribution per text, labels by falling score.
func (c *Classifier) Classify(ctx context.Context, texts []string) ([][]signal.LabelScore, error) {
	return c.classify(ctx, texts, len(texts))
}

// TextPair is one sequence-pair input (premise and hypothesis for NLI,
// as the worker's classify reads {text, text_pair}).
type TextPair struct {
	Text     string `json:"text"`
	TextPair string `json:"text_pair"`
}

// ClassifyPairs is Classify for sequence pairs: the served model encodes
// each pair together (a cross-encoder classifier, such as an NLI model).
func (c *Classifier) ClassifyPairs(ctx context.Context, pairs []TextPair) ([][]signal.LabelScore, error) {
	return c.classify(ctx, pairs, len(pairs))
}

// classify posts n inputs to /v1/classify on the pool's replicas.
func (c *Classifier) classify(ctx context.Context, input any, n int) ([][]signal.LabelScore, error) {
	var ans classifyAnswer
	body := func(r *replica) any {
		b := classifyBody{Model: c.opt.Head, Input: input}
		if b.Model == "" {
			b.Model = r.Model
		}
		b.Options.Overflow, b.Options.MaxTokens = c.opt.Overflow, c.opt.MaxTokens
		return b
	}
	var out [][]signal.LabelScore
	check := func() error {
		var err error
		out, err = c.read(&ans, n)
		return err
	}
	if err := c.pool.call(ctx, "/v1/classify", body, &ans, check); err != nil {
		return nil, err
	}
	return out, nil
}

// read turns a classify answer into distributions, labels by falling score.
func (c *Classifier) read(ans *classifyAnswer, n int) ([][]signal.LabelScore, error) {
	if len(ans.Results) != n {
		return nil, c.pool.malformed(UnknownWrongCount, "classify answered %d results for %d inputs", len(ans.Results), n)
	}
	out := make([][]signal.LabelScore, n)
	for _, it := range ans.Results {
		if it.Index < 0 || it.Index >= n || out[it.Index] != nil {
			return nil, c.pool.malformed(UnknownBadIndex, "classify answered a bad or repeated index %d", it.Index)
		}
		if it.Error != nil {
			return nil, &Error{Deployment: c.pool.deployment, Outcome: OutcomeFailed, Code: it.Error.Code,
				Err: fmt.Errorf("input %d: %s: %s", it.Index, it.Error.Code, it.Error.Message)}
		}
		m := it.Probabilities
		if m == nil {
			m = it.Scores
		}
		if len(m) == 0 {
			return nil, c.pool.malformed(UnknownEmptyResult, "classify result %d has no label scores (is the head a token classifier?)", it.Index)
		}
		ls := make([]signal.LabelScore, 0, len(m))
		for l, s := range m {
			ls = append(ls, signal.LabelScore{Label: l, Score: s})
		}
		sort.Slice(ls, func(i, j int) bool {
			if ls[i].Score != ls[j].Score {
				return ls[i].Score > ls[j].Score
			}
			return ls[i].Label < ls[j].Label
		})
		if c.opt.Accept != nil && !c.opt.Accept(ls) {
			labels := make([]string, 0, min(len(ls), 8))
			for _, l := range ls[:min(len(ls), 8)] {
				labels = append(labels, strconv.Quote(l.Label))
			}
			return nil, c.pool.malformed(UnknownLabel, "classify result %d has labels %s, which the %s binding cannot read", it.Index, strings.Join(labels, ", "), c.method)
		}
		out[it.Index] = ls
	}
	return out, nil
}

func (p *Pool) malformed(reason, format string, a ...any) error {
	return &Error{Deployment: p.deployment, Outcome: OutcomeFailed, Unknown: reason, Err: fmt.Errorf(format, a...)}
}

// EmbedOptions shape the embeddings requests of one binding.
type EmbedOptions struct {
	Head      string // served model (default: the replica's Model)
	MaxTokens int    // token budget per input (0: the model's)
}

// Embedder is signal.Embedder over POST /v1/embeddings.
type Embedder struct {
	pool   *Pool
	method string
	opt    EmbedOptions
}

// NewEmbedder returns an embedder over the pool.
func NewEmbedder(p *Pool, method string, o EmbedOptions) *Embedder {
	return &Embedder{pool: p, method: method, opt: o}
}

var _ signal.Embedder = (*Embedder)(nil)

// Method names the binding in routing output.
func (e *Embedder) Method() string { return e.method }

type embedBody struct {
	Model   string   `json:"model"`
	Input   []string `json:"input"`
	Options struct {
		MaxTokens int `json:"max_tokens,omitempty"`
	} `json:"options"`
}

type embedAnswer struct {
	Data []struct {
		Index     int        `json:"index"`
		Embedding []float32  `json:"embedding"`
		Error     *itemError `json:"error"`
	} `json:"data"`
}

// Embed returns one vector per text.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	var ans embedAnswer
	body := func(r *replica) any {
		b := embedBody{Model: e.opt.Head, Input: texts}
		if b.Model == "" {
			b.Model = r.Model
		}
		b.Options.MaxTokens = e.opt.MaxTokens
		return b
	}
	var out [][]float32
	check := func() error {
		var err error
		out, err = e.read(&ans, len(texts))
		return err
	}
	if err := e.pool.call(ctx, "/v1/embeddings", body, &ans, check); err != nil {
		return nil, err
	}
	return out, nil
}

func (e *Embedder) read(ans *embedAnswer, n int) ([][]float32, error) {
	if len(ans.Data) != n {
		return nil, e.pool.malformed(UnknownWrongCount, "embeddings answered %d vectors for %d inputs", len(ans.Data), n)
	}
	out := make([][]float32, n)
	for _, it := range ans.Data {
		if it.Index < 0 || it.Index >= n || out[it.Index] != nil {
			return nil, e.pool.malformed(UnknownBadIndex, "embeddings answered a bad or repeated index %d", it.Index)
		}
		if it.Error != nil {
			return nil, &Error{Deployment: e.pool.deployment, Outcome: OutcomeFailed, Code: it.Error.Code,
				Err: fmt.Errorf("input %d: %s: %s", it.Index, it.Error.Code, it.Error.Message)}
		}
		if len(it.Embedding) == 0 {
			return nil, e.pool.malformed(UnknownEmptyResult, "embeddings answered an empty vector for input %d", it.Index)
		}
		out[it.Index] = it.Embedding
	}
	return out, nil
}
