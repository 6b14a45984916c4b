//! The TUI's state and what changes it: core events in, keys in, actions out.
//!
//! Everything here is synchronous and terminal-free, so tests drive it with events and keys
//! and read back actions, committed lines and rendered frames. Cells move one way: live (in
//! the viewport) → finished (queued for scrollback) → written to scrollback and dropped, always
//! in transcript order.

use std::collections::{HashMap, VecDeque};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::text::Line;
use stepper_protocol::event::{AppEvent, EventEnvelope, ToolCallStatus, TurnStatus, Usage};
use stepper_protocol::session::{SessionInfo, SessionStatus};

use crate::command::{self, COMMANDS, Parsed};
use crate::completion::{Kind, Popup, popup_for};
use crate::composer::Composer;
use crate::markdown::{self, OpenFence};
use crate::theme;
use crate::transcript::{Cell, ToolCell, ToolDone, decision_text, tool_summary};
use crate::wrap::{push_sanitized, sanitize};
use crate::{Action, CoreEvent, Exit, TuiOptions};

/// How long after an approval shows up its answer keys still type into the input: someone
/// typing `…any` when it appears must not answer it by accident.
const ANSWER_GUARD_MS: i64 = 400;

/// An approval waiting for this user's answer.
#[derive(Debug, Clone)]
pub(crate) struct Approval {
    pub request_id: String,
    pub tool: String,
    pub summary: String,
    pub command: Option<String>,
    pub diff: Option<String>,
}

/// The whole state of the attached TUI.
#[derive(Debug)]
pub struct App {
    pub(crate) session: Option<SessionInfo>,
    pub(crate) model: String,
    /// The mode as the daemon last said: shown only once it is committed.
    pub(crate) mode: String,
    /// The mode last asked with Shift-Tab and not confirmed yet: the next press cycles on
    /// from it.
    mode_asked: Option<String>,
    pub(crate) context_window: Option<u64>,
    last_seq: u64,
    me: String,
    pub(crate) others: Vec<String>,
    /// Presence events up to this seq are history: `CoreEvent::Clients` already says who is
    /// here now, and replaying old attaches would count people twice.
    presence_after: u64,
    files: Vec<String>,
    /// Finished cells not yet written to scrollback, in order. Once written they are the
    /// terminal's: the app keeps nothing of them.
    finished: Vec<Cell>,
    /// Cells still changing, in transcript order.
    pub(crate) live: Vec<Cell>,
    pub(crate) queued: Vec<(String, String)>,
    pub(crate) approvals: VecDeque<Approval>,
    /// When the approval in front appeared (app time): its answer keys count after the guard.
    approval_since: i64,
    approval_tools: HashMap<String, String>,
    pub(crate) composer: Composer,
    pub(crate) popup: Option<Popup>,
    popup_dismissed: Option<String>,
    pub(crate) running: bool,
    pub(crate) turn_started_at: Option<i64>,
    message_streamed: bool,
    pub(crate) usage_done: Usage,
    pub(crate) cost_done: Option<f64>,
    pub(crate) usage_turn: Usage,
    pub(crate) cost_turn: Option<f64>,
    step_base: u64,
    pub(crate) context_tokens: Option<u64>,
    pub(crate) now_ms: i64,
    pub(crate) flash: Option<(String, i64)>,
    exit: Option<Exit>,
}

impl App {
    pub fn new(opts: TuiOptions) -> Self {
        App {
            session: None,
            model: String::new(),
            mode: "default".into(),
            mode_asked: None,
            context_window: None,
            last_seq: 0,
            me: String::new(),
            others: Vec::new(),
            presence_after: 0,
            files: Vec::new(),
            finished: Vec::new(),
            live: Vec::new(),
            queued: Vec::new(),
            approvals: VecDeque::new(),
            approval_since: 0,
            approval_tools: HashMap::new(),
            composer: Composer::with_history(opts.history),
            popup: None,
            popup_dismissed: None,
            running: false,
            turn_started_at: None,
            message_streamed: false,
            usage_done: Usage::default(),
            cost_done: None,
            usage_turn: Usage::default(),
            cost_turn: None,
            step_base: 0,
            context_tokens: None,
            now_ms: 0,
            flash: None,
            exit: None,
        }
    }

    /// Set when the core disconnected: the loop stops with it.
    pub fn exit(&self) -> Option<&Exit> {
        self.exit.as_ref()
    }

    /// The seq of the last session event applied.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Whether a turn runs (as far as the events say).
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// The text in the input box.
    pub fn input(&self) -> &str {
        self.composer.text()
    }

    /// The current time, ms since the epoch: drives the spinner, elapsed time and hints.
    pub fn tick(&mut self, now_ms: i64) {
        self.now_ms = now_ms;
        if self
            .flash
            .as_ref()
            .is_some_and(|(_, until)| *until <= now_ms)
        {
            self.flash = None;
        }
    }

    /// Whether the screen changes with time alone (a spinner, a hint that expires).
    pub fn animating(&self) -> bool {
        self.running || self.flash.is_some() || self.live.iter().any(Cell::is_live)
    }

    /// The finished cells not yet committed, rendered at `width` for the scrollback, each
    /// after an empty line.
    pub fn take_history(&mut self, width: u16) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        for cell in self.finished.drain(..) {
            if !cell.joins_previous() {
                out.push(Line::default());
            }
            out.extend(cell.lines(width, ""));
        }
        out
    }

    /// Leaving: the finished cells not yet committed, then what is still live (a message
    /// half streamed, a tool running) as it stands, so what the user saw stays on their
    /// screen. The turn goes on in the daemon; reattaching replays it whole.
    pub fn take_history_on_exit(&mut self, width: u16) -> Vec<Line<'static>> {
        let mut out = self.take_history(width);
        for cell in &self.live {
            let lines = cell.lines(width, "");
            if lines.iter().any(|l| l.width() > 0) {
                if !cell.joins_previous() {
                    out.push(Line::default());
                }
                out.extend(lines);
            }
        }
        out
    }

    pub fn apply(&mut self, event: CoreEvent) {
        match event {
            CoreEvent::Event(envelope) => self.apply_envelope(envelope),
            CoreEvent::Session {
                info,
                mode,
                context_window,
            } => {
                if self.session.as_ref().is_some_and(|s| s.id != info.id) {
                    self.last_seq = 0;
                    self.finish_live(true);
                    self.queued.clear();
                    self.approvals.clear();
                    self.usage_done = Usage::default();
                    self.cost_done = None;
                    self.usage_turn = Usage::default();
                    self.cost_turn = None;
                    self.context_tokens = None;
                }
                self.model = info.model.clone();
                self.presence_after = info.last_seq;
                self.running = info.status == SessionStatus::Running;
                self.mode = mode;
                self.mode_asked = None;
                self.context_window = context_window;
                self.session = Some(info);
            }
            CoreEvent::Clients { clients, me } => {
                self.others = clients
                    .into_iter()
                    .map(|c| c.name)
                    .filter(|n| *n != me)
                    .collect();
                self.others.dedup();
                self.me = me;
            }
            CoreEvent::Files(files) => {
                self.files = files;
                self.refresh_popup();
            }
            CoreEvent::Error(message) => {
                self.mode_asked = None;
                self.push(Cell::note("✗", message, theme::error()));
            }
            CoreEvent::Disconnected(reason) => self.exit = Some(Exit::Disconnected(reason)),
        }
    }

    fn apply_envelope(&mut self, env: EventEnvelope) {
        if env.seq <= self.last_seq {
            return;
        }
        self.last_seq = env.seq;
        match env.event {
            AppEvent::SessionCreated { cwd, model, .. } => {
                self.model = sanitize(&model);
                self.push(Cell::note(
                    "•",
                    format!("session started in {cwd} · {model}"),
                    theme::dim(),
                ));
            }
            AppEvent::InputQueued { input_id, text, .. } => {
                // Up brings back the session's inputs, replayed ones and other clients' too.
                self.composer.remember(&text);
                self.queued.push((input_id, sanitize(&text)));
            }
            AppEvent::TurnStarted {
                input_id,
                text,
                model,
            } => {
                self.finish_live(false);
                self.queued.retain(|(id, _)| *id != input_id);
                self.running = true;
                self.turn_started_at = Some(env.at);
                self.model = sanitize(&model);
                self.usage_turn = Usage::default();
                self.cost_turn = None;
                self.step_base = 0;
                self.push(Cell::User {
                    text: sanitize(&text),
                    turn: env.turn,
                });
            }
            AppEvent::TextDelta { text } => {
                self.end_reasoning();
                self.message_streamed = true;
                match self.streaming_message() {
                    Some(t) => push_sanitized(t, &text),
                    None => self.live.push(Cell::Assistant {
                        text: sanitize(&text),
                        streaming: true,
                        fence: None,
                    }),
                }
                self.settle();
            }
            AppEvent::ReasoningDelta { text } => match self.live.last_mut() {
                Some(Cell::Reasoning {
                    text: t,
                    done: false,
                }) => push_sanitized(t, &text),
                _ => self.live.push(Cell::Reasoning {
                    text: sanitize(&text),
                    done: false,
                }),
            },
            AppEvent::MessageCompleted { text, stop_reason } => {
                self.end_reasoning();
                self.end_message();
                if !self.message_streamed && !text.is_empty() {
                    self.push(Cell::Assistant {
                        text: sanitize(&text),
                        streaming: false,
                        fence: None,
                    });
                }
                self.message_streamed = false;
                if matches!(stop_reason.as_deref(), Some("max_tokens" | "length")) {
                    self.push(Cell::note(
                        "⚠",
                        "the reply was cut at the model's output limit",
                        theme::warning(),
                    ));
                }
                self.step_base = input_side(&self.usage_turn);
                self.settle();
            }
            AppEvent::ToolCallStarted {
                call_id,
                tool,
                input,
            } => {
                self.end_reasoning();
                self.end_message();
                let field = |k: &str| input.get(k).and_then(|v| v.as_str()).map(str::to_string);
                let summary = tool_summary(&tool, field, &input.to_string());
                self.push(Cell::Tool(ToolCell {
                    call_id,
                    tool,
                    summary,
                    output: String::new(),
                    done: None,
                }));
            }
            AppEvent::ToolOutputDelta { call_id, text } => {
                if let Some(t) = self.live_tool(&call_id) {
                    t.push_output(&text);
                }
            }
            AppEvent::ToolCallFinished {
                call_id,
                status,
                output,
                exit_code,
                duration_ms,
                diff,
            } => {
                let done = ToolDone {
                    status,
                    output: sanitize(&output),
                    exit_code,
                    duration_ms,
                    diff: diff.as_deref().map(sanitize),
                };
                match self.live_tool(&call_id) {
                    Some(t) => t.done = Some(done),
                    None => self.push(Cell::Tool(ToolCell {
                        call_id,
                        tool: "tool".into(),
                        summary: String::new(),
                        output: String::new(),
                        done: Some(done),
                    })),
                }
                self.settle();
            }
            AppEvent::Steered { text, by } => {
                self.push_aside(Cell::note(
                    "↳",
                    format!("steered: {text}{}", by_suffix(by)),
                    theme::dim(),
                ));
            }
            AppEvent::CheckpointCreated { files } => {
                let s = if files == 1 { "" } else { "s" };
                self.push(Cell::note(
                    "⛁",
                    format!("checkpoint: {files} file{s}"),
                    theme::dim(),
                ));
            }
            AppEvent::Rewound {
                turn,
                files,
                conversation,
            } => {
                let mut text = format!("rewound to before turn {turn}");
                if files > 0 {
                    text.push_str(&format!(
                        " · {files} file{} restored",
                        if files == 1 { "" } else { "s" }
                    ));
                }
                if conversation {
                    text.push_str(" · conversation cut");
                }
                self.push(Cell::note("↺", text, theme::warning()));
            }
            AppEvent::ClientAttached { client, kind, .. } => {
                if client != self.me {
                    self.push_aside(Cell::note(
                        "•",
                        format!("{client} attached ({kind})"),
                        theme::dim(),
                    ));
                    if env.seq > self.presence_after && !self.others.contains(&client) {
                        self.others.push(client);
                    }
                }
            }
            AppEvent::ClientDetached { client } => {
                if client != self.me {
                    if env.seq > self.presence_after {
                        self.others.retain(|c| *c != client);
                    }
                    self.push_aside(Cell::note("•", format!("{client} detached"), theme::dim()));
                }
            }
            AppEvent::ModelChanged { model, by } => {
                self.push_aside(Cell::note(
                    "⚙",
                    format!("model → {model}{}", by_suffix(by)),
                    theme::dim(),
                ));
                self.model = model;
            }
            AppEvent::ModeChanged { mode, by } => {
                self.push_aside(Cell::note(
                    "⚙",
                    format!("mode → {mode}{}", by_suffix(by)),
                    theme::dim(),
                ));
                self.mode = mode;
                self.mode_asked = None;
            }
            AppEvent::TodosUpdated { mut todos } => {
                for todo in &mut todos {
                    todo.content = sanitize(&todo.content);
                    todo.active_form = todo.active_form.as_deref().map(sanitize);
                }
                self.push(Cell::Todos(todos));
            }
            AppEvent::ApprovalRequested {
                request_id,
                tool,
                summary,
                command,
                diff,
            } => {
                let tool = sanitize(&tool);
                self.approval_tools.insert(request_id.clone(), tool.clone());
                if self.approvals.is_empty() {
                    self.approval_since = self.now_ms;
                }
                self.approvals.push_back(Approval {
                    request_id,
                    tool,
                    summary: sanitize(&summary),
                    command: command.as_deref().map(sanitize),
                    diff: diff.as_deref().map(sanitize),
                });
            }
            AppEvent::ApprovalResolved {
                request_id,
                decision,
                by,
            } => {
                let front = self.approvals.front().map(|a| a.request_id.clone());
                self.approvals.retain(|a| a.request_id != request_id);
                if front.as_deref() == Some(request_id.as_str()) {
                    self.approval_since = self.now_ms;
                }
                let tool = self.approval_tools.remove(&request_id).unwrap_or_default();
                let (glyph, verb, style) = decision_text(decision);
                let tool = if tool.is_empty() {
                    String::new()
                } else {
                    format!(" {tool}")
                };
                self.push(Cell::note(
                    glyph,
                    format!("{verb}{tool}{}", by_suffix(by)),
                    style,
                ));
            }
            AppEvent::UsageUpdated { usage, cost_usd } => {
                self.usage_turn = usage;
                self.cost_turn = cost_usd;
                self.context_tokens = Some(input_side(&usage).saturating_sub(self.step_base));
            }
            AppEvent::TurnFinished { status, error } => {
                // What the turn still asked can no longer be answered: it is over.
                self.approvals.clear();
                self.approval_tools.clear();
                self.finish_live(true);
                self.running = false;
                self.turn_started_at = None;
                self.usage_done.add(&self.usage_turn);
                self.usage_turn = Usage::default();
                if let Some(c) = self.cost_turn.take() {
                    self.cost_done = Some(self.cost_done.unwrap_or(0.0) + c);
                }
                match status {
                    TurnStatus::Completed => {}
                    TurnStatus::Interrupted => {
                        let text = error.unwrap_or_else(|| "interrupted".into());
                        self.push(Cell::note("■", text, theme::warning()));
                    }
                    TurnStatus::Failed => {
                        let text = match error {
                            Some(e) => format!("turn failed: {e}"),
                            None => "turn failed".into(),
                        };
                        self.push(Cell::note("✗", text, theme::error()));
                    }
                }
            }
            AppEvent::Error { message } => self.push(Cell::note("✗", message, theme::error())),
            AppEvent::Notice { message } => {
                self.push_aside(Cell::note("ℹ", message, theme::warning()))
            }
            AppEvent::Unknown => {}
        }
    }

    fn live_tool(&mut self, call_id: &str) -> Option<&mut ToolCell> {
        self.live.iter_mut().find_map(|c| match c {
            Cell::Tool(t) if t.call_id == call_id && t.done.is_none() => Some(t),
            _ => None,
        })
    }

    fn push(&mut self, cell: Cell) {
        self.live.push(cell);
        self.settle();
    }

    /// A note beside the turn's flow (presence, model, mode, steering, notices): it goes
    /// before a message still streaming, so the message stays one cell and its markdown
    /// whole (a code block cut in two would lose its highlighting and fences). While a code
    /// block of the message streams its rows are already in scrollback, so the note waits
    /// after the message instead of landing in the middle of the code.
    fn push_aside(&mut self, cell: Cell) {
        let at = match self.live.last() {
            Some(Cell::Assistant {
                streaming: true,
                fence: None,
                ..
            }) => self.live.len() - 1,
            _ => self.live.len(),
        };
        self.live.insert(at, cell);
        self.settle();
    }

    /// The text of the message still streaming: the last live cell, notes after it aside.
    fn streaming_message(&mut self) -> Option<&mut String> {
        let i = self
            .live
            .iter()
            .rposition(|c| !matches!(c, Cell::Note { .. }))?;
        match &mut self.live[i] {
            Cell::Assistant {
                text,
                streaming: true,
                ..
            } => Some(text),
            _ => None,
        }
    }

    fn end_reasoning(&mut self) {
        for cell in &mut self.live {
            if let Cell::Reasoning { done, .. } = cell {
                *done = true;
            }
        }
    }

    fn end_message(&mut self) {
        for cell in &mut self.live {
            if let Cell::Assistant {
                text,
                streaming,
                fence,
            } = cell
            {
                *streaming = false;
                if let Some(fence) = fence.take() {
                    *cell = end_fence(*fence, std::mem::take(text));
                }
            }
        }
        self.live.retain(|c| match c {
            Cell::Assistant { text, .. } => !text.is_empty(),
            Cell::Code { rows, .. } => !rows.is_empty(),
            _ => true,
        });
    }

    /// Ends everything still live (the turn is over): a tool without a result was cut off.
    fn finish_live(&mut self, turn_over: bool) {
        self.end_reasoning();
        self.end_message();
        if turn_over {
            for cell in &mut self.live {
                if let Cell::Tool(t) = cell
                    && t.done.is_none()
                {
                    t.done = Some(ToolDone {
                        status: ToolCallStatus::Cancelled,
                        output: std::mem::take(&mut t.output),
                        exit_code: None,
                        duration_ms: 0,
                        diff: None,
                    });
                }
            }
        }
        self.settle();
    }

    /// Moves the finished cells at the front of the live list to `finished`, and what of a
    /// streaming message at the front is final with them.
    fn settle(&mut self) {
        while let Some(first) = self.live.first_mut() {
            if let Cell::Assistant {
                text,
                streaming: true,
                fence,
            } = first
            {
                settle_message(text, fence, &mut self.finished);
                break;
            }
            if first.is_live() {
                break;
            }
            let cell = self.live.remove(0);
            self.finished.push(cell);
        }
    }

    /// Whether y/a/n answer the approval in front: not in its first moments, so keys typed
    /// for the input just as it appears do not answer it.
    pub(crate) fn answer_keys_live(&self) -> bool {
        self.now_ms - self.approval_since >= ANSWER_GUARD_MS
    }

    /// A key pressed: what it asks of the core.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Action> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);

        // An approval takes its answer keys only; the rest edit the input as ever. Typed
        // too soon after it appeared, even its answer keys are taken for typing.
        if let Some(approval) = self.approvals.front() {
            let decision = match key.code {
                KeyCode::Char('y') if !ctrl && !alt => Some(crate::ApprovalDecision::Allow),
                KeyCode::Char('a') if !ctrl && !alt => Some(crate::ApprovalDecision::AllowAlways),
                KeyCode::Char('n') | KeyCode::Esc if !ctrl && !alt => {
                    Some(crate::ApprovalDecision::Deny)
                }
                _ => None,
            };
            if let Some(decision) = decision {
                if self.answer_keys_live() {
                    let request_id = approval.request_id.clone();
                    self.approvals.pop_front();
                    self.approval_since = self.now_ms;
                    return vec![Action::Approve {
                        request_id,
                        decision,
                    }];
                }
                if key.code == KeyCode::Esc && self.popup.is_none() {
                    // Neither an answer nor an interrupt: the user may not have seen it.
                    return Vec::new();
                }
            }
        }

        if let Some(popup) = &mut self.popup {
            let n = popup.items.len().max(1);
            match key.code {
                KeyCode::Up => {
                    popup.selected = (popup.selected + n - 1) % n;
                    return Vec::new();
                }
                KeyCode::Down => {
                    popup.selected = (popup.selected + 1) % n;
                    return Vec::new();
                }
                KeyCode::Char('p') if ctrl => {
                    popup.selected = (popup.selected + n - 1) % n;
                    return Vec::new();
                }
                KeyCode::Char('n') if ctrl => {
                    popup.selected = (popup.selected + 1) % n;
                    return Vec::new();
                }
                KeyCode::Esc => {
                    self.popup = None;
                    self.popup_dismissed = Some(self.composer.text().to_string());
                    return Vec::new();
                }
                KeyCode::Tab => {
                    self.accept_popup(false);
                    return Vec::new();
                }
                KeyCode::Enter if !shift && !alt => {
                    if self.accept_popup(true) {
                        return self.submit(false);
                    }
                    return Vec::new();
                }
                _ => {}
            }
        }

        let mut actions = Vec::new();
        match key.code {
            KeyCode::Enter if shift || alt => self.composer.insert("\n"),
            KeyCode::Char('j') if ctrl => self.composer.insert("\n"),
            KeyCode::Enter => return self.submit(false),
            KeyCode::Tab if self.running && !self.composer.is_empty() => return self.submit(true),
            KeyCode::BackTab => {
                let from = self.mode_asked.as_deref().unwrap_or(&self.mode);
                let next = match from {
                    "default" => "accept-edits",
                    "accept-edits" => "plan",
                    _ => "default",
                };
                self.mode_asked = Some(next.to_string());
                return vec![Action::SetMode {
                    mode: next.to_string(),
                }];
            }
            KeyCode::Esc if self.running => return vec![Action::Interrupt],
            KeyCode::Char('c') if ctrl => {
                if !self.composer.is_empty() {
                    self.composer.clear();
                } else if self.running {
                    actions.push(Action::Interrupt);
                } else {
                    self.flash = Some(("press Ctrl-D to detach".into(), self.now_ms + 3000));
                }
            }
            KeyCode::Char('d') if ctrl => {
                if self.composer.is_empty() {
                    return vec![Action::Detach];
                }
                self.composer.delete();
            }
            KeyCode::Char('a') if ctrl => self.composer.home(),
            KeyCode::Char('e') if ctrl => self.composer.end(),
            KeyCode::Char('u') if ctrl => self.composer.kill_to_start(),
            KeyCode::Char('k') if ctrl => self.composer.kill_to_end(),
            KeyCode::Char('w') if ctrl => self.composer.delete_word_back(),
            KeyCode::Char('b') if ctrl => self.composer.left(),
            KeyCode::Char('f') if ctrl => self.composer.right(),
            KeyCode::Char('p') if ctrl => self.composer.up(),
            KeyCode::Char('n') if ctrl => self.composer.down(),
            KeyCode::Char('b') if alt => self.composer.word_left(),
            KeyCode::Char('f') if alt => self.composer.word_right(),
            // Ctrl+Alt is how Windows reports AltGr, which types characters (`@`, `€`).
            KeyCode::Char(c) if !ctrl || alt => {
                let mut buf = [0u8; 4];
                self.composer.insert(c.encode_utf8(&mut buf));
            }
            KeyCode::Backspace if ctrl || alt => self.composer.delete_word_back(),
            KeyCode::Backspace => self.composer.backspace(),
            KeyCode::Delete => self.composer.delete(),
            KeyCode::Left if ctrl || alt => self.composer.word_left(),
            KeyCode::Right if ctrl || alt => self.composer.word_right(),
            KeyCode::Left => self.composer.left(),
            KeyCode::Right => self.composer.right(),
            KeyCode::Home => self.composer.home(),
            KeyCode::End => self.composer.end(),
            KeyCode::Up => self.composer.up(),
            KeyCode::Down => self.composer.down(),
            _ => {}
        }
        self.refresh_popup();
        actions
    }

    /// Text pasted (bracketed paste): inserted as is, newlines included.
    pub fn on_paste(&mut self, text: &str) {
        self.composer.insert(text);
        self.refresh_popup();
    }

    /// Puts the selected item in place of the word; true when that completed a command that
    /// takes no argument and Enter should run it.
    fn accept_popup(&mut self, enter: bool) -> bool {
        let Some(popup) = self.popup.take() else {
            return false;
        };
        let Some(item) = popup.items.get(popup.selected) else {
            return false;
        };
        let text = self.composer.text();
        let run = popup.kind == Kind::Slash
            && enter
            && COMMANDS
                .iter()
                .any(|c| c.name == item.label && !c.takes_args);
        let trailing = if run { "" } else { " " };
        let replaced = format!(
            "{}{}{trailing}{}",
            &text[..popup.start],
            item.label,
            &text[popup.end..]
        );
        let cursor = popup.start + item.label.len() + trailing.len();
        self.composer.set(replaced, cursor);
        self.refresh_popup();
        run
    }

    fn refresh_popup(&mut self) {
        let text = self.composer.text();
        if self.popup_dismissed.as_deref() == Some(text) {
            self.popup = None;
            return;
        }
        self.popup_dismissed = None;
        let selected = self.popup.as_ref().map_or(0, |p| p.selected);
        self.popup = popup_for(text, self.composer.cursor(), &self.files).map(|mut p| {
            p.selected = selected.min(p.items.len().saturating_sub(1));
            p
        });
    }

    fn submit(&mut self, queue: bool) -> Vec<Action> {
        if self.composer.text().trim().is_empty() {
            return Vec::new();
        }
        let text = self.composer.take();
        self.popup = None;
        let text = text.trim_end_matches('\n').to_string();
        if command::is_command(&text) {
            return match command::parse(&text) {
                Parsed::Action(action) => {
                    if let Action::SetMode { mode } = &action {
                        self.mode_asked = Some(mode.clone());
                    }
                    vec![action]
                }
                Parsed::Help => {
                    self.push(Cell::Help);
                    Vec::new()
                }
                Parsed::Usage(usage) => {
                    self.push(Cell::note("⚠", usage, theme::warning()));
                    Vec::new()
                }
            };
        }
        if self.running && !queue {
            vec![Action::Steer { text }]
        } else {
            vec![Action::Submit { text }]
        }
    }
}

/// Moves what of a streaming message is final to `finished`: the blocks before a blank line,
/// the text before a code fence at the top level, then that code block's lines one by one
/// as they complete, so no frame redraws (or re-highlights) a block that only grows.
fn settle_message(text: &mut String, fence: &mut Option<Box<OpenFence>>, finished: &mut Vec<Cell>) {
    loop {
        match fence {
            None => {
                if let Some((start, end)) = markdown::open_fence(text) {
                    let open = OpenFence::new(&text[start..end]);
                    let before: String = text.drain(..end).take(start).collect();
                    commit_markdown(before, finished);
                    *fence = Some(Box::new(open));
                    continue;
                }
                let stable = markdown::stable_len(text);
                if stable > 0 {
                    let rest = text.split_off(stable);
                    commit_markdown(std::mem::replace(text, rest), finished);
                }
                return;
            }
            Some(open) => {
                let mut used = 0;
                let mut rows = Vec::new();
                let mut closed = false;
                for line in text.split_inclusive('\n') {
                    if !line.ends_with('\n') {
                        break;
                    }
                    used += line.len();
                    if open.closes(line) {
                        closed = true;
                        break;
                    }
                    rows.push(open.row(line));
                }
                text.drain(..used);
                if !rows.is_empty() {
                    finished.push(Cell::Code {
                        rows,
                        joined: open.started,
                    });
                    open.started = true;
                }
                if !closed {
                    return;
                }
                *fence = None;
            }
        }
    }
}

fn commit_markdown(text: String, finished: &mut Vec<Cell>) {
    if !text.trim().is_empty() {
        finished.push(Cell::Assistant {
            text,
            streaming: false,
            fence: None,
        });
    }
}

/// A message ended inside a code block: its last line, unless that closes the block. Text
/// past several lines (the message was never settled) renders as the block it is.
fn end_fence(fence: OpenFence, text: String) -> Cell {
    if text.contains('\n') {
        return Cell::Assistant {
            text: format!("{}{text}", fence.opener),
            streaming: false,
            fence: None,
        };
    }
    let mut fence = fence;
    let rows = if text.is_empty() || fence.closes(&text) {
        Vec::new()
    } else {
        vec![fence.row(&text)]
    };
    Cell::Code {
        rows,
        joined: fence.started,
    }
}

/// The tokens sent as input of the last model call: the context size.
fn input_side(u: &Usage) -> u64 {
    u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
}

/// Who did it, after what was done (free text, so in brackets): " (by alice)".
fn by_suffix(by: Option<String>) -> String {
    by.map(|b| format!(" (by {})", sanitize(&b)))
        .unwrap_or_default()
}
