#!/usr/bin/env bash
# What adding a provider and a grader costs: adds a throwaway provider (`echo`, answers with
# the question) and a throwaway grader (`short_answer`, passes answers of at most `max` words),
# each as one new file plus one table line, builds, runs a tiny suite through them, prints
# `git diff --stat`, then drops the change. See docs/architecture.md#add-a-provider.
#
#   scripts/extension-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PROVIDER=agentv-core/src/providers/echo.rs
GRADER=agentv-core/src/evaluators/short_answer.rs
PROVIDER_TABLE=agentv-core/src/providers/mod.rs
GRADER_TABLE=agentv-core/src/evaluators/mod.rs

if [ -e "$PROVIDER" ] || [ -e "$GRADER" ]; then
  echo "error: $PROVIDER or $GRADER already exists" >&2
  exit 2
fi
if ! git diff --quiet -- "$PROVIDER_TABLE" "$GRADER_TABLE"; then
  echo "error: $PROVIDER_TABLE or $GRADER_TABLE has uncommitted changes; commit or stash them first" >&2
  exit 2
fi

SUITE_DIR=$(mktemp -d)
cleanup() {
  git reset -q -- "$PROVIDER" "$GRADER" 2>/dev/null || true
  rm -f "$PROVIDER" "$GRADER"
  git checkout -q -- "$PROVIDER_TABLE" "$GRADER_TABLE"
  rm -rf "$SUITE_DIR"
}
trap cleanup EXIT

cat > "$PROVIDER" <<'EOF'
//! `echo`: answers with the question it was asked.

use std::sync::Arc;

use super::{
    BuildContext, Provider, ProviderClass, ProviderEntry, ProviderFuture, ProviderKind, ProviderRequest,
    ProviderResponse, TargetSettings,
};
use crate::config::{Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&ProviderEntry] = &[&ENTRY];

pub(crate) static ENTRY: ProviderEntry = ProviderEntry {
    name: "echo",
    aliases: &["parrot"],
    doc: "Answers with the question, after an optional prefix.",
    class: ProviderClass::Mock,
    batch: false,
    cacheable: false,
    executable: None,
    container: false,
    keys: &KEYS,
    build,
};

const OWN: &[Key] = &[Key::new("prefix", Kind::Text, "Put before the question.")];
const KEYS: KeyTable = KeyTable::new("echo", "Settings of an `echo` target.", &[OWN]);

#[derive(Debug)]
struct Echo {
    name: String,
    prefix: String,
}

fn build(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    let prefix = s.string("prefix", false).unwrap_or_default();
    Some(Arc::new(Echo {
        name: ctx.target.to_owned(),
        prefix,
    }))
}

impl Provider for Echo {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::of(&ENTRY)
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move { Ok(ProviderResponse::text(format!("{}{}", self.prefix, request.question))) })
    }
}
EOF

cat > "$GRADER" <<'EOF'
//! `short_answer`: passes answers of at most `max` words.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Grade, GradeContext, Grader, GraderEntry, ParseContext};
use crate::config::{Fields, IntRange, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    names: &["short_answer", "short-answer"],
    doc: "Scores 1 when the answer has at most `max` words, else 0.",
    keys: &KEYS,
    parse,
};

const OWN: &[Key] = &[Key::new("max", Kind::Int(IntRange::at_least(0)), "The most words an answer may have.").required()];
const KEYS: KeyTable = KeyTable::new("short_answer", "A short-answer check.", &[OWN]);

#[derive(Debug)]
struct ShortAnswer {
    max: usize,
}

fn parse(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> Option<Arc<dyn Grader>> {
    let Some(max) = f.integer("max", cx.diags) else {
        cx.diags.error(f.pos, "short_answer needs `max`", Some("add `max: 50`".to_owned()));
        return None;
    };
    Some(Arc::new(ShortAnswer { max: max as usize }))
}

impl Grader for ShortAnswer {
    fn grade<'a>(&'a self, ctx: &'a GradeContext<'a>) -> BoxFuture<'a, Grade> {
        Box::pin(async move {
            let words = ctx.candidate_answer.split_whitespace().count();
            let line = format!("{words} words (at most {})", self.max);
            if words <= self.max {
                Grade::scored(1.0, vec![line], Vec::new())
            } else {
                Grade::scored(0.0, Vec::new(), vec![line])
            }
        })
    }
}
EOF

# One table line each.
sed -i 's/^    mock,$/    mock,\n    echo,/' "$PROVIDER_TABLE"
sed -i 's/^    keywords,$/    keywords,\n    short_answer,/' "$GRADER_TABLE"
git add -N "$PROVIDER" "$GRADER"

echo "== the change"
git diff --stat -- "$PROVIDER" "$GRADER" "$PROVIDER_TABLE" "$GRADER_TABLE"
echo
git diff -U0 -- "$PROVIDER_TABLE" "$GRADER_TABLE" | grep '^[+-] '

echo
echo "== cargo build"
cargo build --quiet --bin agentv

cat > "$SUITE_DIR/targets.yaml" <<'EOF'
targets:
  - name: default
    provider: parrot
    prefix: "You asked: "
EOF
cat > "$SUITE_DIR/suite.yaml" <<'EOF'
evalcases:
  - id: short
    input: hello there
    evaluators: [{type: short-answer, max: 5}]
  - id: long
    input: this question is certainly longer than five words
    evaluators: [{type: short_answer, max: 5}]
EOF

echo
echo "== agentv eval (a tiny suite through both)"
AGENTV="$PWD/target/debug/agentv"
status=0
(cd "$SUITE_DIR" && "$AGENTV" eval suite.yaml --out results.jsonl) || status=$?
echo "exit code: $status"
python3 - "$SUITE_DIR/results.jsonl" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    e = r["evaluator_results"][0]
    print(f"{r['eval_id']}: answer {r['candidate_answer']!r} -> {e['type']} score {e['score']} {e['hits'] or e['misses']}")
EOF

echo
echo "== the new entries reach the schemas and the messages"
"$AGENTV" schema targets | grep -c '"echo"' | sed 's/^/"echo" in the targets schema: /'
"$AGENTV" schema eval | grep -c '"short-answer"' | sed 's/^/"short-answer" in the eval schema: /'
printf 'targets:\n  - {name: default, provider: nope}\n' > "$SUITE_DIR/targets.yaml"
(cd "$SUITE_DIR" && "$AGENTV" validate targets.yaml 2>&1 | grep -o 'use openai.*' | head -1) || true

echo
echo "== dropping the change"
