//! The child registry: every process group the daemon starts is written down (leader pid and
//! the leader's start time) until it is reaped, in files that outlive a daemon killed with
//! SIGKILL. The next daemon reads them at start and kills what is left — and only that:
//! the start time tells a surviving child from an unrelated process that got its pid since.
//!
//! One file per group under the registry folder, named by the leader's pid. Small files and
//! no fsync: a crash of the daemon keeps them (the kernel has them), and a crash of the
//! machine takes the children with it anyway.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where this daemon records its children; set once at start.
static REGISTRY: OnceLock<PathBuf> = OnceLock::new();

/// Record every group spawned from now on under `dir` (created if missing). Call once, after
/// [`reap_orphans`] has dealt with what a previous daemon left there.
pub fn install(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    // A second call (tests running daemons in one process) keeps the first folder.
    let _ = REGISTRY.set(dir.to_path_buf());
    Ok(())
}

/// Note a group just spawned. Failing to record is logged by the caller's absence of an
/// entry only: the child still runs and is still killed with its `GroupChild`.
pub(crate) fn record(pid: u32) {
    let Some(dir) = REGISTRY.get() else { return };
    let Some(started) = start_time(pid) else {
        return;
    };
    let _ = std::fs::write(dir.join(pid.to_string()), format!("{started}\n"));
}

/// The group of `pid` is gone: forget it.
pub(crate) fn forget(pid: u32) {
    if let Some(dir) = REGISTRY.get() {
        let _ = std::fs::remove_file(dir.join(pid.to_string()));
    }
}

/// A group found in the registry at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    pub pid: u32,
    /// True when something of the group still ran and was killed; false when the entry was
    /// stale (the group had ended, or its pid now belongs to another process).
    pub killed: bool,
}

/// Kill every group a previous daemon recorded in `dir` and did not reap, then clear the
/// entries. A pid whose process started at another time than recorded is someone else's now
/// and is left alone.
pub fn reap_orphans(dir: &Path) -> Vec<Orphan> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let pid = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok());
        let recorded = std::fs::read_to_string(&path).ok();
        if let (Some(pid), Some(recorded)) = (pid, recorded) {
            let killed = kill_if_ours(pid, recorded.trim());
            found.push(Orphan { pid, killed });
        }
        let _ = std::fs::remove_file(&path);
    }
    found.sort_by_key(|o| o.pid);
    found
}

#[cfg(unix)]
fn kill_if_ours(pgid: u32, recorded: &str) -> bool {
    use nix::sys::signal::{Signal, killpg};
    let leader_is_ours = match start_time(pgid) {
        Some(now) => now == recorded,
        // The leader is gone; members of its group may not be. A pid is not handed out
        // while a group of that id exists, so members are ours — if they started after it.
        None => group_members_since(pgid, recorded),
    };
    if !leader_is_ours {
        return false;
    }
    let Ok(raw) = i32::try_from(pgid) else {
        return false;
    };
    killpg(nix::unistd::Pid::from_raw(raw), Signal::SIGKILL).is_ok()
}

#[cfg(not(unix))]
fn kill_if_ours(_pgid: u32, _recorded: &str) -> bool {
    // Windows: a Job Object set to kill on close takes the tree with the daemon.
    false
}

/// When a process started, as an opaque token that differs between two processes that held
/// the same pid: clock ticks since boot on Linux, the start date elsewhere.
pub fn start_time(pid: u32) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        proc_stat(pid).map(|s| s.start_ticks.to_string())
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        let out = std::process::Command::new("ps")
            .args(["-o", "lstart=", "-p", &pid.to_string()])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !text.is_empty()).then_some(text)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        None
    }
}

#[cfg(target_os = "linux")]
struct ProcStat {
    pgrp: u32,
    start_ticks: u64,
    zombie: bool,
}

#[cfg(target_os = "linux")]
fn proc_stat(pid: u32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Field 3 (state) is fields[0]; field 5 (pgrp) fields[2]; field 22 (starttime) fields[19].
    Some(ProcStat {
        zombie: *fields.first()? == "Z",
        pgrp: fields.get(2)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

#[cfg(target_os = "linux")]
fn group_members_since(pgid: u32, recorded: &str) -> bool {
    let Ok(since) = recorded.parse::<u64>() else {
        return false;
    };
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter_map(proc_stat)
        .any(|s| s.pgrp == pgid && !s.zombie && s.start_ticks >= since)
}

#[cfg(all(unix, not(target_os = "linux")))]
fn group_members_since(_pgid: u32, _recorded: &str) -> bool {
    // Without /proc the members' start times are not at hand; leave them rather than risk
    // killing a group that is not ours.
    false
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;

    fn spawn_sleeper(marker: &str) -> std::process::Child {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("sh")
            .args(["-c", &format!("sleep 60{marker} & sleep 60{marker}; wait")])
            .process_group(0)
            .spawn()
            .unwrap()
    }

    fn alive(pid: u32) -> bool {
        proc_stat(pid).is_some_and(|s| !s.zombie)
    }

    #[test]
    fn an_orphaned_group_is_killed_and_its_entry_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = spawn_sleeper(&format!("{}.7001", std::process::id()));
        let pid = child.id();
        let started = start_time(pid).unwrap();
        std::fs::write(dir.path().join(pid.to_string()), format!("{started}\n")).unwrap();

        let found = reap_orphans(dir.path());
        assert_eq!(found, [Orphan { pid, killed: true }]);
        child.wait().unwrap();
        assert!(!alive(pid));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_reused_pid_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = spawn_sleeper(&format!("{}.7002", std::process::id()));
        let pid = child.id();
        // The entry says the group's leader started at another time: this is not it.
        std::fs::write(dir.path().join(pid.to_string()), "1\n").unwrap();

        let found = reap_orphans(dir.path());
        assert_eq!(found, [Orphan { pid, killed: false }]);
        assert!(alive(pid), "a process that is not ours was killed");
        let group = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap());
        nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL).unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn garbage_entries_are_cleared_without_harm() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("not-a-pid"), "x").unwrap();
        std::fs::write(dir.path().join("999999999"), "12\n").unwrap();
        let found = reap_orphans(dir.path());
        assert_eq!(
            found,
            [Orphan {
                pid: 999_999_999,
                killed: false
            }]
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
