//! Keys and pastes: editing the input, the completion popup, answering an approval, and the
//! actions they ask of the core — attaching included: a pasted path of an image or PDF, an
//! accepted `@` completion naming one, and Ctrl-V ask the core to read it (the TUI only
//! checks that a pasted path names a file); an input with attachments is queued, never
//! steered (a steer takes text alone).
//!
//! *Approval keys answer only after a moment*: keys typed in the first 400 ms of an approval (or an
//! MCP server's form) are swallowed — neither an answer nor text left in the input (someone typing
//! when it appears must not answer it); its title says "read it first" until its keys answer. Its
//! "always" names what the daemon's rule will let through (each command of the line exactly, a
//! file, a domain, an MCP tool, for the rest of the session) and is not offered when no rule can
//! stand for the request (leaving the sandbox).

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use stepper_protocol::attachment::looks_attachable;

use super::{App, Asks};
use crate::command::{self, COMMANDS, Parsed};
use crate::completion::Kind;
use crate::theme;
use crate::transcript::Cell;
use crate::{Action, PermissionMode};

/// How long after an approval shows up keys are swallowed: someone typing `…any` when it
/// appears must not answer it by accident.
const ANSWER_GUARD_MS: i64 = 400;

impl App {
    /// Whether keys answer the approval in front: not in its first moments, so keys typed
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

        // A question that just appeared takes every key and answers none: keys typed for
        // the input as it shows up (`…any`) must neither answer it nor stay in the input,
        // to be sent later with words they were never meant for.
        if (!self.approvals.is_empty() || !self.elicits.is_empty()) && !self.answer_keys_live() {
            return Vec::new();
        }

        // An approval takes its answer keys only; the rest edit the input as ever.
        if let Some(approval) = self.approvals.front() {
            let tool_call = matches!(approval.asks, Asks::Tool(_));
            let decision = match key.code {
                KeyCode::Char('y') if !ctrl && !alt => Some(crate::ApprovalDecision::Allow),
                // Trust has no "always": it is remembered whatever the answer. A call no
                // rule can stand for (leaving the sandbox) has none either.
                KeyCode::Char('a')
                    if !ctrl
                        && !alt
                        && match approval.asks {
                            Asks::Trust => false,
                            Asks::McpServer(_) => true,
                            Asks::Tool(_) => approval.always_scope().is_some(),
                        } =>
                {
                    Some(crate::ApprovalDecision::AllowAlways)
                }
                KeyCode::Char('n' | 't') | KeyCode::Esc if !ctrl && !alt => {
                    Some(crate::ApprovalDecision::Deny)
                }
                _ => None,
            };
            // `t`: deny, stop the turn, and let the user's next words say what to do instead
            // (the interrupted turn keeps the denied call, so the next input follows it).
            let tell = key.code == KeyCode::Char('t');
            if let Some(decision) = decision
                && (tool_call || !tell)
            {
                let asks = approval.asks.clone();
                self.approvals.pop_front();
                self.approval_since = self.now_ms;
                let answer = match asks {
                    Asks::McpServer(name) => Action::ApproveMcpServer { name, decision },
                    Asks::Trust => Action::Trust {
                        trusted: decision != crate::ApprovalDecision::Deny,
                    },
                    Asks::Tool(request_id) => Action::Approve {
                        request_id,
                        decision,
                    },
                };
                if tell {
                    self.telling = true;
                    return vec![answer, Action::Interrupt];
                }
                return vec![answer];
            }
        }

        // `/model`'s list, once nothing is asked: arrows choose, Enter sets, Esc closes.
        if self.approvals.is_empty()
            && self.elicits.is_empty()
            && let Some(menu) = &mut self.model_menu
        {
            let n = menu.models.len().max(1);
            match key.code {
                KeyCode::Up => menu.selected = (menu.selected + n - 1) % n,
                KeyCode::Char('p') if ctrl => menu.selected = (menu.selected + n - 1) % n,
                KeyCode::Down => menu.selected = (menu.selected + 1) % n,
                KeyCode::Char('n') if ctrl => menu.selected = (menu.selected + 1) % n,
                KeyCode::Enter => {
                    let chosen = menu.models.get(menu.selected).map(|m| m.id.clone());
                    self.model_menu = None;
                    return chosen
                        .map(|model| vec![Action::SetModel { model }])
                        .unwrap_or_default();
                }
                KeyCode::Esc => self.model_menu = None,
                KeyCode::Char('c' | 'd') if ctrl => self.model_menu = None,
                _ => {}
            }
            return Vec::new();
        }

        // An MCP server's form (once no approval waits) takes the keys: they type in its
        // fields. Tab and arrows move between fields, Enter sends, Esc declines.
        if self.approvals.is_empty() && !self.elicits.is_empty() {
            return self.elicit_key(key, ctrl);
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
                KeyCode::Tab => return self.accept_popup(false).1,
                KeyCode::Enter if !shift && !alt => {
                    let (run, attach) = self.accept_popup(true);
                    if run {
                        return self.submit(false);
                    }
                    return attach;
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
                // `auto` is never a keypress away: it is chosen by name.
                let next = match self.mode_asked.unwrap_or(self.mode) {
                    PermissionMode::Default => PermissionMode::AcceptEdits,
                    PermissionMode::AcceptEdits => PermissionMode::Plan,
                    PermissionMode::Plan | PermissionMode::Auto => PermissionMode::Default,
                };
                self.mode_asked = Some(next);
                return vec![Action::SetMode { mode: next }];
            }
            KeyCode::Esc if self.telling => {
                self.telling = false;
                if self.running {
                    return vec![Action::Interrupt];
                }
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
            KeyCode::Char('o') if ctrl => self.toggle_expanded(),
            // The clipboard's image, read by the core (text pastes come as bracketed pastes).
            KeyCode::Char('v') if ctrl && !alt => actions.push(Action::PasteImage),
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

    /// Text pasted (bracketed paste): inserted as is, newlines included; a large paste as a
    /// token that stands for it. A paste that is the path of an image or a PDF (a file
    /// dropped on the terminal) asks the core to attach it instead.
    pub fn on_paste(&mut self, text: &str) -> Vec<Action> {
        if (!self.approvals.is_empty() || !self.elicits.is_empty()) && !self.answer_keys_live() {
            return Vec::new();
        }
        if let Some(path) = pasted_file(text) {
            return vec![Action::Attach { path }];
        }
        self.composer.paste(text);
        self.refresh_popup();
        Vec::new()
    }

    /// Puts the selected item in place of the word: true when that completed a command that
    /// takes no argument and Enter should run it; and the attaching of a file completed that
    /// is an image or a PDF (its `@path` stays in the text, naming it for the model).
    fn accept_popup(&mut self, enter: bool) -> (bool, Vec<Action>) {
        let Some(popup) = self.popup.take() else {
            return (false, Vec::new());
        };
        let Some(item) = popup.items.get(popup.selected) else {
            return (false, Vec::new());
        };
        let attach: Vec<Action> = item
            .label
            .strip_prefix('@')
            .filter(|path| popup.kind == Kind::File && looks_attachable(path))
            .map(|path| Action::Attach {
                path: path.to_string(),
            })
            .into_iter()
            .collect();
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
        (run, attach)
    }

    fn submit(&mut self, queue: bool) -> Vec<Action> {
        let attached = !self.composer.attachments().is_empty();
        if self.composer.text().trim().is_empty() && !attached {
            return Vec::new();
        }
        let text = self.composer.take();
        self.popup = None;
        let text = text.trim_end_matches('\n').to_string();
        // A command keeps the attachments in the box, for the input after it.
        if command::is_command(&text) {
            return match command::parse(&text) {
                Parsed::Action(action) => {
                    if let Action::SetMode { mode } = &action {
                        self.mode_asked = Some(*mode);
                    }
                    vec![action]
                }
                // The keys and this terminal's commands here; the daemon answers with the
                // built-ins and the folder's commands and skills.
                Parsed::Help => {
                    self.push(Cell::Help);
                    vec![Action::Submit {
                        text,
                        attachments: Vec::new(),
                    }]
                }
                Parsed::Usage(usage) => {
                    self.push(Cell::note("⚠", usage, theme::warning()));
                    Vec::new()
                }
                Parsed::Cost => {
                    let used = self.events.usage();
                    let cost = match self.events.cost_usd() {
                        None => "no price known for this model".to_string(),
                        Some(cost) => format!("${cost:.4}"),
                    };
                    let line = format!(
                        "this session: {} input, {} output, {} cache read, {} cache write tokens; {cost}",
                        used.input_tokens,
                        used.output_tokens,
                        used.cache_read_tokens,
                        used.cache_write_tokens
                    );
                    self.push(Cell::note("ℹ", line, theme::dim()));
                    Vec::new()
                }
            };
        }
        // Words that say what to do instead of a denied call start the next turn: the
        // denied one is being interrupted, and a steer could land in it as it stops.
        let queue = queue || std::mem::take(&mut self.telling);
        // Steering takes text alone: an input with attachments is queued as a new one.
        if self.running && !queue && !attached {
            vec![Action::Steer { text }]
        } else {
            vec![Action::Submit {
                text,
                attachments: self.composer.take_attachments(),
            }]
        }
    }
}

/// The file a paste names, when it is one image or PDF that exists: a path (absolute, from
/// the home folder with `~/`, or from the client's folder), maybe quoted or a `file://`
/// URI, with spaces `\`-escaped as terminals drop files.
fn pasted_file(text: &str) -> Option<String> {
    let text = text.trim();
    if text.contains('\n') || !looks_attachable(text.trim_end_matches(['\'', '"'])) {
        return None;
    }
    let unquoted = ['\'', '"']
        .iter()
        .find_map(|q| text.strip_prefix(*q)?.strip_suffix(*q))
        .unwrap_or(text);
    let path = match unquoted.strip_prefix("file://") {
        Some(uri) => percent_decoded(uri)?,
        None => unquoted.replace("\\ ", " "),
    };
    let full = match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => std::path::PathBuf::from(home).join(rest),
        _ => std::path::PathBuf::from(&path),
    };
    full.is_file().then(|| full.display().to_string())
}

/// A URI's path with its `%XX` escapes decoded; `None` when they do not make UTF-8.
fn percent_decoded(uri: &str) -> Option<String> {
    let bytes = uri.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

impl App {
    fn elicit_key(&mut self, key: KeyEvent, ctrl: bool) -> Vec<Action> {
        use stepper_protocol::ElicitAction;
        let Some(form) = self.elicits.front_mut() else {
            return Vec::new();
        };
        let n = form.fields.len();
        match key.code {
            KeyCode::Tab | KeyCode::Down => form.at = (form.at + 1) % n.max(1),
            KeyCode::BackTab | KeyCode::Up => form.at = (form.at + n.max(1) - 1) % n.max(1),
            KeyCode::Backspace => {
                if let Some(text) = form.typed.get_mut(form.at) {
                    text.pop();
                }
            }
            KeyCode::Char('u') if ctrl => {
                if let Some(text) = form.typed.get_mut(form.at) {
                    text.clear();
                }
            }
            KeyCode::Char(c) if !ctrl => {
                if let Some(text) = form.typed.get_mut(form.at) {
                    text.push(c);
                }
            }
            KeyCode::Esc => {
                let request_id = form.request_id.clone();
                self.elicits.pop_front();
                self.approval_since = self.now_ms;
                return vec![Action::Elicit {
                    request_id,
                    action: ElicitAction::Decline,
                    content: None,
                }];
            }
            KeyCode::Enter => {
                let mut content = stepper_protocol::elicit::Content::new();
                for (i, field) in form.fields.iter().enumerate() {
                    match field.parse(&form.typed[i]) {
                        Ok(Some(value)) => {
                            content.insert(field.name.clone(), value);
                        }
                        Ok(None) => {}
                        Err(why) => {
                            form.at = i;
                            form.problem = Some(why);
                            return Vec::new();
                        }
                    }
                }
                let request_id = form.request_id.clone();
                self.elicits.pop_front();
                self.approval_since = self.now_ms;
                return vec![Action::Elicit {
                    request_id,
                    action: ElicitAction::Accept,
                    content: Some(content),
                }];
            }
            _ => {}
        }
        Vec::new()
    }
}
