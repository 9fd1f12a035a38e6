//go:build !race

package junction

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/inference/ortlib/orttest"
)

// BenchmarkServeSemanticCacheMiss is a gateway request under a real server
// on memoConfig (the example configuration's embedding signal and its
// catch-all decision's exact_then_semantic cache at 0.92, the default GloVe
// embedder through ONNX Runtime, the in-process demo backend), every request
// a new question: a semantic miss that is then stored. off is the same
// configuration without the cache. One client, keep-alive, over loopback:
// the difference of the two is what the cache adds to a request.
func BenchmarkServeSemanticCacheMiss(b *testing.B) {
	orttest.Library(b)
	words := strings.Fields("river garden bicycle kitchen winter violin harbor pencil mountain coffee library " +
		"tractor ocean candle forest museum battery orchard blanket tunnel lantern meadow compass engine")
	for _, c := range []struct{ name, config string }{
		{"off", ""},
		{"exact_then_semantic", memoConfig},
	} {
		b.Run(c.name, func(b *testing.B) {
			config := c.config
			if c.name == "off" {
				// The catch-all decision without its plugins.
				i := strings.Index(memoConfig, "        plugins:")
				config = memoConfig[:i]
			}
			path := filepath.Join(b.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
				b.Fatal(err)
			}
			s, err := New(Options{ConfigPath: path, DataDir: b.TempDir(), ListenerAddrs: map[string]string{"public": "127.0.0.1:0"}, DisableExtproc: true,
				ManagementAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", SignalModels: SignalModelsONNX})
			if err != nil {
				b.Fatal(err)
			}
			errc := make(chan error, 1)
			go func() { errc <- s.Run(context.Background()) }()
			select {
			case <-s.Ready():
			case err := <-errc:
				b.Fatalf("the server did not start: %v", err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_ = s.Shutdown(ctx)
				<-errc
			}()
			url := "http://" + s.GatewayAddr() + "/v1/chat/completions"
			client := &http.Client{}
			ask := func(i int) {
				n := len(words)
				q := fmt.Sprintf("tell me something interesting about the %s near the %s and the %s", words[i%n], words[(i/n)%n], words[(i/n/n)%n])
				resp, err := client.Post(url, "application/json", strings.NewReader(`{"model":"MoM","messages":[{"role":"user","content":"`+q+`"}]}`))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("%d", resp.StatusCode)
				}
			}
			ask(-1 + len(words)*len(words)*len(words)) // warm: models loaded, connection open
			b.ReportAllocs()
			cpu0 := processCPU(b)
			b.ResetTimer()
			for i := range b.N {
				ask(i)
			}
			b.StopTimer()
			// CPU time of the whole process (server and client) a request:
			// less moved than wall time by the other processes of a busy
			// machine.
			b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// processCPU is the user and system CPU time the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
