//! Each session's transcript in Claude Code's format, for hooks written for Claude Code: its
//! path is their `transcript_path`. One JSON object a line — `type` `user` or `assistant`,
//! `message` in Anthropic's message shape, `uuid`, `parentUuid`, `sessionId`, `timestamp`,
//! `cwd` — kept at `<data>/transcripts/<session-id>.jsonl`. Each subagent (a worker or a
//! dispatched agent) has its own beside it, as Claude Code keeps them:
//! `<session-id>/subagents/agent-<id>.jsonl`, its lines marked `isSidechain` and `agentId`.
//!
//! The session's log writer appends to it after a batch is committed and before the batch
//! is published (persist, this, then publish): a client that saw a turn end, or a hook
//! that runs after a flush of the log (every hook run flushes it first), finds the
//! transcript holding it. It is written from the agents' events: the prompt (a subagent's
//! task), the replies, the tool calls and their results. The events are what is written, so it holds what the store
//! does and no more; a transcript that cannot be written is logged, never a turn's failure.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use stepper_engine::dialect::ToolDialect;
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
            subagents: HashMap::new(),
        }
    }

    /// A session deleted takes its transcripts with it.
    pub async fn remove(&self, session_id: &str) {
        let main = self.path(session_id);
        let removed = [
            tokio::fs::remove_file(&main).await,
            tokio::fs::remove_dir_all(main.with_extension("")).await,
        ];
        for result in removed {
            match result {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(session = %session_id, error = %e, "cannot remove the session's transcript");
                }
            }
        }
    }
}

/// The transcript of subagent `agent_id` beside the session's `main` one, where Claude Code
/// keeps a subagent's: `<session-id>/subagents/agent-<id>.jsonl`.
pub fn agent_transcript(main: &Path, agent_id: &str) -> PathBuf {
    let id = agent_id.strip_prefix("agent-").unwrap_or(agent_id);
    main.with_extension("")
        .join("subagents")
        .join(format!("agent-{id}.jsonl"))
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
    /// The subagents started in this daemon's life, each with its last line's `uuid`.
    subagents: HashMap<String, Option<String>>,
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
        // By file, in order: the session's, then each subagent's.
        let mut texts: Vec<(PathBuf, String)> = Vec::new();
        for envelope in events {
            if let Some((path, line)) = self.line(envelope) {
                let at = match texts.iter().position(|(p, _)| *p == path) {
                    Some(at) => at,
                    None => {
                        texts.push((path, String::new()));
                        texts.len() - 1
                    }
                };
                texts[at].1.push_str(&line.to_string());
                texts[at].1.push('\n');
            }
        }
        for (path, text) in texts {
            if let Err(e) = append(&path, &text).await {
                tracing::warn!(session = %self.session_id, path = %path.display(), error = %e, "cannot write the session's transcript");
            }
        }
    }

    /// The transcript line of one event and the file it goes to, if it has one: the main
    /// agent's conversation in the session's, a subagent's in its own (layers before the
    /// last have none: Claude Code has no such thing).
    fn line(&mut self, envelope: &EventEnvelope) -> Option<(PathBuf, Value)> {
        if let AppEvent::SubagentStarted { agent_id, task, .. } = &envelope.event {
            self.subagents.insert(agent_id.clone(), None);
            let message = json!({"role": "user", "content": task});
            return Some(self.chained(Some(agent_id), envelope.at, "user", message));
        }
        if let Some(agent) = &envelope.agent
            && !self.subagents.contains_key(agent)
        {
            return None;
        }
        let (kind, message) = match &envelope.event {
            AppEvent::TurnStarted {
                text,
                model,
                attachments,
                ..
            } => {
                self.model = model.clone();
                if attachments.is_empty() {
                    ("user", json!({"role": "user", "content": text}))
                } else {
                    // Named, not copied: the bytes stay in the session's store
                    // (`session/attachment`), not in a file beside it.
                    let mut content: Vec<Value> = attachments
                        .iter()
                        .map(|a| json!({"type": "text", "text": a.label()}))
                        .collect();
                    content.push(json!({"type": "text", "text": text}));
                    ("user", json!({"role": "user", "content": content}))
                }
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
                        "name": claude_name(tool),
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
        let agent = envelope.agent.as_deref();
        Some(self.chained(agent, envelope.at, kind, message))
    }

    /// A line of `agent`'s transcript (the session's own for `None`), chained to its last.
    fn chained(
        &mut self,
        agent: Option<&str>,
        at: i64,
        kind: &str,
        message: Value,
    ) -> (PathBuf, Value) {
        let uuid = uuid::Uuid::now_v7().to_string();
        let last = match agent {
            Some(id) => self.subagents.entry(id.to_string()).or_default(),
            None => &mut self.last_uuid,
        };
        let parent = last.replace(uuid.clone());
        let timestamp = chrono::DateTime::from_timestamp_millis(at)
            .unwrap_or_default()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let mut line = json!({
            "parentUuid": parent,
            "isSidechain": agent.is_some(),
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": env!("CARGO_PKG_VERSION"),
            "type": kind,
            "message": message,
            "uuid": uuid,
            "timestamp": timestamp,
        });
        let path = match agent {
            Some(id) => {
                line["agentId"] = json!(id);
                agent_transcript(&self.path, id)
            }
            None => self.path.clone(),
        };
        (path, line)
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

async fn append(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await?;
    file.write_all(text.as_bytes()).await?;
    file.flush().await
}

/// The `uuid` of a transcript's last line, if it has one.
async fn last_uuid(path: &Path) -> Option<String> {
    let text = tokio::fs::read_to_string(path).await.ok()?;
    let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let line: Value = serde_json::from_str(last).ok()?;
    line.get("uuid")?.as_str().map(str::to_string)
}

/// Claude Code's name of a stepper tool (`bash` → `Bash`); MCP tools keep theirs. A patch
/// (`apply_patch`, offered to OpenAI's models) is an `Edit` to hooks, so a hook that guards
/// edits guards it too.
pub fn claude_name(tool: &str) -> String {
    match tool {
        "skill" => "Skill".to_string(),
        "apply_patch" => "Edit".to_string(),
        other => match ToolDialect::Anthropic.name_of(other) {
            "tool" => other.to_string(),
            name => name.to_string(),
        },
    }
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
                    attachments: Vec::new(),
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
                        attachments: Vec::new(),
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
        // A subagent's conversation goes to its own transcript, chained from its task.
        let mut third = transcripts.writer("s", "/p");
        let sub = [
            envelope(
                6,
                None,
                AppEvent::SubagentStarted {
                    agent_id: "agent-7".into(),
                    name: "reviewer".into(),
                    model: "anthropic/m".into(),
                    task: "review it".into(),
                    layer: None,
                    worktree: None,
                },
            ),
            envelope(
                7,
                Some("agent-7"),
                AppEvent::MessageCompleted {
                    text: "looks fine".into(),
                    stop_reason: Some("end_turn".into()),
                },
            ),
        ];
        third.record(sub.iter()).await;
        let side = agent_transcript(&transcripts.path("s"), "agent-7");
        assert!(side.ends_with("s/subagents/agent-7.jsonl"), "{side:?}");
        let side: Vec<Value> = std::fs::read_to_string(&side)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(side.len(), 2);
        assert_eq!(side[0]["message"]["content"], "review it");
        assert_eq!(side[0]["isSidechain"], true);
        assert_eq!(side[0]["agentId"], "agent-7");
        assert_eq!(side[1]["parentUuid"], side[0]["uuid"]);
        assert_eq!(side[1]["message"]["content"][0]["text"], "looks fine");
        let main = std::fs::read_to_string(transcripts.path("s")).unwrap();
        assert_eq!(main.lines().count(), 3, "the session's own is untouched");
        transcripts.remove("s").await;
        assert!(!transcripts.path("s").exists());
        assert!(!dir.path().join("transcripts/s").exists());
    }
}
