//! `stepper sessions`: what sessions exist, newest first.

use std::process::ExitCode;

use clap::Args;
use stepper_protocol::SessionStatus;
use stepper_protocol::methods::{SessionList, SessionListParams};

use crate::connect::{connect_or_start, places};

#[derive(Args)]
pub struct SessionsArgs {
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

pub async fn run(args: SessionsArgs) -> anyhow::Result<ExitCode> {
    let client = connect_or_start(&places()?, "stepper sessions").await?;
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
    println!(
        "{:<36}  {:<8}  {:>8}  {:<30}  CWD",
        "ID", "STATUS", "UPDATED", "TITLE"
    );
    for s in &page.sessions {
        let status = match s.status {
            SessionStatus::Idle => "idle",
            SessionStatus::Running => "running",
        };
        let title = s.title.as_deref().unwrap_or("");
        println!(
            "{:<36}  {:<8}  {:>8}  {:<30}  {}",
            s.id,
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
