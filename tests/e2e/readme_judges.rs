//! The README's "Write a judge" blocks work as written: the Python, TypeScript and Rust judges
//! are copied out of README.md into a suite made of the shipped mock example, and each grades
//! its cases by asking a fake judge model through agentv's target proxy.

use std::path::PathBuf;

use agentv_testkit::llm::{Api, FakeLlm};
use agentv_testkit::toolchains::{cargo_build, judge_target_dir, require};
use agentv_testkit::{Project, repo_root};
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Parser, Tag, TagEnd};

/// The judge model's verdict, which every README judge passes through as its result.
const VERDICT: &str = r#"{"score": 0.8, "reasoning": "the fake judge model agrees"}"#;

/// The fenced blocks of the README section titled `title`: `(language, text)`.
fn section_blocks(markdown: &str, title: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut heading: Option<String> = None;
    let mut in_section = false;
    let mut open: Option<(String, String)> = None;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                if level <= HeadingLevel::H2 {
                    in_section = false;
                }
                heading = Some(String::new());
            }
            Event::End(TagEnd::Heading(_)) => in_section |= heading.take().is_some_and(|h| h == title),
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(lang))) if in_section => {
                open = Some((lang.to_string(), String::new()));
            }
            Event::Text(text) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&text);
                } else if let Some((_, body)) = open.as_mut() {
                    body.push_str(&text);
                }
            }
            Event::End(TagEnd::CodeBlock) => blocks.extend(open.take()),
            _ => {}
        }
    }
    blocks
}

fn copy(rel: &str) -> String {
    std::fs::read_to_string(repo_root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The shipped mock example's targets, its judge model replaced by the fake LLM.
fn targets_with_fake_judge(fake: &FakeLlm) -> String {
    let shipped = copy("examples/mock/targets.yaml");
    let at = shipped
        .find("  - name: mock-judge")
        .expect("examples/mock/targets.yaml has the mock-judge target");
    format!(
        "{}{}",
        &shipped[..at],
        Api::OpenAi.target("mock-judge", &fake.uri(), "fake-key")
    )
}

/// The shipped capitals suite, its suite-wide evaluators replaced by `evaluators`.
fn capitals_graded_by(evaluators: &str) -> String {
    let shipped = copy("examples/mock/evals/capitals.yaml");
    let start = shipped
        .find("  evaluators:\n")
        .expect("capitals.yaml has suite evaluators");
    let end = shipped.find("\nevalcases:").expect("capitals.yaml has evalcases");
    format!("{}  evaluators:\n{evaluators}{}", &shipped[..start], &shipped[end..])
}

/// Builds the README's Rust judge as a tiny crate on this checkout's SDK; returns its binary.
fn build_rust_judge(p: &Project, main_rs: &str) -> PathBuf {
    let dir = p.path().join("judges/readme-judge");
    let sdk = repo_root().join("agentv-eval-sdk");
    let manifest = format!(
        "[package]\nname = \"readme-judge\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n\
         [workspace]\n\n[dependencies]\nagentv-eval-sdk = {{ path = {:?} }}\nserde_json = \"1\"\n",
        sdk.display().to_string()
    );
    std::fs::create_dir_all(dir.join("src")).expect("crate dirs");
    std::fs::write(dir.join("Cargo.toml"), manifest).expect("manifest");
    std::fs::write(dir.join("src/main.rs"), main_rs).expect("main.rs");
    cargo_build(&dir.join("Cargo.toml"));
    judge_target_dir().join("debug/readme-judge")
}

fn evaluator(name: &str, script: &str) -> String {
    format!("    - {{name: {name}, type: code_judge, script: {script}, target: true}}\n")
}

/// The TypeScript SDK as `npm install ./sdk/typescript` leaves it.
fn install_typescript_sdk(p: &Project) {
    let dir = p.path().join("node_modules/agentv-eval");
    std::fs::create_dir_all(dir.join("dist")).expect("node_modules");
    for rel in ["package.json", "dist/index.js", "dist/index.d.ts"] {
        std::fs::write(dir.join(rel), copy(&format!("sdk/typescript/{rel}"))).expect("sdk file");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn readme_judges_grade_the_mock_example_through_the_target_proxy() {
    let readme = copy("README.md");
    let blocks = section_blocks(&readme, "Write a judge");
    let langs: Vec<&str> = blocks.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(langs, ["python", "ts", "rust"], "the README's judge blocks");
    let node = require("node", "the README's TypeScript judge");

    let fake = FakeLlm::builder().answer(VERDICT).start().await;
    let p = Project::new()
        .file("targets.yaml", &targets_with_fake_judge(&fake))
        .file("evals/notes.md", &copy("examples/mock/evals/notes.md"))
        .file("judges/agentv_eval.py", &copy("sdk/python/agentv_eval/__init__.py"))
        .file("judges/grade.py", &blocks[0].1)
        .file("judges/grade.mjs", &blocks[1].1);
    install_typescript_sdk(&p);
    let rust_judge = build_rust_judge(&p, &blocks[2].1);

    let mut evaluators = evaluator("python", "[python3, ../judges/grade.py]");
    if node {
        evaluators.push_str(&evaluator("typescript", "[node, ../judges/grade.mjs]"));
    }
    evaluators.push_str(&evaluator("rust", &format!("[{:?}]", rust_judge.display().to_string())));
    std::fs::write(p.path().join("evals/capitals.yaml"), capitals_graded_by(&evaluators)).expect("eval file");

    let cmd = p.command(&[
        "eval",
        "evals/capitals.yaml",
        "--eval-id",
        "capital-of-*",
        "--out",
        "r.jsonl",
    ]);
    p.output_async(cmd).await.code(0);

    let judges: &[&str] = if node {
        &["python", "typescript", "rust"]
    } else {
        &["python", "rust"]
    };
    let bodies: Vec<String> = fake
        .requests()
        .await
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    for (id, question, answer) in [
        (
            "capital-of-france",
            "What is the capital of France?",
            "The capital of France is Paris.",
        ),
        (
            "capital-of-japan",
            "What is the capital of Japan?",
            "Tokyo is the capital of Japan",
        ),
    ] {
        let record = p.result("r.jsonl", id);
        for name in judges {
            let grade = record["evaluator_results"]
                .as_array()
                .expect("grades")
                .iter()
                .find(|g| g["name"] == *name)
                .unwrap_or_else(|| panic!("{id}: no {name} grade in {record}"));
            assert!(grade.get("error").is_none(), "{id} {name}: {grade}");
            assert_eq!(grade["score"], 0.8, "{id} {name}: {grade}");
            assert_eq!(grade["reasoning"], "the fake judge model agrees", "{id} {name}");
            assert_eq!(
                grade["details"]["target_proxy"]["call_count"], 1,
                "{id} {name}: {grade}"
            );
        }
        let asked = bodies
            .iter()
            .filter(|b| b.contains(question) && b.contains(answer))
            .count();
        assert_eq!(
            asked,
            judges.len(),
            "{id}: one model call per judge, with question and answer"
        );
    }
}

#[test]
fn section_blocks_stop_at_the_next_section() {
    let md = "# T\n## Write a judge\ntext\n```python\na\n```\n### Sub\n```rust\nb\n```\n## Next\n```ts\nc\n```\n";
    let blocks = section_blocks(md, "Write a judge");
    assert_eq!(
        blocks,
        [
            ("python".to_owned(), "a\n".to_owned()),
            ("rust".to_owned(), "b\n".to_owned())
        ]
    );
    assert!(section_blocks(md, "Missing").is_empty());
}
