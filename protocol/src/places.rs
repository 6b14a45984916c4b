//! Where stepper keeps things: config, data, logs and the daemon's socket.
//!
//! `STEPPER_HOME` puts everything under one folder (tests use it); otherwise the XDG base
//! directories. `STEPPER_SOCKET` overrides the socket alone. Both the daemon and its clients
//! resolve places here, so they always agree.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// User settings (`setting.json`).
    pub config_dir: PathBuf,
    /// The store, locks and anything else the daemon owns.
    pub data_dir: PathBuf,
    /// The daemon's log files.
    pub log_dir: PathBuf,
    /// The daemon's local socket (a named pipe path on Windows).
    pub socket: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum PlacesError {
    #[error(
        "cannot tell where to keep stepper's files: neither STEPPER_HOME nor HOME is set — \
         set STEPPER_HOME to a folder stepper may use"
    )]
    NoHome,
    #[error(
        "the socket path {0} is too long for a Unix socket ({1} bytes, at most 107) — set \
         STEPPER_SOCKET to a shorter path"
    )]
    SocketPathTooLong(PathBuf, usize),
}

impl Places {
    /// Resolve from the process environment.
    pub fn from_env() -> Result<Places, PlacesError> {
        Places::resolve(|k| std::env::var_os(k))
    }

    /// Resolve from an environment given as a lookup function.
    pub fn resolve(var: impl Fn(&str) -> Option<OsString>) -> Result<Places, PlacesError> {
        // Relative paths are made absolute now: the daemon a client starts must agree on
        // them whatever its working directory.
        let non_empty = |k: &str| {
            var(k).filter(|v| !v.is_empty()).map(|v| {
                let p = PathBuf::from(v);
                std::path::absolute(&p).unwrap_or(p)
            })
        };
        let mut places = if let Some(home) = non_empty("STEPPER_HOME") {
            Places {
                config_dir: home.clone(),
                data_dir: home.clone(),
                log_dir: home.join("logs"),
                socket: home.join("stepperd.sock"),
            }
        } else {
            let home = non_empty("HOME").ok_or(PlacesError::NoHome)?;
            let config = non_empty("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config"));
            let data = non_empty("XDG_DATA_HOME")
                .unwrap_or_else(|| home.join(".local").join("share"))
                .join("stepper");
            let socket = match non_empty("XDG_RUNTIME_DIR") {
                Some(run) => run.join("stepper").join("stepperd.sock"),
                None => data.join("stepperd.sock"),
            };
            Places {
                config_dir: config.join("stepper"),
                log_dir: data.join("logs"),
                data_dir: data,
                socket,
            }
        };
        if let Some(socket) = non_empty("STEPPER_SOCKET") {
            places.socket = socket;
        }
        check_socket_len(&places.socket)?;
        Ok(places)
    }

    /// The SQLite store.
    pub fn store_path(&self) -> PathBuf {
        self.data_dir.join("stepper.db")
    }

    /// Present when the user asked for the store to be rebuilt (`stepper doctor
    /// --recover-store`): the daemon does it at its next start, then removes the file.
    pub fn store_recovery_request_path(&self) -> PathBuf {
        self.data_dir.join("recover-store")
    }

    /// Present while the daemon builds a new store from a damaged one (the new store
    /// itself, renamed to [`Places::store_path`] when complete): a start then takes longer.
    pub fn store_rebuild_path(&self) -> PathBuf {
        self.data_dir.join("stepper.db.recovering")
    }

    /// Held by the one daemon that owns this data dir.
    pub fn daemon_lock_path(&self) -> PathBuf {
        self.data_dir.join("stepperd.lock")
    }

    /// Held by a client while it starts a daemon, so two clients never start two.
    pub fn startup_lock_path(&self) -> PathBuf {
        self.data_dir.join("startup.lock")
    }

    /// The daemon's log file.
    pub fn log_path(&self) -> PathBuf {
        self.log_dir.join("stepperd.log")
    }
}

/// Where stepper copies `folder` (one that is not a git repository) for workers that run
/// in worktrees of their own: a private repository and its worktrees, in the temporary
/// folder (a reboot clears them), per user (`user`: their uid) and named by a stable hash
/// of the folder's path.
pub fn worktree_copies(folder: &Path, user: u32) -> PathBuf {
    // FNV-1a: the same name from every build, so the CLI finds what the daemon made.
    let hash = folder
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
    std::env::temp_dir()
        .join(format!("stepper-worktrees-{user}"))
        .join(format!("{hash:016x}"))
}

/// An identity of the executable at `path` as built: its size and modification time. A
/// rebuilt or reinstalled binary gets a new one; the daemon records its own at start.
pub fn build_id(path: &Path) -> std::io::Result<String> {
    let meta = std::fs::metadata(path)?;
    let modified = meta
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    Ok(format!("{}-{modified}", meta.len()))
}

fn check_socket_len(socket: &Path) -> Result<(), PlacesError> {
    let len = socket.as_os_str().len();
    if cfg!(unix) && len > 107 {
        return Err(PlacesError::SocketPathTooLong(socket.to_path_buf(), len));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn resolve(vars: &[(&str, &str)]) -> Result<Places, PlacesError> {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        Places::resolve(|k| map.get(k).cloned())
    }

    #[test]
    fn stepper_home_holds_everything() {
        let p = resolve(&[("STEPPER_HOME", "/s"), ("HOME", "/h")]).unwrap();
        assert_eq!(p.data_dir, PathBuf::from("/s"));
        assert_eq!(p.config_dir, PathBuf::from("/s"));
        assert_eq!(p.socket, PathBuf::from("/s/stepperd.sock"));
    }

    #[test]
    fn xdg_places() {
        let p = resolve(&[("HOME", "/h"), ("XDG_RUNTIME_DIR", "/run/user/1")]).unwrap();
        assert_eq!(p.config_dir, PathBuf::from("/h/.config/stepper"));
        assert_eq!(p.data_dir, PathBuf::from("/h/.local/share/stepper"));
        assert_eq!(p.socket, PathBuf::from("/run/user/1/stepper/stepperd.sock"));
        let p = resolve(&[("HOME", "/h")]).unwrap();
        assert_eq!(
            p.socket,
            PathBuf::from("/h/.local/share/stepper/stepperd.sock")
        );
    }

    #[test]
    fn socket_override_and_errors() {
        let p = resolve(&[("HOME", "/h"), ("STEPPER_SOCKET", "/tmp/x.sock")]).unwrap();
        assert_eq!(p.socket, PathBuf::from("/tmp/x.sock"));
        assert!(matches!(resolve(&[]), Err(PlacesError::NoHome)));
        let long = format!("/{}", "a".repeat(200));
        let err = resolve(&[("STEPPER_HOME", &long)]).unwrap_err();
        assert!(err.to_string().contains("STEPPER_SOCKET"), "{err}");
    }
}
