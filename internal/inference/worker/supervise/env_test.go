package supervise_test

import (
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/inference/worker/supervise"
)

func TestOptionsFromEnv(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	o, err := supervise.OptionsFromEnv(get, []string{"./m"}, false)
	if err != nil || !strings.Contains(strings.Join(o.Args, " "), "--result-cache-entries 4096") || o.Args[len(o.Args)-1] != "./m" {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	for cpus, want := range map[int]int{1: 1, 2: 1, 8: 4, 64: 16} {
		if got := supervise.DefaultThreads(cpus); got != want {
			t.Errorf("DefaultThreads(%d) = %d, want %d", cpus, got, want)
		}
	}
	env = map[string]string{supervise.EnvCommand: "/opt/junction worker", supervise.EnvThreads: "3", supervise.EnvReadyTimeout: "30s",
		supervise.EnvCacheDir: "/var/cache/j", supervise.EnvResultCache: "10"}
	o, err = supervise.OptionsFromEnv(get, []string{"a", "b"}, true)
	args := strings.Join(o.Args, " ")
	if err != nil || o.Command[0] != "/opt/junction" || o.ReadyTimeout != 30*time.Second ||
		args != "--threads 3 --result-cache-entries 0 --cache-dir /var/cache/j a b" {
		t.Fatalf("from env: %+v %v", o, err)
	}
	for k, v := range map[string]string{supervise.EnvThreads: "0", supervise.EnvReadyTimeout: "soon", supervise.EnvResultCache: "-1",
		supervise.EnvAutotuneCache: "/var/cache/tune"} {
		env = map[string]string{k: v}
		if _, err := supervise.OptionsFromEnv(get, nil, false); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}
