//! JSON Schema checks the way promptfoo makes them (Ajv, draft-07, with formats, stopping at
//! the first error) and Ajv's wording of that error, `data/age must be >= 0`
//! (`docs/promptfoo.md#is-json`). The validator is the `jsonschema` crate; where its first
//! error is not Ajv's first (a value breaking several keywords), the message names another
//! of the broken rules.

use serde_json::Value;

use crate::config::{Node, Pos};

use super::ParseContext;

/// Compiles a schema as promptfoo does: draft-07 unless it says otherwise, formats checked.
pub fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::draft7::options()
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| e.to_string())
}

/// Reads a schema `value`: inline, a YAML or JSON text, or `file://<path>`; reported and `None`
/// when it does not compile.
pub fn read_schema(node: &Node, cx: &mut ParseContext<'_>) -> Option<jsonschema::Validator> {
    let schema = match node.as_str() {
        Some(text) => match text.strip_prefix("file://") {
            Some(path) => super::json_schema::load(path, node.pos, cx)?,
            None => yaml_text(text, node.pos, cx)?,
        },
        None => node.to_json(),
    };
    match compile(&schema) {
        Ok(v) => Some(v),
        Err(e) => {
            cx.drop_grader(node.pos, format!("invalid JSON Schema: {e}"), None);
            None
        }
    }
}

fn yaml_text(text: &str, pos: Pos, cx: &mut ParseContext<'_>) -> Option<Value> {
    match crate::config::node::parse_yaml(text) {
        Ok(node) => Some(node.to_json()),
        Err(_) => {
            cx.drop_grader(pos, "the schema text is neither YAML nor JSON", None);
            None
        }
    }
}

/// `Ok` when `value` conforms, else Ajv's `errorsText` of the first error.
pub fn check(validator: &jsonschema::Validator, value: &Value) -> Result<(), String> {
    match validator.iter_errors(value).next() {
        None => Ok(()),
        Some(e) => Err(format!("data{} {}", e.instance_path().as_str(), message(e.kind()))),
    }
}

/// Ajv's English message for one error.
fn message(kind: &jsonschema::error::ValidationErrorKind) -> String {
    use jsonschema::error::{TypeKind, ValidationErrorKind as K};
    let n = |v: &Value| v.as_f64().map_or_else(|| v.to_string(), super::js::number);
    match kind {
        K::Type { kind } => {
            let types: Vec<&str> = match kind {
                TypeKind::Single(t) => vec![t.as_str()],
                TypeKind::Multiple(set) => set.iter().map(|t| t.as_str()).collect(),
            };
            format!("must be {}", types.join(","))
        }
        K::Required { property } => format!("must have required property '{}'", super::js::string_of(property)),
        K::Minimum { limit } => format!("must be >= {}", n(limit)),
        K::Maximum { limit } => format!("must be <= {}", n(limit)),
        K::ExclusiveMinimum { limit } => format!("must be > {}", n(limit)),
        K::ExclusiveMaximum { limit } => format!("must be < {}", n(limit)),
        K::MinLength { limit } => format!("must NOT have fewer than {limit} characters"),
        K::MaxLength { limit } => format!("must NOT have more than {limit} characters"),
        K::MinItems { limit } => format!("must NOT have fewer than {limit} items"),
        K::MaxItems { limit } => format!("must NOT have more than {limit} items"),
        K::AdditionalItems { limit } => format!("must NOT have more than {limit} items"),
        K::MinProperties { limit } => format!("must NOT have fewer than {limit} properties"),
        K::MaxProperties { limit } => format!("must NOT have more than {limit} properties"),
        K::Pattern { pattern } => format!("must match pattern \"{pattern}\""),
        K::Format { format } => format!("must match format \"{format}\""),
        K::Enum { .. } => "must be equal to one of the allowed values".to_owned(),
        K::Constant { .. } => "must be equal to constant".to_owned(),
        K::AdditionalProperties { .. } => "must NOT have additional properties".to_owned(),
        K::MultipleOf { multiple_of, .. } => format!("must be multiple of {}", super::js::number(*multiple_of)),
        K::UniqueItems => "must NOT have duplicate items".to_owned(),
        K::AnyOf { .. } => "must match a schema in anyOf".to_owned(),
        K::OneOfNotValid { .. } | K::OneOfMultipleValid { .. } => "must match exactly one schema in oneOf".to_owned(),
        K::Not { .. } => "must NOT be valid".to_owned(),
        K::Contains => "must contain at least 1 valid item(s)".to_owned(),
        K::FalseSchema => "boolean schema is false".to_owned(),
        K::PropertyNames { .. } => "property name must be valid".to_owned(),
        other => format!("{other:?}"),
    }
}

/// `Ok` when `value` conforms, else Ajv's first error object as `JSON.stringify` writes the
/// `errors` list: `[{"instancePath":…,"schemaPath":…,"keyword":…,"params":{…},"message":…}]`.
pub fn check_json(validator: &jsonschema::Validator, value: &Value) -> Result<(), String> {
    let Some(e) = validator.iter_errors(value).next() else {
        return Ok(());
    };
    let q = |v: &str| Value::String(v.to_owned()).to_string();
    Err(format!(
        "[{{\"instancePath\":{},\"schemaPath\":{},\"keyword\":{},\"params\":{},\"message\":{}}}]",
        q(e.instance_path().as_str()),
        q(&format!("#{}", e.schema_path().as_str())),
        q(e.kind().keyword()),
        params(e.kind()),
        q(&message(e.kind())),
    ))
}

/// Ajv's `params` of one error, in Ajv's key order.
fn params(kind: &jsonschema::error::ValidationErrorKind) -> String {
    use jsonschema::error::{TypeKind, ValidationErrorKind as K};
    let q = |v: &str| Value::String(v.to_owned()).to_string();
    let n = |v: &Value| v.as_f64().map_or_else(|| v.to_string(), super::js::number);
    let limit = |comparison: &str, v: &Value| format!("{{\"comparison\":{},\"limit\":{}}}", q(comparison), n(v));
    match kind {
        K::Type { kind } => match kind {
            TypeKind::Single(t) => format!("{{\"type\":{}}}", q(t.as_str())),
            TypeKind::Multiple(set) => {
                let types: Vec<String> = set.iter().map(|t| q(t.as_str())).collect();
                format!("{{\"type\":[{}]}}", types.join(","))
            }
        },
        K::Required { property } => format!("{{\"missingProperty\":{}}}", q(&super::js::string_of(property))),
        K::Enum { options } => format!("{{\"allowedValues\":{options}}}"),
        K::Constant { expected_value } => format!("{{\"allowedValue\":{expected_value}}}"),
        K::Minimum { limit: v } => limit(">=", v),
        K::Maximum { limit: v } => limit("<=", v),
        K::ExclusiveMinimum { limit: v } => limit(">", v),
        K::ExclusiveMaximum { limit: v } => limit("<", v),
        K::MinLength { limit }
        | K::MaxLength { limit }
        | K::MinItems { limit }
        | K::MaxItems { limit }
        | K::MinProperties { limit }
        | K::MaxProperties { limit } => format!("{{\"limit\":{limit}}}"),
        K::AdditionalItems { limit } => format!("{{\"limit\":{limit}}}"),
        K::Pattern { pattern } => format!("{{\"pattern\":{}}}", q(pattern)),
        K::Format { format } => format!("{{\"format\":{}}}", q(format)),
        K::AdditionalProperties { unexpected } => format!(
            "{{\"additionalProperty\":{}}}",
            q(unexpected.first().map_or("", String::as_str))
        ),
        K::MultipleOf { multiple_of, .. } => format!("{{\"multipleOf\":{}}}", super::js::number(*multiple_of)),
        _ => "{}".to_owned(),
    }
}
