package extproc_test

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/junction-router/junction/internal/extproc"
	"github.com/junction-router/junction/internal/extproc/envoytest"
	"github.com/junction-router/junction/recipes"
)

const (
	exampleEnvoy  = "../../examples/envoy/envoy.yaml"
	exampleConfig = "../../recipes/testdata/example-config.yaml"
)

// loadEnvoy reads an Envoy bootstrap file into Envoy's own types (every
// typed_config resolved) and validates it with Envoy's validation rules.
func loadEnvoy(t *testing.T, path string) *bootstrapv3.Bootstrap {
	t.Helper()
	y, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatalf("%s is not YAML: %v", path, err)
	}
	var b bootstrapv3.Bootstrap
	if err := (protojson.UnmarshalOptions{}).Unmarshal(j, &b); err != nil {
		t.Fatalf("%s is not an Envoy v3 bootstrap: %v", path, err)
	}
	if err := b.ValidateAll(); err != nil {
		t.Fatalf("%s fails Envoy's validation: %v", path, err)
	}
	return &b
}

// TestExampleEnvoyConfig holds examples/envoy/envoy.yaml to what Junction
// needs from Envoy, and checks that it routes every model of the example
// configuration to that model's backend.
func TestExampleEnvoyConfig(t *testing.T) {
	b := loadEnvoy(t, exampleEnvoy)
	ls := b.GetStaticResources().GetListeners()
	if len(ls) != 1 || ls[0].GetAddress().GetSocketAddress().GetPortValue() != 8801 {
		t.Fatalf("want one listener on 8801: %v", ls)
	}
	var hcm hcmv3.HttpConnectionManager
	if err := ls[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	if err := hcm.ValidateAll(); err != nil {
		t.Fatalf("http_connection_manager: %v", err)
	}
	filters := hcm.GetHttpFilters()
	if len(filters) != 2 || filters[0].GetName() != "envoy.filters.http.ext_proc" || filters[1].GetName() != "envoy.filters.http.router" {
		t.Fatalf("http filters %v", filters)
	}
	var ep extprocfilterv3.ExternalProcessor
	if err := filters[0].GetTypedConfig().UnmarshalTo(&ep); err != nil {
		t.Fatal(err)
	}
	if err := ep.ValidateAll(); err != nil {
		t.Fatalf("ext_proc filter: %v", err)
	}
	pm := ep.GetProcessingMode()
	if !ep.GetAllowModeOverride() || ep.GetFailureModeAllow() || ep.GetMessageTimeout().AsDuration() <= 0 ||
		pm.GetRequestBodyMode() != extprocfilterv3.ProcessingMode_BUFFERED || pm.GetResponseHeaderMode() == extprocfilterv3.ProcessingMode_SKIP ||
		pm.GetResponseBodyMode() != extprocfilterv3.ProcessingMode_BUFFERED {
		t.Errorf("ext_proc filter %v", &ep)
	}
	if !ep.GetMutationRules().GetAllowEnvoy().GetValue() {
		t.Error("mutation_rules.allow_envoy must be true: Junction sets the router's retry and timeout headers (x-envoy-*)")
	}
	clusters := map[string]*clusterv3.Cluster{}
	for _, c := range b.GetStaticResources().GetClusters() {
		clusters[c.GetName()] = c
	}
	jc := clusters[ep.GetGrpcService().GetEnvoyGrpc().GetClusterName()]
	if jc == nil || endpointPort(jc) != 50051 {
		t.Fatalf("the ext_proc cluster must reach Junction on 50051: %v", jc)
	}
	var hpo httpv3.HttpProtocolOptions
	if err := jc.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].UnmarshalTo(&hpo); err != nil ||
		hpo.GetExplicitHttpConfig().GetHttp2ProtocolOptions() == nil {
		t.Errorf("the ext_proc cluster must speak HTTP/2 (gRPC): %v", err)
	}
	if hc := jc.GetHealthChecks(); len(hc) != 1 || hc[0].GetGrpcHealthCheck().GetServiceName() != extproc.ServiceName {
		t.Errorf("health check %v", hc)
	}

	// Every model of the example configuration is routed on x-selected-model
	// to a cluster at its backend's port.
	doc, _, err := recipes.LoadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	vh := hcm.GetRouteConfig().GetVirtualHosts()[0]
	for _, m := range doc.Providers.Models {
		r := matchRoute(vh.GetRoutes(), envoytest.H("x-selected-model", m.Name))
		if r == nil || r.GetRoute() == nil {
			t.Errorf("model %s: no route", m.Name)
			continue
		}
		u, _ := url.Parse(m.BackendRefs[0].BaseURL)
		port, _ := strconv.Atoi(u.Port())
		c := clusters[r.GetRoute().GetCluster()]
		if c == nil || endpointPort(c) != uint32(port) {
			t.Errorf("model %s routes to cluster %q, not to its backend port %d", m.Name, r.GetRoute().GetCluster(), port)
		}
		if r.GetRoute().GetIdleTimeout().AsDuration() <= 0 {
			t.Errorf("model %s: no idle timeout", m.Name)
		}
		if hp := r.GetRoute().GetRetryPolicy().GetRetryHostPredicate(); len(hp) != 1 || hp[0].GetName() != "envoy.retry_host_predicates.previous_hosts" {
			t.Errorf("model %s: retries must go to another host of the cluster (previous_hosts): %v", m.Name, hp)
		}
	}
	if r := matchRoute(vh.GetRoutes(), nil); r == nil || r.GetDirectResponse() == nil {
		t.Error("a request Junction did not route must not reach a model")
	}
}

// TestExampleEnvoyRoutesWhatJunctionDecides plays the example deployment:
// the harness configured as envoy.yaml's ext_proc filter, Junction serving
// the example configuration, and envoy.yaml's routes picking the cluster
// from the headers Junction set.
func TestExampleEnvoyRoutesWhatJunctionDecides(t *testing.T) {
	b := loadEnvoy(t, exampleEnvoy)
	var hcm hcmv3.HttpConnectionManager
	if err := b.GetStaticResources().GetListeners()[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	routes := hcm.GetRouteConfig().GetVirtualHosts()[0].GetRoutes()
	y, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *envOptions) { o.edit = func(string) string { return string(y) } })
	for prompt, want := range map[string]string{
		"This is urgent, please call back":                    "small",
		"Write a Python function that reverses a linked list": "coder",
		"Hello there": "small",
	} {
		s, err := e.client.Open(context.Background(), envoytest.Standard)
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.SendRequest(chat(userBody(prompt)))
		if err != nil {
			t.Fatal(err)
		}
		if out.Immediate != nil || !out.ClearRouteCache {
			t.Fatalf("%q: not routed (%v)", prompt, out.Immediate)
		}
		r := matchRoute(routes, out.Upstream.Headers)
		if r == nil || r.GetRoute().GetCluster() != want {
			t.Errorf("%q: Envoy would route to %v, want %s", prompt, r, want)
		}
		if want == "coder" && out.Upstream.Headers.Get(":path") != "/v1/chat/completions" {
			t.Errorf("coder path %q", out.Upstream.Headers.Get(":path"))
		}
		s.Abort()
	}
}

func endpointPort(c *clusterv3.Cluster) uint32 {
	for _, e := range c.GetLoadAssignment().GetEndpoints() {
		for _, lb := range e.GetLbEndpoints() {
			return lb.GetEndpoint().GetAddress().GetSocketAddress().GetPortValue()
		}
	}
	return 0
}

// matchRoute picks the first route whose prefix and exact header matchers
// hold for h, as Envoy does for these simple matchers.
func matchRoute(routes []*routev3.Route, h envoytest.Headers) *routev3.Route {
	path := h.Get(":path")
	if path == "" {
		path = "/v1/chat/completions"
	}
next:
	for _, r := range routes {
		if !strings.HasPrefix(path, r.GetMatch().GetPrefix()) {
			continue
		}
		for _, hm := range r.GetMatch().GetHeaders() {
			if h.Get(hm.GetName()) != hm.GetStringMatch().GetExact() || !h.Has(hm.GetName()) {
				continue next
			}
		}
		return r
	}
	return nil
}
