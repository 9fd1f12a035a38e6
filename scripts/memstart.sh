#!/usr/bin/env bash
# memstart.sh BIN CONFIG [serve flags...] — start-up time and memory of `BIN serve` on a copy of CONFIG
# (docs/benchmarks.md, "Memory and start-up (issue 16)"). CONFIG "bench" is junction-bench's model-free
# configuration: recipes/examples/bench.yaml (keywords, pii, context; a refund decision with system_prompt
# and header_mutation) over two models; run from the repository root.
#
# The copy gets free ports in place of 8801, 8080, 9190 and 50051 and a fresh data directory, so the
# original is never rewritten and the run does not collide with another server. Prints one line:
#   ready_ms   from the exec to the first /ready 200 on the management API (curl every 10 ms)
#   cpu_ms     user+system CPU the process used until then (a busy machine stretches ready_ms, not this)
#   rss_mb     VmRSS/RssAnon/RssFile in MB once ready, and again after 20 routed requests (answered 502:
#              no backend). RssFile is the binary's and libraries' pages: clean, shared with the page cache.
#   hwm_mb     VmHWM after the requests: the peak RSS of the whole run, start-up included (what a memory
#              limit must allow; on a cold start it is the cache build's peak, not the steady state).
# With SMAPS=1 it also prints the resident MB of each mapping over 1 MB (/proc/PID/smaps: the binary's
# pages, ONNX Runtime's library, [anon] = Go heap, wazero code, ORT's allocations).
# Warm: run it twice and read the second line (the compiled plugin cache and the written default
# models are on disk after the first). Cold: XDG_CACHE_HOME=$(mktemp -d) and drop the page cache.
set -euo pipefail
bin=$1 cfg=$2
shift 2
dir=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
free() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
gw=$(free) mg=$(free) me=$(free) ep=$(free)
if [ "$cfg" = bench ]; then
	cfg=$dir/bench.yaml
	cat >"$cfg" <<'YAML'
version: v1
listeners:
  - {name: bench, address: 127.0.0.1, port: 8801, timeout: 30s}
providers:
  defaults: {default_model: small}
  models:
    - {name: small, backend_refs: [{base_url: "http://127.0.0.1:9/v1", provider: openai}]}
    - {name: big, backend_refs: [{base_url: "http://127.0.0.1:9/v1", provider: openai}]}
global:
  services:
    management_api: {address: 127.0.0.1, port: 8080}
    observability:
      metrics: {address: 127.0.0.1, port: 9190}
  extproc: {address: 127.0.0.1, port: 50051}
YAML
	cat recipes/examples/bench.yaml >>"$cfg"
fi
sed -e "s/port: 8801/port: $gw/" -e "s/port: 8080/port: $mg/" -e "s/port: 9190/port: $me/" -e "s/port: 50051/port: $ep/" "$cfg" >"$dir/config.yaml"
start=$(date +%s%N)
"$bin" serve --config "$dir/config.yaml" --data-dir "$dir/data" --log-level "${LEVEL:-error}" \
	--management "127.0.0.1:$mg" --config-watch 0 "$@" >"$dir/log" 2>&1 &
pid=$!
until curl -sf -o /dev/null "http://127.0.0.1:$mg/ready"; do
	kill -0 "$pid" 2>/dev/null || { cat "$dir/log"; exit 1; }
	sleep 0.01
done
ready=$((($(date +%s%N) - start) / 1000000))
# CPU the process used until ready (user+system, all threads): less sensitive to a busy machine than ready_ms.
cpu=$(awk -v hz="$(getconf CLK_TCK)" '{print int(($14+$15)*1000/hz)}' "/proc/$pid/stat")
rss() { awk '/^(VmRSS|RssAnon|RssFile):/{printf "%s%d", sep, $2/1024; sep="/"}' "/proc/$pid/status"; }
rss0=$(rss)
for _ in $(seq 20); do
	curl -s -o /dev/null -H 'content-type: application/json' \
		-d '{"model":"MoM","messages":[{"role":"user","content":"I was charged twice, I want a refund. What is the derivative of x^2?"}]}' \
		"http://127.0.0.1:$gw/v1/chat/completions" || true
done
sleep 0.5
[ -n "${LEVEL:-}" ] && cut -c1-200 "$dir/log" | grep -v 'msg=request'
hwm=$(awk '/^VmHWM:/{print int($2/1024)}' "/proc/$pid/status")
echo "ready_ms=$ready cpu_ms=$cpu rss_ready_mb=$rss0 rss_after_requests_mb=$(rss) hwm_mb=$hwm"
if [ -n "${SMAPS:-}" ]; then
	awk '/^[0-9a-f]+-[0-9a-f]+ /{name=$6; if(name=="")name="[anon]"} /^Rss:/{r[name]+=$2}
		END{for(n in r) if(r[n]>1024) printf "%8.1f MB %s\n", r[n]/1024, n}' "/proc/$pid/smaps" | sort -rn
fi
