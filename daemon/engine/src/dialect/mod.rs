//! Tool dialects: the names and argument shapes each model family was trained on, mapped onto
//! stepper's one set of internal tools. A dialect renames and reshapes what is offered, and
//! translates each call back before anything runs, so the gate, hooks, checkpoints, events and
//! the protocol only ever see the internal tools.
//!
//! - [`ToolDialect::Anthropic`]: Claude Code's tools (`Read`, `Edit`, `MultiEdit`, `Write`,
//!   `Bash`, `Glob`, `Grep`, `LS`, `TodoWrite`, `WebFetch`), with `file_path`, `old_string`,
//!   `new_string`, `replace_all`, `offset`, `limit`, `-i`, `-n`, `-A`/`-B`/`-C`.
//! - [`ToolDialect::Openai`]: Codex's tools for GPT-5.x and codex models: `apply_patch`
//!   (a patch in place of edit, write and multi_edit), `shell` (an argv array with `workdir`
//!   and `timeout_ms`) and `update_plan`; reading and searching keep stepper's tools.
//! - [`ToolDialect::Plain`]: stepper's own JSON tools, for every other model.
//!
//! *OpenAI's models get `apply_patch` as a function taking a whole patch*, the shape Codex CLI
//! offers them, not the Responses API's built-in `{"type":"apply_patch"}`: the function takes
//! several files, moves and deletes in one call, works the same through the Responses API, the
//! ChatGPT (codex) back end and any server, and its calls and results are ordinary function calls
//! in the stored context. The built-in tool changes one file per call, has no move, and needs item
//! types of its own in the history.

mod claude;
mod codex;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::provider::ToolSpec;

/// Which shapes a model is offered its tools in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolDialect {
    /// Claude Code's tools.
    Anthropic,
    /// Codex's `apply_patch`, `shell` and `update_plan`.
    Openai,
    /// stepper's own JSON tools.
    #[default]
    Plain,
}

/// A call translated for the internal tools: what runs, with which arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Translated {
    pub name: String,
    pub arguments: Value,
}

impl ToolDialect {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolDialect::Anthropic => "anthropic",
            ToolDialect::Openai => "openai",
            ToolDialect::Plain => "plain",
        }
    }

    /// The tools as this dialect offers them: the internal tools it covers renamed and
    /// reshaped, the ones it replaces left out, the rest (MCP, skills, the orchestrator's)
    /// unchanged. `specs` are the internal tools the agent may use.
    pub fn offer(self, specs: Vec<ToolSpec>) -> Vec<ToolSpec> {
        match self {
            ToolDialect::Plain => specs
                .into_iter()
                .filter(|s| !codex::ONLY_HERE.contains(&s.name.as_str()))
                .collect(),
            ToolDialect::Anthropic => specs
                .into_iter()
                .filter(|s| !codex::ONLY_HERE.contains(&s.name.as_str()))
                .map(claude::offer)
                .collect(),
            ToolDialect::Openai => codex::offer(specs),
        }
    }

    /// The internal tool a call of this dialect's `name` runs, with its arguments in the
    /// internal shape. A name the dialect does not know is passed through as it is (an MCP
    /// tool, or one the agent loop will report unknown). Arguments of the wrong shape are
    /// passed on for the tool to refuse with its own message.
    pub fn translate(self, name: &str, arguments: &Value) -> Translated {
        let mapped = match self {
            ToolDialect::Plain => None,
            ToolDialect::Anthropic => claude::translate(name, arguments),
            ToolDialect::Openai => codex::translate(name, arguments),
        };
        mapped.unwrap_or_else(|| Translated {
            name: name.to_string(),
            arguments: arguments.clone(),
        })
    }

    /// What this dialect calls the internal tool `internal` (for the instructions).
    pub fn name_of(self, internal: &str) -> &'static str {
        let found = match self {
            ToolDialect::Plain => None,
            ToolDialect::Anthropic => claude::NAMES
                .iter()
                .find(|(i, _)| *i == internal)
                .map(|(_, d)| *d),
            ToolDialect::Openai => codex::NAMES
                .iter()
                .find(|(i, _)| *i == internal)
                .map(|(_, d)| *d),
        };
        found.unwrap_or_else(|| {
            crate::dialect::INTERNAL
                .iter()
                .find(|n| **n == internal)
                .copied()
                .unwrap_or("tool")
        })
    }

    /// The dialect a provider kind's models were trained on, unless the model's entry says.
    pub fn of_kind(kind: crate::provider::ProviderKind) -> ToolDialect {
        use crate::provider::ProviderKind as K;
        match kind {
            K::Anthropic => ToolDialect::Anthropic,
            K::Openai | K::Codex => ToolDialect::Openai,
            K::OpenaiChat | K::Replay | K::ClaudeCode | K::CodexCli => ToolDialect::Plain,
        }
    }
}

/// The internal tools' names, for [`ToolDialect::name_of`].
const INTERNAL: &[&str] = &[
    "read",
    "write",
    "edit",
    "multi_edit",
    "bash",
    "glob",
    "grep",
    "ls",
    "todo_write",
    "web_fetch",
    "apply_patch",
];

/// Rename a JSON object's keys per `pairs` (from, to); other keys stay.
fn rename_keys(value: &Value, pairs: &[(&str, &str)]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let key = pairs
                        .iter()
                        .find(|(from, _)| from == k)
                        .map_or(k.as_str(), |(_, to)| to);
                    (key.to_string(), v.clone())
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A schema with its properties renamed per `pairs` (and `required` with them).
fn rename_schema(schema: &Value, pairs: &[(&str, &str)]) -> Value {
    let mut schema = schema.clone();
    if let Some(props) = schema.get("properties") {
        let renamed = rename_keys(props, pairs);
        schema["properties"] = renamed;
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        for r in required.iter_mut() {
            if let Some((_, to)) = pairs.iter().find(|(from, _)| r == from) {
                *r = Value::String((*to).to_string());
            }
        }
    }
    schema
}

#[cfg(test)]
mod tests;
