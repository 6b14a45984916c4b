//! The daemon and its clients: `initialize`, `daemon/info` and what it reports about the
//! store and the login environment.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::version::ProtocolVersion;

/// What kind of program a client is. A kind this build does not know (from a newer client
/// or daemon) is read as `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ClientKind {
    Cli,
    Tui,
    #[serde(other)]
    Other,
}

impl ClientKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientKind::Cli => "cli",
            ClientKind::Tui => "tui",
            ClientKind::Other => "other",
        }
    }
}

impl std::fmt::Display for ClientKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    pub name: String,
    pub kind: ClientKind,
    pub version: String,
    #[serde(default)]
    pub pid: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    pub protocol_version: ProtocolVersion,
    pub client: ClientInfo,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    pub protocol_version: ProtocolVersion,
    pub daemon_version: String,
    pub pid: u32,
    /// The daemon's executable, and the build of it the daemon runs (see
    /// `places::build_id`): a client compares it with the file on disk to find a daemon
    /// left running by an older install.
    #[serde(default)]
    pub executable: Option<String>,
    #[serde(default)]
    pub build: Option<String>,
    /// Turns running right now: an idle daemon may be restarted without losing anything.
    #[serde(default)]
    pub running_turns: u32,
    /// What every user of this daemon should hear, once per command (the session store was
    /// damaged and rebuilt at its start, say). Empty for nearly every daemon.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonInfoResponse {
    pub version: String,
    pub protocol_version: ProtocolVersion,
    pub pid: u32,
    pub started_at: i64,
    pub data_dir: String,
    pub socket: String,
    /// Sessions loaded in memory right now.
    pub live_sessions: u32,
    /// Turns running right now.
    pub running_turns: u32,
    /// Connected clients right now.
    pub clients: u32,
    /// Whether the login shell's environment was read (absent from a 1.2 daemon).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login_env: Option<LoginEnvInfo>,
    /// The session store as the daemon found it at start (absent from a 1.8 daemon).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreInfo>,
}

/// The session store as the daemon found it at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoreInfo {
    pub path: String,
    /// How long the check at start (`PRAGMA quick_check`) took, in milliseconds.
    pub check_ms: u64,
    /// The store was found damaged (or its rebuild was asked for) and rebuilt at this start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<StoreRecovery>,
    /// The store's write-ahead log was damaged and SQLite dropped its tail at this start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_dropped: Option<WalDropped>,
    /// Copies kept aside in the data folder (damaged stores, damaged logs), by this start
    /// or an earlier one: they may hold more than was recovered, and take room until
    /// deleted.
    #[serde(default)]
    pub kept_aside: Vec<KeptCopy>,
}

/// A rebuild of the session store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoreRecovery {
    /// The whole story in one line, as the daemon logged it.
    pub summary: String,
    /// What SQLite said of the file, or that the rebuild was asked for.
    pub reason: String,
    /// Found damaged (rather than rebuilt on request).
    pub damaged: bool,
    /// Where the old file is now.
    pub damaged_copy: String,
    pub sessions: u64,
    pub events: u64,
    /// Events of the kept sessions that could not be read.
    pub events_missing: u64,
}

/// A write-ahead log whose tail was dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WalDropped {
    pub summary: String,
    /// Where the log, as it was before SQLite opened it, is kept.
    pub copy: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeptCopy {
    pub path: String,
    pub bytes: u64,
}

/// The login shell's environment, which fills what a session's own environment lacks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginEnvInfo {
    pub state: LoginEnvState,
    /// The shell it was read from.
    #[serde(default)]
    pub shell: Option<String>,
    /// How many variables it gave.
    #[serde(default)]
    pub variables: u32,
    /// Why it could not be read.
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum LoginEnvState {
    /// Read.
    Read,
    /// Still being read (the daemon starts reading it when it starts).
    Pending,
    /// The shell failed or timed out: sessions use their own environment only.
    Failed,
    /// `STEPPER_LOGIN_ENV=off`.
    Off,
}
