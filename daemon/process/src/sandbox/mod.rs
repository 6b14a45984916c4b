//! The OS sandbox for commands: what a command may change and reach, and how it is made to
//! hold. On Linux a helper (`stepperd sandbox …`, see [`helper_main`]) runs the command in
//! bubblewrap's namespaces when it can (a read-only view of the system with the writable
//! roots bound in, protected paths bound read-only, hidden paths covered, and private `/dev`
//! and `/proc`; see `bwrap.rs`), restricts itself with Landlock (files) and seccomp (sockets)
//! inside them, and then execs the command — so the daemon itself keeps `unsafe` out and is
//! never restricted. Without bubblewrap, Landlock and seccomp alone hold what they can. On
//! macOS `/usr/bin/sandbox-exec` runs it under a profile built by [`macos::profile`].
//! Elsewhere there is no sandbox, and [`probe`] says so.
//!
//! A sandbox that cannot be applied in full never runs the command: the helper exits with
//! [`HELPER_FAILED`] and says why on stderr.
//!
//! *The sandbox helper is the daemon's own binary*: `stepperd sandbox` (started from the path the
//! daemon was found at when it started — not `/proc/<daemon>/exe`: commands start under the reaper,
//! and the daemon, not dumpable, keeps its `/proc` entries from a user's other processes; a daemon
//! whose file was replaced is restarted by the next client when idle) restricts itself and execs
//! `bash`, or starts bubblewrap around it; it handles its arguments before anything of the daemon
//! starts. Where it runs again inside bubblewrap (confined reads, the probe), it is started from a
//! descriptor of that same file (`/proc/self/fd/N`, closed before the command runs): a path would
//! name whatever is on disk now, and inside the namespace maybe nothing. A restriction that cannot
//! be applied in full exits 125 and runs nothing, bubblewrap's own failures included: it reports an
//! exit code on `--json-status-fd` only for a command it executed, so a failure of its own cannot
//! pass for the command's. The probe runs the same code once per daemon, and a session that wants a
//! sandbox this machine lacks is told once and asks as in `default` mode.
//!
//! *bubblewrap first, Landlock alone as the fallback* (issue 34): Landlock governs contents, not
//! metadata (mode, times, owner, xattrs), and cannot take a path back out of a writable folder,
//! hide a folder under a readable one without taking its parents apart, or isolate `/dev/shm`,
//! terminals and `/proc`; a mount namespace with read-only binds does all of it at once. bubblewrap
//! is Debian's and Codex's, found only at `/usr/bin/bwrap` (a `bwrap` on the session's PATH could
//! be the project's), probed once; `STEPPER_SANDBOX_BWRAP=off` forces the fallback. Under
//! bubblewrap the helper does not restrict itself again with Landlock: the namespaces hold writes,
//! the daemon's processes and devices, and the seccomp filter (applied by bubblewrap just before
//! exec, mounts refused as Landlock refuses them) holds sockets; a second start of the daemon's
//! binary inside would cost ~2 ms per command for nothing. Where reads are confined
//! (`readableRoots`) it does, since the view does not confine them. Without `--unshare-net`: the
//! filter already refuses every `socket()` when the network is off, and a network namespace costs
//! ~1.3 ms a command.

#[cfg(target_os = "linux")]
mod bwrap;
#[cfg(target_os = "linux")]
mod linux;
pub mod macos;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The exit code of a helper that could not restrict itself (the command did not run); its
/// stderr's last line starts with [`HELPER_PREFIX`].
pub const HELPER_FAILED: i32 = 125;
/// How the helper's own messages start.
pub const HELPER_PREFIX: &str = "stepper sandbox: ";
/// The subcommand of `stepperd` that is the helper.
pub const HELPER_SUBCOMMAND: &str = "sandbox";
/// bubblewrap at its fixed place (Debian's `bubblewrap` package): one found on `PATH` could be
/// the project's.
pub const BWRAP: &str = "/usr/bin/bwrap";

/// What a sandboxed command may do. Everything not granted is refused by the kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Folders and files it may change (create, write, remove, rename within). Empty: it
    /// changes nothing.
    pub writable: Vec<PathBuf>,
    /// Where it may read and execute; `None` is everywhere.
    pub readable: Option<Vec<PathBuf>>,
    /// Paths inside the writable roots that it finds read-only, and can neither remove nor
    /// replace (what git and stepper run programs from). Held by bubblewrap and Seatbelt;
    /// Landlock alone cannot take a path back out of a writable folder.
    pub read_only: Vec<PathBuf>,
    /// Paths whose contents it cannot read (credentials, stepper's own files): a hidden
    /// folder looks empty, a hidden file reads as empty or cannot be opened.
    pub hidden: Vec<PathBuf>,
    /// Internet sockets (IPv4 and IPv6, loopback included). Unix-domain sockets are refused
    /// either way: they reach processes outside the sandbox (this daemon among them).
    pub network: bool,
    /// Use at most this Landlock ABI: a kernel that offers less is simulated (0 is a kernel
    /// without Landlock). `None`: what the kernel offers.
    pub max_abi: Option<u32>,
    /// Run the command in bubblewrap's namespaces ([`BWRAP`]), Landlock and seccomp inside
    /// (Linux). Without it, Landlock and seccomp alone.
    pub bubblewrap: bool,
}

/// What makes a sandbox hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// bubblewrap's mount, PID and IPC namespaces, with Landlock and seccomp inside (Linux).
    Bubblewrap,
    /// Landlock and seccomp alone (Linux without a usable bubblewrap).
    Landlock,
    /// `sandbox-exec` and a Seatbelt profile (macOS).
    Seatbelt,
}

/// Whether this machine can sandbox commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// It can; `what` says with what, in words (`bubblewrap + landlock-abi=7 seccomp`).
    Available { what: String, mechanism: Mechanism },
    /// It cannot, and why.
    Unavailable { why: String },
}

/// Why the helper's arguments or the restriction failed.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "{0} (usage: stepperd sandbox [--write PATH]... [--read PATH]... [--read-only PATH]... [--hide PATH]... [--network] [--bwrap [--parent PID]] [--max-abi N] -- PROGRAM [ARG]...)"
    )]
    Usage(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("cannot restrict the command: {0}")]
    Restrict(String),
}

impl Policy {
    /// The helper's arguments for this policy, up to and including `--`.
    pub fn helper_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![HELPER_SUBCOMMAND.into()];
        for (flag, paths) in [
            ("--write", &self.writable),
            ("--read-only", &self.read_only),
            ("--hide", &self.hidden),
        ] {
            for path in paths {
                args.push(flag.into());
                args.push(path.into());
            }
        }
        for path in self.readable.iter().flatten() {
            args.push("--read".into());
            args.push(path.into());
        }
        if self.readable.as_ref().is_some_and(Vec::is_empty) {
            // Nothing readable at all is still a restriction, not "everywhere".
            args.push("--read-none".into());
        }
        if self.network {
            args.push("--network".into());
        }
        if self.bubblewrap {
            args.push("--bwrap".into());
            // The helper outside bubblewrap stays as the command's parent: it ends the
            // command when the process that starts it (this one, the daemon) dies.
            args.push("--parent".into());
            args.push(std::process::id().to_string().into());
        }
        if let Some(abi) = self.max_abi {
            args.push("--max-abi".into());
            args.push(abi.to_string().into());
        }
        args.push("--".into());
        args
    }

    /// The policy and the command from the helper's arguments (after the subcommand).
    /// `--probe` instead of a command asks only whether the restriction can be applied.
    pub fn from_helper_args(args: &[OsString]) -> Result<(Policy, Invocation), SandboxError> {
        let call = HelperCall::parse(args)?;
        Ok((call.policy, call.invocation))
    }

    /// How to run a command under this policy on this OS: `program`, then `args`, then the
    /// command. `helper` is the binary whose `sandbox` subcommand restricts itself (Linux).
    /// `None` where the OS has no sandbox.
    pub fn wrap(&self, helper: &Path) -> Option<Wrapped> {
        if cfg!(target_os = "linux") {
            Some(Wrapped {
                program: helper.into(),
                args: self.helper_args(),
            })
        } else if cfg!(target_os = "macos") {
            let (profile, params) = macos::profile(self);
            let mut args: Vec<OsString> = vec!["-p".into(), profile.into()];
            for (key, value) in params {
                let mut define = OsString::from(format!("-D{key}="));
                define.push(value);
                args.push(define);
            }
            args.push("--".into());
            Some(Wrapped {
                // A fixed path: a `sandbox-exec` found on PATH could be anyone's.
                program: macos::SANDBOX_EXEC.into(),
                args,
            })
        } else {
            None
        }
    }
}

/// What the helper was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    /// Restrict itself, then exit 0 (or say why it cannot).
    Probe,
    /// Restrict itself, then exec this command.
    Run(Vec<OsString>),
}

/// The helper's arguments, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HelperCall {
    policy: Policy,
    invocation: Invocation,
    /// Set when this is the helper bubblewrap started inside its namespaces: the descriptor
    /// of this binary it was started from (`--inner FD`; see `bwrap.rs`).
    inner: Option<i32>,
    /// The process whose death ends the command (`--parent PID`, with `--bwrap`): the daemon
    /// that started the helper. Without it, whichever process started the helper.
    parent: Option<u32>,
}

impl HelperCall {
    fn parse(args: &[OsString]) -> Result<HelperCall, SandboxError> {
        let mut policy = Policy::default();
        let mut probe = false;
        let mut inner = None;
        let mut parent = None;
        let mut it = args.iter();
        let mut command = Vec::new();
        let value = |it: &mut std::slice::Iter<'_, OsString>, flag: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| SandboxError::Usage(format!("{flag} needs a value")))
        };
        while let Some(arg) = it.next() {
            match arg.to_str() {
                Some("--write") => policy.writable.push(value(&mut it, "--write")?.into()),
                Some("--read") => policy
                    .readable
                    .get_or_insert_with(Vec::new)
                    .push(value(&mut it, "--read")?.into()),
                Some("--read-none") => {
                    policy.readable.get_or_insert_with(Vec::new);
                }
                Some("--read-only") => policy.read_only.push(value(&mut it, "--read-only")?.into()),
                Some("--hide") => policy.hidden.push(value(&mut it, "--hide")?.into()),
                Some("--network") => policy.network = true,
                Some("--bwrap") => policy.bubblewrap = true,
                Some("--max-abi") => {
                    let v = value(&mut it, "--max-abi")?;
                    let n = v.to_str().and_then(|s| s.parse().ok()).ok_or_else(|| {
                        SandboxError::Usage(format!("--max-abi takes a number, not {v:?}"))
                    })?;
                    policy.max_abi = Some(n);
                }
                Some("--inner") => {
                    let v = value(&mut it, "--inner")?;
                    let fd = v
                        .to_str()
                        .and_then(|s| s.parse().ok())
                        .filter(|&fd: &i32| fd > 2)
                        .ok_or_else(|| {
                            SandboxError::Usage(format!(
                                "--inner takes the descriptor the helper was started from, not {v:?}"
                            ))
                        })?;
                    inner = Some(fd);
                }
                Some("--parent") => {
                    let v = value(&mut it, "--parent")?;
                    let pid = v.to_str().and_then(|s| s.parse().ok()).ok_or_else(|| {
                        SandboxError::Usage(format!("--parent takes a process id, not {v:?}"))
                    })?;
                    parent = Some(pid);
                }
                Some("--probe") => probe = true,
                Some("--") => {
                    command.extend(it.by_ref().cloned());
                    break;
                }
                _ => {
                    return Err(SandboxError::Usage(format!("unknown argument {arg:?}")));
                }
            }
        }
        for path in policy
            .writable
            .iter()
            .chain(policy.readable.iter().flatten())
            .chain(&policy.read_only)
            .chain(&policy.hidden)
        {
            if !path.is_absolute() {
                return Err(SandboxError::Usage(format!(
                    "{} is not an absolute path",
                    path.display()
                )));
            }
        }
        let invocation = match (probe, command.is_empty()) {
            (true, true) => Invocation::Probe,
            (false, false) => Invocation::Run(command),
            (true, false) => {
                return Err(SandboxError::Usage("--probe takes no command".into()));
            }
            (false, true) => return Err(SandboxError::Usage("no command to run".into())),
        };
        Ok(HelperCall {
            policy,
            invocation,
            inner,
            parent,
        })
    }
}

/// The start of a command line that runs a command under a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrapped {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

/// The helper: `stepperd sandbox …` with `args` after the subcommand. Restricts the process
/// and execs the command, so it returns only on failure: the exit code, after writing the
/// reason on stderr. `--probe` returns 0 when the restriction was applied. With `--bwrap`
/// it starts bubblewrap, which starts the helper again inside its namespaces, and returns
/// the command's exit code.
pub fn helper_main(args: &[OsString]) -> i32 {
    let failed = |e: SandboxError| {
        eprintln!("{HELPER_PREFIX}{e}");
        HELPER_FAILED
    };
    let call = match HelperCall::parse(args) {
        Ok(parsed) => parsed,
        Err(e) => return failed(e),
    };
    #[cfg(target_os = "linux")]
    {
        if let Some(exe) = call.inner {
            return bwrap::inner(&call.policy, &call.invocation, exe);
        }
        if call.policy.bubblewrap {
            let parent = call
                .parent
                .or_else(|| u32::try_from(nix::unistd::getppid().as_raw()).ok());
            return bwrap::outer(&call.policy, &call.invocation, parent);
        }
        let what = match linux::restrict(&call.policy, linux::Within::Host) {
            Ok(what) => what,
            Err(e) => return failed(e),
        };
        match call.invocation {
            Invocation::Probe => {
                println!("ok {what}");
                0
            }
            Invocation::Run(command) => linux::exec(&command),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = call;
        failed(SandboxError::Unavailable(
            "the sandbox helper runs on Linux only".into(),
        ))
    }
}

/// Whether commands can be sandboxed here. On Linux this runs the helper (`helper`, with
/// `max_abi` as in [`Policy`]) with `--probe`: it restricts itself as a command would be and
/// reports, so a kernel without Landlock or seccomp is found before any command runs. With
/// `bubblewrap` it tries bubblewrap first (the same helper, inside its namespaces), and
/// falls back to Landlock and seccomp alone, saying why, when bubblewrap is missing or
/// cannot make its namespaces here.
pub async fn probe(helper: &Path, max_abi: Option<u32>, bubblewrap: bool) -> Support {
    if cfg!(target_os = "linux") {
        let without = if !bubblewrap {
            "bubblewrap turned off".to_string()
        } else if !Path::new(BWRAP).exists() {
            format!("no bubblewrap at {BWRAP}")
        } else {
            match probe_helper(helper, max_abi, true).await {
                Ok(what) => {
                    // Landlock serves there only where reads are confined to readableRoots.
                    let reads = match probe_helper(helper, max_abi, false).await {
                        Ok(landlock) => format!("{landlock} where reads are confined"),
                        Err(why) => format!("reads cannot be confined: {why}"),
                    };
                    return Support::Available {
                        what: format!("{what}; {reads}"),
                        mechanism: Mechanism::Bubblewrap,
                    };
                }
                Err(why) => format!("bubblewrap unusable: {why}"),
            }
        };
        match probe_helper(helper, max_abi, false).await {
            Ok(what) => Support::Available {
                what: format!("{what} only ({without})"),
                mechanism: Mechanism::Landlock,
            },
            Err(why) => Support::Unavailable { why },
        }
    } else if cfg!(target_os = "macos") {
        let _ = (max_abi, bubblewrap);
        if Path::new(macos::SANDBOX_EXEC).exists() {
            Support::Available {
                what: "sandbox-exec".into(),
                mechanism: Mechanism::Seatbelt,
            }
        } else {
            Support::Unavailable {
                why: format!("{} is missing", macos::SANDBOX_EXEC),
            }
        }
    } else {
        let _ = (helper, max_abi, bubblewrap);
        Support::Unavailable {
            why: "stepper has no sandbox for this operating system yet".into(),
        }
    }
}

/// Run the helper once with `--probe`: what it applied, or why it could not.
async fn probe_helper(
    helper: &Path,
    max_abi: Option<u32>,
    bubblewrap: bool,
) -> Result<String, String> {
    let policy = Policy {
        max_abi,
        bubblewrap,
        ..Policy::default()
    };
    let mut args = policy.helper_args();
    // `--probe` instead of `-- command`.
    args.pop();
    args.push("--probe".into());
    let mut command = tokio::process::Command::new(helper);
    command
        .args(&args)
        // The daemon's own folder may be gone (or hidden): the probe must not depend on it.
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    // The daemon's own child (crate::lineage): a stranger beneath it would be killed.
    let run = async {
        crate::lineage::spawn(&mut command)?
            .wait_with_output()
            .await
    };
    let run = tokio::time::timeout(std::time::Duration::from_secs(10), run);
    match run.await {
        Ok(Ok(out)) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            Ok(text.trim().trim_start_matches("ok ").to_string())
        }
        Ok(Ok(out)) => {
            let err = String::from_utf8_lossy(&out.stderr);
            let why = err
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix(HELPER_PREFIX))
                .unwrap_or(err.trim());
            Err(if why.is_empty() {
                format!("the sandbox helper failed ({})", out.status)
            } else {
                why.to_string()
            })
        }
        Ok(Err(e)) => Err(format!(
            "cannot start the sandbox helper {}: {e}",
            helper.display()
        )),
        Err(_) => Err("the sandbox helper did not answer within 10 s".into()),
    }
}

/// Whether a failed command's output looks like the sandbox refused it: the kernel's words
/// for a denied file access or socket, as programs print them.
pub fn looks_refused(output: &str) -> bool {
    const SIGNS: &[&str] = &[
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
        "EACCES",
        "EPERM",
        "PermissionError",
        "AccessDeniedException",
    ];
    SIGNS.iter().any(|s| output.contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn helper_arguments_round_trip() {
        let policy = Policy {
            writable: vec!["/p".into(), "/tmp".into()],
            readable: Some(vec!["/usr".into()]),
            read_only: vec!["/p/.git/hooks".into()],
            hidden: vec!["/home/me/.ssh".into(), "/home/me/.netrc".into()],
            network: true,
            max_abi: Some(3),
            bubblewrap: true,
        };
        let mut args = policy.helper_args();
        assert_eq!(args[0], "sandbox");
        args.extend(os(&["bash", "-c", "ls --all"]));
        let (back, invocation) = Policy::from_helper_args(&args[1..]).unwrap();
        assert_eq!(back, policy);
        assert_eq!(invocation, Invocation::Run(os(&["bash", "-c", "ls --all"])));

        let none = Policy {
            readable: Some(Vec::new()),
            ..Policy::default()
        };
        let mut args = none.helper_args();
        args.push("true".into());
        assert_eq!(Policy::from_helper_args(&args[1..]).unwrap().0, none);
    }

    #[test]
    fn bad_helper_arguments_are_usage_errors() {
        for bad in [
            &["--write"][..],
            &["--write", "rel/path", "--", "true"],
            &["--bogus", "--", "true"],
            &["--max-abi", "x", "--", "true"],
            &["--"],
            &["--probe", "--", "true"],
            &["--hide", "relative", "--", "true"],
            &["--read-only", "x/y", "--", "true"],
            &["--inner", "x", "--", "true"],
            &["--inner", "1", "--", "true"],
            &["--bwrap", "--parent", "me", "--", "true"],
        ] {
            let err = Policy::from_helper_args(&os(bad)).unwrap_err();
            assert!(matches!(err, SandboxError::Usage(_)), "{bad:?}: {err}");
            assert!(err.to_string().contains("usage:"), "{err}");
        }
        assert_eq!(
            Policy::from_helper_args(&os(&["--probe"])).unwrap().1,
            Invocation::Probe
        );
        let inner = HelperCall::parse(&os(&["--inner", "5", "--", "true"])).unwrap();
        assert_eq!(inner.inner, Some(5));
        let outer = HelperCall::parse(&os(&["--bwrap", "--parent", "42", "--", "true"])).unwrap();
        assert_eq!(outer.parent, Some(42));
    }

    #[test]
    fn refusals_are_recognised() {
        assert!(looks_refused("touch: cannot touch '/x': Permission denied"));
        assert!(looks_refused(
            "curl: (7) Couldn't connect: Operation not permitted"
        ));
        assert!(!looks_refused("error[E0425]: cannot find value"));
    }
}
