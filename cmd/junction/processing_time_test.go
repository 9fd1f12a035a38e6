package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// x-processing-time and routing_metadata.processing_time_ms are one number in one unit (whole milliseconds,
// as the spec types the field) on a real request through serve's gateway.
func TestProcessingTimeHeaderAndFieldAgree(t *testing.T) {
	port, apiPort, mport := freePort(t), freePort(t), freePort(t)
	cfg := writeFile(t, fmt.Sprintf(`version: v1
listeners: [{name: public, address: 127.0.0.1, port: %d}]
providers:
  defaults: {default_model: small}
  models:
    - {name: small, backend_refs: [{provider: demo}]}
recipes:
  - name: default
    decisions: [{name: all, rules: {operator: AND, conditions: []}, modelRefs: [{model: small}]}]
global:
  services:
    management_api: {address: 127.0.0.1, port: %d}
    observability: {metrics: {address: 127.0.0.1, port: %d}}
`, port, apiPort, mport))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--data-dir", t.TempDir(), "--config", cfg, "--extproc=false", "--signal-models", "lexical", "--log-level", "warn"}, io.Discard, io.Discard)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d", code)
		}
	}()
	waitReady(t, fmt.Sprintf("http://127.0.0.1:%d", apiPort))
	for i := range 20 {
		prompt := strings.Repeat("Explain the difference between a list and a tuple. ", 1+i*20)
		body, _ := json.Marshal(map[string]any{"model": "MoM", "messages": []map[string]string{{"role": "user", "content": prompt}}})
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", port), "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			RoutingMetadata struct {
				ProcessingTimeMS *json.Number `json:"processing_time_ms"`
			} `json:"routing_metadata"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		header := resp.Header.Get("x-processing-time")
		if err != nil || resp.StatusCode != 200 || out.RoutingMetadata.ProcessingTimeMS == nil {
			t.Fatalf("request %d: %d, %v, routing_metadata %+v", i, resp.StatusCode, err, out.RoutingMetadata)
		}
		field := out.RoutingMetadata.ProcessingTimeMS.String()
		if _, err := strconv.ParseInt(field, 10, 64); err != nil {
			t.Errorf("request %d: processing_time_ms %s is not an integer (the spec's type)", i, field)
		}
		if header != field {
			t.Errorf("request %d: x-processing-time %q, routing_metadata.processing_time_ms %s: two numbers for one measurement", i, header, field)
		}
	}
}
