//! Codex's tools, as GPT-5.x and codex models were trained to call them: `apply_patch` with a
//! whole patch in place of edit, write and multi_edit; `shell` with an argv array; and
//! `update_plan` for the todo list. Reading and searching keep stepper's tools: they are
//! cheaper than `cat` and `rg` through a shell, and the gate knows them for reads.

use serde_json::{Value, json};

use super::Translated;
use crate::provider::ToolSpec;

/// Internal tools only this dialect offers.
pub(super) const ONLY_HERE: &[&str] = &["apply_patch"];

/// What `apply_patch` stands in for when it is offered.
const PATCHED: &[&str] = &["edit", "write", "multi_edit"];

/// (internal, Codex's) tool names.
pub(super) const NAMES: &[(&str, &str)] = &[
    ("bash", "shell"),
    ("todo_write", "update_plan"),
    ("edit", "apply_patch"),
    ("write", "apply_patch"),
    ("multi_edit", "apply_patch"),
    ("apply_patch", "apply_patch"),
];

pub(super) fn offer(specs: Vec<ToolSpec>) -> Vec<ToolSpec> {
    let patches = specs.iter().any(|s| s.name == "apply_patch");
    specs
        .into_iter()
        .filter(|s| !(patches && PATCHED.contains(&s.name.as_str())))
        .map(|spec| match spec.name.as_str() {
            "bash" => shell(),
            "todo_write" => update_plan(),
            _ => spec,
        })
        .collect()
}

pub(super) fn translate(name: &str, arguments: &Value) -> Option<Translated> {
    match name {
        // A call of the wrong shape goes on as it came, for the tool to refuse in its words.
        "shell" => Some(Translated {
            name: "bash".into(),
            arguments: shell_call(arguments).unwrap_or_else(|| arguments.clone()),
        }),
        "update_plan" => Some(Translated {
            name: "todo_write".into(),
            arguments: plan_call(arguments).unwrap_or_else(|| arguments.clone()),
        }),
        _ => None,
    }
}

fn shell() -> ToolSpec {
    ToolSpec {
        name: "shell".into(),
        description: "Run a command and get its output (stdout and stderr) and exit code. \
                      `command` is the argv: use [\"bash\", \"-lc\", \"<command line>\"] for \
                      pipes, redirections and several commands. Runs in the project's folder \
                      unless `workdir` says otherwise. Use it to build, test and inspect; edit \
                      files with apply_patch, not with shell redirections."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "array",
                    "items": { "type": "string" },
                    "description": "The command and its arguments."
                },
                "workdir": {
                    "type": "string",
                    "description": "The folder to run it in."
                },
                "timeout_ms": {
                    "type": "integer",
                    "description": "Milliseconds before it is stopped (default 120000)."
                }
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

fn update_plan() -> ToolSpec {
    ToolSpec {
        name: "update_plan".into(),
        description: "Keep the plan of a task of several steps, shown to the user: give the \
                      whole list each time, with one step in_progress at a time and finished \
                      ones completed."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "explanation": { "type": "string" },
                "plan": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "step": { "type": "string" },
                            "status": {
                                "type": "string",
                                "enum": ["pending", "in_progress", "completed"]
                            }
                        },
                        "required": ["step", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["plan"],
            "additionalProperties": false
        }),
    }
}

/// `shell`'s argv as one command line for bash: a `bash -lc SCRIPT` (or `sh -c`) is its
/// script; anything else is quoted word by word. `workdir` becomes a `cd` the gate sees.
fn shell_call(arguments: &Value) -> Option<Value> {
    let command = arguments.get("command")?;
    let argv: Vec<&str> = match command {
        // A command line where the argv belongs: what the model meant is plain.
        Value::String(line) => vec!["bash", "-lc", line],
        _ => command
            .as_array()?
            .iter()
            .map(Value::as_str)
            .collect::<Option<_>>()?,
    };
    let line = match argv.as_slice() {
        [shell, flag, script] if is_shell(shell) && matches!(*flag, "-c" | "-lc" | "-cl") => {
            (*script).to_string()
        }
        words if !words.is_empty() => words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" "),
        _ => return None,
    };
    let line = match arguments.get("workdir").and_then(Value::as_str) {
        Some(dir) if !dir.is_empty() && dir != "." => format!("cd {} && {line}", quote(dir)),
        _ => line,
    };
    let mut out = json!({ "command": line });
    if let Some(ms) = arguments.get("timeout_ms").and_then(Value::as_u64) {
        out["timeout"] = json!(ms.clamp(1, 600_000));
    }
    Some(out)
}

fn is_shell(program: &str) -> bool {
    let name = program.rsplit('/').next().unwrap_or(program);
    matches!(name, "bash" | "sh" | "zsh" | "dash")
}

/// A word quoted for bash where it needs it.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn plan_call(arguments: &Value) -> Option<Value> {
    let todos: Vec<Value> = arguments
        .get("plan")?
        .as_array()?
        .iter()
        .map(|item| {
            let step = item.get("step").and_then(Value::as_str).unwrap_or_default();
            json!({
                "content": step,
                "status": item.get("status").cloned().unwrap_or(json!("pending")),
                "activeForm": step,
            })
        })
        .collect();
    Some(json!({ "todos": todos }))
}
