//! The session picker of `stepper attach` without an argument: "new session" first, then
//! the recent sessions of this folder; arrows and Enter choose, Esc or q cancel.

use std::io;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use stepper_protocol::session::{SessionInfo, SessionStatus};

use crate::screen::Screen;
use crate::terminal::{KeySource, RawMode, now_ms, real_keys, real_screen};
use crate::theme;
use crate::wrap::{str_width, truncate};

/// Sessions shown at once; the list scrolls with the selection.
const WINDOW: usize = 10;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    New,
    Session(String),
    Cancelled,
}

/// The picker's state: row 0 is "new session", row i is `sessions[i - 1]`.
#[derive(Debug)]
pub struct Picker {
    sessions: Vec<SessionInfo>,
    selected: usize,
    now_ms: i64,
}

impl Picker {
    pub fn new(sessions: Vec<SessionInfo>, now_ms: i64) -> Self {
        Picker {
            sessions,
            selected: 0,
            now_ms,
        }
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Option<Pick> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        let rows = self.sessions.len() + 1;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Up | KeyCode::Char('k') if !ctrl => {
                self.selected = (self.selected + rows - 1) % rows
            }
            KeyCode::Down | KeyCode::Char('j') if !ctrl => {
                self.selected = (self.selected + 1) % rows
            }
            KeyCode::Char('p') if ctrl => self.selected = (self.selected + rows - 1) % rows,
            KeyCode::Char('n') if ctrl => self.selected = (self.selected + 1) % rows,
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = rows - 1,
            KeyCode::Enter => {
                return Some(match self.selected {
                    0 => Pick::New,
                    i => Pick::Session(self.sessions[i - 1].id.clone()),
                });
            }
            KeyCode::Esc | KeyCode::Char('q') => return Some(Pick::Cancelled),
            KeyCode::Char('c' | 'd') if ctrl => return Some(Pick::Cancelled),
            _ => {}
        }
        None
    }

    pub fn height(&self) -> u16 {
        (self.sessions.len().min(WINDOW) + 3) as u16
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let width = area.width;
        let mut lines = vec![Line::from(vec![
            Span::styled("Attach to a session", theme::bold()),
            Span::styled(
                self.sessions
                    .first()
                    .map(|s| format!("  {}", s.cwd))
                    .unwrap_or_default(),
                theme::dim(),
            ),
        ])];
        lines.push(self.row(
            0,
            Span::styled("+ New session", theme::accent()),
            String::new(),
        ));
        let first = self
            .selected
            .saturating_sub(WINDOW)
            .min(self.sessions.len().saturating_sub(WINDOW));
        let first = if self.selected > first + WINDOW {
            self.selected - WINDOW
        } else {
            first
        };
        // Short ids unique among the listed sessions, as `stepper sessions` shows them.
        let ids: Vec<&str> = self.sessions.iter().map(|s| s.id.as_str()).collect();
        let short = stepper_protocol::session::short_ids(&ids);
        for (i, s) in self.sessions.iter().enumerate().skip(first).take(WINDOW) {
            let id = &short[i];
            let title = s.title.clone().unwrap_or_else(|| "(untitled)".into());
            let status = match s.status {
                SessionStatus::Running => "● running · ",
                SessionStatus::Interrupted => "interrupted · ",
                SessionStatus::Failed => "failed · ",
                SessionStatus::Idle => "",
            };
            let turns = if s.turns == 1 {
                "1 turn".to_string()
            } else {
                format!("{} turns", s.turns)
            };
            let meta = format!("{status}{turns} · {}", ago(self.now_ms - s.updated_at));
            let room = usize::from(width).saturating_sub(4 + 10 + str_width(&meta) + 2);
            let label = Span::raw(format!("{id}  {}", truncate(&title, room)));
            lines.push(self.row(i + 1, label, meta));
        }
        lines.push(Line::from(Span::styled(
            "↑↓ choose · ⏎ attach · esc cancel",
            theme::dim(),
        )));
        let skip = lines.len().saturating_sub(usize::from(area.height));
        // When rows are short the selection stays visible: the header and hints go first.
        let lines: Vec<Line<'static>> = if skip > 0 {
            let sel = lines.remove(1 + self.selected.saturating_sub(first).min(lines.len() - 2));
            std::iter::once(sel)
                .chain(lines)
                .take(usize::from(area.height))
                .collect()
        } else {
            lines
        };
        for (n, line) in lines.iter().enumerate() {
            buf.set_line(area.x, area.y + n as u16, line, width);
        }
    }

    fn row(&self, index: usize, label: Span<'static>, meta: String) -> Line<'static> {
        let chosen = index == self.selected;
        let marker = if chosen { "› " } else { "  " };
        let mut spans = vec![Span::styled(marker, theme::user_prompt()), label];
        if !meta.is_empty() {
            spans.push(Span::styled(format!("  {meta}"), theme::dim()));
        }
        if chosen {
            spans = spans
                .into_iter()
                .map(|s| s.patch_style(theme::bold()))
                .collect();
        }
        Line::from(spans)
    }
}

fn ago(ms: i64) -> String {
    let s = (ms / 1000).max(0);
    match s {
        0..60 => "just now".into(),
        60..3600 => format!("{}m ago", s / 60),
        3600..86_400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86_400),
    }
}

/// The picker on the real terminal (inline, cleared when done).
pub async fn pick(sessions: Vec<SessionInfo>) -> io::Result<Pick> {
    let _raw = RawMode::enter().await?;
    let screen = real_screen().await?;
    pick_with(sessions, screen, real_keys()).await
}

/// The picker's loop over any screen and key source.
pub async fn pick_with<B, K>(
    sessions: Vec<SessionInfo>,
    mut screen: Screen<B>,
    mut keys: K,
) -> io::Result<Pick>
where
    B: Backend,
    B::Error: std::error::Error + Send + Sync + 'static,
    K: KeySource,
{
    let mut picker = Picker::new(sessions, now_ms());
    let result = loop {
        screen.draw(picker.height(), |area, buf| {
            picker.render(area, buf);
            None
        })?;
        match keys.next().await {
            Some(Ok(Event::Key(key))) => {
                if let Some(pick) = picker.on_key(key) {
                    break pick;
                }
            }
            Some(Ok(Event::Resize(w, h))) => {
                let row = keys.cursor_row().await;
                screen.resize(ratatui::layout::Size::new(w, h), row)?;
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                let _ = screen.leave();
                return Err(e);
            }
            None => break Pick::Cancelled,
        }
    };
    screen.leave()?;
    Ok(result)
}
