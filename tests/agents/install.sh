#!/bin/sh
# Installs the real agent CLIs the end-to-end tests drive (Claude Code, Codex) into DIR
# (default: target/agent-clis), never globally. Prints DIR/node_modules/.bin on success.
# Usage: tests/agents/install.sh [DIR]
set -eu
dir=${1:-"$(dirname "$0")/../../target/agent-clis"}
mkdir -p "$dir"
bin="$dir/node_modules/.bin"
if [ -x "$bin/claude" ] && [ -x "$bin/codex" ]; then
    echo "$bin"
    exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "npm is not installed" >&2; exit 1; }
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
    @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 >&2
"$bin/claude" --version >&2
"$bin/codex" --version >&2
echo "$bin"
