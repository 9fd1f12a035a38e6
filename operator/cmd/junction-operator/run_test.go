package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// discoveryServer answers the API server's discovery requests (/api, /apis, /apis/GROUP/VERSION) for the
// groups given (group/version → resources), 404 for everything else, and records the paths asked for.
type discoveryServer struct {
	mu      sync.Mutex
	paths   []string
	queries map[string][]string // path → raw queries
}

func (d *discoveryServer) query(path string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.queries[path]...)
}

func (d *discoveryServer) asked(path string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.paths {
		if p == path {
			return true
		}
	}
	return false
}

func startDiscovery(t *testing.T, groups map[string][]map[string]any) (*rest.Config, *discoveryServer) {
	d := &discoveryServer{queries: map[string][]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.paths = append(d.paths, r.URL.Path)
		d.queries[r.URL.Path] = append(d.queries[r.URL.Path], r.URL.RawQuery)
		d.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		var body any
		switch {
		case r.URL.Path == "/api":
			body = map[string]any{"kind": "APIVersions", "versions": []string{"v1"}}
		case r.URL.Path == "/api/v1":
			body = map[string]any{"kind": "APIResourceList", "groupVersion": "v1", "resources": []any{
				resource("pods", "Pod"), resource("configmaps", "ConfigMap"), resource("services", "Service"), resource("events", "Event")}}
		case r.URL.Path == "/apis":
			var list []any
			for gv := range groups {
				g, v, _ := strings.Cut(gv, "/")
				ver := map[string]any{"groupVersion": gv, "version": v}
				list = append(list, map[string]any{"name": g, "versions": []any{ver}, "preferredVersion": ver})
			}
			body = map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": list}
		case strings.HasPrefix(r.URL.Path, "/apis/") && groups[strings.TrimPrefix(r.URL.Path, "/apis/")] != nil:
			gv := strings.TrimPrefix(r.URL.Path, "/apis/")
			body = map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": groups[gv]}
		default:
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}, d
}

func resource(name, kind string) map[string]any {
	return map[string]any{"name": name, "kind": kind, "namespaced": true, "verbs": []string{"get", "list", "watch", "create", "update", "patch", "delete"}}
}

// TestNewManager: the manager `run` makes accepts its options (the pod cache restricted by label, one
// namespace) and sets the controller up on a cluster with Envoy Gateway, whose kind it looks up to watch the
// policies, and on one without.
func TestNewManager(t *testing.T) {
	base := map[string][]map[string]any{"junction-router.io/v1alpha1": {resource("junctionrouters", "JunctionRouter")}}
	withEG := map[string][]map[string]any{
		"junction-router.io/v1alpha1":    {resource("junctionrouters", "JunctionRouter")},
		"gateway.envoyproxy.io/v1alpha1": {resource("envoyextensionpolicies", "EnvoyExtensionPolicy")},
	}
	for _, tc := range []struct {
		name      string
		groups    map[string][]map[string]any
		namespace string
		eg        bool
	}{
		{"without Envoy Gateway", base, "", false},
		{"with Envoy Gateway", withEG, "", true},
		{"one namespace", withEG, "apps", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, d := startDiscovery(t, tc.groups)
			mgr, err := newManager(cfg, managerFlags{metricsAddr: "0", probeAddr: "0", namespace: tc.namespace, skipNameCheck: true})
			if err != nil {
				t.Fatal(err)
			}
			if mgr == nil {
				t.Fatal("no manager")
			}
			if !d.asked("/apis") {
				t.Errorf("the cluster's kinds were not looked up: %v", d.paths)
			}
			// Asked in both cases: absent, the server's 404 is a missing kind, not an error.
			if !d.asked("/apis/gateway.envoyproxy.io/v1alpha1") {
				t.Errorf("Envoy Gateway's kind was not looked up: %v", d.paths)
			}

			// Started, its informers list what the controller watches (the server answers 404; the caches
			// never sync, which is all right here): the router's pods by label only, Envoy Gateway's
			// policies only where the kind exists.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			pods, policies := "/api/v1/pods", "/apis/gateway.envoyproxy.io/v1alpha1/envoyextensionpolicies"
			if tc.namespace != "" {
				pods = "/api/v1/namespaces/" + tc.namespace + "/pods"
				policies = "/apis/gateway.envoyproxy.io/v1alpha1/namespaces/" + tc.namespace + "/envoyextensionpolicies"
			}
			for ctx.Err() == nil && (!d.asked(pods) || (tc.eg && !d.asked(policies))) {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			<-done
			if q := d.query(pods); len(q) == 0 || !strings.Contains(q[0], "labelSelector=app.kubernetes.io%2Fmanaged-by%3Djunction-operator") {
				t.Errorf("pods listed with %q, want the managed-by selector", q)
			}
			if got := d.asked(policies); got != tc.eg {
				t.Errorf("policies watched: %v, want %v (paths %v)", got, tc.eg, d.paths)
			}
		})
	}
}
