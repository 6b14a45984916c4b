//! `stepperd-reap PARENT_PID -- PROGRAM [ARGS…]`: the reaper every tool command runs under
//! (`stepper_process::reaper`), as a binary of its own. It links nothing of the daemon, so it
//! starts in a fraction of the daemon's time (`cargo bench -p stepper-e2e --bench reaper`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let code = stepper_process::reaper::helper_main(&args);
    ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX))
}
