#!/usr/bin/env bash
# Runs the judge SDK conformance suite for every SDK that has a runner, and checks that the
# TypeScript SDK's committed dist/ is what its sources compile to.
#
# Needs python3, node (>= 20) with npm, and cargo; installs the TypeScript compiler with `npm ci` into
# sdk/typescript/node_modules once (again only when package-lock.json changes).
# Exits non-zero on any failure; the last line is "conformance: N passed, N failed".
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ts="$here/../typescript"
total_passed=0
total_failed=0
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

# Runs one runner, echoing its output, and adds its closing counts to the totals.
run_runner() {
  "$@" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  local counts
  counts="$(grep -E '^[a-z]+: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)"
  if [[ -z "$counts" ]]; then
    echo "FAIL  $1 ended without a summary (exit $status)"
    total_failed=$((total_failed + 1))
    return
  fi
  local p f
  p="$(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$counts")"
  f="$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$counts")"
  total_passed=$((total_passed + p))
  total_failed=$((total_failed + f))
  if [[ $status -ne 0 && $f -eq 0 ]]; then
    echo "FAIL  runner exited $status"
    total_failed=$((total_failed + 1))
  fi
}

# 1. Python SDK.
run_runner python3 "$here/python/run.py"

# 2. TypeScript SDK: the compiler (dev dependency only), a fresh-dist check, then the runner.
stamp="$ts/node_modules/.agentv-lock-sha"
lock_sha="$(sha256sum "$ts/package-lock.json" | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$lock_sha" ]]; then
  (cd "$ts" && npm ci --no-audit --no-fund --loglevel=error) && echo "$lock_sha" >"$stamp"
fi
check_dir="$(mktemp -d)"
if node "$ts/node_modules/typescript/bin/tsc" -p "$ts/tsconfig.json" --outDir "$check_dir" \
  && diff -r "$ts/dist" "$check_dir" >/dev/null; then
  echo "ok    typescript dist/ matches src/index.ts"
  total_passed=$((total_passed + 1))
else
  echo "FAIL  typescript dist/ is stale or does not compile: run \`npm run build\` in sdk/typescript"
  total_failed=$((total_failed + 1))
fi
rm -rf "$check_dir"
run_runner node "$here/typescript/run.mjs"
# The same SDK under Bun, when Bun is installed (it is not needed otherwise).
if command -v bun >/dev/null 2>&1; then
  run_runner bun "$here/typescript/run.mjs"
else
  echo "note  bun is not installed: the TypeScript SDK ran under node only"
fi

# 3. Rust SDK: its runner is an integration test of agentv-eval-sdk (also run by `cargo test`).
run_runner cargo test --quiet --locked --manifest-path "$here/../../Cargo.toml" -p agentv-eval-sdk --test conformance

echo "conformance: $total_passed passed, $total_failed failed"
# A suite that checked nothing (a runner that skipped everything) is not a pass.
if [[ $total_passed -eq 0 ]]; then
  echo "FAIL  no conformance check ran"
  exit 1
fi
[[ $total_failed -eq 0 ]]
