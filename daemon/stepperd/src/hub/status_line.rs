//! A session's `statusLine` (Claude Code's setting, or stepper's own): its command run with
//! the session as JSON on stdin, as Claude Code gives it, and its first lines given to the
//! client that asked (`session/statusLine`), which draws them. It runs as a hook does — in
//! the session's folder, with its tool environment, under the reaper, killed at its
//! timeout — and only where it may: a project's waits for the folder's trust, since it runs
//! a program.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use stepper_engine::ModelRef;
use stepper_engine::config::Settings;
use stepper_protocol::methods::SessionStatusLineResponse;
use tokio_util::sync::CancellationToken;

use super::hooks::{HookRunner, HookSet};
use super::session::LiveSession;
use super::{HubDeps, env};

/// How long the command may take: a status line that hangs is dropped, not waited for.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The most lines shown, and the most characters of each.
const MAX_LINES: usize = 4;
const MAX_WIDTH: usize = 400;

/// What `session`'s status line command prints now.
pub async fn status_line(
    deps: &HubDeps,
    session: &LiveSession,
    settings: &Settings,
) -> SessionStatusLineResponse {
    let Some(line) = &settings.status_line else {
        return SessionStatusLineResponse::default();
    };
    let cwd = session.cwd();
    let (session_env, mode) = session.env_and_mode();
    let model = session.model();
    let id = ModelRef::parse(&model).map_or_else(|_| model.clone(), |m| m.model);
    let runner = HookRunner {
        set: Arc::new(HookSet::parse(None)),
        session_id: session.id.clone(),
        prompt_id: None,
        transcript: deps.transcripts.path(&session.id),
        cwd: cwd.clone(),
        env: env::tool_env(&session_env, settings),
        mode: mode.unwrap_or_else(|| settings.mode()),
        log: session.log.clone(),
        turn: None,
        redactor: Default::default(),
        cancel: CancellationToken::new(),
    };
    let folder = cwd.display().to_string();
    let input = json!({
        "hook_event_name": "Status",
        "session_id": session.id,
        "transcript_path": runner.transcript.display().to_string(),
        "cwd": folder,
        "model": {"id": id, "display_name": model},
        "workspace": {"current_dir": folder, "project_dir": folder},
        "version": env!("CARGO_PKG_VERSION"),
        "output_style": {"name": "default"},
    });
    let ran = runner
        .run_command(&line.command, &input.to_string(), TIMEOUT)
        .await;
    if ran.timed_out {
        return SessionStatusLineResponse {
            text: None,
            error: Some(format!(
                "the statusLine command did not finish in {}s",
                TIMEOUT.as_secs()
            )),
        };
    }
    if ran.exit != Some(0) {
        let said = ran.stderr.trim();
        return SessionStatusLineResponse {
            text: None,
            error: Some(format!(
                "the statusLine command failed (exit {}){}{}",
                ran.exit.map_or("?".into(), |c| c.to_string()),
                if said.is_empty() { "" } else { ": " },
                said.chars().take(MAX_WIDTH).collect::<String>()
            )),
        };
    }
    let text = shown(&ran.stdout);
    SessionStatusLineResponse {
        text: (!text.is_empty()).then_some(text),
        error: None,
    }
}

/// The lines a terminal shows of `stdout`: escape sequences (colours, cursor moves) and
/// other control characters out, blank lines dropped, at most [`MAX_LINES`] of
/// [`MAX_WIDTH`] characters.
fn shown(stdout: &str) -> String {
    stdout
        .lines()
        .map(plain)
        .filter(|l| !l.trim().is_empty())
        .take(MAX_LINES)
        .map(|l| l.trim_end().chars().take(MAX_WIDTH).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `line` without escape sequences or control characters.
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            match chars.next() {
                // CSI: parameters, then one final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC (a link, a title): to BEL or ST.
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.peek() == Some(&'\\')) {
                            if c == '\u{1b}' {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        if c == '\t' {
            out.push(' ');
        } else if !c.is_control() {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_blank_lines_are_taken_out() {
        let printed = "\u{1b}[1;32mmain\u{1b}[0m \u{1b}]8;;https://x\u{7}link\u{1b}]8;;\u{1b}\\ ok\n\n\
                       second\tline\u{7}\nthree\nfour\nfive\n";
        assert_eq!(shown(printed), "main link ok\nsecond line\nthree\nfour");
        let wide = "x".repeat(1000);
        assert_eq!(shown(&wide).len(), MAX_WIDTH);
    }
}
