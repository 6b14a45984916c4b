//! What keys and events do to `App`: the actions sent, and the state users rely on.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use stepper_protocol::PermissionMode;
use stepper_protocol::event::{AppEvent, ApprovalDecision, ToolCallStatus, TurnStatus};
use stepper_tui::{Action, CoreEvent};

use crate::support::*;

fn submit(text: &str) -> Action {
    Action::Submit {
        text: text.into(),
        attachments: Vec::new(),
    }
}

#[test]
fn replayed_envelopes_with_duplicate_seqs_apply_once() {
    let mut app = app();
    let events = [
        AppEvent::InputQueued {
            attachments: Vec::new(),
            input_id: "i".into(),
            text: "hello".into(),
            client: None,
        },
        AppEvent::TurnStarted {
            attachments: Vec::new(),
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
            error_kind: None,
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
                attachments: Vec::new(),
                input_id: "a".into(),
                text: "from the replay".into(),
                client: None,
            },
            AppEvent::InputQueued {
                attachments: Vec::new(),
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
    // Each answer counts once the approval has been on screen a moment.
    let mut now = T0;
    let mut answer = |app: &mut stepper_tui::App, code| {
        now += 500;
        app.tick(now);
        app.on_key(key(code))
    };
    assert_eq!(
        answer(&mut app, KeyCode::Char('y')),
        [approve("r1", ApprovalDecision::Allow)]
    );
    assert_eq!(
        answer(&mut app, KeyCode::Char('a')),
        [approve("r2", ApprovalDecision::AllowAlways)]
    );
    assert_eq!(
        answer(&mut app, KeyCode::Char('n')),
        [approve("r3", ApprovalDecision::Deny)]
    );
    assert_eq!(
        answer(&mut app, KeyCode::Esc),
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
    assert!(text(&app.take_history(60)).contains("denied bash (by bob)"));
    // Keys type again.
    type_text(&mut app, "x");
    assert_eq!(app.input(), "x");
}

#[test]
fn an_mcp_servers_form_is_typed_in_and_sent_or_declined() {
    let mut app = app();
    start_turn(&mut app, "go");
    let form = |id: &str| AppEvent::ElicitationRequested {
        request_id: id.into(),
        server: "tickets".into(),
        message: "Which ticket?".into(),
        schema: serde_json::json!({
            "type": "object",
            "properties": {
                "id": {"type": "integer", "title": "Ticket"},
                "urgent": {"type": "boolean", "default": false}
            },
            "required": ["id"]
        }),
    };
    type_text(&mut app, "my ");
    app.tick(T0 + 1_000);
    feed(&mut app, [form("e1"), form("e2")]);
    // Typed at once, keys are swallowed: neither in a field nor in the input.
    app.tick(T0 + 1_050);
    assert!(app.on_key(key(KeyCode::Char('x'))).is_empty());
    assert_eq!(app.input(), "my ");
    app.tick(T0 + 2_000);
    let shown = frame(&app, 60);
    assert!(shown.contains("tickets asks"), "{shown}");
    assert!(shown.contains("Which ticket?"), "{shown}");
    // A required field left empty is refused, with why.
    assert_eq!(app.on_key(key(KeyCode::Enter)), []);
    assert!(frame(&app, 60).contains("Ticket is required"));
    type_text(&mut app, "4a");
    assert_eq!(app.on_key(key(KeyCode::Enter)), []);
    assert!(frame(&app, 60).contains("whole number"));
    app.on_key(key(KeyCode::Backspace));
    type_text(&mut app, "2");
    app.on_key(key(KeyCode::Tab));
    type_text(&mut app, "y");
    let mut content = stepper_protocol::elicit::Content::new();
    content.insert("id".into(), 42.into());
    content.insert("urgent".into(), true.into());
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        [Action::Elicit {
            request_id: "e1".into(),
            action: stepper_protocol::ElicitAction::Accept,
            content: Some(content),
        }]
    );
    assert_eq!(app.input(), "my ", "the input is untouched");
    // The next form; Esc declines it.
    app.tick(T0 + 3_000);
    assert_eq!(
        app.on_key(key(KeyCode::Esc)),
        [Action::Elicit {
            request_id: "e2".into(),
            action: stepper_protocol::ElicitAction::Decline,
            content: None,
        }]
    );
    // Answered elsewhere: the note says so.
    feed(
        &mut app,
        [AppEvent::ElicitationResolved {
            request_id: "e2".into(),
            action: stepper_protocol::ElicitAction::Decline,
            by: Some("stepper ask".into()),
        }],
    );
}

#[test]
fn an_mcp_server_failing_and_coming_back_is_said() {
    use stepper_protocol::methods::McpStatus;
    let mut app = app();
    let state = |status, reason: Option<&str>, tools| AppEvent::McpServerStatus {
        server: "github".into(),
        status,
        reason: reason.map(str::to_string),
        tools,
    };
    feed(
        &mut app,
        [
            state(McpStatus::Starting, None, None),
            state(McpStatus::Connected, None, Some(3)),
        ],
    );
    assert!(
        !text(&app.take_history(80)).contains("github"),
        "a normal start is quiet"
    );
    feed(
        &mut app,
        [
            state(McpStatus::Failed, Some("it exited"), None),
            state(McpStatus::Starting, None, None),
            state(McpStatus::Connected, None, Some(3)),
        ],
    );
    let shown = text(&app.take_history(80));
    assert!(shown.contains("MCP server github: it exited"), "{shown}");
    assert!(
        shown.contains("MCP server github connected (3 tools)"),
        "{shown}"
    );
}

#[test]
fn a_projects_mcp_servers_are_asked_about_like_approvals_and_outlast_a_turn() {
    let mut app = app();
    app.apply(stepper_tui::CoreEvent::PendingMcp(vec![
        stepper_tui::PendingMcpServer {
            name: "db".into(),
            file: ".mcp.json".into(),
            target: "npx db-mcp".into(),
        },
        stepper_tui::PendingMcpServer {
            name: "web".into(),
            file: ".mcp.json".into(),
            target: "https://mcp.example".into(),
        },
    ]));
    app.tick(T0 + 5_000);
    let shown = frame(&app, 80);
    assert!(
        shown.contains("Allow the project's MCP server db?"),
        "{shown}"
    );
    assert!(shown.contains("npx db-mcp"), "{shown}");
    // A turn ending does not take the question away.
    start_turn(&mut app, "go");
    feed(
        &mut app,
        [AppEvent::TurnFinished {
            status: stepper_protocol::TurnStatus::Completed,
            error: None,
            error_kind: None,
        }],
    );
    app.tick(T0 + 10_000);
    assert_eq!(
        app.on_key(key(KeyCode::Char('y'))),
        [Action::ApproveMcpServer {
            name: "db".into(),
            decision: ApprovalDecision::Allow
        }]
    );
    app.tick(T0 + 15_000);
    assert_eq!(
        app.on_key(key(KeyCode::Char('n'))),
        [Action::ApproveMcpServer {
            name: "web".into(),
            decision: ApprovalDecision::Deny
        }]
    );
}

#[test]
fn an_untrusted_folder_is_asked_about_first_and_the_answer_outlasts_a_turn() {
    let mut app = app();
    app.apply(stepper_tui::CoreEvent::PendingMcp(vec![
        stepper_tui::PendingMcpServer {
            name: "db".into(),
            file: ".mcp.json".into(),
            target: "npx db-mcp".into(),
        },
    ]));
    app.apply(stepper_tui::CoreEvent::Trust(stepper_tui::TrustQuestion {
        folder: "/src/cloned".into(),
        ignored: vec![
            ".stepper/setting.json: hooks (SessionStart)".into(),
            ".mcp.json: MCP servers (db)".into(),
        ],
    }));
    // With no turn running, the screen still changes when its keys start to answer.
    assert!(
        app.animating(),
        "the keys line must be drawn when it goes live"
    );
    // Asked twice (a second attach's question): still one question.
    app.apply(stepper_tui::CoreEvent::Trust(stepper_tui::TrustQuestion {
        folder: "/src/cloned".into(),
        ignored: vec![],
    }));
    app.tick(T0 + 5_000);
    assert!(!app.animating());
    let shown = frame(&app, 100);
    assert!(shown.contains("Trust /src/cloned?"), "{shown}");
    assert!(shown.contains("hooks (SessionStart)"), "{shown}");
    assert!(shown.contains("y trust"), "{shown}");
    start_turn(&mut app, "go");
    feed(
        &mut app,
        [AppEvent::TurnFinished {
            status: stepper_protocol::TurnStatus::Completed,
            error: None,
            error_kind: None,
        }],
    );
    app.tick(T0 + 10_000);
    // `a` is no answer here (it types); Esc says no.
    assert!(app.on_key(key(KeyCode::Char('a'))).is_empty());
    assert_eq!(
        app.on_key(key(KeyCode::Esc)),
        [Action::Trust { trusted: false }]
    );
    app.tick(T0 + 15_000);
    assert!(frame(&app, 100).contains("Allow the project's MCP server db?"));
    // And yes, for another folder.
    app.apply(stepper_tui::CoreEvent::Trust(stepper_tui::TrustQuestion {
        folder: "/src/other".into(),
        ignored: vec!["x".into()],
    }));
    app.tick(T0 + 20_000);
    assert_eq!(
        app.on_key(key(KeyCode::Char('y'))),
        [Action::Trust { trusted: true }]
    );
}

fn ask(id: &str, command: &str) -> AppEvent {
    AppEvent::ApprovalRequested {
        request_id: id.into(),
        tool: "bash".into(),
        summary: "run".into(),
        command: Some(command.into()),
        diff: None,
    }
}

#[test]
fn keys_pressed_before_an_approval_is_ready_are_swallowed() {
    let mut app = app();
    start_turn(&mut app, "go");
    type_text(&mut app, "make it ");
    app.tick(T0 + 1_000);
    feed(&mut app, [ask("r1", "make")]);
    // The user was typing "yes": its letters neither answer nor land in the input, where
    // they would stay and be sent with the next words.
    app.tick(T0 + 1_100);
    for c in "yes, any".chars() {
        assert!(app.on_key(key(KeyCode::Char(c))).is_empty());
    }
    assert!(app.on_key(key(KeyCode::Esc)).is_empty());
    assert!(app.on_key(ctrl('c')).is_empty());
    app.on_paste(" pasted");
    assert_eq!(app.input(), "make it ");
    // Past the guard, keys other than the answers type as ever.
    app.tick(T0 + 2_000);
    type_text(&mut app, "!");
    assert_eq!(app.input(), "make it !");
    assert_eq!(
        app.on_key(key(KeyCode::Char('n'))),
        [Action::Approve {
            request_id: "r1".into(),
            decision: ApprovalDecision::Deny
        }]
    );
    assert_eq!(app.input(), "make it !");
}

#[test]
fn deny_and_tell_interrupts_and_sends_the_next_words_as_the_next_input() {
    let mut app = app();
    start_turn(&mut app, "go");
    feed(&mut app, [ask("r1", "cargo test")]);
    app.tick(T0 + 1_000);
    assert_eq!(
        app.on_key(key(KeyCode::Char('t'))),
        [
            Action::Approve {
                request_id: "r1".into(),
                decision: ApprovalDecision::Deny
            },
            Action::Interrupt
        ]
    );
    assert!(
        frame(&app, 72).contains("tell the model what to do instead"),
        "{}",
        frame(&app, 72)
    );
    // Sent as the next input even while the interrupted turn is still ending: a steer
    // could be taken by a turn that is stopping.
    type_text(&mut app, "use nextest");
    assert_eq!(app.on_key(key(KeyCode::Enter)), [submit("use nextest")]);
    // Once sent, Enter steers a running turn again.
    type_text(&mut app, "more");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        [Action::Steer {
            text: "more".into()
        }]
    );
    // Plain deny stays plain: nothing interrupted.
    feed(&mut app, [ask("r2", "make")]);
    app.tick(T0 + 3_000);
    assert_eq!(
        app.on_key(key(KeyCode::Char('n'))),
        [Action::Approve {
            request_id: "r2".into(),
            decision: ApprovalDecision::Deny
        }]
    );
}

#[test]
fn always_says_what_it_will_allow() {
    let scope = |tool: &str, summary: &str, command: Option<&str>| {
        let mut app = app();
        start_turn(&mut app, "go");
        feed(
            &mut app,
            [AppEvent::ApprovalRequested {
                request_id: "r".into(),
                tool: tool.into(),
                summary: summary.into(),
                command: command.map(String::from),
                diff: None,
            }],
        );
        app.tick(T0 + 1_000);
        let shown = frame(&app, 110);
        shown
            .lines()
            .find(|l| l.contains("a  always"))
            .map(|l| l.trim_matches(|c| c == '│' || c == ' ').to_string())
    };
    assert_eq!(
        scope("bash", "run", Some("cargo test -p auth")).as_deref(),
        Some("a  always: don't ask again this session for `cargo test -p auth`")
    );
    assert_eq!(
        scope("bash", "run", Some("cargo build && cargo test | tail")).as_deref(),
        Some(
            "a  always: don't ask again this session for `cargo build`, `cargo test`, `tail` \
             (each as written)"
        )
    );
    assert_eq!(
        scope("edit", "edit", Some("/home/alice/project/src/auth.rs")).as_deref(),
        Some(
            "a  always: don't ask again this session for edits to /home/alice/project/src/auth.rs"
        )
    );
    assert_eq!(
        scope("web_fetch", "fetch", Some("https://docs.rs/jwt/latest")).as_deref(),
        Some(
            "a  always: don't ask again this session for fetches from docs.rs (and its subdomains)"
        )
    );
    assert_eq!(
        scope("mcp__github__create_issue", "use it", Some("{}")).as_deref(),
        Some("a  always: don't ask again this session for create_issue of the MCP server github")
    );
    // Leaving the sandbox is asked every time: no "always" is offered.
    assert_eq!(
        scope(
            "bash",
            "run it again outside the sandbox, with all your rights and the network: it failed",
            Some("curl example.com")
        ),
        None
    );
}

#[test]
fn an_interrupted_turn_takes_its_approval_with_it() {
    let mut app = app();
    start_turn(&mut app, "go");
    feed(&mut app, [ask("r1", "make")]);
    assert!(frame(&app, 60).contains("Allow bash?"));
    feed(
        &mut app,
        [AppEvent::TurnFinished {
            status: TurnStatus::Interrupted,
            error: None,
            error_kind: None,
        }],
    );
    assert!(
        !frame(&app, 60).contains("Allow bash?"),
        "{}",
        frame(&app, 60)
    );
    app.tick(T0 + 5_000);
    type_text(&mut app, "y");
    assert_eq!(app.input(), "y");
}

#[test]
fn a_tall_approval_is_shown_clipped_with_its_keys() {
    let mut app = app();
    start_turn(&mut app, "go");
    let script: String = (1..=60).map(|i| format!("echo line {i}\n")).collect();
    feed(&mut app, [ask("r1", &script)]);
    app.tick(T0 + 1_000);
    let shown = frame_sized(&app, 60, 16);
    assert!(shown.contains("Allow bash?"), "{shown}");
    assert!(shown.contains("$ echo line 1 "), "{shown}");
    assert!(shown.contains("y  allow"), "{shown}");
    assert!(shown.contains("… +"), "{shown}");
    assert!(!shown.contains("echo line 60"), "{shown}");
}

#[test]
fn a_message_starting_with_a_path_is_text_not_a_command() {
    let mut app = app();
    type_text(&mut app, "/etc/hosts is wrong");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        [submit("/etc/hosts is wrong")]
    );
    // The TUI shows its keys, and the daemon answers with the rest.
    type_text(&mut app, "/help");
    app.on_key(key(KeyCode::Esc));
    assert_eq!(app.on_key(key(KeyCode::Enter)), [submit("/help")]);
}

#[test]
fn altgr_characters_type() {
    let mut app = app();
    let altgr = KeyModifiers::CONTROL | KeyModifiers::ALT;
    for c in ['@', '€', '{'] {
        assert!(
            app.on_key(KeyEvent::new(KeyCode::Char(c), altgr))
                .is_empty()
        );
    }
    assert_eq!(app.input(), "@€{");
}

#[test]
fn escapes_and_tabs_from_tools_are_cleaned() {
    let mut app = app();
    start_turn(&mut app, "go");
    feed(
        &mut app,
        [
            AppEvent::ToolCallStarted {
                call_id: "c1".into(),
                tool: "bash".into(),
                input: serde_json::json!({"command": "make"}),
            },
            AppEvent::ToolOutputDelta {
                call_id: "c1".into(),
                text: "\u{1b}[31merror\u{1b}[0m:\tnot".into(),
            },
            AppEvent::ToolOutputDelta {
                call_id: "c1".into(),
                text: "\tfound\n".into(),
            },
        ],
    );
    let shown = frame(&app, 60);
    assert!(shown.contains("error:  not found"), "{shown}");
    assert!(!shown.contains("[31m"), "{shown}");
    feed(
        &mut app,
        [AppEvent::ToolCallFinished {
            call_id: "c1".into(),
            status: ToolCallStatus::Error,
            output: "\u{1b}[1mbold\u{1b}[0m\tx\n".into(),
            exit_code: Some(2),
            duration_ms: 5,
            diff: None,
        }],
    );
    let all = text(&app.take_history(60));
    assert!(all.contains("bold    x"), "{all}");
    assert!(!all.contains("[1m") && !all.contains("[0m"), "{all}");
}

#[test]
fn committed_cells_leave_the_apps_memory() {
    let mut app = app();
    start_turn(&mut app, "go");
    feed(
        &mut app,
        [
            AppEvent::TextDelta {
                text: "a singular answer".into(),
            },
            AppEvent::TurnFinished {
                status: TurnStatus::Completed,
                error: None,
                error_kind: None,
            },
        ],
    );
    assert!(text(&app.take_history(60)).contains("a singular answer"));
    assert!(app.take_history(60).is_empty());
    assert!(!format!("{app:?}").contains("singular"));
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
    assert_eq!(
        modes.iter().map(|m| m.as_str()).collect::<Vec<_>>(),
        ["accept-edits", "plan", "default", "accept-edits"]
    );
    // Shown once the daemon commits it, not before: it may refuse.
    assert!(!frame(&app, 80).contains("accept-edits"));
    feed(
        &mut app,
        [AppEvent::ModeChanged {
            mode: PermissionMode::AcceptEdits,
            by: None,
        }],
    );
    assert!(frame(&app, 80).contains("· accept-edits"));
    // Refused: the next press cycles from what the daemon says.
    app.on_key(key(KeyCode::BackTab));
    app.apply(CoreEvent::Error("mode refused".into()));
    assert_eq!(
        app.on_key(key(KeyCode::BackTab)),
        [Action::SetMode {
            mode: PermissionMode::Plan
        }]
    );
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
            mode: PermissionMode::Plan
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
    // The daemon's built-ins are inputs it answers, as it does for any client.
    type_text(&mut app, "/clear");
    assert_eq!(app.on_key(key(KeyCode::Enter)), [submit("/clear")]);
    type_text(&mut app, "/model opus");
    assert_eq!(app.on_key(key(KeyCode::Enter)), [submit("/model opus")]);
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
                error_kind: None,
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
fn a_turn_cut_mid_message_does_not_hide_the_next_turns_whole_message() {
    let mut app = app();
    start_turn(&mut app, "go");
    feed(
        &mut app,
        [
            // Stopped while its message streamed: no `MessageCompleted` follows.
            AppEvent::TextDelta {
                text: "half an ans".into(),
            },
            AppEvent::TurnFinished {
                status: TurnStatus::Interrupted,
                error: None,
                error_kind: None,
            },
            // The next turn, replayed finished: its message comes whole, without deltas.
            AppEvent::TurnStarted {
                attachments: Vec::new(),
                input_id: "in-2".into(),
                text: "again".into(),
                model: "m".into(),
            },
            AppEvent::MessageCompleted {
                text: "the whole second answer".into(),
                stop_reason: None,
            },
        ],
    );
    let all = text(&app.take_history(60));
    assert!(all.contains("half an ans"), "{all}");
    assert!(all.contains("the whole second answer"), "{all}");
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
                attachments: Vec::new(),
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
        mode: PermissionMode::Default,
        sandbox: None,
        context_window: None,
    });
    app.apply(CoreEvent::Clients {
        clients: vec![client("me"), client("bob")],
        me: "me".into(),
    });
    let attached = |name: &str| AppEvent::ClientAttached {
        client: name.into(),
        kind: stepper_protocol::methods::ClientKind::Tui,
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
                error_kind: None,
            },
        ],
    );
    let all = text(&app.take_history(60));
    // One message: the code block whole, the list rendered as a list, the note outside.
    assert!(all.contains("fn main() {\n    run();\n}\n"), "{all}");
    assert!(!all.contains("```"), "{all}");
    assert!(!all.contains("- one"), "{all}");
    assert!(all.contains("• one"), "{all}");
    // The code block's lines were on their way to scrollback: the note waits for the end.
    assert!(
        all.find("someone detached").unwrap() > all.find("• one").unwrap(),
        "{all}"
    );
}

#[test]
fn a_long_code_block_reaches_scrollback_line_by_line_while_it_streams() {
    let mut app = app();
    start_turn(&mut app, "go");
    app.take_history(80);
    let delta = |t: String| AppEvent::TextDelta { text: t };
    feed(&mut app, [delta("Here it is:\n```rust\n".into())]);
    for i in 0..300 {
        feed(&mut app, [delta(format!("let x{i} = {i};\nlet y"))]);
        feed(&mut app, [delta(format!("{i} = 0;\n"))]);
    }
    feed(&mut app, [delta("fn tail(".into())]);
    let committed = app.take_history(80);
    let all = text(&committed);
    assert!(
        all.starts_with("\nHere it is:\n\nlet x0 = 0;\nlet y0 = 0;\n"),
        "{all}"
    );
    assert!(all.ends_with("let x299 = 299;\nlet y299 = 0;"), "{all}");
    // Highlighted as they go, with the colours a whole block would get.
    let row = committed
        .iter()
        .find(|l| l.to_string() == "let x150 = 150;")
        .unwrap();
    assert!(row.spans.len() >= 3, "{row:?}");
    // The viewport draws the line still growing only, right under its block.
    let shown = frame(&app, 80);
    assert!(shown.starts_with("fn tail("), "{shown}");
    assert!(!shown.contains("let x"), "{shown}");

    feed(
        &mut app,
        [
            delta(") {}\n```\n\nAfter the code.\n\n".into()),
            AppEvent::MessageCompleted {
                text: String::new(),
                stop_reason: None,
            },
        ],
    );
    let rest = text(&app.take_history(80));
    assert_eq!(rest, "fn tail() {}\n\nAfter the code.");
}

#[test]
fn a_message_ending_inside_a_code_block_keeps_its_last_line() {
    let mut app = app();
    start_turn(&mut app, "go");
    app.take_history(80);
    feed(
        &mut app,
        [
            AppEvent::TextDelta {
                text: "```\nfirst\nlast".into(),
            },
            AppEvent::MessageCompleted {
                text: String::new(),
                stop_reason: None,
            },
        ],
    );
    assert_eq!(text(&app.take_history(80)), "\nfirst\nlast");
}

#[test]
fn a_mode_change_of_ours_is_shown_in_the_status_line_only() {
    let mut app = app();
    app.apply(CoreEvent::Clients {
        clients: vec![client("stepper attach 30039"), client("stepper ask 51")],
        me: "stepper attach 30039".into(),
    });
    app.take_history(80);
    for mode in [PermissionMode::AcceptEdits, PermissionMode::Plan] {
        app.on_key(KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT));
        feed(
            &mut app,
            [AppEvent::ModeChanged {
                mode,
                by: Some("stepper attach 30039".into()),
            }],
        );
    }
    assert_eq!(text(&app.take_history(80)), "", "no transcript line");
    assert!(frame(&app, 80).contains("· plan"), "{}", frame(&app, 80));
    // Another client's change is noted, once.
    feed(
        &mut app,
        [AppEvent::ModeChanged {
            mode: PermissionMode::Default,
            by: Some("stepper ask 51".into()),
        }],
    );
    assert_eq!(
        text(&app.take_history(80)),
        "\n⚙ mode → default (by stepper ask)"
    );
}

#[test]
fn client_names_show_their_pid_only_when_two_share_a_name() {
    let mut app = app();
    app.apply(CoreEvent::Clients {
        clients: vec![client("stepper attach 30039")],
        me: "stepper attach 30039".into(),
    });
    app.take_history(80);
    start_turn(&mut app, "go");
    feed(
        &mut app,
        [
            AppEvent::ClientAttached {
                client: "stepper ask 4242".into(),
                kind: stepper_protocol::methods::ClientKind::Cli,
                pid: Some(4242),
            },
            AppEvent::Steered {
                input_id: Some("s".into()),
                text: "also the docs".into(),
                by: Some("stepper ask 4242".into()),
            },
            // A second terminal of the same name: now the pids tell them apart.
            AppEvent::ClientAttached {
                client: "stepper attach 777".into(),
                kind: stepper_protocol::methods::ClientKind::Tui,
                pid: Some(777),
            },
            AppEvent::ModelChanged {
                model: "openai/gpt-5".into(),
                by: Some("stepper attach 777".into()),
            },
            AppEvent::ClientDetached {
                client: "stepper attach 777".into(),
            },
            AppEvent::ModelChanged {
                model: "openai/gpt-5-mini".into(),
                by: Some("stepper ask 4242".into()),
            },
        ],
    );
    let all = text(&app.take_history(80));
    assert!(all.contains("• stepper ask attached (cli)"), "{all}");
    assert!(
        all.contains("↳ steered: also the docs (by stepper ask)"),
        "{all}"
    );
    assert!(all.contains("• stepper attach 777 attached (tui)"), "{all}");
    assert!(
        all.contains("model → openai/gpt-5 (by stepper attach 777)"),
        "{all}"
    );
    assert!(all.contains("• stepper attach 777 detached"), "{all}");
    assert!(
        all.contains("model → openai/gpt-5-mini (by stepper ask)"),
        "{all}"
    );
    assert!(!all.contains("4242"), "{all}");
}

#[test]
fn a_large_paste_is_a_token_in_the_input_and_sent_whole() {
    let mut app = app();
    let pasted: String = (1..=200).map(|i| format!("log line {i}\n")).collect();
    type_text(&mut app, "why does this fail? ");
    app.on_paste(&pasted);
    assert_eq!(
        app.input(),
        "why does this fail? [Pasted text #1 +200 lines]"
    );
    assert!(frame(&app, 72).contains("› why does this fail? [Pasted text #1 +200 lines]"));
    type_text(&mut app, " thanks");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        [submit(&format!("why does this fail? {pasted} thanks"))]
    );
    // Backspace takes a token whole, and what it stood for with it.
    app.on_paste(&pasted);
    app.on_paste(&pasted);
    assert_eq!(
        app.input(),
        "[Pasted text #2 +200 lines][Pasted text #3 +200 lines]"
    );
    app.on_key(key(KeyCode::Backspace));
    assert_eq!(app.input(), "[Pasted text #2 +200 lines]");
    type_text(&mut app, "x");
    app.on_key(key(KeyCode::Backspace));
    app.on_key(key(KeyCode::Backspace));
    assert_eq!(app.input(), "");
    // A short paste is text as ever.
    app.on_paste("two\nlines");
    assert_eq!(app.input(), "two\nlines");
}
