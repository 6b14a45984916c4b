//! The child registry: every process group the daemon starts is written down (leader pid,
//! the leader's start time, the machine's boot, and a token every process of the group
//! inherits in `STEPPER_GROUP`) until it is reaped, in files that outlive a daemon killed
//! with SIGKILL. The next daemon reads them at start and kills what is left — and only that:
//! a living leader must have the recorded start time in the same boot, and when the leader
//! is gone only the processes carrying the group's token are killed, one by one.
//!
//! One file per group under the registry folder, named by the leader's pid. Small files and
//! no fsync: a crash of the daemon keeps them (the kernel has them), and a crash of the
//! machine takes the children with it anyway.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where this daemon records its children; set once at start.
static REGISTRY: OnceLock<PathBuf> = OnceLock::new();

/// The variable every process of a recorded group inherits, holding the group's token.
pub const GROUP_VAR: &str = "STEPPER_GROUP";

/// Record every group spawned from now on under `dir` (created if missing). Call once, after
/// [`reap_orphans`] has dealt with what a previous daemon left there.
pub fn install(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    // A second call (tests running daemons in one process) keeps the first folder.
    let _ = REGISTRY.set(dir.to_path_buf());
    Ok(())
}

/// A token for a group about to be spawned: unique to this daemon and this spawn.
pub(crate) fn new_token() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{nanos}-{n}", std::process::id())
}

/// Note a group just spawned, whose processes carry `token`. Without an entry (no registry
/// installed, the start time unreadable) the child still runs and is still killed with its
/// `GroupChild`; only a daemon crash would leave it behind.
pub(crate) fn record(pid: u32, token: &str) {
    let Some(dir) = REGISTRY.get() else { return };
    let Some(started) = start_time(pid) else {
        return;
    };
    let entry = Entry {
        started,
        boot: boot_id().unwrap_or_default(),
        token: token.to_string(),
    };
    let _ = std::fs::write(dir.join(pid.to_string()), entry.to_text());
}

/// The group of `pid` is gone: forget it.
pub(crate) fn forget(pid: u32) {
    if let Some(dir) = REGISTRY.get() {
        let _ = std::fs::remove_file(dir.join(pid.to_string()));
    }
}

/// Kill every live process that carries `token`, wherever it is now: a process that left
/// its group (`setsid cmd &`) is out of reach of the group's signal but still holds the
/// token it inherited. Returns how many still live after a short wait for them to die (a
/// process in uninterruptible sleep takes its time).
pub(crate) fn kill_carriers(token: &str) -> usize {
    let found = carrying(None, token);
    if found.is_empty() {
        return 0;
    }
    #[cfg(unix)]
    for pid in &found {
        if let Ok(pid) = i32::try_from(*pid) {
            use nix::sys::signal::{Signal, kill};
            let _ = kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(200);
    loop {
        let left = carrying(None, token).len();
        if left == 0 || std::time::Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Deal with the recorded groups whose leader has ended: kill what still carries their
/// token, and forget those of which nothing is left. A group whose leader runs is left to
/// its owner. Returns how many processes were killed. Reads `/proc`: call it off the async
/// runtime's threads (at a turn's end, say).
pub fn sweep() -> usize {
    let Some(dir) = REGISTRY.get() else { return 0 };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut killed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Some(recorded) = std::fs::read_to_string(&path)
            .ok()
            .as_deref()
            .and_then(Entry::parse)
        else {
            continue;
        };
        if start_time(pid).is_some_and(|now| now == recorded.started) {
            continue;
        }
        let before = carrying(None, &recorded.token).len();
        let left = kill_carriers(&recorded.token);
        killed += before.saturating_sub(left);
        if left == 0 {
            let _ = std::fs::remove_file(&path);
        }
    }
    killed
}

/// What a registry file holds, one value per line.
struct Entry {
    started: String,
    boot: String,
    token: String,
}

impl Entry {
    fn to_text(&self) -> String {
        format!("{}\n{}\n{}\n", self.started, self.boot, self.token)
    }

    /// `None` for a file this version did not write whole: such an entry is never acted on.
    fn parse(text: &str) -> Option<Entry> {
        let mut lines = text.lines();
        let entry = Entry {
            started: lines.next()?.trim().to_string(),
            boot: lines.next()?.trim().to_string(),
            token: lines.next()?.trim().to_string(),
        };
        (!entry.started.is_empty() && !entry.token.is_empty()).then_some(entry)
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
        // Gone before anything is done: an entry that goes wrong is never met again.
        let _ = std::fs::remove_file(&path);
        if let Some(pid) = pid {
            let killed = recorded
                .as_deref()
                .and_then(Entry::parse)
                .is_some_and(|e| kill_if_ours(pid, &e));
            found.push(Orphan { pid, killed });
        }
    }
    found.sort_by_key(|o| o.pid);
    found
}

#[cfg(unix)]
fn kill_if_ours(pgid: u32, entry: &Entry) -> bool {
    use nix::sys::signal::{Signal, kill, killpg};
    use nix::unistd::{Pid, getpgrp};
    // Pids 0 and 1 never lead a child's group, and signalling our own group would kill us.
    let Ok(raw) = i32::try_from(pgid) else {
        return false;
    };
    if raw <= 1 || Pid::from_raw(raw) == getpgrp() {
        return false;
    }
    // Start times count from boot: an entry from another boot says nothing about today.
    if boot_id().unwrap_or_default() != entry.boot {
        return false;
    }
    let mut killed = false;
    if let Some(now) = start_time(pgid) {
        // The leader lives: it is ours only if it started when ours did.
        if now != entry.started {
            return false;
        }
        killed = killpg(Pid::from_raw(raw), Signal::SIGKILL).is_ok();
    }
    // What the group left, in it or out of it (`setsid`), carries the group's token.
    for pid in carrying(None, &entry.token) {
        if let Ok(pid) = i32::try_from(pid) {
            killed |= kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok();
        }
    }
    killed
}

#[cfg(not(unix))]
fn kill_if_ours(_pgid: u32, _entry: &Entry) -> bool {
    // Windows: a Job Object set to kill on close takes the tree with the daemon.
    false
}

/// This boot of the machine, where the OS says (start times restart at boot). Read once: it
/// does not change while this process lives.
fn boot_id() -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        static BOOT: OnceLock<Option<String>> = OnceLock::new();
        BOOT.get_or_init(|| {
            std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .clone()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// When a process started, as an opaque token that differs between two processes that held
/// the same pid: clock ticks since boot on Linux, the start date elsewhere.
pub(crate) fn start_time(pid: u32) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        crate::tree::stat(pid).map(|s| s.start_ticks.to_string())
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        let out = std::process::Command::new("ps")
            .args(["-o", "lstart=", "-p", &pid.to_string()])
            .env("LC_ALL", "C")
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

/// Live processes (of group `pgid`, when given) whose environment holds
/// `STEPPER_GROUP=<token>`. A token names one spawn of one daemon: a process that holds it
/// is one of that spawn's, whatever group or session it has moved to.
#[cfg(target_os = "linux")]
fn carrying(pgid: Option<u32>, token: &str) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let marker = format!("{GROUP_VAR}={token}");
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|&pid| {
            crate::tree::stat(pid).is_some_and(|s| pgid.is_none_or(|g| s.pgrp == g) && !s.zombie)
        })
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == marker.as_bytes()))
        })
        .collect()
}

#[cfg(not(target_os = "linux"))]
fn carrying(_pgid: Option<u32>, _token: &str) -> Vec<u32> {
    // Without /proc another process's environment is not at hand: leave them rather than
    // risk killing what is not ours.
    Vec::new()
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;

    /// A group like the daemon's: its own process group, every process carrying `token`.
    fn spawn_group(script: &str, token: &str) -> std::process::Child {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("sh")
            .args(["-c", script])
            .env(GROUP_VAR, token)
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap()
    }

    fn alive(pid: u32) -> bool {
        crate::tree::stat(pid).is_some_and(|s| !s.zombie)
    }

    fn write_entry(dir: &Path, pid: u32, started: &str, token: &str) {
        let entry = Entry {
            started: started.into(),
            boot: boot_id().unwrap_or_default(),
            token: token.into(),
        };
        std::fs::write(dir.join(pid.to_string()), entry.to_text()).unwrap();
    }

    fn kill_group(pid: u32) {
        let group = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap());
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    }

    fn wait_gone(pid: u32) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while alive(pid) {
            assert!(std::time::Instant::now() < deadline, "{pid} survived");
            std::thread::yield_now();
        }
    }

    #[test]
    fn an_orphaned_group_is_killed_and_its_entry_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = spawn_group("sleep 600 & sleep 600; wait", "t1");
        let pid = child.id();
        write_entry(dir.path(), pid, &start_time(pid).unwrap(), "t1");

        let found = reap_orphans(dir.path());
        assert_eq!(found, [Orphan { pid, killed: true }]);
        child.wait().unwrap();
        assert!(!alive(pid));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_reused_pid_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = spawn_group("sleep 600; wait", "t2");
        let pid = child.id();
        // The entry says the group's leader started at another time: this is not it.
        write_entry(dir.path(), pid, "1", "t2");

        let found = reap_orphans(dir.path());
        assert_eq!(found, [Orphan { pid, killed: false }]);
        assert!(alive(pid), "a process that is not ours was killed");
        kill_group(pid);
        child.wait().unwrap();
    }

    #[test]
    fn without_its_leader_only_what_carries_the_token_is_killed() {
        // Two groups whose leaders exit at once, each leaving a sleeper: one carries the
        // token of its entry, the other was started by someone else.
        let dir = tempfile::tempdir().unwrap();
        let sleeper = |child: std::process::Child| -> u32 {
            let out = child.wait_with_output().unwrap();
            String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
        };
        let ours = spawn_group("sleep 600 >/dev/null & echo $!", "ours");
        let ours_pid = ours.id();
        let our_sleeper = sleeper(ours);
        let theirs = spawn_group("sleep 600 >/dev/null & echo $!", "theirs");
        let theirs_pid = theirs.id();
        let their_sleeper = sleeper(theirs);
        write_entry(dir.path(), ours_pid, "0", "ours");
        write_entry(dir.path(), theirs_pid, "0", "a-token-it-does-not-carry");

        let found = reap_orphans(dir.path());
        let theirs_survived = alive(their_sleeper);
        kill_group(theirs_pid);
        assert!(theirs_survived, "a process without our token was killed");
        assert!(
            found.contains(&Orphan {
                pid: ours_pid,
                killed: true
            }),
            "{found:?}"
        );
        assert!(
            found.contains(&Orphan {
                pid: theirs_pid,
                killed: false
            }),
            "{found:?}"
        );
        wait_gone(our_sleeper);
    }

    #[test]
    fn entries_that_could_hit_us_or_are_garbage_are_cleared_without_harm() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("not-a-pid"), "x").unwrap();
        std::fs::write(dir.path().join("999999999"), "12\n").unwrap();
        // Pid 0 and our own group would signal ourselves.
        write_entry(dir.path(), 0, "0", "t");
        let own = u32::try_from(nix::unistd::getpgrp().as_raw()).unwrap();
        write_entry(dir.path(), own, &start_time(own).unwrap_or_default(), "t");
        // An entry from another boot is stale whatever its pid holds now.
        let entry = Entry {
            started: start_time(1).unwrap_or_default(),
            boot: "another-boot".into(),
            token: "t".into(),
        };
        std::fs::write(dir.path().join("1"), entry.to_text()).unwrap();

        let found = reap_orphans(dir.path());
        assert!(found.iter().all(|o| !o.killed), "{found:?}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
