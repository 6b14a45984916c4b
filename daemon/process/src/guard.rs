//! The parent-death guard: a long-lived child (another agent CLI driven as a back-end) dies
//! with its daemon, even one killed with SIGKILL, when nothing is left to kill its group.
//!
//! The child is started through a helper, `stepperd guard PID -- program args…`:
//! - on Linux the helper asks the kernel for SIGKILL when its parent dies
//!   (`PR_SET_PDEATHSIG`), checks the parent is still the daemon (it may have died between
//!   the fork and the request), and execs the program, which keeps the request;
//! - on other Unix systems (macOS) the helper stays as a watchdog: it runs the program as
//!   its child in its own process group, and kills the group once its parent is gone;
//! - on Windows the helper runs the program and waits: the Job Object every group is in
//!   (`group.rs`) already kills the tree when the daemon's handles close.
//!
//! The kernel sends the parent-death signal when the *thread* that forked the child ends,
//! so [`spawn`] forks on a thread that lives as long as the process, never on one of the
//! runtime's blocking threads, which end when idle.

use std::ffi::OsString;
use std::io;
use std::path::Path;

use crate::group::{self, GroupChild};

/// The helper's subcommand of `stepperd`.
pub const HELPER_SUBCOMMAND: &str = "guard";

/// The helper's exit code when it could not start the program.
pub const HELPER_FAILED: i32 = 125;

/// A command that runs `program` under the guard of `helper` (the daemon's executable),
/// watching this process. The caller adds the program's arguments.
pub fn command(helper: &Path, program: &Path) -> GuardedCommand {
    let mut inner = tokio::process::Command::new(helper);
    inner
        .arg(HELPER_SUBCOMMAND)
        .arg(std::process::id().to_string())
        .arg("--")
        .arg(program);
    GuardedCommand { inner }
}

/// A command whose program runs under the guard; see [`command`].
pub struct GuardedCommand {
    inner: tokio::process::Command,
}

impl GuardedCommand {
    /// The command to set up further (arguments, environment, folder, pipes).
    pub fn command_mut(&mut self) -> &mut tokio::process::Command {
        &mut self.inner
    }
}

/// Spawn a guarded command as the leader of its own process group, recorded in the child
/// registry (see [`group::spawn`]), forked on a thread that never ends.
pub async fn spawn(command: GuardedCommand) -> io::Result<GroupChild> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let handle = tokio::runtime::Handle::current();
    let job: Job = Box::new(move || {
        // The child is registered with this runtime's process driver.
        let _entered = handle.enter();
        let _ = tx.send(group::spawn(command.inner));
    });
    spawner()?
        .send(job)
        .map_err(|_| io::Error::other("the spawning thread is gone"))?;
    rx.await
        .map_err(|_| io::Error::other("the spawning thread dropped the request"))?
}

type Job = Box<dyn FnOnce() + Send>;

/// The one thread children are forked on.
fn spawner() -> io::Result<std::sync::mpsc::Sender<Job>> {
    static SPAWNER: std::sync::OnceLock<Option<std::sync::Mutex<std::sync::mpsc::Sender<Job>>>> =
        std::sync::OnceLock::new();
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("stepper-spawner".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job();
                }
            })
            .ok()
            .map(|_| std::sync::Mutex::new(tx))
    });
    match sender {
        Some(tx) => Ok(tx.lock().unwrap_or_else(|p| p.into_inner()).clone()),
        None => Err(io::Error::other("cannot start the spawning thread")),
    }
}

/// The helper: `stepperd guard PID -- program args…` with `args` after the subcommand.
/// Returns only when the program could not run (or, as a watchdog, when it ended): the exit
/// code.
pub fn helper_main(args: &[OsString]) -> i32 {
    let (parent, command) = match parse(args) {
        Ok(parsed) => parsed,
        Err(why) => {
            eprintln!("stepperd guard: {why}");
            return HELPER_FAILED;
        }
    };
    run(parent, &command)
}

fn parse(args: &[OsString]) -> Result<(u32, Vec<OsString>), String> {
    crate::helper_args::parent_and_command(
        args,
        "usage: stepperd guard PARENT_PID -- PROGRAM [ARGS…]",
    )
}

#[cfg(target_os = "linux")]
fn run(parent: u32, command: &[OsString]) -> i32 {
    use nix::sys::signal::Signal;
    use std::os::unix::process::CommandExt;
    if let Err(e) = nix::sys::prctl::set_pdeathsig(Some(Signal::SIGKILL)) {
        eprintln!("stepperd guard: cannot ask for the parent-death signal: {e}");
        return HELPER_FAILED;
    }
    // The parent may have died before the request: then nothing would ever signal.
    if u32::try_from(nix::unistd::getppid().as_raw()).ok() != Some(parent) {
        eprintln!("stepperd guard: the daemon is gone");
        return HELPER_FAILED;
    }
    let Some((program, args)) = command.split_first() else {
        return HELPER_FAILED;
    };
    let e = std::process::Command::new(program).args(args).exec();
    eprintln!(
        "stepperd guard: cannot run {}: {e}",
        program.to_string_lossy()
    );
    if e.kind() == io::ErrorKind::NotFound {
        127
    } else {
        126
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
fn run(parent: u32, command: &[OsString]) -> i32 {
    use nix::sys::signal::{Signal, killpg};
    let Some((program, args)) = command.split_first() else {
        return HELPER_FAILED;
    };
    // The program stays in this (the helper's) process group, which the daemon kills as one.
    let mut child = match std::process::Command::new(program).args(args).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!(
                "stepperd guard: cannot run {}: {e}",
                program.to_string_lossy()
            );
            return if e.kind() == io::ErrorKind::NotFound {
                127
            } else {
                126
            };
        }
    };
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.code().unwrap_or(1),
            Ok(None) => {}
            Err(_) => return 1,
        }
        if u32::try_from(nix::unistd::getppid().as_raw()).ok() != Some(parent) {
            let _ = killpg(nix::unistd::getpgrp(), Signal::SIGKILL);
            return 1;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

#[cfg(not(unix))]
fn run(parent: u32, command: &[OsString]) -> i32 {
    let _ = parent;
    let Some((program, args)) = command.split_first() else {
        return HELPER_FAILED;
    };
    match std::process::Command::new(program).args(args).status() {
        Ok(status) => status.code().unwrap_or(1),
        Err(e) => {
            eprintln!(
                "stepperd guard: cannot run {}: {e}",
                program.to_string_lossy()
            );
            HELPER_FAILED
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helper_arguments_are_checked() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            parse(&args(&["42", "--", "claude", "-p"])).unwrap(),
            (42, args(&["claude", "-p"]))
        );
        assert!(parse(&args(&["x", "--", "claude"])).is_err());
        assert!(parse(&args(&["42", "claude"])).is_err());
        assert!(parse(&args(&["42", "--"])).is_err());
        assert!(parse(&args(&[])).is_err());
    }
}
