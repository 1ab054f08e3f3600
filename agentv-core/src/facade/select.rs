//! `--eval-id`: which cases of the loaded suites run, chosen by id.

use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::load::CaseFilter;

/// A `--eval-id` pattern that is not a valid glob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid --eval-id pattern `{pattern}`: {message}")]
pub struct IdPatternError {
    pub pattern: String,
    pub message: String,
}

/// The filter for `--eval-id` patterns, `None` when there are none (every case runs).
///
/// A pattern is a glob (`login-*`, `case-?`, `{smoke,edge}-*`, `[ab]-1`); a plain id matches
/// itself only. `*` also matches `/`: ids are names, not paths, so `api-*` takes `api-v1/get`.
pub(crate) fn id_filter(patterns: &[String]) -> Result<Option<CaseFilter>, IdPatternError> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let set = glob_set(patterns)?;
    Ok(Some(Arc::new(move |id: &str| set.is_match(id))))
}

fn glob_set(patterns: &[String]) -> Result<GlobSet, IdPatternError> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern).map_err(|e| IdPatternError {
            pattern: pattern.clone(),
            message: e.kind().to_string(),
        })?;
        builder.add(glob);
    }
    // Every glob was built above; the set itself only fails on a pattern that did.
    builder.build().map_err(|e| IdPatternError {
        pattern: patterns.join(", "),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eval_id_patterns_match_ids_as_globs() {
        let cases: &[(&[&str], &str, bool)] = &[
            (&["login-ok"], "login-ok", true),
            (&["login-ok"], "login-okay", false),
            (&["login-*"], "login-fails", true),
            (&["login-*"], "logout", false),
            (&["case-?"], "case-7", true),
            (&["case-?"], "case-10", false),
            (&["{smoke,edge}-*"], "edge-1", true),
            (&["[ab]-1"], "b-1", true),
            (&["api-*"], "api-v1/get", true),
            (&["a", "b*"], "bee", true),
            (&["a", "b*"], "c", false),
            (&["*"], "", true),
            (&["ünï-*"], "ünï-code", true),
        ];
        for (patterns, id, want) in cases {
            let patterns: Vec<String> = patterns.iter().map(|p| (*p).to_owned()).collect();
            let filter = id_filter(&patterns).expect("valid").expect("a filter");
            assert_eq!(filter(id), *want, "{patterns:?} against {id:?}");
        }
    }

    #[test]
    fn no_pattern_means_no_filter() {
        assert!(id_filter(&[]).expect("valid").is_none());
    }

    #[test]
    fn invalid_pattern_names_itself() {
        let err = id_filter(&["ok".to_owned(), "[unclosed".to_owned()])
            .err()
            .expect("invalid");
        assert_eq!(err.pattern, "[unclosed");
        assert!(
            err.to_string().starts_with("invalid --eval-id pattern `[unclosed`: "),
            "{err}"
        );
    }
}
