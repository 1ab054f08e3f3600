#!/usr/bin/env bash
# Workspace costs (docs/workspaces.md#how-a-template-is-copied), release build, each figure
# next to its target:
#  1. workspace-bench: a per_test workspace from a 5 000-file, 50 MB template made by 8 workers
#     (wall and CPU per workspace, the copy method, removal), `cp -a` / `rm -rf` of the same
#     template as a yardstick, file_changes of a 5-file edit in it, and 200 cases through the
#     workspace runtime (agentv's own CPU per case, git's, disk left behind);
#  2. the same 200 per_test cases through `agentv eval` with a mock cli agent that edits a
#     file, against the same suite without a workspace: wall, CPU (agentv + agent + git) and
#     the files left under the data directory after the run.
# Part 1 runs on the file system of DIR, then again on /dev/shm (tmpfs) when it exists.
#
#   bench/workspaces.sh [DIR]   # DIR: where to work (default: a temporary directory)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
work=$(mktemp -d "${1:-${TMPDIR:-/tmp}}/agentv-ws-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
cargo build --release --quiet --locked --manifest-path "$root/Cargo.toml" -p agentv -p agentv-bench >&2
agentv="$root/target/release/agentv"
command -v /usr/bin/time >/dev/null || { echo "workspaces.sh: /usr/bin/time is needed (apt-get install time)" >&2; exit 2; }

echo "machine: $(nproc) cores,$(uptime | sed 's/.*load average/ load average/')"
echo "== in process, on $(df -T "$work" | awk 'NR==2 {print $2}') ($work)"
"$root/target/release/workspace-bench" "$work"
if [ -d /dev/shm ] && [ "$(df -k --output=avail /dev/shm | tail -1)" -gt 2000000 ]; then
  shm=$(mktemp -d /dev/shm/agentv-ws-bench.XXXXXX)
  echo "== in process, on tmpfs ($shm)"
  "$root/target/release/workspace-bench" "$shm" || true
  rm -rf "$shm"
fi

echo "== agentv eval, 200 per_test cases, 8 workers, on $(df -T "$work" | awk 'NR==2 {print $2}')"
mkdir -p "$work/suite/tpl/src" "$work/suite/.git"
for i in $(seq 1 20); do head -c 2048 /dev/urandom | base64 > "$work/suite/tpl/src/f$i.txt"; done
cat > "$work/suite/agent.sh" <<'AGENT'
#!/bin/sh
[ -d src ] && echo edited >> src/f1.txt
echo done > "$2"
AGENT
chmod +x "$work/suite/agent.sh"
printf 'targets:\n  - name: agent\n    provider: cli\n    command_template: %s/agent.sh {PROMPT} {OUTPUT_FILE}\n' "$work/suite" > "$work/suite/targets.yaml"
for mode in with without; do
  {
    [ "$mode" = with ] && echo "workspace: {template: ./tpl, isolation: per_test}"
    echo "execution: {target: agent}"
    echo "tests:"
    for i in $(seq 1 200); do echo "  - {id: c$i, criteria: x, input: q$i, assertions: [{type: contains, value: done}]}"; done
  } > "$work/suite/$mode.yaml"
  out=$( cd "$work/suite" && AGENTV_DATA_DIR="$work/data" /usr/bin/time -f '%e %U %S %M' \
    "$agentv" eval "$mode.yaml" --out "$work/$mode.jsonl" --workers 8 2>&1 >/dev/null | tail -1 )
  read -r wall user sys rss <<<"$out"
  files=$(find "$work/data/workspaces" -type f 2>/dev/null | wc -l)
  printf '%-8s workspace: wall %.2f s (%.1f ms/case), CPU %.2f s (%.2f ms/case, agentv + agent + git), peak RSS %d MB, %d files left under workspaces/ (target 0: %s)\n' \
    "$mode" "$wall" "$(echo "$wall * 5" | bc -l)" "$(echo "$user + $sys" | bc -l)" "$(echo "($user + $sys) * 5" | bc -l)" $((rss / 1024)) "$files" \
    "$([ "$files" -eq 0 ] && echo met || echo 'NOT met')"
done
