//! The reaper: what a command starts never outlives the command, whatever it does to hide.
//!
//! A command a tool call runs is started through a helper, `stepperd-reap PID -- program
//! args…` (a small binary beside the daemon's, else the daemon's own as `stepperd reap`,
//! installed once with [`install`]). On Linux the helper
//! makes itself a child subreaper, runs the program as its child and waits. Whatever the
//! program starts stays beneath the helper however it detaches (`setsid -f`, a double fork,
//! a dropped `STEPPER_GROUP`): an orphan is re-parented to the helper, not to init. When the
//! program exits, every process left beneath the helper is stopped and killed, and the
//! helper exits as the program did (its code, or the same signal).
//!
//! The helper also:
//! - forwards SIGTERM, SIGINT, SIGHUP and SIGQUIT to the program, unless they came from the
//!   daemon, which signals the whole group (the program has it already);
//! - kills the program's tree and exits when the daemon dies (a parent-death signal, checked
//!   against its parent pid, since the kernel also sends it when the daemon's forking thread
//!   ends);
//! - if it is itself killed (`kill -9 $PPID` from the command), its orphans go to the
//!   daemon, itself a subreaper, which kills what it did not spawn ([`crate::lineage`]).
//!
//! Elsewhere (macOS, Windows) nothing is installed and commands run as they are: there is
//! no subreaper there (a Job Object holds the tree on Windows).
//!
//! *Every command runs under a reaper, not only the daemon's subreaper*: the daemon alone would
//! kill orphans only once they reach it, after their parent's death; the reaper kills them the
//! moment their command ends, and takes a command's SIGTERM grace with it. It is a binary of its
//! own, `stepperd-reap`, because every command pays for its start: the daemon's 180 MB executable
//! takes ~1.9 ms of CPU to start (relocations, page faults) where a small one takes ~0.3 ms (`cargo
//! bench -p stepper-e2e --bench reaper`). It is installed process-wide (like the registry) rather
//! than passed in `ToolCx`: it belongs to the daemon, not to a session, and every spawn site then
//! gets it without plumbing. The program is started with `posix_spawnp` (nix, safe), since std's
//! spawn keeps the signal mask the helper needs for its signalfd.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The helper's subcommand of `stepperd`.
pub const HELPER_SUBCOMMAND: &str = "reap";

/// The helper's exit code when it could not start the program (nothing ran).
pub const HELPER_FAILED: i32 = 125;

/// What every message of the helper starts with.
pub const HELPER_PREFIX: &str = "stepperd reap: ";

/// The helper every command runs under, once the daemon installed it: its program and the
/// arguments before the parent's pid.
static HELPER: OnceLock<(PathBuf, Vec<OsString>)> = OnceLock::new();

/// Run every command of [`command`] under the helper `program` from now on: `stepperd-reap`,
/// or the daemon's own executable with `prefix` = `["reap"]`. Linux only: elsewhere this
/// does nothing. A second call keeps the first helper.
pub fn install(program: &Path, prefix: &[&str]) {
    if cfg!(target_os = "linux") {
        let prefix = prefix.iter().map(OsString::from).collect();
        let _ = HELPER.set((program.to_path_buf(), prefix));
    }
}

/// Whether commands run under the reaper in this process.
pub fn installed() -> bool {
    HELPER.get().is_some()
}

/// A command that runs `program` under the reaper when one is installed, else `program`
/// itself. The caller adds the program's arguments, environment, folder and pipes.
pub fn command(program: impl AsRef<std::ffi::OsStr>) -> tokio::process::Command {
    match HELPER.get() {
        Some((helper, prefix)) => {
            let mut command = tokio::process::Command::new(helper);
            command
                .args(prefix)
                .arg(std::process::id().to_string())
                .arg("--");
            // This process's own executable (the sandbox helper) would be the reaper's once
            // the reaper runs it: name this one's by its pid, the same file however the one
            // on disk has changed since.
            if program.as_ref() == Path::new("/proc/self/exe") {
                command.arg(format!("/proc/{}/exe", std::process::id()));
            } else {
                command.arg(program);
            }
            command
        }
        None => tokio::process::Command::new(program),
    }
}

/// Whether `command` runs under the reaper (it was built by [`command`] once the helper was
/// installed): then the reaper holds whatever it starts.
pub fn runs(command: &tokio::process::Command) -> bool {
    HELPER
        .get()
        .is_some_and(|(helper, _)| Path::new(command.as_std().get_program()) == helper)
}

/// Where `program` is, found as the reaper will look for it (`PATH` from `path`, relative to
/// `cwd` when it names a folder): a missing program then fails at once, with the OS's own
/// error, rather than as a reaper that exits 127. Only needed where the caller reports that
/// error itself.
pub fn find_program(
    program: &std::ffi::OsStr,
    path: Option<&std::ffi::OsStr>,
    cwd: &Path,
) -> std::io::Result<PathBuf> {
    let runnable = |p: &Path| {
        let meta = std::fs::metadata(p).ok()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if meta.permissions().mode() & 0o111 == 0 {
                return None;
            }
        }
        meta.is_file().then(|| p.to_path_buf())
    };
    let named = Path::new(program);
    let found = if named.components().count() > 1 || named.is_absolute() {
        runnable(&cwd.join(named))
    } else {
        path.into_iter()
            .flat_map(std::env::split_paths)
            .find_map(|dir| runnable(&cwd.join(dir).join(named)))
    };
    found.ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no program {} to run", named.display()),
        )
    })
}

/// The helper: `stepperd-reap PID -- program args…` (or `stepperd reap …`), with `args`
/// after the program's name (or the subcommand).
/// Returns the program's exit code (or, for a program killed by a signal, 128 + the signal
/// after failing to die of the same signal).
pub fn helper_main(args: &[OsString]) -> i32 {
    let (parent, command) = match parse(args) {
        Ok(parsed) => parsed,
        Err(why) => {
            eprintln!("{HELPER_PREFIX}{why}");
            return HELPER_FAILED;
        }
    };
    run(parent, &command)
}

fn parse(args: &[OsString]) -> Result<(u32, Vec<OsString>), String> {
    crate::helper_args::parent_and_command(
        args,
        "usage: stepperd-reap PARENT_PID -- PROGRAM [ARGS…] (or stepperd reap …)",
    )
}

/// Why the program could not be started, as a shell would say it.
fn not_started(program: &OsString, e: &std::io::Error) -> i32 {
    eprintln!(
        "{HELPER_PREFIX}cannot run {}: {e}",
        program.to_string_lossy()
    );
    if e.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    }
}

#[cfg(target_os = "linux")]
fn run(parent: u32, command: &[OsString]) -> i32 {
    linux::run(parent, command)
}

/// Without a subreaper the helper only runs the program (it is never installed there; this
/// keeps `stepperd reap` meaning the same everywhere).
#[cfg(not(target_os = "linux"))]
fn run(_parent: u32, command: &[OsString]) -> i32 {
    let Some((program, args)) = command.split_first() else {
        return HELPER_FAILED;
    };
    match std::process::Command::new(program).args(args).status() {
        Ok(status) => status.code().unwrap_or(1),
        Err(e) => not_started(program, &e),
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::OsString;
    use std::os::fd::AsFd;
    use std::time::{Duration, Instant};

    use nix::errno::Errno;
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use nix::sys::signal::{SigSet, Signal};
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    use nix::unistd::Pid;

    use super::{HELPER_FAILED, HELPER_PREFIX, not_started};
    use crate::tree;

    /// The signals the helper takes in through its signalfd instead of dying of them.
    const HANDLED: [Signal; 5] = [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ];

    /// Sent by the kernel when the daemon (or only its thread that forked us) ends.
    const PARENT_DEATH: Signal = Signal::SIGHUP;

    /// How long the helper keeps killing what is left before it gives up and exits (what
    /// survives then, in uninterruptible sleep, goes to the daemon).
    const CLEAN_UP: Duration = Duration::from_secs(2);

    fn fail(what: &str, e: Errno) -> i32 {
        eprintln!("{HELPER_PREFIX}{what}: {e}");
        HELPER_FAILED
    }

    pub(super) fn run(parent: u32, command: &[OsString]) -> i32 {
        let Some((program, args)) = command.split_first() else {
            return HELPER_FAILED;
        };
        // Blocked before the program exists, so no signal is missed; the program starts with
        // them unblocked (`spawn` sets its mask).
        let mask: SigSet = HANDLED.into_iter().collect();
        if let Err(e) = mask.thread_block() {
            return fail("cannot block signals", e);
        }
        let flags = SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK;
        let signals = match SignalFd::with_flags(&mask, flags) {
            Ok(fd) => fd,
            Err(e) => return fail("cannot read signals", e),
        };
        // Without this, what the program detaches would escape: run nothing rather.
        if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
            return fail("cannot become a child subreaper", e);
        }
        if let Err(e) = nix::sys::prctl::set_pdeathsig(Some(PARENT_DEATH)) {
            return fail("cannot ask for the parent-death signal", e);
        }
        // The daemon may have died before the request: then nothing would ever tell us.
        if !parent_alive(parent) {
            eprintln!("{HELPER_PREFIX}the daemon is gone");
            return HELPER_FAILED;
        }
        let pid = match spawn(program, args, &mask) {
            Ok(pid) => pid,
            Err(e) => return not_started(program, &e),
        };

        let status = 'watch: loop {
            let arrived = match next_signals(&signals, PollTimeout::NONE) {
                Ok(arrived) => arrived,
                Err(e) => {
                    // Blind now: the tree cannot be watched, so it goes.
                    eprintln!("{HELPER_PREFIX}cannot read signals: {e}");
                    kill_everything_beneath(&signals);
                    return HELPER_FAILED;
                }
            };
            if !parent_alive(parent) {
                kill_everything_beneath(&signals);
                return HELPER_FAILED;
            }
            for (signal, sender) in arrived {
                if signal == Signal::SIGCHLD {
                    if let Some(status) = reap(pid) {
                        break 'watch status;
                    }
                } else {
                    forward(signal, sender, parent, pid);
                }
            }
        };
        kill_everything_beneath(&signals);
        exit_like(status)
    }

    /// The signals that arrived (with who sent each), waiting up to `timeout` for one.
    fn next_signals(signals: &SignalFd, timeout: PollTimeout) -> Result<Vec<(Signal, u32)>, Errno> {
        let mut fds = [PollFd::new(signals.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, timeout) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
        let mut arrived = Vec::new();
        loop {
            match signals.read_signal() {
                Ok(Some(info)) => {
                    let number = i32::try_from(info.ssi_signo).unwrap_or(0);
                    if let Ok(signal) = Signal::try_from(number) {
                        arrived.push((signal, info.ssi_pid));
                    }
                }
                Ok(None) => return Ok(arrived),
                Err(Errno::EINTR) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Start the program with the signals this helper blocked unblocked again, and SIGPIPE
    /// (which Rust ignores) back to its default: as the daemon would have started it. The
    /// standard library's spawn leaves the mask as it is; `posix_spawnp` sets both. Reaped
    /// with waitpid, like every other process that ends beneath us.
    fn spawn(program: &OsString, args: &[OsString], blocked: &SigSet) -> std::io::Result<u32> {
        use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawnp};
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let c = |s: &std::ffi::OsStr| {
            CString::new(s.as_bytes()).map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "a NUL byte in the command",
                )
            })
        };
        let path = c(program)?;
        let argv = std::iter::once(program)
            .chain(args)
            .map(|a| c(a))
            .collect::<std::io::Result<Vec<_>>>()?;
        let envp = std::env::vars_os()
            .map(|(k, v)| {
                let mut pair = k;
                pair.push("=");
                pair.push(v);
                c(&pair)
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        let mut defaults = *blocked;
        defaults.add(Signal::SIGPIPE);
        let mut attr = PosixSpawnAttr::init()?;
        attr.set_sigmask(&SigSet::empty())?;
        attr.set_sigdefault(&defaults)?;
        attr.set_flags(
            PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF,
        )?;
        let actions = PosixSpawnFileActions::init()?;
        let pid = posix_spawnp(&path, &actions, &attr, &argv, &envp)?;
        u32::try_from(pid.as_raw()).map_err(|_| std::io::Error::other("a negative pid"))
    }

    /// Whether our parent is still the daemon that started us.
    fn parent_alive(parent: u32) -> bool {
        u32::try_from(nix::unistd::getppid().as_raw()).ok() == Some(parent)
    }

    /// Reap every child that ended; the program's status once it is among them.
    fn reap(program: u32) -> Option<WaitStatus> {
        let mut found = None;
        loop {
            match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => return found,
                Ok(status @ (WaitStatus::Exited(p, _) | WaitStatus::Signaled(p, _, _)))
                    if u32::try_from(p.as_raw()).ok() == Some(program) =>
                {
                    found = Some(status);
                }
                Ok(_) | Err(Errno::EINTR) => {}
                Err(_) => return found,
            }
        }
    }

    /// A signal meant for the program. The daemon signals the whole process group, so one
    /// from it already reached the program, unless the program left the group.
    fn forward(signal: Signal, sender: u32, parent: u32, program: u32) {
        let ours = u32::try_from(nix::unistd::getpgrp().as_raw()).unwrap_or(0);
        let in_our_group = tree::stat(program).is_some_and(|s| s.pgrp == ours);
        if sender == parent && in_our_group {
            return;
        }
        tree::signal(program, signal);
    }

    /// Stop and kill every process beneath the helper, in rounds, until none is left or the
    /// time is up. Every descendant is reachable from our children: an orphan's parent
    /// becomes us (the nearest subreaper).
    fn kill_everything_beneath(signals: &SignalFd) {
        let me = std::process::id();
        let deadline = Instant::now() + CLEAN_UP;
        loop {
            let _ = reap(0);
            let children = tree::children(me);
            if children.is_empty() || Instant::now() >= deadline {
                return;
            }
            tree::kill_trees(&children);
            // A child's death wakes us at once; the timeout only bounds a slow one.
            let _ = next_signals(signals, PollTimeout::from(20u8));
        }
    }

    /// Exit as the program did: its code, or death by its signal (without a core file:
    /// that was the program's to write).
    fn exit_like(status: WaitStatus) -> i32 {
        match status {
            WaitStatus::Exited(_, code) => code,
            WaitStatus::Signaled(_, signal, _) => {
                let none =
                    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0);
                if none.is_ok() {
                    // Twice: the first may only reset a handler the runtime installed
                    // (Rust's for SIGSEGV and SIGBUS, which returns for a raised one).
                    let _ = SigSet::from(signal).thread_unblock();
                    let _ = nix::sys::signal::raise(signal);
                    let _ = nix::sys::signal::raise(signal);
                }
                // Still here: a signal this process ignores (SIGPIPE), or no core limit.
                128 + signal as i32
            }
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn programs_are_found_as_exec_would() {
        let cwd = Path::new("/");
        let path = std::ffi::OsString::from("/nonexistent:/bin:/usr/bin");
        assert!(find_program("sh".as_ref(), Some(&path), cwd).is_ok());
        assert!(find_program("/bin/sh".as_ref(), None, cwd).is_ok());
        let missing = find_program("no-such-program-x".as_ref(), Some(&path), cwd).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
        assert!(
            find_program("sh".as_ref(), None, cwd).is_err(),
            "no PATH, no search"
        );
        // A file that is not executable is not a program.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("data"), "x").unwrap();
        assert!(find_program("./data".as_ref(), None, dir.path()).is_err());
    }

    #[test]
    fn the_helper_arguments_are_checked() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            parse(&args(&["42", "--", "bash", "-c", "x"])).unwrap(),
            (42, args(&["bash", "-c", "x"]))
        );
        assert!(parse(&args(&["x", "--", "bash"])).is_err());
        assert!(parse(&args(&["42", "bash"])).is_err());
        assert!(parse(&args(&["42", "--"])).is_err());
        assert!(parse(&args(&[])).is_err());
    }
}
