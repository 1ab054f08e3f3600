#!/usr/bin/env bash
# Runs one benchmark scenario and prints its figures.
#
#   bench/run.sh SCENARIO CASES [LATENCY_MS] [CONCURRENCY]
#
# SCENARIO: deterministic | llm-judge | code-judge | proxy | tool-loop | mock (see gen_suite.py).
# Starts the fake model server with LATENCY_MS (default 0), generates CASES cases, runs
# `agentv eval` under /usr/bin/time -v with CONCURRENCY workers (default 64), and prints wall
# time, CPU time, peak RSS, requests served, the ideal wall time and per-case figures. The run
# counts only if the server saw exactly the expected number of calls.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
scenario="${1:?scenario}"; cases="${2:?cases}"; latency="${3:-0}"; concurrency="${4:-64}"
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p agentv -p agentv-bench
bin="$root/target/release"
work="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT

script=()
[ "$scenario" = tool-loop ] && script=(--script "$root/bench/tool_script.json")
"$bin/fake-model-server" --latency-ms "$latency" "${script[@]}" > "$work/server.url" &
server=$!
for _ in $(seq 100); do [ -s "$work/server.url" ] && break; sleep 0.05; done
url="$(head -n1 "$work/server.url")"

calls="$(python3 "$root/bench/gen_suite.py" --scenario "$scenario" --cases "$cases" --server "$url" \
  --concurrency "$concurrency" --judge "$bin/bench-judge" --out "$work/suite")"

cd "$work/suite"
/usr/bin/time -v "$bin/agentv" eval suite.jsonl --workers "$concurrency" --out results.jsonl \
  > agentv.stdout 2> agentv.stderr || { tail -20 agentv.stderr; exit 1; }

python3 - "$work/suite" "$url" "$scenario" "$cases" "$latency" "$concurrency" "$calls" <<'PY'
import json, re, sys, urllib.request
suite, url, scenario, cases, latency, concurrency, calls = sys.argv[1:]
cases, latency, concurrency, calls = int(cases), float(latency), int(concurrency), int(calls)
text = open(f"{suite}/agentv.stderr").read()
def field(name):
    m = re.search(rf"{re.escape(name)}: (.+)", text)
    return m.group(1).strip() if m else "0"
def seconds(v):
    parts = [float(p) for p in v.split(":")]
    return sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
wall = seconds(field("Elapsed (wall clock) time (h:mm:ss or m:ss)"))
cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
rss_mb = int(field("Maximum resident set size (kbytes)")) / 1024
served = json.load(urllib.request.urlopen(url + "/stats"))["requests"] if calls else 0
results = sum(1 for _ in open(f"{suite}/results.jsonl"))
expected = cases * calls
ideal = cases * calls * latency / 1000 / concurrency if concurrency else 0
valid = served == expected and results == cases
print(f"scenario={scenario} cases={cases} latency_ms={latency:g} concurrency={concurrency}")
print(f"  wall            {wall:8.3f} s")
print(f"  cpu (user+sys)  {cpu:8.3f} s   ({cpu / cases * 1000:.3f} ms per case)")
print(f"  peak rss        {rss_mb:8.1f} MB")
print(f"  requests        {served} served, {expected} expected; {results} results")
print(f"  ideal wall      {ideal:8.3f} s   (cases x calls x latency / concurrency)")
print(f"  overhead        {(wall - ideal) / cases * 1000:8.3f} ms per case   (wall - ideal) / cases;  wall/ideal = {wall / ideal if ideal else float('nan'):.2f}")
print(f"  RUN {'VALID' if valid else 'INVALID: the server did not see exactly the expected calls'}")
sys.exit(0 if valid else 1)
PY
