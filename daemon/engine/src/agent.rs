//! The agent loop: stream from the provider and turn what arrives into session events.
//!
//! A turn calls the model, runs the tools it calls (each through the permission gate, in the
//! tool's own code), gives it the results and calls it again, until it stops. Cancellation is
//! observed at every await and reaches running tools; what streamed before a cancel or a
//! broken stream is kept as a completed (partial) message.
//!
//! Consecutive read-only calls run together; the loop stops at the model's end or the step limit.
//! Events go through an [`EventSink`]; a `ToolSource` (MCP servers' tools) is read again before
//! each model call.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use stepper_protocol::{AppEvent, ToolCallStatus, TurnErrorKind, TurnStatus, Usage};
use tokio_util::sync::CancellationToken;

use crate::accumulator::MessageAccumulator;
use crate::catalogue::ModelInfo;
use crate::compaction::{Compacted, CompactionPlan, can_compact, compact, estimate};
use crate::dialect::ToolDialect;
use crate::hooks::{BeforeTool, TurnHooks};
use crate::interrupt::Interrupt;
use crate::provider::HostedTool;
use crate::provider::{
    ChatEvent, ChatMessage, ChatRequest, ContentPart, LlmProvider, Media, ProviderError, Role,
};
use crate::redact::Redactor;
use crate::tool::{OutputSink, Tool, ToolCx, ToolError, ToolResult, ToolSource};

/// Costs added, known when either is.
pub fn add_cost(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    }
}

/// Where a turn's events go. The daemon's implementation persists, then publishes.
pub trait EventSink: Send + Sync {
    /// Record an event of the running turn. An error means it could not be recorded; the
    /// turn stops, since nothing it does afterwards could be seen or resumed.
    fn emit(&self, event: AppEvent) -> impl Future<Output = Result<(), SinkError>> + Send;
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot record the session's events: {0}")]
pub struct SinkError(pub String);

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub status: TurnStatus,
    /// The assistant text (possibly partial).
    pub text: String,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    /// Why the turn failed, for the user.
    pub error: Option<String>,
    /// What kind of failure `error` is, where it is known.
    pub error_kind: Option<TurnErrorKind>,
    /// The whole assistant message (reasoning, text, tool calls), for the context.
    pub message: Option<ChatMessage>,
    /// Everything the turn added after the user's input — assistant messages and tool
    /// results, as the model saw them — for the stored context. After a compaction it is
    /// the whole context instead (`compacted`), to replace what was stored.
    pub transcript: Vec<ChatMessage>,
    pub compacted: bool,
}

impl TurnOutcome {
    /// A turn (or an agent of one) that could not start, and why.
    pub fn failed(error: String) -> TurnOutcome {
        TurnOutcome {
            status: TurnStatus::Failed,
            text: String::new(),
            usage: Usage::default(),
            cost_usd: None,
            error: Some(error),
            error_kind: None,
            message: None,
            transcript: Vec::new(),
            compacted: false,
        }
    }
}

pub struct AgentLoop {
    provider: Arc<dyn LlmProvider>,
    model: ModelInfo,
    tools: Vec<Arc<dyn Tool>>,
    /// Tools that change while the turn runs (MCP servers'), read again before each model
    /// call; `live` holds what the last read gave.
    source: Option<Arc<dyn ToolSource>>,
    live: std::sync::Mutex<Vec<Arc<dyn Tool>>>,
    /// The context tools run in; without one, tool calls end the turn unanswered.
    tool_cx: Option<ToolCx>,
    /// The names and shapes the model is offered its tools in; calls are translated back
    /// before anything else sees them.
    dialect: ToolDialect,
    /// Tools the provider runs itself, offered with each call.
    hosted: Vec<HostedTool>,
    max_steps: u32,
    /// Text steered into the running turn, taken before each model call after the first.
    steering: Option<Arc<dyn Fn() -> Vec<String> + Send + Sync>>,
    /// Text steered in as the model finishes gets one more call (see [`AgentLoop::with_steering`]).
    steering_answered: bool,
    /// Secrets taken out of tool output before anyone sees it.
    redactor: Redactor,
    /// The user's hooks around tool calls and the turn's end.
    hooks: Option<Arc<dyn TurnHooks>>,
    /// What the turn used before this loop (earlier layers): `UsageUpdated` says the
    /// turn's total, the outcome this loop's own.
    base_usage: Usage,
    base_cost: Option<f64>,
    /// When the context is compacted before a model call.
    compaction: Option<CompactionPlan>,
    /// Why the turn's token was cancelled, when it is: what cut-short calls say.
    interrupt: Interrupt,
}

/// How many times `Stop` hooks may keep one turn going.
const MAX_STOP_BLOCKS: u32 = 3;

/// Model calls a turn may make before it is stopped.
pub const DEFAULT_MAX_STEPS: u32 = 100;

impl AgentLoop {
    pub fn new(provider: Arc<dyn LlmProvider>) -> AgentLoop {
        AgentLoop {
            provider,
            model: ModelInfo::default(),
            tools: Vec::new(),
            source: None,
            live: std::sync::Mutex::default(),
            tool_cx: None,
            dialect: ToolDialect::Plain,
            hosted: Vec::new(),
            max_steps: DEFAULT_MAX_STEPS,
            steering: None,
            steering_answered: false,
            redactor: Redactor::default(),
            hooks: None,
            base_usage: Usage::default(),
            base_cost: None,
            compaction: None,
            interrupt: Interrupt::default(),
        }
    }

    /// Read why the turn was interrupted from `interrupt` (a person, unless it says the
    /// daemon is stopping).
    pub fn with_interrupt(mut self, interrupt: Interrupt) -> AgentLoop {
        self.interrupt = interrupt;
        self
    }

    /// Compact the context before a model call once it passes `plan`'s limit.
    pub fn with_compaction(mut self, plan: CompactionPlan) -> AgentLoop {
        self.compaction = Some(plan);
        self
    }

    /// Count `usage` (costing `cost`) of the turn's earlier agents in its `UsageUpdated`.
    pub fn with_base_usage(mut self, usage: Usage, cost: Option<f64>) -> AgentLoop {
        self.base_usage = usage;
        self.base_cost = cost;
        self
    }

    /// Ask `hooks` before and after each tool call and before the turn ends.
    pub fn with_hooks(mut self, hooks: Arc<dyn TurnHooks>) -> AgentLoop {
        self.hooks = Some(hooks);
        self
    }

    /// Offer `tools` to the model and run its calls in `cx`.
    pub fn with_tools(mut self, tools: Vec<Arc<dyn Tool>>, cx: ToolCx) -> AgentLoop {
        self.tools = tools;
        self.tool_cx = Some(cx);
        self
    }

    /// Offer the tools in `dialect`'s names and shapes.
    pub fn with_dialect(mut self, dialect: ToolDialect) -> AgentLoop {
        self.dialect = dialect;
        self
    }

    /// Offer tools the provider runs itself (its web search).
    pub fn with_hosted(mut self, hosted: Vec<HostedTool>) -> AgentLoop {
        self.hosted = hosted;
        self
    }

    /// Offer `source`'s tools too, as they are before each model call.
    pub fn with_tool_source(mut self, source: Arc<dyn ToolSource>) -> AgentLoop {
        self.source = Some(source);
        self
    }

    /// Take steered text (from any client) into the turn before each further model call;
    /// with `answers` (the agent whose answer is the turn's), also when the model has
    /// finished: one more call answers it. Another layer leaves it to the next.
    pub fn with_steering(
        mut self,
        steering: Arc<dyn Fn() -> Vec<String> + Send + Sync>,
        answers: bool,
    ) -> AgentLoop {
        self.steering = Some(steering);
        self.steering_answered = answers;
        self
    }

    /// Take these secrets out of every tool's output (streamed and final) before it is
    /// emitted or given to the model.
    pub fn with_redactor(mut self, redactor: Redactor) -> AgentLoop {
        self.redactor = redactor;
        self
    }

    pub fn with_max_steps(mut self, max_steps: u32) -> AgentLoop {
        self.max_steps = max_steps.max(1);
        self
    }

    /// Price usage (and later size compaction) by what is known of the model.
    pub fn with_model_info(mut self, model: ModelInfo) -> AgentLoop {
        self.model = model;
        self
    }

    /// One model call to its end, emitting deltas, usage (on top of `base`, what earlier
    /// calls of the turn used) and the final message.
    async fn call_model(
        &self,
        request: ChatRequest,
        cancel: &CancellationToken,
        sink: &impl EventSink,
        base: Usage,
    ) -> CallOutcome {
        let mut stream = self.provider.chat_stream(request, cancel.clone());
        let mut acc = MessageAccumulator::new();
        let mut status = TurnStatus::Completed;
        let mut error: Option<String> = None;
        // Whether the provider's side failed the call (not the store's, nor a cancel).
        let mut by_provider = false;

        loop {
            let item = tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    status = TurnStatus::Interrupted;
                    break;
                }
                item = stream.next() => item,
            };
            let event = match item {
                // A stream ends at a cancel too: one that came between the two polls above
                // (another thread's interrupt) is the turn's interruption, not a cut answer.
                None => {
                    if cancel.is_cancelled() {
                        status = TurnStatus::Interrupted;
                    }
                    break;
                }
                Some(Ok(event)) => event,
                Some(Err(e)) => {
                    status = TurnStatus::Failed;
                    error = Some(describe(&e, self.provider.name()));
                    by_provider = true;
                    break;
                }
            };
            if let Err(e) = acc.push(&event) {
                status = TurnStatus::Failed;
                error = Some(describe(&e, self.provider.name()));
                by_provider = true;
                break;
            }
            let emitted = match event {
                ChatEvent::TextDelta(text) => sink.emit(AppEvent::TextDelta { text }).await,
                ChatEvent::ReasoningDelta(text) => {
                    sink.emit(AppEvent::ReasoningDelta { text }).await
                }
                ChatEvent::Usage(_) => {
                    let mut own = base;
                    own.add(&acc.usage());
                    let mut usage = self.base_usage;
                    usage.add(&own);
                    let cost_usd = add_cost(self.base_cost, self.model.cost(&own));
                    sink.emit(AppEvent::UsageUpdated { usage, cost_usd }).await
                }
                ChatEvent::Notice(message) => sink.emit(AppEvent::Notice { message }).await,
                // Signatures, opaque reasoning and tool-call plumbing live in the message, not
                // in the event log; tool calls reach clients when tools run them.
                ChatEvent::ThinkingSignature(_)
                | ChatEvent::ReasoningPart(_)
                | ChatEvent::ToolCallStart { .. }
                | ChatEvent::ToolCallDelta { .. }
                | ChatEvent::ToolCallEnd { .. }
                | ChatEvent::Stop { .. } => Ok(()),
            };
            if let Err(e) = emitted {
                status = TurnStatus::Failed;
                error = Some(e.to_string());
                break;
            }
        }
        drop(stream);

        let text = acc.text();
        let usage = acc.usage();
        let finished = match acc.finish() {
            Ok(done) => Some(done),
            Err(e) => {
                if error.is_none() {
                    by_provider = true;
                }
                status = TurnStatus::Failed;
                error.get_or_insert(describe(&e, self.provider.name()));
                None
            }
        };
        if status == TurnStatus::Completed && finished.as_ref().is_some_and(|f| f.stop.is_none()) {
            status = TurnStatus::Failed;
            by_provider = true;
            error = Some(format!(
                "{}: the answer ended before the model finished",
                self.provider.name()
            ));
        }
        let calls_tools = finished
            .as_ref()
            .is_some_and(|f| f.message.tool_calls().next().is_some());
        if !text.is_empty() || (status == TurnStatus::Completed && !calls_tools) {
            let stop_reason = match status {
                TurnStatus::Completed => finished
                    .as_ref()
                    .and_then(|f| f.stop.as_ref())
                    .map(|s| s.as_str().to_string()),
                TurnStatus::Interrupted => Some("interrupted".into()),
                TurnStatus::Failed => Some("error".into()),
            };
            let done = AppEvent::MessageCompleted {
                text: text.clone(),
                stop_reason,
            };
            if let Err(e) = sink.emit(done).await {
                status = TurnStatus::Failed;
                error.get_or_insert(e.to_string());
            }
        }
        CallOutcome {
            status,
            text,
            usage,
            error,
            error_kind: (by_provider && status == TurnStatus::Failed)
                .then_some(TurnErrorKind::Provider),
            message: finished.map(|f| f.message),
        }
    }

    /// Run the turn: call the model, run the tools it calls, give it their results, and
    /// again, until it stops calling tools (or the step limit).
    pub async fn run(
        &self,
        mut request: ChatRequest,
        cancel: CancellationToken,
        sink: &impl EventSink,
    ) -> TurnOutcome {
        let mut turn = Progress::new(request.messages.len());
        for _ in 0..self.max_steps {
            if self.tool_cx.is_some() {
                let specs = self.offered().iter().map(|t| t.spec()).collect();
                request.tools = self.dialect.offer(specs);
                request.hosted = self.hosted.clone();
            }
            // Steering joins after a model call, never before the turn's first.
            if request.messages.len() > turn.start || turn.compacted_to.is_some() {
                self.steer_in(&mut request.messages);
            }
            if let Err(e) = self
                .compact_if_full(&mut request, &mut turn, &cancel, sink)
                .await
            {
                let mut out = TurnOutcome::failed(e.to_string());
                out.usage = turn.usage;
                out.cost_usd = self.model.cost(&turn.usage);
                out.transcript = turn.transcript(&request.messages, None);
                out.compacted = turn.replaced;
                return out;
            }
            let call = self
                .call_model(request.clone(), &cancel, sink, turn.usage)
                .await;
            turn.usage.add(&call.usage);
            turn.text = call.text;
            let message = match call.message {
                Some(message) if call.status == TurnStatus::Completed => message,
                message => {
                    let t = turn.transcript(&request.messages, message.clone());
                    let mut out = self.outcome(&turn, call.status, call.error, message, t);
                    out.error_kind = call.error_kind;
                    return out;
                }
            };
            // The context keeps the calls as the model made them; everything past here sees
            // the internal tools.
            let calls: Vec<(String, String, serde_json::Value)> = message
                .tool_calls()
                .map(|(id, name, args)| {
                    let call = self.dialect.translate(name, args);
                    (id.to_string(), call.name, call.arguments)
                })
                .collect();
            let Some(cx) = self.tool_cx.as_ref().filter(|_| !calls.is_empty()) else {
                match self.goes_on(&mut turn).await {
                    // Steered text or a Stop hook's reason: the user's words, answered too.
                    Some(said) => {
                        request.messages.push(message.clone());
                        request.messages.push(said);
                        turn.last_message = Some(message);
                        continue;
                    }
                    None => {
                        let t = turn.transcript(&request.messages, Some(message.clone()));
                        return self.outcome(&turn, TurnStatus::Completed, None, Some(message), t);
                    }
                }
            };
            request.messages.push(message.clone());
            turn.last_message = Some(message);
            let (status, error) = match self.run_tools(calls, cx, &cancel, sink).await {
                Ok((results, ended)) => {
                    request.messages.push(ChatMessage {
                        role: Role::User,
                        content: results,
                    });
                    match ended {
                        // A hook ended the turn: the calls' results close the step.
                        Some(reason) => {
                            let message = format!("a hook ended the turn: {reason}");
                            let _ = sink.emit(AppEvent::Notice { message }).await;
                            (TurnStatus::Completed, None)
                        }
                        None if cancel.is_cancelled() => (TurnStatus::Interrupted, None),
                        None => continue,
                    }
                }
                Err(e) => {
                    // The calls have no results: the message that made them is left out.
                    request.messages.pop();
                    (TurnStatus::Failed, Some(e.to_string()))
                }
            };
            let t = turn.transcript(&request.messages, None);
            let last = turn.last_message.clone();
            return self.outcome(&turn, status, error, last, t);
        }
        let notice = format!(
            "stopped after {} model calls (the step limit of a turn)",
            self.max_steps
        );
        let _ = sink.emit(AppEvent::Notice { message: notice }).await;
        let t = turn.transcript(&request.messages, None);
        let last = turn.last_message.clone();
        self.outcome(&turn, TurnStatus::Completed, None, last, t)
    }

    /// The loop's outcome as it stands.
    fn outcome(
        &self,
        turn: &Progress,
        status: TurnStatus,
        error: Option<String>,
        message: Option<ChatMessage>,
        transcript: Vec<ChatMessage>,
    ) -> TurnOutcome {
        TurnOutcome {
            status,
            text: turn.text.clone(),
            usage: turn.usage,
            cost_usd: self.model.cost(&turn.usage),
            error,
            error_kind: None,
            message,
            transcript,
            compacted: turn.replaced,
        }
    }

    /// What was steered into the turn since the last model call joins the conversation as
    /// the user's words (after tool results, in their message: roles alternate).
    fn steer_in(&self, messages: &mut Vec<ChatMessage>) {
        let Some(take) = &self.steering else {
            return;
        };
        let steered = take();
        if steered.is_empty() {
            return;
        }
        let parts = steered.into_iter().map(|text| ContentPart::Text { text });
        match messages.last_mut() {
            Some(last) if last.role == Role::User => last.content.extend(parts),
            _ => messages.push(ChatMessage {
                role: Role::User,
                content: parts.collect(),
            }),
        }
    }

    /// Compact the context before the next model call when it passed the plan's limit
    /// (and grew by a tenth of the window since the last compaction).
    async fn compact_if_full(
        &self,
        request: &mut ChatRequest,
        turn: &mut Progress,
        cancel: &CancellationToken,
        sink: &impl EventSink,
    ) -> Result<(), SinkError> {
        let Some(plan) = &self.compaction else {
            return Ok(());
        };
        let size = estimate(request);
        let grown = turn
            .compacted_to
            .is_none_or(|after| size > after + plan.window / 10);
        if size <= plan.limit() || !grown || !can_compact(&request.messages) {
            return Ok(());
        }
        let done = self.compact_now(request, plan, cancel, sink).await?;
        turn.compacted_to = Some(done.after);
        // The summary's model call counts in the turn's usage.
        turn.usage.add(&done.usage);
        let finished = AppEvent::CompactionFinished {
            before_tokens: done.before,
            after_tokens: done.after,
            pruned: done.pruned,
            summarized: done.summarized,
            error: done.error.clone(),
        };
        if done.changed() {
            request.messages = done.messages;
            turn.start = 0;
            turn.replaced = true;
        }
        let emitted = sink.emit(finished).await;
        if let Some(hooks) = &self.hooks {
            hooks.compacting("auto", None, true).await;
        }
        emitted
    }

    /// Whether a model that answered without calling tools goes on, with what the user
    /// says next: text steered in while it answered (when this loop answers steering), or a
    /// Stop hook's reason for keeping the turn going (a few times at most).
    async fn goes_on(&self, turn: &mut Progress) -> Option<ChatMessage> {
        let steered = match &self.steering {
            Some(take) if self.steering_answered => take(),
            _ => Vec::new(),
        };
        if !steered.is_empty() {
            return Some(ChatMessage {
                role: Role::User,
                content: steered
                    .into_iter()
                    .map(|text| ContentPart::Text { text })
                    .collect(),
            });
        }
        let kept = match &self.hooks {
            Some(hooks) if turn.stop_blocks < MAX_STOP_BLOCKS => {
                hooks.before_stop(turn.stop_blocks > 0, &turn.text).await
            }
            _ => None,
        };
        let reason = kept?;
        turn.stop_blocks += 1;
        Some(ChatMessage::user(reason))
    }

    /// Compact `request`'s context (its size passed the plan's limit): says so, runs the
    /// `PreCompact` hooks, and returns what compaction made of it for the caller to take.
    async fn compact_now(
        &self,
        request: &ChatRequest,
        plan: &CompactionPlan,
        cancel: &CancellationToken,
        sink: &impl EventSink,
    ) -> Result<Compacted, SinkError> {
        sink.emit(AppEvent::CompactionStarted {
            before_tokens: estimate(request),
            manual: false,
        })
        .await?;
        if let Some(hooks) = &self.hooks {
            hooks.compacting("auto", None, false).await;
        }
        let (provider, model) = plan
            .summarizer
            .clone()
            .unwrap_or_else(|| (Arc::clone(&self.provider), request.model.clone()));
        Ok(compact(
            request,
            provider.as_ref(),
            &model,
            plan.limit() * 3 / 4,
            false,
            None,
            cancel,
        )
        .await)
    }

    /// Run the calls of one assistant message. Consecutive read-only calls run together;
    /// any other call runs alone, in order. Output deltas are forwarded while they run.
    async fn run_tools(
        &self,
        calls: Vec<(String, String, serde_json::Value)>,
        cx: &ToolCx,
        cancel: &CancellationToken,
        sink: &impl EventSink,
    ) -> Result<(Vec<ContentPart>, Option<String>), SinkError> {
        // Deltas are display only: when clients fall this far behind, some are dropped
        // (the result keeps the whole output).
        let (tx, mut rx) = tokio::sync::mpsc::channel::<(String, String)>(1024);
        let mut results = Vec::with_capacity(calls.len());
        let mut batch: Vec<(String, String, serde_json::Value)> = Vec::new();
        let mut pending = calls.into_iter().peekable();
        let step = Step::default();
        while pending.peek().is_some() || !batch.is_empty() {
            // Gather a batch: a run of read-only calls, or one other call.
            while let Some((_, name, _)) = pending.peek() {
                let read_only = self.tool(name).is_some_and(|t| t.read_only());
                if !batch.is_empty() && !read_only {
                    break;
                }
                if let Some(call) = pending.next() {
                    batch.push(call);
                }
                if !read_only {
                    break;
                }
            }
            for (id, name, input) in &batch {
                sink.emit(AppEvent::ToolCallStarted {
                    call_id: id.clone(),
                    tool: name.clone(),
                    input: input.clone(),
                })
                .await?;
            }
            let running = futures::future::join_all(batch.drain(..).map(|(id, name, input)| {
                let mut call_cx = cx.clone();
                call_cx.cancel = cancel.child_token();
                call_cx.output = Arc::new(ChannelOutput {
                    call_id: id.clone(),
                    tx: tx.clone(),
                });
                self.call_one(Call { id, name, input }, call_cx, &step)
            }));
            tokio::pin!(running);
            let mut redacting = self.redactor.stream();
            let finished = loop {
                tokio::select! {
                    done = &mut running => break done,
                    Some((call_id, text)) = rx.recv() => {
                        let text = redacting.push(&call_id, &text);
                        if !text.is_empty() {
                            sink.emit(AppEvent::ToolOutputDelta { call_id, text }).await?;
                        }
                    }
                }
            };
            while let Ok((call_id, text)) = rx.try_recv() {
                let text = redacting.push(&call_id, &text);
                if !text.is_empty() {
                    sink.emit(AppEvent::ToolOutputDelta { call_id, text })
                        .await?;
                }
            }
            for (call_id, text) in redacting.finish_all() {
                sink.emit(AppEvent::ToolOutputDelta { call_id, text })
                    .await?;
            }
            for done in finished {
                results.push(self.finish_call(done, &step, sink).await?);
            }
        }
        let stopped = step
            .stopping
            .into_inner()
            .unwrap_or_else(|p| p.into_inner());
        Ok((results, stopped))
    }

    /// Run one call: its `PreToolUse` hooks first (which may block it, change its input, or
    /// end the turn after this step), then the tool — again, once, when a hook allowed it
    /// with its input changed.
    async fn call_one(&self, call: Call, mut call_cx: ToolCx, step: &Step) -> Ran {
        let Call { id, name, input } = call;
        let started = Instant::now();
        let ending = step.stopping().clone();
        let before = match (&self.hooks, ending) {
            (_, Some(reason)) => BeforeTool::Block(format!("the turn is ending: {reason}")),
            (Some(hooks), None) => hooks.before_tool(&id, &name, &input).await,
            (None, None) => BeforeTool::RUN,
        };
        let mut input = input;
        let blocked = match before {
            BeforeTool::Run {
                input: changed,
                hint,
                context,
            } => {
                call_cx.hint = hint;
                if let Some(context) = context {
                    step.said_before().insert(id.clone(), context);
                }
                if let Some(changed) = changed {
                    input = changed;
                }
                None
            }
            BeforeTool::Block(reason) => Some(reason),
            BeforeTool::StopTurn(reason) => {
                step.stopping().get_or_insert_with(|| reason.clone());
                Some(reason)
            }
        };
        let result = match blocked {
            Some(reason) => Err(ToolError::Blocked(reason)),
            // Interrupted while its hooks ran (which the interrupt ended): it never starts.
            None if call_cx.cancel.is_cancelled() => Err(ToolError::Cancelled),
            None => self.call_tool(&name, &mut input, &mut call_cx).await,
        };
        Ran {
            call: Call { id, name, input },
            result,
            took: started.elapsed(),
        }
    }

    /// Call the tool `name`; when a hook allowed the call with its input changed, it runs
    /// again with that input, as allowed (deny rules still hold), once.
    async fn call_tool(
        &self,
        name: &str,
        input: &mut serde_json::Value,
        call_cx: &mut ToolCx,
    ) -> ToolResult {
        let Some(tool) = self.tool(name) else {
            return Err(ToolError::InvalidArguments(format!(
                "there is no tool named {name:?}; the tools are: {}",
                self.offered()
                    .iter()
                    .map(|t| t.spec().name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        let result = tool.call(input.clone(), call_cx).await;
        let Err(ToolError::Changed(changed)) = &result else {
            return result;
        };
        *input = match &self.hooks {
            Some(hooks) => hooks.changed_input(name, changed, input),
            None => changed.clone(),
        };
        call_cx.hint = Some(crate::hooks::GateHint::Allow);
        match tool.call(input.clone(), call_cx).await {
            Err(ToolError::Changed(_)) => Err(ToolError::Failed(
                "a hook changed the call's input twice".into(),
            )),
            other => other,
        }
    }

    /// A call's end: its result as the model sees it (redacted, with what its hooks added),
    /// said in `ToolCallFinished`; `PostToolUse` hooks see it first.
    async fn finish_call(
        &self,
        ran: Ran,
        step: &Step,
        sink: &impl EventSink,
    ) -> Result<ContentPart, SinkError> {
        let Ran {
            call: Call { id, name, input },
            result,
            took,
        } = ran;
        let (result, media) = match result {
            Ok(mut out) => {
                let media = std::mem::take(&mut out.media);
                (Ok(out), media)
            }
            Err(e) => (Err(e), Vec::new()),
        };
        let (status, content, is_error, mut details) = match result {
            Ok(out) => (ToolCallStatus::Ok, out.content, false, out.details),
            Err(ToolError::DeniedAndStopped(why)) => {
                step.stopping().get_or_insert_with(|| why.clone());
                (
                    ToolCallStatus::Denied,
                    format!("The user did not allow this ({why}), and stopped the turn."),
                    true,
                    Default::default(),
                )
            }
            Err(ToolError::Denied(why)) => (
                ToolCallStatus::Denied,
                format!(
                    "The user did not allow this ({why}). Do not retry it; ask or take another way."
                ),
                true,
                Default::default(),
            ),
            Err(ToolError::Blocked(why)) => (
                ToolCallStatus::Denied,
                format!("A hook blocked this call: {why}"),
                true,
                Default::default(),
            ),
            Err(ToolError::Cancelled) => (
                ToolCallStatus::Cancelled,
                self.interrupt.why().tool_output().into(),
                true,
                Default::default(),
            ),
            Err(e) => (
                ToolCallStatus::Error,
                e.to_string(),
                true,
                Default::default(),
            ),
        };
        let mut content = self.redactor.redact(&content);
        // What the model cannot see (its catalogue entry takes no images, or no PDFs) is
        // named instead of sent, so the request is not refused for it.
        let (media, unseen): (Vec<Media>, Vec<Media>) = media
            .into_iter()
            .partition(|m| self.model.refuses("", &m.about).is_none());
        for m in unseen {
            content.push_str(&format!(
                "\n\n{} is not shown: this model takes no {}s.",
                m.about.label(),
                m.about.kind
            ));
        }
        let before = step.said_before().remove(&id);
        if let Some(context) = before {
            content.push_str("\n\n[hook] ");
            content.push_str(&self.redactor.redact(&context));
        }
        // PostToolUse hooks see what the model would, may add to it, and may end the turn
        // after this step.
        if let Some(hooks) = &self.hooks
            && status != ToolCallStatus::Denied
            && status != ToolCallStatus::Cancelled
        {
            let end = crate::hooks::ToolEnd {
                output: &content,
                ok: !is_error,
                media: &media,
                origin: details.origin,
            };
            let after = hooks.after_tool(&id, &name, &input, end).await;
            if let Some(feedback) = after.feedback {
                content.push_str("\n\n");
                content.push_str(&self.redactor.redact(&feedback));
            }
            if let Some(reason) = after.stop {
                step.stopping().get_or_insert(reason);
            }
        }
        let todos = details.todos.take();
        sink.emit(AppEvent::ToolCallFinished {
            call_id: id.clone(),
            status,
            output: shorten(&content, EVENT_OUTPUT_LIMIT),
            exit_code: details.exit_code,
            duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            diff: details.diff,
        })
        .await?;
        if let Some(todos) = todos {
            sink.emit(AppEvent::TodosUpdated { todos }).await?;
        }
        Ok(ContentPart::ToolResult {
            call_id: id,
            content,
            is_error,
            media,
        })
    }

    fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools
            .iter()
            .find(|t| t.spec().name == name)
            .cloned()
            .or_else(|| {
                self.live
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .iter()
                    .find(|t| t.spec().name == name)
                    .cloned()
            })
    }

    /// The tools offered now: the fixed ones, and the source's as they are (read again).
    fn offered(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools = self.tools.clone();
        if let Some(source) = &self.source {
            let live = source.tools();
            tools.extend(
                live.iter()
                    .filter(|t| !self.tools.iter().any(|f| f.spec().name == t.spec().name))
                    .cloned(),
            );
            *self.live.lock().unwrap_or_else(|p| p.into_inner()) = live;
        }
        tools
    }
}

/// One tool call, its input as the tool got it.
struct Call {
    id: String,
    name: String,
    input: serde_json::Value,
}

/// A call that ran (or was blocked, or never started).
struct Ran {
    call: Call,
    result: ToolResult,
    took: std::time::Duration,
}

/// What the calls of one step share.
#[derive(Default)]
struct Step {
    /// Set when a hook (or a denial) ends the turn: the step finishes, then the turn.
    stopping: std::sync::Mutex<Option<String>>,
    /// What `PreToolUse` hooks added for the model, by call: it goes with the result.
    said_before: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl Step {
    fn stopping(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.stopping.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn said_before(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, String>> {
        self.said_before.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Where an agent's loop stands.
struct Progress {
    /// Where what the turn adds begins; 0 once a compaction replaced the context.
    start: usize,
    usage: Usage,
    /// The last answer's text.
    text: String,
    last_message: Option<ChatMessage>,
    /// How often Stop hooks kept the turn going.
    stop_blocks: u32,
    /// The size the context was compacted to, when it was.
    compacted_to: Option<u64>,
    /// Whether a compaction replaced the context (what is stored then replaces it too).
    replaced: bool,
}

impl Progress {
    fn new(start: usize) -> Progress {
        Progress {
            start,
            usage: Usage::default(),
            text: String::new(),
            last_message: None,
            stop_blocks: 0,
            compacted_to: None,
            replaced: false,
        }
    }

    /// What the turn adds to the context: assistant messages and tool results, in order,
    /// then `end` (without calls nobody answered).
    fn transcript(&self, messages: &[ChatMessage], end: Option<ChatMessage>) -> Vec<ChatMessage> {
        let mut t = messages[self.start.min(messages.len())..].to_vec();
        if let Some(m) = end.and_then(without_unanswered_calls) {
            t.push(m);
        }
        t
    }
}

/// A message that ended the turn without its tool calls being run (a cut stream, an
/// interrupt) keeps only the rest: a call without a result would be refused next time.
fn without_unanswered_calls(mut message: ChatMessage) -> Option<ChatMessage> {
    message
        .content
        .retain(|p| !matches!(p, ContentPart::ToolCall { .. }));
    (!message.content.is_empty()).then_some(message)
}

/// How much of a tool's output a `ToolCallFinished` event carries (the model gets it all).
const EVENT_OUTPUT_LIMIT: usize = 16 * 1024;

fn shorten(s: &str, limit: usize) -> String {
    if s.len() <= limit {
        return s.to_string();
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… [{} more bytes]", &s[..end], s.len() - end)
}

/// A tool's output, forwarded to the turn as `ToolOutputDelta` events.
struct ChannelOutput {
    call_id: String,
    tx: tokio::sync::mpsc::Sender<(String, String)>,
}

impl OutputSink for ChannelOutput {
    fn delta(&self, text: &str) {
        // Full: dropped, see `run_tools`.
        let _ = self.tx.try_send((self.call_id.clone(), text.to_string()));
    }
}

/// One model call's result.
struct CallOutcome {
    status: TurnStatus,
    text: String,
    usage: Usage,
    error: Option<String>,
    error_kind: Option<TurnErrorKind>,
    message: Option<ChatMessage>,
}

fn describe(e: &ProviderError, provider: &str) -> String {
    match e {
        // A message that names the provider already is not prefixed again.
        ProviderError::Transport(m) if m.starts_with(provider) => m.clone(),
        ProviderError::Transport(m) => format!("{provider}: {m}"),
        ProviderError::Protocol(m) => format!("{provider} sent a stream stepper cannot read: {m}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ChatStream, LlmProvider, Media};
    use std::sync::Mutex;

    struct Scripted(Vec<Result<ChatEvent, ProviderError>>);

    impl LlmProvider for Scripted {
        fn name(&self) -> &str {
            "scripted"
        }
        fn chat_stream(&self, _: ChatRequest, _: CancellationToken) -> ChatStream {
            futures::stream::iter(self.0.clone()).boxed()
        }
    }

    #[derive(Default)]
    struct Recorder(Mutex<Vec<AppEvent>>);

    impl EventSink for Recorder {
        async fn emit(&self, event: AppEvent) -> Result<(), SinkError> {
            self.0.lock().unwrap().push(event);
            Ok(())
        }
    }

    fn request() -> ChatRequest {
        ChatRequest::new("m", vec![])
    }

    #[tokio::test]
    async fn text_usage_and_completion() {
        let provider = Scripted(vec![
            Ok(ChatEvent::Usage(Usage {
                input_tokens: 5,
                ..Usage::default()
            })),
            Ok(ChatEvent::TextDelta("Hel".into())),
            Ok(ChatEvent::TextDelta("lo".into())),
            Ok(ChatEvent::Usage(Usage {
                output_tokens: 2,
                ..Usage::default()
            })),
            Ok(ChatEvent::Stop {
                reason: crate::provider::StopReason::EndTurn,
            }),
        ]);
        let sink = Recorder::default();
        let out = AgentLoop::new(Arc::new(provider))
            .run(request(), CancellationToken::new(), &sink)
            .await;
        assert_eq!(out.status, TurnStatus::Completed);
        assert_eq!(out.text, "Hello");
        assert_eq!((out.usage.input_tokens, out.usage.output_tokens), (5, 2));
        let events = sink.0.lock().unwrap();
        assert_eq!(
            events.last(),
            Some(&AppEvent::MessageCompleted {
                text: "Hello".into(),
                stop_reason: Some("end_turn".into())
            })
        );
    }

    #[tokio::test]
    async fn a_broken_stream_keeps_the_partial_text() {
        let provider = Scripted(vec![
            Ok(ChatEvent::TextDelta("part".into())),
            Err(ProviderError::Transport("connection reset".into())),
        ]);
        let sink = Recorder::default();
        let out = AgentLoop::new(Arc::new(provider))
            .run(request(), CancellationToken::new(), &sink)
            .await;
        assert_eq!(out.status, TurnStatus::Failed);
        assert!(out.error.unwrap().contains("connection reset"));
        let events = sink.0.lock().unwrap();
        assert_eq!(
            events.last(),
            Some(&AppEvent::MessageCompleted {
                text: "part".into(),
                stop_reason: Some("error".into())
            })
        );
    }

    #[tokio::test]
    async fn cancel_interrupts() {
        let provider = Scripted(vec![Ok(ChatEvent::TextDelta("x".into()))]);
        let cancel = CancellationToken::new();
        cancel.cancel();
        let sink = Recorder::default();
        let out = AgentLoop::new(Arc::new(provider))
            .run(request(), cancel, &sink)
            .await;
        assert_eq!(out.status, TurnStatus::Interrupted);
        assert!(
            sink.0.lock().unwrap().is_empty(),
            "nothing streamed, so no message"
        );
    }

    /// A provider whose stream ends because the turn was cancelled while it was polled
    /// (as another thread's interrupt lands between the loop's check and the stream's).
    struct CancelledMidPoll;

    impl LlmProvider for CancelledMidPoll {
        fn name(&self) -> &str {
            "mid-poll"
        }
        fn chat_stream(&self, _: ChatRequest, cancel: CancellationToken) -> ChatStream {
            let mut started = false;
            futures::stream::poll_fn(move |_| {
                if !started {
                    started = true;
                    return std::task::Poll::Ready(Some(Ok(ChatEvent::TextDelta("x".into()))));
                }
                cancel.cancel();
                std::task::Poll::Ready(None)
            })
            .boxed()
        }
    }

    #[tokio::test]
    async fn a_stream_ended_by_a_cancel_between_polls_is_an_interruption() {
        let sink = Recorder::default();
        let out = AgentLoop::new(Arc::new(CancelledMidPoll))
            .run(request(), CancellationToken::new(), &sink)
            .await;
        assert_eq!(out.status, TurnStatus::Interrupted, "{:?}", out.error);
        assert_eq!(out.error, None);
    }

    /// A provider answering the Nth call of a turn with the Nth script.
    struct Turns(Vec<Vec<ChatEvent>>, Mutex<Vec<ChatRequest>>);

    impl LlmProvider for Turns {
        fn name(&self) -> &str {
            "turns"
        }
        fn chat_stream(&self, request: ChatRequest, _: CancellationToken) -> ChatStream {
            let n = request
                .messages
                .iter()
                .filter(|m| m.role == Role::Assistant)
                .count();
            self.1.lock().unwrap().push(request);
            let script = self.0.get(n).cloned().unwrap_or_default();
            futures::stream::iter(script.into_iter().map(Ok)).boxed()
        }
    }

    fn calls(calls: &[(&str, &str, &str)]) -> Vec<ChatEvent> {
        let mut v = Vec::new();
        for (i, (id, name, args)) in calls.iter().enumerate() {
            v.push(ChatEvent::ToolCallStart {
                index: i,
                id: id.to_string(),
                name: name.to_string(),
            });
            v.push(ChatEvent::ToolCallDelta {
                index: i,
                arguments: args.to_string(),
            });
            v.push(ChatEvent::ToolCallEnd { index: i });
        }
        v.push(ChatEvent::Stop {
            reason: crate::provider::StopReason::ToolUse,
        });
        v
    }

    fn text(t: &str) -> Vec<ChatEvent> {
        vec![
            ChatEvent::TextDelta(t.into()),
            ChatEvent::Stop {
                reason: crate::provider::StopReason::EndTurn,
            },
        ]
    }

    /// Echoes `say`; streams it as output too. Read-only.
    struct Echo;
    impl Tool for Echo {
        fn spec(&self) -> crate::tool::ToolSpec {
            crate::tool::ToolSpec {
                name: "echo".into(),
                description: "d".into(),
                input_schema: serde_json::json!({"type": "object"}),
            }
        }
        fn read_only(&self) -> bool {
            true
        }
        fn call<'a>(
            &'a self,
            args: serde_json::Value,
            cx: &'a ToolCx,
        ) -> futures::future::BoxFuture<'a, crate::tool::ToolResult> {
            Box::pin(async move {
                let say = args["say"].as_str().unwrap_or_default().to_string();
                cx.output.delta(&say);
                Ok(crate::tool::ToolOutput::text(say))
            })
        }
    }

    /// Waits until cancelled.
    /// Runs until cancelled, telling `started` when it began.
    #[derive(Default)]
    struct Hang {
        started: tokio::sync::Notify,
    }
    impl Tool for Hang {
        fn spec(&self) -> crate::tool::ToolSpec {
            crate::tool::ToolSpec {
                name: "hang".into(),
                description: "d".into(),
                input_schema: serde_json::json!({"type": "object"}),
            }
        }
        fn call<'a>(
            &'a self,
            _: serde_json::Value,
            cx: &'a ToolCx,
        ) -> futures::future::BoxFuture<'a, crate::tool::ToolResult> {
            Box::pin(async move {
                self.started.notify_one();
                cx.cancel.cancelled().await;
                Err(ToolError::Cancelled)
            })
        }
    }

    fn tool_cx() -> ToolCx {
        ToolCx::permissive(std::path::Path::new("/"))
    }

    /// Shows a picture, as `read` of one does.
    struct Shot;
    impl Tool for Shot {
        fn spec(&self) -> crate::tool::ToolSpec {
            crate::tool::ToolSpec {
                name: "shot".into(),
                description: "d".into(),
                input_schema: serde_json::json!({"type": "object"}),
            }
        }
        fn read_only(&self) -> bool {
            true
        }
        fn call<'a>(
            &'a self,
            _: serde_json::Value,
            _: &'a ToolCx,
        ) -> futures::future::BoxFuture<'a, crate::tool::ToolResult> {
            Box::pin(async move {
                Ok(crate::tool::ToolOutput {
                    content: "Image read: a.png".into(),
                    details: crate::tool::ToolDetails {
                        origin: Some(shot_origin()),
                        ..Default::default()
                    },
                    media: vec![shot_media()],
                })
            })
        }
    }

    fn shot_media() -> Media {
        Media::new(
            stepper_protocol::Attachment {
                kind: stepper_protocol::AttachmentKind::Image,
                media_type: "image/png".into(),
                name: "a.png".into(),
                size: 4,
                sha256: "0".repeat(64),
                width: Some(2),
                height: Some(1),
                pages: None,
            },
            Arc::from(&b"\x89PNG"[..]),
        )
    }

    fn shot_origin() -> crate::tool::MediaOrigin {
        crate::tool::MediaOrigin {
            size: 40,
            width: Some(4),
            height: Some(2),
        }
    }

    /// What `PostToolUse` would be told of a call: its output, media and origin.
    type Seen = (String, Vec<Media>, Option<crate::tool::MediaOrigin>);

    /// Records what `PostToolUse` would be told.
    #[derive(Default)]
    struct SeenHooks(Mutex<Vec<Seen>>);

    impl TurnHooks for SeenHooks {
        fn before_tool<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            _: &'a serde_json::Value,
        ) -> futures::future::BoxFuture<'a, BeforeTool> {
            Box::pin(async { BeforeTool::RUN })
        }
        fn after_tool<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            _: &'a serde_json::Value,
            end: crate::hooks::ToolEnd<'a>,
        ) -> futures::future::BoxFuture<'a, crate::hooks::AfterTool> {
            self.0
                .lock()
                .unwrap()
                .push((end.output.to_string(), end.media.to_vec(), end.origin));
            Box::pin(async { crate::hooks::AfterTool::default() })
        }
        fn before_stop<'a>(
            &'a self,
            _: bool,
            _: &'a str,
        ) -> futures::future::BoxFuture<'a, Option<String>> {
            Box::pin(async { None })
        }
    }

    #[tokio::test]
    async fn hooks_see_the_picture_a_tool_showed_and_the_model_gets_it() {
        let provider = Arc::new(Turns(
            vec![calls(&[("c1", "shot", "{}")]), text("a red square")],
            Mutex::default(),
        ));
        let hooks = Arc::new(SeenHooks::default());
        let sink = Recorder::default();
        let out = AgentLoop::new(provider.clone())
            .with_tools(vec![Arc::new(Shot)], tool_cx())
            .with_hooks(hooks.clone())
            .run(request(), CancellationToken::new(), &sink)
            .await;
        assert_eq!(out.status, TurnStatus::Completed, "{:?}", out.error);
        assert_eq!(
            *hooks.0.lock().unwrap(),
            [(
                "Image read: a.png".to_string(),
                vec![shot_media()],
                Some(shot_origin())
            )]
        );
        let requests = provider.1.lock().unwrap();
        assert_eq!(
            requests[1].messages.last().unwrap().content,
            [ContentPart::ToolResult {
                call_id: "c1".into(),
                content: "Image read: a.png".into(),
                is_error: false,
                media: vec![shot_media()],
            }]
        );
    }

    #[tokio::test]
    async fn a_model_that_takes_no_images_is_told_of_the_picture_not_sent_it() {
        let provider = Arc::new(Turns(
            vec![calls(&[("c1", "shot", "{}")]), text("I cannot see it")],
            Mutex::default(),
        ));
        let sink = Recorder::default();
        let blind = ModelInfo {
            images: Some(false),
            ..ModelInfo::default()
        };
        let out = AgentLoop::new(provider.clone())
            .with_tools(vec![Arc::new(Shot)], tool_cx())
            .with_model_info(blind)
            .run(request(), CancellationToken::new(), &sink)
            .await;
        assert_eq!(out.status, TurnStatus::Completed, "{:?}", out.error);
        let requests = provider.1.lock().unwrap();
        let [ContentPart::ToolResult { content, media, .. }] =
            requests[1].messages.last().unwrap().content.as_slice()
        else {
            panic!("{:?}", requests[1].messages.last());
        };
        assert!(media.is_empty());
        assert!(
            content.ends_with("is not shown: this model takes no images."),
            "{content}"
        );
    }

    #[tokio::test]
    async fn tools_run_and_their_results_go_back_to_the_model() {
        let provider = Arc::new(Turns(
            vec![
                calls(&[
                    ("c1", "echo", r#"{"say":"one"}"#),
                    ("c2", "echo", r#"{"say":"two"}"#),
                    ("c3", "nope", "{}"),
                ]),
                text("done"),
            ],
            Mutex::default(),
        ));
        let sink = Recorder::default();
        let out = AgentLoop::new(provider.clone())
            .with_tools(vec![Arc::new(Echo)], tool_cx())
            .run(request(), CancellationToken::new(), &sink)
            .await;
        assert_eq!(out.status, TurnStatus::Completed);
        assert_eq!(out.text, "done");
        let requests = provider.1.lock().unwrap();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[0].tools.len(), 1, "the tools are offered");
        let results: Vec<_> = requests[1].messages.last().unwrap().content.clone();
        assert_eq!(
            results[0],
            ContentPart::ToolResult {
                media: Vec::new(),
                call_id: "c1".into(),
                content: "one".into(),
                is_error: false
            }
        );
        assert_eq!(
            results[1],
            ContentPart::ToolResult {
                media: Vec::new(),
                call_id: "c2".into(),
                content: "two".into(),
                is_error: false
            }
        );
        assert!(
            matches!(&results[2], ContentPart::ToolResult { is_error: true, content, .. } if content.contains("no tool named \"nope\""))
        );
        let events = sink.0.lock().unwrap();
        let kinds: Vec<_> = events.iter().map(|e| e.kind()).collect();
        assert_eq!(kinds.iter().filter(|k| **k == "ToolCallStarted").count(), 3);
        assert_eq!(
            kinds.iter().filter(|k| **k == "ToolCallFinished").count(),
            3
        );
        assert!(events.iter().any(|e| matches!(e, AppEvent::ToolOutputDelta { call_id, text } if call_id == "c1" && text == "one")));
        assert_eq!(
            events.last(),
            Some(&AppEvent::MessageCompleted {
                text: "done".into(),
                stop_reason: Some("end_turn".into())
            })
        );
    }

    #[tokio::test]
    async fn the_step_limit_stops_a_model_that_never_stops() {
        let looping: Vec<Vec<ChatEvent>> = (0..10)
            .map(|i| calls(&[(&format!("c{i}"), "echo", "{}")]))
            .collect();
        let provider = Arc::new(Turns(looping, Mutex::default()));
        let sink = Recorder::default();
        let out = AgentLoop::new(provider.clone())
            .with_tools(vec![Arc::new(Echo)], tool_cx())
            .with_max_steps(3)
            .run(request(), CancellationToken::new(), &sink)
            .await;
        assert_eq!(out.status, TurnStatus::Completed);
        assert_eq!(provider.1.lock().unwrap().len(), 3);
        assert!(
            sink.0.lock().unwrap().iter().any(
                |e| matches!(e, AppEvent::Notice { message } if message.contains("step limit"))
            )
        );
    }

    #[tokio::test]
    async fn cancel_reaches_a_running_tool() {
        let provider = Arc::new(Turns(
            vec![calls(&[("c1", "hang", "{}")]), text("never")],
            Mutex::default(),
        ));
        let sink = Recorder::default();
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        let hang = Arc::new(Hang::default());
        let agent = AgentLoop::new(provider).with_tools(vec![hang.clone()], tool_cx());
        let (out, ()) = tokio::join!(agent.run(request(), cancel, &sink), async move {
            hang.started.notified().await;
            stop.cancel();
        });
        assert_eq!(out.status, TurnStatus::Interrupted);
        assert!(sink.0.lock().unwrap().iter().any(|e| matches!(
            e,
            AppEvent::ToolCallFinished {
                status: ToolCallStatus::Cancelled,
                output,
                ..
            } if output == "cancelled by the user"
        )));
    }

    #[tokio::test]
    async fn a_tool_cut_short_by_a_stopping_daemon_says_so() {
        let provider = Arc::new(Turns(
            vec![calls(&[("c1", "hang", "{}")]), text("never")],
            Mutex::default(),
        ));
        let sink = Recorder::default();
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        let interrupt = Interrupt::new();
        let stopping = interrupt.clone();
        let hang = Arc::new(Hang::default());
        let agent = AgentLoop::new(provider)
            .with_tools(vec![hang.clone()], tool_cx())
            .with_interrupt(interrupt);
        let (out, ()) = tokio::join!(agent.run(request(), cancel, &sink), async move {
            hang.started.notified().await;
            stopping.set(crate::interrupt::Interruption::Shutdown);
            stop.cancel();
        });
        assert_eq!(out.status, TurnStatus::Interrupted);
        let said: Vec<String> = sink
            .0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                AppEvent::ToolCallFinished { output, .. } => Some(output.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            said,
            ["the daemon was stopped while this tool call ran; it may have partly run"]
        );
    }
}
