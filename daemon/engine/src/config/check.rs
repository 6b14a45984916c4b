//! `config --validate`'s entry: a settings file checked as its kind is read — stepper's
//! own (`validate`) or Claude Code's (`claude`).

use std::path::Path;

use super::problem::{Problem, Severity};
use super::{claude, validate};

/// Check the file at `path`; a missing file has no problems.
pub fn validate_file(path: &Path) -> Vec<Problem> {
    match std::fs::read_to_string(path) {
        Ok(text) if claude::is_claude(path) => claude::validate_text(path, &text),
        Ok(text) => validate::validate_text(path, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => vec![Problem {
            file: path.to_path_buf(),
            line: 1,
            column: 1,
            severity: Severity::Error,
            message: format!("cannot read the file: {e}"),
            hint: Some("check its permissions".into()),
        }],
    }
}
