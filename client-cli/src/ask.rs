//! `stepper ask`: one prompt, one turn, the answer on stdout. Scriptable: `--format json`
//! prints one object at the end, `stream-json` every event as a JSON line.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use stepper_protocol::methods::{
    AskResult, SessionCreate, SessionCreateParams, SessionInterrupt, SessionParams, SessionSubmit,
    SessionSubmitParams,
};
use stepper_protocol::session::Env;
use stepper_protocol::{AppEvent, TurnStatus, Usage};

use crate::connect::{connect_or_start, places};

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
    /// The prompt; read from stdin when absent.
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

fn read_prompt(arg: Option<String>) -> anyhow::Result<String> {
    let prompt = match arg {
        Some(p) => p,
        None => {
            let mut stdin = std::io::stdin();
            if stdin.is_terminal() {
                bail!("no prompt: give one as an argument (stepper ask \"...\") or pipe it in");
            }
            let mut text = String::new();
            stdin
                .read_to_string(&mut text)
                .context("reading the prompt from stdin")?;
            text
        }
    };
    if prompt.trim().is_empty() {
        bail!("the prompt is empty: say what stepper should do");
    }
    Ok(prompt)
}

/// This process's environment, which the session's tools and provider keys will use.
fn client_env() -> Env {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
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
    let prompt = read_prompt(args.prompt)?;
    let cwd = std::env::current_dir().context("finding the current directory")?;
    let places = places()?;
    let client = connect_or_start(&places, "stepper ask").await?;

    let created = client
        .call::<SessionCreate>(SessionCreateParams {
            cwd: cwd.display().to_string(),
            env: client_env(),
            model: args.model,
            title: None,
            record: args.record.map(|r| cwd.join(r).display().to_string()),
        })
        .await?;
    let session_id = created.session.id;
    let mut events = client.subscribe_events(&session_id, 0).await?;
    let submitted = client
        .call::<SessionSubmit>(SessionSubmitParams {
            session_id: session_id.clone(),
            text: prompt,
            env: None,
        })
        .await?;

    let mut out = std::io::stdout().lock();
    let mut our_turn: Option<u32> = None;
    let mut text = String::new();
    let mut usage = Usage::default();
    let mut cost_usd = None;
    let mut interrupts = 0;
    // One listener for the whole turn, so no Ctrl-C falls between two waits.
    let mut ctrl_c = interrupt_signal()?;
    let (status, error) = loop {
        let next = tokio::select! {
            n = events.next() => n,
            _ = ctrl_c.recv() => {
                interrupts += 1;
                if interrupts > 1 {
                    eprintln!("\nstepper: left the turn to stop in the daemon (session {session_id})");
                    return Ok(ExitCode::from(130));
                }
                eprintln!("\nstepper: interrupting… (Ctrl-C again to leave at once)");
                let p = SessionParams { session_id: session_id.clone() };
                if let Err(e) = client.call::<SessionInterrupt>(p).await {
                    eprintln!("stepper: could not interrupt: {e}");
                }
                continue;
            }
        };
        let envelope = match next {
            Some(Ok(e)) => e,
            Some(Err(e)) => return Err(e).context("following the session"),
            None => bail!("the daemon closed the session's event stream"),
        };
        if args.format == Format::StreamJson {
            writeln!(out, "{}", serde_json::to_string(&envelope)?)?;
            out.flush()?;
        }
        let ours = our_turn.is_some() && envelope.turn == our_turn;
        match envelope.event {
            AppEvent::TurnStarted { input_id, .. } if input_id == submitted.input_id => {
                our_turn = envelope.turn;
            }
            AppEvent::TextDelta { text: delta } if ours => {
                if args.format == Format::Text {
                    out.write_all(delta.as_bytes())?;
                    out.flush()?;
                }
                text.push_str(&delta);
            }
            AppEvent::UsageUpdated {
                usage: u,
                cost_usd: c,
            } if ours => {
                usage = u;
                cost_usd = c;
            }
            AppEvent::Error { message } if ours => eprintln!("stepper: {message}"),
            AppEvent::Notice { message } if ours && args.format == Format::Text => {
                eprintln!("stepper: {message}");
            }
            AppEvent::TurnFinished { status, error } if ours => break (status, error),
            _ => {}
        }
    };

    match args.format {
        Format::Text => {
            if !text.is_empty() && !text.ends_with('\n') {
                writeln!(out)?;
            }
        }
        Format::Json => {
            let result = AskResult {
                session_id: session_id.clone(),
                status,
                text,
                usage,
                cost_usd,
                error: error.clone(),
            };
            writeln!(out, "{}", serde_json::to_string(&result)?)?;
        }
        Format::StreamJson => {}
    }
    out.flush()?;
    Ok(match status {
        TurnStatus::Completed => ExitCode::SUCCESS,
        TurnStatus::Interrupted => {
            eprintln!("stepper: the turn was interrupted (session {session_id})");
            ExitCode::from(130)
        }
        TurnStatus::Failed => {
            eprintln!("stepper: {}", error.as_deref().unwrap_or("the turn failed"));
            ExitCode::FAILURE
        }
    })
}
