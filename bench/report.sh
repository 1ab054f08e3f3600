#!/usr/bin/env bash
# The results tooling at scale: builds the HTML, JUnit and Markdown reports of an N-case results
# file and compares two such files, measuring wall time and peak memory with /usr/bin/time -v;
# then opens the HTML report in headless Chromium and measures the time to interactive and the
# time a filter and a drill-down take.
#
# Usage: bench/report.sh [CASES]   (default 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
cases="${1:-10000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
command -v /usr/bin/time >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time; }
cargo build --release --quiet --bin agentv
bin=target/release/agentv

python3 bench/gen_results.py "$cases" "$work/results.jsonl"
python3 - "$work/results.jsonl" "$work/candidate.jsonl" <<'PY'
import json, sys
with open(sys.argv[1]) as src, open(sys.argv[2], "w") as dst:
    for i, line in enumerate(src):
        r = json.loads(line)
        if r["execution_status"] == "ok":
            r["score"] = max(0.0, min(1.0, r["score"] + (0.05 if i % 3 else -0.08)))
        dst.write(json.dumps(r) + "\n")
PY

measure() { # label, command...
  local label="$1"; shift
  /usr/bin/time -v "$@" >"$work/out" 2>"$work/time" || true
  local wall rss
  wall=$(grep "Elapsed (wall clock)" "$work/time" | awk '{print $NF}')
  rss=$(grep "Maximum resident set size" "$work/time" | awk '{print $NF}')
  printf '%-34s wall %8s   peak RSS %7.1f MB\n' "$label" "$wall" "$(echo "$rss / 1024" | bc -l)"
}

size() { printf '%.1f MB' "$(echo "$(stat -c %s "$1") / 1048576" | bc -l)"; }
echo "results file: $cases cases, $(size "$work/results.jsonl")"
measure "report --html" "$bin" report "$work/results.jsonl" --html "$work/report.html"
measure "report --junit" "$bin" report "$work/results.jsonl" --junit "$work/report.xml"
measure "report --markdown" "$bin" report "$work/results.jsonl" --markdown "$work/report.md"
measure "report --html --junit --markdown" "$bin" report "$work/results.jsonl" --html "$work/all.html" --junit "$work/all.xml" --markdown "$work/all.md"
measure "report --compare (HTML)" "$bin" report --compare "$work/results.jsonl" "$work/candidate.jsonl" --html "$work/compare.html"
measure "compare" "$bin" compare "$work/results.jsonl" "$work/candidate.jsonl"
echo "HTML report: $(size "$work/report.html"); compare report: $(size "$work/compare.html"); JUnit: $(size "$work/report.xml"); Markdown: $(stat -c %s "$work/report.md") bytes"

summarize='
import json, sys
r = json.load(sys.stdin)
t = r.get("timing", {})
page, run = sys.argv[1], sys.argv[2]
problems = r.get("failures") or r.get("error")
print("chromium %-8s run %s: interactive %5.0f ms after navigation start (DOMContentLoaded %.0f ms), "
      "rows %s, filter %s ms, drill-down %s ms, requests %d, problems %s"
      % (page, run, t.get("interactive") or 0, t.get("domContentLoaded") or 0, r.get("rows"),
         r.get("filter_ms"), r.get("open_ms"), len(r.get("requests", [])), problems or "none"))
'
if [ -x /usr/bin/chromium ] && command -v node >/dev/null 2>&1; then
  for page in report compare; do
    printf '{"html": "%s", "filter": "case-0999", "open": "case-00042"}' "$work/$page.html" >"$work/spec.json"
    for run in 1 2 3; do
      node tests/browser/report_check.mjs "$work/spec.json" | python3 -c "$summarize" "$page" "$run"
    done
  done
else
  echo "chromium or node not found: skipped the browser timings"
fi
