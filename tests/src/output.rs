//! What a finished command printed, as text: one helper for every test that reads a
//! `stepper` run's output.

use std::process::Output;

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
