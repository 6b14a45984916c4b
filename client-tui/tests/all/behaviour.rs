//! What keys and events do to `App`: the actions sent, and the state users rely on.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use stepper_protocol::event::{AppEvent, ApprovalDecision, ToolCallStatus, TurnStatus};
use stepper_tui::{Action, CoreEvent};

use crate::support::*;

fn submit(text: &str) -> Action {
    Action::Submit { text: text.into() }
}

#[test]
fn replayed_envelopes_with_duplicate_seqs_apply_once() {
    let mut app = app();
    let events = [
        AppEvent::InputQueued {
            input_id: "i".into(),
            text: "hello".into(),
            client: None,
        },
        AppEvent::TurnStarted {
            input_id: "i".into(),
            text: "hello".into(),
            model: "m".into(),
        },
        AppEvent::TextDelta { text: "Hi ".into() },
        AppEvent::TextDelta {
            text: "there.".into(),
        },
    ];
    for (i, e) in events.iter().enumerate() {
        app.apply(envelope(i as u64 + 1, e.clone()));
    }
    // A resubscription resends from an older seq: nothing shows twice.
    for (i, e) in events.iter().enumerate().skip(1) {
        app.apply(envelope(i as u64 + 1, e.clone()));
    }
    app.apply(envelope(
        5,
        AppEvent::TextDelta {
            text: " Bye.".into(),
        },
    ));
    app.apply(envelope(
        5,
        AppEvent::TextDelta {
            text: " Bye.".into(),
        },
    ));
    app.apply(envelope(
        6,
        AppEvent::TurnFinished {
            status: TurnStatus::Completed,
            error: None,
        },
    ));
    let all = text(&app.take_history(60));
    assert_eq!(all.matches("hello").count(), 1, "{all}");
    assert!(all.contains("Hi there. Bye."), "{all}");
    assert!(!all.contains("Bye. Bye."), "{all}");
    assert_eq!(app.last_seq(), 6);
}

#[test]
fn enter_submits_when_idle_and_steers_while_running_and_tab_queues() {
    let mut app = app();
    type_text(&mut app, "first");
    assert_eq!(app.on_key(key(KeyCode::Enter)), [submit("first")]);
    assert_eq!(app.input(), "");

    start_turn(&mut app, "first");
    type_text(&mut app, "also check expiry");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        [Action::Steer {
            text: "also check expiry".into()
        }]
    );
    type_text(&mut app, "next task");
    assert_eq!(app.on_key(key(KeyCode::Tab)), [submit("next task")]);
    // Nothing typed: nothing sent.
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
    assert!(app.on_key(key(KeyCode::Tab)).is_empty());
}

#[test]
fn newlines_do_not_send() {
    let mut app = app();
    type_text(&mut app, "a");
    for k in [
        KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT),
        KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT),
        ctrl('j'),
    ] {
        assert!(app.on_key(k).is_empty());
    }
    type_text(&mut app, "b");
    assert_eq!(app.on_key(key(KeyCode::Enter)), [submit("a\n\n\nb")]);
    app.on_paste("pasted\r\ntext");
    assert_eq!(app.on_key(key(KeyCode::Enter)), [submit("pasted\ntext")]);
}

#[test]
fn the_sessions_inputs_come_back_with_up_after_a_reattach() {
    let mut app = app();
    feed(
        &mut app,
        [
            AppEvent::InputQueued {
                input_id: "a".into(),
                text: "from the replay".into(),
                client: None,
            },
            AppEvent::InputQueued {
                input_id: "b".into(),
                text: "from another terminal".into(),
                client: Some("bob".into()),
            },
        ],
    );
    app.on_key(key(KeyCode::Up));
    assert_eq!(app.input(), "from another terminal");
    app.on_key(key(KeyCode::Up));
    assert_eq!(app.input(), "from the replay");
}

#[test]
fn history_comes_back_with_up() {
    let mut app = stepper_tui::App::new(stepper_tui::TuiOptions {
        history: vec!["old one".into()],
    });
    type_text(&mut app, "new one");
    app.on_key(key(KeyCode::Enter));
    app.on_key(key(KeyCode::Up));
    assert_eq!(app.input(), "new one");
    app.on_key(key(KeyCode::Up));
    assert_eq!(app.input(), "old one");
    app.on_key(key(KeyCode::Down));
    app.on_key(key(KeyCode::Down));
    assert_eq!(app.input(), "");
}

#[test]
fn approvals_answer_with_y_a_n_and_close_when_answered_elsewhere() {
    let mut app = app();
    start_turn(&mut app, "go");
    let ask = |id: &str| AppEvent::ApprovalRequested {
        request_id: id.into(),
        tool: "bash".into(),
        summary: "run".into(),
        command: Some("make".into()),
        diff: None,
    };
    feed(
        &mut app,
        [ask("r1"), ask("r2"), ask("r3"), ask("r4"), ask("r5")],
    );
    let approve = |id: &str, decision| Action::Approve {
        request_id: id.into(),
        decision,
    };
    // Other keys do not leak into the input while an approval waits.
    assert!(app.on_key(key(KeyCode::Char('x'))).is_empty());
    assert_eq!(app.input(), "");
    assert_eq!(
        app.on_key(key(KeyCode::Char('y'))),
        [approve("r1", ApprovalDecision::Allow)]
    );
    assert_eq!(
        app.on_key(key(KeyCode::Char('a'))),
        [approve("r2", ApprovalDecision::AllowAlways)]
    );
    assert_eq!(
        app.on_key(key(KeyCode::Char('n'))),
        [approve("r3", ApprovalDecision::Deny)]
    );
    assert_eq!(
        app.on_key(key(KeyCode::Esc)),
        [approve("r4", ApprovalDecision::Deny)]
    );
    // r5 is answered by another client: the overlay goes, the answer is shown.
    assert!(frame(&app, 60).contains("Allow bash?"));
    feed(
        &mut app,
        [AppEvent::ApprovalResolved {
            request_id: "r5".into(),
            decision: ApprovalDecision::Deny,
            by: Some("bob".into()),
        }],
    );
    assert!(!frame(&app, 60).contains("Allow bash?"));
    assert!(text(&app.take_history(60)).contains("denied bash by bob"));
    // Keys type again.
    type_text(&mut app, "x");
    assert_eq!(app.input(), "x");
}

#[test]
fn shift_tab_cycles_the_mode() {
    let mut app = app();
    let mut modes = Vec::new();
    for _ in 0..4 {
        for action in app.on_key(key(KeyCode::BackTab)) {
            let Action::SetMode { mode } = action else {
                panic!("{action:?}")
            };
            modes.push(mode);
        }
    }
    assert_eq!(modes, ["accept-edits", "plan", "default", "accept-edits"]);
    assert!(frame(&app, 80).contains("accept-edits"));
}

#[test]
fn esc_and_ctrl_c_interrupt_a_running_turn() {
    let mut app = app();
    assert!(
        app.on_key(key(KeyCode::Esc)).is_empty(),
        "idle: nothing to interrupt"
    );
    start_turn(&mut app, "go");
    assert_eq!(app.on_key(key(KeyCode::Esc)), [Action::Interrupt]);
    type_text(&mut app, "draft");
    assert!(
        app.on_key(ctrl('c')).is_empty(),
        "the first Ctrl-C clears the input"
    );
    assert_eq!(app.input(), "");
    assert_eq!(app.on_key(ctrl('c')), [Action::Interrupt]);
    // Esc closes a popup before it interrupts anything.
    type_text(&mut app, "/he");
    assert!(app.on_key(key(KeyCode::Esc)).is_empty());
    assert!(!frame(&app, 60).contains("show keys"));
}

#[test]
fn ctrl_d_detaches_only_on_an_empty_input() {
    let mut app = app();
    type_text(&mut app, "ab");
    app.on_key(key(KeyCode::Left));
    assert!(app.on_key(ctrl('d')).is_empty());
    assert_eq!(app.input(), "a");
    app.on_key(ctrl('u'));
    assert_eq!(app.on_key(ctrl('d')), [Action::Detach]);
}

#[test]
fn slash_commands_complete_and_run() {
    let mut app = app();
    type_text(&mut app, "/mo");
    app.on_key(key(KeyCode::Down));
    app.on_key(key(KeyCode::Tab));
    assert_eq!(app.input(), "/mode ");
    type_text(&mut app, "plan");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        [Action::SetMode {
            mode: "plan".into()
        }]
    );

    type_text(&mut app, "/deta");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        [Action::Detach],
        "Enter completes and runs"
    );

    type_text(&mut app, "/rewind 2 --conversation-only");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        [Action::Rewind {
            turn: 2,
            files: false,
            conversation: true
        }]
    );
    type_text(&mut app, "/compact");
    app.on_key(key(KeyCode::Esc));
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        [Action::Command {
            name: "compact".into(),
            args: String::new()
        }]
    );
    type_text(&mut app, "/exit");
    app.on_key(key(KeyCode::Esc));
    assert_eq!(app.on_key(key(KeyCode::Enter)), [Action::Detach]);
}

#[test]
fn file_mentions_complete_from_the_core_files() {
    let mut app = app();
    app.apply(CoreEvent::Files(vec![
        "src/main.rs".into(),
        "src/auth.rs".into(),
    ]));
    type_text(&mut app, "read @aut");
    app.on_key(key(KeyCode::Tab));
    assert_eq!(app.input(), "read @src/auth.rs ");
    type_text(&mut app, "now");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        [submit("read @src/auth.rs now")]
    );
}

#[test]
fn tool_cells_stay_live_until_they_finish_and_keep_order() {
    let mut app = app();
    start_turn(&mut app, "go");
    app.take_history(60);
    let start = |id: &str| AppEvent::ToolCallStarted {
        call_id: id.into(),
        tool: "bash".into(),
        input: serde_json::json!({"command": format!("step {id}")}),
    };
    let done = |id: &str| AppEvent::ToolCallFinished {
        call_id: id.into(),
        status: ToolCallStatus::Ok,
        output: String::new(),
        exit_code: Some(0),
        duration_ms: 5,
        diff: None,
    };
    feed(&mut app, [start("a"), start("b"), done("b")]);
    assert!(
        app.take_history(60).is_empty(),
        "b waits for a, which runs before it"
    );
    assert!(frame(&app, 60).contains("step b"));
    feed(&mut app, [done("a")]);
    let all = text(&app.take_history(60));
    assert!(
        all.find("step a").unwrap() < all.find("step b").unwrap(),
        "{all}"
    );
}

#[test]
fn an_interrupted_turn_ends_its_running_tools() {
    let mut app = app();
    start_turn(&mut app, "go");
    feed(
        &mut app,
        [
            AppEvent::ToolCallStarted {
                call_id: "a".into(),
                tool: "bash".into(),
                input: serde_json::json!({"command": "sleep 100"}),
            },
            AppEvent::TurnFinished {
                status: TurnStatus::Interrupted,
                error: None,
            },
        ],
    );
    assert!(!app.is_running());
    let all = text(&app.take_history(60));
    assert!(all.contains("sleep 100 · cancelled"), "{all}");
    assert!(all.contains("interrupted"), "{all}");
    assert!(!frame(&app, 60).contains("sleep"));
}

#[test]
fn any_size_renders_without_panicking() {
    let mut app = app();
    app.apply(CoreEvent::Clients {
        clients: vec![client("me"), client("bob")],
        me: "me".into(),
    });
    app.apply(CoreEvent::Files(vec!["src/main.rs".into()]));
    start_turn(&mut app, "busy");
    feed(
        &mut app,
        [
            AppEvent::InputQueued {
                input_id: "q".into(),
                text: "queued 漢字 text".into(),
                client: None,
            },
            AppEvent::ReasoningDelta {
                text: "thinking hard ".repeat(20),
            },
            AppEvent::TextDelta {
                text: "# Head\n\n```rust\nfn main() {}\n".into(),
            },
            AppEvent::ToolCallStarted {
                call_id: "a".into(),
                tool: "bash".into(),
                input: serde_json::json!({"command": "yes"}),
            },
            AppEvent::ToolOutputDelta {
                call_id: "a".into(),
                text: "y\n".repeat(50),
            },
            AppEvent::ApprovalRequested {
                request_id: "r".into(),
                tool: "edit".into(),
                summary: "edit a file with a long summary that wraps".into(),
                command: Some("make all".into()),
                diff: Some("@@ -1 +1 @@\n-a\n+b\n".into()),
            },
        ],
    );
    type_text(&mut app, "");
    app.on_paste("a long input\nwith lines\n漢字漢字漢字\n@src");
    for width in 1..=200u16 {
        for height in 1..=60u16 {
            let mut buf =
                ratatui::buffer::Buffer::empty(ratatui::layout::Rect::new(0, 0, width, height));
            let h = app.desired_height(width, height);
            assert!(h <= height && h >= 1);
            let area = ratatui::layout::Rect::new(0, height - h, width, h);
            if let Some(p) = app.render(area, &mut buf) {
                assert!(area.contains(p), "cursor {p:?} outside {area:?}");
            }
        }
    }
}

#[test]
fn presence_comes_from_the_snapshot_and_live_events_not_from_replay() {
    let mut app = stepper_tui::App::new(stepper_tui::TuiOptions::default());
    let mut session = info(stepper_protocol::session::SessionStatus::Idle);
    session.last_seq = 2;
    app.apply(CoreEvent::Session {
        info: session,
        mode: "default".into(),
        context_window: None,
    });
    app.apply(CoreEvent::Clients {
        clients: vec![client("me"), client("bob")],
        me: "me".into(),
    });
    let attached = |name: &str| AppEvent::ClientAttached {
        client: name.into(),
        kind: "tui".into(),
        pid: None,
    };
    // Replayed: bob attached long ago (and is still here), carol came and went.
    app.apply(envelope(1, attached("bob")));
    app.apply(envelope(2, attached("carol")));
    let status = |app: &stepper_tui::App| frame(app, 120).lines().last().unwrap().to_string();
    assert!(
        status(&app).contains("1 other client attached"),
        "{}",
        status(&app)
    );
    app.apply(envelope(3, attached("dave")));
    assert!(status(&app).contains("2 other clients attached"));
    app.apply(envelope(
        4,
        AppEvent::ClientDetached {
            client: "bob".into(),
        },
    ));
    app.apply(envelope(
        5,
        AppEvent::ClientDetached {
            client: "dave".into(),
        },
    ));
    assert!(!status(&app).contains("other client"));
    assert!(text(&app.take_history(80)).contains("carol attached (tui)"));
}

#[test]
fn a_client_arriving_mid_message_does_not_cut_it() {
    let mut app = app();
    start_turn(&mut app, "go");
    let delta = |t: &str| AppEvent::TextDelta { text: t.into() };
    feed(
        &mut app,
        [
            delta("Intro.\n\n```rust\nfn main() "),
            AppEvent::ClientDetached {
                client: "someone".into(),
            },
            delta("{\n    run();\n}\n```\n\n- one\n"),
            AppEvent::TurnFinished {
                status: TurnStatus::Completed,
                error: None,
            },
        ],
    );
    let all = text(&app.take_history(60));
    // One message: the code block whole, the list rendered as a list, the note outside.
    assert!(all.contains("fn main() {\n"), "{all}");
    assert!(!all.contains("```"), "{all}");
    assert!(!all.contains("- one"), "{all}");
    assert!(
        all.find("someone detached").unwrap() < all.find("fn main").unwrap(),
        "{all}"
    );
}
