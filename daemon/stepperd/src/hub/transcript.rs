//! Each session's transcript in Claude Code's format, for hooks written for Claude Code: its
//! path is their `transcript_path`. One JSON object a line — `type` `user` or `assistant`,
//! `message` in Anthropic's message shape, `uuid`, `parentUuid`, `sessionId`, `timestamp`,
//! `cwd` — kept at `<data>/transcripts/<session-id>.jsonl`.
//!
//! The session's log writer appends to it after a batch is committed (persist, then
//! publish, then this), from the main agent's events: the prompt, the replies, the tool
//! calls and their results. The events are what is written, so it holds what the store
//! does and no more; a transcript that cannot be written is logged, never a turn's failure.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use stepper_protocol::{AppEvent, EventEnvelope, ToolCallStatus};
use tokio::io::AsyncWriteExt;

/// Where the daemon keeps its sessions' transcripts.
#[derive(Debug, Clone)]
pub struct Transcripts {
    dir: PathBuf,
}

impl Transcripts {
    pub fn new(dir: PathBuf) -> Transcripts {
        Transcripts { dir }
    }

    /// The transcript of `session_id` (it may not exist yet: a session that has not had a
    /// turn has none).
    pub fn path(&self, session_id: &str) -> PathBuf {
        self.dir.join(format!("{session_id}.jsonl"))
    }

    /// The writer of one session's transcript.
    pub fn writer(&self, session_id: &str, cwd: &str) -> TranscriptWriter {
        TranscriptWriter {
            path: self.path(session_id),
            session_id: session_id.to_string(),
            cwd: cwd.to_string(),
            last_uuid: None,
            resumed: false,
            model: String::new(),
        }
    }

    /// A session deleted takes its transcript with it.
    pub async fn remove(&self, session_id: &str) {
        match tokio::fs::remove_file(self.path(session_id)).await {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(session = %session_id, error = %e, "cannot remove the session's transcript");
            }
        }
    }
}

/// Appends one session's committed events to its transcript, each line chained to the one
/// before by `parentUuid`, as Claude Code chains them.
pub struct TranscriptWriter {
    path: PathBuf,
    session_id: String,
    cwd: String,
    last_uuid: Option<String>,
    /// Whether the last line of an earlier daemon's writing was read (for `parentUuid`).
    resumed: bool,
    /// The model of the running turn, which Claude Code names in each assistant message.
    model: String,
}

impl TranscriptWriter {
    /// Append what of `events` a transcript holds. A failure is logged and the rest of the
    /// session goes on: hooks then read what was written before.
    pub async fn record<'a>(&mut self, events: impl Iterator<Item = &'a EventEnvelope>) {
        if !self.resumed {
            // The line the first one follows: the last an earlier daemon wrote, if any.
            self.resumed = true;
            self.last_uuid = last_uuid(&self.path).await;
        }
        let mut text = String::new();
        for envelope in events {
            if let Some(line) = self.line(envelope) {
                text.push_str(&line.to_string());
                text.push('\n');
            }
        }
        if text.is_empty() {
            return;
        }
        if let Err(e) = self.append(&text).await {
            tracing::warn!(session = %self.session_id, path = %self.path.display(), error = %e, "cannot write the session's transcript");
        }
    }

    async fn append(&mut self, text: &str) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            tokio::fs::create_dir_all(dir).await?;
        }
        let mut file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .await?;
        file.write_all(text.as_bytes()).await?;
        file.flush().await
    }

    /// The transcript line of one event, if it has one: only the main agent's
    /// conversation (a subagent's is its own in Claude Code too).
    fn line(&mut self, envelope: &EventEnvelope) -> Option<Value> {
        if envelope.agent.is_some() {
            return None;
        }
        let (kind, message) = match &envelope.event {
            AppEvent::TurnStarted { text, model, .. } => {
                self.model = model.clone();
                ("user", json!({"role": "user", "content": text}))
            }
            AppEvent::MessageCompleted { text, stop_reason } if !text.is_empty() => (
                "assistant",
                self.assistant(
                    json!([{"type": "text", "text": text}]),
                    stop_reason.as_deref(),
                ),
            ),
            AppEvent::ToolCallStarted {
                call_id,
                tool,
                input,
            } => (
                "assistant",
                self.assistant(
                    json!([{
                        "type": "tool_use",
                        "id": call_id,
                        "name": super::hooks::claude_name(tool),
                        "input": input,
                    }]),
                    Some("tool_use"),
                ),
            ),
            AppEvent::ToolCallFinished {
                call_id,
                status,
                output,
                ..
            } => (
                "user",
                json!({"role": "user", "content": [{
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": output,
                    "is_error": *status != ToolCallStatus::Ok,
                }]}),
            ),
            _ => return None,
        };
        let uuid = uuid::Uuid::now_v7().to_string();
        let parent = self.last_uuid.replace(uuid.clone());
        let timestamp = chrono::DateTime::from_timestamp_millis(envelope.at)
            .unwrap_or_default()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        Some(json!({
            "parentUuid": parent,
            "isSidechain": false,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": env!("CARGO_PKG_VERSION"),
            "type": kind,
            "message": message,
            "uuid": uuid,
            "timestamp": timestamp,
        }))
    }

    fn assistant(&self, content: Value, stop_reason: Option<&str>) -> Value {
        json!({
            "id": format!("msg_{}", uuid::Uuid::now_v7().simple()),
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop_reason,
        })
    }
}

/// The `uuid` of a transcript's last line, if it has one.
async fn last_uuid(path: &Path) -> Option<String> {
    let text = tokio::fs::read_to_string(path).await.ok()?;
    let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let line: Value = serde_json::from_str(last).ok()?;
    line.get("uuid")?.as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(seq: u64, agent: Option<&str>, event: AppEvent) -> EventEnvelope {
        EventEnvelope {
            session_id: "s".into(),
            seq,
            at: 1_700_000_000_000,
            turn: Some(1),
            agent: agent.map(str::to_string),
            event,
        }
    }

    #[tokio::test]
    async fn lines_chain_and_survive_a_new_writer() {
        let dir = tempfile::tempdir().unwrap();
        let transcripts = Transcripts::new(dir.path().join("transcripts"));
        let mut writer = transcripts.writer("s", "/p");
        let events = [
            envelope(
                1,
                None,
                AppEvent::TurnStarted {
                    input_id: "i".into(),
                    text: "hello".into(),
                    model: "anthropic/m".into(),
                },
            ),
            envelope(2, None, AppEvent::TextDelta { text: "hi".into() }),
            envelope(
                3,
                Some("worker"),
                AppEvent::MessageCompleted {
                    text: "not mine".into(),
                    stop_reason: None,
                },
            ),
            envelope(
                4,
                None,
                AppEvent::MessageCompleted {
                    text: "hi there".into(),
                    stop_reason: Some("end_turn".into()),
                },
            ),
        ];
        writer.record(events.iter()).await;
        let mut again = transcripts.writer("s", "/p");
        again
            .record(
                [envelope(
                    5,
                    None,
                    AppEvent::TurnStarted {
                        input_id: "j".into(),
                        text: "more".into(),
                        model: "anthropic/m".into(),
                    },
                )]
                .iter(),
            )
            .await;
        let text = std::fs::read_to_string(transcripts.path("s")).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0]["type"], "user");
        assert_eq!(lines[0]["message"]["content"], "hello");
        assert_eq!(lines[0]["parentUuid"], Value::Null);
        assert_eq!(lines[1]["type"], "assistant");
        assert_eq!(lines[1]["message"]["content"][0]["text"], "hi there");
        assert_eq!(lines[1]["parentUuid"], lines[0]["uuid"]);
        assert_eq!(lines[2]["parentUuid"], lines[1]["uuid"]);
        assert_eq!(lines[2]["sessionId"], "s");
        assert_eq!(lines[0]["timestamp"], "2023-11-14T22:13:20.000Z");
        transcripts.remove("s").await;
        assert!(!transcripts.path("s").exists());
    }
}
