//! `workspace.env` (`docs/workspaces.md#env`): the programs and Python modules a suite needs,
//! checked before any case runs so a missing tool fails the run at once, not case by case.

use crate::model::workspace::Preflight;

/// Every requirement of `preflights` that this machine misses, as one message; `None` when all
/// are met.
pub fn check<'a>(preflights: impl IntoIterator<Item = &'a Preflight>) -> Option<String> {
    let mut commands: Vec<&str> = Vec::new();
    let mut modules: Vec<&str> = Vec::new();
    for p in preflights {
        for c in &p.required_commands {
            if !commands.contains(&c.as_str()) {
                commands.push(c);
            }
        }
        for m in &p.required_python_modules {
            if !modules.contains(&m.as_str()) {
                modules.push(m);
            }
        }
    }
    let mut missing: Vec<String> = commands
        .iter()
        .filter(|c| which::which(c).is_err())
        .map(|c| format!("  • command: {c}"))
        .collect();
    missing.extend(
        modules
            .iter()
            .filter(|m| !python_imports(m))
            .map(|m| format!("  • python module: {m}")),
    );
    (!missing.is_empty()).then(|| {
        format!(
            "Preflight checks failed — missing dependencies:\n{}\n\nInstall the missing dependencies before running this eval.",
            missing.join("\n")
        )
    })
}

/// True when `python3 -c "import <module>"` succeeds.
fn python_imports(module: &str) -> bool {
    let valid = !module.is_empty()
        && module
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_'));
    valid
        && std::process::Command::new("python3")
            .args(["-c", &format!("import {module}")])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_missing_command_once() {
        let a = Preflight {
            required_commands: vec!["sh".into(), "agentv-no-such-tool".into()],
            required_python_modules: vec!["no such module".into()],
        };
        let b = Preflight {
            required_commands: vec!["agentv-no-such-tool".into()],
            ..Preflight::default()
        };
        let message = check([&a, &b]).expect("missing");
        assert_eq!(message.matches("command: agentv-no-such-tool").count(), 1, "{message}");
        assert!(!message.contains("command: sh"), "{message}");
        assert!(message.contains("python module: no such module"), "{message}");
        assert!(check([&Preflight::default()]).is_none());
    }
}
