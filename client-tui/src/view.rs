//! The viewport: how the live cells, queued inputs, an approval, the completion popup, the
//! input box and the status line share the rows at the bottom of the terminal.
//!
//! Every part is computed as lines first, so the height the screen needs and the frame drawn
//! come from the same numbers; when rows are short, the input and status keep theirs and the
//! live cells show their tail.

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Widget};

use crate::app::{App, Approval};
use crate::theme;
use crate::transcript::diff_lines;
use crate::wrap::{Para, str_width, truncate};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Most rows the input box takes before it scrolls.
const MAX_INPUT_ROWS: usize = 10;

struct Parts {
    live: Vec<Line<'static>>,
    overlay: Option<Overlay>,
    popup: Vec<Line<'static>>,
    input: Vec<Line<'static>>,
    cursor: (u16, u16),
    status: Line<'static>,
}

struct Overlay {
    title: String,
    head: Vec<Line<'static>>,
    body: Vec<Line<'static>>,
    foot: Vec<Line<'static>>,
}

/// Row counts of each part, top to bottom.
#[derive(Debug, Default, Clone, Copy)]
struct Rows {
    live: u16,
    overlay_body: u16,
    overlay: u16,
    popup: u16,
    rule_top: u16,
    input: u16,
    rule_bottom: u16,
    status: u16,
}

impl Rows {
    fn total(&self) -> u16 {
        self.live
            + self.overlay
            + self.popup
            + self.rule_top
            + self.input
            + self.rule_bottom
            + self.status
    }
}

impl App {
    pub(crate) fn spinner(&self) -> &'static str {
        SPINNER[(self.now_ms.max(0) / 80) as usize % SPINNER.len()]
    }

    fn parts(&self, width: u16) -> Parts {
        let spinner = self.spinner();
        let mut live = Vec::new();
        for cell in &self.live {
            live.push(Line::default());
            live.extend(cell.lines(width, spinner));
        }
        for (_, text) in &self.queued {
            let first = text.lines().next().unwrap_or("");
            let more = if text.lines().count() > 1 { " …" } else { "" };
            live.push(Line::from(vec![
                Span::styled("↳ queued  ", theme::dim()),
                Span::raw(truncate(first, usize::from(width).saturating_sub(12))),
                Span::styled(more, theme::dim()),
            ]));
        }
        let overlay = self
            .approvals
            .front()
            .map(|a| overlay(a, self.approvals.len() - 1, width.saturating_sub(4)));
        let popup = self
            .popup
            .as_ref()
            .map(|p| p.lines(width))
            .unwrap_or_default();
        let placeholder = if self.approvals.is_empty() {
            if self.running {
                "⏎ steer the running turn · ⇥ queue a new one · esc interrupt"
            } else {
                "Ask stepper · / for commands · @ for files"
            }
        } else {
            "answer the approval above: y, a or n"
        };
        let (input, cursor) = self.composer.render(width, placeholder);
        Parts {
            live,
            overlay,
            popup,
            input,
            cursor,
            status: self.status_line(width),
        }
    }

    fn rows(&self, parts: &Parts, max: u16) -> Rows {
        let left = std::cell::Cell::new(max);
        let take = |want: usize| {
            let got = (want.min(usize::from(u16::MAX)) as u16).min(left.get());
            left.set(left.get() - got);
            got
        };
        // Asked in order of need: the input and the status line first, live cells last.
        let mut r = Rows {
            input: take(parts.input.len().min(MAX_INPUT_ROWS)),
            status: take(1),
            ..Rows::default()
        };
        if let Some(o) = &parts.overlay {
            // Borders, head and keys first; the diff gets what remains.
            let fixed = 2 + o.head.len() + o.foot.len();
            if usize::from(left.get()) >= fixed {
                r.overlay = take(fixed);
                r.overlay_body = take(o.body.len());
                r.overlay += r.overlay_body;
            }
        }
        r.rule_top = take(1);
        r.rule_bottom = take(1);
        r.popup = take(parts.popup.len());
        r.live = take(parts.live.len());
        r
    }

    /// Rows the viewport wants at `width`, at most `max`.
    pub fn desired_height(&self, width: u16, max: u16) -> u16 {
        let parts = self.parts(width.max(1));
        self.rows(&parts, max).total().max(1).min(max)
    }

    /// Draws the viewport into `area`; returns where the terminal's cursor goes.
    pub fn render(&self, area: Rect, buf: &mut Buffer) -> Option<Position> {
        if area.width == 0 || area.height == 0 {
            return None;
        }
        let parts = self.parts(area.width);
        let rows = self.rows(&parts, area.height);
        let mut y = area.y + area.height.saturating_sub(rows.total());
        let width = area.width;
        let put = |buf: &mut Buffer, lines: &[Line<'_>], y: &mut u16| {
            for line in lines {
                buf.set_line(area.x, *y, line, width);
                *y += 1;
            }
        };

        let live = &parts.live[parts.live.len() - usize::from(rows.live)..];
        put(buf, live, &mut y);

        if let (Some(o), true) = (&parts.overlay, rows.overlay > 0) {
            let rect = Rect::new(area.x, y, width, rows.overlay);
            let block = Block::bordered()
                .border_type(BorderType::Rounded)
                .border_style(theme::warning())
                .title(Span::styled(
                    format!(" {} ", o.title),
                    theme::bold().patch(theme::warning()),
                ));
            let inner = block.inner(rect);
            block.render(rect, buf);
            let body = &o.body[..usize::from(rows.overlay_body).min(o.body.len())];
            let lines = o.head.iter().chain(body).chain(&o.foot);
            for (iy, line) in (inner.y..inner.bottom()).zip(lines) {
                buf.set_line(inner.x + 1, iy, line, inner.width.saturating_sub(1));
            }
            y += rows.overlay;
        }

        put(buf, &parts.popup[..usize::from(rows.popup)], &mut y);

        let rule = Line::from(Span::styled(
            "─".repeat(usize::from(width)),
            theme::border(),
        ));
        if rows.rule_top > 0 {
            put(buf, std::slice::from_ref(&rule), &mut y);
        }
        // The input scrolls to keep the cursor's row in view.
        let shown = usize::from(rows.input);
        let cursor_row = usize::from(parts.cursor.1);
        let first = (cursor_row + 1)
            .saturating_sub(shown)
            .min(parts.input.len().saturating_sub(shown));
        let input_top = y;
        put(buf, &parts.input[first..first + shown], &mut y);
        if rows.rule_bottom > 0 {
            put(buf, std::slice::from_ref(&rule), &mut y);
        }
        if rows.status > 0 {
            put(buf, std::slice::from_ref(&parts.status), &mut y);
        }
        if shown == 0 || !self.approvals.is_empty() {
            return None;
        }
        let cx = area.x + parts.cursor.0.min(width.saturating_sub(1));
        let cy = input_top + (cursor_row - first) as u16;
        Some(Position::new(cx, cy))
    }

    /// Renders into a ratatui frame (tests and benches use a `Terminal<TestBackend>`).
    pub fn render_frame(&self, frame: &mut ratatui::Frame<'_>) {
        let area = frame.area();
        if let Some(p) = self.render(area, frame.buffer_mut()) {
            frame.set_cursor_position(p);
        }
    }

    pub(crate) fn status_line(&self, width: u16) -> Line<'static> {
        let mut spans: Vec<Span<'static>> = Vec::new();
        if self.running {
            let elapsed = self
                .turn_started_at
                .map(|t| (self.now_ms - t).max(0) / 1000)
                .unwrap_or(0);
            spans.push(Span::styled(
                format!("{} working {}", self.spinner(), elapsed_text(elapsed)),
                theme::accent(),
            ));
        } else {
            spans.push(Span::styled("● idle", theme::dim()));
        }
        let sep = || Span::styled(" · ", theme::dim());
        if let Some(s) = &self.session {
            spans.push(sep());
            spans.push(Span::styled(
                s.id.chars().take(8).collect::<String>(),
                theme::dim(),
            ));
        }
        if !self.model.is_empty() {
            spans.push(sep());
            spans.push(Span::raw(self.model.clone()));
        }
        spans.push(sep());
        let mode_style = match self.mode.as_str() {
            "plan" => Style::new().fg(Color::Blue),
            "accept-edits" => theme::warning(),
            "auto" => theme::error(),
            _ => theme::dim(),
        };
        spans.push(Span::styled(self.mode.clone(), mode_style));
        if let (Some(used), Some(window)) = (self.context_tokens, self.context_window)
            && window > 0
        {
            spans.push(sep());
            let pct = used.saturating_mul(100) / window;
            let style = if pct >= 70 {
                theme::warning()
            } else {
                theme::dim()
            };
            spans.push(Span::styled(format!("ctx {pct}%"), style));
        }
        // Others before the numbers: when the line is cut, who else is here matters more.
        if !self.others.is_empty() {
            spans.push(sep());
            let n = self.others.len();
            let s = if n == 1 { "" } else { "s" };
            spans.push(Span::styled(
                format!("{n} other client{s} attached"),
                theme::accent(),
            ));
        }
        let mut total = self.usage_done;
        total.add(&self.usage_turn);
        if total.input_tokens + total.output_tokens + total.cache_read_tokens > 0 {
            spans.push(sep());
            let input = total.input_tokens + total.cache_read_tokens + total.cache_write_tokens;
            spans.push(Span::styled(
                format!("↑{} ↓{}", tokens(input), tokens(total.output_tokens)),
                theme::dim(),
            ));
        }
        let cost = match (self.cost_done, self.cost_turn) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        if let Some(cost) = cost {
            spans.push(sep());
            spans.push(Span::styled(format!("${cost:.2}"), theme::dim()));
        }
        if let Some((flash, _)) = &self.flash {
            spans.push(sep());
            spans.push(Span::styled(flash.clone(), theme::warning()));
        }
        clip(spans, usize::from(width))
    }
}

/// Cuts a line of spans to `width` columns.
fn clip(spans: Vec<Span<'static>>, width: usize) -> Line<'static> {
    let mut used = 0;
    let mut out = Vec::new();
    for s in spans {
        let w = str_width(&s.content);
        if used + w <= width {
            used += w;
            out.push(s);
        } else {
            let room = width - used;
            if room > 0 {
                out.push(Span::styled(truncate(&s.content, room), s.style));
            }
            break;
        }
    }
    Line::from(out)
}

fn elapsed_text(secs: i64) -> String {
    if secs < 60 {
        format!("{secs}s")
    } else if secs < 3600 {
        format!("{}m {:02}s", secs / 60, secs % 60)
    } else {
        format!("{}h {:02}m", secs / 3600, (secs / 60) % 60)
    }
}

fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

fn overlay(a: &Approval, more: usize, width: u16) -> Overlay {
    let mut head = Vec::new();
    Para::new(vec![Span::raw(a.summary.clone())]).wrap(width, &mut head);
    if let Some(command) = &a.command {
        for line in command.lines() {
            Para::prefixed(
                Span::styled("$ ", theme::dim()),
                Span::raw("  "),
                vec![Span::styled(line.to_string(), theme::bold())],
            )
            .wrap(width, &mut head);
        }
    }
    let mut body = Vec::new();
    if let Some(diff) = &a.diff {
        diff_lines(diff, width, usize::MAX, &mut || Span::raw(""), &mut body);
    }
    let mut keys = vec![
        Span::styled("y", theme::bold().patch(theme::ok())),
        Span::raw(" allow  "),
        Span::styled("a", theme::bold().patch(theme::ok())),
        Span::raw(" allow always  "),
        Span::styled("n", theme::bold().patch(theme::error())),
        Span::raw("/esc deny"),
    ];
    if more > 0 {
        keys.push(Span::styled(
            format!("   +{more} more waiting"),
            theme::dim(),
        ));
    }
    Overlay {
        title: format!("Allow {}?", a.tool),
        head,
        body,
        foot: vec![Line::default(), Line::from(keys)],
    }
}
