//! One daemon per data dir: an exclusive lock on a file in it, held for the daemon's life.
//!
//! The OS drops the lock when the process dies, however it dies, so a crashed daemon never
//! blocks the next one. Holding it is also what makes removing a leftover socket safe.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The held lock; released on drop.
pub struct DataDirLock {
    _file: File,
    path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "another stepperd{} already owns {} — stop it with 'stepper daemon stop', or set \
         STEPPER_HOME to use another data dir",
        .pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
        .data_dir.display()
    )]
    Held { data_dir: PathBuf, pid: Option<u32> },
    #[error("cannot lock {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl DataDirLock {
    /// Take the lock at `path` (in `data_dir`) without waiting, and write our pid into it.
    pub fn acquire(path: &Path, data_dir: &Path) -> Result<DataDirLock, LockError> {
        let io = |source| LockError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(LockError::Held {
                    data_dir: data_dir.to_path_buf(),
                    pid: text.trim().parse().ok(),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(DataDirLock {
            _file: file,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_pid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stepperd.lock");
        let held = DataDirLock::acquire(&path, dir.path()).unwrap();
        let err = DataDirLock::acquire(&path, dir.path()).err().unwrap();
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        assert!(msg.contains("stepper daemon stop"), "{msg}");
        drop(held);
        // Another test of this binary may fork a child while our file is open: until the
        // child execs (the descriptor is close-on-exec) it shares the lock, so the release
        // can show a moment late. Wait for it with a deadline rather than once.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match DataDirLock::acquire(&path, dir.path()) {
                Ok(_) => break,
                Err(LockError::Held { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(2))
                }
                Err(e) => panic!("the lock was not released: {e}"),
            }
        }
    }
}
