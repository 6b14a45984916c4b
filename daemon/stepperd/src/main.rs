//! The `stepperd` binary. Usually started by a client (or at login), not by hand.

use std::process::ExitCode;

use clap::Parser;
use stepper_protocol::places::Places;
use stepperd::lock::{DataDirLock, LockError};

/// The stepper daemon: owns sessions, turns and tools; clients talk to it over a local socket.
///
/// Places come from STEPPER_HOME (everything under one folder), else the XDG base
/// directories; STEPPER_SOCKET overrides the socket. Logs go to the data dir's logs/.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Print where the daemon keeps its files and exit.
    #[arg(long)]
    print_places: bool,
}

fn main() -> ExitCode {
    // The sandbox helper: restrict this process, then exec the command. Before anything
    // else, so a sandboxed command pays for nothing of the daemon's start.
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv
        .get(1)
        .is_some_and(|a| a == stepper_process::sandbox::HELPER_SUBCOMMAND)
    {
        let code = stepper_process::sandbox::helper_main(&argv[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX));
    }
    // The parent-death guard of another agent CLI: it execs the CLI (or watches it).
    if argv
        .get(1)
        .is_some_and(|a| a == stepper_process::guard::HELPER_SUBCOMMAND)
    {
        let code = stepper_process::guard::helper_main(&argv[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX));
    }
    // The reaper of a tool's command: nothing the command starts outlives it.
    if argv
        .get(1)
        .is_some_and(|a| a == stepper_process::reaper::HELPER_SUBCOMMAND)
    {
        let code = stepper_process::reaper::helper_main(&argv[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX));
    }
    let places = match Places::from_env() {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    // Provider keys out of the process environment (this may execute the daemon again),
    // while it has one thread.
    let keys = stepperd::own_env::take_keys_out(&places.config_dir, &argv);
    let args = Args::parse_from(argv);
    if args.print_places {
        println!("data:   {}", places.data_dir.display());
        println!("config: {}", places.config_dir.display());
        println!("socket: {}", places.socket.display());
        println!("log:    {}", places.log_path().display());
        return ExitCode::SUCCESS;
    }
    // A session of its own, with no controlling terminal: a daemon a terminal started
    // (through a client, which leaves it out of any group of its own so this can succeed)
    // is never stopped by that terminal's job control, nor are the login shells it runs.
    // Refused, harmlessly, to a process already leading a group: systemd's, or one a user
    // runs in the foreground of a shell to watch it.
    #[cfg(unix)]
    let _ = nix::unistd::setsid();
    if let Err(e) = create_private_dir(&places.data_dir) {
        return fail(&format!(
            "cannot create the data dir {}: {e}",
            places.data_dir.display()
        ));
    }
    let lock = match DataDirLock::acquire(&places.daemon_lock_path(), &places.data_dir) {
        Ok(lock) => lock,
        Err(e @ LockError::Held { .. }) => {
            eprintln!("stepperd: {e}");
            return ExitCode::from(3);
        }
        Err(e) => return fail(&e),
    };
    let _log = match stepperd::logging::init(&places.log_path()) {
        Ok(guard) => guard,
        Err(e) => return fail(&e),
    };
    match keys {
        Ok(stepperd::own_env::Outcome::Kept(n)) => {
            tracing::info!(
                keys = n,
                "provider keys kept in memory, out of the environment"
            )
        }
        Ok(stepperd::own_env::Outcome::None) => {}
        Err(e) => tracing::warn!(error = %e, "provider keys stay in the daemon's environment"),
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    match runtime.block_on(stepperd::daemon::run(places, lock)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "stepperd failed");
            fail(&format!("{e:#}"))
        }
    }
}

fn fail(e: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("stepperd: {e}");
    ExitCode::FAILURE
}

#[cfg(unix)]
fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

#[cfg(not(unix))]
fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}
