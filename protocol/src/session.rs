//! Sessions as clients see them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A session id: a UUID v7 in its hyphenated text form, so ids sort by creation time.
pub type SessionId = String;

/// Environment variables, by name.
pub type Env = BTreeMap<String, String>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SessionStatus {
    /// No turn is running and none is queued.
    Idle,
    /// A turn is running.
    Running,
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
