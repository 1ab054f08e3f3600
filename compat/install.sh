#!/usr/bin/env bash
# Installs the TypeScript AgentV 4.42.4 (npm package agentv@4.42.4) into compat/.npm/ once, from
# the pinned lock file beside this script, and prints the path of its CLI on stdout.
#
# Needs node ≥ 20 and npm. bun is not needed: 4.42.4 runs under node and only shells out to bun
# for TypeScript custom assertion types, `.ts` eval files and convention providers, none of which
# the suites use.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prefix="$here/.npm"
cli="$prefix/node_modules/agentv/dist/cli.js"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "install.sh: node and npm are needed (node >= 20)" >&2
  exit 2
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "install.sh: node $(node --version) is too old; AgentV 4.42.4 needs node >= 20" >&2
  exit 2
fi

if [ ! -f "$cli" ] || [ "$(node -p "require('$prefix/node_modules/agentv/package.json').version")" != "4.42.4" ]; then
  mkdir -p "$prefix"
  cp "$here/npm/package.json" "$here/npm/package-lock.json" "$prefix/"
  echo "install.sh: installing agentv@4.42.4 into $prefix" >&2
  # `npm install` (not `npm ci`): npm 11 leaves the platform-specific optional packages of
  # @openai/codex-sdk out of the lock file and `npm ci` then refuses it. The lock still pins
  # every version that is installed.
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error >&2
fi

version=$(node "$cli" --version 2>/dev/null || true)
if [ "$version" != "4.42.4" ]; then
  echo "install.sh: $cli does not run (got version '$version')" >&2
  exit 1
fi
echo "$cli"
