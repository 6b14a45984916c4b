//! `stepper ask`: one prompt, one turn, the answer on stdout. Scriptable: `--format json`
//! prints one object at the end, `stream-json` every event as a JSON line.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use stepper_protocol::client::{DaemonClient, EventStream};
use stepper_protocol::methods::{
    AskResult, MAX_INPUT_BYTES, SessionGet, SessionInterrupt, SessionList, SessionListParams,
    SessionParams, SessionSubmit, SessionSubmitParams, SessionSubmitResponse,
};
use stepper_protocol::view::{Change, SessionView};
use stepper_protocol::{AppEvent, PermissionMode, SandboxMode, TurnStatus};

use crate::connect::{connect_or_start, places};
use crate::exit::{self, ExitWith};
use crate::media::Media;
use crate::session::{self, client_env};

mod questions;
use questions::{Approval, answer_elicitation, answer_headless, ask_approval};

#[derive(Args)]
pub struct AskArgs {
    /// The model, as provider/model-id (e.g. anthropic/claude-sonnet-4-5).
    #[arg(long, short)]
    model: Option<String>,
    /// How to print the result.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Record the session's model exchanges to FILE (JSON lines), to play back later with
    /// --model replay/FILE.
    #[arg(long, value_name = "FILE")]
    record: Option<std::path::PathBuf>,
    /// Run tools without asking (permission mode `auto`; deny rules still hold).
    #[arg(long, short = 'y', conflicts_with = "mode")]
    yes: bool,
    /// The permission mode: default, accept-edits, plan or auto.
    #[arg(long)]
    mode: Option<PermissionMode>,
    /// The OS sandbox of a new session's commands: read-only, workspace-write or off (the
    /// settings' when absent).
    #[arg(long, value_name = "MODE")]
    sandbox: Option<SandboxMode>,
    /// Continue this session instead of starting one.
    #[arg(long, value_name = "ID", conflicts_with = "continue_last")]
    session: Option<String>,
    /// Continue the latest session started in this folder.
    #[arg(long = "continue", short = 'c')]
    continue_last: bool,
    /// Submit and leave at once, printing the session id; the turn runs on in the daemon.
    #[arg(long)]
    detach: bool,
    /// Instructions in place of stepper's own for a new session (the environment, memory
    /// files and layers still follow).
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["session", "continue_last"])]
    system_prompt: Option<String>,
    /// Instructions added after stepper's own for a new session.
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["session", "continue_last"])]
    append_system_prompt: Option<String>,
    /// Without a terminal, a tool call that needs approval is denied at once unless a
    /// client that can answer (`stepper attach`, an editor) is attached: with this flag it
    /// waits for one (or `stepper approve`), for up to SECS when given.
    #[arg(long, value_name = "SECS", num_args = 0..=1, require_equals = true)]
    wait_approval: Option<Option<u64>>,
    /// Print what each tool call returned (on stderr, with --format text), not only how it
    /// ended.
    #[arg(long, short)]
    verbose: bool,
    /// Show the model an image (PNG, JPEG, GIF, WebP) or a PDF, read from FILE; repeat for
    /// more. An `@path` word in the prompt that names one attaches it too (the word stays).
    #[arg(long, value_name = "FILE")]
    image: Vec<std::path::PathBuf>,
    /// The prompt; read from stdin when absent. An image or a PDF piped in beside a prompt
    /// goes with it, as --image does.
    prompt: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// The assistant's text as it streams.
    Text,
    /// One JSON object at the end: {sessionId, status, text, usage}.
    Json,
    /// Every event as one JSON line, as it happens.
    StreamJson,
}

/// The prompt, and an image or PDF piped in beside it (`stepper ask "what is this?" <
/// shot.png`).
fn read_prompt(arg: Option<String>) -> anyhow::Result<(String, Option<Media>)> {
    let (prompt, piped_media) = match arg {
        // Text piped in beside a prompt goes to the model with it, as `claude -p` and
        // `codex exec` do: `cat a.py | stepper ask "explain this"`.
        Some(p) => match piped_stdin()? {
            Some(Piped::Text(piped)) => (with_piped(&p, &piped), None),
            Some(Piped::Media(media)) => (p, Some(media)),
            None => (p, None),
        },
        None => {
            if std::io::stdin().is_terminal() {
                bail!("no prompt: give one as an argument (stepper ask \"...\") or pipe it in");
            }
            match read_stdin()? {
                Piped::Text(text) => (text, None),
                Piped::Media(media) => bail!(
                    "stdin holds {} and no prompt — say what to do with it: stepper ask \
                     \"what is this?\" < FILE",
                    match media.kind {
                        stepper_protocol::AttachmentKind::Document => "a PDF",
                        _ => "an image",
                    }
                ),
            }
        }
    };
    if prompt.trim().is_empty() {
        bail!("the prompt is empty: say what stepper should do");
    }
    Ok((prompt, piped_media))
}

/// What came on stdin.
enum Piped {
    Text(String),
    /// An image or a PDF, by its bytes.
    Media(Media),
}

/// stdin: an image or a PDF by its first bytes, else text, at most a little over what the
/// daemon takes (the caller then says it is too long); other binary data is refused with what
/// to do instead.
fn read_stdin() -> anyhow::Result<Piped> {
    let most = (MAX_INPUT_BYTES as u64).max(stepper_protocol::attachment::MAX_INPUT_BYTES);
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(most + 1)
        .read_to_end(&mut bytes)
        .context("reading stdin")?;
    if stepper_protocol::attachment::sniff(&bytes).is_some() {
        return Media::pasted_as("stdin", bytes).map(Piped::Media);
    }
    if bytes.contains(&0) {
        bail!(
            "stdin holds binary data, not text — stepper ask takes text, an image or a PDF \
             there: convert it, or put the file in the project and name it in the prompt"
        );
    }
    String::from_utf8(bytes).map(Piped::Text).map_err(|_| {
        anyhow::anyhow!(
            "stdin is not UTF-8 text — convert it (iconv -t UTF-8) or put the file in the \
             project and name it in the prompt"
        )
    })
}

/// What was piped into stdin, when it is a pipe or a file: not a terminal, and not an
/// inherited socket or device that may never end (a script's stdin left open).
fn piped_stdin() -> anyhow::Result<Option<Piped>> {
    if std::io::stdin().is_terminal() || !stdin_is_pipe_or_file() {
        return Ok(None);
    }
    Ok(match read_stdin()? {
        Piped::Text(text) if text.trim().is_empty() => None,
        piped => Some(piped),
    })
}

#[cfg(unix)]
fn stdin_is_pipe_or_file() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let Ok(fd) = std::io::stdin().as_fd().try_clone_to_owned() else {
        return false;
    };
    std::fs::File::from(fd)
        .metadata()
        .is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_file())
}

#[cfg(not(unix))]
fn stdin_is_pipe_or_file() -> bool {
    true
}

/// The prompt, then the piped text fenced and labelled (the fence longer than any run of
/// backticks in it, so the text cannot close it).
fn with_piped(prompt: &str, piped: &str) -> String {
    let longest = piped.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!(
        "{prompt}\n\nPiped to stdin:\n{fence}\n{}\n{fence}",
        piped.trim_end_matches('\n')
    )
}

/// How a tool call ended, for `ask`'s stderr: its status and exit code; when it failed, the
/// reason the model was given (its first line); with `verbose`, all it returned (up to
/// [`VERBOSE_LINES`] lines), indented under it.
fn call_outcome(
    status: stepper_protocol::ToolCallStatus,
    exit_code: Option<i32>,
    output: &str,
    verbose: bool,
) -> String {
    use stepper_protocol::ToolCallStatus;
    let mut said = format!("{status:?}");
    if let Some(c) = exit_code {
        said.push_str(&format!(" (exit {c})"));
    }
    let first = output.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if status != ToolCallStatus::Ok && !first.is_empty() && !verbose {
        said.push_str(": ");
        said.push_str(&shorten(first.trim(), 200));
    }
    if verbose && !output.trim().is_empty() {
        let lines: Vec<&str> = output.trim_end().lines().collect();
        for line in lines.iter().take(VERBOSE_LINES) {
            said.push_str("\n     ");
            said.push_str(line);
        }
        if lines.len() > VERBOSE_LINES {
            said.push_str(&format!(
                "\n     … {} more lines",
                lines.len() - VERBOSE_LINES
            ));
        }
    }
    said
}

/// The most lines of a tool call's output `ask --verbose` prints.
const VERBOSE_LINES: usize = 200;

fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    s.chars().take(n).collect::<String>() + "…"
}

#[cfg(unix)]
fn interrupt_signal() -> anyhow::Result<tokio::signal::unix::Signal> {
    use tokio::signal::unix::{SignalKind, signal};
    signal(SignalKind::interrupt()).context("listening for Ctrl-C")
}

#[cfg(not(unix))]
fn interrupt_signal() -> anyhow::Result<tokio::signal::windows::CtrlC> {
    tokio::signal::windows::ctrl_c().context("listening for Ctrl-C")
}

pub async fn run(args: AskArgs) -> anyhow::Result<ExitCode> {
    let (prompt, piped) = read_prompt(args.prompt.clone()).exit_with(exit::USAGE)?;
    // Checked here, before a session exists: a prompt over the limit would leave an empty
    // one behind (and one over the transport's limit would never reach the daemon).
    if prompt.len() > MAX_INPUT_BYTES {
        return Err(anyhow::anyhow!(
            "the prompt is {} bytes; the most stepperd takes is {MAX_INPUT_BYTES} bytes — put \
             long material in a file in the project and refer to it",
            prompt.len()
        ))
        .exit_with(exit::USAGE);
    }
    let cwd = crate::connect::working_dir()?;
    // The files are read and checked before connecting: a bad one is a usage error that
    // leaves nothing behind. Only the user's own words attach what they mention, not text
    // piped in beside them.
    let own_words = args.prompt.as_deref().unwrap_or(&prompt);
    let parts = crate::media::gather(&args.image, own_words, &cwd, piped).exit_with(exit::USAGE)?;
    let places = places()?;
    let client = connect_or_start(&places, "stepper ask")
        .await
        .exit_with(exit::DAEMON)?;
    // An undecided folder whose files ask for more than they get is asked about first, at a
    // terminal; then a project's MCP servers not approved yet.
    crate::trust::ask_once(&client, &cwd).await?;
    crate::mcp::ask_pending(&client, &cwd).await?;
    let (session_id, events, submitted) = submit(&client, &cwd, &args, prompt, parts).await?;
    if args.detach {
        // The turn runs on in the daemon; follow it later with --session.
        println!("{session_id}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut follow = Follow {
        client: &client,
        session_id: &session_id,
        args: &args,
        out: std::io::stdout().lock(),
        text: String::new(),
        headless: !std::io::stdin().is_terminal(),
        // Layers and workers are told on a terminal; a pipe gets the answer alone.
        progress: args.format == Format::Text && std::io::stderr().is_terminal(),
    };
    let ended = match follow.turn(events, &submitted.input_id).await? {
        Followed::Ended(ended) => ended,
        Followed::Left => return Ok(ExitCode::from(exit::INTERRUPTED)),
    };
    follow.finish(*ended)
}

/// The prompt submitted: to the session `--session` or `--continue` names (it keeps its
/// model and mode; its environment is refreshed from this client's), or with a new
/// session, in its first commit. The session, its events from before the prompt, and the
/// input's receipt.
async fn submit(
    client: &DaemonClient,
    cwd: &std::path::Path,
    args: &AskArgs,
    prompt: String,
    parts: Vec<stepper_protocol::InputPart>,
) -> anyhow::Result<(String, EventStream, SessionSubmitResponse)> {
    let existing = match (&args.session, args.continue_last) {
        (Some(id), _) => Some(session::resolve(client, id).await?),
        (None, true) => {
            let list = client
                .call::<SessionList>(SessionListParams {
                    cwd: Some(cwd.display().to_string()),
                    limit: Some(1),
                    cursor: None,
                })
                .await?;
            match list.sessions.into_iter().next() {
                Some(s) => Some(s.id),
                None => bail!(
                    "no session in {} to continue — start one without --continue",
                    cwd.display()
                ),
            }
        }
        (None, false) => None,
    };
    if let Some(id) = existing {
        let got = client
            .call::<SessionGet>(SessionParams {
                session_id: id.clone(),
            })
            .await?;
        let after_seq = got.session.last_seq;
        // Both at once: the subscription replays from `after_seq`, so it misses nothing the
        // submit starts, and the two round trips overlap.
        let (events, submitted) = tokio::join!(
            client.subscribe_events(&id, after_seq),
            client.call::<SessionSubmit>(SessionSubmitParams {
                parts,
                session_id: id.clone(),
                text: prompt,
                env: Some(client_env()),
            })
        );
        return Ok((id, events?, submitted?));
    }
    // The prompt goes with the session, in its first commit: nothing is left behind when
    // either fails, and a round trip and a commit are saved.
    let new = session::NewSession {
        model: args.model.clone(),
        mode: if args.yes {
            Some(PermissionMode::Auto)
        } else {
            args.mode
        },
        sandbox: args.sandbox,
        record: args
            .record
            .as_ref()
            .map(|r| cwd.join(r).display().to_string()),
        input: Some(prompt),
        input_parts: parts,
        system_prompt: args.system_prompt.clone(),
        append_system_prompt: args.append_system_prompt.clone(),
    };
    let created = session::create(client, cwd, new).await.map_err(|e| {
        let provider = exit::find::<stepper_protocol::client::ClientError>(&e)
            .and_then(|c| c.kind())
            == Some(stepper_protocol::error::ErrorKind::ProviderUnavailable);
        let code = if provider {
            exit::PROVIDER
        } else {
            exit::FAILED
        };
        anyhow::Error::new(exit::Coded { code, error: e })
    })?;
    let submitted = created
        .queued
        .context("the daemon did not queue the prompt — is it older than this client?")?;
    let id = created.session.id;
    let events = client.subscribe_events(&id, 0).await?;
    Ok((id, events, submitted))
}

/// Following the turn the prompt started.
struct Follow<'a> {
    client: &'a DaemonClient,
    session_id: &'a str,
    args: &'a AskArgs,
    out: std::io::StdoutLock<'static>,
    /// The answer: every message of the turn in a row, as it came.
    text: String,
    /// No terminal to ask at: approvals are answered as `--wait-approval` says.
    headless: bool,
    /// Layers, workers and subagents are told on stderr.
    progress: bool,
}

/// How following the turn ended.
enum Followed {
    Ended(Box<Ended>),
    /// Ctrl-C twice: the turn is left to stop in the daemon.
    Left,
}

/// The end of the turn.
struct Ended {
    status: TurnStatus,
    error: Option<String>,
    error_kind: Option<stepper_protocol::TurnErrorKind>,
    turn: stepper_protocol::view::TurnView,
}

impl Follow<'_> {
    /// The session's events until the turn of input `ours` ends; Ctrl-C interrupts it.
    async fn turn(&mut self, mut events: EventStream, ours: &str) -> anyhow::Result<Followed> {
        let session_id = self.session_id;
        let mut view = SessionView::default();
        let mut our_turn: Option<u32> = None;
        let mut interrupts = 0;
        // One listener for the whole turn, so no Ctrl-C falls between two waits.
        let mut ctrl_c = interrupt_signal()?;
        loop {
            let next = tokio::select! {
                n = events.next_raw() => n,
                _ = ctrl_c.recv() => {
                    interrupts += 1;
                    if interrupts > 1 {
                        eprintln!("\nstepper: left the turn to stop in the daemon (session {session_id})");
                        return Ok(Followed::Left);
                    }
                    eprintln!("\nstepper: interrupting… (Ctrl-C again to leave at once)");
                    let p = SessionParams { session_id: session_id.to_string() };
                    if let Err(e) = self.client.call::<SessionInterrupt>(p).await {
                        eprintln!("stepper: could not interrupt: {e}");
                    }
                    continue;
                }
            };
            let (envelope, raw) = match next {
                Some(Ok(e)) => e,
                Some(Err(e)) => {
                    return Err(e)
                        .context(format!(
                            "lost the daemon during the turn — continue with: stepper ask \
                             --session {session_id} \"...\" (or stepper attach {session_id})"
                        ))
                        .exit_with(exit::DAEMON);
                }
                None => {
                    return Err(anyhow::anyhow!(
                        "the daemon closed the session's event stream — continue with: stepper \
                         ask --session {session_id} \"...\" (or stepper attach {session_id})"
                    ))
                    .exit_with(exit::DAEMON);
                }
            };
            if self.args.format == Format::StreamJson {
                // Each event as the daemon committed it, not decoded and encoded again.
                writeln!(self.out, "{}", raw.get())?;
                self.out.flush()?;
            }
            let Some(change) = view.apply(&envelope) else {
                continue;
            };
            if let Change::TurnStarted { input_id, .. } = &change
                && *input_id == ours
            {
                our_turn = envelope.turn;
            }
            if our_turn.is_none() || envelope.turn != our_turn {
                continue;
            }
            if let Change::TurnFinished {
                status,
                error,
                error_kind,
                ..
            } = change
            {
                // The view saw the turn start (that is how it is ours): it has the turn.
                return Ok(Followed::Ended(Box::new(Ended {
                    status,
                    error: error.map(str::to_string),
                    error_kind,
                    turn: view.turn().cloned().unwrap_or_default(),
                })));
            }
            // An agent inside the turn (an earlier layer, a worker, a subagent): progress,
            // not the answer.
            let tag = envelope
                .agent
                .as_ref()
                .map(|a| format!("[{a}] "))
                .unwrap_or_default();
            self.show(change, &tag).await?;
        }
    }

    /// One change of the turn, as `ask` shows it: the answer on stdout, the rest on
    /// stderr; approvals and questions asked (or answered headless).
    async fn show(&mut self, change: Change<'_>, tag: &str) -> anyhow::Result<()> {
        let text_format = self.args.format == Format::Text;
        let progress = self.progress;
        match change {
            // The answer, streamed, or whole when it did not stream (a parallel layer's
            // joined results).
            Change::TextDelta(piece)
            | Change::MessageCompleted {
                whole: Some(piece), ..
            } => {
                if text_format {
                    self.out.write_all(piece.as_bytes())?;
                    self.out.flush()?;
                }
                self.text.push_str(piece);
            }
            Change::Event(AppEvent::LayerStarted {
                index,
                count,
                name,
                model,
                ..
            }) if progress => eprintln!("▸ layer {index}/{count} {name} ({model})"),
            Change::Event(AppEvent::LayerFinished {
                index,
                status: s,
                text: t,
                ..
            }) if progress => {
                let first = t.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                eprintln!("  ⎿ layer {index} {s:?}: {}", shorten(first, 160));
            }
            Change::Event(AppEvent::SubagentStarted { agent_id, task, .. }) if progress => {
                let first = task.lines().next().unwrap_or("");
                eprintln!("  ▸ {agent_id}: {}", shorten(first, 160));
            }
            Change::Event(merged @ AppEvent::WorktreesMerged { .. }) if progress => {
                eprintln!("  ⎇ {}", merged.worktrees_summary().unwrap_or_default());
            }
            Change::Event(AppEvent::SubagentFinished {
                agent_id,
                status: s,
                error: e,
                ..
            }) if progress => {
                let why = e.as_ref().map(|e| format!(": {e}")).unwrap_or_default();
                eprintln!("  ⎿ {agent_id} {s:?}{why}");
            }
            Change::Event(AppEvent::Error { message }) => eprintln!("stepper: {message}"),
            // On stderr whatever the format: notices are for the person (an untrusted
            // folder's, a memory import refused), and JSON goes to stdout.
            Change::Event(AppEvent::Notice { message }) => eprintln!("stepper: {message}"),
            Change::Event(AppEvent::ApprovalRequested {
                request_id,
                summary,
                command,
                diff,
                ..
            }) => {
                let approval = Approval {
                    session_id: self.session_id,
                    request_id,
                    summary,
                    command: command.as_deref(),
                    diff: diff.as_deref(),
                };
                if self.headless {
                    answer_headless(self.client, &approval, self.args.wait_approval).await;
                } else {
                    ask_approval(self.client, &approval).await;
                }
            }
            Change::Event(AppEvent::ElicitationRequested {
                request_id,
                server,
                message,
                schema,
            }) => {
                let session_id = self.session_id;
                answer_elicitation(self.client, session_id, request_id, server, message, schema)
                    .await;
            }
            Change::ApprovalResolved { decision, by, .. } if text_format => {
                eprintln!("stepper: {decision:?} by {}", by.unwrap_or("a client"));
            }
            Change::Event(AppEvent::ToolCallStarted { tool, input, .. }) if text_format => {
                eprintln!("{tag}⏺ {tool} {}", shorten(&input.to_string(), 200));
            }
            Change::Event(AppEvent::ToolCallFinished {
                status,
                exit_code,
                output,
                ..
            }) if text_format => {
                let outcome = call_outcome(*status, *exit_code, output, self.args.verbose);
                eprintln!("{tag}  ⎿ {outcome}");
            }
            _ => {}
        }
        Ok(())
    }

    /// The result as `--format` asks, the denied calls on stderr, and the exit code.
    fn finish(mut self, ended: Ended) -> anyhow::Result<ExitCode> {
        let Ended {
            status,
            error,
            error_kind,
            turn,
        } = ended;
        let session_id = self.session_id;
        let denials = turn.denials;
        match self.args.format {
            Format::Text => {
                if !self.text.is_empty() && !self.text.ends_with('\n') {
                    writeln!(self.out)?;
                }
            }
            Format::Json => {
                let result = AskResult {
                    session_id: session_id.to_string(),
                    status,
                    text: std::mem::take(&mut self.text),
                    usage: turn.usage,
                    cost_usd: turn.cost_usd,
                    error: error.clone(),
                    error_kind,
                    layers: turn.layers,
                    permission_denials: denials.clone(),
                };
                writeln!(self.out, "{}", serde_json::to_string(&result)?)?;
            }
            Format::StreamJson => {}
        }
        self.out.flush()?;
        if !denials.is_empty() {
            let s = if denials.len() == 1 { "" } else { "s" };
            eprintln!("stepper: {} tool call{s} denied:", denials.len());
            for d in &denials {
                let by =
                    d.by.as_deref()
                        .map(|b| format!(" (by {b})"))
                        .unwrap_or_default();
                eprintln!("  - {}{by}", d.summary);
            }
        }
        Ok(match status {
            TurnStatus::Completed if denials.is_empty() => ExitCode::SUCCESS,
            TurnStatus::Completed => ExitCode::from(exit::DENIED),
            TurnStatus::Interrupted => {
                // Why, when it was not the user's doing (the daemon was stopped).
                match &error {
                    Some(why) => eprintln!("stepper: {why} (session {session_id})"),
                    None => eprintln!("stepper: the turn was interrupted (session {session_id})"),
                }
                ExitCode::from(exit::INTERRUPTED)
            }
            TurnStatus::Failed => {
                eprintln!("stepper: {}", error.as_deref().unwrap_or("the turn failed"));
                match error_kind {
                    Some(stepper_protocol::TurnErrorKind::Provider) => {
                        ExitCode::from(exit::PROVIDER)
                    }
                    _ => ExitCode::from(exit::FAILED),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_call_says_why_and_verbose_says_all() {
        use stepper_protocol::ToolCallStatus;
        let why = "the command did not run: cargo: not found\nmore";
        assert_eq!(
            call_outcome(ToolCallStatus::Error, Some(127), why, false),
            "Error (exit 127): the command did not run: cargo: not found"
        );
        assert_eq!(
            call_outcome(ToolCallStatus::Ok, Some(0), "a\nb\n", false),
            "Ok (exit 0)"
        );
        assert_eq!(
            call_outcome(ToolCallStatus::Ok, None, "a\nb\n", true),
            "Ok\n     a\n     b"
        );
        let long = "x\n".repeat(VERBOSE_LINES + 5);
        assert!(call_outcome(ToolCallStatus::Ok, None, &long, true).ends_with("… 5 more lines"));
    }

    #[test]
    fn piped_text_is_fenced_after_the_prompt() {
        assert_eq!(
            with_piped("explain this", "def f():\n    return 1\n"),
            "explain this\n\nPiped to stdin:\n```\ndef f():\n    return 1\n```"
        );
        // Backticks in the text cannot close the fence.
        let fenced = with_piped("what is this", "````md\nx\n````");
        assert!(fenced.contains("`````\n````md"), "{fenced}");
    }
}
