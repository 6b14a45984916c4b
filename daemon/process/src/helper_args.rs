//! The arguments of the daemon's helper processes, the guard and the reaper: both are
//! `stepperd <helper> PARENT_PID -- PROGRAM [ARGS…]`.

use std::ffi::OsString;

/// A helper's arguments, `PARENT_PID -- PROGRAM [ARGS…]` (the guard's and the reaper's);
/// what is wrong is said with `usage`.
pub(crate) fn parent_and_command(
    args: &[OsString],
    usage: &str,
) -> Result<(u32, Vec<OsString>), String> {
    let [pid, dashes, command @ ..] = args else {
        return Err(usage.into());
    };
    let parent = pid
        .to_str()
        .and_then(|p| p.parse::<u32>().ok())
        .ok_or_else(|| format!("{pid:?} is not a process id; {usage}"))?;
    if dashes != "--" || command.is_empty() {
        return Err(usage.into());
    }
    Ok((parent, command.to_vec()))
}
