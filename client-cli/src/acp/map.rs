//! stepper's session events as ACP `session/update`s: what an editor is shown.
//!
//! One [`View`] per session and connection. It is fed every event in seq order — a replay
//! for `session/load`, then live — and returns the updates to send. What an event means
//! across events (whether a message's text already streamed, the open tool calls, the
//! context's size) is the protocol's [`SessionView`]; this is how an editor is shown it.

use std::path::Path;

use serde_json::{Value, json};
use stepper_protocol::view::{Change, SessionView};
use stepper_protocol::{AppEvent, EventEnvelope, TodoStatus, ToolCallStatus, TurnStatus};

/// What an event asks the connection to do beyond sending updates.
#[derive(Debug, PartialEq)]
pub enum Effect {
    /// A turn began for an input; `own`: this connection queued it.
    TurnStarted { input: String, own: bool },
    /// The current turn ended.
    TurnFinished {
        status: stepper_protocol::TurnStatus,
        error: Option<String>,
    },
    /// The gate asks: put `session/request_permission` to the editor.
    Ask {
        request_id: String,
        tool_call: Value,
    },
    /// An approval was answered (here or anywhere): close the editor's request.
    Answered(String),
}

#[derive(Default)]
pub struct View {
    cwd: String,
    session: SessionView,
    /// The context window of the session's model, when known.
    pub window: Option<u64>,
    /// The name this connection gave the daemon: inputs it queued are the editor's own, and
    /// not echoed back to it.
    client: String,
    /// Set while a history is replayed (`session/load`): every input is shown then, the
    /// editor's own too — the editor asked for the whole conversation.
    pub replaying: bool,
}

impl View {
    pub fn new(cwd: &str, window: Option<u64>, client: &str) -> View {
        View {
            cwd: cwd.to_string(),
            window,
            client: client.to_string(),
            ..View::default()
        }
    }

    /// The updates (`update` objects of `session/update`) and effects of one event.
    pub fn apply(&mut self, envelope: &EventEnvelope) -> (Vec<Value>, Vec<Effect>) {
        let mut updates = Vec::new();
        let mut effects = Vec::new();
        let Some(change) = self.session.apply(envelope) else {
            return (updates, effects);
        };
        // An agent inside the turn: its tool calls and questions are shown, its text,
        // thoughts and plan are not the answer's (the view keeps its text and usage apart).
        let answer = envelope.agent.is_none();
        match change {
            Change::TurnStarted {
                input_id,
                text,
                client,
                attachments,
                ..
            } => {
                let own = client.as_deref() == Some(self.client.as_str());
                if !own || self.replaying {
                    // Attachments by their labels: their bytes are the daemon's to hand out.
                    let labels = attachments.iter().map(|a| a.label() + "\n");
                    let shown: String = labels.chain([text.to_string()]).collect();
                    updates.push(json!({
                        "sessionUpdate": "user_message_chunk",
                        "content": {"type": "text", "text": shown},
                    }));
                }
                effects.push(Effect::TurnStarted {
                    input: input_id.to_string(),
                    own,
                });
            }
            // A replayed finished turn has no deltas: its text comes whole.
            Change::TextDelta(text)
            | Change::MessageCompleted {
                whole: Some(text), ..
            } => updates.push(chunk("agent_message_chunk", text)),
            Change::Event(AppEvent::ReasoningDelta { text }) if answer => {
                updates.push(chunk("agent_thought_chunk", text))
            }
            Change::Event(AppEvent::ToolCallStarted {
                call_id,
                tool,
                input,
            }) => {
                let mut call = json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": call_id,
                    "title": title(tool, input),
                    "kind": kind(tool),
                    "status": "pending",
                    "rawInput": input,
                });
                if let Some(path) = input_path(input, &self.cwd) {
                    call["locations"] = json!([{"path": path}]);
                }
                if let Some(diff) = proposed_diff(tool, input, &self.cwd) {
                    call["content"] = json!([diff]);
                }
                updates.push(call);
            }
            Change::ToolOutput {
                call_id,
                first: true,
                ..
            } => updates.push(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "in_progress",
            })),
            Change::Event(AppEvent::ToolCallFinished {
                call_id,
                status,
                output,
                exit_code,
                diff,
                ..
            }) => {
                let mut content = Vec::new();
                if let Some(diff) = diff.as_ref().filter(|d| !d.is_empty()) {
                    content.push(text_content(&format!("```diff\n{diff}\n```")));
                }
                if !output.is_empty() {
                    content.push(text_content(output));
                }
                let mut raw = json!({"output": output});
                if let Some(code) = exit_code {
                    raw["exitCode"] = json!(code);
                }
                updates.push(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "status": if *status == ToolCallStatus::Ok { "completed" } else { "failed" },
                    "content": content,
                    "rawOutput": raw,
                }));
            }
            Change::Event(AppEvent::ApprovalRequested {
                request_id,
                tool,
                summary,
                command,
                diff,
            }) => {
                let call_id = self.call_for(tool).unwrap_or_else(|| request_id.clone());
                let mut content = vec![text_content(summary)];
                if let Some(diff) = diff.as_ref().filter(|d| !d.is_empty()) {
                    content.push(text_content(&format!("```diff\n{diff}\n```")));
                }
                let tool_call = json!({
                    "toolCallId": call_id,
                    "title": command.as_ref().unwrap_or(summary),
                    "kind": kind(tool),
                    "status": "pending",
                    "content": content,
                });
                effects.push(Effect::Ask {
                    request_id: request_id.clone(),
                    tool_call,
                });
            }
            Change::ApprovalResolved { request_id, .. } => {
                effects.push(Effect::Answered(request_id.to_string()));
            }
            Change::Event(AppEvent::TodosUpdated { todos }) if answer => {
                let entries: Vec<Value> = todos
                    .iter()
                    .map(|t| {
                        json!({
                            "content": t.content,
                            "priority": "medium",
                            "status": match t.status {
                                TodoStatus::Pending => "pending",
                                TodoStatus::InProgress => "in_progress",
                                TodoStatus::Completed => "completed",
                            },
                        })
                    })
                    .collect();
                updates.push(json!({"sessionUpdate": "plan", "entries": entries}));
            }
            Change::UsageUpdated => {
                if let (Some(size), Some(used)) = (self.window, self.session.context_tokens()) {
                    let mut update = json!({
                        "sessionUpdate": "usage_update",
                        "used": used,
                        "size": size,
                    });
                    if self.session.turn_priced() {
                        update["cost"] = json!({
                            "amount": self.session.cost_usd().unwrap_or(0.0),
                            "currency": "USD",
                        });
                    }
                    updates.push(update);
                }
            }
            Change::Event(AppEvent::ModeChanged { mode, .. }) => updates.push(json!({
                "sessionUpdate": "current_mode_update",
                "currentModeId": mode.as_str(),
            })),
            Change::Event(AppEvent::Notice { message }) => {
                updates.push(chunk("agent_thought_chunk", &format!("{message}\n")));
            }
            Change::Event(AppEvent::Error { message }) => {
                updates.push(chunk(
                    "agent_message_chunk",
                    &format!("\n\n**error:** {message}\n"),
                ));
            }
            Change::TurnFinished {
                status, error, cut, ..
            } => {
                // Calls still open when a turn ends never finish now.
                for call in cut {
                    updates.push(json!({
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": call.call_id,
                        "status": "failed",
                    }));
                }
                effects.push(Effect::TurnFinished {
                    status,
                    error: error.map(str::to_string),
                });
            }
            Change::Event(AppEvent::HookRan {
                event,
                outcome,
                message,
                ..
            }) if *outcome != stepper_protocol::event::HookOutcome::Ok => {
                let said = message
                    .as_ref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default();
                updates.push(chunk(
                    "agent_thought_chunk",
                    &format!("{event} hook {outcome}{said}\n"),
                ));
            }
            Change::Event(AppEvent::LayerStarted {
                index,
                count,
                name,
                model,
                ..
            }) => {
                updates.push(chunk(
                    "agent_thought_chunk",
                    &format!("layer {index}/{count} {name} ({model})\n"),
                ));
            }
            Change::Event(AppEvent::SubagentStarted { name, task, .. }) => {
                let task = task.lines().next().unwrap_or("");
                updates.push(chunk(
                    "agent_thought_chunk",
                    &format!("subagent {name}: {task}\n"),
                ));
            }
            Change::Event(AppEvent::SubagentFinished {
                name,
                status: TurnStatus::Failed,
                error,
                ..
            }) => {
                let why = error.as_deref().unwrap_or_default();
                updates.push(chunk(
                    "agent_thought_chunk",
                    &format!("subagent {name} failed: {why}\n"),
                ));
            }
            Change::Event(event @ AppEvent::WorktreesMerged { .. }) => {
                let said = event.worktrees_summary().unwrap_or_default();
                updates.push(chunk(
                    "agent_thought_chunk",
                    &format!("worktrees: {said}\n"),
                ));
            }
            Change::Event(AppEvent::CompactionFinished {
                before_tokens,
                after_tokens,
                ..
            }) => {
                updates.push(chunk(
                    "agent_thought_chunk",
                    &format!("context compacted: {before_tokens} → {after_tokens} tokens\n"),
                ));
            }
            // Shown by the editor's own means (sessions, modes) or not at all: a message that
            // streamed, output past a call's first, an inner agent's thoughts and plan, …
            _ => {}
        }
        (updates, effects)
    }

    /// The open call an approval is about: the newest one of the tool the gate names (an
    /// approval follows its call's start; read-only calls are the only ones that run side
    /// by side).
    fn call_for(&self, gate_tool: &str) -> Option<String> {
        let same = |tool: &str| match gate_tool {
            "edit" => matches!(tool, "edit" | "multi_edit" | "write"),
            "read" => matches!(tool, "read" | "ls" | "glob" | "grep"),
            other => tool == other,
        };
        let calls = self.session.open_calls();
        calls
            .iter()
            .rev()
            .find(|c| same(&c.tool))
            .or(calls.last())
            .map(|c| c.call_id.clone())
    }
}

fn chunk(kind: &str, text: &str) -> Value {
    json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
}

fn text_content(text: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": text}})
}

/// ACP's tool kinds, for the editor's icons.
pub fn kind(tool: &str) -> &'static str {
    match tool {
        "read" | "ls" => "read",
        "edit" | "multi_edit" | "write" => "edit",
        "grep" | "glob" => "search",
        "bash" => "execute",
        "web_fetch" => "fetch",
        "todo_write" => "think",
        _ => "other",
    }
}

fn title(tool: &str, input: &Value) -> String {
    let field = |name: &str| input.get(name).and_then(Value::as_str);
    match tool {
        "bash" => field("command").unwrap_or("bash").to_string(),
        "read" | "ls" | "edit" | "multi_edit" | "write" => {
            let verb = match tool {
                "read" => "Read",
                "ls" => "List",
                "write" => "Write",
                _ => "Edit",
            };
            format!("{verb} {}", field("path").unwrap_or("?"))
        }
        "grep" | "glob" => format!("{tool} {}", field("pattern").unwrap_or("")),
        "web_fetch" => format!("Fetch {}", field("url").unwrap_or("")),
        "todo_write" => "Update the plan".into(),
        other => other.to_string(),
    }
}

fn absolute(path: &str, cwd: &str) -> String {
    let p = Path::new(path);
    if p.is_absolute() {
        path.to_string()
    } else {
        Path::new(cwd).join(p).display().to_string()
    }
}

fn input_path(input: &Value, cwd: &str) -> Option<String> {
    let path = input.get("path").and_then(Value::as_str)?;
    Some(absolute(path, cwd))
}

/// The change an edit proposes, as ACP's `diff` content: the editor shows it before and
/// while it is approved.
fn proposed_diff(tool: &str, input: &Value, cwd: &str) -> Option<Value> {
    let path = input_path(input, cwd)?;
    let field = |name: &str| input.get(name).and_then(Value::as_str);
    match tool {
        "edit" => Some(json!({
            "type": "diff",
            "path": path,
            "oldText": field("old_string")?,
            "newText": field("new_string")?,
        })),
        "write" => Some(json!({
            "type": "diff",
            "path": path,
            "oldText": Value::Null,
            "newText": field("content")?,
        })),
        _ => None,
    }
}

/// `ms` since the epoch as ISO 8601 in UTC (`2026-12-03T14:22:15Z`).
pub fn iso8601(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A permission mode as ACP shows it.
pub fn modes(current: stepper_protocol::PermissionMode) -> Value {
    use stepper_protocol::PermissionMode as M;
    let describe = |m: M| match m {
        M::Default => (
            "Default",
            "Ask before edits and commands that are not read-only",
        ),
        M::AcceptEdits => (
            "Accept edits",
            "Edits run without asking; commands still ask",
        ),
        M::Plan => ("Plan", "Read-only: nothing is changed"),
        M::Auto => ("Auto", "Nothing asks; deny rules still hold"),
    };
    let available: Vec<Value> = M::ALL
        .into_iter()
        .map(|m| {
            let (name, description) = describe(m);
            json!({"id": m.as_str(), "name": name, "description": description})
        })
        .collect();
    json!({"currentModeId": current.as_str(), "availableModes": available})
}

/// The choices of `session/request_permission`; the answer names one by its id.
/// The question whether to trust a folder, as a permission request's tool call: what its
/// files ask for that only trust gives.
pub fn trust_question(folder: &str, ignored: &[String]) -> Value {
    let mut text = format!(
        "{folder} is a folder you have not trusted. Its files ask for what only trust gives; \
         trusting lets them run code and widen permissions, as your own settings do. Until \
         then they are left out (deny rules and stricter modes still apply):"
    );
    for item in ignored {
        text.push_str("\n- ");
        text.push_str(item);
    }
    json!({
        "toolCallId": "stepper-trust",
        "title": format!("Trust {folder}?"),
        "kind": "other",
        "status": "pending",
        "content": [text_content(&text)],
    })
}

/// The answers to [`trust_question`]: both remembered, in the user's own config.
pub fn trust_options() -> Value {
    json!([
        {"optionId": "trust", "name": "Trust this folder", "kind": "allow_always"},
        {"optionId": "untrusted", "name": "Don't trust it", "kind": "reject_always"},
    ])
}

pub fn permission_options() -> Value {
    json!([
        {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "always", "name": "Allow always (this session)", "kind": "allow_always"},
        {"optionId": "deny", "name": "Reject", "kind": "reject_once"},
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use stepper_protocol::TurnStatus;

    /// Feeds `event` to `view` as the session's next envelope, of the answering agent.
    fn feed(view: &mut View, event: AppEvent) -> (Vec<Value>, Vec<Effect>) {
        view.apply(&EventEnvelope {
            session_id: "s".into(),
            seq: view.session.last_seq() + 1,
            at: 0,
            turn: Some(1),
            agent: None,
            event,
        })
    }

    #[test]
    fn the_trust_question_lists_what_trust_gives_and_both_answers_are_remembered() {
        let asked = trust_question("/src/x", &[".mcp.json: MCP servers (db)".to_string()]);
        assert_eq!(asked["title"], "Trust /src/x?");
        assert_eq!(asked["toolCallId"], "stepper-trust");
        let text = asked["content"][0]["content"]["text"].as_str().unwrap();
        assert!(text.contains("- .mcp.json: MCP servers (db)"), "{text}");
        let options = trust_options();
        let kinds: Vec<&str> = options
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["allow_always", "reject_always"]);
    }

    #[test]
    fn a_replayed_message_comes_whole_and_a_streamed_one_once() {
        let mut view = View::new("/p", Some(1000), "me");
        let (u, _) = feed(
            &mut view,
            AppEvent::MessageCompleted {
                text: "whole".into(),
                stop_reason: None,
            },
        );
        assert_eq!(u[0]["content"]["text"], "whole");
        let (u, _) = feed(&mut view, AppEvent::TextDelta { text: "a".into() });
        assert_eq!(u[0]["sessionUpdate"], "agent_message_chunk");
        let (u, _) = feed(
            &mut view,
            AppEvent::MessageCompleted {
                text: "a".into(),
                stop_reason: None,
            },
        );
        assert!(u.is_empty(), "{u:?}");
    }

    #[test]
    fn an_approval_names_its_call_and_a_turn_end_fails_open_calls() {
        let mut view = View::new("/p", None, "me");
        let (u, _) = feed(
            &mut view,
            AppEvent::ToolCallStarted {
                call_id: "c1".into(),
                tool: "write".into(),
                input: json!({"path": "a.txt", "content": "hi"}),
            },
        );
        assert_eq!(u[0]["kind"], "edit");
        assert_eq!(u[0]["locations"][0]["path"], "/p/a.txt");
        assert_eq!(u[0]["content"][0]["newText"], "hi");
        let (_, effects) = feed(
            &mut view,
            AppEvent::ApprovalRequested {
                request_id: "r1".into(),
                tool: "edit".into(),
                summary: "write a.txt".into(),
                command: Some("/p/a.txt".into()),
                diff: None,
            },
        );
        let Effect::Ask { tool_call, .. } = &effects[0] else {
            panic!("{effects:?}")
        };
        assert_eq!(tool_call["toolCallId"], "c1");
        assert_eq!(view.session.open_calls().len(), 1);
        let (u, effects) = feed(
            &mut view,
            AppEvent::TurnFinished {
                status: TurnStatus::Interrupted,
                error: None,
                error_kind: None,
            },
        );
        assert_eq!(u[0]["status"], "failed");
        assert_eq!(
            effects,
            [Effect::TurnFinished {
                status: TurnStatus::Interrupted,
                error: None
            }]
        );
    }

    #[test]
    fn own_inputs_are_not_echoed() {
        let mut view = View::new("/p", None, "stepper acp 7");
        feed(
            &mut view,
            AppEvent::InputQueued {
                attachments: Vec::new(),
                input_id: "i1".into(),
                text: "hello".into(),
                client: Some("stepper acp 7".into()),
            },
        );
        let started = |id: &str| AppEvent::TurnStarted {
            attachments: Vec::new(),
            input_id: id.into(),
            text: "hello".into(),
            model: "m".into(),
        };
        assert!(feed(&mut view, started("i1")).0.is_empty());
        assert_eq!(
            feed(&mut view, started("i2")).0[0]["sessionUpdate"],
            "user_message_chunk"
        );
    }

    #[test]
    fn anothers_input_shows_its_attachments_by_label() {
        let mut view = View::new("/p", None, "stepper acp 7");
        let shot = stepper_protocol::Attachment {
            kind: stepper_protocol::AttachmentKind::Image,
            media_type: "image/png".into(),
            name: "shot.png".into(),
            size: 120 * 1024,
            sha256: "ab".into(),
            width: None,
            height: None,
            pages: None,
        };
        let (updates, _) = feed(
            &mut view,
            AppEvent::TurnStarted {
                attachments: vec![shot],
                input_id: "i1".into(),
                text: "what is wrong here?".into(),
                model: "m".into(),
            },
        );
        assert_eq!(
            updates[0]["content"]["text"],
            "[image: shot.png 120 KB]\nwhat is wrong here?"
        );
    }

    #[test]
    fn iso_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601(1_796_102_226_291), "2026-12-01T05:17:06Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00Z");
    }
}
