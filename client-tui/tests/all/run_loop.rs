//! `run_with` driven by a mock core over the real channels, on a `TestBackend`.

use std::io;
use std::time::Duration;

use crossterm::event::{Event, KeyCode};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use ratatui::backend::{Backend, ClearType, TestBackend, WindowSize};
use ratatui::layout::{Position, Size};
use stepper_protocol::PermissionMode;
use stepper_protocol::event::{AppEvent, TurnStatus};
use stepper_tui::{Action, CoreEvent, Exit, Screen, TuiOptions, run_with};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::support::*;

/// A `TestBackend` the test keeps a handle on while the loop owns the screen.
#[derive(Clone)]
struct Shared(Arc<Mutex<TestBackend>>);

impl Backend for Shared {
    type Error = Infallible;

    fn draw<'a, I>(&mut self, content: I) -> Result<(), Infallible>
    where
        I: Iterator<Item = (u16, u16, &'a ratatui::buffer::Cell)>,
    {
        // A real terminal drops what falls outside it, as happens between a shrink and
        // the resize event that reports it.
        let mut t = self.0.lock().unwrap();
        let area = t.buffer().area;
        t.draw(content.filter(|(x, y, _)| area.contains(Position::new(*x, *y))))
    }
    fn append_lines(&mut self, n: u16) -> Result<(), Infallible> {
        self.0.lock().unwrap().append_lines(n)
    }
    fn hide_cursor(&mut self) -> Result<(), Infallible> {
        self.0.lock().unwrap().hide_cursor()
    }
    fn show_cursor(&mut self) -> Result<(), Infallible> {
        self.0.lock().unwrap().show_cursor()
    }
    fn get_cursor_position(&mut self) -> Result<Position, Infallible> {
        self.0.lock().unwrap().get_cursor_position()
    }
    fn set_cursor_position<P: Into<Position>>(&mut self, p: P) -> Result<(), Infallible> {
        self.0.lock().unwrap().set_cursor_position(p)
    }
    fn clear(&mut self) -> Result<(), Infallible> {
        self.0.lock().unwrap().clear()
    }
    fn clear_region(&mut self, t: ClearType) -> Result<(), Infallible> {
        self.0.lock().unwrap().clear_region(t)
    }
    fn size(&self) -> Result<Size, Infallible> {
        self.0.lock().unwrap().size()
    }
    fn window_size(&mut self) -> Result<WindowSize, Infallible> {
        self.0.lock().unwrap().window_size()
    }
    fn flush(&mut self) -> Result<(), Infallible> {
        self.0.lock().unwrap().flush()
    }
}

struct Harness {
    keys: mpsc::UnboundedSender<Event>,
    events: mpsc::Sender<CoreEvent>,
    actions: mpsc::Receiver<Action>,
    cancel: CancellationToken,
    terminal: Shared,
    done: tokio::task::JoinHandle<io::Result<Exit>>,
}

fn start(width: u16, height: u16) -> Harness {
    start_with(width, height, 1024, 16)
}

/// The loop with channels of the given capacities.
fn start_with(width: u16, height: u16, events: usize, actions: usize) -> Harness {
    let (keys_tx, keys_rx) = mpsc::unbounded_channel();
    let (events_tx, events_rx) = mpsc::channel(events);
    let (actions_tx, actions_rx) = mpsc::channel(actions);
    let cancel = CancellationToken::new();
    let terminal = Shared(Arc::new(Mutex::new(TestBackend::new(width, height))));
    let screen = Screen::new(terminal.clone(), Position::new(0, 0)).unwrap();
    let token = cancel.clone();
    let done = tokio::spawn(run_with(
        TuiOptions::default(),
        actions_tx,
        events_rx,
        token,
        screen,
        Keys(keys_rx),
    ));
    Harness {
        keys: keys_tx,
        events: events_tx,
        actions: actions_rx,
        cancel,
        terminal,
        done,
    }
}

impl Harness {
    /// Waits (with a deadline) until the terminal shows `text`.
    async fn wait_for(&self, text: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !self.everything().contains(text) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "never shown: {text}\n{}",
                self.everything()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The scrollback and the screen, as the user would scroll through them.
    fn everything(&self) -> String {
        let t = self.terminal.0.lock().unwrap();
        format!(
            "{}\n{}",
            buffer_text(t.scrollback()),
            buffer_text(t.buffer())
        )
    }
}

async fn next_action(h: &mut Harness) -> Action {
    tokio::time::timeout(Duration::from_secs(5), h.actions.recv())
        .await
        .expect("an action within 5s")
        .expect("the loop is running")
}

fn press(h: &Harness, code: KeyCode) {
    h.keys.send(Event::Key(key(code))).unwrap();
}

async fn session(h: &Harness) {
    h.events
        .send(CoreEvent::Session {
            info: info(stepper_protocol::session::SessionStatus::Idle),
            mode: PermissionMode::Default,
            sandbox: None,
            context_window: None,
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn ctrl_d_sends_detach_and_run_returns_detached() {
    let mut h = start(60, 20);
    session(&h).await;
    for c in "hi".chars() {
        press(&h, KeyCode::Char(c));
    }
    press(&h, KeyCode::Enter);
    assert_eq!(
        next_action(&mut h).await,
        Action::Submit {
            text: "hi".into(),
            attachments: Vec::new(),
        }
    );
    h.keys.send(Event::Key(ctrl('d'))).unwrap();
    assert_eq!(next_action(&mut h).await, Action::Detach);
    let exit = h.done.await.unwrap();
    assert_eq!(exit.unwrap(), Exit::Detached);
}

#[tokio::test]
async fn replayed_history_goes_to_scrollback_once() {
    let mut h = start(60, 8);
    session(&h).await;
    let mut events = Vec::new();
    for turn in 1..=6u64 {
        events.push(AppEvent::TurnStarted {
            attachments: Vec::new(),
            input_id: format!("i{turn}"),
            text: format!("question {turn}"),
            model: "m".into(),
        });
        events.push(AppEvent::TextDelta {
            text: format!("answer {turn}"),
        });
        events.push(AppEvent::MessageCompleted {
            text: format!("answer {turn}"),
            stop_reason: None,
        });
        events.push(AppEvent::TurnFinished {
            status: TurnStatus::Completed,
            error: None,
            error_kind: None,
        });
    }
    // Replayed, then resent from an older seq by a resubscription.
    for (i, e) in events.iter().enumerate() {
        h.events
            .send(envelope(i as u64 + 1, e.clone()))
            .await
            .unwrap();
    }
    for (i, e) in events.iter().enumerate().skip(10) {
        h.events
            .send(envelope(i as u64 + 1, e.clone()))
            .await
            .unwrap();
    }
    h.wait_for("answer 6").await;
    h.keys.send(Event::Key(ctrl('d'))).unwrap();
    assert_eq!(next_action(&mut h).await, Action::Detach);
    let exit = (&mut h.done).await.unwrap();
    assert_eq!(exit.unwrap(), Exit::Detached);
    let all = h.everything();
    for turn in 1..=6 {
        assert_eq!(all.matches(&format!("question {turn}")).count(), 1, "{all}");
        assert_eq!(all.matches(&format!("answer {turn}")).count(), 1, "{all}");
    }
    assert!(all.find("answer 1").unwrap() < all.find("question 2").unwrap());
}

#[tokio::test]
async fn run_returns_on_cancel() {
    let h = start(60, 20);
    session(&h).await;
    h.cancel.cancel();
    let exit = tokio::time::timeout(Duration::from_secs(5), h.done)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(exit.unwrap(), Exit::Cancelled);
}

#[tokio::test]
async fn run_returns_when_the_core_disconnects() {
    let h = start(60, 20);
    h.events
        .send(CoreEvent::Disconnected("daemon stopped".into()))
        .await
        .unwrap();
    let exit = tokio::time::timeout(Duration::from_secs(5), h.done)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(exit.unwrap(), Exit::Disconnected("daemon stopped".into()));
}

#[tokio::test]
async fn streaming_with_resizes_at_any_moment() {
    let mut h = start(80, 24);
    session(&h).await;
    let mut seq = 0;
    let mut send = |event: AppEvent| {
        seq += 1;
        envelope(seq, event)
    };
    let events = h.events.clone();
    events
        .send(send(AppEvent::TurnStarted {
            attachments: Vec::new(),
            input_id: "i".into(),
            text: "go".into(),
            model: "m".into(),
        }))
        .await
        .unwrap();
    let sizes = [
        (80u16, 24u16),
        (20, 5),
        (1, 1),
        (200, 60),
        (3, 40),
        (120, 2),
        (0, 0),
        (80, 24),
    ];
    for i in 0..400 {
        let text = match i % 40 {
            0 => "\n\n```rust\nfn main() {\n".to_string(),
            20 => "}\n```\n\n".to_string(),
            _ => format!("word{i} "),
        };
        events
            .send(send(AppEvent::TextDelta { text }))
            .await
            .unwrap();
        if i % 50 == 0 {
            let (w, hgt) = sizes[(i / 50) % sizes.len()];
            h.terminal.0.lock().unwrap().resize(w, hgt);
            h.keys.send(Event::Resize(w, hgt)).unwrap();
        }
        if i % 7 == 0 {
            press(&h, KeyCode::Char('x'));
        }
        if i % 10 == 0 {
            tokio::task::yield_now().await;
        }
    }
    events
        .send(send(AppEvent::TurnFinished {
            status: TurnStatus::Completed,
            error: None,
            error_kind: None,
        }))
        .await
        .unwrap();
    h.keys.send(Event::Key(ctrl('u'))).unwrap();
    h.keys.send(Event::Key(ctrl('d'))).unwrap();
    assert_eq!(next_action(&mut h).await, Action::Detach);
    let exit = h.done.await.unwrap();
    assert_eq!(exit.unwrap(), Exit::Detached);
}

/// The bridge spawns `run` and `pick` on a multi-thread runtime: their futures must be Send.
#[test]
fn the_public_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let (actions, _rx) = mpsc::channel(1);
    let (_tx, events) = mpsc::channel(1);
    let run = stepper_tui::run(
        TuiOptions::default(),
        actions,
        events,
        CancellationToken::new(),
    );
    assert_send(&run);
    let pick = stepper_tui::pick(Vec::new());
    assert_send(&pick);
}

#[tokio::test]
async fn detaching_mid_message_keeps_what_streamed_on_screen() {
    let mut h = start(60, 20);
    session(&h).await;
    let events = [
        AppEvent::TurnStarted {
            attachments: Vec::new(),
            input_id: "i".into(),
            text: "question".into(),
            model: "m".into(),
        },
        AppEvent::TextDelta {
            text: "half of the answer".into(),
        },
    ];
    for (i, e) in events.iter().enumerate() {
        h.events
            .send(envelope(i as u64 + 1, e.clone()))
            .await
            .unwrap();
    }
    h.wait_for("half of the answer").await;
    h.keys.send(Event::Key(ctrl('d'))).unwrap();
    assert_eq!(next_action(&mut h).await, Action::Detach);
    let exit = (&mut h.done).await.unwrap();
    assert_eq!(exit.unwrap(), Exit::Detached);
    let all = h.everything();
    assert_eq!(all.matches("half of the answer").count(), 1, "{all}");
}

/// The bridge may block handing over an event while the UI has actions for it: the UI must
/// keep taking events, or neither side ever moves again.
#[tokio::test]
async fn events_keep_flowing_while_the_core_is_not_taking_actions() {
    let mut h = start_with(60, 12, 4, 1);
    session(&h).await;
    // Three inputs: the first fills the actions channel, the others wait in the UI.
    for text in ["one", "two", "three"] {
        for c in text.chars() {
            press(&h, KeyCode::Char(c));
        }
        press(&h, KeyCode::Enter);
    }
    // The core floods events without reading actions, as a bridge blocked on sending does.
    let flood = async {
        for i in 1..=400u64 {
            h.events
                .send(envelope(
                    i,
                    AppEvent::Notice {
                        message: format!("notice {i}"),
                    },
                ))
                .await
                .unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(5), flood)
        .await
        .expect("the UI kept taking events");
    h.wait_for("notice 400").await;
    for text in ["one", "two", "three"] {
        assert_eq!(
            next_action(&mut h).await,
            Action::Submit {
                text: text.into(),
                attachments: Vec::new(),
            }
        );
    }
    h.keys.send(Event::Key(ctrl('d'))).unwrap();
    assert_eq!(next_action(&mut h).await, Action::Detach);
    assert_eq!((&mut h.done).await.unwrap().unwrap(), Exit::Detached);
}

/// Leaving delivers what was typed before, then Detach, even to a core slow to read.
#[tokio::test]
async fn detach_reaches_a_slow_core_after_the_actions_before_it() {
    let mut h = start_with(60, 12, 16, 1);
    session(&h).await;
    for text in ["a", "b"] {
        press(&h, KeyCode::Char(text.chars().next().unwrap()));
        press(&h, KeyCode::Enter);
    }
    h.keys.send(Event::Key(ctrl('d'))).unwrap();
    // The core reads nothing until its one-slot channel is full: the rest waits in the TUI.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while h.actions.len() < h.actions.max_capacity() {
        assert!(std::time::Instant::now() < deadline, "no action was sent");
        tokio::task::yield_now().await;
    }
    assert!(
        !h.done.is_finished(),
        "run returned before Detach was delivered"
    );
    assert_eq!(
        next_action(&mut h).await,
        Action::Submit {
            text: "a".into(),
            attachments: Vec::new(),
        }
    );
    assert_eq!(
        next_action(&mut h).await,
        Action::Submit {
            text: "b".into(),
            attachments: Vec::new(),
        }
    );
    assert_eq!(next_action(&mut h).await, Action::Detach);
    assert_eq!((&mut h.done).await.unwrap().unwrap(), Exit::Detached);
}

#[tokio::test]
async fn a_new_session_clears_the_screen_of_the_old_one() {
    let h = start(60, 12);
    session(&h).await;
    let old = [
        AppEvent::TurnStarted {
            attachments: Vec::new(),
            input_id: "i1".into(),
            text: "old question".into(),
            model: "m".into(),
        },
        AppEvent::MessageCompleted {
            text: "old answer".into(),
            stop_reason: None,
        },
        AppEvent::TurnFinished {
            status: TurnStatus::Completed,
            error: None,
            error_kind: None,
        },
    ];
    for (i, e) in old.into_iter().enumerate() {
        h.events.send(envelope(i as u64 + 1, e)).await.unwrap();
    }
    h.wait_for("old answer").await;
    // `/fork`: the core shows a new session, whose events start again from seq 1.
    let mut fresh = info(stepper_protocol::session::SessionStatus::Idle);
    fresh.id = "0198a3f2-0000-7000-8000-000000000001".into();
    h.events
        .send(CoreEvent::Session {
            info: fresh,
            mode: PermissionMode::Default,
            sandbox: None,
            context_window: None,
        })
        .await
        .unwrap();
    h.events
        .send(envelope(
            1,
            AppEvent::SessionCreated {
                cwd: "/home/alice/project".into(),
                model: "m".into(),
                title: None,
            },
        ))
        .await
        .unwrap();
    h.wait_for("session started in /home/alice/project").await;
    let screen = buffer_text(h.terminal.0.lock().unwrap().buffer());
    assert!(
        !screen.contains("old"),
        "the old session is still on screen:\n{screen}"
    );
    let short = stepper_protocol::session::short_ids(&["0198a3f2-0000-7000-8000-000000000001"]);
    assert!(screen.contains(&short[0]), "{screen}");
    h.cancel.cancel();
}
