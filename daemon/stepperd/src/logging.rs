//! The daemon's log: a file in the data dir, filtered by `STEPPER_LOG` (default `info`).
//! Keys and tokens are never logged: nothing logs a request's headers or a session's env.
//!
//! *The log queue holds 4096 lines*, not tracing-appender's default 128 000, which were allocated
//! and touched at start (~4 MiB of idle RSS); lines past a full queue are dropped.

use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

/// Log lines waiting for the writer thread.
const LOG_QUEUE_LINES: usize = 4096;

/// Start logging to `log_path`; keep the guard alive until exit so the last lines are written.
pub fn init(log_path: &Path) -> anyhow::Result<WorkerGuard> {
    let dir = log_path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let file_name = log_path
        .file_name()
        .unwrap_or(std::ffi::OsStr::new("stepperd.log"));
    let appender = tracing_appender::rolling::never(dir, file_name);
    // The default queue holds 128 000 lines, allocated and touched up front: ~5 MiB of
    // resident memory and a millisecond at every start, for bursts a daemon never logs.
    // Lines past a full queue are dropped (and counted) rather than block a turn.
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .lossy(true)
        .finish(appender);
    let filter = EnvFilter::try_from_env("STEPPER_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,jsonrpsee=warn,hyper=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot start logging: {e}"))?;
    Ok(guard)
}
