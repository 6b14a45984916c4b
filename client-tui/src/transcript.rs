//! The cells of the transcript: one per thing that happened, each rendering itself to
//! wrapped lines at a width.
//!
//! A cell is either live (still changing: streaming text, a running tool) and drawn in the
//! viewport, or finished and committed once to the terminal's scrollback. Rendering is a pure
//! function of the cell, the width and the spinner frame, so it is what the snapshots test.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use stepper_protocol::{ApprovalDecision, TodoItem, TodoStatus, ToolCallStatus, TurnStatus};

use crate::markdown::{self, OpenFence};
use crate::theme;
use crate::wrap::{Para, push_sanitized, sanitize, truncate};

/// Lines of a running tool's output kept on screen.
const LIVE_OUTPUT_LINES: usize = 4;
/// Lines of a finished tool's output kept in the transcript.
const DONE_OUTPUT_LINES: usize = 5;
/// Lines of a diff kept in the transcript; the rest is counted.
const DIFF_LINES: usize = 120;
/// Lines of a tool's output shown expanded (Ctrl-O); the rest is counted.
const EXPANDED_OUTPUT_LINES: usize = 200;
/// Bytes of a running tool's output kept in memory: only its tail is ever shown.
const LIVE_OUTPUT_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone)]
pub(crate) enum Cell {
    /// An input, as its turn started.
    User {
        text: String,
        turn: Option<u32>,
        /// Its images and documents, as labels (`[image: shot.png 120 KB]`).
        attachments: Vec<String>,
    },
    /// Assistant markdown: a whole message, the finished blocks of one still streaming, or
    /// (`streaming`) the part still growing. While a code block of it streams (`fence`),
    /// `text` holds the code after the lines already gone to scrollback.
    Assistant {
        text: String,
        streaming: bool,
        fence: Option<Box<OpenFence>>,
    },
    /// Lines of a code block that went to scrollback while the block streamed; `joined`
    /// when they continue rows already there (no gap before them).
    Code {
        rows: Vec<Vec<Span<'static>>>,
        joined: bool,
    },
    Reasoning {
        text: String,
        done: bool,
    },
    Tool(ToolCell),
    /// A layer of the turn, a parallel layer's worker or a dispatched subagent.
    Agent(AgentCell),
    Todos(Vec<TodoItem>),
    /// A one-line event: a notice, a mode change, a client attaching.
    Note {
        glyph: &'static str,
        text: String,
        style: Style,
    },
    Help,
}

#[derive(Debug, Clone)]
pub(crate) struct ToolCell {
    pub call_id: String,
    pub tool: String,
    pub summary: String,
    pub output: String,
    pub done: Option<ToolDone>,
    /// Its whole output shown (Ctrl-O), not only its tail.
    pub expanded: bool,
}

/// Lines of an agent's activity kept (the last shown collapsed, all expanded).
const AGENT_ACTIVITY: usize = 6;
/// Lines of an agent's final text shown expanded.
const AGENT_TEXT_LINES: usize = 12;

#[derive(Debug, Clone)]
pub(crate) struct AgentCell {
    /// The agent id its events carry (`layer-1`, `layer-2.3`, `agent-1`).
    pub id: String,
    /// What it is: `layer 1/2 plan`, `worker layer-2.1`, `subagent reviewer`.
    pub label: String,
    pub model: String,
    pub task: Option<String>,
    /// What it did lately: tools it called, messages it wrote (first lines).
    pub activity: Vec<String>,
    /// How it ended and its final text.
    pub done: Option<(TurnStatus, String)>,
    /// Show its activity and final text, not only the last line (Ctrl-O).
    pub expanded: bool,
}

impl AgentCell {
    pub fn note(&mut self, line: String) {
        self.activity.push(line);
        if self.activity.len() > AGENT_ACTIVITY {
            self.activity.remove(0);
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct ToolDone {
    pub status: ToolCallStatus,
    pub output: String,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub diff: Option<String>,
}

impl ToolCell {
    /// Whether showing it collapsed leaves part of its output out.
    pub fn cut(&self) -> bool {
        match &self.done {
            None => self.output.lines().count() > LIVE_OUTPUT_LINES,
            Some(d) if shows_output(self, d) => d.output.lines().count() > DONE_OUTPUT_LINES,
            Some(d) => !d.output.is_empty(),
        }
    }

    pub fn push_output(&mut self, text: &str) {
        push_sanitized(&mut self.output, text);
        if self.output.len() > LIVE_OUTPUT_BYTES {
            let mut cut = self.output.len() - LIVE_OUTPUT_BYTES;
            while !self.output.is_char_boundary(cut) {
                cut += 1;
            }
            self.output.drain(..cut);
        }
    }
}

impl Cell {
    /// A note's text often comes from outside (an error, a notice): it is sanitized here.
    pub fn note(glyph: &'static str, text: impl Into<String>, style: Style) -> Cell {
        Cell::Note {
            glyph,
            text: sanitize(&text.into()),
            style,
        }
    }

    /// Whether the cell will change again (and so must stay in the viewport).
    pub fn is_live(&self) -> bool {
        match self {
            Cell::Assistant { streaming, .. } => *streaming,
            Cell::Reasoning { done, .. } => !done,
            Cell::Tool(t) => t.done.is_none(),
            Cell::Agent(a) => a.done.is_none(),
            _ => false,
        }
    }

    /// Whether the cell continues the one before it on screen, with no empty line between.
    pub fn joins_previous(&self) -> bool {
        match self {
            Cell::Code { joined, .. } => *joined,
            Cell::Assistant { fence: Some(f), .. } => f.started,
            _ => false,
        }
    }

    pub fn lines(&self, width: u16, spinner: &str) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        match self {
            Cell::User {
                text,
                turn,
                attachments,
            } => user(text, *turn, attachments, width, &mut out),
            Cell::Assistant {
                text,
                fence: Some(fence),
                ..
            } => {
                if !text.is_empty() {
                    markdown::code_lines(&[fence.peek(text)], &[], width, &mut out);
                }
            }
            Cell::Assistant { text, .. } => out = markdown::render(text, width),
            Cell::Code { rows, .. } => markdown::code_lines(rows, &[], width, &mut out),
            Cell::Reasoning { text, done } => reasoning(text, *done, width, &mut out),
            Cell::Tool(t) => tool(t, width, spinner, &mut out),
            Cell::Agent(a) => agent(a, width, spinner, &mut out),
            Cell::Todos(items) => todos(items, width, &mut out),
            // Each line of a note its own paragraph, under the glyph.
            Cell::Note { glyph, text, style } => {
                let lines: Vec<&str> = match text.lines().collect::<Vec<_>>() {
                    lines if lines.is_empty() => vec![""],
                    lines => lines,
                };
                for (i, line) in lines.into_iter().enumerate() {
                    let first = if i == 0 {
                        Span::styled(format!("{glyph} "), *style)
                    } else {
                        Span::raw("  ")
                    };
                    Para::prefixed(
                        first,
                        Span::raw("  "),
                        vec![Span::styled(line.to_string(), *style)],
                    )
                    .wrap(width, &mut out);
                }
            }
            Cell::Help => help(width, &mut out),
        }
        out
    }
}

fn user(
    text: &str,
    turn: Option<u32>,
    attachments: &[String],
    width: u16,
    out: &mut Vec<Line<'static>>,
) {
    let mut rows: Vec<&str> = text.lines().collect();
    if rows.is_empty() {
        rows.push("");
    }
    // The attachments first, as the model sees them, each on its line.
    for (i, label) in attachments.iter().enumerate() {
        let first = if i == 0 {
            Span::styled("› ", theme::user_prompt())
        } else {
            Span::raw("  ")
        };
        let content = vec![Span::styled(label.clone(), theme::accent())];
        Para::prefixed(first, Span::raw("  "), content).wrap(width, out);
    }
    let prompt_shown = !attachments.is_empty();
    let last = rows.len() - 1;
    for (i, row) in rows.into_iter().enumerate() {
        let first = if i == 0 && !prompt_shown {
            Span::styled("› ", theme::user_prompt())
        } else {
            Span::raw("  ")
        };
        let mut content = vec![Span::styled(row.to_string(), theme::bold())];
        if let (true, Some(turn)) = (i == last, turn) {
            content.push(Span::styled(format!("  #{turn}"), theme::dim()));
        }
        Para::prefixed(first, Span::raw("  "), content).wrap(width, out);
    }
}

fn reasoning(text: &str, done: bool, width: u16, out: &mut Vec<Line<'static>>) {
    let style = theme::dim().add_modifier(Modifier::ITALIC);
    let header = if done { "Thought" } else { "Thinking…" };
    out.push(Line::from(vec![
        Span::styled("∴ ", theme::dim()),
        Span::styled(header, style),
    ]));
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.is_empty() {
        return;
    }
    let mut wrapped = Vec::new();
    Para::prefixed(
        Span::raw("  "),
        Span::raw("  "),
        vec![Span::styled(flat, style)],
    )
    .wrap(width, &mut wrapped);
    // Collapsed: the start once it is done (what it was about), the tail while it streams.
    let keep = 2;
    if done {
        let more = wrapped.len() > keep;
        wrapped.truncate(keep);
        if more && let Some(last) = wrapped.last_mut() {
            last.spans.push(Span::styled(" …", theme::dim()));
        }
    } else if wrapped.len() > keep {
        wrapped.drain(..wrapped.len() - keep);
    }
    out.extend(wrapped);
}

fn status_glyph(t: &ToolCell, spinner: &str) -> Span<'static> {
    match &t.done {
        None => Span::styled(spinner.to_string(), theme::accent()),
        Some(d) => match d.status {
            ToolCallStatus::Ok => Span::styled("✓", theme::ok()),
            ToolCallStatus::Error => Span::styled("✗", theme::error()),
            ToolCallStatus::Denied => Span::styled("⊘", theme::warning()),
            ToolCallStatus::Cancelled => Span::styled("◌", theme::dim()),
        },
    }
}

fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    }
}

/// Tools whose output is content (a file, a listing) rather than something happening: once
/// they finish, a count says enough.
fn output_is_content(tool: &str) -> bool {
    matches!(
        tool,
        "read" | "ls" | "glob" | "grep" | "web_fetch" | "todo_write"
    )
}

/// Whether a finished call shows its output collapsed: a content tool that succeeded, or
/// an edit with its diff, says enough with a count.
fn shows_output(t: &ToolCell, d: &ToolDone) -> bool {
    match d.status {
        ToolCallStatus::Ok => !output_is_content(&t.tool) && d.diff.is_none(),
        _ => true,
    }
}

fn tool(t: &ToolCell, width: u16, spinner: &str, out: &mut Vec<Line<'static>>) {
    let mut header = vec![
        Span::styled(t.tool.clone(), theme::bold()),
        Span::raw(" "),
        Span::raw(t.summary.clone()),
    ];
    let body_style;
    let body: Vec<&str>;
    // Lines left out before the body (collapsed, its tail shown) or after it (expanded,
    // its head shown).
    let mut hidden = 0;
    let mut more = 0;
    let all_lines = |output: &str| -> Vec<String> { output.lines().map(String::from).collect() };
    let shown_lines: Vec<String>;
    match &t.done {
        None => {
            shown_lines = all_lines(&t.output);
            let keep = if t.expanded {
                EXPANDED_OUTPUT_LINES
            } else {
                LIVE_OUTPUT_LINES
            };
            hidden = shown_lines.len().saturating_sub(keep);
            body = shown_lines[hidden..].iter().map(String::as_str).collect();
            body_style = theme::dim();
        }
        Some(d) => {
            let mut meta = Vec::new();
            match d.status {
                ToolCallStatus::Denied => meta.push("denied".to_string()),
                ToolCallStatus::Cancelled => meta.push("cancelled".to_string()),
                ToolCallStatus::Error if d.exit_code.is_none() => meta.push("error".to_string()),
                _ => {}
            }
            if let Some(code) = d.exit_code {
                meta.push(format!("exit {code}"));
            }
            meta.push(duration(d.duration_ms));
            shown_lines = all_lines(&d.output);
            let show_output = t.expanded || shows_output(t, d);
            if t.expanded {
                let keep = shown_lines.len().min(EXPANDED_OUTPUT_LINES);
                more = shown_lines.len() - keep;
                body = shown_lines[..keep].iter().map(String::as_str).collect();
            } else if show_output {
                hidden = shown_lines.len().saturating_sub(DONE_OUTPUT_LINES);
                body = shown_lines[hidden..].iter().map(String::as_str).collect();
            } else {
                if d.diff.is_none() && !shown_lines.is_empty() {
                    let n = shown_lines.len();
                    meta.push(format!("{n} line{}", if n == 1 { "" } else { "s" }));
                }
                body = Vec::new();
            }
            body_style = if d.status == ToolCallStatus::Ok {
                theme::dim()
            } else {
                theme::error()
            };
            header.push(Span::styled(
                format!(" · {}", meta.join(" · ")),
                theme::dim(),
            ));
        }
    }
    Para {
        first: vec![status_glyph(t, spinner), Span::raw(" ")],
        rest: vec![Span::raw("  ")],
        content: header,
        hard: false,
    }
    .wrap(width, out);

    let mut first_body = true;
    let mut lead = || {
        let s = if first_body { "  └ " } else { "    " };
        first_body = false;
        Span::styled(s, theme::border())
    };
    if hidden > 0 {
        let hint = if t.expanded { "" } else { EXPAND_HINT };
        out.push(Line::from(vec![
            lead(),
            Span::styled(format!("… +{hidden} lines{hint}"), theme::dim()),
        ]));
    }
    for line in body {
        let text = truncate(line, usize::from(width).saturating_sub(4));
        out.push(Line::from(vec![lead(), Span::styled(text, body_style)]));
    }
    if more > 0 {
        out.push(Line::from(vec![
            lead(),
            Span::styled(format!("… {more} more lines"), theme::dim()),
        ]));
    }
    if let Some(diff) = t.done.as_ref().and_then(|d| d.diff.as_deref()) {
        diff_lines(diff, width, DIFF_LINES, &mut lead, out);
    }
}

/// After the count of a collapsed tool's lines left out: how to see them.
const EXPAND_HINT: &str = " (ctrl+o to expand)";

/// A unified diff in colour: additions green, removals red, hunk headers cyan.
pub(crate) fn diff_lines(
    diff: &str,
    width: u16,
    max: usize,
    lead: &mut dyn FnMut() -> Span<'static>,
    out: &mut Vec<Line<'static>>,
) {
    let lines: Vec<&str> = diff.lines().collect();
    for line in lines.iter().take(max) {
        let style = if line.starts_with("+++") || line.starts_with("---") {
            theme::bold()
        } else if line.starts_with('+') {
            theme::diff_added()
        } else if line.starts_with('-') {
            theme::diff_removed()
        } else if line.starts_with("@@") {
            theme::diff_hunk()
        } else {
            theme::dim()
        };
        let text = truncate(line, usize::from(width).saturating_sub(4));
        out.push(Line::from(vec![lead(), Span::styled(text, style)]));
    }
    if lines.len() > max {
        out.push(Line::from(vec![
            lead(),
            Span::styled(
                format!("… {} more diff lines", lines.len() - max),
                theme::dim(),
            ),
        ]));
    }
}

fn agent(a: &AgentCell, width: u16, spinner: &str, out: &mut Vec<Line<'static>>) {
    let (glyph, glyph_style, status) = match &a.done {
        None => (format!("{spinner} "), theme::accent(), None),
        Some((TurnStatus::Completed, _)) => ("◆ ".to_string(), theme::accent(), Some("done")),
        Some((TurnStatus::Interrupted, _)) => {
            ("■ ".to_string(), theme::warning(), Some("interrupted"))
        }
        Some((TurnStatus::Failed, _)) => ("✗ ".to_string(), theme::error(), Some("failed")),
    };
    let mut header = vec![
        Span::styled(glyph, glyph_style),
        Span::styled(a.label.clone(), theme::bold()),
        Span::styled(format!(" · {}", a.model), theme::dim()),
    ];
    if let Some(status) = status {
        header.push(Span::styled(format!(" · {status}"), theme::dim()));
    }
    out.push(Line::from(header));
    let indented = |text: &str, style: Style, out: &mut Vec<Line<'static>>| {
        Para {
            first: vec![Span::raw("  ")],
            rest: vec![Span::raw("  ")],
            content: vec![Span::styled(text.to_string(), style)],
            hard: false,
        }
        .wrap(width, out);
    };
    if let Some(task) = &a.task {
        indented(
            &format!("task: {}", task.lines().next().unwrap_or("")),
            theme::dim(),
            out,
        );
    }
    match (&a.done, a.expanded) {
        (None, false) => {
            if let Some(last) = a.activity.last() {
                indented(last, theme::dim(), out);
            }
        }
        (Some((_, text)), false) => {
            if let Some(line) = text.lines().find(|l| !l.trim().is_empty()) {
                indented(&truncate(line, 200), theme::dim(), out);
            }
        }
        (done, true) => {
            for line in &a.activity {
                indented(line, theme::dim(), out);
            }
            if let Some((_, text)) = done {
                let lines: Vec<&str> = text.lines().collect();
                for line in lines.iter().take(AGENT_TEXT_LINES) {
                    indented(line, Style::new(), out);
                }
                if lines.len() > AGENT_TEXT_LINES {
                    indented(
                        &format!("… {} more lines", lines.len() - AGENT_TEXT_LINES),
                        theme::dim(),
                        out,
                    );
                }
            }
        }
    }
}

fn todos(items: &[TodoItem], width: u16, out: &mut Vec<Line<'static>>) {
    let done = items
        .iter()
        .filter(|i| i.status == TodoStatus::Completed)
        .count();
    out.push(Line::from(vec![
        Span::styled("• ", theme::accent()),
        Span::styled("Todos", theme::bold()),
        Span::styled(format!(" {done}/{}", items.len()), theme::dim()),
    ]));
    for item in items {
        let (mark, style, text) = match item.status {
            TodoStatus::Pending => ("☐ ", Style::new(), item.content.clone()),
            TodoStatus::InProgress => (
                "◐ ",
                theme::bold().patch(theme::accent()),
                item.active_form
                    .clone()
                    .unwrap_or_else(|| item.content.clone()),
            ),
            TodoStatus::Completed => (
                "☑ ",
                theme::dim().add_modifier(Modifier::CROSSED_OUT),
                item.content.clone(),
            ),
        };
        Para {
            first: vec![
                Span::raw("  "),
                Span::styled(mark, style.remove_modifier(Modifier::CROSSED_OUT)),
            ],
            rest: vec![Span::raw("    ")],
            content: vec![Span::styled(text, style)],
            hard: false,
        }
        .wrap(width, out);
    }
}

pub(crate) const HELP: &[(&str, &str)] = &[
    ("⏎", "send (steers the running turn)"),
    ("⇥", "queue as the next turn while one runs"),
    ("⇧⏎ ⌥⏎ ^J", "new line"),
    ("↑ ↓", "history"),
    ("esc", "interrupt the running turn"),
    ("⇧⇥", "cycle mode: default → accept-edits → plan"),
    ("^C", "clear the input, or interrupt"),
    ("^D", "detach (the turn goes on)"),
    (
        "^O",
        "expand or collapse tool output and what layers and subagents did",
    ),
    (
        "^V",
        "attach the clipboard's image (a pasted image or PDF path attaches it too)",
    ),
    ("⌫", "in an empty input: take back the last attachment"),
    ("@path", "mention a file (an image or PDF: attach it)"),
];

fn help(width: u16, out: &mut Vec<Line<'static>>) {
    out.push(Line::from(Span::styled("Keys", theme::bold())));
    for (key, what) in HELP {
        Para::prefixed(
            Span::styled(format!("  {key:<10}"), theme::accent()),
            Span::raw(" ".repeat(12)),
            vec![Span::raw(*what)],
        )
        .wrap(width, out);
    }
    out.push(Line::from(Span::styled(
        "Commands of this terminal",
        theme::bold(),
    )));
    for c in crate::command::COMMANDS.iter().filter(|c| c.local) {
        Para::prefixed(
            Span::styled(format!("  {:<10}", c.name), theme::accent()),
            Span::raw(" ".repeat(12)),
            vec![Span::raw(c.help)],
        )
        .wrap(width, out);
    }
}

pub(crate) fn decision_text(d: ApprovalDecision) -> (&'static str, &'static str, Style) {
    match d {
        ApprovalDecision::Allow => ("✓", "allowed", theme::ok()),
        ApprovalDecision::AllowAlways => ("✓", "always allowed", theme::ok()),
        ApprovalDecision::Deny => ("✗", "denied", theme::error()),
    }
}

/// What to show after a tool's name: the one argument that says what it does.
pub(crate) fn tool_summary(
    tool: &str,
    field: impl Fn(&str) -> Option<String>,
    raw: &str,
) -> String {
    let pick = |keys: &[&str]| keys.iter().find_map(|k| field(k));
    let s = match tool {
        "bash" => pick(&["command"]),
        "read" | "write" | "edit" | "multi_edit" | "ls" => pick(&["file_path", "path"]),
        "grep" | "glob" => pick(&["pattern"]).map(|p| match field("path") {
            Some(path) => format!("{p} in {path}"),
            None => p,
        }),
        "web_fetch" => pick(&["url"]),
        "todo_write" => Some(String::new()),
        _ => None,
    };
    let s = s.unwrap_or_else(|| {
        if raw == "{}" || raw == "null" {
            String::new()
        } else {
            raw.to_string()
        }
    });
    let one_line = s.lines().next().unwrap_or("").to_string();
    let more = s.lines().count() > 1;
    let mut s = truncate(&one_line, 160);
    if more {
        s.push_str(" …");
    }
    s
}
