package deploy

// What the deployments report while serve starts: /startup-status (through
// mgmt.Startup, and through an interim listener while the configuration
// cannot compile yet), and the waits for readiness.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/junction-router/junction/internal/inference/worker/supervise"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/recipes"
)

// Report makes startup show the deployments (and keeps it up to date).
func (s *Set) Report(st *mgmt.Startup) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startup = st
	s.publishLocked()
}

func (s *Set) publishLocked() {
	if s.startup != nil {
		s.startup.SetDeployments(s.snapshotLocked())
	}
}

// snapshotLocked is the deployments as /startup-status lists them.
func (s *Set) snapshotLocked() []mgmt.ModelDeployment {
	out := make([]mgmt.ModelDeployment, 0, len(s.deps))
	for _, d := range s.deps {
		md := mgmt.ModelDeployment{Name: d.cfg.Name, Artifact: d.cfg.Artifact, Ready: d.pool.Ready()}
		var procs, reasons []string
		for _, r := range d.reps {
			if r.worker != nil {
				p := "managed, not running"
				if r.pid != 0 {
					p = "managed, pid " + strconv.Itoa(r.pid)
				}
				procs = append(procs, p)
			} else {
				procs = append(procs, "attached "+r.endpoint)
			}
			if !r.ready && md.State == "" {
				md.State = r.state
			}
			if !r.ready && r.reason != "" {
				reasons = append(reasons, "replica "+r.name+": "+r.reason)
			}
		}
		md.Process = strings.Join(procs, "; ")
		if md.Ready {
			md.State = "ready"
		} else {
			md.Reason = strings.Join(reasons, "; ")
		}
		if md.State == "" {
			md.State = "starting"
		}
		out = append(out, md)
	}
	return out
}

// serveInterimStatus answers GET /health, GET /ready and GET
// /startup-status on addr (503, phase loading_model_deployments) and 503
// SERVICE_UNAVAILABLE to everything else, with doc's management
// authentication (mgmt.InterimHandler), until the returned stop is called.
// It is best effort: a busy address or an unreadable token source leaves it
// out, and the management API reports the problem when it starts.
func (s *Set) serveInterimStatus(addr string, doc *recipes.Document, version string) (stop func()) {
	status := func() mgmt.StartupStatus {
		s.mu.Lock()
		deps, failure := s.snapshotLocked(), s.failure
		s.mu.Unlock()
		st := mgmt.StartupStatus{ReadyStatus: mgmt.ReadyStatus{Phase: "loading_model_deployments", PendingModels: []string{}, TotalModels: len(deps)},
			ModelDeployments: deps}
		if failure != "" {
			st.Phase, st.Message = "error", failure
		}
		for _, d := range deps {
			if d.Ready {
				st.ReadyModels++
			} else {
				st.PendingModels = append(st.PendingModels, d.Name)
			}
		}
		if len(st.PendingModels) == 0 && failure == "" {
			// Every deployment is ready and the configuration is compiling:
			// the phase the management API reports then.
			st.Phase = "starting"
		}
		return st
	}
	h, err := mgmt.InterimHandler(mgmt.InterimOptions{Document: doc, Status: status, Version: version,
		Message: "junction serve is starting: it waits for its model deployments before compiling the configuration; see GET /startup-status"})
	if err != nil {
		s.log.Warn("no interim start-up status: the management API's tokens cannot be read", "err", err)
		return func() {}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return func() {}
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	s.log.Info("interim start-up status listening until the configuration compiles", "addr", "http://"+addr+"/startup-status")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
}

// WaitForCompile waits for the deployment the embeddings binding uses
// (compiling a configuration embeds its embedding signals' candidates) and
// the one global.storage.embedding names (stored data learns its model's
// dimension at start-up). The management API cannot listen before the
// configuration compiles, so while this waits an interim listener on
// statusAddr ("" for none) answers /ready and /startup-status.
func (s *Set) WaitForCompile(ctx context.Context, statusAddr string, doc *recipes.Document, version string) error {
	if s == nil {
		return nil
	}
	var deps []*deployment
	if s.embedDep != nil {
		deps = append(deps, s.embedDep)
		s.log.Info("waiting for the embeddings deployment before compiling the configuration (its candidates are embedded by it)", "deployment", s.embedDep.cfg.Name)
	}
	if doc != nil && doc.Global.Storage != nil && doc.Global.Storage.Embedding != nil {
		for _, d := range s.deps {
			if name := doc.Global.Storage.Embedding.Deployment; d.cfg.Name == name && d != s.embedDep {
				deps = append(deps, d)
				s.log.Info("waiting for the deployment that embeds stored data", "deployment", name)
			}
		}
	}
	if len(deps) == 0 {
		return nil
	}
	if statusAddr == "" {
		return s.waitFor(ctx, deps)
	}
	defer s.serveInterimStatus(statusAddr, doc, version)()
	err := s.waitFor(ctx, deps)
	if err != nil && ctx.Err() == nil {
		// Start-up has ended: the interim listener keeps answering phase
		// error with the reason until serve is stopped, so that whoever
		// watches /ready learns why.
		s.HoldFailure(ctx, err, nil)
	}
	return err
}

// EnvFailureHold says how long junction serve keeps answering /ready and
// /startup-status with phase error after a model deployment failed, before
// it exits with the failure (Go duration; 0: at once). Unset: until it is
// stopped.
const EnvFailureHold = "JUNCTION_FAILED_STARTUP_HOLD"

// HoldFailure logs why start-up ended and returns when ctx ends, stop
// receives, or $JUNCTION_FAILED_STARTUP_HOLD passes: meanwhile the
// management (or interim) listener answers phase error with the reason.
func (s *Set) HoldFailure(ctx context.Context, err error, stop <-chan error) {
	if s == nil || s.failureHold == 0 {
		return
	}
	var timeout <-chan time.Time
	if s.failureHold > 0 {
		t := time.NewTimer(s.failureHold)
		defer t.Stop()
		timeout = t.C
	}
	s.log.Error("junction serve cannot start; /ready and /startup-status answer phase error until it is stopped", "err", err, "hold", EnvFailureHold)
	select {
	case <-ctx.Done():
	case <-stop:
	case <-timeout:
	}
}

// Wait waits until every deployment has a ready replica, or the ready
// timeout ($JUNCTION_WORKER_READY_TIMEOUT, 10m) passes.
func (s *Set) Wait(ctx context.Context) error {
	if s == nil {
		return nil
	}
	return s.waitFor(ctx, s.deps)
}

// failed is the start-up failure of the first pending deployment
// whose every replica reports that its model failed to load (a worker
// settles there: it will not become ready), or nil. It is recorded, so that
// the interim status reports phase error with it.
// workerFailed is the /health status of a worker whose every model failed
// to load (worker.StateFailed); it does not leave it.
const workerFailed = "failed"

func (s *Set) failed(pending []*deployment) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range pending {
		var why []string
		for _, r := range d.reps {
			if r.state != workerFailed {
				why = nil
				break
			}
			why = append(why, "replica "+r.name+": "+r.reason)
		}
		if len(why) > 0 {
			s.failure = fmt.Sprintf("model deployment %s failed to load: %s", d.cfg.Name, strings.Join(why, "; "))
			return errors.New(s.failure)
		}
	}
	return nil
}

func (s *Set) waitFor(ctx context.Context, deps []*deployment) error {
	deadline := time.NewTimer(s.readyTimeout)
	defer deadline.Stop()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		var pending []*deployment
		for _, d := range deps {
			if !d.pool.Ready() {
				pending = append(pending, d)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if err := s.failed(pending); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			var why []string
			s.mu.Lock()
			for _, d := range pending {
				for _, r := range d.reps {
					w := fmt.Sprintf("%s replica %s: %s", d.cfg.Name, r.name, r.state)
					if r.reason != "" {
						w += " (" + r.reason + ")"
					}
					why = append(why, w)
				}
			}
			s.failure = fmt.Sprintf("model deployments not ready after %s (set $%s to wait longer): %s", s.readyTimeout, supervise.EnvReadyTimeout, strings.Join(why, "; "))
			s.mu.Unlock()
			return errors.New(s.failure)
		case <-t.C:
		}
	}
}
