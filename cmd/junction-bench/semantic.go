package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-router/junction/cmd/internal/loadrun"
)

// -semantic measures issue 16's semantic-routing figure: the example
// configuration served on the in-process default ONNX models (keyword, pii,
// domain, jailbreak, embedding, complexity and language signals), a one-line
// and a ~500-token prompt at a fixed open-loop rate, Junction's added latency
// over the backend alone and its memory (RSS) after the runs. With -baseline
// an older build is served beside -bin and measured in the same interleaved
// rounds. Every request's prompt differs (a request number at its end), as
// real traffic does: a repeated prompt would find its embedding and tokens
// remembered and measure a cache.
var semantic = flag.Bool("semantic", false, "measure the example configuration on the default ONNX models (issue 16's semantic routing): a one-line and a ~500-token prompt at -rate, Junction (and -baseline) against the backend alone, and each server's RSS; the other scenarios do not run")

// The prompts start with "Urgent" so that they reach urgent_support (keyword
// urgent) rather than general, whose response cache would answer from memory;
// every signal is evaluated either way.
const (
	semanticShort = "Urgent: my order from last week has not arrived yet, when will it be delivered?"
	semanticPara  = "The committee reviewed the quarterly report, which showed that revenue from the new product line " +
		"grew faster than expected while operating costs rose only slightly. Several members asked whether the growth " +
		"would continue once the introductory discounts ended, and the finance director explained that retention in " +
		"the first cohorts had been high. "
)

// semanticLong is about 500 tokens of the default models' tokenizer.
var semanticLong = "Urgent: " + strings.Repeat(semanticPara, 8) +
	"What should the committee prioritise next quarter, which metrics should it watch, and how should it report progress to the board and to the staff who asked about hiring, the warehouse and the supplier?"

// semanticBody returns a request body maker for prompt: each call's prompt
// ends with a new request number.
func semanticBody(prompt string) func() string {
	var n atomic.Int64
	return func() string {
		msg := prompt + " (request " + strconv.FormatInt(n.Add(1), 10) + ")"
		b, _ := json.Marshal(map[string]any{"model": "MoM", "max_tokens": 16, "messages": []map[string]string{
			{"role": "system", "content": "You are helpful."}, {"role": "user", "content": msg}}})
		return string(b)
	}
}

func runSemantic(o options) error {
	src, err := os.ReadFile(o.example)
	if err != nil {
		return fmt.Errorf("-semantic reads the example configuration (-example): %w", err)
	}
	upPort, err := loadrun.FreePort()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "junction-bench-semantic")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	up := loadrun.Pinned(ctx, o.backendCPUs, o.bin, "demo-backend", "--listen", fmt.Sprintf("127.0.0.1:%d", upPort))
	up.Stderr = os.Stderr
	if err := up.Start(); err != nil {
		return err
	}
	defer func() {
		cancel()
		_ = up.Wait()
	}()
	var stderrs []*lockedBuffer
	paths := []path{{"direct to backend", fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", upPort), nil}}
	bins := []string{o.bin}
	if o.baseline != "" {
		bins = append(bins, o.baseline)
	}
	for k, bin := range bins {
		gwPort, err := loadrun.FreePort()
		if err != nil {
			return err
		}
		cfg, err := exampleConfig(string(src), gwPort, upPort)
		if err != nil {
			return err
		}
		logs := &lockedBuffer{}
		stderrs = append(stderrs, logs)
		gw, stop, err := startServe(ctx, o.serverCPUs, bin, dir, "example-"+strconv.Itoa(k), cfg, io.MultiWriter(os.Stderr, logs),
			"--log-level", "warn", "--config-watch", "0")
		if err != nil {
			return err
		}
		defer stop()
		name := "Junction (" + filepath.Base(bin) + ")"
		if k > 0 {
			name = "Junction -baseline (" + filepath.Base(bin) + ")"
		}
		paths = append(paths, path{name, fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", gwPort), gw})
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxIdleConns: 1024,
		IdleConnTimeout: time.Minute, DisableCompression: true}, Timeout: 10 * time.Second}
	prompts := []struct {
		name string
		body func() string
	}{{"one-line prompt", semanticBody(semanticShort)}, {"~500-token prompt", semanticBody(semanticLong)}}
	for _, p := range paths {
		if err := waitUp(client, p.url, prompts[0].body()); err != nil {
			return err
		}
	}
	for i, p := range paths[1:] {
		// Without ONNX Runtime or the models a server falls back to the
		// lexical models with a warning, and would measure something else.
		if logs := stderrs[i].String(); strings.Contains(logs, "lexical fallbacks") {
			return fmt.Errorf("%s serves the lexical fallbacks, not the ONNX models (set JUNCTION_ONNXRUNTIME_LIB or run `make onnxruntime`)", p.name)
		}
		for _, pr := range prompts {
			if err := checkDecision(client, p.url, pr.body(), "urgent_support"); err != nil {
				return fmt.Errorf("%s, %s: %w", p.name, pr.name, err)
			}
		}
	}
	send := func(url string, body func() string) func() (time.Duration, bool) {
		return loadrun.Timed(func() bool { return post(client, url, body()) })
	}
	for _, pr := range prompts {
		for _, p := range paths {
			loadrun.OpenLoop(send(p.url, pr.body), o.rate, time.Second)
		}
	}
	n := len(paths)
	type series struct{ p50, p99, add50, add99, cpu []float64 }
	res := make([][]series, len(prompts))
	for i := range res {
		res[i] = make([]series, n)
	}
	for r := 0; r < o.rounds; r++ {
		for pi, pr := range prompts {
			got := make([]loadrun.Sample, n)
			line := fmt.Sprintf("round %d, %s:", r+1, pr.name)
			for k := 0; k < n; k++ {
				i := (r + k) % n
				pid := 0
				if paths[i].proc != nil {
					pid = paths[i].proc.Process.Pid
				}
				c0 := loadrun.ProcCPU(pid)
				s := loadrun.OpenLoop(send(paths[i].url, pr.body), o.rate, o.dur)
				c1 := loadrun.ProcCPU(pid)
				if s.Errors > 0 {
					return fmt.Errorf("round %d, %s, %s: %d of %d requests failed", r+1, pr.name, paths[i].name, s.Errors, len(s.Lat))
				}
				got[i] = s
				res[pi][i].cpu = append(res[pi][i].cpu, float64((c1-c0).Microseconds())/float64(len(s.Lat)))
			}
			for i, p := range paths {
				s := &res[pi][i]
				s.p50, s.p99 = append(s.p50, got[i].P(.5)), append(s.p99, got[i].P(.99))
				s.add50, s.add99 = append(s.add50, got[i].P(.5)-got[0].P(.5)), append(s.add99, got[i].P(.99)-got[0].P(.99))
				line += fmt.Sprintf(" %s p50 %.0f p99 %.0f (late p99 %.0f) |", p.name, got[i].P(.5), got[i].P(.99), got[i].LateP99)
			}
			fmt.Println(strings.TrimSuffix(line, " |"))
		}
	}
	med := loadrun.Median
	fmt.Printf("\nexample configuration on the default ONNX models: %d interleaved rounds of %s at %d req/s per path and prompt, open loop; medians of rounds; µs\n\n",
		o.rounds, o.dur, o.rate)
	fmt.Printf("| path | prompt | p50 | p99 | added p50 | added p99 | server CPU per request |\n|---|---|---:|---:|---:|---:|---:|\n")
	for i, p := range paths {
		for pi, pr := range prompts {
			s := res[pi][i]
			if i == 0 {
				fmt.Printf("| %s | %s | %.0f | %.0f | | | |\n", p.name, pr.name, med(s.p50), med(s.p99))
				continue
			}
			fmt.Printf("| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f |\n", p.name, pr.name, med(s.p50), med(s.p99), med(s.add50), med(s.add99), med(s.cpu))
		}
	}
	fmt.Printf("\n| server | RSS after the runs | peak RSS |\n|---|---:|---:|\n")
	for _, p := range paths[1:] {
		rss, hwm := procMemory(p.proc.Process.Pid)
		fmt.Printf("| %s | %s | %s |\n", p.name, rss, hwm)
	}
	return nil
}

// lockedBuffer collects a server's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// procMemory reads a process's resident set now and at its peak (VmRSS,
// VmHWM) from /proc, in MB; "?" where /proc cannot tell.
func procMemory(pid int) (rss, peak string) {
	rss, peak = "?", "?"
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			rss = fmt.Sprintf("%.0f MB", kb/1024)
		case "VmHWM:":
			peak = fmt.Sprintf("%.0f MB", kb/1024)
		}
	}
	return
}
