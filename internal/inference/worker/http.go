package worker

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

//go:embed openapi.yaml
var openAPI []byte

// OpenAPI returns the worker contract document served at /openapi.yaml.
func OpenAPI() []byte { return bytes.Clone(openAPI) }

// Handler is the worker's HTTP API.
func (s *Server) Handler() http.Handler { return s.mux }

func (s *Server) routes() {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/classify", s.task("classify", s.classify))
	mux.Handle("POST /v1/embeddings", s.task("embeddings", s.embeddings))
	mux.Handle("POST /v1/rerank", s.task("rerank", s.rerank))
	mux.Handle("POST /v1/decisions", s.task("decisions", s.answerQuestions))
	mux.Handle("POST /v1/systemone", s.task("systemone", s.answerQuestions))
	mux.Handle("POST /v1/bundle", s.task("bundle", s.bundle))
	mux.HandleFunc("GET /v1/models", s.listModels)
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /health/live", s.live)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.met.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(openAPI)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, errBody("not_found", fmt.Sprintf("no endpoint %s %s; see GET /openapi.yaml", r.Method, r.URL.Path)))
	})
	s.mux = mux
}

// apiError is a whole-request error: body error{code, message}.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func badRequest(format string, a ...any) *apiError {
	return &apiError{http.StatusBadRequest, "invalid_request", fmt.Sprintf(format, a...)}
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func errBody(code, msg string) errorBody { return errorBody{errorDetail{code, msg}} }

// timing collects the Server-Timing phases of one task (milliseconds).
type timing struct {
	start                                            time.Time
	parse, tokenize, queue, forward, post, serialize time.Duration
	// arrivals are the model batchers this task announced itself to (see
	// batcher.arrive); arrived withdraws one announcement, release those
	// infer did not. A task touches few models: a slice, not a map.
	arrivals []*batcher
}

func (t *timing) arrive(b *batcher) {
	if !slices.Contains(t.arrivals, b) {
		b.arrive()
		t.arrivals = append(t.arrivals, b)
	}
}

func (t *timing) arrived(b *batcher) {
	if i := slices.Index(t.arrivals, b); i >= 0 {
		b.depart()
		t.arrivals = slices.Delete(t.arrivals, i, i+1)
	}
}

func (t *timing) release() {
	for _, b := range t.arrivals {
		b.depart()
	}
	t.arrivals = t.arrivals[:0]
}

func (t *timing) header(total time.Duration) string {
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }
	return "parse;dur=" + ms(t.parse) + ", tokenize;dur=" + ms(t.tokenize) + ", queue;dur=" + ms(t.queue) +
		", forward;dur=" + ms(t.forward) + ", post;dur=" + ms(t.post) + ", serialize;dur=" + ms(t.serialize) +
		", total;dur=" + ms(total)
}

// since adds the time from *mark to now to *d and moves the mark.
func since(d *time.Duration, mark *time.Time) {
	now := time.Now()
	*d += now.Sub(*mark)
	*mark = now
}

// taskFunc answers one task body; the answer is either an *apiError or a
// value to encode with status 200.
type taskFunc func(ctx context.Context, body []byte, t *timing) (any, *apiError)

// task wraps a taskFunc with the body limit, Server-Timing, errors and
// metrics. Request text never reaches a log line.
func (s *Server) task(endpoint string, f taskFunc) http.Handler {
	// The endpoint's series, looked up once (on first use, as before: a
	// series appears in /metrics when it first counts).
	duration := sync.OnceValue(func() prometheus.Observer { return s.met.duration.WithLabelValues(endpoint) })
	ok := sync.OnceValue(func() prometheus.Counter { return s.met.requests.WithLabelValues(endpoint, "200") })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := &timing{start: time.Now()}
		mark := t.start
		status, out := s.runTask(r, f, t, &mark)
		mark = time.Now()
		buf, _ := s.answers.Get().(*bytes.Buffer)
		if buf == nil {
			buf = new(bytes.Buffer)
		}
		defer func() {
			if buf.Cap() <= 1<<20 { // a huge answer's buffer is not kept
				s.answers.Put(buf)
			}
		}()
		answer, err := encodeAnswer(buf, out)
		if err != nil {
			status, answer = http.StatusInternalServerError, mustJSON(errBody("internal", "could not encode the answer: "+err.Error()))
		}
		since(&t.serialize, &mark)
		h := w.Header()
		h.Set("Content-Type", "application/json")
		// With its length known the answer goes out in one piece, never in
		// chunks, however long.
		h.Set("Content-Length", strconv.Itoa(len(answer)))
		h.Set("Server-Timing", t.header(time.Since(t.start)))
		w.WriteHeader(status)
		_, _ = w.Write(answer)
		if status == http.StatusOK {
			ok().Inc()
		} else {
			s.met.requests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc()
		}
		duration().Observe(time.Since(t.start).Seconds())
	})
}

// encodeAnswer encodes v into buf as json.Marshal does (same bytes: the
// Encoder's trailing newline is cut) and returns the encoding.
func encodeAnswer(buf *bytes.Buffer, v any) ([]byte, error) {
	buf.Reset()
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func (s *Server) runTask(r *http.Request, f taskFunc, t *timing, mark *time.Time) (int, any) {
	body, err := readBody(r, s.opt.MaxRequestBytes)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return http.StatusRequestEntityTooLarge, errBody("request_too_large",
				fmt.Sprintf("request body is larger than %d bytes (--max-request-bytes); split the input into several requests", s.opt.MaxRequestBytes))
		}
		return http.StatusBadRequest, errBody("invalid_request", "could not read the request body: "+err.Error())
	}
	since(&t.parse, mark)
	out, aerr := f(r.Context(), body, t)
	t.release()
	if aerr != nil {
		return aerr.status, errBody(aerr.code, aerr.message)
	}
	return http.StatusOK, out
}

// readBody reads at most limit bytes of the request's body, into a buffer
// sized by its Content-Length when it gives one (io.ReadAll would start at
// 512 bytes and grow several times for a long input).
func readBody(r *http.Request, limit int64) ([]byte, error) {
	rd := http.MaxBytesReader(nil, r.Body, limit)
	if n := r.ContentLength; n > 0 && n <= limit {
		buf := bytes.NewBuffer(make([]byte, 0, n+bytes.MinRead)) // room to see EOF without growing
		_, err := buf.ReadFrom(rd)
		return buf.Bytes(), err
	}
	return io.ReadAll(rd)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode parses body into v strictly enough to catch typos in field names.
func decode(body []byte, v any) *apiError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return badRequest("body is not valid JSON (offset %d): %v", se.Offset, err)
		case errors.As(err, &te):
			return badRequest("field /%s: expected %s, got JSON %s", strings.ReplaceAll(te.Field, ".", "/"), te.Type, te.Value)
		case errors.Is(err, io.EOF):
			return badRequest("body is empty; send a JSON object")
		default:
			return badRequest("%v", err)
		}
	}
	if dec.More() {
		return badRequest("body holds more than one JSON value")
	}
	return nil
}

// resolve finds the model a request names (the only one when the name is
// empty) and checks it serves and has one of tasks.
func (s *Server) resolve(t *timing, name, endpoint string, tasks ...string) (*entry, Info, *batcher, *apiError) {
	if name == "" {
		if len(s.order) != 1 {
			return nil, Info{}, nil, badRequest("field /model is required: this worker serves %d models (%s)", len(s.order), strings.Join(s.names(), ", "))
		}
		name = s.order[0]
	}
	e, ok := s.models[name]
	if !ok {
		return nil, Info{}, nil, &apiError{http.StatusNotFound, "model_not_found", fmt.Sprintf("model %q is not served here; GET /v1/models lists %s", name, strings.Join(s.names(), ", "))}
	}
	state, _, info, b := e.snapshot()
	if (state != StateReady && state != StateDegraded) || b == nil {
		e.mu.RLock()
		why := e.lastErr
		e.mu.RUnlock()
		msg := fmt.Sprintf("model %q is %s", name, state)
		if why != "" {
			msg += ": " + why
		}
		return nil, Info{}, nil, &apiError{http.StatusServiceUnavailable, "not_ready", msg + "; GET /health shows progress"}
	}
	for _, task := range tasks {
		if info.Task == task {
			t.arrive(b)
			return e, info, b, nil
		}
	}
	return nil, Info{}, nil, &apiError{http.StatusUnprocessableEntity, "unsupported_surface",
		fmt.Sprintf("model %q is a %s model and does not serve %s (it needs a %s model)", name, info.Task, endpoint, strings.Join(tasks, " or "))}
}

// unit is one input for a forward pass.
type unit struct {
	pair   Pair
	tokens int
}

type cacheKey [sha256.Size]byte

func keyOf(o op, layer int, p Pair) cacheKey {
	h := sha256.New()
	h.Write([]byte{byte(o)})
	if layer != 0 { // another layer's vector is another answer
		h.Write([]byte(strconv.Itoa(layer)))
	}
	h.Write([]byte{0})
	h.Write([]byte(p.Text))
	h.Write([]byte{0})
	h.Write([]byte(p.Pair))
	var k cacheKey
	h.Sum(k[:0])
	return k
}

// infer answers units through the result cache and the model's batcher. It
// adds the queue and forward time to t; its error is a whole-request error.
func (s *Server) infer(ctx context.Context, e *entry, b *batcher, o op, units []unit, t *timing) ([]Result, *apiError) {
	return s.inferLayer(ctx, e, b, o, 0, units, t)
}

// inferLayer is infer for embeddings read from a hidden layer (0: the
// default).
func (s *Server) inferLayer(ctx context.Context, e *entry, b *batcher, o op, layer int, units []unit, t *timing) ([]Result, *apiError) {
	out := make([]Result, len(units))
	var keys []cacheKey
	var miss []int
	if e.cache != nil {
		keys = make([]cacheKey, len(units))
		hits := 0
		for i, u := range units {
			keys[i] = keyOf(o, layer, u.pair)
			if r, ok := e.cache.Get(keys[i]); ok {
				out[i] = r
				hits++
			} else {
				miss = append(miss, i)
			}
		}
		if hits > 0 {
			s.met.cache.WithLabelValues(e.name, "hit").Add(float64(hits))
		}
		if len(miss) > 0 {
			s.met.cache.WithLabelValues(e.name, "miss").Add(float64(len(miss)))
		}
	} else {
		miss = make([]int, len(units))
		for i := range units {
			miss[i] = i
		}
	}
	if len(miss) == 0 {
		t.arrived(b)
		return out, nil
	}
	j := &job{ctx: ctx, op: o, layer: layer, tokens: make([]int, len(miss))}
	for k, i := range miss {
		j.tokens[k] = max(units[i].tokens, 1)
		if o == opClassify || o == opRerank {
			j.pairs = append(j.pairs, units[i].pair)
		} else {
			j.texts = append(j.texts, units[i].pair.Text)
		}
	}
	err := b.submit(j)
	t.arrived(b)
	if err != nil {
		if errors.Is(err, errOverloaded) {
			return nil, &apiError{http.StatusTooManyRequests, "overloaded",
				fmt.Sprintf("model %q has %d requests or %d tokens queued (--max-queue, --max-queued-tokens); retry later", e.name, s.opt.MaxQueue, s.opt.MaxQueuedTokens)}
		}
		return nil, &apiError{http.StatusServiceUnavailable, "not_ready", err.Error()}
	}
	if err := b.wait(ctx, j); err != nil {
		if ctx.Err() != nil {
			return nil, &apiError{http.StatusGatewayTimeout, "deadline_exceeded", "the request's deadline passed while it waited for the model"}
		}
		return nil, &apiError{http.StatusInternalServerError, "inference_failed", fmt.Sprintf("model %q failed a forward pass: %v", e.name, err)}
	}
	t.queue += j.queue
	t.forward += j.forward
	for k, i := range miss {
		out[i] = j.results[k]
		if e.cache != nil && out[i].Err == nil {
			e.cache.Add(keys[i], out[i])
		}
	}
	return out, nil
}

// usage reports tokens read; TokensLowerBound marks inputs read only in part.
type usage struct {
	InputTokens      int  `json:"input_tokens"`
	TokensLowerBound bool `json:"tokens_lower_bound,omitempty"`
}

func (s *Server) listModels(w http.ResponseWriter, _ *http.Request) {
	type limits struct {
		MaxInputTokens int   `json:"max_input_tokens,omitempty"`
		MaxBatchTokens int   `json:"max_batch_tokens"`
		MaxQueue       int   `json:"max_queue"`
		MaxQueued      int   `json:"max_queued_tokens"`
		Dimensions     int   `json:"dimensions,omitempty"`
		Matryoshka     []int `json:"matryoshka_dimensions,omitempty"`
		Layers         []int `json:"layers,omitempty"`
	}
	type model struct {
		ID        string   `json:"id"`
		Object    string   `json:"object"`
		Source    string   `json:"source"`
		Status    string   `json:"status"`
		Task      string   `json:"task,omitempty"`
		Surfaces  []string `json:"surfaces,omitempty"`
		Labels    []string `json:"labels,omitempty"`
		Multi     bool     `json:"multi_label,omitempty"`
		Limits    limits   `json:"limits"`
		Device    string   `json:"device,omitempty"`
		Engine    string   `json:"engine,omitempty"`
		Revision  string   `json:"revision,omitempty"`
		Digest    string   `json:"digest,omitempty"`
		SelfCheck string   `json:"self_check"`
	}
	out := struct {
		Object     string  `json:"object"`
		APIVersion string  `json:"api_version"`
		Data       []model `json:"data"`
		Limits     struct {
			MaxBundleTasks  int   `json:"max_bundle_tasks"`
			MaxRequestBytes int64 `json:"max_request_bytes"`
		} `json:"limits"`
	}{Object: "list", APIVersion: APIVersion, Data: []model{}}
	out.Limits.MaxBundleTasks = s.opt.MaxBundleTasks
	out.Limits.MaxRequestBytes = s.opt.MaxRequestBytes
	for _, name := range s.order {
		e := s.models[name]
		e.mu.RLock()
		m := model{ID: name, Object: "model", Source: e.spec.Model, Status: e.state, SelfCheck: e.selfCheck, Revision: e.spec.Revision}
		info := e.info
		loaded := e.model != nil
		e.mu.RUnlock()
		m.Limits = limits{MaxBatchTokens: s.opt.MaxBatchTokens, MaxQueue: s.opt.MaxQueue, MaxQueued: s.opt.MaxQueuedTokens}
		if loaded {
			m.Task, m.Labels, m.Multi = info.Task, info.Labels, info.MultiLabel
			m.Surfaces = surfaces(info.Task)
			m.Limits.MaxInputTokens, m.Limits.Dimensions, m.Limits.Matryoshka, m.Limits.Layers = info.MaxInputTokens, info.Dimensions, info.Matryoshka, info.Layers
			m.Device, m.Engine, m.Digest = info.Device, info.Engine, info.Digest
			if info.Revision != "" {
				m.Revision = info.Revision
			}
		}
		out.Data = append(out.Data, m)
	}
	writeJSON(w, http.StatusOK, out)
}

// surfaces lists the endpoints a model of task serves.
func surfaces(task string) []string {
	switch task {
	case TaskSequence, TaskTokens:
		return []string{"classify", "decisions", "bundle"}
	case TaskEmbedding:
		return []string{"embeddings", "rerank", "decisions", "bundle"}
	case TaskRerank:
		return []string{"rerank", "decisions", "bundle"}
	}
	return nil
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	st, models := s.status()
	code := http.StatusServiceUnavailable
	if st == StateReady {
		code = http.StatusOK
	}
	writeJSON(w, code, struct {
		Status     string                 `json:"status"`
		APIVersion string                 `json:"api_version"`
		Models     map[string]modelHealth `json:"models"`
	}{st, APIVersion, models})
}

func (s *Server) live(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Status     string  `json:"status"`
		APIVersion string  `json:"api_version"`
		Uptime     float64 `json:"uptime_seconds"`
	}{"alive", APIVersion, time.Since(s.started).Seconds()})
}
