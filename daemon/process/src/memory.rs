//! How much memory a process tree holds: the resident set sizes Linux's `/proc` gives, summed
//! over the tree, so that a server that starts helpers is counted whole. Pages the processes
//! share (a runtime's code) count once per process, so the sum leans high. Elsewhere the
//! answer is "unknown".

/// At most this many processes are read for one answer (a tree that forks without end is
/// measured in part, not walked whole).
#[cfg(target_os = "linux")]
const MOST_PROCESSES: usize = 4096;

/// The resident memory of `pid` and every process beneath it, in bytes; `None` when `pid` is
/// gone or the system does not say.
pub fn tree_resident(pid: u32) -> Option<u64> {
    let own = resident(pid)?;
    Some(own + beneath(pid))
}

/// The resident memory of the processes beneath `pid`, not `pid` itself (a program's under
/// the reaper that holds it), in bytes; `None` when `pid` is gone or the system does not say.
pub fn resident_beneath(pid: u32) -> Option<u64> {
    resident(pid)?;
    Some(beneath(pid))
}

/// What the descendants of `pid` hold, each process read once.
#[cfg(target_os = "linux")]
fn beneath(pid: u32) -> u64 {
    let mut seen = std::collections::BTreeSet::from([pid]);
    let mut todo = crate::tree::children(pid);
    let mut total = 0;
    while let Some(next) = todo.pop() {
        if seen.len() >= MOST_PROCESSES || !seen.insert(next) {
            continue;
        }
        // One that exited meanwhile holds nothing, and neither do its children any more.
        if let Some(bytes) = resident(next) {
            total += bytes;
            todo.extend(crate::tree::children(next));
        }
    }
    total
}

#[cfg(not(target_os = "linux"))]
fn beneath(_pid: u32) -> u64 {
    0
}

/// `VmRSS` of `/proc/<pid>/status`, in bytes: absent (so 0) for a zombie, `None` when the
/// process is gone.
#[cfg(target_os = "linux")]
fn resident(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(0);
    Some(kib * 1024)
}

#[cfg(not(target_os = "linux"))]
fn resident(_pid: u32) -> Option<u64> {
    None
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;

    #[test]
    fn a_tree_holds_its_childrens_memory() {
        let me = std::process::id();
        let own = resident(me).unwrap();
        assert!(own > 0);
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let sleep = resident(child.id()).unwrap();
        let beneath = resident_beneath(me).unwrap();
        assert!(beneath >= sleep && sleep > 0, "{beneath} {sleep}");
        assert!(tree_resident(me).unwrap() >= own + sleep);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(resident_beneath(child.id()), None, "gone");
    }
}
