#!/usr/bin/env bash
# Runs every compat suite through AgentV 4.42.4 and through agentv against the deterministic
# fake model, then prints per-case score agreement (compare.py).
#
#   compat/run.sh [--strict] [--ts-only | --ours-only] [SUITE ...]
#
# SUITE is a suite name (`deterministic` for suites/deterministic.eval.yaml); default: all.
# AGENTV_BIN=path uses that agentv binary instead of `cargo build --release`.
# Results land in compat/out/: ts/<suite>/ (4.42.4 run directories), ours/<suite>.jsonl,
# a log per run beside them, fake_model.jsonl (every model request) and summary.json.
# --ts-only / --ours-only compare with the other side's last results in compat/out/.
# Exit 0 (it is a report); with --strict, 1 when a case disagrees.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
out="$here/out"
strict=()
run_ts=1
run_ours=1
names=()
for arg in "$@"; do
  case "$arg" in
    --strict) strict=(--strict) ;;
    --ts-only) run_ours=0 ;;
    --ours-only) run_ts=0 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $arg" >&2; exit 2 ;;
    *) names+=("$arg") ;;
  esac
done

suites=()
if [ ${#names[@]} -eq 0 ]; then
  for f in "$here"/suites/*.eval.yaml; do suites+=("$(basename "$f" .eval.yaml)"); done
else
  for n in "${names[@]}"; do
    if [ ! -f "$here/suites/$n.eval.yaml" ]; then echo "run.sh: no suite $here/suites/$n.eval.yaml" >&2; exit 2; fi
    suites+=("$n")
  done
fi

if [ "$run_ts" = 1 ]; then
  ts_cli=$(bash "$here/install.sh") || { echo "run.sh: could not install AgentV 4.42.4" >&2; exit 2; }
fi
if [ "$run_ours" = 1 ]; then
  ours="${AGENTV_BIN:-}"
  if [ -z "$ours" ]; then
    echo "run.sh: building agentv (cargo build --release)" >&2
    (cd "$root" && cargo build --release --locked --bin agentv >&2) || { echo "run.sh: cargo build failed" >&2; exit 2; }
    ours="$root/target/release/agentv"
  fi
fi

mkdir -p "$out/ts" "$out/ours"
: > "$out/fake_model.jsonl"
rm -f "$out/fake_model.port"
python3 "$here/fake_model.py" --port 0 --port-file "$out/fake_model.port" --log "$out/fake_model.jsonl" \
  2> "$out/fake_model.log" &
fake_pid=$!
stop_fake() { kill "$fake_pid" 2>/dev/null; wait "$fake_pid" 2>/dev/null; }
trap stop_fake EXIT
trap 'stop_fake; exit 130' INT
trap 'stop_fake; exit 143' TERM
for _ in $(seq 100); do
  [ -s "$out/fake_model.port" ] && break
  kill -0 "$fake_pid" 2>/dev/null || { echo "run.sh: the fake model did not start:" >&2; cat "$out/fake_model.log" >&2; exit 2; }
  sleep 0.1
done
[ -s "$out/fake_model.port" ] || { echo "run.sh: the fake model did not start in 10 s" >&2; exit 2; }

export FAKE_MODEL_BASE_URL="http://127.0.0.1:$(cat "$out/fake_model.port")/v1"
export FAKE_MODEL_API_KEY=fake-key
export FAKE_MODEL_NAME=fake-model
export TZ=UTC   # field-accuracy dates compare in the local time zone (reference §2.8)
export COMPAT_CITY=Paris COMPAT_WEIGHT=3   # structure.eval.yaml: ${{ VAR }} interpolation
# Workspace suites (ws-*): the agent on PATH, workspaces and pool slots under out/data, and a
# local repository for ws-repo.eval.yaml.
export PATH="$here/bin:$PATH"
export AGENTV_DATA_DIR="$out/data"
rm -rf "$AGENTV_DATA_DIR" "$out/ws-repo"
mkdir -p "$out/ws-repo"
printf '{ "name": "@compat/core", "version": "1.2.3" }\n' > "$out/ws-repo/package.json"
(cd "$out/ws-repo" && git init -q -b main && git add -A \
  && git -c user.name=compat -c user.email=compat@localhost commit -qm init) \
  || { echo "run.sh: cannot make the local repository for ws-repo" >&2; exit 2; }
export COMPAT_WS_REPO="$out/ws-repo"

cd "$here/suites" || exit 2
for s in "${suites[@]}"; do
  if [ "$run_ts" = 1 ]; then
    rm -rf "$out/ts/$s"
    start=$(date +%s%N)
    timeout 300 node "$ts_cli" eval run "$s.eval.yaml" --targets targets.yaml --output "$out/ts/$s" \
      > "$out/ts/$s.log" 2>&1
    rc=$?
    printf 'TS 4.42.4  %-20s exit %3d  %6d ms\n' "$s" "$rc" $((($(date +%s%N) - start) / 1000000))
  fi
  if [ "$run_ours" = 1 ]; then
    rm -f "$out/ours/$s.jsonl"
    start=$(date +%s%N)
    timeout 300 "$ours" eval "$s.eval.yaml" --targets targets.yaml --out "$out/ours/$s.jsonl" \
      > "$out/ours/$s.log" 2>&1
    rc=$?
    printf 'agentv     %-20s exit %3d  %6d ms\n' "$s" "$rc" $((($(date +%s%N) - start) / 1000000))
  fi
done

python3 "$here/compare.py" --suites "$here/suites" --ts "$out/ts" --ours "$out/ours" \
  --json "$out/summary.json" "${strict[@]}" "${suites[@]}"
