//! A subscription's wire shapes: its id, the params of its unsubscribe, and the notifications
//! that carry its items (or the error that ends it).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A subscription's id, as the subscribe method returned it: opaque JSON (today a number),
/// kept and sent back as given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SubscriptionId {
    Number(u64),
    String(String),
}

/// An unsubscribe method's params: exactly this object (an extra field is refused), or
/// `[id]`, the form JSON-RPC libraries send when a subscription is dropped. Its result is
/// `true`, or `false` when the subscription had ended already.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnsubscribeParams {
    pub subscription: SubscriptionId,
}

/// The params of a subscription's notifications (`session/event`): `result` carries the
/// items (one, or an array of them when the subscription asked for `batch`); the last
/// notification of a subscription the daemon ends carries `error` instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubscriptionNotification<T> {
    pub subscription: SubscriptionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<OneOrMany<T>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

/// One item, or an array of them in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

/// A JSON-RPC error object, as a subscription's last notification carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorObject {
    pub code: i32,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<crate::error::ErrorData>,
}
