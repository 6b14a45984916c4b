//! The real terminal: raw mode and its restoration on every path (panics included), the
//! key reader, and the loop that glues keys, core events, a redraw tick and the screen.
//!
//! `run_with` is the loop itself over any backend and key source, so tests and benches
//! drive it with a `TestBackend` and a channel of keys; `run` only adds the terminal.

use std::collections::VecDeque;
use std::future::Future;
use std::io::{self, BufWriter, Stdout};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, Event, EventStream, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::{cursor, execute, terminal};
use futures::StreamExt;
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::layout::{Position, Size};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::app::App;
use crate::screen::Screen;
use crate::{Action, CoreEvent, Exit, TuiOptions};

/// Core events applied before a frame is drawn: a burst (a replay, a fast stream) costs one
/// frame, and keys still get in between bursts.
const BATCH: usize = 512;
/// The spinner's and elapsed time's pace.
const TICK: Duration = Duration::from_millis(80);
/// How long leaving waits for the core to take the actions still queued, `Detach` last.
const LEAVE_WAIT: Duration = Duration::from_secs(2);

/// Where terminal events come from. The futures are `Send` so that `run` can be spawned on
/// a multi-thread runtime.
pub trait KeySource {
    /// The next terminal event; `None` when input ended.
    fn next(&mut self) -> impl Future<Output = Option<io::Result<Event>>> + Send;
    /// After a resize: the row the terminal says its cursor is on, when it can be asked.
    fn cursor_row(&mut self) -> impl Future<Output = Option<u16>> + Send;
}

/// crossterm's async reader. It is dropped while the cursor position is asked: its reading
/// thread holds the input lock, and the answer would otherwise never reach the query.
struct CrosstermKeys {
    stream: Option<EventStream>,
}

impl KeySource for CrosstermKeys {
    async fn next(&mut self) -> Option<io::Result<Event>> {
        self.stream
            .get_or_insert_with(EventStream::new)
            .next()
            .await
    }

    async fn cursor_row(&mut self) -> Option<u16> {
        self.stream = None;
        let pos = tokio::task::spawn_blocking(|| {
            // Dropping the stream wakes its reader thread; when that thread was idle the
            // wake-up stays pending and would end the position query at once. A short poll
            // takes it (an input event that arrives meanwhile stays queued for the stream).
            let _ = crossterm::event::poll(Duration::from_millis(20));
            cursor::position()
        })
        .await
        .ok()?;
        pos.ok().map(|(_, row)| row)
    }
}

static ACTIVE: AtomicBool = AtomicBool::new(false);
static KEYBOARD_PUSHED: AtomicBool = AtomicBool::new(false);

/// Puts the terminal back as the shell expects it; safe to call more than once.
pub(crate) fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let mut out = io::stdout();
        if KEYBOARD_PUSHED.swap(false, Ordering::SeqCst) {
            let _ = execute!(out, PopKeyboardEnhancementFlags);
        }
        let _ = execute!(out, DisableBracketedPaste, cursor::Show);
        let _ = terminal::disable_raw_mode();
    }
}

fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

/// Raw mode for as long as it lives.
pub(crate) struct RawMode;

impl RawMode {
    pub(crate) async fn enter() -> io::Result<RawMode> {
        install_panic_hook();
        terminal::enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let guard = RawMode;
        let mut out = io::stdout();
        execute!(out, EnableBracketedPaste)?;
        // Lets Shift-Enter and a lone Esc be told apart where the terminal can. Asking the
        // terminal waits for its answer (up to 2 s on one that never answers): off the runtime.
        let supported = tokio::task::spawn_blocking(terminal::supports_keyboard_enhancement)
            .await
            .map_err(io::Error::other)?;
        if matches!(supported, Ok(true)) {
            execute!(
                out,
                PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
            )?;
            KEYBOARD_PUSHED.store(true, Ordering::SeqCst);
        }
        Ok(guard)
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        restore();
    }
}

pub(crate) type RealBackend = CrosstermBackend<BufWriter<Stdout>>;

/// The screen on the real terminal, starting where the shell's cursor is.
pub(crate) async fn real_screen() -> io::Result<Screen<RealBackend>> {
    let (x, y) = tokio::task::spawn_blocking(cursor::position)
        .await
        .map_err(io::Error::other)??;
    let backend = CrosstermBackend::new(BufWriter::with_capacity(1 << 16, io::stdout()));
    Screen::new(backend, Position::new(x, y))
}

pub(crate) fn real_keys() -> impl KeySource {
    CrosstermKeys { stream: None }
}

/// Takes over the terminal with an inline viewport (not the alternate screen) and runs until
/// the user detaches, `cancel` fires or the core disconnects. The terminal is restored on
/// every path, including errors and panics.
pub async fn run(
    opts: TuiOptions,
    actions: mpsc::Sender<Action>,
    events: mpsc::Receiver<CoreEvent>,
    cancel: CancellationToken,
) -> io::Result<Exit> {
    let _raw = RawMode::enter().await?;
    let screen = real_screen().await?;
    run_with(opts, actions, events, cancel, screen, real_keys()).await
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The loop of [`run`] over any screen and key source.
pub async fn run_with<B, K>(
    opts: TuiOptions,
    actions: mpsc::Sender<Action>,
    mut events: mpsc::Receiver<CoreEvent>,
    cancel: CancellationToken,
    mut screen: Screen<B>,
    mut keys: K,
) -> io::Result<Exit>
where
    B: Backend,
    B::Error: std::error::Error + Send + Sync + 'static,
    K: KeySource,
{
    let mut app = App::new(opts);
    app.tick(now_ms());
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut resized: Option<Size> = None;
    // Actions wait here until the core has room for them, and the loop never awaits a send:
    // the core may be blocked handing us an event, and only draining events unblocks it.
    let mut pending: VecDeque<Action> = VecDeque::new();
    // Set once Detach is queued: keys stop, and the loop ends when the core has it.
    let mut leaving: Option<tokio::time::Instant> = None;
    draw(&mut app, &mut screen)?;
    let exit = loop {
        let deadline = leaving.unwrap_or_else(|| tokio::time::Instant::now() + LEAVE_WAIT);
        tokio::select! {
            biased;
            () = cancel.cancelled() => break Exit::Cancelled,
            () = tokio::time::sleep_until(deadline), if leaving.is_some() => break Exit::Detached,
            permit = actions.reserve(), if !pending.is_empty() => match (permit, pending.pop_front()) {
                (Ok(permit), Some(action)) => {
                    let detach = action == Action::Detach;
                    permit.send(action);
                    if detach {
                        break Exit::Detached;
                    }
                    continue;
                }
                (Ok(_), None) => continue,
                (Err(_), _) => break Exit::Disconnected("the core stopped taking actions".into()),
            },
            event = keys.next(), if leaving.is_none() => match event {
                Some(Ok(Event::Key(key))) => {
                    for action in app.on_key(key) {
                        if action == Action::Detach {
                            leaving = Some(tokio::time::Instant::now() + LEAVE_WAIT);
                            pending.push_back(action);
                            break;
                        }
                        pending.push_back(action);
                    }
                }
                Some(Ok(Event::Paste(text))) => pending.extend(app.on_paste(&text)),
                Some(Ok(Event::Resize(w, h))) => resized = Some(Size::new(w, h)),
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    let _ = screen.leave();
                    return Err(e);
                }
                None => break Exit::Cancelled,
            },
            event = events.recv() => match event {
                Some(event) => {
                    app.apply(event);
                    for _ in 0..BATCH {
                        match events.try_recv() {
                            Ok(event) => app.apply(event),
                            Err(_) => break,
                        }
                    }
                }
                None => break Exit::Disconnected("the core closed its event channel".into()),
            },
            _ = tick.tick() => {
                // Drawn while time changes the screen, and once more when it stops (a hint
                // that expired, keys that started to answer).
                let was = app.animating();
                app.tick(now_ms());
                if !was && !app.animating() {
                    continue;
                }
            }
        }
        if let Some(exit) = app.exit() {
            break exit.clone();
        }
        if let Some(size) = resized.take() {
            let row = keys.cursor_row().await;
            screen.resize(size, row)?;
        }
        app.tick(now_ms());
        draw(&mut app, &mut screen)?;
    };
    // What finished while leaving, and what was still streaming, stay in scrollback.
    let width = screen.size().width;
    let lines = app.take_history_on_exit(width);
    screen.insert_history(&lines)?;
    screen.leave()?;
    Ok(exit)
}

fn draw<B>(app: &mut App, screen: &mut Screen<B>) -> io::Result<()>
where
    B: Backend,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    if app.take_clear_screen() {
        screen.clear()?;
    }
    let size = screen.size();
    let lines = app.take_history(size.width);
    screen.insert_history(&lines)?;
    app.draw(screen)
}
