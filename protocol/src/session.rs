//! Sessions as clients see them.
//!
//! *Short ids come from the random part*: session ids are UUIDv7, whose first 12 hex digits are
//! time (two sessions minutes apart share 8 of them); the short form is the shortest unique prefix
//! (8+) of the random bits, and every command takes a prefix of either.

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

/// The fewest characters a short session id has.
pub const SHORT_ID_MIN: usize = 8;

/// The part of a session id that tells sessions apart: a UUIDv7's random bits, in hex,
/// after its time (which two sessions made seconds apart share) and its version digit. An
/// id of another shape is its own random part.
pub fn random_part(id: &str) -> String {
    let hex: String = id.chars().filter(|c| *c != '-').collect();
    let uuid_v7 =
        hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit()) && hex.as_bytes()[12] == b'7';
    if uuid_v7 {
        hex[13..].to_ascii_lowercase()
    } else {
        hex
    }
}

/// Each id's short form, in order: the shortest prefix of its random part (at least
/// [`SHORT_ID_MIN`] characters) that no other id's random part starts with.
pub fn short_ids(ids: &[&str]) -> Vec<String> {
    let parts: Vec<String> = ids.iter().map(|id| random_part(id)).collect();
    parts
        .iter()
        .enumerate()
        .map(|(i, part)| {
            // One character past the longest prefix shared with any other id.
            let shared = parts
                .iter()
                .enumerate()
                .filter(|(j, other)| *j != i && *other != part)
                .map(|(_, other)| common_prefix(part, other))
                .max()
                .unwrap_or(0);
            let len = (shared + 1).max(SHORT_ID_MIN).min(part.len());
            part[..len].to_string()
        })
        .collect()
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// Whether `given` names `id`: the whole id, a prefix of it, or a prefix of its random part
/// (its short form), dashes and case aside.
pub fn id_matches(id: &str, given: &str) -> bool {
    let given: String = given
        .chars()
        .filter(|c| *c != '-')
        .collect::<String>()
        .to_ascii_lowercase();
    if given.is_empty() {
        return false;
    }
    let whole: String = id
        .chars()
        .filter(|c| *c != '-')
        .collect::<String>()
        .to_ascii_lowercase();
    whole.starts_with(&given) || random_part(id).starts_with(&given)
}

#[cfg(test)]
mod short_id_tests {
    use super::*;

    #[test]
    fn short_ids_come_from_the_random_part_and_are_unique() {
        // Two sessions made in the same millisecond: the same time prefix.
        let a = "01a244e7-1d2c-7abc-8def-0123456789ab";
        let b = "01a244e7-1d2c-7abc-8def-0123aaaaaaaa";
        let c = "01a244e7-1d2d-7fff-9000-000000000000";
        assert_eq!(random_part(a), "abc8def0123456789ab");
        let short = short_ids(&[a, b, c]);
        assert_eq!(short, ["abc8def01234", "abc8def0123a", "fff90000"]);
        assert!(id_matches(a, "abc8def01234"));
        assert!(!id_matches(b, "abc8def01234"));
        assert!(id_matches(a, "01A244E7-1d2c"), "a prefix of the whole id");
        assert!(id_matches(c, &short[2]));
        assert!(!id_matches(a, ""));
        // Alone, an id's short form is the minimum.
        assert_eq!(short_ids(&[a]), ["abc8def0"]);
        // An id of another shape is its own random part.
        assert_eq!(short_ids(&["nope"]), ["nope"]);
    }
}
