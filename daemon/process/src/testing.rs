//! What tests of child processes look for (feature `testing`): the live processes whose
//! command line holds a marker, so a test can see children start and see them gone.

/// Live (not zombie) processes whose command line holds `marker`, leaving out the reaper
/// that holds each command (`stepperd-reap … -- COMMAND`, whose own command line repeats
/// the command's). Linux only (`/proc`).
pub fn processes_with(marker: &str) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c).contains(marker) && !is_reaper(&c)
            })
                // A zombie is dead already; only its parent has not looked yet.
                && std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| !s.contains(") Z "))
        })
        .collect()
}

/// Whether a command line (NUL-separated) is the reaper's: `stepperd-reap …` or
/// `stepperd reap …`.
fn is_reaper(cmdline: &[u8]) -> bool {
    let mut args = cmdline.split(|b| *b == 0);
    let program = args.next().unwrap_or_default();
    let name = program.rsplit(|b| *b == b'/').next().unwrap_or_default();
    name == b"stepperd-reap" || (name == b"stepperd" && args.next() == Some(b"reap"))
}
