//! The viewport: how the live cells, queued inputs, an approval, the completion popup, the
//! input box and the status line share the rows at the bottom of the terminal.
//!
//! Every part is computed as lines first, once per frame, so the height the screen needs
//! and the frame drawn come from the same numbers; when rows are short, the input, the status
//! and an approval's frame and keys keep theirs, and the live cells show their tail.

use std::io;

use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Widget};
use stepper_protocol::session::{PermissionMode, SandboxMechanism, SandboxState};

use crate::app::{App, Approval, Asks};
use crate::screen::Screen;
use crate::theme;
use crate::transcript::diff_lines;
use crate::wrap::{Para, sanitize, str_width, truncate};

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
    /// What the user's `statusLine` command printed, under the status line.
    custom: Vec<Line<'static>>,
}

struct Overlay {
    title: String,
    /// The summary, the command and the diff: clipped when rows are short.
    content: Vec<Line<'static>>,
    /// The answers, one a line (wrapped): always shown whole.
    keys: Vec<Line<'static>>,
}

impl Overlay {
    /// Rows of the overlay besides its content: the borders and the answers.
    fn frame(&self) -> u16 {
        (self.keys.len() + 2).min(usize::from(u16::MAX)) as u16
    }

    /// The lines inside the border, `rows` of them at most: the answers always, then as
    /// much of the content as fits, its cut counted.
    fn lines(&self, rows: usize) -> Vec<Line<'static>> {
        let n = self.content.len();
        let room = rows.saturating_sub(self.keys.len());
        let mut out = Vec::new();
        if room > n {
            out.extend(self.content.iter().cloned());
            out.push(Line::default());
        } else if room == n {
            out.extend(self.content.iter().cloned());
        } else if room >= 1 {
            let shown = room - 1;
            out.extend(self.content[..shown].iter().cloned());
            out.push(Line::from(Span::styled(
                format!("… +{} lines", n - shown),
                theme::dim(),
            )));
        }
        out.extend(self.keys.iter().take(rows).cloned());
        out
    }
}

/// Row counts of each part, top to bottom.
#[derive(Debug, Default, Clone, Copy)]
struct Rows {
    live: u16,
    overlay: u16,
    popup: u16,
    rule_top: u16,
    input: u16,
    rule_bottom: u16,
    status: u16,
    custom: u16,
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
            + self.custom
    }
}

impl App {
    pub(crate) fn spinner(&self) -> &'static str {
        SPINNER[(self.now_ms.max(0) / 80) as usize % SPINNER.len()]
    }

    /// The parts at `width`, for a viewport of at most `max` rows: live cells that could not
    /// show are not rendered at all.
    fn parts(&self, width: u16, max: u16) -> Parts {
        let spinner = self.spinner();
        let mut cells = Vec::new();
        let mut rows = 0;
        for cell in self.live.iter().rev() {
            if rows >= usize::from(max) {
                break;
            }
            let mut lines = Vec::new();
            if !cell.joins_previous() {
                lines.push(Line::default());
            }
            lines.extend(cell.lines(width, spinner));
            rows += lines.len();
            cells.push(lines);
        }
        let mut live: Vec<Line<'static>> = cells.into_iter().rev().flatten().collect();
        for queued in self.events.queued() {
            let text = sanitize(&queued.text);
            let first = text.lines().next().unwrap_or("");
            let more = if text.lines().count() > 1 { " …" } else { "" };
            live.push(Line::from(vec![
                Span::styled("↳ queued  ", theme::dim()),
                Span::raw(truncate(first, usize::from(width).saturating_sub(12))),
                Span::styled(more, theme::dim()),
            ]));
            for attachment in &queued.attachments {
                live.push(Line::from(vec![
                    Span::raw("          "),
                    Span::styled(
                        truncate(
                            &sanitize(&attachment.label()),
                            usize::from(width).saturating_sub(10),
                        ),
                        theme::accent(),
                    ),
                ]));
            }
        }
        let overlay = self
            .approvals
            .front()
            .map(|a| {
                overlay(
                    a,
                    self.approvals.len() - 1,
                    self.answer_keys_live(),
                    width.saturating_sub(4),
                )
            })
            .or_else(|| {
                self.elicits.front().map(|e| {
                    form_overlay(
                        e,
                        self.elicits.len() - 1,
                        self.answer_keys_live(),
                        width.saturating_sub(4),
                    )
                })
            })
            .or_else(|| {
                self.model_menu
                    .as_ref()
                    .map(|m| model_overlay(m, &self.model, width.saturating_sub(4)))
            });
        let popup = self
            .popup
            .as_ref()
            .map(|p| p.lines(width))
            .unwrap_or_default();
        let placeholder = if self
            .approvals
            .front()
            .is_some_and(|a| a.asks == Asks::Trust)
        {
            "answer above: y trusts the folder, n does not"
        } else if !self.approvals.is_empty() {
            "answer the approval above"
        } else if !self.elicits.is_empty() {
            "answer the form above: type, ⇥ next field, ⏎ send, esc decline"
        } else if self.telling {
            "tell the model what to do instead · ⏎ sends it as the next input"
        } else {
            if self.running {
                "⏎ steer the running turn · ⇥ queue a new one · esc interrupt"
            } else {
                "Ask stepper · / for commands · @ for files"
            }
        };
        let (input, cursor) = self.composer.render(width, placeholder);
        Parts {
            live,
            overlay,
            popup,
            input,
            cursor,
            status: self.status_line(width),
            custom: self
                .custom_status
                .iter()
                .flat_map(|text| text.lines())
                .map(|l| {
                    let l: String = l.chars().take(usize::from(width.max(1))).collect();
                    Line::from(Span::styled(l, theme::dim()))
                })
                .collect(),
        }
    }

    fn rows(&self, parts: &Parts, max: u16) -> Rows {
        let left = std::cell::Cell::new(max);
        let take = |want: usize| {
            let got = (want.min(usize::from(u16::MAX)) as u16).min(left.get());
            left.set(left.get() - got);
            got
        };
        // Asked in order of need: a row of input and the status line first, then an
        // approval's frame and keys (what can be answered must be seen), the rest of the
        // input, the approval's content, live cells last.
        let input = parts.input.len().min(MAX_INPUT_ROWS);
        let mut r = Rows {
            input: take(input.min(1)),
            status: take(1),
            ..Rows::default()
        };
        if let Some(o) = &parts.overlay
            && left.get() >= o.frame()
        {
            r.overlay = take(usize::from(o.frame()));
        }
        r.input += take(input.saturating_sub(1));
        if let (Some(o), true) = (&parts.overlay, r.overlay > 0) {
            // The content and the empty line before the keys.
            r.overlay += take(o.content.len() + 1);
        }
        r.rule_top = take(1);
        r.rule_bottom = take(1);
        r.custom = take(parts.custom.len());
        r.popup = take(parts.popup.len());
        r.live = take(parts.live.len());
        r
    }

    /// Rows the viewport wants at `width`, at most `max`.
    pub fn desired_height(&self, width: u16, max: u16) -> u16 {
        let parts = self.parts(width.max(1), max);
        self.height(&parts, max)
    }

    fn height(&self, parts: &Parts, max: u16) -> u16 {
        self.rows(parts, max).total().max(1).min(max)
    }

    /// Draws the viewport into `area`; returns where the terminal's cursor goes.
    pub fn render(&self, area: Rect, buf: &mut Buffer) -> Option<Position> {
        if area.width == 0 || area.height == 0 {
            return None;
        }
        self.render_parts(&self.parts(area.width, area.height), area, buf)
    }

    /// One frame on `screen`: its parts computed once for both the height and the drawing.
    pub fn draw<B>(&self, screen: &mut Screen<B>) -> io::Result<()>
    where
        B: Backend,
        B::Error: std::error::Error + Send + Sync + 'static,
    {
        let size = screen.size();
        let parts = self.parts(size.width.max(1), size.height);
        let height = self.height(&parts, size.height);
        screen.draw(height, |area, buf| {
            if area.width == 0 || area.height == 0 {
                None
            } else if area.width == size.width {
                self.render_parts(&parts, area, buf)
            } else {
                self.render_parts(&self.parts(area.width, area.height), area, buf)
            }
        })
    }

    fn render_parts(&self, parts: &Parts, area: Rect, buf: &mut Buffer) -> Option<Position> {
        let rows = self.rows(parts, area.height);
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
            let lines = o.lines(usize::from(inner.height));
            for (iy, line) in (inner.y..inner.bottom()).zip(&lines) {
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
        let custom = usize::from(rows.custom).min(parts.custom.len());
        put(buf, &parts.custom[..custom], &mut y);
        if shown == 0 {
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
                .events
                .running_since()
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
            // Its short form, as `stepper sessions` shows it and every command takes it.
            let short = stepper_protocol::session::short_ids(&[&s.id]);
            spans.push(Span::styled(short.concat(), theme::dim()));
        }
        if !self.model.is_empty() {
            spans.push(sep());
            spans.push(Span::raw(self.model.clone()));
        }
        spans.push(sep());
        let mode_style = match self.mode {
            PermissionMode::Plan => Style::new().fg(Color::Blue),
            PermissionMode::AcceptEdits => theme::warning(),
            PermissionMode::Auto => theme::error(),
            PermissionMode::Default => theme::dim(),
        };
        spans.push(Span::styled(self.mode.as_str(), mode_style));
        match &self.sandbox {
            Some(s) if s.state == SandboxState::Active => {
                let net = if s.network { " +net" } else { "" };
                spans.push(sep());
                spans.push(Span::styled(
                    format!("sandbox {}{net}", s.mode),
                    Style::new().fg(Color::Green),
                ));
                // The fallback holds less (README: the sandbox's gaps without bubblewrap).
                if s.mechanism == Some(SandboxMechanism::Landlock) {
                    spans.push(Span::styled(" (landlock only)", theme::warning()));
                }
            }
            Some(s) if s.state == SandboxState::Unavailable => {
                spans.push(sep());
                spans.push(Span::styled("no sandbox here: asking", theme::warning()));
            }
            _ => {}
        }
        if let (Some(used), Some(window)) = (self.events.context_tokens(), self.context_window)
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
        let total = self.events.usage();
        if total.input_tokens + total.output_tokens + total.cache_read_tokens > 0 {
            spans.push(sep());
            let input = total.input_tokens + total.cache_read_tokens + total.cache_write_tokens;
            spans.push(Span::styled(
                format!("↑{} ↓{}", tokens(input), tokens(total.output_tokens)),
                theme::dim(),
            ));
        }
        if let Some(cost) = self.events.cost_usd() {
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

/// Models shown at once in `/model`'s list; it scrolls with the selection.
const MODEL_ROWS: usize = 10;

/// `/model`'s list: each model with its context window and prices, the current one marked.
fn model_overlay(menu: &crate::app::ModelMenu, current: &str, width: u16) -> Overlay {
    let first = menu
        .selected
        .saturating_sub(MODEL_ROWS - 1)
        .min(menu.models.len().saturating_sub(MODEL_ROWS));
    let shown: Vec<(usize, &crate::ModelEntry)> = menu
        .models
        .iter()
        .enumerate()
        .skip(first)
        .take(MODEL_ROWS)
        .collect();
    let metas: Vec<String> = shown
        .iter()
        .map(|(_, m)| {
            let price = match (m.input_price, m.output_price) {
                (Some(i), Some(o)) => format!("${i} / ${o} per M"),
                _ => "price unknown".to_string(),
            };
            let now = if m.id == current { " · current" } else { "" };
            format!("  {:>6} ctx · {price}{now}", tokens(m.context_window))
        })
        .collect();
    let meta_width = metas.iter().map(|m| str_width(m)).max().unwrap_or(0);
    let name_width = shown
        .iter()
        .map(|(_, m)| str_width(&m.id))
        .max()
        .unwrap_or(0)
        .min(usize::from(width).saturating_sub(2 + meta_width).max(8));
    let mut content = Vec::new();
    for ((i, m), meta) in shown.iter().zip(metas) {
        let chosen = *i == menu.selected;
        let marker = if chosen { "› " } else { "  " };
        let name_style = if chosen { theme::bold() } else { Style::new() };
        let name = truncate(&m.id, name_width);
        let pad = " ".repeat(name_width.saturating_sub(str_width(&name)));
        content.push(Line::from(vec![
            Span::styled(marker, theme::user_prompt()),
            Span::styled(format!("{name}{pad}"), name_style),
            Span::styled(meta, theme::dim()),
        ]));
    }
    let more = menu.models.len().saturating_sub(MODEL_ROWS);
    let title = if more > 0 {
        format!("Switch model · {} models", menu.models.len())
    } else {
        "Switch model".to_string()
    };
    Overlay {
        title,
        content,
        keys: vec![Line::from(Span::styled(
            "↑↓ choose · ⏎ switch · esc cancel",
            theme::dim(),
        ))],
    }
}

/// An MCP server's form: its question, then a line per field (the one being typed in
/// marked), and the keys.
fn form_overlay(e: &crate::app::Elicit, more: usize, live: bool, width: u16) -> Overlay {
    let mut content = Vec::new();
    Para::new(vec![Span::raw(e.message.clone())]).wrap(width, &mut content);
    for (i, field) in e.fields.iter().enumerate() {
        let hint = match field.hint() {
            h if h.is_empty() => h,
            h => format!(" ({h})"),
        };
        let typed = &e.typed[i];
        let shown = if typed.is_empty() {
            field
                .default
                .as_ref()
                .map(|d| {
                    Span::styled(
                        d.as_str().map_or_else(|| d.to_string(), str::to_string),
                        theme::dim(),
                    )
                })
                .unwrap_or_else(|| Span::raw(""))
        } else {
            Span::styled(typed.clone(), theme::bold())
        };
        let marker = if i == e.at { "› " } else { "  " };
        let required = if field.required { "*" } else { "" };
        let mut spans = vec![
            Span::styled(marker, theme::bold()),
            Span::raw(format!("{}{required}{hint}: ", field.title)),
            shown,
        ];
        if i == e.at {
            spans.push(Span::styled("▌", theme::dim()));
        }
        content.push(Line::from(spans));
    }
    if let Some(problem) = &e.problem {
        content.push(Line::from(Span::styled(problem.clone(), theme::error())));
    }
    let style = |s: Style| {
        if live {
            theme::bold().patch(s)
        } else {
            theme::dim()
        }
    };
    let keys = Line::from(vec![
        Span::styled("⏎", style(theme::ok())),
        Span::styled(" send  ", dim_unless(live)),
        Span::styled("⇥", style(Style::new())),
        Span::styled(" next field  ", dim_unless(live)),
        Span::styled("esc", style(theme::error())),
        Span::styled(" decline", dim_unless(live)),
    ]);
    Overlay {
        title: title(format!("{} asks", e.server), live, more),
        content,
        keys: vec![keys],
    }
}

fn dim_unless(live: bool) -> Style {
    if live { Style::new() } else { theme::dim() }
}

/// An overlay's title, with what its state adds: a word to read first while its keys do
/// not answer yet (see `App::answer_keys_live`), and how many more wait.
fn title(what: String, live: bool, more: usize) -> String {
    let mut title = what;
    if !live {
        title.push_str(" · read it first: keys in a moment");
    }
    if more > 0 {
        title.push_str(&format!(" · +{more} more waiting"));
    }
    title
}

/// The answers, one a line: the key, then what it does. Dimmed while the keys do not
/// answer yet, so what is shown in colour is what a key press does.
fn options(choices: &[(&str, String)], live: bool, width: u16) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (key, what) in choices {
        let style = match *key {
            _ if !live => theme::dim(),
            "n" | "t" => theme::bold().patch(theme::error()),
            _ => theme::bold().patch(theme::ok()),
        };
        Para::prefixed(
            Span::styled(format!("{key}  "), style),
            Span::raw("   "),
            vec![Span::styled(what.clone(), dim_unless(live))],
        )
        .wrap(width, &mut out);
    }
    out
}

/// The approval in front: what is asked, then its answers.
fn overlay(a: &Approval, more: usize, live: bool, width: u16) -> Overlay {
    let mut content = Vec::new();
    for line in a.summary.lines() {
        Para::new(vec![Span::raw(line.to_string())]).wrap(width, &mut content);
    }
    if let Some(command) = &a.command {
        for line in command.lines() {
            Para::prefixed(
                Span::styled("$ ", theme::dim()),
                Span::raw("  "),
                vec![Span::styled(line.to_string(), theme::bold())],
            )
            .wrap(width, &mut content);
        }
    }
    if let Some(diff) = &a.diff {
        diff_lines(diff, width, usize::MAX, &mut || Span::raw(""), &mut content);
    }
    let (what, choices) = match &a.asks {
        Asks::Trust => (
            format!("Trust {}?", a.tool),
            vec![
                ("y", "trust the folder".to_string()),
                (
                    "n",
                    "don't trust it (esc) — remembered; `stepper trust` changes it".to_string(),
                ),
            ],
        ),
        Asks::McpServer(_) => (
            format!("Allow {}?", a.tool),
            vec![
                ("y", "allow it (remembered for the project)".to_string()),
                (
                    "a",
                    "always: allow all of this project's MCP servers".to_string(),
                ),
                ("n", "deny (esc; remembered)".to_string()),
            ],
        ),
        Asks::Tool(_) => {
            let mut choices = vec![("y", "allow".to_string())];
            if let Some(scope) = a.always_scope() {
                choices.push((
                    "a",
                    format!("always: don't ask again this session for {scope}"),
                ));
            }
            choices.push(("n", "deny (esc)".to_string()));
            choices.push((
                "t",
                "deny, and tell the model what to do instead".to_string(),
            ));
            (format!("Allow {}?", a.tool), choices)
        }
    };
    Overlay {
        title: title(what, live, more),
        content,
        keys: options(&choices, live, width),
    }
}
