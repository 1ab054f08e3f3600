//! Command templates of the `cli` provider: `{PLACEHOLDER}` substitution with shell quoting.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

/// Placeholders a `cli` command template may use.
pub const CLI_PLACEHOLDERS: &[&str] = &[
    "PROMPT",
    "GUIDELINES",
    "EVAL_ID",
    "ATTEMPT",
    "FILES",
    "OUTPUT_FILE",
    "CONTEXT",
];

static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\{([A-Z_]+)\}").expect("static regex"));

/// The unsupported placeholders in a `cli` template, in order of appearance (empty when valid).
pub fn unknown_cli_placeholders(template: &str) -> Vec<String> {
    unknown_placeholders(template, CLI_PLACEHOLDERS)
}

/// Placeholders in `template` that are not in `allowed`.
pub fn unknown_placeholders(template: &str, allowed: &[&str]) -> Vec<String> {
    let mut unknown: Vec<String> = Vec::new();
    for cap in PLACEHOLDER.captures_iter(template) {
        let name = &cap[1];
        if !allowed.contains(&name) && !unknown.iter().any(|u| u == name) {
            unknown.push(name.to_owned());
        }
    }
    unknown
}

/// POSIX single-quoting; the empty string becomes `''`.
pub fn shell_quote(value: &str) -> String {
    if value.is_empty() {
        return "''".to_owned();
    }
    match shlex::try_quote(value) {
        Ok(Cow::Borrowed(v)) => format!("'{v}'"),
        Ok(Cow::Owned(v)) => v,
        // Only NUL bytes are refused; they cannot reach a command line anyway.
        Err(_) => format!("'{}'", value.replace('\0', "").replace('\'', r"'\''")),
    }
}

/// Substitutes placeholders with shell-quoted `values`. Values that are already quoted lists
/// (`FILES`) are passed in `raw` and inserted as they are.
pub fn render(template: &str, values: &HashMap<&str, String>, raw: &HashMap<&str, String>) -> String {
    PLACEHOLDER
        .replace_all(template, |cap: &regex::Captures<'_>| {
            let name = &cap[1];
            if let Some(v) = raw.get(name) {
                v.clone()
            } else if let Some(v) = values.get(name) {
                shell_quote(v)
            } else {
                cap[0].to_owned()
            }
        })
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_placeholders_are_listed_once() {
        assert!(unknown_cli_placeholders("agent {PROMPT} > {OUTPUT_FILE}").is_empty());
        assert_eq!(
            unknown_cli_placeholders("x {PROMPTS} {MODEL} {PROMPTS} {lower}"),
            ["PROMPTS", "MODEL"]
        );
    }

    #[test]
    fn quoting_survives_the_shell() {
        for value in ["", "plain", "it's $HOME `x` \"q\"", "a\nb", "--flag"] {
            let quoted = shell_quote(value);
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {quoted}"))
                .output()
                .expect("sh runs");
            assert_eq!(String::from_utf8_lossy(&out.stdout), value, "{quoted}");
        }
    }

    #[test]
    fn render_quotes_values_and_keeps_raw_ones() {
        let values = HashMap::from([("PROMPT", "say 'hi' $X".to_owned()), ("EVAL_ID", "c1".to_owned())]);
        let raw = HashMap::from([("FILES", format!("{} {}", shell_quote("/a b"), shell_quote("/c")))]);
        let cmd = render("printf '%s|' {PROMPT} {EVAL_ID} {FILES} {UNKNOWN}", &values, &raw);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .output()
            .expect("sh runs");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "say 'hi' $X|c1|/a b|/c|{UNKNOWN}|",
            "{cmd}"
        );
    }
}
