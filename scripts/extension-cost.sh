#!/usr/bin/env bash
# What extending agentv costs, in files touched: adds a throwaway provider (`shout`, answers with
# the question in capitals), a throwaway grader (`short_answer`, passes answers of at most `max`
# words), a throwaway report format (`csv`, one line per case) and a throwaway `eval` flag
# (`--grace SECS`, how long in-flight cases may finish after Ctrl-C), builds, runs a tiny suite
# through them, prints the files each touched, then drops the change. See
# docs/architecture.md#add-a-provider, #add-a-grader and #add-a-report-format.
#
#   scripts/extension-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PROVIDER=agentv-core/src/providers/shout.rs
GRADER=agentv-core/src/evaluators/short_answer.rs
FORMAT=agentv-core/src/report/csv.rs
PROVIDER_TABLE=agentv-core/src/providers/mod.rs
GRADER_TABLE=agentv-core/src/evaluators/mod.rs
FORMAT_TABLE=agentv-core/src/report/mod.rs
FLAG_FILES=(src/cli.rs src/commands/eval.rs)
NEW=("$PROVIDER" "$GRADER" "$FORMAT")
CHANGED=("$PROVIDER_TABLE" "$GRADER_TABLE" "$FORMAT_TABLE" "${FLAG_FILES[@]}")

for f in "${NEW[@]}"; do
  if [ -e "$f" ]; then
    echo "error: $f already exists" >&2
    exit 2
  fi
done
if ! git diff --quiet -- "${CHANGED[@]}"; then
  echo "error: ${CHANGED[*]} have uncommitted changes; commit or stash them first" >&2
  exit 2
fi

SUITE_DIR=$(mktemp -d)
cleanup() {
  git reset -q -- "${NEW[@]}" 2>/dev/null || true
  rm -f "${NEW[@]}"
  git checkout -q -- "${CHANGED[@]}"
  rm -rf "$SUITE_DIR"
}
trap cleanup EXIT

cat > "$PROVIDER" <<'EOF'
//! `shout`: answers with the question it was asked, in capitals.

use std::sync::Arc;

use super::{
    BuildContext, Provider, ProviderClass, ProviderEntry, ProviderFuture, ProviderKind, ProviderRequest,
    ProviderResponse, TargetSettings,
};
use crate::config::{Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&ProviderEntry] = &[&ENTRY];

pub(crate) static ENTRY: ProviderEntry = ProviderEntry {
    name: "shout",
    aliases: &["loud"],
    doc: "Answers with the question in capitals, after an optional prefix.",
    class: ProviderClass::Mock,
    batch: false,
    cacheable: false,
    executable: None,
    container: false,
    keys: &KEYS,
    build,
};

const OWN: &[Key] = &[Key::new("prefix", Kind::Text, "Put before the question.")];
const KEYS: KeyTable = KeyTable::new("shout", "Settings of a `shout` target.", &[OWN]);

#[derive(Debug)]
struct Shout {
    name: String,
    prefix: String,
}

fn build(s: &mut TargetSettings<'_>, ctx: &BuildContext<'_>) -> Option<Arc<dyn Provider>> {
    let prefix = s.string("prefix", false).unwrap_or_default();
    Some(Arc::new(Shout {
        name: ctx.target.to_owned(),
        prefix,
    }))
}

impl Provider for Shout {
    fn target_name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::of(&ENTRY)
    }

    fn invoke<'a>(&'a self, request: &'a ProviderRequest) -> ProviderFuture<'a, ProviderResponse> {
        Box::pin(async move {
            Ok(ProviderResponse::text(format!("{}{}", self.prefix, request.question.to_uppercase())))
        })
    }
}
EOF

cat > "$GRADER" <<'EOF'
//! `short_answer`: passes answers of at most `max` words.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Grade, GradeContext, Grader, GraderEntry, Names, ParseContext};
use crate::config::{Fields, IntRange, Key, KeyTable, Kind};

pub(crate) static ENTRIES: &[&GraderEntry] = &[&ENTRY];

pub(crate) static ENTRY: GraderEntry = GraderEntry {
    name: "short_answer",
    names: Names {
        v2: &["short_answer", "short-answer"],
        v4: &["short-answer"],
        promptfoo: &[],
    },
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

cat > "$FORMAT" <<'EOF'
//! `csv`: one line per case (`eval_id,target,score,verdict`), for a spreadsheet.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use super::format::{FormatEntry, ReportTarget};
use super::sink::{Row, Sink};

pub(crate) static FORMAT: FormatEntry = FormatEntry {
    name: "csv",
    aliases: &[],
    label: "CSV",
    extension: "csv",
    doc: "one line per case, for a spreadsheet",
    open: |to: &ReportTarget<'_>| {
        let mut out = BufWriter::new(File::create(to.path)?);
        out.write_all(b"eval_id,target,score,verdict\n")?;
        Ok(Box::new(Csv { path: to.path.to_path_buf(), out }))
    },
};

struct Csv {
    path: PathBuf,
    out: BufWriter<File>,
}

fn field(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

impl Sink for Csv {
    fn write(&mut self, row: &Row<'_>) -> io::Result<()> {
        let r = row.record();
        let verdict = serde_json::to_value(r.verdict).map_err(io::Error::other)?;
        let verdict = verdict.as_str().unwrap_or_default();
        writeln!(self.out, "{},{},{:.3},{verdict}", field(&r.eval_id), field(&r.target), r.score)
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    fn describe(&self) -> String {
        format!("CSV report {}", self.path.display())
    }
}
EOF

# One table line each (provider, grader, report format).
sed -i 's/^    mock,$/    mock,\n    shout,/' "$PROVIDER_TABLE"
sed -i 's/^    keywords,$/    keywords,\n    short_answer,/' "$GRADER_TABLE"
sed -i 's/^    html,$/    html,\n    csv,/' "$FORMAT_TABLE"
git add -N "${NEW[@]}"

# The `eval` flag: a field of the arguments, and the run option it sets.
python3 - <<'EOF'
cli = open("src/cli.rs").read()
anchor = "    pub repeat: u32,\n"
assert anchor in cli
cli = cli.replace(
    anchor,
    anchor + "\n"
    "    /// After Ctrl-C or SIGTERM, let in-flight cases finish for this many seconds.\n"
    '    #[arg(long, value_name = "SECS", default_value_t = 10)]\n'
    "    pub grace: u64,\n",
    1,
)
open("src/cli.rs", "w").write(cli)
ev = open("src/commands/eval.rs").read()
assert "grace: INTERRUPT_GRACE," in ev
ev = ev.replace("grace: INTERRUPT_GRACE,", "grace: Duration::from_secs(args.grace),", 1)
ev = ev.replace(
    "/// How long in-flight cases may finish after Ctrl-C or SIGTERM.\nconst INTERRUPT_GRACE: Duration = Duration::from_secs(10);\n\n",
    "",
    1,
)
open("src/commands/eval.rs", "w").write(ev)
EOF

echo "== files touched, per extension"
for what in "provider:$PROVIDER $PROVIDER_TABLE" "grader:$GRADER $GRADER_TABLE" \
            "report format:$FORMAT $FORMAT_TABLE" "eval flag:${FLAG_FILES[*]}"; do
  name=${what%%:*}
  # shellcheck disable=SC2086
  stat=$(git diff --numstat -- ${what#*:})
  files=$(printf '%s\n' "$stat" | grep -c .)
  lines=$(printf '%s\n' "$stat" | awk '{a += $1; d += $2} END {print "+" a " -" d}')
  echo "$name: $files file(s) touched ($lines lines)"
  printf '%s\n' "$stat" | awk '{print "    " $3 " +" $1 " -" $2}'
done
echo
git diff -U0 -- "$PROVIDER_TABLE" "$GRADER_TABLE" "$FORMAT_TABLE" | grep '^[+-] '
echo
echo "== cargo build"
cargo build --quiet --bin agentv

cat > "$SUITE_DIR/targets.yaml" <<'EOF'
targets:
  - name: default
    provider: loud
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
echo "== agentv eval (a tiny suite through all four)"
AGENTV="$PWD/target/debug/agentv"
status=0
(cd "$SUITE_DIR" && "$AGENTV" eval suite.yaml --out results.jsonl --grace 3 --report csv) || status=$?
echo "exit code: $status"
python3 - "$SUITE_DIR/results.jsonl" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    e = r["evaluator_results"][0]
    print(f"{r['eval_id']}: answer {r['candidate_answer']!r} -> {e['type']} score {e['score']} {e['hits'] or e['misses']}")
EOF
echo "-- results.csv"
cat "$SUITE_DIR/results.csv"

echo
echo "== the new entries reach the schemas and the messages"
"$AGENTV" schema targets | grep -c '"shout"' | sed 's/^/"shout" in the targets schema: /'
"$AGENTV" schema eval | grep -c '"short-answer"' | sed 's/^/"short-answer" in the eval schema: /'
printf 'targets:\n  - {name: default, provider: nope}\n' > "$SUITE_DIR/targets.yaml"
(cd "$SUITE_DIR" && "$AGENTV" validate targets.yaml 2>&1 | grep -o 'use openai.*' | head -1) || true
"$AGENTV" eval --help | grep -A1 -- '--grace' | head -2
"$AGENTV" report --help | grep -A1 -- '--report' | head -2

echo
echo "== dropping the change"
