//! Provider keys out of the daemon's process environment. A daemon started by a client (or
//! a service manager told the keys) has them in its environment, and `/proc/<pid>/environ`
//! shows a process's environment as it was at exec for its whole life — removing a variable
//! later changes nothing there. So when the environment holds provider keys, `stepperd`
//! executes itself again without them, handing them over on its standard input (a pipe,
//! drained at once, then replaced by `/dev/null`), and keeps them in memory
//! ([`stepper_providers::daemon_env`]).
//!
//! It also makes itself non-dumpable: its `/proc` entries (memory, environment, open files)
//! then belong to root, out of reach of the user's other processes — tools among them.

use std::io::{Read, Write};
use std::path::Path;

use stepper_engine::config::Settings;
use stepper_protocol::session::Env;

/// Set (to `1`) in the environment of the daemon executed again: its keys are on stdin.
pub const HANDED_OVER: &str = "STEPPER_KEYS_ON_STDIN";

/// The most bytes of keys handed over: what a pipe holds without a reader.
const MAX_HANDOVER: usize = 60 * 1024;

/// Why the keys stay in the daemon's environment (the daemon goes on with them there).
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    #[error("the provider keys in the environment are over {MAX_HANDOVER} bytes: they stay in it")]
    TooLarge,
    #[error("the provider keys cannot be written down: {0}")]
    Encode(serde_json::Error),
    #[error("a pipe for the keys: {0}")]
    Pipe(std::io::Error),
    #[error("handing the keys over: {0}")]
    HandOver(std::io::Error),
    #[error("cannot execute the daemon again without its keys: {0}")]
    ExecuteAgain(std::io::Error),
    #[error("reading the handed-over keys: {0}")]
    ReadBack(std::io::Error),
    #[error("the handed-over keys are not readable: {0}")]
    Unreadable(serde_json::Error),
}

/// What happened to the keys.
pub enum Outcome {
    /// None were in the environment.
    None,
    /// This process was executed again and read them back: this many.
    Kept(usize),
}

/// Take the provider keys out of this process's environment (the variables the user's
/// settings and the conventions name): returns once they are out, after executing this
/// binary again if needed. Call it first thing, while the process has one thread.
pub fn take_keys_out(config_dir: &Path, argv: &[std::ffi::OsString]) -> Result<Outcome, KeysError> {
    hide_from_other_processes();
    if std::env::var_os(HANDED_OVER).is_some() {
        return read_back();
    }
    let claude = stepper_engine::config::claude::Places::of_this_machine();
    let user = Settings::load_user(config_dir, &claude).unwrap_or_default();
    let names = stepper_providers::Providers::key_variables(&user);
    let keys: Env = std::env::vars()
        .filter(|(name, value)| names.contains(name) && !value.is_empty())
        .collect();
    if keys.is_empty() {
        return Ok(Outcome::None);
    }
    execute_again(&keys, argv)
}

/// Replace this process with itself, the keys out of its environment and on its stdin.
#[cfg(unix)]
fn execute_again(keys: &Env, argv: &[std::ffi::OsString]) -> Result<Outcome, KeysError> {
    use std::os::unix::process::CommandExt;
    let text = serde_json::to_vec(keys).map_err(KeysError::Encode)?;
    if text.len() > MAX_HANDOVER {
        return Err(KeysError::TooLarge);
    }
    let (read, write) = nix::unistd::pipe().map_err(|e| KeysError::Pipe(e.into()))?;
    let mut write = std::fs::File::from(write);
    write.write_all(&text).map_err(KeysError::HandOver)?;
    drop(write);
    nix::unistd::dup2_stdin(&read).map_err(|e| KeysError::HandOver(e.into()))?;
    drop(read);
    // The daemon's path, not `/proc/self/exe`: the process is named after the file it runs
    // (`ps`, `pgrep stepperd`).
    let program = std::env::current_exe()
        .ok()
        .filter(|p| p.is_file())
        .unwrap_or_else(|| std::path::PathBuf::from("/proc/self/exe"));
    let mut command = std::process::Command::new(program);
    if let Some((first, rest)) = argv.split_first() {
        command.arg0(first).args(rest);
    }
    for name in keys.keys() {
        command.env_remove(name);
    }
    command.env(HANDED_OVER, "1");
    // Returns only when it failed; stdin is the pipe now, so say so and go on without.
    let e = command.exec();
    if let Ok(null) = std::fs::File::open("/dev/null") {
        let _ = nix::unistd::dup2_stdin(null);
    }
    Err(KeysError::ExecuteAgain(e))
}

#[cfg(not(unix))]
fn execute_again(_: &Env, _: &[std::ffi::OsString]) -> Result<Outcome, KeysError> {
    Ok(Outcome::None)
}

/// In the daemon executed again: the keys from stdin, kept; stdin back to `/dev/null`.
fn read_back() -> Result<Outcome, KeysError> {
    let mut text = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(MAX_HANDOVER as u64 + 1)
        .read_to_end(&mut text);
    #[cfg(unix)]
    if let Ok(null) = std::fs::File::open("/dev/null") {
        let _ = nix::unistd::dup2_stdin(null);
    }
    read.map_err(KeysError::ReadBack)?;
    let keys: Env = serde_json::from_slice(&text).map_err(KeysError::Unreadable)?;
    let kept = keys.len();
    stepper_providers::daemon_env::keep(keys);
    Ok(Outcome::Kept(kept))
}

/// Make this process's `/proc` entries root's: the user's other processes (a tool's
/// command outside the sandbox) cannot read its memory, environment or descriptors.
fn hide_from_other_processes() {
    #[cfg(target_os = "linux")]
    if std::env::var_os("STEPPER_DUMPABLE").is_none() {
        let _ = nix::sys::prctl::set_dumpable(false);
    }
}
