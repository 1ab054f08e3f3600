#!/usr/bin/env bash
# Start-up time: `agentv --version`, and `agentv eval` of a one-case mock suite, median of 50 runs.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p agentv
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
python3 "$root/bench/gen_suite.py" --scenario mock --cases 1 --concurrency 1 --out "$work" > /dev/null
python3 - "$root/target/release/agentv" "$work" <<'PY'
import statistics, subprocess, sys, time
agentv, work = sys.argv[1:]
def median_ms(cmd, runs=50):
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)
base = median_ms(["/bin/true"])
version = median_ms([agentv, "--version"])
one = median_ms([agentv, "eval", "suite.jsonl", "--out", "r.jsonl"])
print(f"process spawn baseline (/bin/true)   {base:6.2f} ms")
print(f"agentv --version                     {version:6.2f} ms")
print(f"agentv eval (1 case, mock target)    {one:6.2f} ms")
PY
