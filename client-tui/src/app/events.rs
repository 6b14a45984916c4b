//! Daemon events applied to the state: the transcript's cells, usage, presence, approvals.
//!
//! A message streams into a live cell and moves to `finished` as it becomes final, block by
//! block and a code block line by line, so nothing that only grows is redrawn.

use stepper_protocol::event::{AppEvent, EventEnvelope, ToolCallStatus, TurnStatus, Usage};
use stepper_protocol::session::SessionStatus;

use super::{App, Approval, Asks};
use crate::markdown::{self, OpenFence};
use crate::theme;
use crate::transcript::{AgentCell, Cell, ToolCell, ToolDone, decision_text, tool_summary};
use crate::wrap::{push_sanitized, sanitize};
use crate::{CoreEvent, Exit};

impl App {
    pub fn apply(&mut self, event: CoreEvent) {
        match event {
            CoreEvent::Event(envelope) => self.apply_envelope(envelope),
            CoreEvent::Session {
                info,
                mode,
                sandbox,
                context_window,
            } => {
                if self.session.as_ref().is_some_and(|s| s.id != info.id) {
                    // Another session (`/clear`, `/fork`): its events replay from the start,
                    // on a screen cleared of the old one's.
                    self.last_seq = 0;
                    self.live.clear();
                    self.finished.clear();
                    self.last_tool = None;
                    self.clear_screen = true;
                    self.queued.clear();
                    self.approvals.clear();
                    self.elicits.clear();
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
                self.sandbox = sandbox;
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
            CoreEvent::Commands(commands) => {
                self.commands = commands;
                self.refresh_popup();
            }
            CoreEvent::PendingMcp(servers) => {
                for server in servers {
                    let asks = Asks::McpServer(server.name.clone());
                    if self.approvals.iter().any(|a| a.asks == asks) {
                        continue;
                    }
                    if self.approvals.is_empty() {
                        self.approval_since = self.now_ms;
                    }
                    self.approvals.push_back(Approval {
                        asks,
                        tool: format!("the project's MCP server {}", sanitize(&server.name)),
                        summary: format!(
                            "{} names an MCP server; it runs only once you allow it",
                            sanitize(&server.file)
                        ),
                        command: Some(sanitize(&server.target)),
                        diff: None,
                    });
                }
            }
            CoreEvent::Trust(question) => {
                if self.approvals.iter().any(|a| a.asks == Asks::Trust) {
                    return;
                }
                self.approval_since = self.now_ms;
                let mut summary = String::from(
                    "Its files ask for what only trust gives. Trusting lets them run code and \
                     widen permissions, as your own settings do; until then they are left out \
                     (deny rules and stricter modes still apply).",
                );
                for item in &question.ignored {
                    summary.push_str("\n• ");
                    summary.push_str(&sanitize(item));
                }
                // First in line: what the session may do depends on it.
                self.approvals.push_front(Approval {
                    asks: Asks::Trust,
                    tool: sanitize(&question.folder),
                    summary,
                    command: None,
                    diff: None,
                });
            }
            CoreEvent::Info(message) => self.push(Cell::note("ℹ", message, theme::dim())),
            CoreEvent::Models(models) if models.is_empty() => self.push(Cell::note(
                "⚠",
                "no models known — 'stepper doctor' shows what is set up",
                theme::warning(),
            )),
            CoreEvent::Models(models) => {
                let selected = models.iter().position(|m| m.id == self.model).unwrap_or(0);
                self.model_menu = Some(super::ModelMenu { models, selected });
            }
            CoreEvent::Disconnected(reason) => self.exit = Some(Exit::Disconnected(reason)),
        }
    }

    fn apply_envelope(&mut self, env: EventEnvelope) {
        if env.seq <= self.last_seq {
            return;
        }
        self.last_seq = env.seq;
        // An agent inside the turn (a layer before the last, a worker, a subagent): its
        // work goes to its cell; the turn's text is the answering agent's alone. Questions
        // and notices are everyone's.
        if let Some(agent) = env.agent.clone()
            && !matches!(
                env.event,
                AppEvent::ApprovalRequested { .. }
                    | AppEvent::ApprovalResolved { .. }
                    | AppEvent::ElicitationRequested { .. }
                    | AppEvent::ElicitationResolved { .. }
                    | AppEvent::Notice { .. }
                    | AppEvent::Error { .. }
                    | AppEvent::SubagentStarted { .. }
                    | AppEvent::SubagentFinished { .. }
                    | AppEvent::WorktreesMerged { .. }
            )
        {
            self.apply_agent_event(&agent, env.event);
            return;
        }
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
                    expanded: self.expanded,
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
                        expanded: self.expanded,
                    })),
                }
                self.settle();
            }
            AppEvent::Steered { text, by, .. } => {
                self.push_aside(Cell::note(
                    "↳",
                    format!("steered: {text}{}", self.by_suffix(by)),
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
                    if env.seq > self.presence_after && !self.others.contains(&client) {
                        self.others.push(client.clone());
                    }
                    let name = self.client_name(&client);
                    self.push_aside(Cell::note(
                        "•",
                        format!("{name} attached ({kind})"),
                        theme::dim(),
                    ));
                }
            }
            AppEvent::ClientDetached { client } => {
                if client != self.me {
                    let name = self.client_name(&client);
                    if env.seq > self.presence_after {
                        self.others.retain(|c| *c != client);
                    }
                    self.push_aside(Cell::note("•", format!("{name} detached"), theme::dim()));
                }
            }
            AppEvent::ModelChanged { model, by } => {
                self.push_aside(Cell::note(
                    "⚙",
                    format!("model → {model}{}", self.by_suffix(by)),
                    theme::dim(),
                ));
                self.model = model;
            }
            AppEvent::ModeChanged { mode, by } => {
                // This client's own change shows in the status line; another's is news.
                if by.as_deref() != Some(self.me.as_str()) {
                    self.push_aside(Cell::note(
                        "⚙",
                        format!("mode → {mode}{}", self.by_suffix(by)),
                        theme::dim(),
                    ));
                }
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
                    asks: Asks::Tool(request_id),
                    tool,
                    summary: sanitize(&summary),
                    command: command.as_deref().map(sanitize),
                    diff: diff.as_deref().map(sanitize),
                });
            }
            AppEvent::ElicitationRequested {
                request_id,
                server,
                message,
                schema,
            } => {
                let fields = stepper_protocol::elicit::fields(&schema);
                let fields: Vec<_> = fields
                    .into_iter()
                    .map(|mut f| {
                        f.title = sanitize(&f.title);
                        f.description = f.description.as_deref().map(sanitize);
                        f
                    })
                    .collect();
                if self.approvals.is_empty() && self.elicits.is_empty() {
                    self.approval_since = self.now_ms;
                }
                self.elicits.push_back(super::Elicit {
                    request_id,
                    server: sanitize(&server),
                    message: sanitize(&message),
                    typed: vec![String::new(); fields.len()],
                    fields,
                    at: 0,
                    problem: None,
                });
            }
            AppEvent::McpServerStatus {
                server,
                status,
                reason,
                tools,
            } => {
                use stepper_protocol::methods::McpStatus;
                let server = sanitize(&server);
                match status {
                    McpStatus::Failed | McpStatus::NeedsLogin => {
                        self.mcp_failed.insert(server.clone());
                        let why = reason.as_deref().map(sanitize).unwrap_or_default();
                        self.push(Cell::note(
                            "✗",
                            format!("MCP server {server}: {why}"),
                            theme::error(),
                        ));
                    }
                    McpStatus::Connected if self.mcp_failed.remove(&server) => {
                        let tools = tools.map(|n| format!(" ({n} tools)")).unwrap_or_default();
                        self.push(Cell::note(
                            "✓",
                            format!("MCP server {server} connected{tools}"),
                            theme::ok(),
                        ));
                    }
                    _ => {}
                }
            }
            AppEvent::ElicitationResolved {
                request_id,
                action,
                by,
            } => {
                let server = self
                    .elicits
                    .iter()
                    .find(|e| e.request_id == request_id)
                    .map(|e| e.server.clone());
                self.elicits.retain(|e| e.request_id != request_id);
                let (glyph, verb, style) = match action {
                    stepper_protocol::ElicitAction::Accept => ("✓", "answered", theme::ok()),
                    stepper_protocol::ElicitAction::Decline => ("✗", "declined", theme::error()),
                    stepper_protocol::ElicitAction::Cancel => ("•", "dismissed", theme::dim()),
                };
                let of = server
                    .map(|s| format!(" {s}'s question"))
                    .unwrap_or_default();
                self.push(Cell::note(
                    glyph,
                    format!("{verb}{of}{}", self.by_suffix(by)),
                    style,
                ));
            }
            AppEvent::ApprovalResolved {
                request_id,
                decision,
                by,
            } => {
                let asks = Asks::Tool(request_id.clone());
                let front = self.approvals.front().map(|a| a.asks.clone());
                self.approvals.retain(|a| a.asks != asks);
                if front == Some(asks) {
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
                    format!("{verb}{tool}{}", self.by_suffix(by)),
                    style,
                ));
            }
            AppEvent::UsageUpdated { usage, cost_usd } => {
                self.usage_turn = usage;
                self.cost_turn = cost_usd;
                self.context_tokens = Some(input_side(&usage).saturating_sub(self.step_base));
            }
            AppEvent::TurnFinished { status, error, .. } => {
                // What the turn still asked can no longer be answered: it is over. (A project's
                // MCP server, and trust in the folder, wait for their answer beyond the turn.)
                self.approvals.retain(|a| !matches!(a.asks, Asks::Tool(_)));
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
            event @ AppEvent::WorktreesMerged { .. } => {
                let troubled = matches!(
                    &event,
                    AppEvent::WorktreesMerged { conflict, error, .. }
                        if conflict.is_some() || error.is_some()
                );
                let text = sanitize(&event.worktrees_summary().unwrap_or_default());
                let style = if troubled {
                    theme::warning()
                } else {
                    theme::dim()
                };
                self.push(Cell::note("⎇", text, style));
            }
            // A hook that did its work quietly is not news; one that blocked, failed or hung is.
            AppEvent::HookRan {
                event,
                command,
                outcome,
                duration_ms,
                message,
            } => {
                if outcome != stepper_protocol::event::HookOutcome::Ok || message.is_some() {
                    let said = message
                        .map(|m| format!(": {}", sanitize(&m)))
                        .unwrap_or_default();
                    let line = format!(
                        "{} hook {} ({}, {duration_ms} ms){said}",
                        sanitize(event.as_str()),
                        sanitize(outcome.as_str()),
                        sanitize(&command)
                    );
                    let style = if outcome == stepper_protocol::event::HookOutcome::Ok {
                        theme::dim()
                    } else {
                        theme::warning()
                    };
                    self.push_aside(Cell::note("⚓", line, style));
                }
            }
            AppEvent::LayerStarted {
                index,
                count,
                name,
                model,
                parallel,
                agent_id,
            } => {
                let label = format!("layer {index}/{count} {}", sanitize(&name));
                if agent_id.is_some() || parallel {
                    self.end_reasoning();
                    self.end_message();
                    let label = if parallel {
                        format!("{label} (parallel)")
                    } else {
                        label
                    };
                    self.push(Cell::Agent(AgentCell {
                        id: agent_id.unwrap_or_else(|| format!("layer-{index}")),
                        label,
                        model: sanitize(&model),
                        task: None,
                        activity: Vec::new(),
                        done: None,
                        expanded: self.expanded,
                    }));
                } else {
                    self.push(Cell::note(
                        "▸",
                        format!("{label} · {}", sanitize(&model)),
                        theme::dim(),
                    ));
                }
            }
            AppEvent::LayerFinished {
                index,
                status,
                text,
                workers,
                ..
            } => {
                let id = format!("layer-{index}");
                if let Some(cell) = self.live_agent(&id) {
                    let text = if workers > 0 {
                        format!("{workers} workers")
                    } else {
                        sanitize(&text)
                    };
                    cell.done = Some((status, text));
                    self.settle();
                }
            }
            AppEvent::SubagentStarted {
                agent_id,
                name,
                model,
                task,
                layer,
                worktree,
            } => {
                let mut label = match layer {
                    Some(_) => format!("worker {}", sanitize(&agent_id)),
                    None => format!("subagent {}", sanitize(&name)),
                };
                // Which worktree is said by the merge that follows; the line keeps room for
                // the model and the status.
                if worktree.is_some() {
                    label.push_str(" (worktree)");
                }
                self.end_reasoning();
                self.end_message();
                self.push(Cell::Agent(AgentCell {
                    id: agent_id,
                    label,
                    model: sanitize(&model),
                    task: Some(sanitize(&task)),
                    activity: Vec::new(),
                    done: None,
                    expanded: self.expanded,
                }));
            }
            AppEvent::SubagentFinished {
                agent_id,
                status,
                text,
                error,
                ..
            } => {
                let text = match error {
                    Some(e) if status != TurnStatus::Completed => sanitize(&e),
                    _ => sanitize(&text),
                };
                if let Some(cell) = self.live_agent(&agent_id) {
                    cell.done = Some((status, text));
                    self.settle();
                }
            }
            AppEvent::CompactionStarted {
                before_tokens,
                manual,
            } => {
                let why = if manual {
                    "asked"
                } else {
                    "the context is full"
                };
                self.push_aside(Cell::note(
                    "⇲",
                    format!("compacting the context ({before_tokens} tokens; {why})…"),
                    theme::dim(),
                ));
            }
            AppEvent::CompactionFinished {
                before_tokens,
                after_tokens,
                pruned,
                summarized,
                error,
            } => {
                let line = match error {
                    Some(e) => format!("compaction failed: {}", sanitize(&e)),
                    None => format!(
                        "context compacted: {before_tokens} → {after_tokens} tokens \
                         ({pruned} tool outputs pruned, {summarized} messages summarised)"
                    ),
                };
                self.context_tokens = Some(after_tokens);
                self.push_aside(Cell::note("⇲", line, theme::dim()));
            }
            AppEvent::Unknown => {}
        }
    }

    /// An event of an agent inside the turn, shown in its cell.
    fn apply_agent_event(&mut self, agent: &str, event: AppEvent) {
        let line = match event {
            AppEvent::ToolCallStarted { tool, input, .. } => {
                let field = |k: &str| input.get(k).and_then(|v| v.as_str()).map(str::to_string);
                let summary = tool_summary(&tool, field, &input.to_string());
                format!("→ {} {}", sanitize(&tool), summary)
            }
            AppEvent::ToolCallFinished { status, output, .. } if status != ToolCallStatus::Ok => {
                let first = output.lines().next().unwrap_or("").to_string();
                format!("✗ {}", sanitize(&first))
            }
            AppEvent::MessageCompleted { text, .. } => {
                match text.lines().find(|l| !l.trim().is_empty()) {
                    Some(line) => sanitize(line),
                    None => return,
                }
            }
            _ => return,
        };
        // An agent whose start this client did not see (it attached late) gets its cell now.
        if self.live_agent(agent).is_none() {
            self.push(Cell::Agent(AgentCell {
                id: agent.to_string(),
                label: format!("agent {}", sanitize(agent)),
                model: String::new(),
                task: None,
                activity: Vec::new(),
                done: None,
                expanded: self.expanded,
            }));
        }
        if let Some(cell) = self.live_agent(agent) {
            cell.note(line);
        }
    }

    /// Who did it, after what was done (free text, so in brackets): " (by alice)".
    fn by_suffix(&self, by: Option<String>) -> String {
        by.map(|b| format!(" (by {})", sanitize(&self.client_name(&b))))
            .unwrap_or_default()
    }

    /// A client as the transcript names it: without the pid after its name, unless another
    /// client attached now has the same name (two terminals of `stepper attach`).
    fn client_name(&self, name: &str) -> String {
        let base = without_pid(name);
        let namesakes = std::iter::once(&self.me)
            .chain(&self.others)
            .filter(|n| *n != name && without_pid(n) == base)
            .count();
        if namesakes > 0 {
            name.to_string()
        } else {
            base.to_string()
        }
    }

    fn live_agent(&mut self, id: &str) -> Option<&mut AgentCell> {
        self.live.iter_mut().find_map(|c| match c {
            Cell::Agent(a) if a.id == id && a.done.is_none() => Some(a),
            _ => None,
        })
    }

    /// Ctrl-O: show tools' whole output and agents' activity and final text, or only their
    /// tail. What went to scrollback stays as it was written, but the last tool call whose
    /// output was cut there is shown again, whole.
    pub(crate) fn toggle_expanded(&mut self) {
        self.expanded = !self.expanded;
        for cell in &mut self.live {
            match cell {
                Cell::Agent(a) => a.expanded = self.expanded,
                Cell::Tool(t) => t.expanded = self.expanded,
                _ => {}
            }
        }
        if self.expanded
            && let Some(mut tool) = self.last_tool.take()
        {
            tool.expanded = true;
            self.push(Cell::Tool(tool));
        }
        let state = if self.expanded {
            "expanded"
        } else {
            "collapsed"
        };
        self.flash = Some((
            format!("tool output and agents {state} (Ctrl-O)"),
            self.now_ms + 3000,
        ));
    }

    fn live_tool(&mut self, call_id: &str) -> Option<&mut ToolCell> {
        self.live.iter_mut().find_map(|c| match c {
            Cell::Tool(t) if t.call_id == call_id && t.done.is_none() => Some(t),
            _ => None,
        })
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
    pub(super) fn settle(&mut self) {
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
            if let Cell::Tool(t) = &cell {
                self.last_tool = (!t.expanded && t.cut()).then(|| t.clone());
            }
            self.finished.push(cell);
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

/// A client's name without the pid the CLI puts after it (`stepper attach 30039`).
fn without_pid(name: &str) -> &str {
    match name.rsplit_once(' ') {
        Some((base, pid)) if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => name,
    }
}
