//! Grader lists: the entries normalised (AgentV 4.x `{include: NAME}` templates, bare strings,
//! kebab/snake type names), the keys every grader has parsed once here, the type looked up in
//! the grader table, and running a configured grader into its result.
//! See `docs/architecture.md#generations` for what differs between the file generations.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::grader::{ConfiguredGrader, GradeContext, GraderEntry, ParseContext};
use crate::config::interpolate::interpolate_env;
use crate::config::node::parse_yaml;
use crate::config::{Diagnostics, Fields, Key, KeyTable, Kind, Node, NodeValue, NumberRange, Pos, describe};
use crate::model::{EvaluatorResult, Generation};
use crate::paths::Workspace;

/// Scores from 0 to 1.
const UNIT: NumberRange = NumberRange { min: 0.0, max: 1.0 };

const COMMON: &[Key] = &[
    Key::new("name", Kind::Text, "Shown in results (default: the type)."),
    Key::new("type", Kind::Text, "Which grader (see the grader table).").required(),
    Key::new(
        "weight",
        Kind::Number(NumberRange::NON_NEGATIVE),
        "Share in the case score (default 1; 0 reports without counting).",
    ),
    Key::new(
        "required",
        Kind::OneOf(&[Kind::Bool, Kind::Number(UNIT)]),
        "A gate: when this grader scores below `min_score` (else the case's threshold), the case scores 0. \
         A number is the gate's threshold (deprecated form of `min_score`).",
    ),
    Key::new(
        "min_score",
        Kind::Number(UNIT),
        "The threshold of a `required` grader's gate (alone it does nothing).",
    ),
    Key::new(
        "negate",
        Kind::Bool,
        "Invert the result: score 1 − s, pass and fail swapped.",
    ),
];

/// The keys every grader has, whatever its type.
pub const GRADER_KEYS: KeyTable = KeyTable::new("an evaluator", "One grader.", &[COMMON]);

/// How deep `{include: NAME}` templates may nest.
const MAX_INCLUDE_DEPTH: usize = 3;

/// 2.x grader types AgentV 4.x no longer runs (it skips them with a warning).
const V2_ONLY_TYPES: &[&str] = &["llm_judge", "code_judge"];

/// The grader kinds AgentV 4.x builds in (`agentv-4.md` §2.2): a custom type cannot take these
/// names. (The loader's list of types only 4.x has is a part of it; evaluators do not depend on
/// the loader.)
const V4_BUILT_IN: &[&str] = &[
    "code-grader",
    "llm-grader",
    "rubric",
    "rubrics",
    "composite",
    "tool-trajectory",
    "field-accuracy",
    "latency",
    "cost",
    "token-usage",
    "execution-metrics",
    "skill-trigger",
    "contains",
    "contains-any",
    "contains-all",
    "icontains",
    "icontains-any",
    "icontains-all",
    "starts-with",
    "ends-with",
    "regex",
    "is-json",
    "equals",
    "inline-assert",
];

/// Parses a list of graders. `None` when any entry is invalid (errors are reported): a case
/// graded by an incomplete list would get a misleading score.
///
/// Before parsing, the list is normalised as AgentV 4.x does for every list (case, suite,
/// composite members, templates; `agentv-4.md` §2.2): `{include: NAME}` entries are replaced
/// by the template's `assertions`, and bare strings are gathered into one `rubrics` grader
/// weighted by their number, at the first string's place.
pub fn parse_graders(node: &Node, cx: &mut ParseContext<'_>) -> Option<Vec<ConfiguredGrader>> {
    let Some(items) = node.as_seq() else {
        cx.diags.error(
            node.pos,
            format!("a grader list must be a list, found {}", node.type_name()),
            Some("write each grader as `- type: ...`".to_owned()),
        );
        return None;
    };
    let before = cx.diags.error_count();
    let mut files: Vec<Diagnostics> = Vec::new();
    let mut entries = Vec::new();
    let mut chain = Vec::new();
    expand_includes(items, None, cx.eval_dir, cx, &mut files, &mut chain, &mut entries);
    let entries = gather_bare_strings(entries, cx, &mut files);
    let mut graders = Vec::new();
    for entry in &entries {
        let diags: &mut Diagnostics = match entry.file {
            None => &mut *cx.diags,
            Some(i) => &mut files[i],
        };
        let mut sub = ParseContext {
            ws: cx.ws,
            eval_dir: cx.eval_dir,
            diags,
            file_generation: cx.file_generation,
            current: cx.current.clone(),
            inverse: false,
            env: cx.env,
        };
        if let Some(grader) = parse_grader(&entry.node, &mut sub) {
            graders.push(grader);
        }
    }
    for file in files {
        cx.diags.absorb(file);
    }
    if !graders.is_empty() && graders.iter().all(|g| g.weight == 0.0) {
        cx.diags.warn(
            node.pos,
            "every evaluator has `weight: 0`, so every case they grade scores 0".to_owned(),
            Some("give at least one evaluator a weight above 0".to_owned()),
        );
    }
    (cx.diags.error_count() == before).then_some(graders)
}

/// One list entry after `include` expansion, and the template file it came from (an index
/// into the included files' diagnostics; `None` for the list's own file).
struct Entry {
    node: Node,
    file: Option<usize>,
}

/// Replaces `{include: NAME}` entries by the `assertions` of their template, recursively.
fn expand_includes(
    items: &[Node],
    file: Option<usize>,
    dir: &Path,
    cx: &mut ParseContext<'_>,
    files: &mut Vec<Diagnostics>,
    chain: &mut Vec<PathBuf>,
    out: &mut Vec<Entry>,
) {
    for item in items {
        let Some(name_node) = include_name(item) else {
            out.push(Entry {
                node: item.clone(),
                file,
            });
            continue;
        };
        let diags: &mut Diagnostics = match file {
            None => &mut *cx.diags,
            Some(i) => &mut files[i],
        };
        let Some(name) = name_node.as_str().filter(|n| !n.trim().is_empty()) else {
            diags.error(
                name_node.pos,
                format!("`include` must name a template, found {}", describe(name_node)),
                Some("write `- include: my-template` (a file .agentv/templates/my-template.yaml)".to_owned()),
            );
            continue;
        };
        if chain.len() >= MAX_INCLUDE_DEPTH {
            diags.error(
                name_node.pos,
                format!("template `{name}` is included more than {MAX_INCLUDE_DEPTH} levels deep"),
                Some("include templates from the eval file, or from at most two levels of templates".to_owned()),
            );
            continue;
        }
        let Some(path) = find_template(name, dir, cx.ws, name_node.pos, diags) else {
            continue;
        };
        if chain.contains(&path) {
            diags.error(
                name_node.pos,
                format!("template `{name}` includes itself ({})", path.display()),
                Some("remove the include that closes the cycle".to_owned()),
            );
            continue;
        }
        let shown = path
            .strip_prefix(&cx.ws.cwd)
            .map_or_else(|_| path.clone(), Path::to_path_buf);
        let mut template_diags = Diagnostics::new(&shown);
        let list = read_template(&path, cx, &mut template_diags);
        files.push(template_diags);
        let index = files.len() - 1;
        if let Some(list) = list {
            let Some(items) = list.as_seq() else {
                continue;
            };
            chain.push(path.clone());
            let template_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            expand_includes(items, Some(index), &template_dir, cx, files, chain, out);
            chain.pop();
        }
    }
}

/// The `NAME` of an `{include: NAME}` entry (a mapping with exactly that one key).
fn include_name(item: &Node) -> Option<&Node> {
    match item.as_map()? {
        [(key, value)] if key.as_str() == Some("include") => Some(value),
        _ => None,
    }
}

/// Where template `name` is: a bare name is `.agentv/templates/NAME.yaml` (or `.yml`), anything
/// else a path; both are looked for from `dir` through the search roots.
fn find_template(name: &str, dir: &Path, ws: &Workspace, pos: Pos, diags: &mut Diagnostics) -> Option<PathBuf> {
    let bare = !name.contains(['/', '\\']) && !name.starts_with('.');
    let candidates: Vec<String> = if bare {
        vec![
            format!(".agentv/templates/{name}.yaml"),
            format!(".agentv/templates/{name}.yml"),
        ]
    } else {
        vec![name.to_owned()]
    };
    let mut tried = Vec::new();
    for candidate in &candidates {
        match ws.resolve_file(candidate, dir) {
            Ok(path) => return Some(path),
            Err(paths) => tried.extend(paths),
        }
    }
    let list = tried
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    diags.error(
        pos,
        format!("assertion template `{name}` not found"),
        Some(format!("tried: {list}")),
    );
    None
}

/// The `assertions` list of a template file, `${{ VAR }}` references replaced.
fn read_template(path: &Path, cx: &ParseContext<'_>, diags: &mut Diagnostics) -> Option<Node> {
    let text = crate::config::source::read_text(path, "assertion template", diags)?;
    let mut root = match parse_yaml(&text) {
        Ok(root) => root,
        Err(e) => {
            diags.yaml_syntax(&e);
            return None;
        }
    };
    if let Some(env) = cx.env {
        for unset in interpolate_env(&mut root, &|name| env.get(name)) {
            diags.warn(
                unset.pos,
                format!("`${{{{ {} }}}}` is not set; it reads as empty text", unset.name),
                None,
            );
        }
    }
    match root.get("assertions") {
        Some(list) if list.as_seq().is_some() => Some(list.clone()),
        other => {
            diags.error(
                other.map_or(Pos::new(1, 1), |n| n.pos),
                "an assertion template must be a mapping with an `assertions` list",
                Some("write `assertions:` followed by `- type: ...` entries".to_owned()),
            );
            None
        }
    }
}

/// Gathers the bare strings of a list into one `rubrics` grader (criteria: the strings,
/// trimmed; weight: their number) at the first string's place; empty strings are dropped with
/// a warning. Each visible assertion thus weighs the same (`agentv-4.md` §2.2 step 2).
fn gather_bare_strings(entries: Vec<Entry>, cx: &mut ParseContext<'_>, files: &mut [Diagnostics]) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::with_capacity(entries.len());
    let mut rubrics: Option<(usize, Vec<Node>)> = None;
    for entry in entries {
        let NodeValue::Str(text) = &entry.node.value else {
            out.push(entry);
            continue;
        };
        if text.trim().is_empty() {
            let diags: &mut Diagnostics = match entry.file {
                None => &mut *cx.diags,
                Some(i) => &mut files[i],
            };
            diags.warn(entry.node.pos, "an empty assertion is ignored", None);
            continue;
        }
        let criterion = Node::new(NodeValue::Str(text.trim().to_owned()), entry.node.pos);
        match &mut rubrics {
            Some((_, criteria)) => criteria.push(criterion),
            None => {
                rubrics = Some((out.len(), vec![criterion]));
                out.push(entry);
            }
        }
    }
    if let Some((at, criteria)) = rubrics {
        out[at].node = rubrics_entry(criteria, out[at].node.pos);
    }
    out
}

/// `{type: rubrics, criteria: [...], weight: N}` at `pos`.
pub(crate) fn rubrics_entry(criteria: Vec<Node>, pos: Pos) -> Node {
    let key = |k: &str| Node::new(NodeValue::Str(k.to_owned()), pos);
    let weight = i64::try_from(criteria.len()).unwrap_or(i64::MAX);
    Node::new(
        NodeValue::Map(vec![
            (key("type"), key("rubrics")),
            (key("criteria"), Node::new(NodeValue::Seq(criteria), pos)),
            (key("weight"), Node::new(NodeValue::Int(weight), pos)),
        ]),
        pos,
    )
}

fn parse_grader(node: &Node, cx: &mut ParseContext<'_>) -> Option<ConfiguredGrader> {
    if cx.generation() == Generation::Promptfoo {
        return parse_assertion(node, cx);
    }
    let mut f = Fields::of_named(node, &GRADER_KEYS, "a grader".to_owned(), cx.diags)?;
    let type_name = f.required_string("type", "grader", cx.diags)?;
    let name = f.string("name", cx.diags);
    let weight = f.number("weight", cx.diags).unwrap_or(1.0);
    let (required, numeric_required) = read_required(&mut f, cx);
    let min_score = f.number("min_score", cx.diags).or(numeric_required);
    let negate = f.boolean("negate", cx.diags).unwrap_or(false);
    let type_pos = f.take("type").map_or(node.pos, |n| n.pos);
    // In a 4.x file a custom assertion type may take any name AgentV 4.x does not build in, one
    // of agentv's own graders' included (AgentV 4.42.4's example defines `word-count`).
    let custom = (cx.generation() == Generation::V4 && !V4_BUILT_IN.contains(&type_name.replace('_', "-").as_str()))
        .then(|| custom_type_file(&type_name, cx.eval_dir))
        .flatten();
    let entry = if custom.is_some() {
        None
    } else {
        super::find(cx.generation(), &type_name)
    };
    let Some(entry) = entry else {
        if let Some(file) = custom {
            // A custom assertion type runs as a code grader (`docs/judges.md#custom-assertion-types`).
            return Some(ConfiguredGrader {
                grader: super::custom_assertion::parse(file, &mut f, cx),
                name: name.unwrap_or_else(|| type_name.clone()),
                weight,
                required,
                min_score,
                negate,
                metric: None,
                entry: &super::custom_assertion::ENTRY,
            });
        }
        return unknown_type(&type_name, name, type_pos, (weight, required, min_score, negate), cx);
    };
    if cx.generation() == Generation::V4 && V2_ONLY_TYPES.contains(&entry.type_name()) {
        cx.diags.warn(
            type_pos,
            format!(
                "`{type_name}` is an AgentV 2.x grader: AgentV 4.x skips it, agentv runs it (scores may differ from AgentV 4.x)"
            ),
            Some(format!(
                "use `{}` for AgentV 4.x",
                if entry.type_name() == "llm_judge" { "llm-grader" } else { "code-grader" }
            )),
        );
    }
    let generated =
        super::rules::names_from_configuration(cx.generation()).then(|| generated_name(entry.type_name(), node));
    let grader = parse_own_keys(&mut f, entry, &type_name, cx)?;
    Some(ConfiguredGrader {
        name: name
            .or_else(|| grader.default_name())
            .or(generated)
            .unwrap_or_else(|| entry.type_name().to_owned()),
        weight,
        required,
        min_score,
        negate,
        metric: None,
        entry,
        grader,
    })
}

/// The grader's own keys, read by its entry; then the keys nobody declared are reported.
fn parse_own_keys(
    f: &mut Fields<'_>,
    entry: &'static GraderEntry,
    written: &str,
    cx: &mut ParseContext<'_>,
) -> Option<Arc<dyn super::Grader>> {
    f.add(entry.keys);
    f.rename(entry.type_name());
    cx.current = Some(written.to_owned());
    let grader = (entry.parse)(f, cx);
    cx.current = None;
    f.warn_unknown(cx.diags);
    grader
}

/// A `type` no grader of the file's generation has: an error in a 2.x file (and a promptfoo
/// config); in a 4.x file a grader that scores 0 when it grades, as AgentV 4.x does with a
/// custom type it cannot find.
fn unknown_type(
    type_name: &str,
    name: Option<String>,
    type_pos: Pos,
    (weight, required, min_score, negate): (f64, bool, Option<f64>, bool),
    cx: &mut ParseContext<'_>,
) -> Option<ConfiguredGrader> {
    if cx.generation() != Generation::V4 {
        cx.diags.error(
            type_pos,
            format!("unknown grader type `{type_name}`"),
            Some(format!("use {}", super::known_types())),
        );
        return None;
    }
    // AgentV 4.x reads any other type as a custom one and fails it when it grades: the
    // case still runs, this grader scores 0 (`agentv-4.md` §2.2 step 5, §3.2).
    cx.diags.warn(
        type_pos,
        format!("unknown grader type `{type_name}`: it scores 0 when it grades, as in AgentV 4.x"),
        Some(format!("use {}", super::known_types())),
    );
    let name = name.unwrap_or_else(|| type_name.to_owned());
    Some(ConfiguredGrader {
        grader: Arc::new(UnknownType {
            message: format!("Grader '{name}' failed: Unknown grader type: \"{type_name}\""),
        }),
        name,
        weight,
        required,
        min_score,
        negate,
        metric: None,
        entry: &UNKNOWN_ENTRY,
    })
}

const ASSERTION_COMMON: &[Key] = &[
    Key::new(
        "type",
        Kind::Text,
        "Which assertion; `not-` in front inverts it (`not-contains`).",
    )
    .required(),
    Key::new(
        "weight",
        Kind::Number(NumberRange::NON_NEGATIVE),
        "Share in the row's score (default 1); 0 reports it without counting it, and it never fails the row.",
    ),
    Key::new("metric", Kind::Text, "The named score it adds to."),
    Key::new(
        "transform",
        Kind::Any,
        "A JavaScript expression applied to the output before the check.",
    ),
];

/// The keys every promptfoo assertion has, whatever its type (`docs/promptfoo.md#assertions`).
pub const ASSERTION_KEYS: KeyTable = KeyTable::new("an assertion", "One promptfoo assertion.", &[ASSERTION_COMMON]);

/// One promptfoo assertion (`docs/promptfoo.md#assertions`): its type looked up among
/// promptfoo's spellings after a `not-` prefix is taken off; a grader that does not invert its
/// own check (with promptfoo's texts) is negated as `negate: true` does. A type agentv does not
/// have makes the row invalid, as an unusable grader does.
fn parse_assertion(node: &Node, cx: &mut ParseContext<'_>) -> Option<ConfiguredGrader> {
    let mut f = Fields::of_named(node, &ASSERTION_KEYS, "an assertion".to_owned(), cx.diags)?;
    let written = f.required_string("type", "assertion", cx.diags)?;
    let weight = f.number("weight", cx.diags).unwrap_or(1.0);
    let metric = f.string("metric", cx.diags);
    let type_pos = f.take("type").map_or(node.pos, |n| n.pos);
    if let Some(transform) = f.take("transform") {
        cx.drop_grader(
            transform.pos,
            format!("`transform` on a `{written}` assertion runs JavaScript, which agentv does not run yet"),
            Some("remove `transform`, or check the output as it is".to_owned()),
        );
        return None;
    }
    let (inverse, base) = match written.strip_prefix("not-") {
        Some(base) => (true, base),
        None => (false, written.as_str()),
    };
    let Some(entry) = super::find(Generation::Promptfoo, base) else {
        cx.drop_grader(
            type_pos,
            format!("assertion type `{written}` is not supported by agentv"),
            Some(format!(
                "use {} (each also as `not-<type>`)",
                super::known_types_of(&[Generation::Promptfoo])
            )),
        );
        return None;
    };
    cx.inverse = inverse;
    let grader = parse_own_keys(&mut f, entry, &written, cx)?;
    let negate = std::mem::take(&mut cx.inverse);
    // promptfoo leaves the comparisons of a test's rows out of each row's score.
    let weight = if grader.across_rows().is_some() { 0.0 } else { weight };
    Some(ConfiguredGrader {
        name: written,
        weight,
        required: false,
        min_score: None,
        negate,
        metric,
        entry,
        grader,
    })
}
/// The entry of a 4.x grader whose type agentv does not know: kept so that it fails when it
/// grades, as AgentV 4.x's custom types do; never in the grader table.
static UNKNOWN_ENTRY: GraderEntry = GraderEntry {
    name: "custom",
    names: super::Names::NONE,
    doc: "A 4.x grader type agentv does not know; it scores 0.",
    keys: &UNKNOWN_KEYS,
    parse: |_, _| None,
};

/// Its keys: any (AgentV 4.x passes them on as the custom grader's `config`).
static UNKNOWN_KEYS: KeyTable = KeyTable::new("a custom grader", "Any keys.", &[]).open();

/// A grader of an unknown 4.x type: score 0 and one failed assertion saying why.
#[derive(Debug)]
struct UnknownType {
    message: String,
}

impl super::Grader for UnknownType {
    fn grade<'a>(&'a self, _ctx: &'a GradeContext<'a>) -> futures::future::BoxFuture<'a, super::Grade> {
        let grade = super::Grade::failed_with(self.message.clone());
        Box::pin(async move { grade })
    }
}

/// `required: true`, or a number (the gate's threshold, the deprecated form of `min_score`):
/// (required, its number).
fn read_required(f: &mut Fields<'_>, cx: &mut ParseContext<'_>) -> (bool, Option<f64>) {
    let Some(node) = f.take("required") else {
        return (false, None);
    };
    match (&node.value, node.as_f64()) {
        (NodeValue::Bool(b), _) => (*b, None),
        (NodeValue::Null, _) => (false, None),
        (_, Some(r)) if r > 0.0 && r <= 1.0 => {
            if cx.generation() == Generation::V4 {
                cx.diags.warn(
                    node.pos,
                    format!("a number in `required` is deprecated; it means `required: true` with `min_score: {r}`"),
                    Some(format!("write `required: true` and `min_score: {r}`")),
                );
            }
            (true, Some(r))
        }
        _ => {
            cx.diags.error(
                node.pos,
                format!(
                    "`required` must be true, false or a number above 0 and at most 1, found {}",
                    describe(node)
                ),
                None,
            );
            (false, None)
        }
    }
}

/// The name AgentV 4.x gives a grader without one (`agentv-4.md` §2.3): `contains-<value>`,
/// `regex-<first 30 characters>`, `contains-any-<count>`, `skill-trigger-<skill>`, else the type.
fn generated_name(type_name: &str, node: &Node) -> String {
    let value = node.get("value");
    match type_name {
        "contains" | "icontains" | "starts-with" | "ends-with" | "equals" => match value.and_then(Node::scalar_text) {
            Some(v) => format!("{type_name}-{v}"),
            None => type_name.to_owned(),
        },
        "regex" => match value.and_then(Node::scalar_text) {
            Some(v) => format!("regex-{}", v.chars().take(30).collect::<String>()),
            None => type_name.to_owned(),
        },
        "contains-any" | "contains-all" | "icontains-any" | "icontains-all" => match value.and_then(Node::as_seq) {
            Some(items) => format!("{type_name}-{}", items.len()),
            None => type_name.to_owned(),
        },
        "skill-trigger" => match node.get("skill").and_then(Node::scalar_text) {
            Some(skill) => format!("skill-trigger-{skill}"),
            None => type_name.to_owned(),
        },
        _ => type_name.to_owned(),
    }
}

/// The file of a custom TypeScript assertion type: `.agentv/{assertions,graders,judges}/<type>`
/// with a script extension, in the eval file's directory or an ancestor (`agentv-4.md` §2.13).
fn custom_type_file(type_name: &str, eval_dir: &Path) -> Option<PathBuf> {
    if type_name.contains(['/', '\\']) || type_name.starts_with('.') {
        return None;
    }
    eval_dir.ancestors().find_map(|dir| {
        ["assertions", "graders", "judges"].iter().find_map(|kind| {
            ["ts", "js", "mts", "mjs"]
                .iter()
                .map(|ext| dir.join(".agentv").join(kind).join(format!("{type_name}.{ext}")))
                .find(|p| p.is_file())
        })
    })
}

/// The graders of a case that configures none (and inherits none): the LLM judge with its
/// default prompt (`docs/architecture.md#default-grader`); in a 4.x file, `llm-grader` when
/// the table has it.
pub fn default_graders() -> Arc<[ConfiguredGrader]> {
    default_graders_for(Generation::V2)
}

/// [`default_graders`] for a file of `generation` ([`super::rules::default_grader`]).
pub fn default_graders_for(generation: Generation) -> Arc<[ConfiguredGrader]> {
    let Some(wanted) = super::rules::default_grader(generation) else {
        return Arc::from(Vec::new());
    };
    let own = super::find(generation, wanted).filter(|e| e.type_name() != super::llm_judge::ENTRY.type_name());
    if let Some(entry) = own {
        let node = Node::new(NodeValue::Map(Vec::new()), Pos::default());
        let mut diags = Diagnostics::new(Path::new(""));
        let ws = crate::paths::Workspace::from_cwd(PathBuf::new());
        let mut cx = ParseContext::new(&ws, Path::new(""), &mut diags).with_generation(generation);
        if let Some(mut f) = Fields::of(&node, entry.keys, cx.diags)
            && let Some(grader) = (entry.parse)(&mut f, &mut cx)
        {
            return Arc::from(vec![ConfiguredGrader {
                name: entry.type_name().to_owned(),
                weight: 1.0,
                required: false,
                min_score: None,
                negate: false,
                metric: None,
                entry,
                grader,
            }]);
        }
    }
    let entry = &super::llm_judge::ENTRY;
    Arc::from(vec![ConfiguredGrader {
        name: entry.type_name().to_owned(),
        weight: 1.0,
        required: false,
        min_score: None,
        negate: false,
        metric: None,
        entry,
        grader: Arc::new(super::llm_judge::LlmJudge::default()),
    }])
}

/// A grader's result, and whether its process crashed (a grader error in either generation,
/// [`super::score_case`]).
#[derive(Debug, Clone)]
pub struct Evaluated {
    pub result: EvaluatorResult,
    pub crashed: bool,
}

/// Runs one grader and records its result (without `negate`, which the case score applies).
/// (Secrets are redacted where results leave the run: the JSONL writer and the terminal.)
pub async fn evaluate(grader: &ConfiguredGrader, ctx: &GradeContext<'_>) -> Evaluated {
    let grade = grader.grader.grade(ctx).await;
    result_of(grader, grade, ctx.generation())
}

/// The result `grade` of `grader` makes in a file of `generation`.
pub fn result_of(grader: &ConfiguredGrader, grade: super::Grade, generation: Generation) -> Evaluated {
    let crashed = grade.crashed;
    let grade = if grader.negate { super::negate(grade) } else { grade };
    // Graders return scores in [0, 1] (the LLM judge clamps, the code judge rejects anything
    // else as a grader error); this only guards the weighted mean against a stray value.
    let score = agentv_eval_sdk::clamp_score(grade.score);
    let mut misses = grade.misses;
    if let Some(e) = &grade.error
        && grade.error_is_miss
        && misses.is_empty()
    {
        misses.push(agentv_eval_sdk::failure_miss(&grader.name, e));
    }
    let verdict = super::rules::grader_verdict(generation, grade.verdict, score, grader.weight);
    // promptfoo's `metric`: the named score this result adds to (`docs/promptfoo.md#results`).
    let details = match &grader.metric {
        Some(metric) => {
            let mut details = grade.details.unwrap_or_default();
            details.insert("metric".to_owned(), serde_json::Value::from(metric.clone()));
            Some(details)
        }
        None => grade.details,
    };
    let result = EvaluatorResult {
        name: grader.name.clone(),
        kind: grader.type_name().to_owned(),
        score,
        weight: grader.weight,
        verdict,
        hits: grade.hits,
        misses,
        assertions: grade.assertions,
        reasoning: grade.reasoning,
        details,
        error: grade.error,
        evaluator_provider_request: grade.request,
    };
    Evaluated { result, crashed }
}

/// Weighted mean of grader scores (`docs/architecture.md#scoring`): weight 0 excludes a
/// grader; all-zero → 0.
pub fn aggregate(results: &[EvaluatorResult]) -> f64 {
    // Weights are scaled by the largest, so huge ones (1e308) cannot overflow the sums to NaN.
    let largest = results.iter().map(|r| r.weight).fold(0.0, f64::max);
    if !(largest > 0.0 && largest.is_finite()) {
        return 0.0;
    }
    let total: f64 = results.iter().map(|r| r.weight / largest).sum();
    results.iter().map(|r| r.weight / largest * r.score).sum::<f64>() / total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Verdict;
    use crate::paths::Workspace;

    /// Parses `yaml` (a grader list) the way a grader made of graders parses its members.
    fn nested(yaml: &str) -> (Option<Vec<ConfiguredGrader>>, Vec<String>) {
        parse_in(yaml, Generation::V2, None)
    }

    fn parse_in(
        yaml: &str,
        generation: Generation,
        dir: Option<&Path>,
    ) -> (Option<Vec<ConfiguredGrader>>, Vec<String>) {
        let node = parse_yaml(yaml).expect("yaml");
        let ws = Workspace::from_cwd(dir.map_or_else(std::env::temp_dir, Path::to_path_buf));
        let mut diags = Diagnostics::new(Path::new("e.yaml"));
        let mut cx = ParseContext::new(&ws, &ws.cwd, &mut diags).with_generation(generation);
        let graders = cx.graders(&node);
        (graders, diags.into_vec().iter().map(ToString::to_string).collect())
    }

    #[test]
    fn a_nested_list_is_parsed_like_any_list() {
        let (graders, problems) =
            nested("- {type: keywords, expected: [a], weight: 2}\n- {type: llm-judge, name: j}\n");
        assert!(problems.is_empty(), "{problems:?}");
        let graders = graders.expect("valid");
        let shown: Vec<(&str, &str, f64)> = graders
            .iter()
            .map(|g| (g.name.as_str(), g.type_name(), g.weight))
            .collect();
        assert_eq!(shown, [("keywords", "keywords", 2.0), ("j", "llm_judge", 1.0)]);
        let (graders, problems) = nested("- {type: keywords, expected: [a]}\n- {type: nope}\n");
        assert!(graders.is_none(), "an invalid member invalidates the list");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("e.yaml:2:10: error: unknown grader type `nope`"),
            "{}",
            problems[0]
        );
        assert!(
            problems[0].contains("help: use llm_judge (alias llm-judge), code_judge (alias code, code-judge)"),
            "{}",
            problems[0]
        );
    }

    #[test]
    fn a_list_weighted_all_zero_is_a_warning() {
        let (graders, problems) =
            nested("- {type: keywords, expected: [a], weight: 0}\n- {type: keywords, expected: [b], weight: 0.0}\n");
        assert_eq!(graders.map(|g| g.len()), Some(2), "still valid");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("e.yaml:1:1: warning: every evaluator has `weight: 0`"),
            "{}",
            problems[0]
        );
        let (_, problems) = nested("- {type: keywords, expected: [a], weight: 0}\n- {type: keywords, expected: [b]}\n");
        assert!(problems.is_empty(), "{problems:?}");
    }

    fn result(score: f64, weight: f64) -> EvaluatorResult {
        EvaluatorResult {
            name: "e".into(),
            kind: "keywords".into(),
            score,
            weight,
            verdict: Verdict::from_score(score),
            hits: vec![],
            misses: vec![],
            assertions: vec![],
            reasoning: None,
            details: None,
            error: None,
            evaluator_provider_request: None,
        }
    }

    #[test]
    fn common_keys_are_read_for_every_grader() {
        let (graders, problems) = parse_in(
            "- {type: keywords, expected: [a], required: true, min_score: 0.5, negate: true}\n\
             - {type: keywords, expected: [a], required: 0.7}\n\
             - {type: keywords, expected: [a], min_score: 0.9}\n\
             - {type: keywords, expected: [a], required: false}\n",
            Generation::V4,
            None,
        );
        let graders = graders.expect("valid");
        let shown: Vec<(bool, Option<f64>, bool)> =
            graders.iter().map(|g| (g.required, g.min_score, g.negate)).collect();
        assert_eq!(
            shown,
            [
                (true, Some(0.5), true),
                (true, Some(0.7), false),
                (false, Some(0.9), false),
                (false, None, false)
            ]
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("e.yaml:2:45: warning: a number in `required` is deprecated"),
            "{}",
            problems[0]
        );
        for bad in [
            "required: 1.5",
            "required: 0",
            "required: yes",
            "min_score: 2",
            "negate: 1",
        ] {
            let (graders, problems) = parse_in(
                &format!("- {{type: keywords, expected: [a], {bad}}}\n"),
                Generation::V4,
                None,
            );
            assert!(graders.is_none(), "{bad}");
            assert_eq!(problems.len(), 1, "{bad}: {problems:?}");
        }
    }

    #[test]
    fn weighted_mean_follows_the_spec_and_survives_huge_weights() {
        let cases: &[(&[(f64, f64)], f64)] = &[
            (&[(0.8, 1.0), (0.4, 1.0)], 0.6),
            (&[(0.8, 3.0), (0.4, 1.0)], 0.7),
            (&[(0.8, 1.0), (0.0, 0.0)], 0.8),
            (&[(0.8, 0.0), (0.4, 0.0)], 0.0),
            (&[(1.0, 1.0), (0.0, 1.0)], 0.5),
            (&[], 0.0),
            // Huge weights: their sum overflows a float.
            (&[(1.0, 1e308), (1.0, 1e308)], 1.0),
            (&[(1.0, f64::MAX), (0.0, f64::MAX), (0.5, 1.0)], 0.5),
        ];
        for (inputs, want) in cases {
            let results: Vec<EvaluatorResult> = inputs.iter().map(|(s, w)| result(*s, *w)).collect();
            let got = aggregate(&results);
            assert!((got - want).abs() < 1e-12, "{inputs:?}: {got} != {want}");
        }
    }

    #[test]
    fn v4_type_names_read_underscores_as_dashes_and_warn_about_2x_judges() {
        let (graders, problems) = parse_in(
            "- {type: tool_trajectory, mode: any_order, minimums: {a: 1}}\n- {type: code_judge, script: x}\n",
            Generation::V4,
            None,
        );
        let graders = graders.expect("valid");
        assert_eq!(graders[0].type_name(), "tool_trajectory");
        assert_eq!(graders[1].type_name(), "code_judge");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with(
                "e.yaml:2:10: warning: `code_judge` is an AgentV 2.x grader: AgentV 4.x skips it, agentv runs it"
            ),
            "{}",
            problems[0]
        );
        let (graders, _) = parse_in(
            "- {type: tool-trajectory, mode: any_order, minimums: {a: 1}}\n",
            Generation::V2,
            None,
        );
        assert!(graders.is_some(), "2.x files keep the aliases the table lists");
        let (graders, problems) = parse_in("- {type: code-judge, script: x}\n", Generation::V2, None);
        assert!(graders.is_some() && problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn bare_strings_become_one_rubrics_entry_at_the_first_strings_place() {
        let node = parse_yaml(
            "- {type: keywords, expected: [a]}\n- ' Names A '\n- {type: keywords, expected: [b]}\n- Names B\n- ''\n",
        )
        .expect("yaml");
        let ws = Workspace::from_cwd(std::env::temp_dir());
        let mut diags = Diagnostics::new(Path::new("e.yaml"));
        let mut cx = ParseContext::new(&ws, &ws.cwd, &mut diags).with_generation(Generation::V4);
        let entries = node
            .as_seq()
            .expect("list")
            .iter()
            .map(|n| Entry {
                node: n.clone(),
                file: None,
            })
            .collect();
        let out = gather_bare_strings(entries, &mut cx, &mut []);
        let shown: Vec<serde_json::Value> = out.iter().map(|e| e.node.to_json()).collect();
        assert_eq!(
            shown,
            [
                serde_json::json!({"type": "keywords", "expected": ["a"]}),
                serde_json::json!({"type": "rubrics", "criteria": ["Names A", "Names B"], "weight": 2}),
                serde_json::json!({"type": "keywords", "expected": ["b"]}),
            ]
        );
        assert_eq!(out[1].node.pos, Pos::new(2, 3), "at the first string");
        let problems: Vec<String> = diags.into_vec().iter().map(ToString::to_string).collect();
        assert_eq!(problems, ["e.yaml:5:3: warning: an empty assertion is ignored"]);
    }

    #[test]
    fn generated_names_follow_agentv_4() {
        for (yaml, want) in [
            ("{type: contains, value: Paris}", "contains-Paris"),
            (
                "{type: regex, value: '0123456789012345678901234567890123'}",
                "regex-012345678901234567890123456789",
            ),
            ("{type: icontains-any, value: [a, b, c]}", "icontains-any-3"),
            ("{type: skill-trigger, skill: pdf}", "skill-trigger-pdf"),
            ("{type: latency, threshold: 5}", "latency"),
        ] {
            let node = parse_yaml(yaml).expect("yaml");
            let t = node.get("type").and_then(Node::as_str).expect("type");
            assert_eq!(generated_name(t, &node), want, "{yaml}");
        }
    }

    #[test]
    fn include_templates_expand_in_place_with_their_own_positions() {
        let tmp = tempfile::tempdir().expect("tmp");
        let templates = tmp.path().join(".agentv").join("templates");
        std::fs::create_dir_all(&templates).expect("mkdir");
        std::fs::write(
            templates.join("base.yaml"),
            "assertions:\n  - {type: keywords, expected: [a], name: from-base}\n  - include: inner\n",
        )
        .expect("write");
        std::fs::write(
            templates.join("inner.yml"),
            "assertions:\n  - {type: keywords, expected: [b], name: from-inner}\n",
        )
        .expect("write");
        std::fs::write(templates.join("loop.yaml"), "assertions:\n  - include: loop\n").expect("write");
        std::fs::write(templates.join("broken.yaml"), "assertions:\n  - {type: keywords}\n").expect("write");
        let (graders, problems) = parse_in(
            "- {type: keywords, expected: [c], name: first}\n- include: base\n",
            Generation::V4,
            Some(tmp.path()),
        );
        assert!(problems.is_empty(), "{problems:?}");
        let names: Vec<String> = graders.expect("valid").into_iter().map(|g| g.name).collect();
        assert_eq!(names, ["first", "from-base", "from-inner"]);

        let (graders, problems) = parse_in("- include: loop\n", Generation::V4, Some(tmp.path()));
        assert!(graders.is_none());
        assert!(problems.iter().any(|p| p.contains("includes itself")), "{problems:?}");
        let (graders, problems) = parse_in("- include: broken\n", Generation::V4, Some(tmp.path()));
        assert!(graders.is_none());
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("broken.yaml:2:5: error: keywords needs `expected` or `forbidden`"),
            "the template's own file and line: {}",
            problems[0]
        );
        let (graders, problems) = parse_in("- include: nowhere\n", Generation::V4, Some(tmp.path()));
        assert!(graders.is_none());
        assert!(
            problems[0].starts_with("e.yaml:1:12: error: assertion template `nowhere` not found"),
            "{}",
            problems[0]
        );
    }

    #[test]
    fn custom_assertion_types_run_as_code_graders() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join(".agentv").join("assertions");
        std::fs::create_dir_all(&dir).expect("mkdir");
        for name in ["word-budget.ts", "word-count.mjs", "contains.ts"] {
            std::fs::write(dir.join(name), "export default {}").expect("write");
        }
        let (graders, problems) = parse_in(
            "- {type: word-budget, max: 3}\n- {type: keywords, expected: [a]}\n- {type: word-count}\n- {type: contains, value: a}\n",
            Generation::V4,
            Some(tmp.path()),
        );
        assert!(problems.is_empty(), "{problems:?}");
        let shown: Vec<(String, &str)> = graders
            .expect("valid")
            .iter()
            .map(|g| (g.name.clone(), g.type_name()))
            .collect();
        assert_eq!(
            shown,
            [
                ("word-budget".to_owned(), "custom-assertion"),
                ("keywords".to_owned(), "keywords"),
                // agentv's own `word-count` gives way to the file; 4.x's `contains` does not.
                ("word-count".to_owned(), "custom-assertion"),
                ("contains-a".to_owned(), "contains"),
            ]
        );
        // A 2.x file has no custom types.
        let (graders, _) = parse_in("- {type: word-budget}\n", Generation::V2, Some(tmp.path()));
        assert!(graders.is_none());
    }
}
