#!/bin/sh
# Runs promptfoo configs with promptfoo 0.121.20 and with agentv, and prints how far their rows
# agree: per row (pass, score, named scores) and per assertion type (pass, score). Test-only:
# promptfoo is installed here from npm, never by the build or CI.
#   compat/promptfoo/agreement.sh [CONFIG...]   (default: examples/promptfoo/*/promptfooconfig.yaml)
# A config's folder may hold server.mjs: the HTTP API its providers call, started for its run.
# A config whose folder (or the folder above) holds fake-model.json calls the OpenAI API: the
# fake model server (bench/tools) answers it as that file says, for promptfoo and agentv alike,
# through OPENAI_BASE_URL and OPENAI_API_KEY (as examples/promptfoo/run-offline.sh does).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
agentv=${AGENTV:-$repo/target/debug/agentv}
pf="$here/.npm/node_modules/.bin/promptfoo"
if [ ! -x "$pf" ]; then
  mkdir -p "$here/.npm"
  cp "$here/npm/package.json" "$here/.npm/package.json"
  (cd "$here/.npm" && npm install --no-audit --no-fund >install.log 2>&1)
fi
[ "$#" -gt 0 ] || set -- "$repo"/examples/promptfoo/*/promptfooconfig.yaml
out=$(mktemp -d)
export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_CONFIG_DIR="$out/.promptfoo"
fake_bin="$repo/target/debug/fake-model-server"
# Starts the fake model server with the script $1 and points the OpenAI variables at it.
start_fake() {
  [ -x "$fake_bin" ] || (cd "$repo" && cargo build -q -p agentv-bench --bin fake-model-server)
  "$fake_bin" --script "$1" >"$out/fake.url" 2>"$out/fake.log" & fake=$!
  for _ in $(seq 100); do [ -s "$out/fake.url" ] && break; sleep 0.1; done
  fake_env="OPENAI_BASE_URL=$(head -n 1 "$out/fake.url")/v1 OPENAI_API_KEY=offline-placeholder-key"
}
status=0
for config in "$@"; do
  dir=$(cd "$(dirname "$config")" && pwd)
  name=$(basename "$config")
  rm -f "$out/promptfoo.json" "$out/agentv.json"
  # A config whose providers call an HTTP API brings it as server.mjs (127.0.0.1 only).
  server=
  if [ -f "$dir/server.mjs" ]; then
    node "$dir/server.mjs" & server=$!
    sleep 1
  fi
  fake= fake_env=
  for script in "$dir/fake-model.json" "$dir/../fake-model.json"; do
    if [ -z "$fake" ] && [ -f "$script" ]; then start_fake "$script"; fi
  done
  # shellcheck disable=SC2086 # fake_env is a list of NAME=value words
  (cd "$dir" && env $fake_env "$pf" eval -c "$name" --no-cache --no-write --no-table -o "$out/promptfoo.json" >"$out/promptfoo.log" 2>&1) || true
  # shellcheck disable=SC2086
  (cd "$dir" && env $fake_env "$agentv" eval "$name" --out "$out/agentv.json" >"$out/agentv.log" 2>&1) || true
  [ -z "$server" ] || kill "$server"
  [ -z "$fake" ] || kill "$fake"
  echo "== $config"
  node "$here/compare.mjs" "$out/promptfoo.json" "$out/agentv.json" || status=1
done
rm -rf "$out"
exit $status
