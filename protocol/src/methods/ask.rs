//! What `stepper ask --format json` prints: part of the CLI's contract, so it lives with the
//! protocol's types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::event::Usage;
use crate::session::SessionId;

/// The JSON `stepper ask --format json` prints (part of the CLI's contract, so it lives here).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskResult {
    pub session_id: SessionId,
    pub status: crate::event::TurnStatus,
    pub text: String,
    pub usage: Usage,
    /// What the turn cost in US dollars, when the model's prices are known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What kind of failure `error` is, where it is known (as `TurnFinished` says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<crate::event::TurnErrorKind>,
    /// Each layer of a layered turn, in order (empty for a turn of one agent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<LayerResult>,
    /// The tool calls of the turn that were denied: by a person, or because nobody could
    /// answer (no terminal, no attached client).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permission_denials: Vec<PermissionDenial>,
}

/// A tool call denied in a turn (`stepper ask --format json`'s `permissionDenials`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionDenial {
    /// The approval's `requestId`.
    pub request_id: String,
    pub tool: String,
    /// What was asked, in a sentence.
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Who denied it (the client's name), as `ApprovalResolved` said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// How one layer of a turn ended (`stepper ask --format json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LayerResult {
    pub index: u32,
    pub name: String,
    pub model: String,
    pub status: crate::event::TurnStatus,
    /// What it handed on (the last layer's is the answer).
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The workers of a parallel layer.
    pub workers: u32,
}
