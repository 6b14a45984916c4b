//! Linux: the helper restricts itself — Landlock for the file system, seccomp for sockets —
//! and then execs the command, which inherits both and can never lift them. This is the
//! sandbox where bubblewrap is unusable; with bubblewrap (`bwrap.rs`), bubblewrap applies the
//! seccomp filter, and the helper restricts itself inside its namespaces only to confine
//! reads to `readableRoots`.
//!
//! Landlock: reading and executing everywhere (or only beneath `readable`) but in hidden
//! paths, changing only beneath `writable`; on ABI 6 and later signals and abstract Unix
//! sockets stay inside the sandbox, and from the start Landlock keeps a sandboxed process
//! from ptracing one outside (so from `/proc/PID/environ`, `mem` and `fd/` of the daemon),
//! and from mounting anything (so a namespace's mounts cannot be undone from inside).
//! seccomp: `socket()` is refused for every family (Internet families allowed only with
//! `network`; Unix-domain sockets always refused, since they reach the daemon and others
//! outside the sandbox; `socketpair` stays, it reaches nothing), io_uring is refused (its
//! operations would pass around the socket filter), and so are `TIOCSTI`/`TIOCLINUX`
//! (typing into a terminal outside) and every call that mounts (as Landlock refuses them,
//! for bubblewrap's namespaces, which go without Landlock).
//!
//! *Unix-domain sockets are refused in the sandbox, network or not*: Landlock (ABI 7 here) does not
//! govern `connect` on a socket file, and this daemon's socket is a way out of any sandbox (a
//! session in `auto` with none); so is docker's. `socketpair` stays. ABI 9's `ResolveUnix` is taken
//! when the kernel has it, but the seccomp rule stays for older ones.

use std::collections::HashSet;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

use super::{HELPER_PREFIX, Policy, SandboxError};

/// Where the helper restricts itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Within {
    /// Inside bubblewrap's namespaces: `/dev` and `/proc` are the command's own, and the
    /// hidden and read-only paths are already mounted so.
    Namespace,
    /// In the daemon's own view of the system (Landlock alone).
    Host,
}

impl Within {
    /// Devices every command may write: the sink and source files, and where private, its
    /// own pseudo-terminals, controlling terminal and POSIX shared memory.
    fn devices(self) -> &'static [&'static str] {
        match self {
            Within::Namespace => &[
                "/dev/null",
                "/dev/zero",
                "/dev/full",
                "/dev/tty",
                "/dev/ptmx",
                "/dev/pts",
                "/dev/shm",
            ],
            // New pseudo-terminals can still be made (`/dev/ptmx`), but not reopened by path.
            Within::Host => &["/dev/null", "/dev/zero", "/dev/full", "/dev/ptmx"],
        }
    }

    /// What is hidden beside the policy's own: on the host, what other programs share —
    /// POSIX shared memory, the other terminals and the daemon's controlling terminal (a
    /// namespace has its own of each).
    fn hidden(self) -> &'static [&'static str] {
        match self {
            Within::Namespace => &[],
            Within::Host => &["/dev/shm", "/dev/pts", "/dev/tty"],
        }
    }
}

/// Apply `policy` to this process (it must be single-threaded: both restrictions hold for
/// the calling thread and what it execs). Returns what was applied, for the probe.
pub(super) fn restrict(policy: &Policy, within: Within) -> Result<String, SandboxError> {
    let abi = landlock(policy, within)?;
    seccomp(policy)?;
    Ok(format!("landlock-abi={} seccomp", abi as i32))
}

fn landlock(policy: &Policy, within: Within) -> Result<ABI, SandboxError> {
    let wanted = match policy.max_abi {
        Some(0) => {
            return Err(SandboxError::Unavailable(
                "the kernel offers no Landlock (limited to ABI 0 by --max-abi)".into(),
            ));
        }
        Some(n) => ABI::from(i32::try_from(n).unwrap_or(i32::MAX)),
        None => ABI::V10,
    };
    let restrict_err = |e: landlock::RulesetError| SandboxError::Restrict(e.to_string());
    // Best effort above ABI 1: a right the kernel does not know cannot be granted either.
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(wanted))
        .map_err(restrict_err)?;
    if !Scope::from_all(wanted).is_empty() {
        ruleset = ruleset
            .scope(Scope::from_all(wanted))
            .map_err(restrict_err)?;
    }
    let mut created = ruleset.create().map_err(restrict_err)?;
    let writable: Vec<PathBuf> = policy
        .writable
        .iter()
        .cloned()
        .chain(within.devices().iter().map(PathBuf::from))
        .collect();
    let hidden: Vec<PathBuf> = policy
        .hidden
        .iter()
        .cloned()
        .chain(within.hidden().iter().map(PathBuf::from))
        .collect();
    let everywhere = [PathBuf::from("/")];
    let readable = policy.readable.as_deref().unwrap_or(&everywhere);
    let mut rules: Vec<(PathBuf, bool, BitFlags<AccessFs>)> = Vec::new();
    for (path, reach) in reads(readable, &writable, &hidden) {
        let access = match reach {
            Reach::Whole => AccessFs::from_read(wanted),
            Reach::Listing => AccessFs::ReadDir.into(),
        };
        rules.push((path.path, path.dir, access));
    }
    // Writing grants no reading: a hidden path inside a writable root stays unreadable.
    for path in &writable {
        if let Ok(meta) = std::fs::metadata(path) {
            rules.push((path.clone(), meta.is_dir(), AccessFs::from_write(wanted)));
        }
    }
    for (path, dir, access) in rules {
        let fd = match PathFd::new(&path) {
            Ok(fd) => fd,
            // Gone since it was listed: there is nothing to grant.
            Err(_) if !path.exists() => continue,
            Err(e) => {
                return Err(SandboxError::Restrict(format!("{}: {e}", path.display())));
            }
        };
        // A file takes only the rights that apply to files.
        let access = if dir {
            access
        } else {
            access & AccessFs::from_file(wanted)
        };
        if access.is_empty() {
            continue;
        }
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(restrict_err)?;
    }
    let status = created.restrict_self().map_err(restrict_err)?;
    let kernel = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi,
        LandlockStatus::NotEnabled => {
            return Err(SandboxError::Unavailable(
                "Landlock is built into this kernel but not enabled (add landlock to the lsm= boot parameter)".into(),
            ));
        }
        LandlockStatus::NotImplemented => {
            return Err(SandboxError::Unavailable(
                "this kernel has no Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)"
                    .into(),
            ));
        }
    };
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(SandboxError::Unavailable(
            "the kernel did not enforce the Landlock rules".into(),
        ));
    }
    Ok(if (kernel as i32) < (wanted as i32) {
        kernel
    } else {
        wanted
    })
}

/// How much of a path a read rule grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Everything beneath it.
    Whole,
    /// Only listing folders beneath it: it holds a hidden path.
    Listing,
}

/// A path as found on disk: resolved, and whether it is a folder.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Found {
    path: PathBuf,
    dir: bool,
}

/// The read rules for `readable` and `writable` roots when `hidden` must stay unreadable.
/// Landlock only grants, beneath a path, so a root that holds a hidden path is taken apart:
/// it gets the listing of its folders, and each of its entries a rule of its own (taken
/// apart again if it holds a hidden path too), except the hidden ones. Links among the
/// entries get no rule: reading through one is granted where its target is. A writable
/// root is readable even inside a hidden path (it was asked for by name).
fn reads(readable: &[PathBuf], writable: &[PathBuf], hidden: &[PathBuf]) -> Vec<(Found, Reach)> {
    let hidden: Vec<PathBuf> = hidden
        .iter()
        .filter_map(|h| std::fs::canonicalize(h).ok())
        .collect();
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    // What is readable whole so far, so that a root inside it adds nothing.
    let mut whole: HashSet<PathBuf> = HashSet::new();
    let roots = readable
        .iter()
        .map(|r| (r, false))
        .chain(writable.iter().map(|w| (w, true)));
    for (root, asked) in roots {
        let Ok(path) = std::fs::canonicalize(root) else {
            // A root that does not exist grants nothing.
            continue;
        };
        let inside_hidden = hidden
            .iter()
            .any(|h| path.starts_with(h) && (!asked || *h == path));
        // Already readable as part of a root granted whole.
        let covered = path.ancestors().any(|a| whole.contains(a));
        if inside_hidden || covered {
            continue;
        }
        let dir = path.is_dir();
        let from = out.len();
        take_apart(Found { path, dir }, &hidden, &mut seen, &mut out, 0);
        whole.extend(
            out[from..]
                .iter()
                .filter(|(_, reach)| *reach == Reach::Whole)
                .map(|(f, _)| f.path.clone()),
        );
    }
    out
}

fn take_apart(
    found: Found,
    hidden: &[PathBuf],
    seen: &mut HashSet<PathBuf>,
    out: &mut Vec<(Found, Reach)>,
    depth: usize,
) {
    if hidden.contains(&found.path) || !seen.insert(found.path.clone()) {
        return;
    }
    if !found.dir || !hidden.iter().any(|h| h.starts_with(&found.path)) {
        out.push((found, Reach::Whole));
        return;
    }
    let entries = std::fs::read_dir(&found.path);
    out.push((found, Reach::Listing));
    // Hidden paths are a few levels deep; a deeper walk is a loop of mounts.
    let Ok(entries) = entries else { return };
    if depth > 32 {
        return;
    }
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            continue;
        }
        let found = Found {
            path: entry.path(),
            dir: kind.is_dir(),
        };
        take_apart(found, hidden, seen, out, depth + 1);
    }
}

fn seccomp(policy: &Policy) -> Result<(), SandboxError> {
    let program = seccomp_program(policy)?;
    seccompiler::apply_filter(&program).map_err(seccomp_err)
}

/// The seccomp filter for `policy`, compiled for this architecture (bubblewrap applies it
/// itself: see `bwrap.rs`).
pub(super) fn seccomp_program(policy: &Policy) -> Result<BpfProgram, SandboxError> {
    let cond = |arg: u8, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)
            .and_then(|c| SeccompRule::new(vec![c]))
            .map_err(seccomp_err)
    };
    // Each listed call with no rule is refused outright; with rules, when one matches.
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> = Default::default();
    let socket = if policy.network {
        vec![cond(0, libc::AF_UNIX as u64)?]
    } else {
        Vec::new()
    };
    // The request's type is the C library's (an unsigned long on glibc, an int on musl).
    #[allow(clippy::unnecessary_cast)]
    let ioctl = vec![
        cond(1, libc::TIOCSTI as u64)?,
        cond(1, libc::TIOCLINUX as u64)?,
    ];
    let mut refuse = |nr: i64, chain: Vec<SeccompRule>| {
        rules.insert(nr, chain.clone());
        // x86_64's x32 calls carry the same numbers with bit 30 set, under the same arch.
        #[cfg(target_arch = "x86_64")]
        rules.insert(nr | 0x4000_0000, chain);
    };
    refuse(libc::SYS_socket, socket);
    refuse(libc::SYS_io_uring_setup, Vec::new());
    refuse(libc::SYS_io_uring_enter, Vec::new());
    refuse(libc::SYS_io_uring_register, Vec::new());
    refuse(libc::SYS_ioctl, ioctl.clone());
    // No mounts, as Landlock refuses them: a sandbox in namespaces keeps the mounts it was
    // given (a user namespace of the command's own could otherwise mount over them).
    for nr in [
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
    ] {
        refuse(nr, Vec::new());
    }
    // x32's ioctl is a call of its own.
    #[cfg(target_arch = "x86_64")]
    rules.insert(514 | 0x4000_0000, ioctl);
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| {
            SandboxError::Unavailable(format!("no seccomp filter for this architecture: {e}"))
        })?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(seccomp_err)?;
    filter
        .try_into()
        .map_err(seccomp_err::<seccompiler::BackendError>)
}

fn seccomp_err<E: std::fmt::Display>(e: E) -> SandboxError {
    SandboxError::Restrict(format!("seccomp: {e}"))
}

/// Replace this process with `command`; returns only if that failed, with the exit code a
/// shell would give (127: not found, 126: not runnable).
pub(super) fn exec(command: &[OsString]) -> i32 {
    let Some((program, args)) = command.split_first() else {
        eprintln!("{HELPER_PREFIX}no command to run");
        return super::HELPER_FAILED;
    };
    let e = std::process::Command::new(program).args(args).exec();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(rules: &[(Found, Reach)], base: &std::path::Path) -> Vec<(String, Reach)> {
        let mut out: Vec<(String, Reach)> = rules
            .iter()
            .map(|(f, reach)| {
                let rel = f.path.strip_prefix(base).unwrap_or(&f.path);
                (rel.display().to_string(), *reach)
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    #[test]
    fn a_root_holding_a_hidden_path_is_granted_around_it() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        for d in [
            "home/.ssh",
            "home/.config/gcloud",
            "home/.config/git",
            "home/src",
            "usr",
        ] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        std::fs::write(base.join("home/.ssh/id_ed25519"), "key").unwrap();
        std::fs::write(base.join("home/.netrc"), "machine").unwrap();
        std::fs::write(base.join("home/.bashrc"), "").unwrap();
        std::os::unix::fs::symlink(base.join("home/.ssh"), base.join("home/keys")).unwrap();
        let hidden = [
            base.join("home/.ssh"),
            base.join("home/.config/gcloud"),
            base.join("home/.netrc"),
            base.join("home/.nothing-here"),
            // Through a link, the link's target is what is hidden.
            base.join("home/keys/id_ed25519"),
        ];
        let rules = reads(std::slice::from_ref(&base), &[], &hidden);
        assert_eq!(
            granted(&rules, &base),
            vec![
                ("".to_string(), Reach::Listing),
                ("home".to_string(), Reach::Listing),
                ("home/.bashrc".to_string(), Reach::Whole),
                ("home/.config".to_string(), Reach::Listing),
                ("home/.config/git".to_string(), Reach::Whole),
                ("home/src".to_string(), Reach::Whole),
                ("usr".to_string(), Reach::Whole),
            ],
            "no rule for what is hidden, nor for the link to it"
        );
    }

    #[test]
    fn writable_roots_are_readable_but_for_what_is_hidden_in_them() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        for d in ["data/project/src", "home/.ssh", "home/p"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        let readable = [base.join("home")];
        // A project inside a hidden folder was asked for by name; a hidden folder inside a
        // writable root stays hidden; a writable root that is itself hidden stays hidden.
        let writable = [
            base.join("data/project"),
            base.join("home"),
            base.join("home/.ssh"),
        ];
        let hidden = [base.join("data"), base.join("home/.ssh")];
        let rules = reads(&readable, &writable, &hidden);
        assert_eq!(
            granted(&rules, &base),
            vec![
                ("data/project".to_string(), Reach::Whole),
                ("home".to_string(), Reach::Listing),
                ("home/p".to_string(), Reach::Whole),
            ]
        );
        // Nothing hidden: one rule per root, none for a root inside another.
        let rules = reads(&readable, &[base.join("home/p"), base.join("data")], &[]);
        assert_eq!(
            granted(&rules, &base),
            vec![
                ("data".to_string(), Reach::Whole),
                ("home".to_string(), Reach::Whole),
            ]
        );
    }
}
