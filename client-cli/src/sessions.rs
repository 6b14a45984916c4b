//! `stepper sessions`: what sessions exist, newest first.

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use stepper_protocol::SessionStatus;
use stepper_protocol::client::DaemonClient;
use stepper_protocol::event::RawEnvelope;
use stepper_protocol::methods::{
    SessionAttachment, SessionAttachmentParams, SessionDelete, SessionExport, SessionExportParams,
    SessionFork, SessionForkParams, SessionGet, SessionParams,
};
use stepper_protocol::methods::{SessionList, SessionListParams};
use stepper_protocol::{AppEvent, Attachment, AttachmentKind, EventEnvelope, SessionInfo};

use crate::connect::{connect_or_start, places};

#[derive(Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    command: Option<SessionsCommand>,
    /// Print JSON (an array of sessions) instead of a table.
    #[arg(long)]
    json: bool,
    /// Only sessions started in this directory.
    #[arg(long)]
    cwd: Option<String>,
    /// At most this many.
    #[arg(long, default_value_t = 50)]
    limit: u32,
}

#[derive(Subcommand)]
pub enum SessionsCommand {
    /// List sessions (the default).
    Ls,
    /// A session and its turns.
    Show { id: String },
    /// Delete a session and everything stored of it.
    Rm { id: String },
    /// Start a new session from another's history: the turns before TURN (all of them when
    /// absent). The project's files are left as they are. Prints the new session's id.
    Fork {
        id: String,
        /// Keep the turns before this one (as `sessions show` numbers them).
        #[arg(long)]
        turn: Option<u32>,
    },
    /// Print a session's events: every event as a JSON line, or a readable transcript.
    Export {
        id: String,
        #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
        format: ExportFormat,
    },
}

impl SessionsCommand {
    /// The session it names, if it names one.
    fn id_mut(&mut self) -> Option<&mut String> {
        match self {
            SessionsCommand::Ls => None,
            SessionsCommand::Show { id }
            | SessionsCommand::Rm { id }
            | SessionsCommand::Fork { id, .. }
            | SessionsCommand::Export { id, .. } => Some(id),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Jsonl,
    Markdown,
}

pub async fn run(args: SessionsArgs) -> anyhow::Result<ExitCode> {
    let client = connect_or_start(&places()?, "stepper sessions").await?;
    // The session a subcommand names: its id, or a unique prefix of it or of its short form.
    let mut command = args.command;
    if let Some(id) = command.as_mut().and_then(SessionsCommand::id_mut) {
        *id = crate::session::resolve(&client, id).await?;
    }
    match command {
        None | Some(SessionsCommand::Ls) => {}
        Some(SessionsCommand::Rm { id }) => {
            client
                .call::<SessionDelete>(SessionParams {
                    session_id: id.clone(),
                })
                .await?;
            println!("deleted session {id}");
            return Ok(ExitCode::SUCCESS);
        }
        Some(SessionsCommand::Fork { id, turn }) => {
            let from_turn = match turn {
                Some(t) => t,
                None => {
                    let info = client
                        .call::<SessionGet>(SessionParams {
                            session_id: id.clone(),
                        })
                        .await?;
                    // A running turn is not part of a fork yet.
                    let running = info.session.status == SessionStatus::Running;
                    info.session.turns + 1 - u32::from(running)
                }
            };
            let forked = client
                .call::<SessionFork>(SessionForkParams {
                    session_id: id,
                    from_turn,
                    title: None,
                })
                .await?;
            println!("{}", forked.session.id);
            return Ok(ExitCode::SUCCESS);
        }
        Some(SessionsCommand::Show { id }) => {
            let (session, events) = export_all(&client, &id).await?;
            print_show(&session, &events);
            return Ok(ExitCode::SUCCESS);
        }
        Some(SessionsCommand::Export {
            id,
            format: ExportFormat::Jsonl,
        }) => {
            // Each event as the daemon sent it, page by page: nothing held, nothing re-encoded.
            let mut out = std::io::stdout().lock();
            each_page(&client, &id, |_, page| {
                for e in page {
                    writeln!(out, "{}", e.get())?;
                }
                Ok(())
            })
            .await?;
            return Ok(ExitCode::SUCCESS);
        }
        Some(SessionsCommand::Export {
            id,
            format: ExportFormat::Markdown,
        }) => {
            let (session, events) = export_all(&client, &id).await?;
            let fetched = fetch_attachments(&client, &id, &events).await;
            let md = markdown(&session, &events, &fetched);
            write!(std::io::stdout().lock(), "{md}")?;
            return Ok(ExitCode::SUCCESS);
        }
    }
    let page = client
        .call::<SessionList>(SessionListParams {
            cwd: args.cwd,
            limit: Some(args.limit),
            cursor: None,
        })
        .await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&page.sessions)?);
        return Ok(ExitCode::SUCCESS);
    }
    if page.sessions.is_empty() {
        println!("no sessions yet — start one with: stepper ask \"...\"");
        return Ok(ExitCode::SUCCESS);
    }
    let now = now_ms();
    // Short ids: unique among the listed sessions, and any command takes them.
    let ids: Vec<&str> = page.sessions.iter().map(|s| s.id.as_str()).collect();
    let short = stepper_protocol::session::short_ids(&ids);
    let width = short.iter().map(String::len).max().unwrap_or(8).max(2);
    println!(
        "{:<width$}  {:<11}  {:>8}  {:<30}  CWD",
        "ID", "STATUS", "UPDATED", "TITLE"
    );
    for (s, short) in page.sessions.iter().zip(&short) {
        let status = match s.status {
            SessionStatus::Idle => "idle",
            SessionStatus::Running => "running",
            SessionStatus::Interrupted => "interrupted",
            SessionStatus::Failed => "failed",
        };
        let title = s.title.as_deref().unwrap_or("");
        println!(
            "{:<width$}  {:<11}  {:>8}  {:<30}  {}",
            short,
            status,
            ago(now - s.updated_at),
            truncate(title, 30),
            s.cwd
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn ago(ms: i64) -> String {
    let s = (ms / 1000).max(0);
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86400),
    }
}

fn truncate(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut t: String = s.chars().take(width - 1).collect();
    t.push('…');
    t
}

/// Hand every page of a session's events to `f`, in order; returns the session.
async fn each_page(
    client: &DaemonClient,
    id: &str,
    mut f: impl FnMut(&SessionInfo, Vec<RawEnvelope>) -> anyhow::Result<()>,
) -> anyhow::Result<SessionInfo> {
    let mut after = 0;
    loop {
        let page = client
            .call::<SessionExport>(SessionExportParams {
                session_id: id.into(),
                after_seq: after,
                limit: None,
            })
            .await?;
        f(&page.session, page.events)?;
        match page.next_after_seq {
            Some(next) => after = next,
            None => return Ok(page.session),
        }
    }
}

/// Every event of a session, decoded.
async fn export_all(
    client: &DaemonClient,
    id: &str,
) -> anyhow::Result<(SessionInfo, Vec<EventEnvelope>)> {
    let mut events = Vec::new();
    let session = each_page(client, id, |_, page| {
        for e in page {
            events.push(e.parse()?);
        }
        Ok(())
    })
    .await?;
    Ok((session, events))
}

/// Turns as (number, input, status, answer text).
fn turns(events: &[EventEnvelope]) -> Vec<(u32, String, String, String)> {
    let mut turns: Vec<(u32, String, String, String)> = Vec::new();
    for e in events {
        let Some(turn) = e.turn else { continue };
        match &e.event {
            AppEvent::TurnStarted { text, .. } => {
                turns.push((turn, text.clone(), "running".into(), String::new()))
            }
            // The answer is the turn's own agent's text, not its layers' or subagents'.
            AppEvent::TextDelta { text } if e.agent.is_none() => {
                if let Some(t) = turns.last_mut().filter(|t| t.0 == turn) {
                    t.3.push_str(text);
                }
            }
            AppEvent::TurnFinished { status, .. } => {
                if let Some(t) = turns.last_mut().filter(|t| t.0 == turn) {
                    t.2 = format!("{status:?}").to_lowercase();
                }
            }
            _ => {}
        }
    }
    turns
}

fn print_show(session: &SessionInfo, events: &[EventEnvelope]) {
    println!("session {}", session.id);
    println!("  title:   {}", session.title.as_deref().unwrap_or(""));
    println!("  folder:  {}", session.cwd);
    println!("  model:   {}", session.model);
    println!("  status:  {:?}", session.status);
    println!("  events:  {}", session.last_seq);
    for (n, input, status, _) in turns(events) {
        let first = input.lines().next().unwrap_or("");
        println!("  turn {n:>3}  {status:<11} {}", truncate(first, 70));
    }
}

/// The bytes of an attachment (base64), or why they could not be had, by sha256.
type Fetched = HashMap<String, Result<String, String>>;

/// The bytes of every attachment the inputs carried, each once (`session/attachment`); one
/// that cannot be had is kept with why, for the transcript to say so.
async fn fetch_attachments(client: &DaemonClient, id: &str, events: &[EventEnvelope]) -> Fetched {
    let mut fetched = Fetched::new();
    for e in events {
        let AppEvent::TurnStarted { attachments, .. } = &e.event else {
            continue;
        };
        for a in attachments {
            if fetched.contains_key(&a.sha256) {
                continue;
            }
            let got = client
                .call::<SessionAttachment>(SessionAttachmentParams {
                    session_id: id.to_string(),
                    sha256: a.sha256.clone(),
                })
                .await
                .map(|r| r.data)
                .map_err(|e| e.to_string());
            fetched.insert(a.sha256.clone(), got);
        }
    }
    fetched
}

/// An input's attachment in the transcript: an image shown, a PDF linked, both with their
/// bytes in a `data:` URI so the file stands alone; one whose bytes are missing named, with
/// why.
fn attachment_markdown(a: &Attachment, fetched: &Fetched) -> String {
    let name = a.name.replace('[', "\\[").replace(']', "\\]");
    match fetched.get(&a.sha256) {
        Some(Ok(data)) => {
            let bang = if a.kind == AttachmentKind::Image {
                "!"
            } else {
                ""
            };
            format!("{bang}[{name}](data:{};base64,{data})", a.media_type)
        }
        Some(Err(why)) => format!("{} _(not included: {why})_", a.label()),
        None => format!("{} _(not included)_", a.label()),
    }
}

/// A readable transcript: inputs (with their images and PDFs), answers, tool calls.
fn markdown(session: &SessionInfo, events: &[EventEnvelope], fetched: &Fetched) -> String {
    let mut md = format!(
        "# {}\n\n",
        session.title.as_deref().unwrap_or("stepper session")
    );
    md.push_str(&format!(
        "- session: `{}`\n- folder: `{}`\n- model: `{}`\n",
        session.id, session.cwd, session.model
    ));
    for e in events {
        match &e.event {
            AppEvent::TurnStarted {
                text, attachments, ..
            } => {
                md.push_str(&format!(
                    "\n## Turn {}\n\n**You:** {text}\n\n",
                    e.turn.unwrap_or(0)
                ));
                for a in attachments {
                    md.push_str(&attachment_markdown(a, fetched));
                    md.push_str("\n\n");
                }
            }
            AppEvent::MessageCompleted { text, .. } if !text.is_empty() => match &e.agent {
                Some(agent) => md.push_str(&format!("**{agent}:** {text}\n\n")),
                None => md.push_str(&format!("{text}\n\n")),
            },
            AppEvent::LayerStarted {
                index,
                count,
                name,
                model,
                ..
            } => md.push_str(&format!("### Layer {index}/{count}: {name} ({model})\n\n")),
            AppEvent::SubagentStarted {
                agent_id,
                name,
                task,
                ..
            } => md.push_str(&format!("#### {agent_id} ({name}): {task}\n\n")),
            AppEvent::ToolCallStarted { tool, input, .. } => {
                md.push_str(&format!(
                    "```{tool}\n{}\n```\n\n",
                    serde_json::to_string_pretty(input).unwrap_or_default()
                ));
            }
            AppEvent::TurnFinished { status, error, .. } => {
                md.push_str(&format!(
                    "_turn {:?}{}_\n",
                    status,
                    error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default()
                ));
            }
            _ => {}
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attachment(name: &str, kind: AttachmentKind, media_type: &str, sha: &str) -> Attachment {
        Attachment {
            kind,
            media_type: media_type.into(),
            name: name.into(),
            size: 120 * 1024,
            sha256: sha.into(),
            width: None,
            height: None,
            pages: None,
        }
    }

    #[test]
    fn an_inputs_images_and_pdfs_are_embedded_or_named() {
        let session = SessionInfo {
            id: "0198a3f2-7c1e-7d2a-9b1c-5e6f7a8b9c0d".into(),
            title: Some("the login page".into()),
            cwd: "/p".into(),
            model: "anthropic/claude-sonnet-4-5".into(),
            status: SessionStatus::Idle,
            created_at: 0,
            updated_at: 0,
            last_seq: 2,
            turns: 1,
        };
        let started = AppEvent::TurnStarted {
            input_id: "in-1".into(),
            text: "what is wrong here?".into(),
            model: "anthropic/claude-sonnet-4-5".into(),
            attachments: vec![
                attachment("shot [1].png", AttachmentKind::Image, "image/png", "aa"),
                attachment(
                    "spec.pdf",
                    AttachmentKind::Document,
                    "application/pdf",
                    "bb",
                ),
                attachment("gone.png", AttachmentKind::Image, "image/png", "cc"),
            ],
        };
        let events = [EventEnvelope {
            session_id: session.id.clone(),
            seq: 1,
            at: 0,
            turn: Some(1),
            agent: None,
            event: started,
        }];
        let fetched = Fetched::from([
            ("aa".to_string(), Ok("iVBORw0KGgo=".to_string())),
            ("bb".to_string(), Ok("JVBERi0=".to_string())),
            (
                "cc".to_string(),
                Err("no attachment cc in this session".to_string()),
            ),
        ]);
        insta::assert_snapshot!(markdown(&session, &events, &fetched), @r"
        # the login page

        - session: `0198a3f2-7c1e-7d2a-9b1c-5e6f7a8b9c0d`
        - folder: `/p`
        - model: `anthropic/claude-sonnet-4-5`

        ## Turn 1

        **You:** what is wrong here?

        ![shot \[1\].png](data:image/png;base64,iVBORw0KGgo=)

        [spec.pdf](data:application/pdf;base64,JVBERi0=)

        [image: gone.png 120 KB] _(not included: no attachment cc in this session)_
        ");
    }
}
