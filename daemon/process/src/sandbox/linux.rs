//! Linux: the helper restricts itself — Landlock for the file system, seccomp for sockets —
//! and then execs the command, which inherits both and can never lift them.
//!
//! Landlock: reading and executing everywhere (or only beneath `readable`), changing only
//! beneath `writable`; on ABI 6 and later signals and abstract Unix sockets stay inside the
//! sandbox, and from the start Landlock keeps a sandboxed process from ptracing one outside.
//! seccomp: `socket()` is refused for every family (Internet families allowed only with
//! `network`; Unix-domain sockets always refused, since they reach the daemon and others
//! outside the sandbox; `socketpair` stays, it reaches nothing), io_uring is refused (its
//! operations would pass around the socket filter), and so are `TIOCSTI`/`TIOCLINUX`
//! (typing into a terminal outside).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

use super::{HELPER_PREFIX, Policy, SandboxError};

/// Apply `policy` to this process (it must be single-threaded: both restrictions hold for
/// the calling thread and what it execs). Returns what was applied, for the probe.
pub(super) fn restrict(policy: &Policy) -> Result<String, SandboxError> {
    let abi = landlock(policy)?;
    seccomp(policy)?;
    Ok(format!("landlock-abi={} seccomp", abi as i32))
}

fn landlock(policy: &Policy) -> Result<ABI, SandboxError> {
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
    let read = AccessFs::from_read(wanted);
    let all = AccessFs::from_all(wanted);
    let root = [std::path::PathBuf::from("/")];
    let readable: &[std::path::PathBuf] = policy.readable.as_deref().unwrap_or(&root);
    for (paths, access) in [(readable, read), (&policy.writable[..], all)] {
        for path in paths {
            let fd = match PathFd::new(path) {
                Ok(fd) => fd,
                // A folder that does not exist cannot be written into either.
                Err(_) if !path.exists() => continue,
                Err(e) => {
                    return Err(SandboxError::Restrict(format!("{}: {e}", path.display())));
                }
            };
            // A file takes only the rights that apply to files.
            let access = if path.is_dir() {
                access
            } else {
                access & AccessFs::from_file(wanted)
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(restrict_err)?;
        }
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

fn seccomp(policy: &Policy) -> Result<(), SandboxError> {
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
    let program: BpfProgram = filter
        .try_into()
        .map_err(seccomp_err::<seccompiler::BackendError>)?;
    seccompiler::apply_filter(&program).map_err(seccomp_err)
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
