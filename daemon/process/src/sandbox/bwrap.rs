//! Linux with bubblewrap: the command runs in namespaces of its own. Its mount namespace
//! shows the system read-only (so nothing outside the writable roots changes, its mode,
//! times, owner and extended attributes included), the writable roots bound in, the
//! protected paths bound read-only on top with every folder between them and their writable
//! root pinned in place (a mount point can be neither renamed nor removed, so none can be
//! swapped for a folder of the command's making), the hidden paths covered (an empty
//! read-only folder, or `/dev/null` for a file), its own `/dev` (its own pseudo-terminals and `/dev/shm`); its
//! PID and IPC namespaces are its own too, with their `/proc`. bubblewrap applies the
//! helper's seccomp filter last, just before it execs the command.
//!
//! Landlock is left out there: the namespaces already hold everything it would (writes, the
//! daemon's processes; mounts are refused by the seccomp filter as Landlock refuses them),
//! and it would cost a second start of this binary inside them for every command. It comes
//! back when reads are confined to `readableRoots` (which the view does not confine): then
//! bubblewrap starts the helper again inside its namespaces, from `/proc/self/fd/N` — the
//! very file the daemon runs from, whatever happened on disk since and wherever the mounts
//! put it — and that helper restricts itself as it does without bubblewrap.
//!
//! The helper waits for bubblewrap and reads its status (`--json-status-fd`): bubblewrap
//! reports an exit code only for a command it managed to exec, once everything was set up,
//! so its own failures become the helper's 125 and never pass for the command's.
//!
//! No reaper stands between the daemon and this helper (the PID namespace already ends with
//! the command), so the helper itself ends the command when the daemon dies: it asks for a
//! parent-death signal, and bubblewrap, started with `--die-with-parent`, dies with it,
//! taking its namespace and everything in it.
//!
//! *Protected paths are pinned, not only read-only*: a read-only `.git/hooks` inside a writable
//! `.git` could be renamed away with its parent and a new `.git/hooks` made; every folder between a
//! read-only path and its writable root is bound onto itself, and a mount point can be neither
//! renamed nor removed (`EBUSY`). A file moved between two writable roots (or into a pinned folder)
//! is copied, not renamed (`EXDEV`).
//!
//! *Hidden means an empty folder, or no file*: a tmpfs over a hidden folder, read-only once what is
//! named inside it is mounted (a write there fails as a refusal, and can be asked to run outside,
//! rather than vanish with the command), `/dev/null` bound over a hidden file (on a `nodev` mount,
//! so it cannot be opened). The fallback grants reads around hidden paths instead (Landlock only
//! grants): their parents get only the listing right (`ls ~` works, names inside `~/.ssh` show,
//! nothing in it opens), every other entry a rule of its own, rebuilt per command. Writing grants
//! no reading there, so a hidden folder inside a writable root stays unreadable. A writable root
//! named inside a hidden folder is visible under both.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{FcntlArg, FdFlag, OFlag};
use nix::sys::stat::Mode;

use super::linux::{self, Within};
use super::{BWRAP, HELPER_FAILED, HELPER_PREFIX, Invocation, Policy, SandboxError};

/// The outer half: start bubblewrap around the command and return the command's exit code,
/// or [`HELPER_FAILED`] with the reason on stderr when the sandbox was not made.
pub(super) fn outer(policy: &Policy, invocation: &Invocation, parent: Option<u32>) -> i32 {
    match launch(policy, invocation, parent) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{HELPER_PREFIX}{e}");
            HELPER_FAILED
        }
    }
}

fn unavailable(what: &str, e: &dyn std::fmt::Display) -> SandboxError {
    SandboxError::Unavailable(format!("{what}: {e}"))
}

/// A descriptor the child inherits (not closed on exec).
fn inherited<F: Into<OwnedFd>>(fd: F) -> Result<OwnedFd, SandboxError> {
    let fd = fd.into();
    nix::fcntl::fcntl(&fd, FcntlArg::F_SETFD(FdFlag::empty()))
        .map_err(|e| unavailable("cannot pass a descriptor on", &e))?;
    Ok(fd)
}

fn launch(
    policy: &Policy,
    invocation: &Invocation,
    parent: Option<u32>,
) -> Result<i32, SandboxError> {
    let cwd =
        std::env::current_dir().map_err(|e| unavailable("cannot tell the command's folder", &e))?;
    let view = View::plan(policy);
    let (mut status_read, status_write) =
        std::io::pipe().map_err(|e| unavailable("cannot make a pipe", &e))?;
    let status_write = inherited(status_write)?;
    let mut args = view.args(&cwd);
    args.push("--json-status-fd".into());
    args.push(status_write.as_raw_fd().to_string().into());

    // The helper again inside (to probe, or for Landlock where reads are confined): this
    // binary, by a descriptor bubblewrap passes on.
    let confined = policy.readable.is_some();
    let exe = if confined || *invocation == Invocation::Probe {
        let fd = nix::fcntl::open("/proc/self/exe", OFlag::O_RDONLY, Mode::empty())
            .map_err(|e| unavailable("cannot open the helper's own binary", &e))?;
        Some(fd)
    } else {
        None
    };
    let seccomp = if confined {
        // The helper inside applies it, with Landlock.
        None
    } else {
        let program = linux::seccomp_program(policy)?;
        let (read, mut write) =
            std::io::pipe().map_err(|e| unavailable("cannot make a pipe", &e))?;
        let bytes: Vec<u8> = program
            .iter()
            .flat_map(|f| {
                let mut b = [0u8; 8];
                b[..2].copy_from_slice(&f.code.to_ne_bytes());
                b[2] = f.jt;
                b[3] = f.jf;
                b[4..].copy_from_slice(&f.k.to_ne_bytes());
                b
            })
            .collect();
        // Far less than a pipe holds: written now, read by bubblewrap as it starts.
        write
            .write_all(&bytes)
            .map_err(|e| unavailable("cannot hand the seccomp filter over", &e))?;
        drop(write);
        let read = inherited(read)?;
        args.push("--seccomp".into());
        args.push(read.as_raw_fd().to_string().into());
        Some(read)
    };
    args.push("--".into());
    match (&exe, invocation) {
        (Some(exe), _) => {
            let inner = Policy {
                writable: policy.writable.clone(),
                readable: policy.readable.clone(),
                network: policy.network,
                max_abi: policy.max_abi,
                ..Policy::default()
            };
            let mut inner_args = inner.helper_args();
            inner_args.pop();
            inner_args.push("--inner".into());
            inner_args.push(exe.as_raw_fd().to_string().into());
            args.push(format!("/proc/self/fd/{}", exe.as_raw_fd()).into());
            args.extend(inner_args);
            match invocation {
                Invocation::Probe => args.push("--probe".into()),
                Invocation::Run(command) => {
                    args.push("--".into());
                    args.extend(command.iter().cloned());
                }
            }
        }
        (None, Invocation::Run(command)) => args.extend(command.iter().cloned()),
        (None, Invocation::Probe) => unreachable_probe()?,
    }
    let exe = exe.map(inherited).transpose()?;
    let mut child = std::process::Command::new(BWRAP)
        .args(args)
        .spawn()
        .map_err(|e| unavailable(&format!("cannot start {BWRAP}"), &e))?;
    drop((exe, seccomp, status_write));
    let Some(status) = wait_unless_orphaned(&mut child, parent)? else {
        // bubblewrap dies with this process anyway (`--die-with-parent`); not a moment later.
        let _ = child.kill();
        return Err(SandboxError::Unavailable(
            "the daemon that started the command is gone".into(),
        ));
    };
    // bubblewrap has exited, so what it had to say is in the pipe (the sandbox never held
    // it: bubblewrap closes it before it execs the command).
    let mut report = String::new();
    nix::fcntl::fcntl(&status_read, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))
        .map_err(|e| unavailable("cannot read bubblewrap's status", &e))?;
    let _ = status_read.read_to_string(&mut report);
    if report.contains("\"exit-code\"") {
        return Ok(exit_code(status));
    }
    if let Some(signal) = status.signal() {
        // bubblewrap itself was killed (the command's group was stopped): so is this.
        return Ok(exit_code(std::process::ExitStatus::from_raw(signal)));
    }
    Err(SandboxError::Unavailable(format!(
        "bubblewrap could not make the command's sandbox ({status}; its message is above)"
    )))
}

/// Wait for bubblewrap to exit, unless `parent` (the daemon) dies first: then `None`.
///
/// The kernel sends the parent-death signal when the thread that started this process ends,
/// not only the process, so it is taken as a cue to look: the parent is gone once this
/// process has another. The signals are blocked only now, after bubblewrap started: the
/// command must not inherit a mask it does not expect.
fn wait_unless_orphaned(
    child: &mut std::process::Child,
    parent: Option<u32>,
) -> Result<Option<std::process::ExitStatus>, SandboxError> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use nix::sys::signal::{SigSet, Signal};
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    let watching = |what: &str, e: nix::errno::Errno| unavailable(what, &e);
    let mask: SigSet = [Signal::SIGCHLD, Signal::SIGHUP].into_iter().collect();
    mask.thread_block()
        .map_err(|e| watching("cannot block signals", e))?;
    let signals = SignalFd::with_flags(&mask, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| watching("cannot read signals", e))?;
    nix::sys::prctl::set_pdeathsig(Some(Signal::SIGHUP))
        .map_err(|e| watching("cannot ask for the parent-death signal", e))?;
    let orphaned =
        || parent.is_some_and(|p| u32::try_from(nix::unistd::getppid().as_raw()).ok() != Some(p));
    loop {
        // Looked at before each wait: what happened before the signals were blocked
        // (bubblewrap's end, the daemon's) sent nothing to the descriptor.
        if let Some(status) = child
            .try_wait()
            .map_err(|e| unavailable("lost bubblewrap", &e))?
        {
            return Ok(Some(status));
        }
        if orphaned() {
            return Ok(None);
        }
        let mut fds = [PollFd::new(signals.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(watching("cannot wait for bubblewrap", e)),
        }
        while let Ok(Some(_)) = signals.read_signal() {}
    }
}

/// A probe always runs the helper inside; this is never reached.
fn unreachable_probe() -> Result<(), SandboxError> {
    Err(SandboxError::Restrict("the probe lost its helper".into()))
}

/// The command's exit code as a shell would see it; a command killed by a signal kills
/// this helper with the same signal.
fn exit_code(status: std::process::ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    let signal = status.signal().unwrap_or(libc::SIGKILL);
    if let Ok(sig) = nix::sys::signal::Signal::try_from(signal) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::this(), sig);
    }
    128 + signal
}

/// The helper inside the namespaces (to probe, or where reads are confined): let go of the
/// descriptor it was started from, restrict this process, and exec the command.
pub(super) fn inner(policy: &Policy, invocation: &Invocation, exe: i32) -> i32 {
    let failed = |e: SandboxError| {
        eprintln!("{HELPER_PREFIX}{e}");
        HELPER_FAILED
    };
    // The command must not hold it (nothing here owns it: it was inherited).
    if let Err(e) = nix::unistd::close(exe) {
        return failed(SandboxError::Restrict(format!(
            "cannot close descriptor {exe}: {e}"
        )));
    }
    // A probe of the sandbox without confined reads checks what bubblewrap applied; else the
    // helper restricts itself.
    let probed = policy.readable.is_none() && *invocation == Invocation::Probe;
    let what = if probed {
        seccomp_applied().map(|()| "seccomp".to_string())
    } else {
        linux::restrict(policy, Within::Namespace)
    };
    let what = match what {
        Ok(what) => what,
        Err(e) => return failed(e),
    };
    match invocation {
        Invocation::Probe => {
            println!("ok bubblewrap + {what}");
            0
        }
        Invocation::Run(command) => linux::exec(command),
    }
}

/// Whether this process runs under a seccomp filter (bubblewrap's `--seccomp`).
fn seccomp_applied() -> Result<(), SandboxError> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| unavailable("cannot read /proc/self/status", &e))?;
    let mode = status
        .lines()
        .find_map(|l| l.strip_prefix("Seccomp:"))
        .map(str::trim);
    if mode == Some("2") {
        Ok(())
    } else {
        Err(SandboxError::Unavailable(
            "bubblewrap did not apply the seccomp filter".into(),
        ))
    }
}

/// One mount over the read-only view of the system, by bubblewrap.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mount {
    /// Writable: a writable root, or a folder pinned in place above a read-only path.
    Bind(PathBuf),
    /// Read-only, and in place.
    ReadOnly(PathBuf),
    /// Hidden under an empty folder of its own, made read-only once everything is mounted.
    HideDir(PathBuf),
    /// Hidden under `/dev/null`.
    HideFile(PathBuf),
}

impl Mount {
    fn path(&self) -> &Path {
        match self {
            Mount::Bind(p) | Mount::ReadOnly(p) | Mount::HideDir(p) | Mount::HideFile(p) => p,
        }
    }

    /// At the same path, the later wins: hidden over read-only over writable.
    fn rank(&self) -> u8 {
        match self {
            Mount::Bind(_) => 0,
            Mount::ReadOnly(_) => 1,
            Mount::HideDir(_) | Mount::HideFile(_) => 2,
        }
    }
}

/// The command's view of the file system.
#[derive(Debug, Clone, PartialEq, Eq)]
struct View {
    /// `/` itself is a writable root.
    root_writable: bool,
    /// In the order bubblewrap applies them: a path before the paths beneath it.
    mounts: Vec<Mount>,
}

impl View {
    /// The view for `policy`, its paths resolved as they are now (links followed, so a
    /// mount lands where the path leads); paths that do not exist are left out.
    fn plan(policy: &Policy) -> View {
        let resolve = |paths: &[PathBuf]| -> Vec<PathBuf> {
            paths
                .iter()
                .filter_map(|p| std::fs::canonicalize(p).ok())
                .collect()
        };
        // `/dev` and `/proc` are the namespace's own.
        let writable: Vec<PathBuf> = resolve(&policy.writable)
            .into_iter()
            .filter(|p| !p.starts_with("/dev") && !p.starts_with("/proc"))
            .collect();
        let hidden: Vec<(PathBuf, bool)> = resolve(&policy.hidden)
            .into_iter()
            .map(|p| {
                let dir = p.is_dir();
                (p, dir)
            })
            .collect();
        View::of(&writable, &resolve(&policy.read_only), &hidden)
    }

    /// The view for resolved paths (`hidden` with whether each is a folder).
    fn of(writable: &[PathBuf], read_only: &[PathBuf], hidden: &[(PathBuf, bool)]) -> View {
        let root = Path::new("/");
        let root_writable = writable.iter().any(|w| w == root);
        let mut mounts = Vec::new();
        for path in read_only {
            // The shallowest writable root it is in; outside them it is read-only already.
            let Some(within) = writable
                .iter()
                .filter(|w| path.starts_with(w))
                .min_by_key(|w| w.components().count())
            else {
                continue;
            };
            // Every folder between: renaming one away would take the read-only path with
            // it and leave its name free for a folder of the command's making.
            mounts.extend(
                path.ancestors()
                    .skip(1)
                    .take_while(|a| *a != within.as_path() && a.starts_with(within))
                    .map(|a| Mount::Bind(a.to_path_buf())),
            );
            mounts.push(Mount::ReadOnly(path.clone()));
        }
        let covers: Vec<&Path> = read_only
            .iter()
            .map(PathBuf::as_path)
            .chain(hidden.iter().map(|(p, _)| p.as_path()))
            .collect();
        for path in writable.iter().filter(|w| *w != root) {
            // A root inside another adds nothing, unless something between covers it.
            let redundant = writable.iter().any(|outer| {
                outer != path
                    && path.starts_with(outer)
                    && !covers
                        .iter()
                        .any(|c| path.starts_with(c) && c.starts_with(outer) && c != path)
            });
            if !redundant {
                mounts.push(Mount::Bind(path.clone()));
            }
        }
        for (path, dir) in hidden {
            mounts.push(if *dir {
                Mount::HideDir(path.clone())
            } else {
                Mount::HideFile(path.clone())
            });
        }
        mounts.sort_by(|a, b| {
            let key = |m: &Mount| (m.path().components().count(), m.rank());
            key(a).cmp(&key(b)).then_with(|| a.path().cmp(b.path()))
        });
        mounts.dedup();
        View {
            root_writable,
            mounts,
        }
    }

    /// bubblewrap's arguments for this view.
    fn args(&self, cwd: &Path) -> Vec<OsString> {
        let mut args: Vec<OsString> = Vec::new();
        let mut push = |parts: &[&std::ffi::OsStr]| args.extend(parts.iter().map(OsString::from));
        let os = std::ffi::OsStr::new;
        push(&[
            // Namespaces of its own. The user namespace is what lets bubblewrap do this
            // without privileges, and holds the capabilities a root daemon would pass on.
            os("--unshare-user"),
            os("--unshare-pid"),
            os("--unshare-ipc"),
            // No controlling terminal: `/dev/tty` reaches nobody's, and `TIOCSTI` nothing.
            os("--new-session"),
            os("--die-with-parent"),
            os("--cap-drop"),
            os("ALL"),
        ]);
        push(&[
            os(if self.root_writable {
                "--bind"
            } else {
                "--ro-bind"
            }),
            os("/"),
            os("/"),
            os("--dev"),
            os("/dev"),
            os("--proc"),
            os("/proc"),
        ]);
        for mount in &self.mounts {
            match mount {
                Mount::Bind(p) => push(&[os("--bind"), p.as_os_str(), p.as_os_str()]),
                Mount::ReadOnly(p) => push(&[os("--ro-bind"), p.as_os_str(), p.as_os_str()]),
                Mount::HideDir(p) => push(&[os("--tmpfs"), p.as_os_str()]),
                Mount::HideFile(p) => push(&[os("--ro-bind"), os("/dev/null"), p.as_os_str()]),
            }
        }
        // Read-only once what is mounted inside them (writable roots asked for by name) is:
        // a write there says so, rather than vanish with the command.
        for mount in &self.mounts {
            if let Mount::HideDir(p) = mount {
                push(&[os("--remount-ro"), p.as_os_str()]);
            }
        }
        // Where the command starts, or no start: bubblewrap would quietly go to $HOME.
        push(&[os("--chdir"), cwd.as_os_str()]);
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(list: &[&str]) -> Vec<PathBuf> {
        list.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn read_only_paths_sit_on_pinned_folders_over_their_writable_root() {
        let view = View::of(
            &paths(&["/tmp", "/tmp/p", "/var/tmp"]),
            &paths(&[
                "/tmp/p/.git/hooks",
                "/tmp/p/.git/modules/sub/config",
                "/tmp/p/.stepper",
                "/usr/lib/outside",
            ]),
            &[],
        );
        let expected = vec![
            Mount::Bind("/tmp".into()),
            // The project is inside /tmp, but pinned: it holds read-only paths.
            Mount::Bind("/tmp/p".into()),
            Mount::Bind("/var/tmp".into()),
            Mount::Bind("/tmp/p/.git".into()),
            Mount::ReadOnly("/tmp/p/.stepper".into()),
            Mount::Bind("/tmp/p/.git/modules".into()),
            Mount::ReadOnly("/tmp/p/.git/hooks".into()),
            Mount::Bind("/tmp/p/.git/modules/sub".into()),
            Mount::ReadOnly("/tmp/p/.git/modules/sub/config".into()),
        ];
        assert_eq!(view.mounts, expected);
        assert!(!view.root_writable);
    }

    #[test]
    fn hidden_paths_cover_what_is_beneath_and_give_way_to_roots_asked_for_inside() {
        let view = View::of(
            &paths(&["/home/me", "/home/me/.aws/cli"]),
            &[],
            &[
                ("/home/me/.aws".into(), true),
                ("/home/me/.netrc".into(), false),
                ("/home/me/.ssh".into(), true),
            ],
        );
        assert_eq!(
            view.mounts,
            vec![
                Mount::Bind("/home/me".into()),
                Mount::HideDir("/home/me/.aws".into()),
                Mount::HideFile("/home/me/.netrc".into()),
                Mount::HideDir("/home/me/.ssh".into()),
                Mount::Bind("/home/me/.aws/cli".into()),
            ]
        );
        let args = view.args(Path::new("/home/me"));
        let text: Vec<&str> = args.iter().map(|a| a.to_str().unwrap()).collect();
        let at = |needle: &[&str]| {
            text.windows(needle.len())
                .position(|w| w == needle)
                .unwrap_or_else(|| panic!("{needle:?} in {text:?}"))
        };
        assert!(at(&["--ro-bind", "/", "/"]) < at(&["--bind", "/home/me", "/home/me"]));
        assert!(
            at(&["--tmpfs", "/home/me/.aws"])
                < at(&["--bind", "/home/me/.aws/cli", "/home/me/.aws/cli"])
        );
        assert!(
            at(&["--bind", "/home/me/.aws/cli", "/home/me/.aws/cli"])
                < at(&["--remount-ro", "/home/me/.aws"])
        );
        at(&["--ro-bind", "/dev/null", "/home/me/.netrc"]);
        at(&["--dev", "/dev"]);
        at(&["--proc", "/proc"]);
        at(&["--unshare-pid"]);
        at(&["--new-session"]);
        assert_eq!(&text[text.len() - 2..], &["--chdir", "/home/me"]);
    }

    #[test]
    fn a_writable_root_given_twice_or_inside_another_is_bound_once() {
        let view = View::of(&paths(&["/", "/tmp", "/tmp", "/work/p"]), &[], &[]);
        assert!(view.root_writable);
        assert!(view.mounts.is_empty(), "{:?}", view.mounts);
        let args = view.args(Path::new("/"));
        assert!(
            args.windows(3).any(|w| w == ["--bind", "/", "/"]),
            "{args:?}"
        );
        assert!(!args.iter().any(|a| a == "--ro-bind"), "{args:?}");
    }
}
