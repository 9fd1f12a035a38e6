package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

type bundleTask struct {
	ID        string          `json:"id"`
	Classify  json.RawMessage `json:"classify"`
	Decisions json.RawMessage `json:"decisions"`
}

type bundleRequest struct {
	Tasks   []bundleTask `json:"tasks"`
	Options struct {
		DeadlineMs int `json:"deadline_ms"`
	} `json:"options"`
}

type bundleResult struct {
	ID     string `json:"id"`
	Status int    `json:"status"`
	Body   any    `json:"body"`
}

// bundle runs several classify or decisions tasks at once, so that tasks for
// the same model share forward passes. Each result carries the status the
// task would have had alone; results come in task order.
func (s *Server) bundle(ctx context.Context, body []byte, t *timing) (any, *apiError) {
	mark := time.Now()
	var req bundleRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	if len(req.Tasks) == 0 {
		return nil, badRequest("field /tasks: give at least one task")
	}
	if len(req.Tasks) > s.opt.MaxBundleTasks {
		return nil, &apiError{http.StatusRequestEntityTooLarge, "request_too_large",
			fmt.Sprintf("bundle has %d tasks; at most %d are accepted (--max-bundle-tasks)", len(req.Tasks), s.opt.MaxBundleTasks)}
	}
	seen := map[string]bool{}
	for i, tk := range req.Tasks {
		if tk.ID == "" {
			return nil, badRequest("field /tasks/%d/id is required", i)
		}
		if seen[tk.ID] {
			return nil, badRequest("field /tasks/%d/id: %q is used twice", i, tk.ID)
		}
		seen[tk.ID] = true
		if (len(tk.Classify) == 0) == (len(tk.Decisions) == 0) {
			return nil, badRequest("field /tasks/%d: give exactly one of classify or decisions", i)
		}
	}
	if req.Options.DeadlineMs < 0 {
		return nil, badRequest("field /options/deadline_ms: must be positive")
	}
	if req.Options.DeadlineMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.Options.DeadlineMs)*time.Millisecond)
		defer cancel()
	}
	s.met.bundle.Observe(float64(len(req.Tasks)))
	since(&t.parse, &mark)

	results := make([]bundleResult, len(req.Tasks))
	timings := make([]timing, len(req.Tasks))
	ends := make([]time.Time, len(req.Tasks))
	var wg sync.WaitGroup
	for i, tk := range req.Tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, raw := s.answerQuestions, tk.Decisions
			if len(tk.Classify) > 0 {
				f, raw = s.classify, tk.Classify
			}
			timings[i].start = time.Now()
			out, aerr := f(ctx, raw, &timings[i])
			timings[i].release()
			ends[i] = time.Now()
			if aerr != nil {
				results[i] = bundleResult{tk.ID, aerr.status, errBody(aerr.code, aerr.message)}
				return
			}
			results[i] = bundleResult{tk.ID, http.StatusOK, out}
		}()
	}
	wg.Wait()
	last := 0
	for i := range timings {
		t.parse += timings[i].parse
		t.tokenize += timings[i].tokenize
		if ends[i].After(ends[last]) {
			last = i
		}
	}
	t.queue, t.forward, t.post = timings[last].queue, timings[last].forward, timings[last].post
	return struct {
		Object  string         `json:"object"`
		Results []bundleResult `json:"results"`
	}{"bundle", results}, nil
}
