#!/usr/bin/env bash
# Runs the promptfoo examples offline: starts the fake model server (this repository's bench
# tools) on 127.0.0.1:8931 following fake-model.json, points promptfoo's OpenAI variables at
# it, and runs each config. With PROMPTFOO=path/to/promptfoo the same configs run through
# promptfoo instead (e.g. compat/promptfoo/.npm/node_modules/.bin/promptfoo).
#   examples/promptfoo/run-offline.sh [deterministic|llm-rubric|rag ...] [-- agentv eval flags]
set -euo pipefail
if [ -n "${PROMPTFOO:-}" ]; then PROMPTFOO="$(cd "$(dirname "$PROMPTFOO")" && pwd)/$(basename "$PROMPTFOO")"; fi
cd "$(dirname "$0")/../.."
port=8931
names=()
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do names+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ "${#names[@]}" -gt 0 ] || names=(deterministic llm-rubric rag)
cargo build -q -p agentv-bench --bin fake-model-server
if [ -z "${AGENTV:-}" ] && [ -z "${PROMPTFOO:-}" ]; then
  cargo build -q --bin agentv
  AGENTV=target/debug/agentv
fi
target/debug/fake-model-server --port "$port" --script examples/promptfoo/fake-model.json >/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
export OPENAI_BASE_URL="http://127.0.0.1:$port/v1" OPENAI_API_KEY=offline-placeholder-key
export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1
status=0
for name in "${names[@]}"; do
  echo "== $name"
  if [ -n "${PROMPTFOO:-}" ]; then
    (cd "examples/promptfoo/$name" && "$PROMPTFOO" eval -c promptfooconfig.yaml --no-cache --no-write "$@") || status=$?
  else
    "$AGENTV" eval "examples/promptfoo/$name/promptfooconfig.yaml" "$@" || status=$?
  fi
done
exit "$status"
