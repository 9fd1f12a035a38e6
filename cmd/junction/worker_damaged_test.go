package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
	"github.com/junction-router/junction/internal/inference/synthetic"
)

// A damaged model package (model.onnx that is not an ONNX graph, a
// tokenizer.json cut short) fails on its first load and is not retried,
// whatever --load-attempts allows (spec 001, states and transitions: "a
// damaged package or failed self-check is not retried").
func TestWorkerDoesNotRetryADamagedPackage(t *testing.T) {
	orttest.Library(t)
	for _, c := range []struct{ file, content string }{
		{"model.onnx", "not an onnx graph"},
		{"tokenizer.json", `{"version": "1.0", "model": {"type": "WordPiece", "vocab": {"[UNK]": 0,`},
	} {
		t.Run(c.file, func(t *testing.T) { workerDoesNotRetry(t, c.file, c.content) })
	}
}

func workerDoesNotRetry(t *testing.T, file, content string) {
	dir := filepath.Join(t.TempDir(), "guard")
	if _, err := synthetic.Write(dir, synthetic.Spec{Task: synthetic.SequenceClassification, Labels: []string{"benign", "jailbreak"}, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(freePort(t))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	stderr := &syncWriter{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"worker", "--port", port, "--threads", "1", "--load-attempts", "5", "--load-retry-seconds", "0.05", dir}, &bytes.Buffer{}, stderr)
	}()
	var health struct {
		Status string `json:"status"`
		Models map[string]struct {
			Status   string `json:"status"`
			Attempts int    `json:"attempts"`
		} `json:"models"`
	}
	exited := false
	for !exited {
		select {
		case <-done:
			exited = true
			continue
		case <-ctx.Done():
			t.Fatalf("worker neither failed nor exited: %s", stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		resp, err := http.Get("http://127.0.0.1:" + port + "/health")
		if err != nil {
			continue
		}
		json.NewDecoder(resp.Body).Decode(&health)
		resp.Body.Close()
		if health.Status == "failed" {
			break
		}
	}
	// Wait past the retries the attempt limit would allow: none may come.
	time.Sleep(300 * time.Millisecond)
	cancel()
	if !exited {
		<-done
	}
	log := stderr.String()
	if strings.Contains(log, "retrying") || strings.Contains(log, "attempt 2") {
		t.Fatalf("a damaged package was retried:\n%s", log)
	}
	if !strings.Contains(log, "damaged") {
		t.Fatalf("the log does not say the package is damaged:\n%s", log)
	}
	for name, m := range health.Models {
		if m.Attempts > 1 {
			t.Errorf("model %s: %d attempts", name, m.Attempts)
		}
	}
}
