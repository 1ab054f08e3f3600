#!/usr/bin/env bash
# Cost of problems in files: `agentv validate` of a JSONL dataset with one warning on every line
# (an unknown key) and of one where every line is an error (an incomplete case), at 5k, 40k and
# 80k lines. CPU time must grow linearly with the lines; at most 50 problems are printed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p agentv
command -v /usr/bin/time > /dev/null || apt-get install -y -qq time > /dev/null
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
mkdir "$work/.git"
printf 'targets:\n  - {name: default, provider: mock}\n' > "$work/targets.yaml"
for n in 5000 40000 80000; do
  python3 - "$work" "$n" <<'PY'
import sys
work, n = sys.argv[1], int(sys.argv[2])
with open(f"{work}/warn{n}.jsonl", "w") as f:
    for i in range(n):
        f.write('{"id": "c%d", "input": "q", "criteria": "x", "colour": 1}\n' % i)
with open(f"{work}/error{n}.jsonl", "w") as f:
    for i in range(n):
        f.write('{"id": "c%d", "input": "q"}\n' % i)
PY
  for kind in warn error; do
    (cd "$work" && /usr/bin/time -f "$kind $n lines: %U s user, %M KB peak" \
      "$root/target/release/agentv" validate "$kind$n.jsonl" > /dev/null 2> "$work/err") || true
    tail -1 "$work/err"
  done
done
