#!/usr/bin/env bash
# Runs the support-agent suite offline against each target: starts the fake model server
# (from this repository's bench tools) on 127.0.0.1:8931 with fake-model.json, runs
# `agentv eval` once per target, and stops the server. Extra arguments go to `agentv eval`.
set -euo pipefail
cd "$(dirname "$0")/../.."
port=8931
cargo build -q -p agentv-bench --bin fake-model-server
if [ -z "${AGENTV:-}" ]; then
  cargo build -q --bin agentv
  AGENTV=target/debug/agentv
fi
target/debug/fake-model-server --port "$port" --script examples/tools/fake-model.json >/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
status=0
for target in openai-compatible anthropic gemini; do
  echo "== $target"
  "$AGENTV" eval examples/tools/evals/support.yaml --target "$target" "$@" || status=$?
done
exit "$status"
