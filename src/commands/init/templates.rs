//! The suites `agentv init` writes: one table of files per template and judge language, all
//! embedded in the binary (the judge SDKs too), so a scaffold needs nothing but `agentv` and the
//! judge's language to run.

use std::path::Path;

use agentv_core::schema::SchemaKind;

/// What the suite evaluates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Template {
    /// A mock target graded by keywords and a code judge.
    Basic,
    /// Answers from retrieved context chunks, graded by a code judge asking a (mock) judge
    /// model through the target proxy.
    Rag,
    /// A mock agent's tool calls, graded by tool trajectories and a code judge.
    Agent,
}

impl Template {
    pub fn name(self) -> &'static str {
        match self {
            Self::Basic => "basic",
            Self::Rag => "rag",
            Self::Agent => "agent",
        }
    }
}

/// The language of the suite's code judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum JudgeLanguage {
    /// `python3`, with the SDK module copied beside the judge.
    Python,
    /// `node` (20 or later), with the built SDK copied beside the judge.
    Typescript,
    /// `cargo run` of a small crate depending on `agentv-eval-sdk`.
    Rust,
}

impl JudgeLanguage {
    pub fn name(self) -> &'static str {
        match self {
            Self::Python => "python",
            Self::Typescript => "typescript",
            Self::Rust => "rust",
        }
    }
}

/// One file of a scaffold: its path relative to the suite's directory, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    pub path: String,
    pub text: String,
}

/// Where the Rust judge finds `agentv-eval-sdk`, which is not on crates.io.
#[derive(Debug, Clone, Copy)]
pub enum SdkSource<'a> {
    /// The SDK of the agentv checkout this binary was built from.
    Path(&'a Path),
    /// No checkout found: a placeholder path the user edits.
    Unknown,
}

const LLM_TARGET: &str = include_str!("../../../templates/init/llm_target.yaml");
const GITIGNORE: &str = include_str!("../../../templates/init/gitignore");
const README: &str = include_str!("../../../templates/init/README.md");

/// `(targets.yaml, evals/<template>.yaml, extra files under evals/)` of a template.
fn template_files(template: Template) -> (&'static str, &'static str, &'static [(&'static str, &'static str)]) {
    match template {
        Template::Basic => (
            include_str!("../../../templates/init/basic/targets.yaml"),
            include_str!("../../../templates/init/basic/eval.yaml"),
            &[],
        ),
        Template::Rag => (
            include_str!("../../../templates/init/rag/targets.yaml"),
            include_str!("../../../templates/init/rag/eval.yaml"),
            &[
                (
                    "evals/context/refunds.md",
                    include_str!("../../../templates/init/rag/context/refunds.md"),
                ),
                (
                    "evals/context/shipping.md",
                    include_str!("../../../templates/init/rag/context/shipping.md"),
                ),
                (
                    "evals/context/warranty.md",
                    include_str!("../../../templates/init/rag/context/warranty.md"),
                ),
            ],
        ),
        Template::Agent => (
            include_str!("../../../templates/init/agent/targets.yaml"),
            include_str!("../../../templates/init/agent/eval.yaml"),
            &[],
        ),
    }
}

/// The judge's files, and the `script` the eval file runs it with (relative to `evals/`).
struct Judge {
    files: Vec<File>,
    script: &'static str,
    /// Seconds the first run may take (a Rust judge builds itself on the first case).
    timeout_seconds: Option<u32>,
    /// README lines on running and changing the judge.
    notes: &'static str,
    /// README table rows for the judge's files.
    rows: &'static str,
}

fn file(path: &str, text: &str) -> File {
    File {
        path: path.to_owned(),
        text: text.to_owned(),
    }
}

fn judge(language: JudgeLanguage, sdk: SdkSource<'_>) -> Judge {
    match language {
        JudgeLanguage::Python => Judge {
            files: vec![
                file(
                    "judges/judge.py",
                    include_str!("../../../templates/init/judges/judge.py"),
                ),
                file(
                    "judges/agentv_eval.py",
                    include_str!("../../../sdk/python/agentv_eval/__init__.py"),
                ),
            ],
            script: "[python3, ../judges/judge.py]",
            timeout_seconds: None,
            notes: "- Try the judge by hand: `echo '{\"candidate_answer\": \"Paris\", \"config\": {\"keywords\": \
                    [\"Paris\"]}}' | python3 judges/judge.py`.\n",
            rows: "| `judges/judge.py` | the code judge (Python 3.9+) |\n\
                   | `judges/agentv_eval.py` | the agentv judge SDK, one standard-library module (or `pip install` \
                   agentv's `sdk/python` and delete it) |\n",
        },
        JudgeLanguage::Typescript => Judge {
            files: vec![
                file(
                    "judges/judge.mjs",
                    include_str!("../../../templates/init/judges/judge.mjs"),
                ),
                file(
                    "judges/agentv-eval/index.js",
                    include_str!("../../../sdk/typescript/dist/index.js"),
                ),
                file(
                    "judges/agentv-eval/index.d.ts",
                    include_str!("../../../sdk/typescript/dist/index.d.ts"),
                ),
                file("judges/agentv-eval/package.json", "{\"type\": \"module\"}\n"),
            ],
            script: "[node, ../judges/judge.mjs]",
            timeout_seconds: None,
            notes: "- Try the judge by hand: `echo '{\"candidate_answer\": \"Paris\", \"config\": {\"keywords\": \
                    [\"Paris\"]}}' | node judges/judge.mjs`.\n\
                    - For TypeScript, write `judge.ts` with the same import, compile it with `tsc` (the types \
                    are in `judges/agentv-eval/index.d.ts`) or run it with Bun, and change `script:`.\n",
            rows: "| `judges/judge.mjs` | the code judge (Node 20+, no install) |\n\
                   | `judges/agentv-eval/` | the agentv judge SDK, built (`index.js`) with its types (`index.d.ts`) |\n",
        },
        JudgeLanguage::Rust => Judge {
            files: vec![
                file(
                    "judges/judge/Cargo.toml",
                    &include_str!("../../../templates/init/judges/rust/Cargo.toml")
                        .replace("{{SDK_DEPENDENCY}}", &sdk_dependency(sdk)),
                ),
                file(
                    "judges/judge/src/main.rs",
                    include_str!("../../../templates/init/judges/rust/src/main.rs"),
                ),
            ],
            script: "[cargo, run, --quiet, --manifest-path, ../judges/judge/Cargo.toml]",
            timeout_seconds: Some(600),
            notes: "- The judge is built by `cargo run` on the first case (a minute or so), then reused; build it \
                    ahead with `cargo build --manifest-path judges/judge/Cargo.toml`. To skip Cargo on each \
                    case, point `script:` at the binary: `[../judges/judge/target/debug/judge]`.\n\
                    - `agentv-eval-sdk` is not on crates.io: `judges/judge/Cargo.toml` names it by path (an agentv \
                    checkout); for another machine, change it to a `git = \"...\"` dependency.\n",
            rows: "| `judges/judge/` | the code judge, a Rust crate on `agentv-eval-sdk` |\n",
        },
    }
}

/// The `agentv-eval-sdk` line of the Rust judge's `Cargo.toml`.
fn sdk_dependency(sdk: SdkSource<'_>) -> String {
    match sdk {
        SdkSource::Path(dir) => match dir.to_str() {
            Some(dir) => format!("agentv-eval-sdk = {{ path = \"{}\" }}", toml_escape(dir)),
            None => sdk_dependency(SdkSource::Unknown),
        },
        SdkSource::Unknown => {
            "# agentv-eval-sdk is not on crates.io: point `path` at the agentv-eval-sdk directory of an \
             agentv checkout\n# (or use `git = \"<agentv repository URL>\"`).\n\
             agentv-eval-sdk = { path = \"../../../agentv/agentv-eval-sdk\" }"
                .to_owned()
        }
    }
}

/// `text` as the inside of a TOML basic string.
fn toml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Puts the judge's `script` (and, for a judge that builds itself, a longer timeout) where the
/// eval file says `script: {{SCRIPT}}`.
fn with_script(eval: &str, judge: &Judge) -> String {
    let mut out = String::with_capacity(eval.len());
    for line in eval.split_inclusive('\n') {
        if !line.contains("{{SCRIPT}}") {
            out.push_str(line);
            continue;
        }
        out.push_str(&line.replace("{{SCRIPT}}", judge.script));
        if let Some(secs) = judge.timeout_seconds {
            let indent = &line[..line.len() - line.trim_start().len()];
            out.push_str(&format!(
                "{indent}timeout_seconds: {secs}          # the first case builds the judge\n"
            ));
        }
    }
    out
}

/// Every file of the suite `agentv init` writes, in the order it writes them.
pub fn scaffold(template: Template, language: JudgeLanguage, sdk: SdkSource<'_>) -> Vec<File> {
    let (targets, eval, extra) = template_files(template);
    let judge = judge(language, sdk);
    let name = template.name();
    let readme = README
        .replace("{{TEMPLATE}}", name)
        .replace("{{JUDGE}}", language.name())
        .replace("{{FILES}}", judge.rows)
        .replace("{{JUDGE_NOTES}}", judge.notes.trim_end());
    let mut files = vec![
        file("targets.yaml", &targets.replace("{{LLM_TARGET}}\n", LLM_TARGET)),
        file(&format!("evals/{name}.yaml"), &with_script(eval, &judge)),
    ];
    files.extend(extra.iter().map(|(path, text)| file(path, text)));
    files.extend(judge.files);
    files.push(file("schemas/eval.schema.json", &SchemaKind::Eval.render()));
    files.push(file("schemas/targets.schema.json", &SchemaKind::Targets.render()));
    files.push(file(".gitignore", GITIGNORE));
    files.push(file("README.md", &readme));
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Template {
        const ALL: [Template; 3] = [Template::Basic, Template::Rag, Template::Agent];
    }

    impl JudgeLanguage {
        const ALL: [JudgeLanguage; 3] = [JudgeLanguage::Python, JudgeLanguage::Typescript, JudgeLanguage::Rust];
    }

    const PLACEHOLDERS: [&str; 7] = [
        "{{SCRIPT}}",
        "{{LLM_TARGET}}",
        "{{TEMPLATE}}",
        "{{JUDGE}}",
        "{{FILES}}",
        "{{JUDGE_NOTES}}",
        "{{SDK_DEPENDENCY}}",
    ];

    #[test]
    fn every_placeholder_is_filled() {
        for template in Template::ALL {
            for language in JudgeLanguage::ALL {
                for sdk in [SdkSource::Path(Path::new("/src/agentv-eval-sdk")), SdkSource::Unknown] {
                    for f in scaffold(template, language, sdk) {
                        for placeholder in PLACEHOLDERS {
                            assert!(!f.text.contains(placeholder), "{}: {placeholder}", f.path);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn paths_are_unique_and_relative() {
        for template in Template::ALL {
            for language in JudgeLanguage::ALL {
                let files = scaffold(template, language, SdkSource::Unknown);
                let mut paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
                assert!(
                    paths.iter().all(|p| !p.starts_with('/') && !p.contains("..")),
                    "{paths:?}"
                );
                paths.sort_unstable();
                let n = paths.len();
                paths.dedup();
                assert_eq!(paths.len(), n, "{template:?} {language:?}");
            }
        }
    }

    #[test]
    fn sdk_path_is_a_valid_toml_string() {
        let line = sdk_dependency(SdkSource::Path(Path::new("/a \"b\"\\c/agentv-eval-sdk")));
        assert_eq!(line, r#"agentv-eval-sdk = { path = "/a \"b\"\\c/agentv-eval-sdk" }"#);
    }

    #[test]
    fn a_rust_judge_gets_time_to_build() {
        let judge = judge(JudgeLanguage::Rust, SdkSource::Unknown);
        let eval = with_script("    - name: j\n      script: {{SCRIPT}}\n      keywords: [a]\n", &judge);
        assert!(eval.contains("\n      timeout_seconds: 600 "), "{eval}");
        assert!(eval.ends_with("      keywords: [a]\n"), "{eval}");
    }
}
