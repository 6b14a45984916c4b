//! Tests that drive programs from outside the Rust toolchain (tmux, systemd's tools, an
//! interpreter run as another user) ask for them here. On a developer's machine a missing
//! program skips the test with a line saying what to install; in CI (`STEPPER_TEST_STRICT=1`,
//! set by `.ci/run`) it fails the test, so CI never passes by skipping.

use std::process::{Command, Stdio};

/// Whether strict mode is on: every skip becomes a failure.
pub fn strict() -> bool {
    std::env::var_os("STEPPER_TEST_STRICT").is_some_and(|v| !v.is_empty() && v != "0")
}

/// True when `program` runs (`program --version` or `-V` succeeds). Otherwise prints
/// `skipped: <why> needs <program> (<install>)` and returns false, or panics in strict mode.
pub fn program(program: &str, why: &str, install: &str) -> bool {
    let runs = |flag: &str| {
        Command::new(program)
            .arg(flag)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    runs("--version") || runs("-V") || missing(&format!("{why} needs {program} ({install})"))
}

/// True when `condition` holds; otherwise skips (or fails in strict mode) with `what`.
pub fn that(condition: bool, what: &str) -> bool {
    condition || missing(what)
}

fn missing(what: &str) -> bool {
    assert!(
        !strict(),
        "{what}; STEPPER_TEST_STRICT is set, so this is a failure, not a skip"
    );
    eprintln!("skipped: {what}");
    false
}
