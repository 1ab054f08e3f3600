#!/usr/bin/env bash
# Batch mode at scale: CASES cases (default 10000) through the fake model server's batch API
# (OpenAI files + batches), keywords grader, under /usr/bin/time -v. Prints agentv's wall, CPU
# per case and peak memory, and the server's counts (one job per 50,000 requests, no online call).
#
# With JUDGE=1 the cases are graded by the LLM judge too, which answers in a second wave of
# batch jobs (docs/batch.md#judges). BUILD=0 measures the binaries already built.
#
#   bench/batch.sh [CASES]          PROFILE=debug bench/batch.sh 1000   (the debug build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cases="${1:-10000}"
profile="${PROFILE:-release}"
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }
if [ "${BUILD:-1}" = 0 ]; then
  :
elif [ "$profile" = release ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p agentv -p agentv-bench
else
  cargo build --quiet --manifest-path "$root/Cargo.toml" -p agentv -p agentv-bench
fi
bin="$root/target/$profile"
work="$(mktemp -d)"
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
"$bin/fake-model-server" > "$work/server.url" &
server=$!
for _ in $(seq 100); do [ -s "$work/server.url" ] && break; sleep 0.05; done
url="$(head -n1 "$work/server.url")"
python3 - "$work" "$cases" "$url" "${JUDGE:-0}" <<'PY'
import json, sys
work, n, url, judge = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
with open(f"{work}/suite.jsonl", "w") as f:
    for i in range(n):
        f.write(json.dumps({"id": f"c{i}", "expected_outcome": "x",
                            "input_messages": [{"role": "user", "content": f"q{i}: what is 2+2?"}]}) + "\n")
with open(f"{work}/suite.yaml", "w") as f:
    judged = ", {name: judge, type: llm_judge}" if judge else ""
    f.write(f"execution:\n  evaluators: [{{name: kw, type: keywords, expected: ['4']}}{judged}]\n")
with open(f"{work}/targets.yaml", "w") as f:
    f.write(f"targets:\n  - name: default\n    provider: openai\n    base_url: {url}/v1\n    model: gpt-4o-mini\n    api_key: k\n    batch: true\n    batch_poll_ms: 50\n")
PY
cd "$work"
/usr/bin/time -v "$bin/agentv" eval suite.jsonl --workers 64 --out results.jsonl > out.txt 2> err.txt \
  || { tail -20 err.txt; exit 1; }
python3 - "$work" "$url" "$cases" <<'PY'
import json, re, sys, urllib.request
work, url, cases = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(f"{work}/err.txt").read()
def field(name):
    m = re.search(rf"{re.escape(name)}: (.+)", text)
    return m.group(1).strip() if m else "0"
def seconds(v):
    return sum(float(p) * 60 ** i for i, p in enumerate(reversed(v.split(":"))))
wall = seconds(field("Elapsed (wall clock) time (h:mm:ss or m:ss)"))
cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
rss = int(field("Maximum resident set size (kbytes)")) / 1024
stats = json.load(urllib.request.urlopen(url + "/stats"))
records = sum(1 for _ in open(f"{work}/results.jsonl"))
print(f"batch mode, {cases} cases: wall {wall:.2f} s, cpu {cpu:.2f} s = {cpu / cases * 1000:.3f} ms per case "
      f"(target <= 0.2), peak rss {rss:.1f} MB (target <= 64); {records} records; server {stats}")
PY
grep -h "Batch price" "$work/err.txt" || true
