//! What users see, as text: every kind of cell (committed to scrollback or live in the
//! viewport), the overlays, the popups, the status line and the picker.

use crossterm::event::KeyCode;
use insta::assert_snapshot;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use stepper_protocol::PermissionMode;
use stepper_protocol::event::{
    AppEvent, ApprovalDecision, TodoItem, TodoStatus, ToolCallStatus, TurnStatus, Usage,
};
use stepper_protocol::session::SessionStatus;
use stepper_tui::{CoreEvent, Picker};

use crate::support::*;

const WIDTH: u16 = 72;

fn bash(call_id: &str, command: &str) -> AppEvent {
    AppEvent::ToolCallStarted {
        call_id: call_id.into(),
        tool: "bash".into(),
        input: serde_json::json!({ "command": command }),
    }
}

fn finished(
    call_id: &str,
    status: ToolCallStatus,
    output: &str,
    exit_code: Option<i32>,
) -> AppEvent {
    AppEvent::ToolCallFinished {
        call_id: call_id.into(),
        status,
        output: output.into(),
        exit_code,
        duration_ms: 1234,
        diff: None,
    }
}

const DIFF: &str = "--- a/src/auth.rs\n+++ b/src/auth.rs\n@@ -10,4 +10,4 @@ fn login(user: &User) {\n     let token = issue(user);\n-    if token.expired() {\n+    if token.expired_at(now()) {\n         return Err(Expired);\n     }\n";

#[test]
fn user_input_and_a_queued_one() {
    let mut app = app();
    start_turn(
        &mut app,
        "Fix the login bug.\nIt fails when the token has expired.",
    );
    assert_snapshot!("user_input", text(&app.take_history(WIDTH)));
    feed(
        &mut app,
        [AppEvent::InputQueued {
            attachments: Vec::new(),
            input_id: "in-2".into(),
            text: "then run the tests".into(),
            client: Some("bob".into()),
        }],
    );
    app.tick(T0 + 12_000);
    assert_snapshot!("queued_input", frame(&app, WIDTH));
}

const MARKDOWN: &str = "## The fix\n\nThe **token** check used `expired()`, which ignores *clock skew*. See [the docs](https://docs.rs/jwt).\n\n- compare against `now()`\n- keep the old path\n  - for tests\n\n1. first\n2. second\n\n> a quoted line\n\n```rust\nfn expired_at(&self, now: Instant) -> bool {\n    self.exp < now\n}\n```\n\nAnd then the streaming tail, still";

#[test]
fn streaming_markdown_with_a_highlighted_code_block() {
    let mut app = app();
    start_turn(&mut app, "explain");
    app.take_history(WIDTH);
    for chunk in MARKDOWN.as_bytes().chunks(7) {
        feed(
            &mut app,
            [AppEvent::TextDelta {
                text: String::from_utf8_lossy(chunk).into_owned(),
            }],
        );
    }
    let committed = app.take_history(WIDTH);
    assert_snapshot!("markdown_committed_while_streaming", text(&committed));
    assert_snapshot!("markdown_live_tail", frame(&app, WIDTH));

    let code_line = committed
        .iter()
        .find(|l| l.to_string().starts_with("fn expired_at"))
        .expect("the code block is committed");
    let colours: std::collections::BTreeSet<String> = code_line
        .spans
        .iter()
        .filter_map(|s| s.style.fg)
        .map(|c| format!("{c:?}"))
        .collect();
    assert!(colours.len() >= 3, "code is highlighted: {colours:?}");
    assert!(colours.iter().all(|c| c.starts_with("Rgb")));

    feed(
        &mut app,
        [AppEvent::MessageCompleted {
            text: MARKDOWN.into(),
            stop_reason: Some("end_turn".into()),
        }],
    );
    assert_snapshot!("markdown_completed", text(&app.take_history(WIDTH)));
}

#[test]
fn reasoning_streams_then_collapses() {
    let mut app = app();
    start_turn(&mut app, "think");
    app.take_history(WIDTH);
    feed(
        &mut app,
        [AppEvent::ReasoningDelta {
            text: "The user wants the login fixed. Tokens carry an exp claim; the check compares it with the wall clock. Clock skew between the issuer and this host can make a fresh token look expired. A leeway of a few seconds is the usual fix.".into(),
        }],
    );
    app.tick(T0 + 3_000);
    assert_snapshot!("reasoning_live", frame(&app, WIDTH));
    feed(
        &mut app,
        [AppEvent::TextDelta {
            text: "Found it.".into(),
        }],
    );
    assert_snapshot!("reasoning_collapsed", text(&app.take_history(WIDTH)));
}

#[test]
fn a_running_tool_shows_the_tail_of_its_output() {
    let mut app = app();
    start_turn(&mut app, "run the tests");
    app.take_history(WIDTH);
    feed(&mut app, [bash("c1", "cargo test -p auth")]);
    for i in 1..=9 {
        feed(
            &mut app,
            [AppEvent::ToolOutputDelta {
                call_id: "c1".into(),
                text: format!("test auth::case_{i} ... ok\n"),
            }],
        );
    }
    app.tick(T0 + 4_200);
    assert_snapshot!("tool_running", frame(&app, WIDTH));
}

#[test]
fn layers_and_workers_are_cells_collapsed_then_expanded() {
    let mut app = app();
    start_turn(&mut app, "fix both bugs");
    app.take_history(WIDTH);
    let layer = |index, name: &str, parallel, agent_id: Option<&str>| AppEvent::LayerStarted {
        index,
        count: 2,
        name: name.into(),
        model: "anthropic/claude-opus-4-1".into(),
        parallel,
        agent_id: agent_id.map(String::from),
    };
    feed(&mut app, [layer(1, "plan", false, Some("layer-1"))]);
    feed_in(
        &mut app,
        "layer-1",
        [
            AppEvent::ToolCallStarted {
                call_id: "c1".into(),
                tool: "grep".into(),
                input: serde_json::json!({"pattern": "expired"}),
            },
            AppEvent::TextDelta {
                text: "not the answer".into(),
            },
            AppEvent::MessageCompleted {
                text: "Two tasks: the token check, the clock.".into(),
                stop_reason: Some("end_turn".into()),
            },
        ],
    );
    feed(
        &mut app,
        [
            AppEvent::LayerFinished {
                index: 1,
                name: "plan".into(),
                status: TurnStatus::Completed,
                text: "Two tasks: the token check, the clock.".into(),
                error: None,
                workers: 0,
            },
            layer(2, "code", true, None),
            AppEvent::SubagentStarted {
                agent_id: "layer-2.1".into(),
                name: "code".into(),
                model: "anthropic/claude-sonnet-4-5".into(),
                task: "Fix the token check in src/auth.rs".into(),
                layer: Some(2),
                worktree: Some(Box::new(stepper_protocol::Worktree {
                    path: "/home/ada/shop/.git/stepper-worktrees/0a1b2c3d-t4-layer-2.1".into(),
                    branch: "stepper/0a1b2c3d-t4/layer-2.1".into(),
                })),
            },
            AppEvent::SubagentStarted {
                agent_id: "layer-2.2".into(),
                name: "code".into(),
                model: "anthropic/claude-sonnet-4-5".into(),
                task: "Make the clock injectable".into(),
                layer: Some(2),
                worktree: Some(Box::new(stepper_protocol::Worktree {
                    path: "/home/ada/shop/.git/stepper-worktrees/0a1b2c3d-t4-layer-2.2".into(),
                    branch: "stepper/0a1b2c3d-t4/layer-2.2".into(),
                })),
            },
        ],
    );
    feed_in(
        &mut app,
        "layer-2.1",
        [bash("c2", "cargo build"), bash("c3", "cargo test -p auth")],
    );
    feed(
        &mut app,
        [AppEvent::SubagentFinished {
            agent_id: "layer-2.2".into(),
            name: "code".into(),
            status: TurnStatus::Failed,
            text: String::new(),
            error: Some("the provider returned 500".into()),
            usage: Usage::default(),
        }],
    );
    feed(
        &mut app,
        [AppEvent::WorktreesMerged {
            layer: Some(2),
            merged: vec!["layer-2.1".into()],
            files: 2,
            conflict: None,
            kept: vec![stepper_protocol::KeptWorktree {
                agent_id: "layer-2.2".into(),
                path: "/home/ada/shop/.git/stepper-worktrees/0a1b2c3d-t4-layer-2.2".into(),
                branch: "stepper/0a1b2c3d-t4/layer-2.2".into(),
                reason: stepper_protocol::KeptReason::Unfinished,
            }],
            error: None,
        }],
    );
    app.tick(T0 + 1_000);
    // The plan layer is done: one line of its text in scrollback, its work not the answer.
    assert_snapshot!("layers_history", text(&app.take_history(WIDTH)));
    assert_snapshot!("layers_collapsed", frame(&app, WIDTH));
    assert_eq!(app.on_key(ctrl('o')), []);
    assert_snapshot!("layers_expanded", frame(&app, WIDTH));
}

#[test]
fn finished_tools_ok_and_error() {
    let mut app = app();
    start_turn(&mut app, "check");
    app.take_history(WIDTH);
    feed(
        &mut app,
        [
            bash("c1", "cargo build"),
            finished(
                "c1",
                ToolCallStatus::Ok,
                "   Compiling auth v0.1.0\n    Finished dev",
                Some(0),
            ),
            bash("c2", "cargo test"),
            finished(
                "c2",
                ToolCallStatus::Error,
                "running 3 tests\ntest a ... ok\ntest b ... ok\ntest c ... FAILED\n\nfailures:\n    c: token expired\ntest result: FAILED. 2 passed; 1 failed",
                Some(101),
            ),
            AppEvent::ToolCallStarted {
                call_id: "c3".into(),
                tool: "read".into(),
                input: serde_json::json!({"file_path": "src/auth.rs"}),
            },
            finished(
                "c3",
                ToolCallStatus::Ok,
                "1\tuse std::time;\n2\t\n3\tpub fn login() {}",
                None,
            ),
            AppEvent::ToolCallStarted {
                call_id: "c4".into(),
                tool: "bash".into(),
                input: serde_json::json!({"command": "rm -rf target"}),
            },
            finished("c4", ToolCallStatus::Denied, "denied by the user", None),
            AppEvent::ToolCallStarted {
                call_id: "c5".into(),
                tool: "grep".into(),
                input: serde_json::json!({"pattern": "expired", "path": "src"}),
            },
            finished("c5", ToolCallStatus::Cancelled, "", None),
        ],
    );
    assert_snapshot!("tools_finished", text(&app.take_history(WIDTH)));
}

#[test]
fn an_edit_shows_its_diff_in_colour() {
    let mut app = app();
    start_turn(&mut app, "edit");
    app.take_history(WIDTH);
    feed(
        &mut app,
        [
            AppEvent::ToolCallStarted {
                call_id: "e1".into(),
                tool: "edit".into(),
                input: serde_json::json!({"file_path": "src/auth.rs", "old_string": "a", "new_string": "b"}),
            },
            AppEvent::ToolCallFinished {
                call_id: "e1".into(),
                status: ToolCallStatus::Ok,
                output: "edited src/auth.rs".into(),
                exit_code: None,
                duration_ms: 3,
                diff: Some(DIFF.into()),
            },
        ],
    );
    let lines = app.take_history(WIDTH);
    assert_snapshot!("edit_diff", text(&lines));
    let style_of = |prefix: &str| {
        lines
            .iter()
            .find_map(|l| {
                l.spans
                    .iter()
                    .find(|s| s.content.starts_with(prefix))
                    .map(|s| s.style.fg)
            })
            .unwrap_or_else(|| panic!("no span starts with {prefix:?}"))
    };
    assert_eq!(style_of("+    if"), Some(Color::Green));
    assert_eq!(style_of("-    if"), Some(Color::Red));
    assert_eq!(style_of("@@"), Some(Color::Cyan));
}

#[test]
fn todos_as_a_checklist() {
    let mut app = app();
    let item = |content: &str, status, active: Option<&str>| TodoItem {
        content: content.into(),
        status,
        active_form: active.map(String::from),
    };
    feed(
        &mut app,
        [AppEvent::TodosUpdated {
            todos: vec![
                item("Reproduce the bug", TodoStatus::Completed, None),
                item(
                    "Fix the expiry check",
                    TodoStatus::InProgress,
                    Some("Fixing the expiry check"),
                ),
                item("Run the test suite", TodoStatus::Pending, None),
            ],
        }],
    );
    let lines = app.take_history(WIDTH);
    assert_snapshot!("todos", text(&lines));
    let done = lines
        .iter()
        .flat_map(|l| &l.spans)
        .find(|s| s.content == "Reproduce the bug")
        .unwrap();
    assert!(
        done.style
            .add_modifier
            .contains(ratatui::style::Modifier::CROSSED_OUT)
    );
}

#[test]
fn approval_overlay_with_a_command_and_with_a_diff() {
    let mut app = app();
    start_turn(&mut app, "clean up");
    app.take_history(WIDTH);
    app.tick(T0 + 61_000);
    feed(
        &mut app,
        [
            bash("c1", "rm -rf target && cargo build"),
            AppEvent::ApprovalRequested {
                request_id: "r1".into(),
                tool: "bash".into(),
                summary: "Run a command that deletes files".into(),
                command: Some("rm -rf target && cargo build".into()),
                diff: None,
            },
            AppEvent::ApprovalRequested {
                request_id: "r2".into(),
                tool: "edit".into(),
                summary: "Edit src/auth.rs".into(),
                command: None,
                diff: Some(DIFF.into()),
            },
        ],
    );
    // Just shown: its keys do not answer yet, and it says so.
    assert_snapshot!("approval_command_just_shown", frame(&app, WIDTH));
    // Past the guard that keeps typing from answering, on the same spinner frame.
    app.tick(T0 + 61_800);
    assert_snapshot!("approval_command", frame(&app, WIDTH));
    app.on_key(key(KeyCode::Char('y')));
    app.tick(T0 + 62_600);
    assert_snapshot!("approval_diff", frame(&app, WIDTH));
}

#[test]
fn completion_popups() {
    let mut app = app();
    type_text(&mut app, "/mo");
    assert_snapshot!("popup_slash", frame(&app, WIDTH));

    let mut app = crate::support::app();
    app.apply(CoreEvent::Files(
        [
            "src/main.rs",
            "src/auth.rs",
            "src/auth/token.rs",
            "README.md",
            "docs/auth.md",
        ]
        .into_iter()
        .map(String::from)
        .collect(),
    ));
    type_text(&mut app, "look at @aut");
    assert_snapshot!("popup_file", frame(&app, WIDTH));
}

#[test]
fn status_line_with_usage_and_other_clients() {
    let mut app = app();
    app.apply(CoreEvent::Clients {
        clients: vec![client("me"), client("bob"), client("carol")],
        me: "me".into(),
    });
    start_turn(&mut app, "go");
    feed(
        &mut app,
        [AppEvent::UsageUpdated {
            usage: Usage {
                input_tokens: 1_200,
                output_tokens: 830,
                cache_read_tokens: 40_000,
                cache_write_tokens: 2_000,
            },
            cost_usd: Some(0.0421),
        }],
    );
    app.tick(T0 + 75_000);
    let status = frame(&app, 110).lines().last().unwrap().to_string();
    assert_snapshot!("status_line", status);
    assert!(status.contains("2 other clients attached"));
    assert!(status.contains("ctx 21%"));
}

/// The user's `statusLine` output under stepper's own status line, cut at the width; gone
/// when a later run prints nothing.
#[test]
fn the_users_status_line_under_the_status_line() {
    let mut app = app();
    app.apply(CoreEvent::StatusLine(Some(format!(
        "main · 3 files changed\n{}",
        "x".repeat(100)
    ))));
    assert_snapshot!("users_status_line", frame(&app, WIDTH));
    app.apply(CoreEvent::StatusLine(None));
    assert!(!frame(&app, WIDTH).contains("3 files changed"));
}

/// The sandbox in the status line: shown when it confines commands, and a warning when it is
/// wanted but missing (commands ask then); nothing when it is off.
#[test]
fn status_line_with_the_sandbox() {
    use stepper_protocol::{SandboxInfo, SandboxMechanism, SandboxMode, SandboxState};
    let with = |state, network, mechanism| {
        let mut app = app();
        app.apply(CoreEvent::Session {
            info: info(SessionStatus::Idle),
            mode: PermissionMode::AcceptEdits,
            sandbox: Some(SandboxInfo {
                mode: SandboxMode::WorkspaceWrite,
                state,
                network,
                writable_roots: vec!["/project".into()],
                reason: None,
                mechanism,
            }),
            context_window: Some(200_000),
        });
        frame(&app, 110).lines().last().unwrap().to_string()
    };
    let bwrap = Some(SandboxMechanism::Bubblewrap);
    let lines = [
        with(SandboxState::Active, false, bwrap),
        with(SandboxState::Active, true, bwrap),
        with(SandboxState::Unavailable, false, None),
        with(SandboxState::Off, false, None),
        with(
            SandboxState::Active,
            false,
            Some(SandboxMechanism::Landlock),
        ),
    ];
    assert_snapshot!("status_line_sandbox", lines.join("\n"));
    assert!(lines[0].contains("sandbox workspace-write") && !lines[0].contains("+net"));
    assert!(!lines[0].contains("landlock only"));
    assert!(lines[1].contains("+net"));
    assert!(lines[2].contains("no sandbox here"));
    assert!(!lines[3].contains("sandbox"));
    assert!(lines[4].contains("sandbox workspace-write (landlock only)"));
}

#[test]
fn one_line_cells_notices_errors_and_interruptions() {
    let mut app = app();
    start_turn(&mut app, "go");
    feed(
        &mut app,
        [
            AppEvent::ClientAttached {
                client: "bob".into(),
                kind: stepper_protocol::methods::ClientKind::Tui,
                pid: Some(7),
            },
            AppEvent::Steered {
                text: "use the leeway constant".into(),
                by: Some("bob".into()),
                input_id: Some("01a3".into()),
            },
            AppEvent::ModelChanged {
                model: "openai/gpt-5".into(),
                by: Some("bob".into()),
            },
            AppEvent::ModeChanged {
                mode: PermissionMode::Plan,
                by: None,
            },
            AppEvent::ApprovalRequested {
                request_id: "r9".into(),
                tool: "bash".into(),
                summary: "run".into(),
                command: Some("make".into()),
                diff: None,
            },
            AppEvent::ApprovalResolved {
                request_id: "r9".into(),
                decision: ApprovalDecision::Allow,
                by: Some("bob".into()),
            },
            AppEvent::CheckpointCreated { files: 3 },
            AppEvent::Notice {
                message: "rate limited, retrying in 2s".into(),
            },
            AppEvent::Error {
                message: "the provider returned 500: overloaded".into(),
            },
            AppEvent::TurnFinished {
                status: TurnStatus::Interrupted,
                error: None,
                error_kind: None,
            },
            AppEvent::Rewound {
                turn: 1,
                files: 2,
                conversation: true,
            },
            AppEvent::TurnFinished {
                status: TurnStatus::Failed,
                error: Some("stream cut after 30s".into()),
                error_kind: None,
            },
            AppEvent::ClientDetached {
                client: "bob".into(),
            },
        ],
    );
    app.apply(CoreEvent::Error(
        "approval r1 was already answered by bob".into(),
    ));
    app.on_key(key(KeyCode::Char('/')));
    type_text(&mut app, "help");
    app.on_key(key(KeyCode::Esc));
    app.on_key(key(KeyCode::Enter));
    assert_snapshot!("one_line_cells", text(&app.take_history(WIDTH)));
}

#[test]
fn the_picker() {
    let mut first = info(SessionStatus::Running);
    first.turns = 5;
    first.updated_at = T0 - 120_000;
    let mut second = info(SessionStatus::Idle);
    second.id = "0198a1b2-0000-7000-8000-000000000000".into();
    second.title = Some("add a --json flag to sessions list".into());
    second.turns = 1;
    second.updated_at = T0 - 3 * 86_400_000;
    let mut picker = Picker::new(vec![first, second], T0);
    picker.on_key(key(KeyCode::Down));
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, picker.height())).unwrap();
    terminal
        .draw(|f| {
            let area = f.area();
            picker.render(area, f.buffer_mut());
        })
        .unwrap();
    assert_snapshot!("picker", buffer_text(terminal.backend().buffer()));
}

#[test]
fn tool_output_collapsed_then_expanded_with_ctrl_o() {
    let mut app = app();
    start_turn(&mut app, "run the tests");
    app.take_history(WIDTH);
    let output: String = (1..=12)
        .map(|i| format!("test auth::case_{i} ... ok\n"))
        .collect();
    feed(
        &mut app,
        [
            bash("c1", "cargo test -p auth"),
            finished("c1", ToolCallStatus::Error, &output, Some(101)),
        ],
    );
    assert_snapshot!("tool_output_collapsed", text(&app.take_history(WIDTH)));
    // Ctrl-O: the call just gone to scrollback comes again, whole; later ones are whole.
    assert!(app.on_key(ctrl('o')).is_empty());
    assert_snapshot!("tool_output_expanded", text(&app.take_history(WIDTH)));
    assert!(
        frame(&app, 160).contains("tool output and agents expanded (Ctrl-O)"),
        "{}",
        frame(&app, 160)
    );

    // A running call shows more than its tail; a huge one is bounded, the rest counted.
    feed(&mut app, [bash("c2", "seq 1 1000")]);
    let huge: String = (1..=1000).map(|i| format!("{i}\n")).collect();
    feed(
        &mut app,
        [AppEvent::ToolOutputDelta {
            call_id: "c2".into(),
            text: huge[..200].to_string(),
        }],
    );
    let live = frame_sized(&app, WIDTH, 40);
    let shown = live
        .lines()
        .filter(|l| l.trim().parse::<u32>().is_ok())
        .count();
    assert!(shown > 30, "{live}");
    feed(
        &mut app,
        [finished("c2", ToolCallStatus::Ok, &huge, Some(0))],
    );
    let lines = text(&app.take_history(WIDTH));
    assert!(lines.contains("… 800 more lines"), "{lines}");
    assert!(lines.contains("    200\n"), "{lines}");
    assert!(!lines.contains(" 201\n"), "{lines}");

    // Collapsed again: the tail only.
    app.on_key(ctrl('o'));
    feed(
        &mut app,
        [
            bash("c3", "cargo test -p auth"),
            finished("c3", ToolCallStatus::Error, &output, Some(101)),
        ],
    );
    let lines = text(&app.take_history(WIDTH));
    assert!(lines.contains("… +7 lines (ctrl+o to expand)"), "{lines}");
}

#[test]
fn model_picker_lists_the_catalogue_and_enter_sets_one() {
    let mut app = app();
    type_text(&mut app, "/model");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        [stepper_tui::Action::ListModels]
    );
    let entry = |id: &str, window: u64, prices: Option<(f64, f64)>| stepper_tui::ModelEntry {
        id: id.into(),
        provider: id.split('/').next().unwrap().into(),
        context_window: window,
        max_output: 32_000,
        input_price: prices.map(|p| p.0),
        output_price: prices.map(|p| p.1),
        cache_read_price: None,
        cache_write_price: None,
        configured: false,
        images: None,
        pdf: None,
    };
    app.apply(CoreEvent::Models(vec![
        entry("anthropic/claude-opus-4-1", 200_000, Some((15.0, 75.0))),
        entry("anthropic/claude-sonnet-4-5", 1_000_000, Some((3.0, 15.0))),
        entry("openai/gpt-5", 400_000, Some((1.25, 10.0))),
        entry("ollama/qwen3-coder", 32_768, None),
    ]));
    assert_snapshot!("model_picker", frame(&app, WIDTH));
    app.on_key(key(KeyCode::Down));
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        [stepper_tui::Action::SetModel {
            model: "openai/gpt-5".into()
        }]
    );
    assert!(!frame(&app, WIDTH).contains("Switch model"));
    // Esc closes it without a change.
    app.apply(CoreEvent::Models(vec![entry(
        "openai/gpt-5",
        400_000,
        None,
    )]));
    assert!(app.on_key(key(KeyCode::Esc)).is_empty());
    assert!(!frame(&app, WIDTH).contains("Switch model"));
}
