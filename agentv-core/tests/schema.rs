//! The JSON Schemas under `schema/` are the ones the key tables generate, every shipped example
//! satisfies them and names them for editors, and they agree with the loaders: what the
//! loaders accept the schemas accept, and the mistakes the loaders report the schemas reject.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentv_core::config::Severity;
use agentv_core::config::node::parse_yaml;
use agentv_core::load::{Env, Secrets, Workspace, is_targets_file_name, load_eval_file, load_targets_file};
use agentv_core::providers::TargetRegistry;
use agentv_core::schema::SchemaKind;
use serde_json::Value;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn validator(kind: SchemaKind) -> jsonschema::Validator {
    jsonschema::validator_for(&kind.schema()).expect("the generated schema is a valid JSON Schema")
}

fn json_of(yaml: &str) -> Value {
    parse_yaml(yaml).expect("valid YAML").to_json()
}

/// Why `yaml` fails the schema, one line per error; empty when it passes.
fn schema_errors(validator: &jsonschema::Validator, yaml: &str) -> Vec<String> {
    let instance = json_of(yaml);
    validator
        .iter_errors(&instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn committed_schemas_match_the_key_tables() {
    for kind in [SchemaKind::Eval, SchemaKind::Targets] {
        let path = repo_root().join(kind.path());
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        let name = if kind == SchemaKind::Eval { "eval" } else { "targets" };
        assert!(
            committed == kind.render(),
            "{} is out of date with the key tables; regenerate it with\n  cargo run -q -- schema {name} > {}",
            kind.path(),
            kind.path()
        );
    }
}

/// Every YAML file under `examples/`, as an eval file or a targets file.
fn example_files() -> Vec<(PathBuf, SchemaKind)> {
    fn visit(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("readable").flatten() {
            let path = entry.path();
            if path.is_dir() {
                // `examples/ci` holds CI workflows, not agentv files.
                if !(path.ends_with("target") || path.ends_with("examples/ci")) {
                    visit(&path, out);
                }
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml")
                // promptfoo configs name promptfoo's own schema.
                && !path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("promptfooconfig."))
            {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    visit(&repo_root().join("examples"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let kind = if is_targets_file_name(&f) {
                SchemaKind::Targets
            } else {
                SchemaKind::Eval
            };
            (f, kind)
        })
        .collect()
}

#[test]
fn every_example_names_its_schema_and_satisfies_it() {
    let files = example_files();
    assert!(files.len() >= 10, "{files:?}");
    for (file, kind) in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        let first = text.lines().next().unwrap_or_default();
        let rel = first
            .strip_prefix("# yaml-language-server: $schema=")
            .unwrap_or_else(|| panic!("{}: the first line must name its schema for editors", file.display()));
        let named = file.parent().expect("dir").join(rel);
        assert_eq!(
            std::fs::canonicalize(&named).ok(),
            std::fs::canonicalize(repo_root().join(kind.path())).ok(),
            "{}: {rel} is not {}",
            file.display(),
            kind.path()
        );
        let errors = schema_errors(&validator(kind), &text);
        assert!(errors.is_empty(), "{}:\n  {}", file.display(), errors.join("\n  "));
    }
}

/// Writes `yaml` as `e.yaml` (with a `notes.md` beside it) and loads it; the loader's errors
/// and warnings.
fn load_eval(yaml: &str) -> (Vec<String>, Vec<String>) {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::create_dir(tmp.path().join(".git")).expect("git");
    std::fs::write(tmp.path().join("e.yaml"), yaml).expect("write");
    std::fs::write(tmp.path().join("notes.md"), "notes").expect("write");
    let ws = Workspace::from_cwd(tmp.path().to_path_buf());
    let suite = load_eval_file(Path::new("e.yaml"), &ws);
    split(&suite.diagnostics)
}

fn split(diagnostics: &[agentv_core::load::Diagnostic]) -> (Vec<String>, Vec<String>) {
    let (errors, warnings): (Vec<_>, Vec<_>) = diagnostics.iter().partition(|d| d.severity == Severity::Error);
    (
        errors.iter().map(ToString::to_string).collect(),
        warnings.iter().map(ToString::to_string).collect(),
    )
}

const CASE: &str = "{id: c, expected_outcome: x, input_messages: [{role: user, content: q}]}";

fn suite_with_graders(graders: &str) -> String {
    format!("execution:\n  evaluators:\n{graders}\nevalcases:\n  - {CASE}\n")
}

#[test]
fn every_form_the_eval_loader_accepts_the_schema_accepts() {
    let forms = [
        ("outcome alias and the input short form", "evalcases:\n  - {id: a, outcome: x, input: question}\n".to_owned()),
        (
            "text written as numbers, legacy keys, $schema",
            "$schema: ../schema/eval.schema.json\ndescription: d\ndataset: 7\ntarget: default\nevaluator: llm_judge\nevalcases:\n  - {id: 42, expected_outcome: x, conversation_id: 7, note: {any: thing}, input_messages: [{role: user, content: 3}]}\n"
                .to_owned(),
        ),
        (
            "content as text, mapping and segments",
            "evalcases:\n  - id: a\n    expected_outcome: x\n    input_messages:\n      - {role: system, content: {rules: [1, 2]}}\n      - role: user\n        content:\n          - {type: text, value: Look}\n          - {type: file, value: notes.md}\n          - {type: image, url: x.png}\n          - plain text\n    expected_messages:\n      - {role: assistant, tool_calls: [{tool: search}]}\n      - {role: assistant, name: bot, content: done}\n"
                .to_owned(),
        ),
        (
            "expected_output as JSON, per-case execution",
            "evalcases:\n  - id: a\n    expected_outcome: x\n    input: q\n    expected_output: {k: 1}\n    execution:\n      evaluators: [{type: keywords, expected: [k]}]\n"
                .to_owned(),
        ),
        (
            "script as a string and as argv, camelCase keys, proxy forms, config keys",
            suite_with_graders(
                "    - {type: code_judge, script: 'echo {}', timeoutSeconds: 5, target: true, min_words: 3, custom: {a: 1}}\n    - {type: code, script: [python3, judge.py, 3], target: {maxCalls: 3}}\n    - {type: code-judge, script: [x], judge: {max_calls: 1}, timeout_seconds: 0.5}\n    - {type: code_judge, script: x, target: false}",
            ),
        ),
        (
            "llm_judge spellings and aliases",
            suite_with_graders(
                "    - {type: llm_judge, weight: 0}\n    - {type: llm-judge, name: j, promptPath: 'Grade {{ candidate_answer }} against {{ expected_outcome }}', trace_summary: true}",
            ),
        ),
        (
            "tool_trajectory modes",
            suite_with_graders(
                "    - {type: tool_trajectory, mode: any_order, minimums: {search: 2}}\n    - {type: tool-trajectory, mode: exact, expected: [{tool: a, args: any}, {tool: b, args: {q: 1}, input: doc, output: doc}]}",
            ),
        ),
        (
            "keywords with regexes",
            suite_with_graders(
                "    - {type: keywords, expected: [Paris, {regex: 'P.ris'}], forbidden: [x], caseSensitive: true, detect_errors: false}",
            ),
        ),
    ];
    let validator = validator(SchemaKind::Eval);
    for (what, yaml) in forms {
        let (errors, _) = load_eval(&yaml);
        assert!(errors.is_empty(), "{what}: the loader accepts it:\n{errors:#?}");
        let rejected = schema_errors(&validator, &yaml);
        assert!(
            rejected.is_empty(),
            "{what}: the schema rejects it:\n  {}",
            rejected.join("\n  ")
        );
    }
}

#[test]
fn mistakes_the_eval_loader_reports_the_schema_rejects() {
    let mistakes = [
        ("an unknown grader type", suite_with_graders("    - {type: llm-judgee}")),
        (
            "a weight that is not a number",
            suite_with_graders("    - {type: llm_judge, weight: high}"),
        ),
        (
            "a negative weight",
            suite_with_graders("    - {type: llm_judge, weight: -1}"),
        ),
        (
            "an unknown tool_trajectory mode",
            suite_with_graders("    - {type: tool_trajectory, mode: sideways, expected: [{tool: a}]}"),
        ),
        (
            "a script that is a number",
            suite_with_graders("    - {type: code_judge, script: 5}"),
        ),
        (
            "a timeout with a unit",
            suite_with_graders("    - {type: code_judge, script: x, timeout_seconds: 10s}"),
        ),
        (
            "a misspelled grader key",
            suite_with_graders("    - {type: keywords, expected: [a], wieght: 2}"),
        ),
        ("no evalcases", "description: nothing to run\n".to_owned()),
        (
            "an unknown role",
            "evalcases:\n  - {id: a, expected_outcome: x, input_messages: [{role: robot, content: q}]}\n".to_owned(),
        ),
        (
            "a misspelled case key",
            "evalcases:\n  - {id: a, expected_outcom: x, input: q}\n".to_owned(),
        ),
        (
            "a case without an id",
            "evalcases:\n  - {expected_outcome: x, input: q}\n".to_owned(),
        ),
    ];
    let validator = validator(SchemaKind::Eval);
    for (what, yaml) in mistakes {
        let (errors, warnings) = load_eval(&yaml);
        assert!(
            !errors.is_empty() || !warnings.is_empty(),
            "{what}: the loader reports it"
        );
        assert!(
            !schema_errors(&validator, &yaml).is_empty(),
            "{what}: the schema accepts it"
        );
    }
}

/// Loads `yaml` as a targets file and builds every target as `agentv validate` does, with
/// `vars` set: the errors and warnings of both.
fn load_targets(yaml: &str, vars: &[(&str, &str)]) -> (Vec<String>, Vec<String>) {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = tmp.path().join("targets.yaml");
    std::fs::write(&path, yaml).expect("write");
    let file = load_targets_file(&path);
    let (mut errors, mut warnings) = split(&file.diagnostics);
    if errors.is_empty() {
        let env = Env::from_pairs(vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        let registry = TargetRegistry::new(Some(file), Arc::new(env), Secrets::default());
        errors.extend(registry.check_all().iter().map(ToString::to_string));
        warnings.extend(registry.take_warnings().iter().map(ToString::to_string));
    }
    (errors, warnings)
}

#[test]
fn every_form_the_targets_loader_accepts_the_schema_accepts() {
    let yaml = "$schema: ../schema/targets.schema.json\ntargets:\n  - {name: m, provider: MOCK, response: {text: hi}, responses: {c1: [1]}, delayMs: 5}\n  - name: c\n    provider: cli\n    commandTemplate: 'run {PROMPT} > {OUTPUT_FILE}'\n    judgeTarget: m\n    workers: 2\n    providerBatching: true\n    keep_output_files: true\n    cwd: .\n    healthcheck: {type: command, commandTemplate: 'true', timeoutSeconds: 5}\n  - {name: g, provider: Google, api_key: '${{ AGENTV_S_KEY }}', temperature: 0.2, maxTokens: 10, retry_status_codes: [429]}\n  - {name: z, provider: azure-openai, resource_name: res, deployment: d, apiKey: '${{ AGENTV_S_KEY }}', version: '2024-01-01'}\n  - {name: a, provider: anthropic, model: m, api_key: '${{ AGENTV_S_KEY }}', thinking: {type: adaptive}, thinkingBudget: 1024}\n  - {name: o, provider: openai, model: m, base_url: 'http://127.0.0.1:9/v1', organization: org}\n  - {name: cc, provider: claude, executable: /bin/sh, arguments: [--x], systemPrompt: be brief, log_directory: logs}\n  - {name: cx, provider: codex-cli, binary: /bin/sh, ask_for_approval: never, log_format: json}\n  - {name: v, provider: vscode-insiders, dispatch_command: 'echo {PROMPT_FILE}', wait: false, dry_run: true}\n";
    let (errors, warnings) = load_targets(yaml, &[("AGENTV_S_KEY", "sk-schema-test-key")]);
    assert!(errors.is_empty(), "the loader accepts it:\n{errors:#?}");
    assert!(warnings.is_empty(), "without a warning:\n{warnings:#?}");
    let rejected = schema_errors(&validator(SchemaKind::Targets), yaml);
    assert!(
        rejected.is_empty(),
        "the schema rejects it:\n  {}",
        rejected.join("\n  ")
    );
}

#[test]
fn mistakes_the_targets_loader_reports_the_schema_rejects() {
    let mistakes = [
        ("an unknown provider", "targets:\n  - {name: t, provider: warp-drive}\n"),
        (
            "a misspelled setting",
            "targets:\n  - {name: t, provider: mock, respones: hi}\n",
        ),
        (
            "a setting of another provider",
            "targets:\n  - {name: t, provider: mock, model: m}\n",
        ),
        ("no workers", "targets:\n  - {name: t, provider: mock, workers: 0}\n"),
        (
            "a timeout that is not a number",
            "targets:\n  - {name: t, provider: cli, command_template: x, timeout_seconds: soon}\n",
        ),
        ("a target without a provider", "targets:\n  - {name: t}\n"),
        ("no targets list", "target: []\n"),
    ];
    let validator = validator(SchemaKind::Targets);
    for (what, yaml) in mistakes {
        let (errors, warnings) = load_targets(yaml, &[]);
        assert!(
            !errors.is_empty() || !warnings.is_empty(),
            "{what}: the loader reports it"
        );
        assert!(
            !schema_errors(&validator, yaml).is_empty(),
            "{what}: the schema accepts it"
        );
    }
}
