//! What a frame costs with a long transcript, and how long a keypress takes to reach the
//! screen while tokens stream.
//!
//! `cargo bench -p stepper-tui --bench render [frames|code|latency|markdown]` (all by default)
//!
//! 1. Frames: an app that committed ~10k lines (markdown, code, tool output) draws its
//!    viewport; the same viewport of an app with no history is the reference, since history
//!    lives in the terminal's scrollback and must not cost a frame anything. Rewrapping the
//!    whole transcript (what a commit of everything would cost) and drawing it as one
//!    `Paragraph` into a buffer are printed beside it for scale.
//! 2. A long code block streaming: frames while a 3000-line fenced block is still open,
//!    against the same with a 10-line block; the cost of one more line (delta, commit, frame)
//!    beside them, and rendering the whole block once for scale.
//! 3. Latency: `run_with` on a probe backend, a mock core sending a `TextDelta` every 5 ms
//!    (200 tokens/s), keys typed every 23 ms; measured from sending the key to the flush of
//!    the first frame that shows it. The reference is the same typing with nothing streaming.
//! 4. Markdown: frames while a table streams (its live cell is re-rendered every frame until
//!    the blank line after it settles it), and an answer of the shapes models write — short
//!    lines, a table too wide for the screen, lists — rendered whole once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::convert::Infallible;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::{Backend, ClearType, TestBackend, WindowSize};
use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::{Position, Rect, Size};
use ratatui::widgets::{Paragraph, Widget};
use stepper_protocol::PermissionMode;
use stepper_protocol::event::{AppEvent, EventEnvelope, ToolCallStatus, TurnStatus};
use stepper_protocol::session::{SessionInfo, SessionStatus};
use stepper_tui::{App, CoreEvent, KeySource, Screen, TuiOptions, run_with};

use ratatui::text::Line;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const WIDTH: u16 = 100;
const HEIGHT: u16 = 40;

fn session() -> CoreEvent {
    CoreEvent::Session {
        info: SessionInfo {
            id: "0198a3f2-7c1e-7d2a-9b1c-5e6f7a8b9c0d".into(),
            title: None,
            cwd: "/project".into(),
            model: "anthropic/claude-sonnet-4-5".into(),
            status: SessionStatus::Idle,
            created_at: 0,
            updated_at: 0,
            last_seq: 0,
            turns: 0,
        },
        mode: PermissionMode::Default,
        sandbox: None,
        context_window: Some(200_000),
    }
}

struct Feed {
    seq: u64,
}

impl Feed {
    fn next(&mut self, event: AppEvent) -> CoreEvent {
        self.seq += 1;
        CoreEvent::Event(EventEnvelope {
            session_id: "s".into(),
            seq: self.seq,
            at: 0,
            turn: Some(1),
            agent: None,
            event,
        })
    }
}

const ANSWER: &str = "## Findings\n\nThe **session hub** keeps one writer per session; the `EventLog` commits in batches and then publishes. See [the design](https://example.com/design).\n\n- persist, then publish\n- nobody waits for a slow subscriber\n  - lagging clients resubscribe\n\n```rust\nfn commit(batch: &[Event]) -> Result<()> {\n    let tx = pool.begin()?;\n    for e in batch {\n        insert(&tx, e)?;\n    }\n    tx.commit()\n}\n```\n\nThat is why a crash never takes back an event a client saw.\n\n";

/// A turn of mixed content: input, markdown with code, a tool with output.
fn turn(feed: &mut Feed, n: usize) -> Vec<CoreEvent> {
    let mut out = vec![feed.next(AppEvent::TurnStarted {
        attachments: Vec::new(),
        input_id: format!("i{n}"),
        text: format!("question number {n}: how does the event log stay consistent?"),
        model: "m".into(),
    })];
    for chunk in ANSWER.as_bytes().chunks(12) {
        out.push(feed.next(AppEvent::TextDelta {
            text: String::from_utf8_lossy(chunk).into_owned(),
        }));
    }
    out.push(feed.next(AppEvent::MessageCompleted {
        text: ANSWER.into(),
        stop_reason: None,
    }));
    out.push(feed.next(AppEvent::ToolCallStarted {
        call_id: format!("c{n}"),
        tool: "bash".into(),
        input: serde_json::json!({"command": "cargo test -p stepper-store"}),
    }));
    let output: String = (0..20)
        .map(|i| format!("test store::case_{i} ... ok\n"))
        .collect();
    out.push(feed.next(AppEvent::ToolOutputDelta {
        call_id: format!("c{n}"),
        text: output.clone(),
    }));
    out.push(feed.next(AppEvent::ToolCallFinished {
        call_id: format!("c{n}"),
        status: ToolCallStatus::Ok,
        output,
        exit_code: Some(0),
        duration_ms: 1500,
        diff: None,
    }));
    out.push(feed.next(AppEvent::TurnFinished {
        status: TurnStatus::Completed,
        error: None,
        error_kind: None,
    }));
    out
}

/// An app mid-turn (streaming text and a running tool), after `turns` finished turns.
fn busy_app(turns: usize) -> App {
    let mut app = App::new(TuiOptions::default());
    app.apply(session());
    let mut feed = Feed { seq: 0 };
    for n in 0..turns {
        for e in turn(&mut feed, n) {
            app.apply(e);
        }
    }
    app.apply(feed.next(AppEvent::TurnStarted {
        attachments: Vec::new(),
        input_id: "live".into(),
        text: "one more".into(),
        model: "m".into(),
    }));
    app.apply(feed.next(AppEvent::ToolCallStarted {
        call_id: "live".into(),
        tool: "bash".into(),
        input: serde_json::json!({"command": "cargo build"}),
    }));
    app.apply(feed.next(AppEvent::ToolOutputDelta {
        call_id: "live".into(),
        text: "   Compiling a\n   Compiling b\n   Compiling c\n".into(),
    }));
    app.apply(feed.next(AppEvent::TextDelta {
        text: "Streaming a **reply** with `code` and more words".into(),
    }));
    app
}

struct Stats {
    p50: Duration,
    p99: Duration,
}

fn stats(mut v: Vec<Duration>) -> Stats {
    v.sort();
    Stats {
        p50: v[v.len() / 2],
        p99: v[(v.len() * 99 / 100).min(v.len() - 1)],
    }
}

fn measure(runs: usize, mut f: impl FnMut()) -> Stats {
    f();
    stats(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn frame(app: &App, screen: &mut Screen<TestBackend>) {
    app.draw(screen).unwrap();
}

/// The whole transcript of `turns` turns as scrollback gets it (the app keeps none of it).
fn transcript_of(turns: usize) -> Vec<Line<'static>> {
    busy_app(turns).take_history(WIDTH)
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

fn frames() {
    let mut turns = 10;
    while transcript_of(turns).len() < 10_000 {
        turns += 10;
    }
    let transcript = transcript_of(turns);
    let mut big = busy_app(turns);
    let commit_all = Instant::now();
    let committed = big.take_history(WIDTH);
    let commit_all = commit_all.elapsed();
    let mut empty = busy_app(0);
    empty.take_history(WIDTH);

    let mut screen = Screen::new(TestBackend::new(WIDTH, HEIGHT), Position::new(0, 0)).unwrap();
    let mut screen_ref = Screen::new(TestBackend::new(WIDTH, HEIGHT), Position::new(0, 0)).unwrap();
    // Full frames: the diff against the previous frame is empty, which is the steady state
    // between deltas; `render only` is the app's own work.
    let big_frame = measure(2000, || frame(&big, &mut screen));
    let ref_frame = measure(2000, || frame(&empty, &mut screen_ref));
    let area = Rect::new(0, 0, WIDTH, HEIGHT);
    let big_render = measure(2000, || {
        let mut buf = Buffer::empty(area);
        std::hint::black_box(big.render(area, &mut buf));
    });
    let ref_render = measure(2000, || {
        let mut buf = Buffer::empty(area);
        std::hint::black_box(empty.render(area, &mut buf));
    });
    let screenful: Vec<_> = transcript[..usize::from(HEIGHT)].to_vec();
    let paragraph_screen = measure(2000, || {
        let mut buf = Buffer::empty(area);
        Paragraph::new(screenful.clone()).render(area, &mut buf);
    });
    let rewrap = stats(
        (0..10)
            .map(|_| {
                let mut app = busy_app(turns);
                let t = Instant::now();
                std::hint::black_box(app.take_history(WIDTH));
                t.elapsed()
            })
            .collect(),
    );
    let tall = Rect::new(0, 0, WIDTH, transcript.len() as u16);
    let whole = measure(10, || {
        let mut buf = Buffer::empty(tall);
        Paragraph::new(transcript.clone()).render(tall, &mut buf);
    });
    let mut history_screen =
        Screen::new(TestBackend::new(WIDTH, HEIGHT), Position::new(0, 0)).unwrap();
    let insert = Instant::now();
    history_screen.insert_history(&committed).unwrap();
    let insert = insert.elapsed();

    println!(
        "frames at {WIDTH}x{HEIGHT}, transcript of {} lines ({turns} turns) in scrollback:",
        transcript.len()
    );
    println!(
        "  viewport frame (render + diff + draw)  10k history: p50 {:>9.2?} p99 {:>9.2?}   empty history: p50 {:>9.2?} p99 {:>9.2?}   ratio p50 {:.2}",
        big_frame.p50,
        big_frame.p99,
        ref_frame.p50,
        ref_frame.p99,
        ratio(big_frame.p50, ref_frame.p50)
    );
    println!(
        "  viewport render only                   10k history: p50 {:>9.2?} p99 {:>9.2?}   empty history: p50 {:>9.2?} p99 {:>9.2?}   ratio p50 {:.2}",
        big_render.p50,
        big_render.p99,
        ref_render.p50,
        ref_render.p99,
        ratio(big_render.p50, ref_render.p50)
    );
    println!(
        "  reference: one screenful as a Paragraph p50 {:>9.2?} p99 {:>9.2?}   viewport frame / paragraph p50 {:.2}",
        paragraph_screen.p50,
        paragraph_screen.p99,
        ratio(big_frame.p50, paragraph_screen.p50)
    );
    println!(
        "  rewrap the whole transcript ({} lines) p50 {:>9.2?}   render it as one Paragraph p50 {:>9.2?}   commit all once {:>9.2?}   write it to scrollback {:>9.2?}",
        transcript.len(),
        rewrap.p50,
        whole.p50,
        commit_all,
        insert
    );
    println!(
        "  a frame costs {:.4} of a whole-transcript render",
        ratio(big_frame.p50, whole.p50)
    );
}

fn code_line(i: usize) -> String {
    format!(
        "    let value_{i} = compute(&input[{i}..], |x| x * 2).unwrap_or_default(); // step {i}\n"
    )
}

/// An app streaming a fenced rust block of `lines` complete lines, one delta per line, the
/// history taken each time as the loop does; the next line has begun.
fn code_stream_app(lines: usize) -> (App, Feed) {
    let mut app = App::new(TuiOptions::default());
    app.apply(session());
    let mut feed = Feed { seq: 0 };
    app.apply(feed.next(AppEvent::TurnStarted {
        attachments: Vec::new(),
        input_id: "i".into(),
        text: "write it".into(),
        model: "m".into(),
    }));
    app.apply(feed.next(AppEvent::TextDelta {
        text: "Here it is:\n\n```rust\nfn main() {\n".into(),
    }));
    for i in 0..lines {
        app.apply(feed.next(AppEvent::TextDelta { text: code_line(i) }));
        app.take_history(WIDTH);
    }
    app.apply(feed.next(AppEvent::TextDelta {
        text: "    let partial = ".into(),
    }));
    app.take_history(WIDTH);
    (app, feed)
}

fn streaming_code() {
    let mut results = Vec::new();
    for lines in [10usize, 3000] {
        let (mut app, mut feed) = code_stream_app(lines);
        let mut screen = Screen::new(TestBackend::new(WIDTH, HEIGHT), Position::new(0, 0)).unwrap();
        let frame_only = measure(500, || frame(&app, &mut screen));
        let mut i = lines;
        let per_line = measure(500, || {
            i += 1;
            app.apply(feed.next(AppEvent::TextDelta {
                text: format!("x;\n    let partial_{i} = "),
            }));
            let history = app.take_history(WIDTH);
            screen.insert_history(&history).unwrap();
            frame(&app, &mut screen);
        });
        results.push((lines, frame_only, per_line));
    }
    let block: String = (0..3000).map(code_line).collect();
    let whole = measure(5, || {
        let mut app = App::new(TuiOptions::default());
        let mut feed = Feed { seq: 0 };
        app.apply(feed.next(AppEvent::MessageCompleted {
            text: format!("```rust\n{block}```\n"),
            stop_reason: None,
        }));
        std::hint::black_box(app.take_history(WIDTH));
    });
    println!("a fenced code block streaming, still open, at {WIDTH}x{HEIGHT}:");
    for (lines, frame_only, per_line) in &results {
        println!(
            "  {lines:>5} lines so far: frame p50 {:>9.2?} p99 {:>9.2?}   one more line (delta + commit + frame) p50 {:>9.2?} p99 {:>9.2?}",
            frame_only.p50, frame_only.p99, per_line.p50, per_line.p99
        );
    }
    println!(
        "  3000 vs 10 lines: frame p50 ratio {:.2}   one more line p50 ratio {:.2}",
        ratio(results[1].1.p50, results[0].1.p50),
        ratio(results[1].2.p50, results[0].2.p50)
    );
    println!(
        "  reference: the whole 3000-line block rendered once (what every frame cost before) p50 {:>9.2?}",
        whole.p50
    );
}

/// A row of the table `markdown` streams: wide enough that its prose column wraps at WIDTH.
fn table_row(i: usize) -> String {
    format!(
        "| `item_{i}` | **{i}** | {} | the {i}th row of a table that a model wrote to compare options, with prose long enough to wrap |\n",
        i * 37
    )
}

const TABLE_HEAD: &str = "| Name | Rank | Score | Notes |\n|:---|:---:|---:|:---|\n";

fn markdown() {
    let mut results = Vec::new();
    for rows in [5usize, 40] {
        let mut app = App::new(TuiOptions::default());
        app.apply(session());
        let mut feed = Feed { seq: 0 };
        app.apply(feed.next(AppEvent::TurnStarted {
            attachments: Vec::new(),
            input_id: "i".into(),
            text: "compare".into(),
            model: "m".into(),
        }));
        let mut text = format!("Here they are:\n\n{TABLE_HEAD}");
        text.extend((0..rows).map(table_row));
        app.apply(feed.next(AppEvent::TextDelta { text }));
        app.take_history(WIDTH);
        let mut screen = Screen::new(TestBackend::new(WIDTH, HEIGHT), Position::new(0, 0)).unwrap();
        results.push((rows, measure(500, || frame(&app, &mut screen))));
    }
    let short_lines: String = (0..120).map(|i| format!("step {i}: checked\n")).collect();
    let table: String = (0..40).map(table_row).collect();
    let answer = format!(
        "## Summary\n\n{short_lines}\n{TABLE_HEAD}{table}\n- first\n- second\n  - nested\n\n> a quote\n"
    );
    let whole = measure(200, || {
        let mut app = App::new(TuiOptions::default());
        let mut feed = Feed { seq: 0 };
        app.apply(feed.next(AppEvent::MessageCompleted {
            text: answer.clone(),
            stop_reason: None,
        }));
        std::hint::black_box(app.take_history(WIDTH));
    });
    println!("markdown at {WIDTH}x{HEIGHT}:");
    for (rows, frame) in &results {
        println!(
            "  a table streaming, {rows:>2} rows so far: frame p50 {:>9.2?} p99 {:>9.2?}",
            frame.p50, frame.p99
        );
    }
    println!(
        "  an answer of 120 short lines, a 40-row table and lists, rendered whole p50 {:>9.2?}",
        whole.p50
    );
}

/// A `TestBackend` that, on every flush, checks whether the frame shows the text waited for.
#[derive(Clone)]
struct Probe {
    terminal: Arc<Mutex<TestBackend>>,
    state: Arc<Mutex<ProbeState>>,
}

#[derive(Default)]
struct ProbeState {
    waiting: Option<(String, Instant)>,
    latencies: Vec<Duration>,
    frames: usize,
}

impl Backend for Probe {
    type Error = Infallible;

    fn draw<'a, I>(&mut self, content: I) -> Result<(), Infallible>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.terminal.lock().unwrap().draw(content)
    }
    fn append_lines(&mut self, n: u16) -> Result<(), Infallible> {
        self.terminal.lock().unwrap().append_lines(n)
    }
    fn hide_cursor(&mut self) -> Result<(), Infallible> {
        self.terminal.lock().unwrap().hide_cursor()
    }
    fn show_cursor(&mut self) -> Result<(), Infallible> {
        self.terminal.lock().unwrap().show_cursor()
    }
    fn get_cursor_position(&mut self) -> Result<Position, Infallible> {
        self.terminal.lock().unwrap().get_cursor_position()
    }
    fn set_cursor_position<P: Into<Position>>(&mut self, p: P) -> Result<(), Infallible> {
        self.terminal.lock().unwrap().set_cursor_position(p)
    }
    fn clear(&mut self) -> Result<(), Infallible> {
        self.terminal.lock().unwrap().clear()
    }
    fn clear_region(&mut self, t: ClearType) -> Result<(), Infallible> {
        self.terminal.lock().unwrap().clear_region(t)
    }
    fn size(&self) -> Result<Size, Infallible> {
        self.terminal.lock().unwrap().size()
    }
    fn window_size(&mut self) -> Result<WindowSize, Infallible> {
        self.terminal.lock().unwrap().window_size()
    }
    fn flush(&mut self) -> Result<(), Infallible> {
        let now = Instant::now();
        let mut state = self.state.lock().unwrap();
        state.frames += 1;
        if let Some((want, since)) = &state.waiting {
            let t = self.terminal.lock().unwrap();
            let buf = t.buffer();
            let shown = (0..buf.area.height).any(|y| {
                let row: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
                row.trim_end() == want
            });
            if shown {
                let latency = now - *since;
                state.latencies.push(latency);
                state.waiting = None;
            }
        }
        Ok(())
    }
}

struct Keys(mpsc::UnboundedReceiver<Event>);

impl KeySource for Keys {
    async fn next(&mut self) -> Option<io::Result<Event>> {
        self.0.recv().await.map(Ok)
    }
    async fn cursor_row(&mut self) -> Option<u16> {
        None
    }
}

fn latency(streaming: bool, keys_to_type: usize) -> (Stats, usize, usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let probe = Probe {
            terminal: Arc::new(Mutex::new(TestBackend::new(WIDTH, HEIGHT))),
            state: Arc::default(),
        };
        let (keys_tx, keys_rx) = mpsc::unbounded_channel();
        let (events_tx, events_rx) = mpsc::channel(4096);
        let (actions_tx, mut actions_rx) = mpsc::channel(64);
        let cancel = CancellationToken::new();
        let screen = Screen::new(probe.clone(), Position::new(0, 0)).unwrap();
        let ui = tokio::spawn(run_with(
            TuiOptions::default(),
            actions_tx,
            events_rx,
            cancel.clone(),
            screen,
            Keys(keys_rx),
        ));
        tokio::spawn(async move { while actions_rx.recv().await.is_some() {} });
        events_tx.send(session()).await.unwrap();
        let mut feed = Feed { seq: 0 };
        events_tx
            .send(feed.next(AppEvent::TurnStarted {
                attachments: Vec::new(),
                input_id: "i".into(),
                text: "stream".into(),
                model: "m".into(),
            }))
            .await
            .unwrap();
        let tokens = Arc::new(Mutex::new(0usize));
        let streamer = {
            let events_tx = events_tx.clone();
            let tokens = tokens.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move {
                if !streaming {
                    return;
                }
                let mut tick = tokio::time::interval(Duration::from_millis(5));
                let words = ANSWER.split_inclusive(' ').collect::<Vec<_>>();
                let mut i = 0;
                while !cancel.is_cancelled() {
                    tick.tick().await;
                    let text = words[i % words.len()].to_string();
                    i += 1;
                    if events_tx
                        .send(feed.next(AppEvent::TextDelta { text }))
                        .await
                        .is_err()
                    {
                        break;
                    }
                    *tokens.lock().unwrap() += 1;
                }
            })
        };
        let mut typed = String::new();
        for n in 0..keys_to_type {
            if typed.len() >= 40 {
                keys_tx
                    .send(Event::Key(KeyEvent::new(
                        KeyCode::Char('u'),
                        KeyModifiers::CONTROL,
                    )))
                    .unwrap();
                typed.clear();
                tokio::time::sleep(Duration::from_millis(23)).await;
            }
            let c = (b'a' + (n % 26) as u8) as char;
            typed.push(c);
            probe.state.lock().unwrap().waiting = Some((format!("› {typed}"), Instant::now()));
            keys_tx
                .send(Event::Key(KeyEvent::new(
                    KeyCode::Char(c),
                    KeyModifiers::NONE,
                )))
                .unwrap();
            tokio::time::sleep(Duration::from_millis(23)).await;
        }
        cancel.cancel();
        let _ = ui.await;
        let _ = streamer.await;
        let state = std::mem::take(&mut *probe.state.lock().unwrap());
        let tokens = *tokens.lock().unwrap();
        (stats(state.latencies), state.frames, tokens)
    })
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    // A section named on the command line runs alone.
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let run = |name: &str| only.as_deref().is_none_or(|o| o == name);
    if run("frames") {
        frames();
    }
    if run("code") {
        streaming_code();
    }
    if run("markdown") {
        markdown();
    }
    if !run("latency") {
        return;
    }
    let keys = 250;
    let (streaming, frames_s, tokens) = latency(true, keys);
    let (idle, frames_i, _) = latency(false, keys);
    println!("keypress to screen, {keys} keys typed every 23 ms:");
    println!(
        "  while streaming 200 tokens/s ({tokens} deltas, {frames_s} frames): p50 {:>9.2?} p99 {:>9.2?}",
        streaming.p50, streaming.p99
    );
    println!(
        "  idle reference ({frames_i} frames):                          p50 {:>9.2?} p99 {:>9.2?}",
        idle.p50, idle.p99
    );
    println!(
        "  streaming / idle: p50 {:.2} p99 {:.2}",
        ratio(streaming.p50, idle.p50),
        ratio(streaming.p99, idle.p99)
    );
}
