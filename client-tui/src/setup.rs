//! The first run: when no provider can serve a new session, a short choice instead of a
//! doomed session — sign in with ChatGPT, paste an Anthropic or OpenAI key, or use a local
//! OpenAI-compatible server — ending in the model the session starts on.
//!
//! [`Setup`] is the state, driven by keys and by the replies to the [`SetupRequest`]s it
//! makes; [`setup_with`] runs it over any screen and key source, and the core answers the
//! requests (it knows the daemon; this crate does not). A request in flight never blocks
//! the keys: Esc leaves it.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::pin::Pin;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::screen::Screen;
use crate::terminal::{KeySource, RawMode, real_keys, real_screen};
use crate::theme;
use crate::wrap::Para;

/// What the first run starts from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SetupOffer {
    /// Why no session could start, in the daemon's words.
    pub reason: String,
    /// Providers that can serve a session already (a key for another provider than the one
    /// asked for): label and model.
    pub usable: Vec<(String, String)>,
    /// The model a session starts on per provider (`anthropic`, `openai`, `codex`).
    pub defaults: BTreeMap<String, String>,
    /// The local server's address to offer first.
    pub local_url: String,
}

/// What the setup needs done by the core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupRequest {
    /// Store an API key the way `stepper auth login` does.
    StoreKey { provider: String, key: String },
    /// Begin signing in with ChatGPT; the reply carries the page to open.
    BeginSignIn,
    /// Wait for the browser to finish the sign-in.
    WaitSignIn { login_id: String },
    /// Ask a local server for its models.
    Probe { url: String },
    /// Store the local server with the model sessions start on.
    UseLocal { url: String, model: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupReply {
    Done,
    SignInBegun {
        login_id: String,
        url: String,
    },
    Models {
        url: String,
        models: Vec<String>,
    },
    /// The request failed; the words say why and what to do.
    Failed(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupOutcome {
    /// Start the session on this model.
    Model(String),
    Cancelled,
}

/// What the state asks of its loop after a key or a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupStep {
    Call(SetupRequest),
    Finish(SetupOutcome),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Choice {
    Use(String),
    SignIn,
    Key(&'static str),
    Local,
}

#[derive(Debug, Clone, PartialEq)]
enum Stage {
    Menu,
    Key {
        provider: &'static str,
        input: String,
    },
    SignIn {
        url: Option<String>,
    },
    LocalUrl {
        input: String,
    },
    LocalModels {
        url: String,
        models: Vec<String>,
        selected: usize,
    },
}

/// The first run's state.
#[derive(Debug)]
pub struct Setup {
    offer: SetupOffer,
    choices: Vec<(Choice, String)>,
    selected: usize,
    stage: Stage,
    /// A request is in flight: keys other than Esc wait.
    busy: Option<String>,
    error: Option<String>,
}

fn provider_label(provider: &str) -> &'static str {
    match provider {
        "anthropic" => "Anthropic",
        _ => "OpenAI",
    }
}

impl Setup {
    pub fn new(offer: SetupOffer) -> Setup {
        let mut choices: Vec<(Choice, String)> = offer
            .usable
            .iter()
            .map(|(label, model)| (Choice::Use(model.clone()), format!("Use {model} ({label})")))
            .collect();
        choices.extend([
            (
                Choice::SignIn,
                "Sign in with ChatGPT (a Plus, Pro or Team plan)".to_string(),
            ),
            (
                Choice::Key("anthropic"),
                "Paste an Anthropic API key".into(),
            ),
            (Choice::Key("openai"), "Paste an OpenAI API key".into()),
            (
                Choice::Local,
                "Use a local server (Ollama, LM Studio, llama.cpp, vLLM)".into(),
            ),
        ]);
        Setup {
            offer,
            choices,
            selected: 0,
            stage: Stage::Menu,
            busy: None,
            error: None,
        }
    }

    fn default_model(&self, provider: &str) -> String {
        self.offer
            .defaults
            .get(provider)
            .cloned()
            .unwrap_or_else(|| match provider {
                "anthropic" => "anthropic/claude-sonnet-4-5".into(),
                "openai" => "openai/gpt-5".into(),
                _ => "codex/gpt-5-codex".into(),
            })
    }

    fn call(&mut self, what: &str, request: SetupRequest) -> Option<SetupStep> {
        self.busy = Some(what.to_string());
        self.error = None;
        Some(SetupStep::Call(request))
    }

    /// Back to the menu, leaving any request in flight (its reply is then ignored).
    fn back(&mut self) {
        self.stage = Stage::Menu;
        self.busy = None;
    }

    /// Whether a reply is awaited.
    pub fn is_busy(&self) -> bool {
        self.busy.is_some()
    }

    pub fn on_event(&mut self, event: &Event) -> Option<SetupStep> {
        match event {
            Event::Key(key) => self.on_key(*key),
            Event::Paste(text) if self.busy.is_none() => {
                match &mut self.stage {
                    Stage::Key { input, .. } | Stage::LocalUrl { input } => {
                        input.extend(text.chars().filter(|c| !c.is_control()));
                        self.error = None;
                    }
                    _ => {}
                }
                None
            }
            _ => None,
        }
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Option<SetupStep> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(key.code, KeyCode::Char('c' | 'd')) {
            return Some(SetupStep::Finish(SetupOutcome::Cancelled));
        }
        if key.code == KeyCode::Esc {
            if self.stage == Stage::Menu && self.busy.is_none() {
                return Some(SetupStep::Finish(SetupOutcome::Cancelled));
            }
            self.back();
            return None;
        }
        if self.busy.is_some() {
            return None;
        }
        match &mut self.stage {
            Stage::Menu => {
                let rows = self.choices.len();
                match key.code {
                    KeyCode::Up | KeyCode::Char('k') => {
                        self.selected = (self.selected + rows - 1) % rows
                    }
                    KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab => {
                        self.selected = (self.selected + 1) % rows
                    }
                    KeyCode::Char(c @ '1'..='9') => {
                        let i = usize::from(c as u8 - b'1');
                        if i < rows {
                            self.selected = i;
                            return self.choose();
                        }
                    }
                    KeyCode::Enter => return self.choose(),
                    KeyCode::Char('q') => {
                        return Some(SetupStep::Finish(SetupOutcome::Cancelled));
                    }
                    _ => {}
                }
                None
            }
            Stage::Key { provider, input } => match edit(input, key) {
                Edit::Submit if input.trim().is_empty() => {
                    self.error = Some("paste the key first (or Esc to go back)".into());
                    None
                }
                Edit::Submit => {
                    let request = SetupRequest::StoreKey {
                        provider: provider.to_string(),
                        key: input.trim().to_string(),
                    };
                    self.call("storing the key…", request)
                }
                Edit::Changed => {
                    self.error = None;
                    None
                }
            },
            Stage::LocalUrl { input } => match edit(input, key) {
                Edit::Submit => {
                    let url = input.trim().to_string();
                    self.call(
                        &format!("asking {url} for its models…"),
                        SetupRequest::Probe { url },
                    )
                }
                Edit::Changed => None,
            },
            Stage::LocalModels {
                url,
                models,
                selected,
            } => {
                let rows = models.len().max(1);
                match key.code {
                    KeyCode::Up | KeyCode::Char('k') => *selected = (*selected + rows - 1) % rows,
                    KeyCode::Down | KeyCode::Char('j') => *selected = (*selected + 1) % rows,
                    KeyCode::Enter if !models.is_empty() => {
                        let request = SetupRequest::UseLocal {
                            url: url.clone(),
                            model: models[*selected].clone(),
                        };
                        return self.call("storing the server…", request);
                    }
                    _ => {}
                }
                None
            }
            Stage::SignIn { .. } => None,
        }
    }

    fn choose(&mut self) -> Option<SetupStep> {
        self.error = None;
        match self.choices[self.selected].0.clone() {
            Choice::Use(model) => Some(SetupStep::Finish(SetupOutcome::Model(model))),
            Choice::SignIn => {
                self.stage = Stage::SignIn { url: None };
                self.call("starting the sign-in…", SetupRequest::BeginSignIn)
            }
            Choice::Key(provider) => {
                self.stage = Stage::Key {
                    provider,
                    input: String::new(),
                };
                None
            }
            Choice::Local => {
                self.stage = Stage::LocalUrl {
                    input: self.offer.local_url.clone(),
                };
                None
            }
        }
    }

    pub fn on_reply(&mut self, reply: SetupReply) -> Option<SetupStep> {
        self.busy.as_ref()?;
        self.busy = None;
        if let SetupReply::Failed(why) = reply {
            self.error = Some(why);
            if matches!(self.stage, Stage::SignIn { .. } | Stage::LocalModels { .. }) {
                self.stage = match &self.stage {
                    Stage::LocalModels { url, .. } => Stage::LocalUrl { input: url.clone() },
                    _ => Stage::Menu,
                };
            }
            return None;
        }
        match (&mut self.stage, reply) {
            (Stage::Key { provider, .. }, SetupReply::Done) => {
                let provider = *provider;
                let model = self.default_model(provider);
                Some(SetupStep::Finish(SetupOutcome::Model(model)))
            }
            (
                Stage::SignIn { url },
                SetupReply::SignInBegun {
                    login_id,
                    url: page,
                },
            ) => {
                *url = Some(page);
                self.call(
                    "waiting for the browser…",
                    SetupRequest::WaitSignIn { login_id },
                )
            }
            (Stage::SignIn { .. }, SetupReply::Done) => Some(SetupStep::Finish(
                SetupOutcome::Model(self.default_model("codex")),
            )),
            (Stage::LocalUrl { .. }, SetupReply::Models { url, models }) => {
                if models.is_empty() {
                    self.error = Some(format!(
                        "{url} answers but serves no model — load or pull one first (ollama pull qwen3)"
                    ));
                    return None;
                }
                self.stage = Stage::LocalModels {
                    url,
                    models,
                    selected: 0,
                };
                None
            }
            (
                Stage::LocalModels {
                    models, selected, ..
                },
                SetupReply::Done,
            ) => {
                let model = models[*selected].clone();
                Some(SetupStep::Finish(SetupOutcome::Model(format!(
                    "local/{model}"
                ))))
            }
            _ => None,
        }
    }

    /// The lines to show, at `width`.
    fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        let para = |spans: Vec<Span<'static>>, out: &mut Vec<Line<'static>>| {
            Para::new(spans).wrap(width, out)
        };
        out.push(Line::from(Span::styled(
            "stepper needs a model provider to start a session",
            theme::bold(),
        )));
        para(
            vec![Span::styled(self.offer.reason.clone(), theme::dim())],
            &mut out,
        );
        out.push(Line::default());
        let hint = match &self.stage {
            Stage::Menu => {
                for (i, (_, label)) in self.choices.iter().enumerate() {
                    let chosen = i == self.selected;
                    let marker = if chosen { "› " } else { "  " };
                    let style = if chosen {
                        theme::bold()
                    } else {
                        Default::default()
                    };
                    out.push(Line::from(vec![
                        Span::styled(marker, theme::user_prompt()),
                        Span::styled(format!("{}. {label}", i + 1), style),
                    ]));
                }
                "↑↓ choose · ⏎ select · esc quit"
            }
            Stage::Key { provider, input } => {
                let label = provider_label(provider);
                let page = if *provider == "anthropic" {
                    "console.anthropic.com/settings/keys"
                } else {
                    "platform.openai.com/api-keys"
                };
                para(
                    vec![Span::raw(format!(
                        "Paste your {label} API key (from {page}). It is stored for the daemon, \
                         readable by you only, as 'stepper auth login --{provider}' stores it."
                    ))],
                    &mut out,
                );
                let shown = "•".repeat(input.chars().count().min(40));
                let count = match input.chars().count() {
                    0 => String::new(),
                    n => format!("  ({n} characters)"),
                };
                out.push(Line::from(vec![
                    Span::styled("key: ", theme::accent()),
                    Span::raw(shown),
                    Span::styled(count, theme::dim()),
                ]));
                "⏎ save · esc back"
            }
            Stage::SignIn { url } => {
                match url {
                    None => out.push(Line::raw("Sign in with ChatGPT")),
                    Some(url) => {
                        out.push(Line::raw(
                            "Sign in with ChatGPT: open this page in a browser",
                        ));
                        let mut p = Para::new(vec![Span::styled(url.clone(), theme::link())]);
                        p.hard = true;
                        p.wrap(width, &mut out);
                        para(
                            vec![Span::styled(
                                "The browser comes back to localhost on the machine stepperd \
                                 runs on; from another machine, forward the port in the page's \
                                 redirect_uri first (ssh -L 1455:localhost:1455 HOST)."
                                    .to_string(),
                                theme::dim(),
                            )],
                            &mut out,
                        );
                    }
                }
                "esc back"
            }
            Stage::LocalUrl { input } => {
                para(
                    vec![Span::raw(
                        "The server's OpenAI-compatible base URL (Ollama: \
                         http://localhost:11434/v1, LM Studio: http://localhost:1234/v1)",
                    )],
                    &mut out,
                );
                out.push(Line::from(vec![
                    Span::styled("url: ", theme::accent()),
                    Span::raw(input.clone()),
                ]));
                "⏎ ask it for its models · esc back"
            }
            Stage::LocalModels {
                url,
                models,
                selected,
            } => {
                out.push(Line::raw(format!("Models at {url}:")));
                let first = selected.saturating_sub(7);
                for (i, m) in models.iter().enumerate().skip(first).take(8) {
                    let chosen = i == *selected;
                    out.push(Line::from(vec![
                        Span::styled(if chosen { "› " } else { "  " }, theme::user_prompt()),
                        Span::styled(
                            m.clone(),
                            if chosen {
                                theme::bold()
                            } else {
                                Default::default()
                            },
                        ),
                    ]));
                }
                "↑↓ choose · ⏎ start on it · esc back"
            }
        };
        if let Some(busy) = &self.busy {
            out.push(Line::from(Span::styled(busy.clone(), theme::accent())));
        }
        if let Some(error) = &self.error {
            para(vec![Span::styled(error.clone(), theme::error())], &mut out);
        }
        out.push(Line::from(Span::styled(hint, theme::dim())));
        out
    }

    pub fn height(&self, width: u16) -> u16 {
        u16::try_from(self.lines(width).len()).unwrap_or(u16::MAX)
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let lines = self.lines(area.width);
        // When rows are short, the end (the input, the error, the hints) stays visible.
        let skip = lines.len().saturating_sub(usize::from(area.height));
        for (n, line) in lines.iter().skip(skip).enumerate() {
            buf.set_line(area.x, area.y + n as u16, line, area.width);
        }
    }
}

enum Edit {
    Changed,
    Submit,
}

/// One key applied to a line of input.
fn edit(input: &mut String, key: KeyEvent) -> Edit {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Enter => return Edit::Submit,
        KeyCode::Backspace => {
            input.pop();
        }
        KeyCode::Char('u') if ctrl => input.clear(),
        KeyCode::Char(c) if !ctrl => input.push(c),
        _ => {}
    }
    Edit::Changed
}

/// Answers the setup's requests (the core implements it with daemon calls).
pub trait SetupCalls {
    fn call(&self, request: SetupRequest) -> impl Future<Output = SetupReply> + Send;
}

/// The first run on the real terminal (inline, cleared when done).
pub async fn setup<C: SetupCalls + Sync>(offer: SetupOffer, calls: &C) -> io::Result<SetupOutcome> {
    let _raw = RawMode::enter().await?;
    let screen = real_screen().await?;
    setup_with(offer, calls, screen, real_keys()).await
}

/// The first run's loop over any screen, key source and core.
pub async fn setup_with<B, K, C>(
    offer: SetupOffer,
    calls: &C,
    mut screen: Screen<B>,
    mut keys: K,
) -> io::Result<SetupOutcome>
where
    B: Backend,
    B::Error: std::error::Error + Send + Sync + 'static,
    K: KeySource,
    C: SetupCalls + Sync,
{
    let mut setup = Setup::new(offer);
    let mut pending: Option<Pin<Box<dyn Future<Output = SetupReply> + Send + '_>>> = None;
    let outcome = loop {
        let width = screen.size().width;
        screen.draw(setup.height(width), |area, buf| {
            setup.render(area, buf);
            None
        })?;
        let step = tokio::select! {
            reply = async {
                match pending.as_mut() {
                    Some(call) => call.await,
                    None => std::future::pending().await,
                }
            }, if pending.is_some() => {
                pending = None;
                setup.on_reply(reply)
            }
            event = keys.next() => match event {
                Some(Ok(Event::Resize(w, h))) => {
                    let row = keys.cursor_row().await;
                    screen.resize(ratatui::layout::Size::new(w, h), row)?;
                    None
                }
                Some(Ok(event)) => {
                    let step = setup.on_event(&event);
                    if !setup.is_busy() {
                        // Esc went back: the request in flight is dropped.
                        pending = None;
                    }
                    step
                }
                Some(Err(e)) => {
                    let _ = screen.leave();
                    return Err(e);
                }
                None => break SetupOutcome::Cancelled,
            },
        };
        match step {
            Some(SetupStep::Call(request)) => pending = Some(Box::pin(calls.call(request))),
            Some(SetupStep::Finish(outcome)) => break outcome,
            None => {}
        }
    };
    drop(pending);
    screen.leave()?;
    Ok(outcome)
}
