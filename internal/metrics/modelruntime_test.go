package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestModelRuntime(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewModelRuntime(reg)
	m.SetReady("guard", "0", true, true)
	m.SetReady("guard", "1", false, true)
	m.Request("guard", "0", RuntimeOK, 2*time.Millisecond)
	m.Request("guard", "1", RuntimeUnavailable, time.Millisecond)
	m.Request("guard", "0", RuntimeOverloaded, time.Millisecond)
	m.Request("guard", "", RuntimeUnavailable, 0) // no replica was ready
	m.Transport("guard", "classify", 100*time.Microsecond)
	m.ServerPhase("guard", "classify", "forward", time.Millisecond)
	m.Restarted("guard", "1", 2)
	m.Restarted("guard", "1", 0)
	m.Admitted("guard", "0", 1, 300)
	m.Admitted("guard", "0", 1, 200)
	m.Admitted("guard", "0", -1, -300)
	m.UnknownAnswer("guard", "unknown_label")
	m.StageDecisionCall("guard", "first")
	want := `
# HELP router_model_runtime_replica_admitted_bytes Request body bytes sent to the replica whose answer has not been read yet.
# TYPE router_model_runtime_replica_admitted_bytes gauge
router_model_runtime_replica_admitted_bytes{deployment="guard",replica="0"} 200
# HELP router_model_runtime_replica_inflight Requests sent to the replica whose answer has not been read yet.
# TYPE router_model_runtime_replica_inflight gauge
router_model_runtime_replica_inflight{deployment="guard",replica="0"} 1
# HELP router_model_runtime_unknown_answers_total Worker answers the router could not interpret, by reason (malformed_body, too_large, wrong_count, bad_index, empty_result, unknown_label).
# TYPE router_model_runtime_unknown_answers_total counter
router_model_runtime_unknown_answers_total{deployment="guard",reason="unknown_label"} 1
# HELP router_model_runtime_ready 1 when the deployment has a ready replica, else 0.
# TYPE router_model_runtime_ready gauge
router_model_runtime_ready{deployment="guard"} 1
# HELP router_model_runtime_replica_ready 1 when the replica's worker reports every model ready, else 0.
# TYPE router_model_runtime_replica_ready gauge
router_model_runtime_replica_ready{deployment="guard",replica="0"} 1
router_model_runtime_replica_ready{deployment="guard",replica="1"} 0
# HELP router_model_runtime_replica_requests_total Signal calls answered by one replica by outcome (ok, failed, rejected, canceled, timeout).
# TYPE router_model_runtime_replica_requests_total counter
router_model_runtime_replica_requests_total{deployment="guard",outcome="failed",replica="1"} 1
router_model_runtime_replica_requests_total{deployment="guard",outcome="ok",replica="0"} 1
router_model_runtime_replica_requests_total{deployment="guard",outcome="rejected",replica="0"} 1
# HELP router_model_runtime_requests_total Signal calls to a model deployment by outcome (ok, timeout, unavailable, overloaded, rejected, failed).
# TYPE router_model_runtime_requests_total counter
router_model_runtime_requests_total{deployment="guard",outcome="ok"} 1
router_model_runtime_requests_total{deployment="guard",outcome="overloaded"} 1
router_model_runtime_requests_total{deployment="guard",outcome="unavailable"} 2
# HELP router_model_runtime_restarts_total Restarts of managed worker processes by the router's supervisor.
# TYPE router_model_runtime_restarts_total counter
router_model_runtime_restarts_total{deployment="guard",replica="1"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "router_model_runtime_ready", "router_model_runtime_replica_ready",
		"router_model_runtime_replica_requests_total", "router_model_runtime_requests_total", "router_model_runtime_restarts_total",
		"router_model_runtime_replica_inflight", "router_model_runtime_replica_admitted_bytes", "router_model_runtime_unknown_answers_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, ModelRuntimeNames...); n != 17 {
		t.Errorf("%d series, want 17", n)
	}
	var nilM *ModelRuntime
	nilM.Request("x", "0", RuntimeOK, 0) // a nil receiver records nothing
}

// A canceled call is a timeout for the deployment and "canceled" for the
// replica that had it.
func TestModelRuntimeCanceled(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewModelRuntime(reg)
	m.RequestCanceled("guard", "0", RuntimeTimeout, true, time.Millisecond)
	if got := testutil.ToFloat64(m.replicaRequests.WithLabelValues("guard", "0", RuntimeCanceled)); got != 1 {
		t.Errorf("replica canceled: %v", got)
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("guard", RuntimeTimeout)); got != 1 {
		t.Errorf("deployment timeout: %v", got)
	}
}

func TestModelRuntimeBundleWait(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewModelRuntime(reg)
	m.BundleWait("guard", "first", 3*time.Millisecond)
	m.BundleWait("guard", "later", 2*time.Millisecond)
	if n := testutil.CollectAndCount(reg, "router_model_runtime_bundle_wait_seconds"); n != 2 {
		t.Errorf("bundle wait series: %d", n)
	}
}
