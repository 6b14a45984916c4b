//! The process tree as Linux's `/proc` shows it: a process's parent, group, session and start
//! time, its children, and killing whole subtrees. Shared by the child registry, the reaper
//! helper and the daemon's lineage; elsewhere (no `/proc`) every answer is "unknown".

/// What `/proc/<pid>/stat` says of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub ppid: u32,
    pub pgrp: u32,
    /// Clock ticks since boot when it started: with the pid, it names one process.
    pub start_ticks: u64,
    pub zombie: bool,
}

/// The stat of `pid`, or `None` when it is gone (or unreadable).
#[cfg(target_os = "linux")]
pub(crate) fn stat(pid: u32) -> Option<Stat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold anything: fields start after the last
    // ')'. Field 3 (state) is fields[0], 4 (ppid) fields[1], 5 (pgrp) fields[2], 22
    // (starttime) fields[19].
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        zombie: *fields.first()? == "Z",
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn stat(_pid: u32) -> Option<Stat> {
    None
}

/// The children of `pid`, zombies included: from the kernel's per-thread lists
/// (`/proc/<pid>/task/*/children`), or a scan of every process's parent where the kernel
/// keeps no such list.
#[cfg(target_os = "linux")]
pub(crate) fn children(pid: u32) -> Vec<u32> {
    match listed_children(pid) {
        Some(found) => found,
        None => scanned_children(pid),
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn children(_pid: u32) -> Vec<u32> {
    Vec::new()
}

/// `None` when the kernel has no `children` files (built without `CONFIG_PROC_CHILDREN`),
/// or `pid` is gone.
#[cfg(target_os = "linux")]
fn listed_children(pid: u32) -> Option<Vec<u32>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut found = Vec::new();
    let mut any = false;
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        any = true;
        found.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    any.then_some(found)
}

#[cfg(target_os = "linux")]
fn scanned_children(pid: u32) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|&p| stat(p).is_some_and(|s| s.ppid == pid))
        .collect()
}

/// At most this many processes are signalled in one pass (a fork bomb is stopped in
/// rounds, not listed whole).
#[cfg(unix)]
const MOST_PER_PASS: usize = 65_536;

/// Kill every process of the trees under `roots`, the roots included: each is stopped
/// (`SIGSTOP`) before its children are listed, so none can fork meanwhile, then all are
/// killed. Returns how many were killed (a process this one may not signal is not). What
/// one of them forked before it stopped is found on the next pass: call again until nothing
/// is left.
#[cfg(unix)]
pub(crate) fn kill_trees(roots: &[u32]) -> usize {
    use nix::sys::signal::Signal;
    let mut seen = std::collections::BTreeSet::new();
    let mut stopped = Vec::new();
    let mut todo: Vec<u32> = roots.to_vec();
    while let Some(pid) = todo.pop() {
        if stopped.len() >= MOST_PER_PASS || !seen.insert(pid) || !signal(pid, Signal::SIGSTOP) {
            continue;
        }
        stopped.push(pid);
        todo.extend(children(pid));
    }
    stopped
        .into_iter()
        .filter(|&pid| signal(pid, Signal::SIGKILL))
        .count()
}

/// Send `signal` to `pid`; never to pid 0 or 1 or to this process. False when it failed
/// (gone, or not ours to signal).
#[cfg(unix)]
pub(crate) fn signal(pid: u32, signal: nix::sys::signal::Signal) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if raw <= 1 || pid == std::process::id() {
        return false;
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), signal).is_ok()
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_seen_with_its_parent_and_killed() {
        let me = std::process::id();
        let s = stat(me).unwrap();
        assert_eq!(
            s.ppid,
            u32::try_from(nix::unistd::getppid().as_raw()).unwrap()
        );
        assert!(s.start_ticks > 0 && !s.zombie);
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert_eq!(stat(pid).unwrap().ppid, me);
        assert!(children(me).contains(&pid));
        assert!(scanned_children(me).contains(&pid));
        assert_eq!(kill_trees(&[pid]), 1);
        child.wait().unwrap();
    }

    #[test]
    fn kill_trees_takes_every_generation() {
        let marker = format!("{}.5151", std::process::id());
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                &format!("sh -c 'sleep 60{marker} & sleep 60{marker}' & sleep 60{marker}; wait"),
            ])
            .spawn()
            .unwrap();
        // The three sleeps (the shells' command lines hold the marker too).
        let sleeps = || {
            crate::testing::processes_with(&marker)
                .into_iter()
                .filter(|p| {
                    std::fs::read_to_string(format!("/proc/{p}/comm"))
                        .is_ok_and(|c| c.trim() == "sleep")
                })
                .count()
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while sleeps() < 3 {
            assert!(std::time::Instant::now() < deadline, "did not start");
            std::thread::yield_now();
        }
        assert!(
            kill_trees(&[child.id()]) >= 4,
            "the shell and its three sleeps"
        );
        child.wait().unwrap();
        while !crate::testing::processes_with(&marker).is_empty() {
            assert!(std::time::Instant::now() < deadline, "a process survived");
            std::thread::yield_now();
        }
    }
}
