//! `stepper attach` against a scripted core, for trying the TUI by hand (and in tmux):
//! `cargo run -p stepper-tui --example demo`. Each input runs a fake turn: reasoning, a
//! markdown answer with code, a bash tool, and an approval for an edit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use stepper_protocol::PermissionMode;
use stepper_protocol::event::{AppEvent, EventEnvelope, ToolCallStatus, TurnStatus, Usage};
use stepper_protocol::methods::{AttachedClient, ClientKind};
use stepper_protocol::session::{SessionInfo, SessionStatus};
use stepper_tui::{Action, CoreEvent, TuiOptions};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const ANSWER: &str = "## Plan\n\nThe check uses `expired()`, which ignores **clock skew**.\n\n- compare with `now()` plus a leeway\n- keep the old path for tests\n\n```rust\nfn expired_at(&self, now: u64) -> bool {\n    self.exp + LEEWAY < now\n}\n```\n\nI'll run the tests first.\n";

struct Core {
    tx: mpsc::Sender<CoreEvent>,
    seq: u64,
    turn: u32,
}

impl Core {
    async fn send(&mut self, event: AppEvent) {
        self.seq += 1;
        let env = EventEnvelope {
            session_id: "0198a3f2-demo".into(),
            seq: self.seq,
            at: now(),
            turn: Some(self.turn),
            agent: None,
            event,
        };
        let _ = self.tx.send(CoreEvent::Event(env)).await;
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

async fn fake_turn(core: &mut Core, text: String, approvals: &mut mpsc::Receiver<String>) {
    core.turn += 1;
    let id = format!("in{}", core.turn);
    core.send(AppEvent::InputQueued {
        attachments: Vec::new(),
        input_id: id.clone(),
        text: text.clone(),
        client: Some("demo".into()),
    })
    .await;
    core.send(AppEvent::TurnStarted {
        attachments: Vec::new(),
        input_id: id,
        text,
        model: "anthropic/claude-sonnet-4-5".into(),
    })
    .await;
    for word in "Looking at how tokens expire and where the clock is read.".split_inclusive(' ') {
        core.send(AppEvent::ReasoningDelta { text: word.into() })
            .await;
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    for chunk in ANSWER.as_bytes().chunks(4) {
        core.send(AppEvent::TextDelta {
            text: String::from_utf8_lossy(chunk).into(),
        })
        .await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    core.send(AppEvent::MessageCompleted {
        text: ANSWER.into(),
        stop_reason: None,
    })
    .await;
    core.send(AppEvent::UsageUpdated {
        usage: Usage {
            input_tokens: 1200,
            output_tokens: 300,
            cache_read_tokens: 30_000,
            cache_write_tokens: 0,
        },
        cost_usd: Some(0.013),
    })
    .await;
    core.send(AppEvent::ToolCallStarted {
        call_id: "c1".into(),
        tool: "bash".into(),
        input: serde_json::json!({"command": "cargo test -p auth"}),
    })
    .await;
    for i in 0..12 {
        core.send(AppEvent::ToolOutputDelta {
            call_id: "c1".into(),
            text: format!("test auth::case_{i} ... ok\n"),
        })
        .await;
        tokio::time::sleep(Duration::from_millis(120)).await;
    }
    core.send(AppEvent::ToolCallFinished {
        call_id: "c1".into(),
        status: ToolCallStatus::Ok,
        output: "test result: ok. 12 passed".into(),
        exit_code: Some(0),
        duration_ms: 1440,
        diff: None,
    })
    .await;
    let diff = "--- a/src/auth.rs\n+++ b/src/auth.rs\n@@ -1,3 +1,3 @@\n fn check(t: &Token) -> bool {\n-    t.expired()\n+    t.expired_at(now())\n }\n";
    core.send(AppEvent::ToolCallStarted {
        call_id: "c2".into(),
        tool: "edit".into(),
        input: serde_json::json!({"file_path": "src/auth.rs"}),
    })
    .await;
    let request = format!("r{}", core.turn);
    core.send(AppEvent::ApprovalRequested {
        request_id: request.clone(),
        tool: "edit".into(),
        summary: "Edit src/auth.rs".into(),
        command: None,
        diff: Some(diff.into()),
    })
    .await;
    let decision = approvals.recv().await.unwrap_or_default();
    let allowed = decision != "deny";
    core.send(AppEvent::ApprovalResolved {
        request_id: request,
        decision: if allowed {
            stepper_tui::ApprovalDecision::Allow
        } else {
            stepper_tui::ApprovalDecision::Deny
        },
        by: Some("demo".into()),
    })
    .await;
    core.send(AppEvent::ToolCallFinished {
        call_id: "c2".into(),
        status: if allowed {
            ToolCallStatus::Ok
        } else {
            ToolCallStatus::Denied
        },
        output: String::new(),
        exit_code: None,
        duration_ms: 4,
        diff: allowed.then(|| diff.to_string()),
    })
    .await;
    core.send(AppEvent::TurnFinished {
        status: TurnStatus::Completed,
        error: None,
        error_kind: None,
    })
    .await;
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let (actions_tx, mut actions) = mpsc::channel::<Action>(16);
    let (events_tx, events) = mpsc::channel(1024);
    let cancel = CancellationToken::new();
    let info = SessionInfo {
        id: "0198a3f2-demo".into(),
        title: None,
        cwd: std::env::current_dir()?.display().to_string(),
        model: "anthropic/claude-sonnet-4-5".into(),
        status: SessionStatus::Idle,
        created_at: now(),
        updated_at: now(),
        last_seq: 0,
        turns: 0,
    };
    events_tx
        .send(CoreEvent::Session {
            info,
            mode: PermissionMode::Default,
            sandbox: None,
            context_window: Some(200_000),
        })
        .await
        .unwrap();
    events_tx
        .send(CoreEvent::Clients {
            clients: vec![AttachedClient {
                name: "demo".into(),
                kind: ClientKind::Tui,
                pid: None,
                since: now(),
            }],
            me: "demo".into(),
        })
        .await
        .unwrap();
    events_tx
        .send(CoreEvent::Files(vec![
            "src/main.rs".into(),
            "src/auth.rs".into(),
            "README.md".into(),
        ]))
        .await
        .unwrap();

    let (approve_tx, mut approve_rx) = mpsc::channel::<String>(4);
    let (inputs_tx, mut inputs_rx) = mpsc::channel::<String>(16);
    let mut core = Core {
        tx: events_tx.clone(),
        seq: 0,
        turn: 0,
    };
    let core_task = tokio::spawn(async move {
        while let Some(text) = inputs_rx.recv().await {
            fake_turn(&mut core, text, &mut approve_rx).await;
        }
    });
    let bridge = tokio::spawn(async move {
        while let Some(action) = actions.recv().await {
            match action {
                Action::Submit { text, .. } => {
                    let _ = inputs_tx.send(text).await;
                }
                Action::Approve { decision, .. } => {
                    let d = if decision == stepper_tui::ApprovalDecision::Deny {
                        "deny"
                    } else {
                        "allow"
                    };
                    let _ = approve_tx.send(d.into()).await;
                }
                other => {
                    let _ = events_tx
                        .send(CoreEvent::Error(format!("the demo core ignores {other:?}")))
                        .await;
                }
            }
        }
    });
    let exit = stepper_tui::run(TuiOptions::default(), actions_tx, events, cancel).await?;
    core_task.abort();
    bridge.abort();
    println!("left: {exit:?}");
    Ok(())
}
