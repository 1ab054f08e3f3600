#!/bin/sh
# Converts AgentV 4.x suites to promptfoo configs (`agentv convert --to promptfoo`), then checks
# that the suite run by agentv, and its conversion run by agentv and by promptfoo 0.121.20, give
# every row the same verdict and score. Test-only, like agreement.sh (which installs promptfoo).
#   compat/promptfoo/to-promptfoo.sh [SUITE...]   (default: to-promptfoo/suite.yaml)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
agentv=${AGENTV:-$repo/target/debug/agentv}
[ "$#" -gt 0 ] || set -- "$here/to-promptfoo/suite.yaml"
status=0
for suite in "$@"; do
  dir=$(cd "$(dirname "$suite")" && pwd)
  out=$(mktemp -d)
  config="$dir/promptfooconfig.converted.yaml"
  echo "== $suite"
  (cd "$dir" && "$agentv" convert "$(basename "$suite")" --to promptfoo --out "$config") || { status=1; continue; }
  (cd "$dir" && "$agentv" eval "$(basename "$suite")" --out "$out/suite.jsonl" >"$out/suite.log" 2>&1) || true
  (cd "$dir" && "$agentv" eval "$config" --out "$out/config.jsonl" >"$out/config.log" 2>&1) || true
  # The suite's rows against its conversion's, both run by agentv, in case order.
  node -e '
    const fs = require("fs");
    // A converted test is described by its case id.
    const rows = (p) => new Map(fs.readFileSync(p, "utf8").trim().split("\n").map(JSON.parse)
      .map((r) => [r.metadata?.promptfoo?.description ?? r.eval_id, `${r.verdict} ${r.score.toFixed(6)}`]));
    const [suite, conv] = [rows(process.argv[1]), rows(process.argv[2])];
    const s = [...suite.keys()].sort().map((k) => suite.get(k));
    const c = [...suite.keys()].sort().map((k) => conv.get(k));
    const same = s.filter((v, i) => v === c[i]).length;
    console.log(`  suite and conversion (agentv): ${same} of ${s.length} rows agree`);
    process.exit(same === s.length && s.length === c.length ? 0 : 1);
  ' "$out/suite.jsonl" "$out/config.jsonl" || status=1
  "$here/agreement.sh" "$config" || status=1
  rm -rf "$out" "$config"
done
exit $status
