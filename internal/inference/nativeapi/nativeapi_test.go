package nativeapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/inference/nativeapi"
	"github.com/junction-router/junction/internal/inference/worker/client"
)

// worker answers POST /v1/decisions with what answer returns, after
// recording the model the request named.
func worker(t *testing.T, answer func(model string) (int, string)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model string `json:"model"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("the worker got %q", b)
		}
		code, out := answer(body.Model)
		w.WriteHeader(code)
		_, _ = io.WriteString(w, out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func pool(t *testing.T, url, model string, ready bool) *client.Pool {
	p, err := client.New(client.Options{Deployment: "guard", Replicas: []client.Replica{{Name: "0", HTTP: http.DefaultClient, BaseURL: url, Model: model}}})
	if err != nil {
		t.Fatal(err)
	}
	p.SetReady(0, ready)
	return p
}

func post(t *testing.T, h http.Handler, body string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/decisions", strings.NewReader(body)))
	return rec.Code, rec.Body.String()
}

func TestForwardRenamesBothWays(t *testing.T) {
	var seen string
	w := worker(t, func(m string) (int, string) {
		seen = m
		return 200, `{"object":"decisions","model":"jailbreak-glove","answers":{}}`
	})
	h, err := nativeapi.New(nativeapi.Options{Deployments: []nativeapi.Deployment{{Name: "guard", Pool: pool(t, w.URL, "jailbreak-glove", true)}}})
	if err != nil {
		t.Fatal(err)
	}
	code, body := post(t, h, `{"model":"guard","state":"x","questions":{}}`)
	if code != 200 || seen != "jailbreak-glove" || !strings.Contains(body, `"model":"guard"`) {
		t.Errorf("%d %s (worker saw model %q)", code, body, seen)
	}
	// A named head goes to the worker as it is.
	if code, _ = post(t, h, `{"model":"guard/other-head","state":"x","questions":{}}`); code != 200 || seen != "other-head" {
		t.Errorf("head: %d, worker saw %q", code, seen)
	}
}

func TestFailures(t *testing.T) {
	for name, c := range map[string]struct {
		status   int
		answer   string
		ready    bool
		wantCode int
		wantErr  string
	}{
		"overloaded passes through": {429, `{"error":{"code":"overloaded","message":"queue full"}}`, true, 429, `"overloaded"`},
		"not ready":                 {200, `{}`, false, 503, `"not_ready"`},
		"not JSON":                  {200, `[1,2]`, true, 502, `"worker_error"`},
		"worker 500 without a body": {500, ``, true, 500, `"worker_error"`},
	} {
		t.Run(name, func(t *testing.T) {
			w := worker(t, func(string) (int, string) { return c.status, c.answer })
			h, err := nativeapi.New(nativeapi.Options{Deployments: []nativeapi.Deployment{{Name: "guard", Pool: pool(t, w.URL, "m", c.ready)}}})
			if err != nil {
				t.Fatal(err)
			}
			code, body := post(t, h, `{"model":"guard","state":"x","questions":{}}`)
			if code != c.wantCode || !strings.Contains(body, c.wantErr) {
				t.Errorf("%d %s", code, body)
			}
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	p := pool(t, "http://127.0.0.1:1", "m", true)
	for name, o := range map[string]nativeapi.Options{
		"empty key":         {Deployments: []nativeapi.Deployment{{Name: "a", Pool: p}}, Keys: []nativeapi.Key{{Name: "k", Models: []string{"a"}}}},
		"unpublished grant": {Deployments: []nativeapi.Deployment{{Name: "a", Pool: p}}, Keys: []nativeapi.Key{{Name: "k", Token: "t", Models: []string{"b"}}}},
		"twice":             {Deployments: []nativeapi.Deployment{{Name: "a", Pool: p}, {Name: "a", Pool: p}}},
	} {
		if _, err := nativeapi.New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
