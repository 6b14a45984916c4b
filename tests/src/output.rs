//! What a finished command printed, as text: one helper for every test that reads a
//! `stepper` run's output, and [`CommandOutput`], the whole of it normalized for a snapshot.

use std::fmt;
use std::process::{ExitStatus, Output};

use crate::normalize::Normalizer;

/// Its standard output.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Its standard error.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Both, standard output first: for a check that does not care where a line went.
pub fn said(out: &Output) -> String {
    stdout(out) + &stderr(out)
}

/// A finished command as the user saw it, normalized ([`Normalizer::text`]): shown whole
/// (jj's `CommandOutput`), it is a snapshot of standard output, then standard error under a
/// rule, then the exit status when it is not success.
#[derive(Debug)]
pub struct CommandOutput {
    pub stdout: String,
    pub stderr: String,
    pub status: ExitStatus,
}

impl CommandOutput {
    pub fn new(out: &Output, normalizer: &Normalizer) -> CommandOutput {
        CommandOutput {
            stdout: normalizer.text(&stdout(out)),
            stderr: normalizer.text(&stderr(out)),
            status: out.status,
        }
    }

    /// Also `pattern` (a regex) replaced by `with`, for what varies in this test only (jj's
    /// `normalize_stdout_with`).
    pub fn replace(self, pattern: &str, with: &str) -> CommandOutput {
        let pattern = regex::Regex::new(pattern).expect("a valid pattern");
        let replace = |text: &str| pattern.replace_all(text, with).into_owned();
        CommandOutput {
            stdout: replace(&self.stdout),
            stderr: replace(&self.stderr),
            status: self.status,
        }
    }

    /// Whether the command exited with 0.
    pub fn success(&self) -> bool {
        self.status.success()
    }
}

impl fmt::Display for CommandOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = self.stdout.clone();
        // Each part on lines of its own, whether or not the one before ended its line.
        let part = |shown: &mut String, text: &str| {
            if !shown.is_empty() && !shown.ends_with('\n') {
                shown.push('\n');
            }
            shown.push_str(text);
        };
        if !self.stderr.is_empty() {
            part(&mut shown, "------- stderr -------\n");
            shown.push_str(&self.stderr);
        }
        if !self.status.success() {
            let status = match self.status.code() {
                Some(code) => format!("[exit status: {code}]"),
                None => format!("[exit status: {}]", self.status),
            };
            part(&mut shown, &status);
        }
        f.write_str(&shown)
    }
}
