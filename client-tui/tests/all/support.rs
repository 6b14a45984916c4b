//! Builders for events and keys, and text views of frames, shared by the tests.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::text::Line;
use stepper_protocol::PermissionMode;
use stepper_protocol::event::{AppEvent, EventEnvelope};
use stepper_protocol::methods::{AttachedClient, ClientKind};
use stepper_protocol::session::{SessionInfo, SessionStatus};
use stepper_tui::{App, CoreEvent, TuiOptions};
use unicode_width::UnicodeWidthStr;

pub const T0: i64 = 1_750_000_000_000;
pub const SESSION: &str = "0198a3f2-7c1e-7d2a-9b1c-5e6f7a8b9c0d";

pub fn info(status: SessionStatus) -> SessionInfo {
    SessionInfo {
        id: SESSION.into(),
        title: Some("fix the login bug".into()),
        cwd: "/home/alice/project".into(),
        model: "anthropic/claude-sonnet-4-5".into(),
        status,
        created_at: T0,
        updated_at: T0,
        last_seq: 0,
        turns: 0,
    }
}

/// A fresh app showing an idle session, the clock at `T0`.
pub fn app() -> App {
    let mut app = App::new(TuiOptions::default());
    app.tick(T0);
    app.apply(CoreEvent::Session {
        info: info(SessionStatus::Idle),
        mode: PermissionMode::Default,
        sandbox: None,
        context_window: Some(200_000),
    });
    app.apply(CoreEvent::Clients {
        clients: vec![client("me")],
        me: "me".into(),
    });
    app
}

pub fn client(name: &str) -> AttachedClient {
    AttachedClient {
        name: name.into(),
        kind: ClientKind::Tui,
        pid: Some(42),
        since: T0,
    }
}

/// Feeds events to `app` with consecutive seqs after its last one.
pub fn feed(app: &mut App, events: impl IntoIterator<Item = AppEvent>) {
    for event in events {
        let seq = app.last_seq() + 1;
        app.apply(envelope(seq, event));
    }
}

/// Feeds events of the agent `agent` (a layer, a worker, a subagent) to `app`.
pub fn feed_in(app: &mut App, agent: &str, events: impl IntoIterator<Item = AppEvent>) {
    for event in events {
        let seq = app.last_seq() + 1;
        let CoreEvent::Event(mut env) = envelope(seq, event) else {
            unreachable!()
        };
        env.agent = Some(agent.into());
        app.apply(CoreEvent::Event(env));
    }
}

pub fn envelope(seq: u64, event: AppEvent) -> CoreEvent {
    CoreEvent::Event(EventEnvelope {
        session_id: SESSION.into(),
        seq,
        at: T0,
        turn: Some(1),
        agent: None,
        event,
    })
}

pub fn start_turn(app: &mut App, text: &str) {
    feed(
        app,
        [
            AppEvent::InputQueued {
                attachments: Vec::new(),
                input_id: "in-1".into(),
                text: text.into(),
                client: Some("me".into()),
            },
            AppEvent::TurnStarted {
                attachments: Vec::new(),
                input_id: "in-1".into(),
                text: text.into(),
                model: "anthropic/claude-sonnet-4-5".into(),
            },
        ],
    );
}

pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

pub fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

pub fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        let actions = app.on_key(key(KeyCode::Char(c)));
        assert!(actions.is_empty(), "typing {c:?} sent {actions:?}");
    }
}

/// Lines as text, trailing spaces trimmed.
pub fn text(lines: &[Line<'_>]) -> String {
    lines
        .iter()
        .map(|l| l.to_string().trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn buffer_text(buf: &Buffer) -> String {
    let mut out = Vec::new();
    for y in buf.area.top()..buf.area.bottom() {
        let mut row = String::new();
        let mut skip = 0;
        for x in buf.area.left()..buf.area.right() {
            let cell = &buf[(x, y)];
            if skip == 0 {
                row.push_str(cell.symbol());
            }
            skip = skip
                .max(UnicodeWidthStr::width(cell.symbol()))
                .saturating_sub(1);
        }
        out.push(row.trim_end().to_string());
    }
    out.join("\n")
}

/// The viewport as drawn at `width`, as tall as it wants to be (at most 40 rows).
pub fn frame(app: &App, width: u16) -> String {
    let height = app.desired_height(width, 40);
    frame_sized(app, width, height)
}

pub fn frame_sized(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| app.render_frame(f)).unwrap();
    buffer_text(terminal.backend().buffer())
}

/// Keys a test sends, as the terminal would.
pub struct Keys(pub tokio::sync::mpsc::UnboundedReceiver<crossterm::event::Event>);

impl stepper_tui::KeySource for Keys {
    async fn next(&mut self) -> Option<std::io::Result<crossterm::event::Event>> {
        self.0.recv().await.map(Ok)
    }

    async fn cursor_row(&mut self) -> Option<u16> {
        None
    }
}
