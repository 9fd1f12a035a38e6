package supervise

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Environment variables that configure router-managed workers.
const (
	EnvCommand      = "JUNCTION_WORKER_COMMAND"       // worker command line (space-separated); default: this binary's `worker`
	EnvDir          = "JUNCTION_WORKER_DIR"           // socket and models-file directory; default: a private temporary directory
	EnvCacheDir     = "JUNCTION_WORKER_CACHE_DIR"     // the workers' --cache-dir
	EnvThreads      = "JUNCTION_WORKER_THREADS"       // CPU threads per managed worker
	EnvReadyTimeout = "JUNCTION_WORKER_READY_TIMEOUT" // how long to wait for ready (Go duration; default 10m)
	EnvResultCache  = "JUNCTION_WORKER_RESULT_CACHE"  // --result-cache-entries of managed workers (default 4096; 0 disables)
	// EnvAutotuneCache is the workers' --autotune-cache (kernel autotuning
	// cache). This build's workers do no kernel autotuning, so setting it
	// is refused rather than ignored.
	EnvAutotuneCache = "JUNCTION_WORKER_AUTOTUNE_CACHE"
	// EnvHubToken is the access token for gated or private hub
	// repositories. It reaches managed workers only through their
	// environment (which they inherit), never their arguments, and is never
	// logged. This build's workers never download, so it is not read.
	EnvHubToken = "JUNCTION_HUB_TOKEN"
)

// DefaultThreads is the CPU threads a managed worker gets when EnvThreads is
// not set: half of the CPU budget rounded down, at least 1, at most 16.
func DefaultThreads(cpus int) int { return min(max(cpus/2, 1), 16) }

// CPUBudget is the CPUs this process may use: GOMAXPROCS, which follows the
// CPU affinity mask and a container's CPU limit (and an explicit
// $GOMAXPROCS), so that workers under a quota are not oversubscribed.
func CPUBudget() int { return runtime.GOMAXPROCS(0) }

// OptionsFromEnv builds managed-worker options from the environment (getenv
// is os.Getenv in production) for the worker arguments models. Pools of
// several workers should bypass the result cache (pass pool true).
func OptionsFromEnv(getenv func(string) string, models []string, pool bool) (Options, error) {
	var o Options
	if c := strings.TrimSpace(getenv(EnvCommand)); c != "" {
		o.Command = strings.Fields(c)
	}
	o.Dir = getenv(EnvDir)
	if v := getenv(EnvAutotuneCache); v != "" {
		return o, fmt.Errorf("$%s=%q: this build's workers do no kernel autotuning (ONNX Runtime chooses its kernels), so there is nothing to cache; unset it", EnvAutotuneCache, v)
	}
	threads := DefaultThreads(CPUBudget())
	if v := getenv(EnvThreads); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return o, fmt.Errorf("$%s=%q: give a number of threads ≥ 1", EnvThreads, v)
		}
		threads = n
	}
	cache := 4096
	if v := getenv(EnvResultCache); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return o, fmt.Errorf("$%s=%q: give a number of entries ≥ 0 (0 disables)", EnvResultCache, v)
		}
		cache = n
	}
	if pool {
		cache = 0
	}
	if v := getenv(EnvReadyTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("$%s=%q: give a duration such as 10m", EnvReadyTimeout, v)
		}
		o.ReadyTimeout = d
	}
	o.Args = append(o.Args, "--threads", strconv.Itoa(threads), "--result-cache-entries", strconv.Itoa(cache))
	if v := getenv(EnvCacheDir); v != "" {
		o.Args = append(o.Args, "--cache-dir", v)
	}
	o.Args = append(o.Args, models...)
	return o, nil
}
