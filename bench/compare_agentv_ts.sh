#!/usr/bin/env bash
# Head-to-head with the TypeScript AgentV (npm `agentv`) on the same machine and fake server.
#
#   bench/compare_agentv_ts.sh CASES [LATENCY_MS] [WORKERS]
#
# Both tools get equivalent suites: CASES one-turn cases graded by a deterministic "contains 4"
# check, one OpenAI-compatible model call per case. Installs agentv@4.42.4 from npm into
# $AGENTV_TS_DIR (default /tmp/agentv-ts) on first use.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cases="${1:?cases}"; latency="${2:-0}"; workers="${3:-64}"
ts_dir="${AGENTV_TS_DIR:-/tmp/agentv-ts}"
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }
if [ ! -x "$ts_dir/node_modules/.bin/agentv" ]; then
  mkdir -p "$ts_dir" && (cd "$ts_dir" && npm install --silent --no-audit --no-fund agentv@4.42.4 >/dev/null 2>&1)
fi
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p agentv -p agentv-bench
work="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
"$root/target/release/fake-model-server" --latency-ms "$latency" > "$work/url" &
server=$!
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.05; done
url="$(head -n1 "$work/url")"

measure() { # name dir command...
  local name="$1" dir="$2"; shift 2
  local before; before="$(python3 -c "import json,urllib.request; print(json.load(urllib.request.urlopen('$url/stats'))['requests'])")"
  (cd "$dir" && BENCH_KEY=k BENCH_MODEL=bench-model /usr/bin/time -v "$@" > out.txt 2> time.txt) || true
  python3 - "$dir/time.txt" "$name" "$url" "$before" "$cases" <<'PY'
import json, re, sys, urllib.request
path, name, url, before, cases = sys.argv[1:]
t = open(path).read()
f = lambda k: re.search(rf"{re.escape(k)}: (.+)", t).group(1).strip()
wall = sum(float(p) * 60 ** i for i, p in enumerate(reversed(f("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":"))))
cpu = float(f("User time (seconds)")) + float(f("System time (seconds)"))
rss = int(f("Maximum resident set size (kbytes)")) / 1024
served = json.load(urllib.request.urlopen(url + "/stats"))["requests"] - int(before)
n = int(cases)
print(f"{name:<22} wall {wall:7.2f} s   cpu {cpu:7.2f} s ({cpu / n * 1000:6.2f} ms/case)   peak rss {rss:7.1f} MB   requests {served}/{n}")
PY
}

mkdir -p "$work/rs" "$work/ts"
python3 "$root/bench/gen_suite.py" --scenario deterministic --cases "$cases" --server "$url" --concurrency "$workers" --out "$work/rs" > /dev/null
measure "agentv (Rust)" "$work/rs" "$root/target/release/agentv" eval suite.jsonl --workers "$workers" --out results.jsonl

(cd "$work/ts" && git init -q .)
cat > "$work/ts/targets.yaml" <<YAML
targets:
  - name: default
    provider: openai
    base_url: $url/v1
    api_key: \${{ BENCH_KEY }}
    model: \${{ BENCH_MODEL }}
    api_format: chat
YAML
python3 - "$work/ts/suite.yaml" "$cases" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    f.write("tests:\n")
    for i in range(n):
        f.write(f"  - id: case-{i:06d}\n    criteria: Answers 4.\n    input: 'Case {i}: what is 2+2?'\n"
                f"    assertions:\n      - type: contains\n        value: '4'\n")
PY
measure "agentv 4.42.4 (npm)" "$work/ts" "$ts_dir/node_modules/.bin/agentv" eval suite.yaml --target default --workers "$workers"
echo "scenario: $cases cases, latency ${latency} ms, $workers workers; ideal wall $(python3 -c "print(f'{$cases*$latency/1000/$workers:.2f}')") s"
