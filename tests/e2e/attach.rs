//! `stepper attach` in real terminals: two tmux panes attached to one session see the same
//! inputs, answers and approvals, and a client that detaches during a turn finds the whole
//! turn, once, when it comes back.

use serde_json::json;
use stepper_e2e::fake_llm::{stream_end, stream_start, text_deltas, tool_use_stream};
use stepper_e2e::tmux::HEIGHT;
use stepper_e2e::{Gate, Pane, Reply, TestEnv, Tmux};
use stepper_protocol::PermissionMode;

/// A session in the project folder, made over the protocol so that both panes attach to a
/// session neither of them created; `default` asks before a shell command that changes files.
fn create_session(env: &TestEnv) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        env.create_session(&env.client().await, Some(PermissionMode::Default))
            .await
    })
}

/// A reply that streams `before`, holds until `gate` opens, then streams `after` and ends:
/// text on both sides of whatever the test does meanwhile.
fn held(before: &str, gate: &Gate, after: &str) -> Reply {
    Reply::Held {
        before: stream_start() + &text_deltas(&[before]),
        gate: gate.clone(),
        after: text_deltas(&[after]) + &stream_end(),
    }
}

/// The command line that attaches a pane to `id`, then says how `stepper` exited.
fn attach_line(id: &str) -> String {
    format!("stepper attach {id}; echo \"attach exited $?\"")
}

/// Runs `stepper attach ID` in `pane` and waits until the TUI is up: its status line names
/// the session. Keys typed before then would reach the shell's line editing, not the TUI.
fn attach(pane: &Pane, id: &str) {
    pane.run(&attach_line(id));
    let short = stepper_protocol::session::short_ids(&[id]);
    let status = format!(" · {} · ", short[0]);
    pane.wait_for_history("the TUI's status line", |h| {
        after_last_attach(h, id).is_some_and(|s| s.contains(&status))
    });
}

/// The part of a pane's `history` after the last time `stepper attach ID` was typed.
fn after_last_attach<'h>(history: &'h str, id: &str) -> Option<&'h str> {
    let marker = format!("$ {}", attach_line(id));
    history.rsplit_once(&marker).map(|(_, after)| after)
}

/// Ctrl-D on the empty input: the TUI gives the terminal back to the shell, saying so, and
/// `stepper` exits 0.
fn detach(pane: &Pane, id: &str) {
    pane.press("C-d");
    pane.wait_for("the shell back, saying the TUI detached", |s| {
        let lines: Vec<&str> = s.lines().collect();
        matches!(
            lines.as_slice(),
            [.., said, "attach exited 0", "$"] if said.contains("detached") && said.contains(id)
        )
    });
}

fn submit(pane: &Pane, text: &str) {
    pane.type_text(text);
    pane.press("Enter");
}

#[test]
fn two_panes_share_inputs_answers_and_approvals() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new();
    env.start_daemon();
    let gate = Gate::new();
    env.fake
        .push(held("streamed-before-the-gate ", &gate, "and-after-it"));
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": "touch approved-file"}),
    )])));
    env.fake.push(Reply::text(&["the-file-is-made"]));
    let id = create_session(&env);

    let tmux = Tmux::new(&env);
    let (a, b) = (tmux.shell(), tmux.shell());
    attach(&a, &id);
    attach(&b, &id);
    for pane in [&a, &b] {
        pane.wait_for_text("1 other client attached");
    }

    // Typed in A: the input and the model's answer, while it streams and once it is whole,
    // reach both. `#1` marks the transcript's cell, not A's own input box.
    submit(&a, "hello-from-pane-a");
    for pane in [&a, &b] {
        pane.wait_for_history("the input in the transcript", |s| {
            s.contains("› hello-from-pane-a  #1")
        });
        pane.wait_for_text("streamed-before-the-gate");
    }
    gate.open();
    for pane in [&a, &b] {
        pane.wait_for_history("the whole answer", |s| {
            s.contains("streamed-before-the-gate and-after-it")
        });
        pane.wait_for_text("● idle");
    }

    // Typed in B this time: both are asked; B answers; A's overlay closes.
    submit(&b, "make-a-file");
    for pane in [&a, &b] {
        // Its keys answer once it stops saying to read it first (keys typed as it appears
        // are swallowed).
        pane.wait_for("the approval overlay, answerable", |s| {
            s.contains("Allow bash?")
                && s.contains("touch approved-file")
                && s.contains("y  allow")
                && !s.contains("keys in a moment")
        });
    }
    let file = env.project.path().join("approved-file");
    assert!(!file.exists(), "nothing runs before the answer");
    b.press("y");
    for pane in [&a, &b] {
        pane.wait_for("the overlay to close", |s| !s.contains("Allow bash?"));
    }
    // A learns who answered, and the turn goes on to its end in both.
    a.wait_for_history("the answer from B", |s| s.contains("allowed bash (by"));
    for pane in [&a, &b] {
        pane.wait_for_history("the turn's end", |s| s.contains("the-file-is-made"));
        pane.wait_for_text("● idle");
    }
    assert!(file.exists(), "the approved command ran");
}

#[test]
fn detaching_mid_turn_and_reattaching_shows_the_whole_turn_once() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new();
    env.start_daemon();
    let (first, second) = (Gate::new(), Gate::new());
    env.fake
        .push(held("alpha-before-detach ", &first, "omega-after-detach"));
    env.fake
        .push(held("beta-before-detach ", &second, "gamma-after-reattach"));
    let id = create_session(&env);

    let tmux = Tmux::new(&env);
    let (a, b) = (tmux.shell(), tmux.shell());
    attach(&a, &id);
    attach(&b, &id);
    for pane in [&a, &b] {
        pane.wait_for_text("1 other client attached");
    }

    // A leaves during the first turn, which ends while A is away.
    submit(&a, "first-question");
    a.wait_for_text("alpha-before-detach");
    detach(&a, &id);
    b.wait_for("B to see A leave", |s| !s.contains("other client attached"));
    assert!(b.screen().contains("working"), "the turn goes on without A");
    first.open();
    b.wait_for_history("the first turn's end in B", |s| {
        s.contains("alpha-before-detach omega-after-detach")
    });
    b.wait_for_text("● idle");

    // A comes back to the finished turn and starts the second; B leaves during that one and
    // comes back while it still runs, to see the rest arrive live.
    attach(&a, &id);
    submit(&a, "second-question");
    b.wait_for_text("beta-before-detach");
    detach(&b, &id);
    attach(&b, &id);
    b.wait_for_history("the running turn replayed", |h| {
        after_last_attach(h, id.as_str())
            .is_some_and(|s| s.contains("beta-before-detach") && s.contains("working"))
    });
    second.open();
    for pane in [&a, &b] {
        pane.wait_for_history("the second turn's end", |s| {
            s.contains("beta-before-detach gamma-after-reattach")
        });
        pane.wait_for_text("● idle");
    }

    // Events arrive in order, so once the second turn has ended on screen the replays are
    // long done: a cell shown twice would be there by now. Each pane shows each cell once
    // since it last attached.
    for pane in [&a, &b] {
        let history = pane.history();
        let shown = after_last_attach(&history, &id).unwrap();
        for text in [
            "› first-question  #1",
            "alpha-before-detach omega-after-detach",
            "› second-question  #2",
            "beta-before-detach gamma-after-reattach",
        ] {
            assert_eq!(
                shown.matches(text).count(),
                1,
                "{text:?} once since pane {} last attached; it shows:\n{shown}",
                pane.id()
            );
        }
    }
}

#[test]
fn interrupting_a_tall_answer_leaves_the_input_box_at_the_bottom() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new();
    env.start_daemon();
    let gate = Gate::new();
    // A screen full of history, then an answer whose list keeps the viewport tall while it
    // streams: interrupted, it goes to scrollback and the viewport shrinks.
    let long: String = (1..=60).map(|i| format!("line {i}\n\n")).collect();
    env.fake.push(Reply::text(&[&long]));
    let list: String = (1..=30).map(|i| format!("- item {i}\n")).collect();
    env.fake
        .push(held(&format!("{list}streamed-before-esc "), &gate, "never"));
    let id = create_session(&env);
    let tmux = Tmux::new(&env);
    let a = tmux.shell();
    attach(&a, &id);
    submit(&a, "first");
    a.wait_for_text("line 60");
    a.wait_for_text("● idle");
    submit(&a, "a-question");
    a.wait_for_text("streamed-before-esc");
    a.press("Escape");
    // The status line stays on the last row, the input box above it, the answer and the
    // interruption right above that: no rows left blank below the box.
    let screen = a.wait_for("the turn interrupted", |s| s.contains("● idle"));
    let rows: Vec<&str> = screen.lines().collect();
    assert_eq!(
        rows.len(),
        usize::from(HEIGHT),
        "blank rows below:\n{screen}"
    );
    assert!(rows[rows.len() - 1].starts_with("● idle"), "{screen}");
    assert!(rows[rows.len() - 3].starts_with("› "), "{screen}");
    assert!(
        rows[..rows.len() - 4]
            .iter()
            .any(|r| r.contains("■ interrupted")),
        "{screen}"
    );
    gate.open();
}

/// The daemon restarts under an attached TUI (here it is killed): the TUI says so, starts
/// one again, follows the session from where it was, and the next question is answered.
#[test]
fn the_tui_reconnects_when_the_daemon_restarts() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new();
    env.start_daemon();
    let id = create_session(&env);
    env.fake.push(Reply::text(&["first-answer"]));
    env.fake.push(Reply::text(&["after-the-restart"]));
    let tmux = Tmux::new(&env);
    let pane = tmux.shell();
    attach(&pane, &id);
    submit(&pane, "before");
    pane.wait_for_text("first-answer");
    let before = env.daemon_pid().expect("the daemon runs");
    // Not `signal_daemon`, which waits for the lock to come free: the TUI may start the
    // next daemon, which takes it, before that wait looks.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(before),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    pane.wait_for_text("reconnected to the daemon");
    assert_ne!(env.daemon_pid(), Some(before), "a new daemon");
    submit(&pane, "after");
    let screen = pane.wait_for_text("after-the-restart");
    assert!(!screen.contains("attach exited 1"), "{screen}");
    // Nothing shown twice: the first answer once.
    let history = pane.wait_for_history("the whole pane", |_| true);
    let shown = after_last_attach(&history, &id).unwrap_or(&history);
    assert_eq!(shown.matches("first-answer").count(), 1, "{shown}");
    detach(&pane, &id);
}
