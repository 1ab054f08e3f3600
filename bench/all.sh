#!/usr/bin/env bash
# Every benchmark scenario, RUNS times each (default 3); prints the median of each figure against
# its target. The figures behind bench/README.md come from this script.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${RUNS:-3}"
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p agentv -p agentv-bench
"$root/bench/startup.sh"
"$root/target/release/fake-model-server" --capacity --seconds 3
"$root/target/release/spawn-cost" 300 "$root/target/release/bench-judge"
out="$(mktemp)"; trap 'rm -f "$out"' EXIT
row() { # label scenario cases latency concurrency
  for _ in $(seq "$runs"); do
    "$root/bench/run.sh" "$2" "$3" "$4" "$5" | sed "s/^/$1|/" >> "$out"
  done
}
row det10k deterministic 10000 0 64
row det100k deterministic 100000 0 64
row lat1k deterministic 1000 50 64
row judge1k llm-judge 1000 50 64
row det1 deterministic 500 0 1
row code1 code-judge 500 0 1
row proxy1 proxy 500 0 1
row code64 code-judge 1000 0 64
row proxy64 proxy 1000 0 64
python3 - "$out" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, text = line.rstrip("\n").split("|", 1)
    r = rows.setdefault(label, {"wall": [], "cpu_case": [], "rss": [], "ideal": 0.0, "valid": True})
    if m := re.match(r"\s*wall\s+([\d.]+) s", text): r["wall"].append(float(m.group(1)))
    if m := re.search(r"\(([\d.]+) ms per case\)", text): r["cpu_case"].append(float(m.group(1)))
    if m := re.search(r"peak rss\s+([\d.]+) MB", text): r["rss"].append(float(m.group(1)))
    if m := re.search(r"ideal wall\s+([\d.]+) s", text): r["ideal"] = float(m.group(1))
    if "RUN INVALID" in text: r["valid"] = False
med = lambda label, key: statistics.median(rows[label][key])
print(f"medians of {len(rows['det10k']['wall'])} runs; every run valid: {all(r['valid'] for r in rows.values())}")
print(f"10k deterministic: {med('det10k','cpu_case'):.3f} ms CPU/case (target < 0.5), peak RSS {med('det10k','rss'):.1f} MB (< 60)")
print(f"100k deterministic: peak RSS {med('det100k','rss'):.1f} MB = {med('det100k','rss')/med('det10k','rss'):.2f}x the 10k figure (<= 1.5x)")
for label, name in [("lat1k", "1k cases, 50 ms, 64 workers"), ("judge1k", "1k cases + LLM judge, 50 ms, 64 workers")]:
    w, i = med(label, "wall"), rows[label]["ideal"]
    print(f"{name}: wall {w:.3f} s, ideal {i:.3f} s, ratio {w/i:.2f} (<= 1.25), peak RSS {med(label,'rss'):.1f} MB")
d, c, p = (med(l, "wall") / 500 * 1000 for l in ("det1", "code1", "proxy1"))
print(f"concurrency 1, per case: deterministic {d:.2f} ms, code judge {c:.2f} ms (judge adds {c-d:.2f} ms), proxy judge (3 calls) {p:.2f} ms")
print(f"64 workers: code judge {med('code64','cpu_case'):.3f} ms CPU/case, proxy judge {med('proxy64','cpu_case'):.3f} ms CPU/case")
PY
