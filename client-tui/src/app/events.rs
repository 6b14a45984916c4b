//! Daemon events applied to the state: what the protocol's view of the session says changed
//! (the answer's text, tool output, answers, the turn's start and end), then each event's
//! cell in the transcript. The view holds what events mean across events; here is only what
//! the TUI draws of them. Notes beside the turn are in `notes`, the live cells in `live`.

use stepper_protocol::event::{AppEvent, EventEnvelope, ToolCallStatus, TurnStatus};
use stepper_protocol::session::SessionStatus;
use stepper_protocol::view::{Change, SessionView};

use super::{App, Approval, Asks};
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
                    self.events = SessionView::default();
                    self.live.clear();
                    self.finished.clear();
                    self.last_tool = None;
                    self.clear_screen = true;
                    self.approvals.clear();
                    self.elicits.clear();
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
            CoreEvent::StatusLine(text) => self.custom_status = text.map(|t| sanitize(&t)),
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
            CoreEvent::Notice(message) => self.push(Cell::note("⚠", message, theme::warning())),
            CoreEvent::Attached(attached) => self.attach(attached),
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
        let Some(change) = self.events.apply(&env) else {
            return;
        };
        // An agent inside the turn (a layer before the last, a worker, a subagent): its
        // work goes to its cell; the turn's text is the answering agent's alone. Questions
        // and notices are everyone's.
        if let Some(agent) = &env.agent
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
            self.apply_agent_event(agent, &env.event);
            return;
        }
        match change {
            Change::TurnStarted {
                text,
                model,
                attachments,
                ..
            } => {
                self.finish_live(false);
                self.running = true;
                self.model = sanitize(model);
                self.push(Cell::User {
                    text: sanitize(text),
                    turn: env.turn,
                    attachments: attachments.iter().map(|a| sanitize(&a.label())).collect(),
                });
            }
            Change::TextDelta(text) => {
                self.end_reasoning();
                match self.streaming_message() {
                    Some(t) => push_sanitized(t, text),
                    None => self.live.push(Cell::Assistant {
                        text: sanitize(text),
                        streaming: true,
                        fence: None,
                    }),
                }
                self.settle();
            }
            Change::MessageCompleted { whole, cut } => {
                self.end_reasoning();
                self.end_message();
                if let Some(text) = whole {
                    self.push(Cell::Assistant {
                        text: sanitize(text),
                        streaming: false,
                        fence: None,
                    });
                }
                if cut {
                    self.push(Cell::note(
                        "⚠",
                        "the reply was cut at the model's output limit",
                        theme::warning(),
                    ));
                }
                self.settle();
            }
            Change::ToolOutput { call_id, text, .. } => {
                if let Some(t) = self.live_tool(call_id) {
                    t.push_output(text);
                }
            }
            Change::ApprovalResolved {
                request_id,
                decision,
                by,
                asked,
            } => {
                let asks = Asks::Tool(request_id.to_string());
                let front = self.approvals.front().map(|a| a.asks.clone());
                self.approvals.retain(|a| a.asks != asks);
                if front == Some(asks) {
                    self.approval_since = self.now_ms;
                }
                let (glyph, verb, style) = decision_text(decision);
                let tool = match asked {
                    Some(a) if !a.tool.is_empty() => format!(" {}", sanitize(&a.tool)),
                    _ => String::new(),
                };
                self.push(Cell::note(
                    glyph,
                    format!("{verb}{tool}{}", self.by_suffix(by)),
                    style,
                ));
            }
            // The status line reads the view.
            Change::UsageUpdated => {}
            Change::TurnFinished { status, error, .. } => {
                // What the turn still asked can no longer be answered: it is over. (A project's
                // MCP server, and trust in the folder, wait for their answer beyond the turn.)
                self.approvals.retain(|a| !matches!(a.asks, Asks::Tool(_)));
                self.finish_live(true);
                self.running = false;
                match status {
                    TurnStatus::Completed => {}
                    TurnStatus::Interrupted => {
                        let text = error.unwrap_or("interrupted").to_string();
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
            Change::Event(event) => self.apply_event(env.seq, event),
        }
    }

    /// An event the view has no more to say about than the event itself: a cell or a note.
    fn apply_event(&mut self, seq: u64, event: &AppEvent) {
        match event {
            // Up brings back the session's inputs, replayed ones and other clients' too.
            AppEvent::InputQueued { text, .. } => self.composer.remember(text),
            AppEvent::ReasoningDelta { text } => match self.live.last_mut() {
                Some(Cell::Reasoning {
                    text: t,
                    done: false,
                }) => push_sanitized(t, text),
                _ => self.live.push(Cell::Reasoning {
                    text: sanitize(text),
                    done: false,
                }),
            },
            AppEvent::ToolCallStarted {
                call_id,
                tool,
                input,
            } => {
                self.end_reasoning();
                self.end_message();
                let field = |k: &str| input.get(k).and_then(|v| v.as_str()).map(str::to_string);
                let summary = tool_summary(tool, field, &input.to_string());
                self.push(Cell::Tool(ToolCell {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    summary,
                    output: String::new(),
                    done: None,
                    expanded: self.expanded,
                }));
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
                    status: *status,
                    output: sanitize(output),
                    exit_code: *exit_code,
                    duration_ms: *duration_ms,
                    diff: diff.as_deref().map(sanitize),
                };
                match self.live_tool(call_id) {
                    Some(t) => t.done = Some(done),
                    None => self.push(Cell::Tool(ToolCell {
                        call_id: call_id.clone(),
                        tool: "tool".into(),
                        summary: String::new(),
                        output: String::new(),
                        done: Some(done),
                        expanded: self.expanded,
                    })),
                }
                self.settle();
            }
            AppEvent::TodosUpdated { todos } => {
                let mut todos = todos.clone();
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
                if self.approvals.is_empty() {
                    self.approval_since = self.now_ms;
                }
                self.approvals.push_back(Approval {
                    asks: Asks::Tool(request_id.clone()),
                    tool: sanitize(tool),
                    summary: sanitize(summary),
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
                let fields = stepper_protocol::elicit::fields(schema);
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
                    request_id: request_id.clone(),
                    server: sanitize(server),
                    message: sanitize(message),
                    typed: vec![String::new(); fields.len()],
                    fields,
                    at: 0,
                    problem: None,
                });
            }
            AppEvent::LayerStarted {
                index,
                count,
                name,
                model,
                parallel,
                agent_id,
            } => {
                let label = format!("layer {index}/{count} {}", sanitize(name));
                if agent_id.is_some() || *parallel {
                    self.end_reasoning();
                    self.end_message();
                    let label = if *parallel {
                        format!("{label} (parallel)")
                    } else {
                        label
                    };
                    self.push(Cell::Agent(AgentCell {
                        id: agent_id.clone().unwrap_or_else(|| format!("layer-{index}")),
                        label,
                        model: sanitize(model),
                        task: None,
                        activity: Vec::new(),
                        done: None,
                        expanded: self.expanded,
                    }));
                } else {
                    self.push(Cell::note(
                        "▸",
                        format!("{label} · {}", sanitize(model)),
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
                    let text = if *workers > 0 {
                        format!("{workers} workers")
                    } else {
                        sanitize(text)
                    };
                    cell.done = Some((*status, text));
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
                    Some(_) => format!("worker {}", sanitize(agent_id)),
                    None => format!("subagent {}", sanitize(name)),
                };
                // Which worktree is said by the merge that follows; the line keeps room for
                // the model and the status.
                if worktree.is_some() {
                    label.push_str(" (worktree)");
                }
                self.end_reasoning();
                self.end_message();
                self.push(Cell::Agent(AgentCell {
                    id: agent_id.clone(),
                    label,
                    model: sanitize(model),
                    task: Some(sanitize(task)),
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
                    Some(e) if *status != TurnStatus::Completed => sanitize(e),
                    _ => sanitize(text),
                };
                if let Some(cell) = self.live_agent(agent_id) {
                    cell.done = Some((*status, text));
                    self.settle();
                }
            }
            // Not a cell of the turn: a note beside it, or nothing.
            _ => self.note(seq, event),
        }
    }

    /// An event of an agent inside the turn, shown in its cell.
    fn apply_agent_event(&mut self, agent: &str, event: &AppEvent) {
        let line = match event {
            AppEvent::ToolCallStarted { tool, input, .. } => {
                let field = |k: &str| input.get(k).and_then(|v| v.as_str()).map(str::to_string);
                let summary = tool_summary(tool, field, &input.to_string());
                format!("→ {} {}", sanitize(tool), summary)
            }
            AppEvent::ToolCallFinished { status, output, .. } if *status != ToolCallStatus::Ok => {
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
}

impl App {
    /// A file or clipboard image the core read: into the input box, unless the input would
    /// then hold more than one input takes (it could not be sent).
    fn attach(&mut self, attached: crate::Attached) {
        use stepper_protocol::attachment::{MAX_INPUT_BYTES, MAX_PARTS, human_size};
        let held = self.composer.attachments();
        let total: u64 = held
            .iter()
            .chain([&attached])
            .map(|a| a.bytes.len() as u64)
            .sum();
        let refused = if held.len() >= MAX_PARTS {
            Some(format!("one input takes at most {MAX_PARTS} attachments"))
        } else if total > MAX_INPUT_BYTES {
            Some(format!(
                "the attachments would come to {}, and one input takes at most {} — send \
                 some with the next input",
                human_size(total),
                human_size(MAX_INPUT_BYTES)
            ))
        } else {
            None
        };
        match refused {
            Some(why) => {
                let said = format!("not attached: {} — {why}", sanitize(&attached.label()));
                self.push(Cell::note("⚠", said, theme::warning()));
            }
            None => self.composer.attach(attached),
        }
    }
}
