//! What tests of child processes look for (feature `testing`): the live processes whose
//! command line holds a marker, so a test can see children start and see them gone.

/// Live (not zombie) processes whose command line holds `marker`. Linux only (`/proc`).
pub fn processes_with(marker: &str) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
                // A zombie is dead already; only its parent has not looked yet.
                && std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| !s.contains(") Z "))
        })
        .collect()
}
