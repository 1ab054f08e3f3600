#!/usr/bin/env bash
# Usage: [PROFILE=debug] bench/persistent.sh [CASES]
#
# CPU per case of agentv plus its code judge, one process per case against `persistent: true`,
# for a minimal Python judge (the SDK's `run_judge`) and a minimal Rust judge (`bench-judge`),
# over CASES (default 300) cases with a mock target and one worker. CPU is user + sys of agentv
# and its children (the judges) from /usr/bin/time; a run of the same suite with no code judge
# is printed too, so the judges' share can be read off. Figures only: nothing is asserted.
set -euo pipefail
cases="${1:-300}"
root="$(cd "$(dirname "$0")/.." && pwd)"
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }
# PROFILE=debug measures the debug build instead (no release build needed).
profile="${PROFILE:-release}"
if [ "$profile" = release ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p agentv -p agentv-bench
else
  cargo build --quiet --manifest-path "$root/Cargo.toml" -p agentv -p agentv-bench
fi
bin="$root/target/$profile"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$root/sdk/python/agentv_eval/__init__.py" "$work/agentv_eval.py"
cat > "$work/judge.py" <<'PY'
from agentv_eval import JudgeResult, run_judge

run_judge(lambda payload: JudgeResult(1.0).hit(f"{len(payload.candidate_answer)} characters"))
PY
printf 'targets:\n  - {name: default, provider: mock, response: "The answer is 4."}\n' > "$work/targets.yaml"

suite() { # NAME EVALUATOR
  {
    printf 'execution:\n  evaluators:\n    - %s\nevalcases:\n' "$2"
    for i in $(seq 1 "$cases"); do
      printf '  - {id: c%s, expected_outcome: x, input_messages: [{role: user, content: "what is 2+2?"}]}\n' "$i"
    done
  } > "$work/$1.yaml"
}
suite none '{name: kw, type: keywords, expected: ["4"]}'
suite py-process "{name: j, type: code_judge, script: [python3, judge.py]}"
suite py-persistent "{name: j, type: code_judge, script: [python3, judge.py], persistent: true}"
suite rs-process "{name: j, type: code_judge, script: [$bin/bench-judge]}"
suite rs-persistent "{name: j, type: code_judge, script: [$bin/bench-judge], persistent: true}"

printf '%-15s %8s %8s %12s\n' suite wall_s cpu_s cpu_ms/case
for name in none py-process py-persistent rs-process rs-persistent; do
  (cd "$work" && /usr/bin/time -f '%e %U %S' -o "$work/$name.time" \
    "$bin/agentv" eval "$name.yaml" --workers 1 --out "$name.jsonl" >/dev/null 2>&1)
  passed="$(grep -c '"score":1.0' "$work/$name.jsonl" || true)"
  [ "$passed" = "$cases" ] || { echo "$name: only $passed of $cases cases scored 1" >&2; exit 1; }
  read -r wall user sys < "$work/$name.time"
  python3 -c "import sys; w,u,s,n=map(float,sys.argv[2:]); print(f'{sys.argv[1]:<15} {w:8.2f} {u+s:8.2f} {(u+s)*1000/n:12.2f}')" \
    "$name" "$wall" "$user" "$sys" "$cases"
done
