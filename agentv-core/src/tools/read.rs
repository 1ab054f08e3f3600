//! Reading tool settings (`docs/tools.md`): tool definitions in the neutral shape or in a
//! provider's own, inline or from a JSON or YAML file; `tool_choice`; `tool_results`. Every
//! problem is reported at its position; a setting with an error is left out (the caller decides
//! what that makes of its case or target).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::keys::{AGENTV_TOOL_KEYS, CHOICE, RESULT, TOOL};
use crate::config::{Diagnostics, Fields, Node, NodeValue, Pos, describe};
use crate::model::{ToolChoice, ToolCommand, ToolDef, ToolDialect, ToolOutcome, ToolResultRule, ToolSettings};

/// Finds the file a `tools: <path>` names: its path, or every path tried.
pub type FindFile<'f> = &'f dyn Fn(&str) -> Result<PathBuf, Vec<PathBuf>>;

/// The tool settings of a suite or a case, read from its fields (those of
/// [`super::keys::USE_KEYS`], and `tool_results` when its table has it).
pub fn read_fields(f: &mut Fields<'_>, find: FindFile<'_>, diags: &mut Diagnostics) -> ToolSettings {
    let tools = f.take("tools").and_then(|n| read_tools(n, find, diags));
    let choice_node = f.take("tool_choice");
    let choice = choice_node.and_then(|n| read_choice(n, diags));
    let parallel = f.boolean("parallel_tool_calls", diags);
    let max_steps = f.integer("max_steps", diags).and_then(|n| u32::try_from(n).ok());
    let results = if f.known().contains(&"tool_results") {
        f.take("tool_results")
            .map(|n| read_results(n, diags))
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    if let (Some(tools), Some(choice), Some(node)) = (&tools, &choice, choice_node) {
        check_choice(choice, tools, node.pos, diags);
    }
    ToolSettings {
        tools,
        choice,
        parallel,
        max_steps,
        results: Arc::from(results),
    }
}

/// Checks that a named `tool_choice` names one of `tools`.
pub fn check_choice(choice: &ToolChoice, tools: &[ToolDef], pos: Pos, diags: &mut Diagnostics) {
    if let ToolChoice::Tool(name) = choice
        && !tools.iter().any(|t| &t.name == name)
    {
        diags.error(
            pos,
            format!("`tool_choice` names `{name}`, which is not one of the tools"),
            Some(format!("declared tools: {}", names(tools))),
        );
    }
}

/// Checks that every `tool_results` entry names one of `tools`: an entry for a tool the model
/// cannot call is never used, and the case would be graded on the tool's mock instead.
pub fn check_results(results: &[ToolResultRule], tools: &[ToolDef], pos: Pos, diags: &mut Diagnostics) {
    let known: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for rule in results.iter().filter(|r| !known.contains(&r.tool.as_str())) {
        let help = match crate::config::did_you_mean(&rule.tool, &known) {
            Some(close) => format!("did you mean `{close}`? declared tools: {}", names(tools)),
            None => format!("declared tools: {}", names(tools)),
        };
        diags.error(
            pos,
            format!("`tool_results` names `{}`, which is not one of the tools", rule.tool),
            Some(help),
        );
    }
}

/// The names of `tools`, for messages.
pub fn names(tools: &[ToolDef]) -> String {
    if tools.is_empty() {
        return "none".to_owned();
    }
    tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
}

/// `tools`: a list of definitions, or the path of a JSON or YAML file holding one (a list, or a
/// mapping with a `tools` list). `None` after reporting any problem.
pub fn read_tools(node: &Node, find: FindFile<'_>, diags: &mut Diagnostics) -> Option<Arc<[ToolDef]>> {
    match &node.value {
        NodeValue::Str(path) => read_file(path, node.pos, find, diags),
        NodeValue::Seq(items) => read_list(items, diags),
        _ => {
            diags.error(
                node.pos,
                format!(
                    "`tools` must be a list of tools or the path of a file of them, found {}",
                    describe(node)
                ),
                Some(
                    "write `tools: [{name: ..., description: ..., parameters: {...}}]` or `tools: tools.yaml`"
                        .to_owned(),
                ),
            );
            None
        }
    }
}

fn read_file(path: &str, pos: Pos, find: FindFile<'_>, diags: &mut Diagnostics) -> Option<Arc<[ToolDef]>> {
    let path = path.strip_prefix("file://").unwrap_or(path);
    let file = match find(path) {
        Ok(file) => file,
        Err(tried) => {
            let tried: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
            diags.error(
                pos,
                format!("tools file `{path}` not found"),
                Some(format!("looked in: {}", tried.join(", "))),
            );
            return None;
        }
    };
    let mut own = Diagnostics::new(&file);
    let tools = read_file_node(&file, &mut own);
    let failed = own.error_count() > 0;
    diags.absorb(own);
    if failed {
        diags.error(
            pos,
            format!("the tools file `{path}` has errors (reported above)"),
            None,
        );
        return None;
    }
    tools
}

/// The tools of a file, its problems reported in its own diagnostics.
fn read_file_node(file: &Path, diags: &mut Diagnostics) -> Option<Arc<[ToolDef]>> {
    let text = crate::config::source::read_text(file, "tools file", diags)?;
    let root = match crate::config::node::parse_yaml(&text) {
        Ok(root) => root,
        Err(errors) => {
            diags.yaml_syntax(&errors);
            return None;
        }
    };
    match (&root.value, root.get("tools")) {
        (NodeValue::Seq(items), _) => read_list(items, diags),
        (
            NodeValue::Map(_),
            Some(Node {
                value: NodeValue::Seq(items),
                ..
            }),
        ) => read_list(items, diags),
        _ => {
            diags.error(
                root.pos,
                format!(
                    "a tools file holds a list of tools (or `tools:` with one), found {}",
                    describe(&root)
                ),
                None,
            );
            None
        }
    }
}

fn read_list(items: &[Node], diags: &mut Diagnostics) -> Option<Arc<[ToolDef]>> {
    let before = diags.error_count();
    let mut tools: Vec<(ToolDef, Pos)> = Vec::new();
    for item in items {
        for tool in read_entry(item, diags) {
            if let Some((_, first)) = tools.iter().find(|(t, _)| t.name == tool.name) {
                diags.error(
                    item.pos,
                    format!("tool `{}` is declared twice (first at line {})", tool.name, first.line),
                    Some("tool names must be unique: rename or remove one".to_owned()),
                );
                continue;
            }
            tools.push((tool, item.pos));
        }
    }
    (diags.error_count() == before).then(|| tools.into_iter().map(|(t, _)| t).collect())
}

/// One entry of a tools list: one tool, or several for a Gemini tool with many declarations.
fn read_entry(node: &Node, diags: &mut Diagnostics) -> Vec<ToolDef> {
    let Some(mut f) = Fields::of(node, &TOOL, diags) else {
        return Vec::new();
    };
    let extras = Extras::read(&mut f, diags);
    let shape = Shape::of(node);
    if let Shape::GeminiTool(decls) = shape {
        return gemini_tool(decls, node, extras, diags);
    }
    let written = native_json(node);
    let tool = match shape {
        Shape::OpenAi(function) => function_tool(function, node.pos, diags).map(|(name, description, parameters)| {
            (name, description, parameters, Some((ToolDialect::OpenAi, written)))
        }),
        Shape::Anthropic => {
            let schema = node.get("input_schema");
            named(node, diags).map(|name| {
                (
                    name,
                    text(node, "description"),
                    schema_of(schema),
                    Some((ToolDialect::Anthropic, written)),
                )
            })
        }
        Shape::GeminiDeclaration => {
            let schema = node
                .get("parametersJsonSchema")
                .or_else(|| node.get("parameters_json_schema"));
            named(node, diags).map(|name| {
                (
                    name,
                    text(node, "description"),
                    schema_of(schema),
                    Some((ToolDialect::Gemini, written)),
                )
            })
        }
        Shape::Unsupported(kind) => {
            diags.error(
                node.pos,
                format!("tool of `type: {kind}` is not a function tool; only function tools can be evaluated"),
                Some("write `{name, description, parameters}` (or `type: function` in OpenAI's shape)".to_owned()),
            );
            None
        }
        Shape::Neutral | Shape::GeminiTool(_) => neutral_tool(&mut f, node, diags),
    };
    let Some((name, description, parameters, native)) = tool else {
        return Vec::new();
    };
    let schema_pos = node
        .get("parameters")
        .or_else(|| node.get("input_schema"))
        .map_or(node.pos, |n| n.pos);
    if !valid_schema(&name, &parameters, schema_pos, diags) {
        return Vec::new();
    }
    check_name(&name, node.pos, diags);
    vec![ToolDef {
        name,
        description,
        parameters,
        native,
        mock: extras.mock,
        command: extras.command,
    }]
}

/// A tool's name, description, parameters' schema and native form (its dialect, as written).
type ToolParts = (String, Option<String>, Value, Option<(ToolDialect, Value)>);

/// A tool in agentv's own shape: `{name, description, parameters}`, with no native form.
fn neutral_tool(f: &mut Fields<'_>, node: &Node, diags: &mut Diagnostics) -> Option<ToolParts> {
    let _ = f.take("type");
    let name = f.string("name", diags);
    let description = f.string("description", diags);
    let parameters = f.take("parameters");
    f.warn_unknown(diags);
    match name.filter(|n| !n.trim().is_empty()) {
        Some(name) => Some((name, description, schema_of(parameters), None)),
        None => {
            diags.error(
                node.pos,
                "a tool needs a `name`",
                Some("add `name: lookup_order`".to_owned()),
            );
            None
        }
    }
}

/// Which shape a tool entry is written in.
enum Shape<'a> {
    Neutral,
    /// `{type: function, function: {...}}`.
    OpenAi(&'a Node),
    /// `{name, input_schema}`.
    Anthropic,
    /// `{name, parametersJsonSchema}`.
    GeminiDeclaration,
    /// `{functionDeclarations: [...]}`.
    GeminiTool(&'a Node),
    /// A provider's tool that is not a function (`type: web_search_20250305`).
    Unsupported(String),
}

impl<'a> Shape<'a> {
    fn of(node: &'a Node) -> Self {
        if let Some(function) = node.get("function") {
            return Self::OpenAi(function);
        }
        if let Some(decls) = node
            .get("functionDeclarations")
            .or_else(|| node.get("function_declarations"))
        {
            return Self::GeminiTool(decls);
        }
        if node.get("input_schema").is_some() {
            return Self::Anthropic;
        }
        if node.get("parametersJsonSchema").is_some() || node.get("parameters_json_schema").is_some() {
            return Self::GeminiDeclaration;
        }
        match node.get("type").and_then(Node::scalar_text) {
            Some(kind) if kind != "function" => Self::Unsupported(kind),
            _ => Self::Neutral,
        }
    }
}

/// agentv's own keys of a tool, in any shape.
#[derive(Default, Clone)]
struct Extras {
    mock: Option<Value>,
    command: Option<ToolCommand>,
}

impl Extras {
    fn read(f: &mut Fields<'_>, diags: &mut Diagnostics) -> Self {
        let mock = f.take("mock").filter(|n| !n.is_null()).map(Node::to_json);
        let argv = f.take("command").and_then(|n| command_argv(n, diags));
        let timeout = f.duration("timeout_seconds", diags);
        let env = f.take("env").map(|n| env_names(n, diags)).unwrap_or_default();
        let command = argv.map(|argv| ToolCommand { argv, timeout, env });
        Self { mock, command }
    }
}

fn command_argv(node: &Node, diags: &mut Diagnostics) -> Option<Vec<String>> {
    let argv = match &node.value {
        NodeValue::Str(s) if !s.trim().is_empty() => Some(vec!["sh".to_owned(), "-c".to_owned(), s.clone()]),
        NodeValue::Seq(items) => items
            .iter()
            .map(Node::scalar_text)
            .collect::<Option<Vec<_>>>()
            .filter(|v| !v.is_empty()),
        _ => None,
    };
    if argv.is_none() {
        diags.error(
            node.pos,
            format!(
                "`command` must be a non-empty argv list or a shell command string, found {}",
                describe(node)
            ),
            Some("write `command: [python3, tools/lookup.py]`".to_owned()),
        );
    }
    argv
}

fn env_names(node: &Node, diags: &mut Diagnostics) -> Vec<String> {
    match node
        .as_seq()
        .and_then(|items| items.iter().map(Node::scalar_text).collect::<Option<Vec<_>>>())
    {
        Some(names) => names,
        None => {
            diags.error(
                node.pos,
                format!("`env` must be a list of variable names, found {}", describe(node)),
                None,
            );
            Vec::new()
        }
    }
}

/// The tool as written, without agentv's keys: what its own provider gets.
fn native_json(node: &Node) -> Value {
    let mut value = node.to_json();
    if let Some(obj) = value.as_object_mut() {
        for key in AGENTV_TOOL_KEYS {
            obj.remove(*key);
        }
    }
    value
}

fn text(node: &Node, key: &str) -> Option<String> {
    node.get(key).and_then(Node::scalar_text)
}

fn named(node: &Node, diags: &mut Diagnostics) -> Option<String> {
    let name = text(node, "name").filter(|n| !n.trim().is_empty());
    if name.is_none() {
        diags.error(
            node.pos,
            "a tool needs a `name`",
            Some("add `name: lookup_order`".to_owned()),
        );
    }
    name
}

/// `(name, description, parameters)` of an OpenAI `function`.
fn function_tool(function: &Node, pos: Pos, diags: &mut Diagnostics) -> Option<(String, Option<String>, Value)> {
    if function.as_map().is_none() {
        diags.error(
            function.pos,
            format!("`function` must be a mapping, found {}", describe(function)),
            None,
        );
        return None;
    }
    let name = text(function, "name").filter(|n| !n.trim().is_empty());
    let Some(name) = name else {
        diags.error(pos, "the tool's `function` needs a `name`", None);
        return None;
    };
    Some((
        name,
        text(function, "description"),
        schema_of(function.get("parameters")),
    ))
}

/// Each declaration of a Gemini `{functionDeclarations: [...]}` as a tool of its own.
fn gemini_tool(decls: &Node, node: &Node, extras: Extras, diags: &mut Diagnostics) -> Vec<ToolDef> {
    let Some(items) = decls.as_seq() else {
        diags.error(
            decls.pos,
            format!("`functionDeclarations` must be a list, found {}", describe(decls)),
            None,
        );
        return Vec::new();
    };
    if items.len() > 1 && (extras.mock.is_some() || extras.command.is_some()) {
        diags.error(
            node.pos,
            "`mock` and `command` answer one tool, but this entry declares several",
            Some("write one entry per declaration".to_owned()),
        );
        return Vec::new();
    }
    let mut out = Vec::new();
    for decl in items {
        let Some(name) = named(decl, diags) else { continue };
        let json_schema = decl
            .get("parametersJsonSchema")
            .or_else(|| decl.get("parameters_json_schema"));
        // `parameters` is Gemini's OpenAPI subset, whose types are written in capitals.
        let schema = json_schema.or_else(|| decl.get("parameters"));
        let parameters = match json_schema {
            Some(_) => schema_of(schema),
            None => lowercase_types(schema_of(schema)),
        };
        if !valid_schema(&name, &parameters, schema.map_or(decl.pos, |n| n.pos), diags) {
            continue;
        }
        check_name(&name, decl.pos, diags);
        out.push(ToolDef {
            name,
            description: text(decl, "description"),
            parameters,
            native: Some((ToolDialect::Gemini, decl.to_json())),
            mock: extras.mock.clone(),
            command: extras.command.clone(),
        });
    }
    out
}

/// An OpenAPI schema (Gemini's `parameters`) as JSON Schema: `type: OBJECT` → `object`, at
/// every depth.
fn lowercase_types(mut schema: Value) -> Value {
    match &mut schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match (key.as_str(), value) {
                    ("type", Value::String(t)) => *t = t.to_ascii_lowercase(),
                    (_, v) => *v = lowercase_types(std::mem::take(v)),
                }
            }
        }
        Value::Array(items) => {
            for item in items.iter_mut() {
                *item = lowercase_types(std::mem::take(item));
            }
        }
        _ => {}
    }
    schema
}

/// A schema as written, or an object without properties.
fn schema_of(node: Option<&Node>) -> Value {
    node.filter(|n| !n.is_null())
        .map(Node::to_json)
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}))
}

fn valid_schema(name: &str, schema: &Value, pos: Pos, diags: &mut Diagnostics) -> bool {
    if !schema.is_object() {
        diags.error(
            pos,
            format!("the parameters of tool `{name}` must be a JSON Schema object"),
            None,
        );
        return false;
    }
    match jsonschema::validator_for(schema) {
        Ok(_) => true,
        Err(e) => {
            diags.error(
                pos,
                format!("the parameters of tool `{name}` are not a valid JSON Schema: {e}"),
                None,
            );
            false
        }
    }
}

/// Names OpenAI and Anthropic accept: letters, digits, `_` and `-`, 1 to 64 of them.
fn check_name(name: &str, pos: Pos, diags: &mut Diagnostics) {
    let fine = name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !fine {
        diags.warn(
            pos,
            format!("tool name `{name}` will be refused by some providers"),
            Some("use only letters, digits, `_` and `-`, at most 64 characters".to_owned()),
        );
    }
}

/// `tool_choice`: `auto`, `none`, `required` (`any`), a tool's name, or `{name}`.
pub fn read_choice(node: &Node, diags: &mut Diagnostics) -> Option<ToolChoice> {
    match &node.value {
        NodeValue::Str(s) => match s.trim() {
            "auto" => Some(ToolChoice::Auto),
            "none" => Some(ToolChoice::None),
            "required" | "any" => Some(ToolChoice::Required),
            "" => {
                diags.error(
                    node.pos,
                    "`tool_choice` is empty",
                    Some("write auto, none, required or a tool's name".to_owned()),
                );
                None
            }
            name => Some(ToolChoice::Tool(name.to_owned())),
        },
        NodeValue::Map(_) => {
            let mut f = Fields::of(node, &CHOICE, diags)?;
            let name = f.required_string("name", "`tool_choice`", diags);
            f.warn_unknown(diags);
            name.map(ToolChoice::Tool)
        }
        _ => {
            diags.error(
                node.pos,
                format!(
                    "`tool_choice` must be auto, none, required, a tool's name or `{{name}}`, found {}",
                    describe(node)
                ),
                None,
            );
            None
        }
    }
}

/// A case's `tool_results`.
pub fn read_results(node: &Node, diags: &mut Diagnostics) -> Vec<ToolResultRule> {
    let Some(items) = node.as_seq() else {
        diags.error(
            node.pos,
            format!("`tool_results` must be a list, found {}", describe(node)),
            None,
        );
        return Vec::new();
    };
    items.iter().filter_map(|item| read_result(item, diags)).collect()
}

fn read_result(node: &Node, diags: &mut Diagnostics) -> Option<ToolResultRule> {
    let mut f = Fields::of(node, &RESULT, diags)?;
    let tool = f.required_string("tool", "a tool result", diags);
    let arguments = f.take("arguments").map(Node::to_json);
    if let Some(args) = &arguments
        && !args.is_object()
    {
        diags.error(node.pos, "`arguments` of a tool result must be a mapping", None);
        return None;
    }
    let result = f.take("result").map(Node::to_json);
    let error = f.string("error", diags);
    f.warn_unknown(diags);
    let outcome = match (result, error) {
        (Some(_), Some(_)) => {
            diags.error(
                node.pos,
                "a tool result has both `result` and `error`",
                Some("keep one".to_owned()),
            );
            return None;
        }
        (Some(result), None) => ToolOutcome::Result(result),
        (None, Some(error)) => ToolOutcome::Error(error),
        (None, None) => {
            diags.error(
                node.pos,
                "a tool result needs `result` or `error`",
                Some("add `result: {...}`".to_owned()),
            );
            return None;
        }
    };
    Some(ToolResultRule {
        tool: tool?,
        arguments,
        outcome,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::node::parse_yaml;

    /// Reads `yaml` (the value of `tools`) in `dir`: the tools and every problem as text.
    fn tools_in(dir: &Path, yaml: &str) -> (Option<Arc<[ToolDef]>>, Vec<String>) {
        let node = parse_yaml(yaml).expect("yaml");
        let mut diags = Diagnostics::new(Path::new("e.yaml"));
        let find = |p: &str| {
            let path = dir.join(p);
            if path.is_file() { Ok(path) } else { Err(vec![path]) }
        };
        let tools = read_tools(&node, &find, &mut diags);
        let shown = diags
            .into_vec()
            .iter()
            .map(|d| d.to_string().lines().next().unwrap_or_default().to_owned())
            .collect();
        (tools, shown)
    }

    fn tools(yaml: &str) -> (Option<Arc<[ToolDef]>>, Vec<String>) {
        tools_in(&std::env::temp_dir(), yaml)
    }

    #[test]
    fn every_provider_shape_reads_into_the_neutral_definition() {
        let (read, problems) = tools(
            r#"
- name: lookup_order
  description: Find an order.
  parameters: {type: object, properties: {order_id: {type: string}}, required: [order_id]}
  mock: {status: shipped}
- type: function
  function: {name: track, description: Track a parcel., parameters: {type: object}, strict: true}
  command: [python3, track.py]
  timeout_seconds: 5
- name: refund
  input_schema: {type: object, properties: {amount: {type: number}}}
  cache_control: {type: ephemeral}
- functionDeclarations:
    - {name: weather, parametersJsonSchema: {type: object}}
    - {name: time, description: Now., parameters: {type: OBJECT}}
"#,
        );
        assert!(problems.is_empty(), "{problems:?}");
        let read = read.expect("tools");
        let names: Vec<&str> = read.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["lookup_order", "track", "refund", "weather", "time"]);
        assert_eq!(read[0].native, None);
        assert_eq!(read[0].mock, Some(json!({"status": "shipped"})));
        assert_eq!(read[0].parameters["required"], json!(["order_id"]));
        let (dialect, native) = read[1].native.clone().expect("native");
        assert_eq!(dialect, ToolDialect::OpenAi);
        assert_eq!(native["function"]["strict"], true);
        assert!(native.get("command").is_none(), "agentv's keys are not sent");
        let command = read[1].command.clone().expect("command");
        assert_eq!(
            (command.argv.len(), command.timeout),
            (2, Some(std::time::Duration::from_secs(5)))
        );
        assert_eq!(read[1].description.as_deref(), Some("Track a parcel."));
        assert_eq!(read[2].native.as_ref().map(|n| n.0), Some(ToolDialect::Anthropic));
        assert_eq!(read[2].parameters["properties"]["amount"]["type"], "number");
        assert_eq!(
            read[3].native,
            Some((
                ToolDialect::Gemini,
                json!({"name": "weather", "parametersJsonSchema": {"type": "object"}})
            ))
        );
        assert_eq!(read[4].description.as_deref(), Some("Now."));
        assert_eq!(
            read[4].parameters,
            json!({"type": "object"}),
            "OpenAPI types read as JSON Schema"
        );
    }

    #[test]
    fn mistakes_are_reported_where_they_are() {
        for (yaml, want) in [
            (
                "{name: x}",
                "e.yaml:1:1: error: `tools` must be a list of tools or the path of a file of them, found a mapping",
            ),
            ("[{description: no name}]", "e.yaml:1:2: error: a tool needs a `name`"),
            (
                "[{name: a}, {name: a}]",
                "e.yaml:1:13: error: tool `a` is declared twice (first at line 1)",
            ),
            (
                "[{name: a, parameters: {type: 12}}]",
                "e.yaml:1:24: error: the parameters of tool `a` are not a valid JSON Schema",
            ),
            (
                "[{type: web_search_20250305, name: web_search}]",
                "e.yaml:1:2: error: tool of `type: web_search_20250305` is not a function tool; only function tools can be evaluated",
            ),
            (
                "[{name: a, command: 3}]",
                "e.yaml:1:21: error: `command` must be a non-empty argv list or a shell command string, found 3",
            ),
            (
                "[{name: a, timeout_seconds: -1}]",
                "e.yaml:1:29: error: `timeout_seconds` must be a number of seconds greater than 0",
            ),
            ("missing.yaml", "e.yaml:1:1: error: tools file `missing.yaml` not found"),
        ] {
            let (read, problems) = tools(yaml);
            assert!(read.is_none(), "{yaml}");
            assert!(
                problems.first().is_some_and(|p| p.starts_with(want)),
                "{yaml}: {problems:?}"
            );
        }
        let (read, problems) = tools("[{name: a, paramters: {}}, {name: 'look up'}]");
        assert_eq!(read.map(|t| t.len()), Some(2), "warnings only");
        assert!(
            problems[0].contains("unknown key `paramters` in a tool") && problems[0].contains("warning"),
            "{problems:?}"
        );
        assert!(
            problems[1].contains("tool name `look up` will be refused by some providers"),
            "{problems:?}"
        );
    }

    #[test]
    fn tools_files_are_json_or_yaml_and_report_their_own_lines() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(
            dir.path().join("t.json"),
            r#"[{"name": "a", "parameters": {"type": "object"}}]"#,
        )
        .expect("write");
        std::fs::write(dir.path().join("t.yaml"), "tools:\n  - name: b\n").expect("write");
        std::fs::write(dir.path().join("bad.yaml"), "- name: c\n- {}\n").expect("write");
        for (file, name) in [("t.json", "a"), ("file://t.yaml", "b")] {
            let (read, problems) = tools_in(dir.path(), file);
            assert!(problems.is_empty(), "{problems:?}");
            assert_eq!(read.expect("tools")[0].name, name);
        }
        let (read, problems) = tools_in(dir.path(), "bad.yaml");
        assert!(read.is_none());
        assert!(
            problems[0].ends_with("bad.yaml:2:3: error: a tool needs a `name`"),
            "{problems:?}"
        );
        assert_eq!(
            problems[1],
            "e.yaml:1:1: error: the tools file `bad.yaml` has errors (reported above)"
        );
    }

    #[test]
    fn tool_choice_and_results() {
        let choice = |yaml: &str| {
            let mut diags = Diagnostics::new(Path::new("e.yaml"));
            let c = read_choice(&parse_yaml(yaml).expect("yaml"), &mut diags);
            (c, diags.error_count())
        };
        assert_eq!(choice("auto"), (Some(ToolChoice::Auto), 0));
        assert_eq!(choice("any"), (Some(ToolChoice::Required), 0));
        assert_eq!(choice("none"), (Some(ToolChoice::None), 0));
        assert_eq!(choice("lookup"), (Some(ToolChoice::Tool("lookup".into())), 0));
        assert_eq!(choice("{name: lookup}"), (Some(ToolChoice::Tool("lookup".into())), 0));
        assert_eq!(choice("[1]").1, 1);
        let mut diags = Diagnostics::new(Path::new("e.yaml"));
        let rules = read_results(
            &parse_yaml("- {tool: a, arguments: {id: 1}, result: {ok: true}}\n- {name: b, error: down}\n- {tool: c}\n- {tool: d, result: 1, error: x}\n").expect("yaml"),
            &mut diags,
        );
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].outcome, ToolOutcome::Result(json!({"ok": true})));
        assert_eq!(rules[1].outcome, ToolOutcome::Error("down".into()));
        let shown: Vec<String> = diags.into_vec().iter().map(ToString::to_string).collect();
        assert!(
            shown[0].contains("needs `result` or `error`") && shown[1].contains("both `result` and `error`"),
            "{shown:?}"
        );
        let mut diags = Diagnostics::new(Path::new("e.yaml"));
        check_choice(
            &ToolChoice::Tool("x".into()),
            &[ToolDef::new("a", json!({}))],
            Pos::new(3, 5),
            &mut diags,
        );
        assert!(
            diags.into_vec()[0]
                .to_string()
                .starts_with("e.yaml:3:5: error: `tool_choice` names `x`, which is not one of the tools")
        );
    }
}
