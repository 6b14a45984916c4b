//! The daemon's lineage: what descends from the daemon stays beneath it, and the daemon knows
//! which of its children it started itself.
//!
//! At start the daemon becomes a child subreaper ([`become_subreaper`], Linux): a process
//! started under it whose parent dies is re-parented to the nearest subreaper above it — the
//! command's reaper ([`crate::reaper`]), else the daemon — never to init. So the ancestry of
//! a tool's process leads to the daemon for as long as it lives, which makes two answers
//! exact:
//! - [`peer`]: whether the process at the other end of a socket descends from the daemon
//!   (the daemon refuses such a client);
//! - [`reap_adopted`]: a child of the daemon that the daemon did not spawn was re-parented
//!   to it (its reaper was killed before it could clean up): it is killed with its tree,
//!   and reaped. The daemon's own children are recorded by [`spawn`] — pid and start time,
//!   under a lock the sweep takes too, so a child just spawned is never mistaken for an
//!   adopted one — and are left to their owners (tokio reaps them by pid; a `waitpid(-1)`
//!   here would steal their statuses).
//!
//! *A tool's processes are told by ancestry, made exact by subreapers* (issue 34): cgroups would be
//! exact too, but are not delegated to users on most machines (cgroup v1 hybrids, no systemd
//! delegation); a capability handed to every legitimate client would have to be kept from the
//! environment commands inherit, and a file or variable leaks. A subreaper needs no setup: a
//! process cannot leave the daemon's tree except through a service outside it (`systemd-run`, `at`,
//! a tmux server), which the gate asks about and the sandbox refuses. A refused peer is answered,
//! not dropped: a `stepper` run by the model says why, and does not take the closed connection for
//! a dead daemon.
//!
//! *The daemon's backstop kills what it did not spawn, not what left its group*: a process group is
//! the command's to change (`setpgid` into the daemon's own group would pass), a spawn record is
//! not. The record is taken under the lock the sweep holds, and checked by start time, so a new
//! child is never mistaken for an adopted one and a reused pid never passes; tokio's children are
//! only ever waited for by pid, by tokio.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Set once this process is a child subreaper: only then are its children recorded and
/// strangers among them killed (a test binary's children are none of this module's business).
static SUBREAPER: AtomicBool = AtomicBool::new(false);

/// The children this process spawned: pid → start time (`None`: it ended before it could be
/// read). Held while spawning, and while the sweep decides.
static SPAWNED: Mutex<BTreeMap<u32, Option<u64>>> = Mutex::new(BTreeMap::new());

/// Make this process a child subreaper (Linux). Call before starting any child. Elsewhere
/// there is no such thing, and this does nothing.
pub fn become_subreaper() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_child_subreaper(true).map_err(std::io::Error::from)?;
        SUBREAPER.store(true, Ordering::SeqCst);
    }
    Ok(())
}

fn spawned() -> std::sync::MutexGuard<'static, BTreeMap<u32, Option<u64>>> {
    SPAWNED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Spawn `command` as a child this process owns. Every child of the daemon goes through
/// here (or [`crate::group::spawn`], which does): one spawned otherwise is a stranger to
/// [`reap_adopted`] and is killed.
pub fn spawn(command: &mut tokio::process::Command) -> std::io::Result<tokio::process::Child> {
    if !SUBREAPER.load(Ordering::SeqCst) {
        return command.spawn();
    }
    let mut spawned = spawned();
    let child = command.spawn()?;
    if let Some(pid) = child.id() {
        spawned.insert(pid, crate::tree::stat(pid).map(|s| s.start_ticks));
    }
    Ok(child)
}

/// What a sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// Processes killed: adopted children and everything beneath them.
    pub killed: usize,
    /// Adopted children that had ended and were reaped.
    pub reaped: usize,
}

/// Kill every child this process did not spawn (with its tree) and reap those that ended.
/// Cheap when there is nothing to do (the children lists of this process's threads). Reads
/// `/proc`: call it off the async runtime's threads.
pub fn reap_adopted() -> Swept {
    if !SUBREAPER.load(Ordering::SeqCst) {
        return Swept::default();
    }
    let mut spawned = spawned();
    let children = crate::tree::children(std::process::id());
    // A recorded child that is no longer a child was reaped by its owner.
    spawned.retain(|pid, _| children.contains(pid));
    let mut strangers = Vec::new();
    for pid in children {
        let Some(stat) = crate::tree::stat(pid) else {
            continue;
        };
        let ours = match spawned.get(&pid) {
            Some(Some(started)) => *started == stat.start_ticks,
            // It ended as it was spawned, and its pid may not have been reused since.
            Some(None) => true,
            None => false,
        };
        if !ours {
            strangers.push((pid, stat.zombie));
        }
    }
    drop(spawned);
    let mut swept = Swept::default();
    #[cfg(unix)]
    {
        let living: Vec<u32> = strangers
            .iter()
            .filter(|(_, zombie)| !zombie)
            .map(|(pid, _)| *pid)
            .collect();
        if !living.is_empty() {
            swept.killed = crate::tree::kill_trees(&living);
        }
    }
    for (pid, _) in strangers {
        if reap(pid) {
            swept.reaped += 1;
        }
    }
    swept
}

/// Reap `pid` if it has ended (never blocks).
fn reap(pid: u32) -> bool {
    #[cfg(unix)]
    {
        use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
        let Ok(raw) = i32::try_from(pid) else {
            return false;
        };
        !matches!(
            waitpid(nix::unistd::Pid::from_raw(raw), Some(WaitPidFlag::WNOHANG)),
            Ok(WaitStatus::StillAlive) | Err(_)
        )
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

/// At the daemon's stop, after its parts have stopped theirs: kill everything still beneath
/// it, spawned or adopted, until nothing is left or `within` has passed. Returns how many
/// processes were killed.
pub fn kill_all(within: Duration) -> usize {
    if !SUBREAPER.load(Ordering::SeqCst) {
        return 0;
    }
    let deadline = Instant::now() + within;
    let mut killed = 0;
    loop {
        let swept = reap_adopted();
        killed += swept.killed;
        let children = crate::tree::children(std::process::id());
        let living: Vec<u32> = children
            .into_iter()
            .filter(|&pid| crate::tree::stat(pid).is_some_and(|s| !s.zombie))
            .collect();
        if living.is_empty() || Instant::now() >= deadline {
            return killed;
        }
        #[cfg(unix)]
        {
            killed += crate::tree::kill_trees(&living);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Where the process at the other end of a socket stands to this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peer {
    /// Not beneath this process.
    Outside,
    /// Beneath this process: the peer, then each ancestor up to (not including) this one.
    Descendant(Vec<u32>),
    /// It could not be told: the reason. Refuse it.
    Unknown(String),
    /// This platform offers no way to tell (no subreaper): the peer is taken as it is.
    Unchecked,
}

/// The longest ancestry walked; a deeper chain is doubt.
#[cfg(target_os = "linux")]
const DEEPEST: usize = 4096;

/// Whether the peer `pid` (its credentials at connect) descends from this process. `pidfd`
/// (Linux 6.5+'s `SO_PEERPIDFD`) pins the process that connected: if it has exited by the
/// time the walk is done, its pid may name another process now, and the answer is doubt.
/// Without it, the pid is trusted not to have been reused between the connect and the walk.
#[cfg(target_os = "linux")]
pub fn peer(pid: Option<u32>, pidfd: Option<std::os::fd::BorrowedFd<'_>>) -> Peer {
    let me = std::process::id();
    let pid = match pid {
        None => return Peer::Unknown("the peer's process is unknown".into()),
        // What SO_PEERCRED says of a process in a pid namespace this one cannot see.
        Some(0) => return Peer::Unknown("the peer's process is not visible from here".into()),
        Some(pid) => pid,
    };
    let Some(mut stat) = crate::tree::stat(pid) else {
        return Peer::Unknown(format!("the peer (pid {pid}) is gone"));
    };
    let mut chain = Vec::new();
    let mut current = pid;
    let verdict = loop {
        if current == me {
            break Peer::Descendant(chain);
        }
        if chain.len() >= DEEPEST {
            break Peer::Unknown(format!("the peer's ancestry is deeper than {DEEPEST}"));
        }
        chain.push(current);
        if stat.ppid == 0 {
            break Peer::Outside;
        }
        let Some(parent) = crate::tree::stat(stat.ppid) else {
            break Peer::Unknown(format!(
                "pid {}, an ancestor of the peer, is gone",
                stat.ppid
            ));
        };
        // A parent starts before its children (a subreaper before its adoptees): one that
        // started later holds a pid the real parent left.
        if parent.start_ticks > stat.start_ticks {
            break Peer::Unknown("the peer's ancestry changed while it was read".into());
        }
        current = stat.ppid;
        stat = parent;
    };
    if let Some(fd) = pidfd
        && exited(fd)
    {
        return Peer::Unknown(format!("the peer (pid {pid}) exited before it was checked"));
    }
    verdict
}

/// Elsewhere there is no subreaper, so no ancestry is exact: nothing is checked.
#[cfg(not(target_os = "linux"))]
pub fn peer(_pid: Option<u32>) -> Peer {
    Peer::Unchecked
}

/// Whether the process a pidfd names has exited (its pidfd reads as ready).
#[cfg(target_os = "linux")]
fn exited(pidfd: std::os::fd::BorrowedFd<'_>) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut fds = [PollFd::new(pidfd, PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(0) => false,
        // Ready, or poll failed: doubt.
        _ => true,
    }
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;

    #[test]
    fn a_child_descends_and_this_process_does_not() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert_eq!(peer(Some(pid), None), Peer::Descendant(vec![pid]));
        // Our own parent is outside us.
        let parent = u32::try_from(nix::unistd::getppid().as_raw()).unwrap();
        assert_eq!(peer(Some(parent), None), Peer::Outside);
        assert!(matches!(peer(None, None), Peer::Unknown(_)));
        assert!(matches!(peer(Some(0), None), Peer::Unknown(_)));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(matches!(peer(Some(pid), None), Peer::Unknown(_)));
    }
}
