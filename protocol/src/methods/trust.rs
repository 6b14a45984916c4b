//! Whether a folder is trusted (`trust/*`): what trusting it records and what it unlocks.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustGetResponse {
    /// What trusting from `cwd` records: the top of its git repository, else the folder
    /// itself (canonical).
    pub folder: String,
    /// Whether sessions in `cwd` get the project's files in full.
    pub trusted: bool,
    /// The folder whose decision applies (`folder` or one above it); absent when the user
    /// never decided, which is when a client asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// What the project's files ask for that applies only once the folder is trusted
    /// (`file: what`), when it is not. Empty: trusting changes nothing, so nothing to ask.
    #[serde(default)]
    pub ignored: Vec<String>,
    /// Why `folder` should not be trusted as a whole (the home folder, `/`): `trust/set`
    /// refuses it unless `allBelow`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub too_broad: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustSetParams {
    /// An absolute path: the decision is recorded for the folder `trust/get` names for it.
    pub cwd: String,
    pub trusted: bool,
    /// Trust even the home folder or `/` as a whole (every folder below it).
    #[serde(default)]
    pub all_below: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustListResponse {
    pub folders: Vec<TrustEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustEntry {
    pub folder: String,
    pub trusted: bool,
    /// When the user decided, ms since the epoch.
    pub decided_at: u64,
}
