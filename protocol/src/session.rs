//! Sessions as clients see them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A session id: a UUID v7 in its hyphenated text form, so ids sort by creation time.
pub type SessionId = String;

/// Environment variables, by name.
pub type Env = BTreeMap<String, String>;

/// How much tools may do without asking. The names are those of `setting.json`'s
/// `permissions.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Ask before edits and commands that are not read-only.
    Default,
    /// Edits run without asking; commands still ask.
    AcceptEdits,
    /// Read-only: nothing is changed.
    Plan,
    /// Nothing asks; deny rules still hold.
    Auto,
}

impl PermissionMode {
    /// Every mode.
    pub const ALL: [PermissionMode; 4] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::Auto,
    ];

    /// The name in settings and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "accept-edits",
            PermissionMode::Plan => "plan",
            PermissionMode::Auto => "auto",
        }
    }
}

impl std::fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for PermissionMode {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        PermissionMode::ALL
            .into_iter()
            .find(|m| m.as_str() == name)
            .ok_or_else(|| format!("mode {name:?} is not one of default, accept-edits, plan, auto"))
    }
}

/// What the OS sandbox lets a session's commands change. The names are those of
/// `setting.json`'s `sandbox`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Commands change nothing (but `/dev/null` and the like).
    ReadOnly,
    /// Commands change the project, the temp folders and the settings' `writableRoots`.
    WorkspaceWrite,
    /// No sandbox: commands run with the user's full rights once the gate lets them.
    Off,
}

impl SandboxMode {
    /// Every mode.
    pub const ALL: [SandboxMode; 3] = [
        SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite,
        SandboxMode::Off,
    ];

    /// The name in settings and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::Off => "off",
        }
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SandboxMode {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        SandboxMode::ALL
            .into_iter()
            .find(|m| m.as_str() == name)
            .ok_or_else(|| {
                format!("sandbox {name:?} is not one of read-only, workspace-write, off")
            })
    }
}

/// Whether a session's commands really run in its sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SandboxState {
    /// They do.
    Active,
    /// The session's sandbox is `off`.
    Off,
    /// A sandbox is wanted but this machine cannot apply it (`reason` says why): commands
    /// that it would have let through ask instead, as in the `default` mode.
    Unavailable,
}

/// The sandbox a session's commands run in, as the daemon applies it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxInfo {
    /// The session's own, else the settings' for its folder (`off` when neither says).
    pub mode: SandboxMode,
    pub state: SandboxState,
    /// Whether commands may open Internet sockets (loopback included). Unix-domain
    /// sockets are refused either way.
    pub network: bool,
    /// Where commands may write, absolute: the project, the temp folders, `writableRoots`
    /// (empty for `read-only` and `off`).
    #[serde(default)]
    pub writable_roots: Vec<String>,
    /// Why the sandbox is unavailable, or what applies it when active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What holds the sandbox when it is active (absent otherwise, and from older daemons).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<SandboxMechanism>,
}

/// What makes a sandbox hold; README's "The sandbox" says what each one covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SandboxMechanism {
    /// Linux: bubblewrap's namespaces (a read-only view of the system, private `/dev`,
    /// `/proc` and IPC), with Landlock and seccomp inside.
    Bubblewrap,
    /// Linux without a usable bubblewrap: Landlock and seccomp alone, which leave file
    /// metadata outside the writable roots changeable, and other processes' `/proc`
    /// entries (not their memory or environment) readable.
    Landlock,
    /// macOS: `sandbox-exec` with a Seatbelt profile.
    Seatbelt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SessionStatus {
    /// No turn is running; the last one completed (or none ran yet).
    Idle,
    /// A turn is running.
    Running,
    /// No turn is running; the last one was interrupted — by the user, a daemon stop or a
    /// crash — and can be continued by submitting again.
    Interrupted,
    /// No turn is running; the last one failed (its `TurnFinished` says why).
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub id: SessionId,
    /// A short title: given at creation, or the start of the first input.
    pub title: Option<String>,
    pub cwd: String,
    /// The model reference, `provider/model-id`.
    pub model: String,
    pub status: SessionStatus,
    pub created_at: i64,
    pub updated_at: i64,
    /// The seq of the last committed event (0 when there is none).
    pub last_seq: u64,
    /// How many turns have started.
    pub turns: u32,
}
