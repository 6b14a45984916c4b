//! What `stepper ask` answers while its turn runs: approvals and MCP servers' forms, asked
//! at the terminal when there is one; without one, approvals are denied at once unless a
//! client that can answer is attached or `--wait-approval` says to wait.

use std::io::IsTerminal;

use stepper_protocol::methods::SessionParams;

use crate::typed::read_line;

/// An approval the turn waits on, as `ask` tells it.
pub(super) struct Approval<'a> {
    pub(super) session_id: &'a str,
    pub(super) request_id: &'a str,
    pub(super) summary: &'a str,
    pub(super) command: Option<&'a str>,
    pub(super) diff: Option<&'a str>,
}

impl Approval<'_> {
    fn tell(&self) {
        eprintln!("\nstepper wants to {}", self.summary);
        if let Some(c) = self.command.filter(|c| !self.summary.contains(c)) {
            eprintln!("  {c}");
        }
        if let Some(d) = self.diff.filter(|d| !d.is_empty()) {
            eprintln!("{d}");
        }
    }

    async fn answer(
        &self,
        client: &stepper_protocol::client::DaemonClient,
        decision: stepper_protocol::ApprovalDecision,
    ) {
        answer(client, self.session_id, self.request_id, decision).await;
    }
}

/// Answer an approval; another client may have answered first, and then this answer is
/// late, which is fine.
async fn answer(
    client: &stepper_protocol::client::DaemonClient,
    session_id: &str,
    request_id: &str,
    decision: stepper_protocol::ApprovalDecision,
) {
    use stepper_protocol::methods::{SessionApprove, SessionApproveParams};
    let p = SessionApproveParams {
        session_id: session_id.into(),
        request_id: request_id.into(),
        decision,
    };
    if let Err(e) = client.call::<SessionApprove>(p).await
        && e.kind() != Some(stepper_protocol::error::ErrorKind::ApprovalAnswered)
    {
        eprintln!("stepper: {e}");
    }
}

/// Ask at the terminal.
pub(super) async fn ask_approval(
    client: &stepper_protocol::client::DaemonClient,
    approval: &Approval<'_>,
) {
    use stepper_protocol::ApprovalDecision;
    approval.tell();
    eprint!("Allow? [y]es / [a]lways / [n]o: ");
    let decision = match read_line().await.map(|l| l.trim().to_lowercase()) {
        Some(a) if a == "y" || a == "yes" => ApprovalDecision::Allow,
        Some(a) if a == "a" || a == "always" => ApprovalDecision::AllowAlways,
        _ => ApprovalDecision::Deny,
    };
    approval.answer(client, decision).await;
}

/// No terminal to ask at: deny at once, unless a client that can answer is attached or
/// `--wait-approval` says to wait (then deny once its seconds are up, if they are given).
pub(super) async fn answer_headless(
    client: &stepper_protocol::client::DaemonClient,
    approval: &Approval<'_>,
    wait: Option<Option<u64>>,
) {
    use stepper_protocol::ApprovalDecision;
    approval.tell();
    let how = format!(
        "stepper approve {} {} allow|always|deny",
        approval.session_id, approval.request_id
    );
    let wait = match wait {
        Some(wait) => Some(wait),
        None => answerer(client, approval.session_id).await.map(|name| {
            eprintln!("waiting for {name} to answer (or: {how})");
            None
        }),
    };
    match wait {
        None => {
            eprintln!(
                "stepper: denied: no terminal to ask at and no client to answer \
                 (--wait-approval waits for one; --yes or an allow rule lets it run)"
            );
            approval.answer(client, ApprovalDecision::Deny).await;
        }
        Some(None) => eprintln!("waiting for an answer from any attached client, or: {how}"),
        Some(Some(secs)) => {
            eprintln!("waiting {secs} s for an answer from any attached client, or: {how}");
            // Denied when the time is up, unless someone answered first.
            let client = client.clone();
            let (session, request) = (
                approval.session_id.to_string(),
                approval.request_id.to_string(),
            );
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_secs(secs)).await;
                answer(&client, &session, &request, ApprovalDecision::Deny).await;
            });
        }
    }
}

/// A client attached to the session that a person can answer approvals at (a TUI, an
/// editor), other than this one.
async fn answerer(
    client: &stepper_protocol::client::DaemonClient,
    session_id: &str,
) -> Option<String> {
    use stepper_protocol::methods::{ClientKind, SessionClients};
    let attached = client
        .call::<SessionClients>(SessionParams {
            session_id: session_id.into(),
        })
        .await
        .ok()?;
    let me = std::process::id();
    attached
        .clients
        .into_iter()
        .find(|c| c.kind != ClientKind::Cli && c.pid != Some(me))
        .map(|c| c.name)
}

/// An MCP server's question: asked field by field at a terminal; declined otherwise (a
/// script has nobody to type the answer).
pub(super) async fn answer_elicitation(
    client: &stepper_protocol::client::DaemonClient,
    session_id: &str,
    request_id: &str,
    server: &str,
    message: &str,
    schema: &serde_json::Value,
) {
    use stepper_protocol::ElicitAction;
    use stepper_protocol::elicit::fields;
    use stepper_protocol::methods::{SessionElicit, SessionElicitParams};
    eprintln!("\nThe MCP server {server} asks: {message}");
    let mut content = serde_json::Map::new();
    let action = if !std::io::stdin().is_terminal() {
        eprintln!("stepper: declined (no terminal to answer at)");
        ElicitAction::Decline
    } else {
        eprintln!(
            "(Enter keeps the default; an empty answer to a required field, or Ctrl-D, declines)"
        );
        let mut action = ElicitAction::Accept;
        'fields: for field in fields(schema) {
            let hint = field.hint();
            if let Some(d) = &field.description {
                eprintln!("  {d}");
            }
            loop {
                let default = field
                    .default
                    .as_ref()
                    .map(|d| {
                        format!(
                            " [{}]",
                            d.as_str().map_or_else(|| d.to_string(), str::to_string)
                        )
                    })
                    .unwrap_or_default();
                let hint = if hint.is_empty() {
                    String::new()
                } else {
                    format!(" ({hint})")
                };
                eprint!("  {}{hint}{default}: ", field.title);
                let Some(line) = read_line().await else {
                    action = ElicitAction::Decline;
                    break 'fields;
                };
                match field.parse(&line) {
                    Ok(Some(value)) => {
                        content.insert(field.name.clone(), value);
                        break;
                    }
                    Ok(None) => break,
                    Err(why) => eprintln!("  {why}"),
                }
            }
        }
        action
    };
    let p = SessionElicitParams {
        session_id: session_id.into(),
        request_id: request_id.into(),
        action,
        content: (action == ElicitAction::Accept).then_some(content),
    };
    // Another client may have answered first: then this answer is late, which is fine.
    if let Err(e) = client.call::<SessionElicit>(p).await {
        eprintln!("stepper: {e}");
    }
}
