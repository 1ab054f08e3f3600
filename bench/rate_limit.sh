#!/usr/bin/env bash
# Adaptive concurrency against a rate-limited provider, next to a fixed-worker run.
#
#   bench/rate_limit.sh [CASES] [WORKERS] [RPS] [LATENCY_MS]     (default 2000 64 20 50)
#
# Starts the fake model server behind a token bucket of RPS requests a second (burst RPS, 429
# beyond, OpenAI's rate-limit headers), then runs the same CASES-case suite twice with WORKERS
# workers: adaptive (the default) and fixed (`adaptive_concurrency: false`, per-request retries
# only). Prints, for each: wall against the bucket's ideal time ((CASES - burst) / RPS), requests
# rejected (all, and after the first 5 s) and cases that ended without an answer.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cases="${1:-2000}"; workers="${2:-64}"; rps="${3:-20}"; latency="${4:-50}"
# PROFILE=debug uses the debug build (agentv's own cost does not matter at 20 requests/s).
profile="${PROFILE:-release}"
if [ "$profile" = release ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p agentv -p agentv-bench
else
  cargo build --quiet --manifest-path "$root/Cargo.toml" -p agentv -p agentv-bench
fi
bin="$root/target/$profile"
work="$(mktemp -d)"
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT

python3 - "$work" "$cases" <<'PY'
import sys
work, n = sys.argv[1], int(sys.argv[2])
with open(f"{work}/e.yaml", "w") as f:
    f.write("execution:\n  evaluators: [{name: kw, type: keywords, expected: ['4']}]\nevalcases:\n")
    for i in range(n):
        f.write(f"  - {{id: c{i}, expected_outcome: x, input_messages: [{{role: user, content: q{i}}}]}}\n")
PY

for mode in adaptive fixed; do
  "$bin/fake-model-server" --latency-ms "$latency" --rps "$rps" > "$work/server.url" &
  server=$!
  for _ in $(seq 100); do [ -s "$work/server.url" ] && break; sleep 0.05; done
  url="$(head -n1 "$work/server.url")"
  adaptive=true; [ "$mode" = fixed ] && adaptive=false
  printf 'targets:\n  - name: default\n    provider: openai\n    base_url: %s/v1\n    model: m\n    api_key: k\n    adaptive_concurrency: %s\n' \
    "$url" "$adaptive" > "$work/targets.yaml"
  start=$(date +%s.%N)
  (cd "$work" && "$bin/agentv" eval e.yaml --workers "$workers" --out "r-$mode.jsonl" > "out-$mode.txt" 2> "err-$mode.txt") || true
  end=$(date +%s.%N)
  python3 - "$work" "$mode" "$url" "$start" "$end" "$cases" "$rps" <<'PY'
import json, sys, urllib.request
work, mode, url, start, end, cases, rps = sys.argv[1:]
cases, rps = int(cases), float(rps)
wall = float(end) - float(start)
b = json.load(urllib.request.urlopen(url + "/stats"))["bucket"]
ideal = max(cases - b["burst"], 0) / rps
records = [json.loads(l) for l in open(f"{work}/r-{mode}.jsonl")]
lost = sum(1 for r in records if r.get("execution_status") != "ok") + (cases - len(records))
late = b["late_requests"] or 1
print(f"{mode:9} wall {wall:7.1f} s = {wall / ideal:.2f} x ideal {ideal:.1f} s; "
      f"requests {b['requests']}, rejected {b['rejected']} ({b['rejected'] / b['requests']:.1%}), "
      f"after 5 s {b['late_rejected']} of {b['late_requests']} ({b['late_rejected'] / late:.1%}); "
      f"cases without an answer {lost}")
PY
  grep -h "Rate limits" "$work/err-$mode.txt" || true
  kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; server=""
done
