//! Notes beside the turn: presence, model and mode, MCP servers, hooks, checkpoints,
//! compaction, merges, errors and notices — one line each in the transcript, and the few
//! states they change (who else is here, the model, the mode).
//!
//! *Notes beside the turn never split a streaming message in the TUI*: presence, model and mode
//! changes, steering and notices go before it — or, while a code block streams, after the message —
//! so its markdown renders whole.

use stepper_protocol::event::AppEvent;

use super::App;
use crate::theme;
use crate::transcript::Cell;
use crate::wrap::sanitize;

impl App {
    /// What the session says beside the turn: presence, model and mode, MCP servers,
    /// hooks, checkpoints, compaction, merges, errors and notices.
    pub(super) fn note(&mut self, seq: u64, event: &AppEvent) {
        match event {
            AppEvent::SessionCreated { cwd, model, .. } => {
                self.model = sanitize(model);
                self.push(Cell::note(
                    "•",
                    format!("session started in {cwd} · {model}"),
                    theme::dim(),
                ));
            }
            AppEvent::Steered { text, by, .. } => {
                self.push_aside(Cell::note(
                    "↳",
                    format!("steered: {text}{}", self.by_suffix(by.as_deref())),
                    theme::dim(),
                ));
            }
            AppEvent::CheckpointCreated { files } => {
                let s = if *files == 1 { "" } else { "s" };
                self.push(Cell::note(
                    "⛁",
                    format!("checkpoint: {files} file{s}"),
                    theme::dim(),
                ));
            }
            AppEvent::Rewound {
                turn,
                files,
                conversation,
            } => {
                let mut text = format!("rewound to before turn {turn}");
                if *files > 0 {
                    text.push_str(&format!(
                        " · {files} file{} restored",
                        if *files == 1 { "" } else { "s" }
                    ));
                }
                if *conversation {
                    text.push_str(" · conversation cut");
                }
                self.push(Cell::note("↺", text, theme::warning()));
            }
            AppEvent::ClientAttached { client, kind, .. } if *client != self.me => {
                if seq > self.presence_after && !self.others.contains(client) {
                    self.others.push(client.clone());
                }
                let name = self.client_name(client);
                self.push_aside(Cell::note(
                    "•",
                    format!("{name} attached ({kind})"),
                    theme::dim(),
                ));
            }
            AppEvent::ClientDetached { client } if *client != self.me => {
                let name = self.client_name(client);
                if seq > self.presence_after {
                    self.others.retain(|c| c != client);
                }
                self.push_aside(Cell::note("•", format!("{name} detached"), theme::dim()));
            }
            AppEvent::ModelChanged { model, by } => {
                self.push_aside(Cell::note(
                    "⚙",
                    format!("model → {model}{}", self.by_suffix(by.as_deref())),
                    theme::dim(),
                ));
                self.model = model.clone();
            }
            AppEvent::ModeChanged { mode, by } => {
                // This client's own change shows in the status line; another's is news.
                if by.as_deref() != Some(self.me.as_str()) {
                    self.push_aside(Cell::note(
                        "⚙",
                        format!("mode → {mode}{}", self.by_suffix(by.as_deref())),
                        theme::dim(),
                    ));
                }
                self.mode = *mode;
                self.mode_asked = None;
            }
            AppEvent::McpServerStatus {
                server,
                status,
                reason,
                tools,
            } => {
                use stepper_protocol::methods::McpStatus;
                let server = sanitize(server);
                match status {
                    McpStatus::Failed | McpStatus::NeedsLogin => {
                        self.mcp_failed.insert(server.clone());
                        let why = reason.as_deref().map(sanitize).unwrap_or_default();
                        self.push(Cell::note(
                            "✗",
                            format!("MCP server {server}: {why}"),
                            theme::error(),
                        ));
                    }
                    McpStatus::Connected if self.mcp_failed.remove(&server) => {
                        let tools = tools.map(|n| format!(" ({n} tools)")).unwrap_or_default();
                        self.push(Cell::note(
                            "✓",
                            format!("MCP server {server} connected{tools}"),
                            theme::ok(),
                        ));
                    }
                    _ => {}
                }
            }
            AppEvent::ElicitationResolved {
                request_id,
                action,
                by,
            } => {
                let server = self
                    .elicits
                    .iter()
                    .find(|e| e.request_id == *request_id)
                    .map(|e| e.server.clone());
                self.elicits.retain(|e| e.request_id != *request_id);
                let (glyph, verb, style) = match action {
                    stepper_protocol::ElicitAction::Accept => ("✓", "answered", theme::ok()),
                    stepper_protocol::ElicitAction::Decline => ("✗", "declined", theme::error()),
                    stepper_protocol::ElicitAction::Cancel => ("•", "dismissed", theme::dim()),
                };
                let of = server
                    .map(|s| format!(" {s}'s question"))
                    .unwrap_or_default();
                self.push(Cell::note(
                    glyph,
                    format!("{verb}{of}{}", self.by_suffix(by.as_deref())),
                    style,
                ));
            }
            AppEvent::Error { message } => {
                self.push(Cell::note("✗", message.clone(), theme::error()))
            }
            AppEvent::Notice { message } => {
                self.push_aside(Cell::note("ℹ", message.clone(), theme::warning()))
            }
            AppEvent::WorktreesMerged {
                conflict, error, ..
            } => {
                let troubled = conflict.is_some() || error.is_some();
                let text = sanitize(&event.worktrees_summary().unwrap_or_default());
                let style = if troubled {
                    theme::warning()
                } else {
                    theme::dim()
                };
                self.push(Cell::note("⎇", text, style));
            }
            // A hook that did its work quietly is not news; one that blocked, failed or hung is.
            AppEvent::HookRan {
                event,
                command,
                outcome,
                duration_ms,
                message,
            } if *outcome != stepper_protocol::event::HookOutcome::Ok || message.is_some() => {
                let said = message
                    .as_ref()
                    .map(|m| format!(": {}", sanitize(m)))
                    .unwrap_or_default();
                let line = format!(
                    "{} hook {} ({}, {duration_ms} ms){said}",
                    sanitize(event.as_str()),
                    sanitize(outcome.as_str()),
                    sanitize(command)
                );
                let style = if *outcome == stepper_protocol::event::HookOutcome::Ok {
                    theme::dim()
                } else {
                    theme::warning()
                };
                self.push_aside(Cell::note("⚓", line, style));
            }
            AppEvent::CompactionStarted {
                before_tokens,
                manual,
            } => {
                let why = if *manual {
                    "asked"
                } else {
                    "the context is full"
                };
                self.push_aside(Cell::note(
                    "⇲",
                    format!("compacting the context ({before_tokens} tokens; {why})…"),
                    theme::dim(),
                ));
            }
            AppEvent::CompactionFinished {
                before_tokens,
                after_tokens,
                pruned,
                summarized,
                error,
            } => {
                let line = match error {
                    Some(e) => format!("compaction failed: {}", sanitize(e)),
                    None => format!(
                        "context compacted: {before_tokens} → {after_tokens} tokens \
                         ({pruned} tool outputs pruned, {summarized} messages summarised)"
                    ),
                };
                self.push_aside(Cell::note("⇲", line, theme::dim()));
            }
            // The rest the view folded (text, usage, the turn's start and end, answers), or
            // an event of a newer daemon.
            _ => {}
        }
    }

    /// Who did it, after what was done (free text, so in brackets): " (by alice)".
    pub(super) fn by_suffix(&self, by: Option<&str>) -> String {
        by.map(|b| format!(" (by {})", sanitize(&self.client_name(b))))
            .unwrap_or_default()
    }

    /// A client as the transcript names it: without the pid after its name, unless another
    /// client attached now has the same name (two terminals of `stepper attach`).
    fn client_name(&self, name: &str) -> String {
        let base = without_pid(name);
        let namesakes = std::iter::once(&self.me)
            .chain(&self.others)
            .filter(|n| *n != name && without_pid(n) == base)
            .count();
        if namesakes > 0 {
            name.to_string()
        } else {
            base.to_string()
        }
    }
}

/// A client's name without the pid the CLI puts after it (`stepper attach 30039`).
fn without_pid(name: &str) -> &str {
    match name.rsplit_once(' ') {
        Some((base, pid)) if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => name,
    }
}
