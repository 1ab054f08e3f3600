#!/usr/bin/env bash
# agentv against promptfoo 0.121.20 on the same promptfoo config and the same fake model server.
#
#   bench/promptfoo.sh [CASES] [LATENCY_MS] [WORKERS] [ASSERTIONS]
#
# Defaults: 1,000 tests, 50 ms model latency, 64 workers, `contains` + `javascript` assertions
# (ASSERTIONS=contains,javascript,llm-rubric adds a model-graded one: a second call per test).
# One OpenAI-compatible call per test to `fake-model-server`; both tools run the one config
# file. Prints wall time, CPU per case (user + sys of the tool and its children) and peak
# memory for both, and agentv's ratios next to the targets (wall <= 1/10 of promptfoo's, CPU
# per case <= 1/20, peak memory <= 1/10). Peak memory is the tool's whole process tree's,
# summed (`tree_rss.py`: agentv's node workers count; the measuring `/usr/bin/time` does not),
# next to the largest single process
# (`/usr/bin/time`). A run counts only when the server saw the expected
# number of calls and every row passed. PROFILE=debug measures the debug build; NO_BUILD=1
# measures what is already built (BIN_DIR=DIR: the binaries in DIR). promptfoo is a test-only npm install in
# compat/promptfoo/.npm (as compat/promptfoo/agreement.sh does), never part of the build.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cases="${1:-1000}"; latency="${2:-50}"; workers="${3:-64}"; assertions="${4:-contains,javascript}"
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }
pf_dir="$root/compat/promptfoo/.npm"
pf="$pf_dir/node_modules/.bin/promptfoo"
if [ ! -x "$pf" ]; then
  mkdir -p "$pf_dir"
  cp "$root/compat/promptfoo/npm/package.json" "$pf_dir/package.json"
  (cd "$pf_dir" && npm install --no-audit --no-fund > install.log 2>&1)
fi
profile="${PROFILE:-release}"
if [ -n "${NO_BUILD:-}" ]; then
  : # measure the binaries already in target/$profile
elif [ "$profile" = release ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p agentv -p agentv-bench
else
  cargo build --quiet --manifest-path "$root/Cargo.toml" -p agentv -p agentv-bench
fi
bin="${BIN_DIR:-$root/target/$profile}"
work="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
"$bin/fake-model-server" --latency-ms "$latency" > "$work/url" &
server=$!
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.05; done
url="$(head -n1 "$work/url")"

# The config: one test per case, each asking the fake model (which answers "2+2 is 4.").
python3 - "$work/promptfooconfig.yaml" "$cases" "$url" "$assertions" <<'PY'
import sys
path, n, url, kinds = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split(",")
checks = {
    "contains": "      - type: contains\n        value: '4'\n",
    "javascript": "      - type: javascript\n        value: output.includes('4') && context.vars.n >= 0\n",
    "llm-rubric": "      - type: llm-rubric\n        value: Says that 2+2 is 4\n",
}
with open(path, "w") as f:
    f.write("description: agentv against promptfoo\n")
    f.write("prompts:\n  - 'Case {{n}}: what is 2+2?'\n")
    f.write("providers:\n  - id: openai:chat:bench-model\n")
    f.write(f"    config: {{apiBaseUrl: '{url}/v1', apiKey: bench-key, temperature: 0}}\n")
    if "llm-rubric" in kinds:
        f.write("defaultTest:\n  options:\n    provider:\n      id: openai:chat:bench-judge\n")
        f.write(f"      config: {{apiBaseUrl: '{url}/v1', apiKey: bench-key}}\n")
    f.write("tests:\n")
    for i in range(n):
        f.write(f"  - vars: {{n: {i}}}\n    assert:\n")
        for k in kinds:
            f.write(checks[k])
PY
calls_per_case=1
case ",$assertions," in *,llm-rubric,*) calls_per_case=2 ;; esac

requests() { python3 -c "import json,urllib.request; print(json.load(urllib.request.urlopen('$url/stats'))['requests'])"; }

measure() { # NAME RESULTS_JSON COMMAND...
  local name="$1" results="$2"; shift 2
  local before; before="$(requests)"
  (cd "$work" && python3 "$root/bench/tree_rss.py" "$work/$name.tree" --without-root /usr/bin/time -v "$@" \
    > "$work/$name.out" 2> "$work/$name.time") || true
  local served=$(( $(requests) - before ))
  python3 - "$work/$name.time" "$name" "$served" "$(( cases * calls_per_case ))" "$cases" "$work/$results" \
    "$work/$name.tree" <<'PY' >> "$work/figures"
import json, re, sys
path, name, served, expected, n, results, tree = sys.argv[1:]
t = open(path).read()
f = lambda k: re.search(rf"{re.escape(k)}: (.+)", t).group(1).strip()
wall = sum(float(p) * 60 ** i for i, p in enumerate(reversed(f("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":"))))
cpu = float(f("User time (seconds)")) + float(f("System time (seconds)"))
rss = int(f("Maximum resident set size (kbytes)")) / 1024
try:
    rows = json.load(open(results))["results"]["results"]
    passed = sum(1 for r in rows if r.get("success"))
except (OSError, ValueError, KeyError):
    passed = -1
ok = int(served) == int(expected) and passed == int(n)
tree_rss = float(open(tree).read())
print(f"{name} {wall} {cpu} {rss} {tree_rss} {served} {expected} {passed} {int(ok)}")
PY
}

export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_CONFIG_DIR="$work/.promptfoo"
export PROMPTFOO_DISABLE_SHARING=1 PROMPTFOO_CACHE_ENABLED=false
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
measure agentv agentv.json "$bin/agentv" eval promptfooconfig.yaml --workers "$workers" --out agentv.json
measure promptfoo promptfoo.json "$pf" eval -c promptfooconfig.yaml -j "$workers" --no-cache --no-write \
  --no-table --no-progress-bar -o promptfoo.json

python3 - "$work/figures" "$cases" "$latency" "$workers" "$assertions" "$load_before" "$calls_per_case" <<'PY'
import os, sys
path, n, latency, workers, kinds, load_before, calls = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], int(sys.argv[7])
rows = {}
for line in open(path):
    name, wall, cpu, rss, tree, served, expected, passed, ok = line.split()
    rows[name] = dict(wall=float(wall), cpu=float(cpu), rss=float(rss), tree=float(tree), served=served,
                      expected=expected, passed=int(passed), ok=ok == "1")
load = " ".join(open("/proc/loadavg").read().split()[:3])
print(f"load average (1, 5, 15 min): {load_before} before, {load} after, on {os.cpu_count()} CPUs")
print(f"scenario: {n} tests ({kinds}), model latency {latency} ms, {workers} workers;"
      f" ideal wall (the model calls alone, {calls} per test) {n * calls * int(latency) / int(workers) / 1000:.2f} s")
for name, r in rows.items():
    note = "" if r["ok"] else "   NOT COUNTED (calls or passes differ)"
    print(f"{name:<10} wall {r['wall']:7.2f} s   cpu {r['cpu']:7.2f} s ({r['cpu'] / n * 1000:6.2f} ms/case)"
          f"   peak rss {r['tree']:7.1f} MB (largest process {r['rss']:6.1f} MB)   calls {r['served']}/{r['expected']}   passed {r['passed']}/{n}{note}")
a, p = rows["agentv"], rows["promptfoo"]
for what, key, target in [("wall", "wall", 10), ("cpu per case", "cpu", 20), ("peak memory", "tree", 10)]:
    ratio = a[key] / p[key] if p[key] else float("inf")
    verdict = "meets" if ratio <= 1 / target else "misses"
    print(f"agentv/promptfoo {what:<13} {ratio:6.3f}  (1/{1 / ratio if ratio else float('inf'):.1f}; target <= 1/{target}: {verdict})")
if not (a["ok"] and p["ok"]):
    sys.exit(1)
PY
