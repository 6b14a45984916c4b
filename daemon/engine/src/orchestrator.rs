//! The orchestrator: a turn as a sequence of layers, each its own agent loop with its own
//! context, model and tools, handing its final text to the next; parallel layers fanned out
//! to workers; subagents started by the model with `dispatch`.
//!
//! The daemon builds and runs each loop (provider, gate, tools, hooks) behind
//! [`AgentHost`]; this module decides what runs when, with what input, and what each agent's
//! events are tagged with. A turn without layers is one loop, as it always was.
//!
//! Each layer's context is stored under its name (`main` for the answering layer, `layer:<name>`
//! for the others). A parallel layer's workers run behind a semaphore. The `assign_tasks` and
//! `dispatch` tools are offered here (`dispatch` to the answering layer whenever agent files exist,
//! as Claude Code's Task tool, unless the settings say `"dispatch": false`); events are tagged with
//! agent ids (`layer-1`, `layer-2.3`, `agent-1`), and the turn's running usage is summed.
//! `AgentHost` is how it calls the daemon: run one loop, log one event, make worktrees for isolated
//! agents and merge them back — so this module has no sockets, SQL or git.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;
use stepper_protocol::{
    AppEvent, KeptReason, KeptWorktree, TurnErrorKind, TurnStatus, Usage, Worktree,
    WorktreeConflict,
};
use tokio::sync::Semaphore;

use crate::agent::{SinkError, TurnOutcome, add_cost};
use crate::config::layers::{AgentDef, DEFAULT_PARALLEL_MAX, Isolation, Layer, offers, permits};
use crate::provider::{ChatMessage, ContentPart, Media, Role};
use crate::tool::{Tool, ToolCx, ToolError, ToolOutput, ToolResult, ToolSpec, parse_args};

/// The context key of the turn's answering agent: the session's conversation.
pub const MAIN: &str = "main";

/// Which kind of agent a loop is (hooks and clients tell them apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentKind {
    /// A layer of the turn (or the whole turn).
    Layer,
    /// One task of a parallel layer.
    Worker,
    /// Started by a model with `dispatch`.
    Dispatched,
}

/// One agent loop to run.
pub struct AgentRun {
    /// What its events are tagged with; none for the turn's answering agent.
    pub id: Option<String>,
    pub kind: AgentKind,
    pub name: String,
    /// `provider/model-id`; the session's when absent.
    pub model: Option<String>,
    /// Added to the system prompt after the instructions every agent gets.
    pub instructions: String,
    /// Whether it gets the base instructions of its model's family.
    pub base: bool,
    pub tools: Option<Vec<String>>,
    pub disallowed: Vec<String>,
    pub skills: Option<Vec<String>>,
    pub max_steps: Option<u32>,
    /// Tools of the orchestrator for this loop (`assign_tasks`, `dispatch`).
    pub extra_tools: Vec<Arc<dyn Tool>>,
    /// What the turn used before it, for the turn's running total.
    pub base_usage: Usage,
    pub base_cost: Option<f64>,
    /// The worktree it works in instead of the session's folder (see [`AgentHost::isolate`]).
    pub worktree: Option<Worktree>,
}

impl AgentRun {
    /// Whether the agent may use `tool`.
    pub fn allows(&self, tool: &str) -> bool {
        permits(self.tools.as_deref(), &self.disallowed, tool)
    }

    /// Whether the agent is offered the skill `name`.
    pub fn offers_skill(&self, name: &str) -> bool {
        offers(self.skills.as_deref(), name)
    }

    fn of_layer(layer: &Layer, id: Option<String>, kind: AgentKind) -> AgentRun {
        AgentRun {
            id,
            kind,
            name: layer.name.clone(),
            model: layer.model.clone(),
            instructions: layer.instructions.clone(),
            base: layer.base,
            tools: layer.tools.clone(),
            disallowed: layer.disallowed.clone(),
            skills: layer.skills.clone(),
            max_steps: layer.max_steps,
            extra_tools: Vec::new(),
            base_usage: Usage::default(),
            base_cost: None,
            worktree: None,
        }
    }
}

/// The daemon's side: run one loop, record an event.
pub trait AgentHost: Send + Sync {
    /// The model a run with `model` uses (`provider/model-id`).
    fn model_of(&self, model: Option<&str>) -> String;
    /// Run one agent loop on `messages`; its events are tagged with `run.id`.
    fn run_agent(&self, run: AgentRun, messages: Vec<ChatMessage>) -> BoxFuture<'_, TurnOutcome>;
    /// Record an event tagged with `agent`.
    fn emit(&self, agent: Option<String>, event: AppEvent) -> BoxFuture<'_, Result<(), SinkError>>;
    /// Text the user steered into the turn that no model call has taken yet.
    fn take_steering(&self) -> Vec<String> {
        Vec::new()
    }
    /// What changed in the environment since `history` was last told (the date, git's
    /// state), to send ahead of the user's words; `None` when nothing did.
    fn environment_update(&self, history: &[ChatMessage]) -> Option<String> {
        let _ = history;
        None
    }
    /// A worktree for each of `agents` (by id, in order), each on its own branch, all made
    /// from the session's folder as it is now; `Err` says why there are none (the agents
    /// then work in the folder itself).
    fn isolate(&self, agents: Vec<String>) -> BoxFuture<'_, Result<Isolated, String>> {
        let _ = agents;
        Box::pin(async { Err("this host cannot make worktrees".to_string()) })
    }
    /// Bring what the agents of `batch` changed back into the session's folder, in order;
    /// `finished[i]` says whether the i-th completed (an unfinished one is not merged).
    /// Worktrees that are done with are removed.
    fn merge(&self, batch: u64, finished: Vec<bool>) -> BoxFuture<'_, Merge> {
        let _ = (batch, finished);
        Box::pin(async { Merge::default() })
    }
}

/// Worktrees made for isolated agents.
#[derive(Debug, Clone, PartialEq)]
pub struct Isolated {
    /// The host's handle for [`AgentHost::merge`].
    pub batch: u64,
    /// The agents, in the order asked.
    pub agents: Vec<String>,
    /// Their worktrees, in the same order.
    pub worktrees: Vec<Worktree>,
    /// What the user should know of how they were made (a copy of a folder that is not a
    /// repository).
    pub note: Option<String>,
}

/// What came of bringing isolated agents' work back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Merge {
    /// The agents whose changes were applied, in order.
    pub merged: Vec<String>,
    /// Files of the folder written or removed.
    pub files: u32,
    pub conflict: Option<WorktreeConflict>,
    pub kept: Vec<KeptWorktree>,
    pub error: Option<String>,
}

/// The user's words, then what changed in the environment when something did (the words
/// first: whatever reads a turn's input reads its first part).
fn user_message(update: Option<String>, attached: &[Media], text: &str) -> ChatMessage {
    // The pictures and documents first, then the words about them (as Anthropic advises).
    let mut content: Vec<ContentPart> = attached
        .iter()
        .map(|media| ContentPart::Attachment {
            media: media.clone(),
        })
        .collect();
    content.push(ContentPart::Text {
        text: text.to_string(),
    });
    content.extend(update.map(|text| ContentPart::Text { text }));
    ChatMessage {
        role: Role::User,
        content,
    }
}

/// What a layer adds to its stored context.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerContext {
    /// [`MAIN`] for the answering layer, `layer:<name>` for the others.
    pub key: String,
    pub messages: Vec<ChatMessage>,
    /// The messages are the whole context (it was compacted), not an addition to it.
    pub replace: bool,
}

/// How a turn's layers ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Orchestrated {
    pub status: TurnStatus,
    pub error: Option<String>,
    /// What kind of failure `error` is, where it is known.
    pub error_kind: Option<TurnErrorKind>,
    /// The turn's answer: the last layer's final text.
    pub text: String,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    /// What each layer that ran adds to its context, in order.
    pub contexts: Vec<LayerContext>,
}

/// The context key of a layer.
pub fn context_key(layers: &[Layer], index: usize) -> String {
    if index + 1 == layers.len() {
        MAIN.to_string()
    } else {
        format!("layer:{}", layers[index].name)
    }
}

/// The orchestrator of one turn.
pub struct Orchestrator {
    pub host: Arc<dyn AgentHost>,
    /// Named subagents `dispatch` can start.
    pub agents: Arc<Vec<AgentDef>>,
    /// Offer `dispatch` to every layer (settings), not only those that ask for it.
    pub dispatch_everywhere: bool,
    /// Offer `dispatch` to the answering agent (the last layer), as Claude Code offers its
    /// Task tool whenever there are agent files.
    pub answering_dispatches: bool,
    /// Where workers and subagents work when their layer or agent file does not say.
    pub isolation: Isolation,
    /// The images and documents the user attached to the turn's input: every layer given
    /// the user's words sees them (workers and subagents get their tasks alone).
    pub attachments: Vec<Media>,
    next_agent: Arc<AtomicU32>,
    /// What dispatched subagents used, not yet counted in the turn's total.
    dispatched: Arc<Mutex<(Usage, Option<f64>)>>,
}

impl Orchestrator {
    pub fn new(host: Arc<dyn AgentHost>, agents: Vec<AgentDef>, dispatch_everywhere: bool) -> Self {
        Orchestrator {
            host,
            agents: Arc::new(agents),
            dispatch_everywhere,
            answering_dispatches: false,
            isolation: Isolation::None,
            attachments: Vec::new(),
            next_agent: Arc::new(AtomicU32::new(1)),
            dispatched: Arc::default(),
        }
    }

    /// Run `layers` (one plain layer, without layer events, when `layered` is false) on
    /// the user's `input`, each layer starting from its stored context in `histories`.
    pub async fn run(
        &self,
        layers: &[Layer],
        layered: bool,
        input: &str,
        mut histories: HashMap<String, Vec<ChatMessage>>,
    ) -> Orchestrated {
        let count = layers.len();
        let mut done = Orchestrated {
            status: TurnStatus::Completed,
            error: None,
            error_kind: None,
            text: String::new(),
            usage: Usage::default(),
            cost_usd: None,
            contexts: Vec::new(),
        };
        // The task list the layer before a parallel layer assigned.
        let mut tasks: Option<Vec<String>> = None;
        let mut handoff: Option<(String, String)> = None;
        for (i, layer) in layers.iter().enumerate() {
            let index = u32::try_from(i + 1).unwrap_or(u32::MAX);
            let last = i + 1 == count;
            let id = (!last && layered).then(|| format!("layer-{index}"));
            let model = self.host.model_of(layer.model.as_deref());
            let mut text_in = match &handoff {
                None => input.to_string(),
                Some((from, text)) => handoff_text(input, from, text),
            };
            if handoff.is_some() {
                // What the user steered in while the layer before ran, and it did not take.
                let steered = self.host.take_steering();
                if !steered.is_empty() {
                    text_in.push_str("\n\n---\nThe user added while the turn ran:\n\n");
                    text_in.push_str(&steered.join("\n\n"));
                }
            }
            let fan_out = layer.parallel && tasks.as_ref().is_some_and(|t| !t.is_empty());
            if layered {
                let started = AppEvent::LayerStarted {
                    index,
                    count: u32::try_from(count).unwrap_or(u32::MAX),
                    name: layer.name.clone(),
                    model: model.clone(),
                    parallel: fan_out,
                    agent_id: if fan_out { None } else { id.clone() },
                };
                if let Err(e) = self.host.emit(None, started).await {
                    return failed(done, e.to_string());
                }
            }
            let key = context_key(layers, i);
            let (outcome, workers) = if fan_out {
                let list = tasks.take().unwrap_or_default();
                let workers = u32::try_from(list.len()).unwrap_or(u32::MAX);
                (self.fan_out(layer, index, input, list).await, workers)
            } else {
                let step = self
                    .run_layer(
                        layers,
                        i,
                        id.clone(),
                        &text_in,
                        &mut done,
                        &mut histories,
                        &mut tasks,
                    )
                    .await;
                (step, 0)
            };
            done.usage.add(&outcome.usage);
            done.cost_usd = add_cost(done.cost_usd, outcome.cost_usd);
            let (sub_usage, sub_cost) =
                std::mem::take(&mut *self.dispatched.lock().unwrap_or_else(|p| p.into_inner()));
            let had_subagents = sub_usage != Usage::default();
            done.usage.add(&sub_usage);
            done.cost_usd = add_cost(done.cost_usd, sub_cost);
            if fan_out {
                let mut added = vec![user_message(None, &self.attachments, &text_in)];
                if !outcome.text.is_empty() {
                    added.push(ChatMessage {
                        role: Role::Assistant,
                        content: vec![ContentPart::Text {
                            text: outcome.text.clone(),
                        }],
                    });
                }
                done.contexts.push(LayerContext {
                    key,
                    messages: added,
                    replace: false,
                });
            }
            if (layered && (id.is_some() || fan_out)) || had_subagents {
                // The turn's running total, now that a tagged agent's usage is in.
                let _ = self
                    .host
                    .emit(
                        None,
                        AppEvent::UsageUpdated {
                            usage: done.usage,
                            cost_usd: done.cost_usd,
                        },
                    )
                    .await;
            }
            if layered {
                let reported = self
                    .report_layer(layer, index, last, fan_out, workers, &outcome)
                    .await;
                if let Err(e) = reported {
                    return failed(done, e.to_string());
                }
            }
            done.text = outcome.text.clone();
            if outcome.status != TurnStatus::Completed && !last {
                // The session's conversation keeps the user's words of a turn that ended
                // before its last layer.
                done.contexts.push(LayerContext {
                    key: MAIN.to_string(),
                    messages: vec![user_message(None, &self.attachments, input)],
                    replace: false,
                });
            }
            if outcome.status != TurnStatus::Completed {
                done.status = outcome.status;
                done.error_kind = outcome.error_kind;
                done.error = outcome.error.map(|e| {
                    if layered {
                        format!("layer {index} ({}): {e}", layer.name)
                    } else {
                        e
                    }
                });
                return done;
            }
            if tasks.is_some() && !layers.get(i + 1).is_some_and(|n| n.parallel) {
                tasks = None;
            }
            handoff = Some((layer.name.clone(), outcome.text));
        }
        done
    }

    /// One layer that runs as one agent: its conversation so far and the user's words (or
    /// the layer before's handoff), its tools (`assign_tasks` before a parallel layer,
    /// `dispatch` where it may start subagents). What it adds to its context goes to
    /// `done`; the tasks it assigned, to `tasks`.
    #[allow(clippy::too_many_arguments)]
    async fn run_layer(
        &self,
        layers: &[Layer],
        i: usize,
        id: Option<String>,
        text_in: &str,
        done: &mut Orchestrated,
        histories: &mut HashMap<String, Vec<ChatMessage>>,
        tasks: &mut Option<Vec<String>>,
    ) -> Step {
        let layer = &layers[i];
        let last = i + 1 == layers.len();
        let mut run = AgentRun::of_layer(layer, id.clone(), AgentKind::Layer);
        run.base_usage = done.usage;
        run.base_cost = done.cost_usd;
        let assigned = Arc::new(Mutex::new(None));
        if layers.get(i + 1).is_some_and(|next| next.parallel) {
            run.extra_tools.push(Arc::new(AssignTasks {
                next: layers[i + 1].name.clone(),
                tasks: Arc::clone(&assigned),
            }));
        }
        if layer.dispatch || self.dispatch_everywhere || (last && self.answering_dispatches) {
            run.extra_tools
                .push(Arc::new(self.dispatch_tool(layer, id)));
        }
        let key = context_key(layers, i);
        let mut messages = histories.remove(&key).unwrap_or_default();
        let said = user_message(
            self.host.environment_update(&messages),
            &self.attachments,
            text_in,
        );
        messages.push(said.clone());
        let outcome = self.host.run_agent(run, messages).await;
        *tasks = assigned.lock().unwrap_or_else(|p| p.into_inner()).take();
        let added = if outcome.compacted {
            outcome.transcript.clone()
        } else {
            let mut added = vec![said];
            added.extend(outcome.transcript.iter().cloned());
            added
        };
        done.contexts.push(LayerContext {
            key,
            messages: added,
            replace: outcome.compacted,
        });
        Step::from(outcome)
    }

    /// A layer's end as clients see it: the turn's running total once a tagged agent's
    /// usage is in, the workers' joined results as the answer of a last parallel layer,
    /// and `LayerFinished`.
    #[allow(clippy::too_many_arguments)]
    async fn report_layer(
        &self,
        layer: &Layer,
        index: u32,
        last: bool,
        fan_out: bool,
        workers: u32,
        outcome: &Step,
    ) -> Result<(), SinkError> {
        if last && fan_out && !outcome.text.is_empty() {
            // The workers' results are the answer: said as the turn's own message.
            let _ = self
                .host
                .emit(
                    None,
                    AppEvent::MessageCompleted {
                        text: outcome.text.clone(),
                        stop_reason: Some("end_turn".into()),
                    },
                )
                .await;
        }
        let finished = AppEvent::LayerFinished {
            index,
            name: layer.name.clone(),
            status: outcome.status,
            text: outcome.text.clone(),
            error: outcome.error.clone(),
            workers,
        };
        self.host.emit(None, finished).await
    }

    /// A parallel layer: one worker per task, at most `parallel-max` at once; its text is
    /// the workers' results in task order (and, when they worked in worktrees, what came
    /// of merging their changes back).
    async fn fan_out(&self, layer: &Layer, index: u32, input: &str, tasks: Vec<String>) -> Step {
        let limit = Arc::new(Semaphore::new(layer.parallel_max.max(1)));
        let mut runs: Vec<AgentRun> = (0..tasks.len())
            .map(|k| {
                let id = format!("layer-{index}.{}", k + 1);
                let mut run = AgentRun::of_layer(layer, Some(id), AgentKind::Worker);
                // Workers neither assign nor dispatch.
                run.disallowed
                    .extend(["assign_tasks".to_string(), "dispatch".to_string()]);
                run
            })
            .collect();
        let isolate = layer.isolation.unwrap_or(self.isolation) == Isolation::Worktree;
        let isolated = self.isolate(&mut runs, &vec![isolate; tasks.len()]).await;
        let ids: Vec<String> = runs.iter().filter_map(|r| r.id.clone()).collect();
        let work = runs.into_iter().zip(&tasks).map(|(run, task)| {
            let limit = Arc::clone(&limit);
            let message = worker_input(task, input);
            async move {
                let _permit = limit.acquire_owned().await.ok();
                self.subagent(None, run, task.clone(), Some(index), message)
                    .await
            }
        });
        let results = futures::future::join_all(work).await;
        let merged = match isolated {
            Some(isolated) => Some(
                self.merge_back(None, Some(index), isolated, &ids, &results)
                    .await,
            ),
            None => None,
        };
        let mut joined = join_results(&tasks, results);
        if let Some(report) = merged {
            joined.text.push_str(&report);
        }
        joined
    }

    /// Worktrees for the runs `wanted` marks, set on them; none (and a notice saying why)
    /// when the host cannot make them.
    async fn isolate(&self, runs: &mut [AgentRun], wanted: &[bool]) -> Option<Isolated> {
        let ids: Vec<String> = runs
            .iter()
            .zip(wanted)
            .filter(|(_, w)| **w)
            .filter_map(|(r, _)| r.id.clone())
            .collect();
        if ids.is_empty() {
            return None;
        }
        match self.host.isolate(ids.clone()).await {
            Ok(isolated) => {
                for (id, worktree) in ids.iter().zip(&isolated.worktrees) {
                    if let Some(run) = runs.iter_mut().find(|r| r.id.as_ref() == Some(id)) {
                        run.worktree = Some(worktree.clone());
                    }
                }
                if let Some(message) = isolated.note.clone() {
                    let _ = self.host.emit(None, AppEvent::Notice { message }).await;
                }
                Some(isolated)
            }
            Err(why) => {
                let message = format!(
                    "the workers share the folder instead of worktrees of their own: {why}"
                );
                let _ = self.host.emit(None, AppEvent::Notice { message }).await;
                None
            }
        }
    }

    /// Bring the isolated agents' changes back (`ids`: every agent of the batch, `results`
    /// theirs in the same order) and say so; the text the layer after (or the dispatching
    /// model) is told of it.
    async fn merge_back(
        &self,
        parent: Option<String>,
        layer: Option<u32>,
        isolated: Isolated,
        ids: &[String],
        results: &[Step],
    ) -> String {
        // Whether each of the batch's agents completed, in the batch's order.
        let finished: Vec<bool> = isolated
            .agents
            .iter()
            .map(|agent| {
                ids.iter()
                    .zip(results)
                    .any(|(id, step)| id == agent && step.status == TurnStatus::Completed)
            })
            .collect();
        let merge = self.host.merge(isolated.batch, finished).await;
        let report = merge_text(&merge, ids);
        let event = AppEvent::WorktreesMerged {
            layer,
            merged: merge.merged,
            files: merge.files,
            conflict: merge.conflict.map(Box::new),
            kept: merge.kept,
            error: merge.error,
        };
        let _ = self.host.emit(parent, event).await;
        report
    }

    /// Run one subagent with its started/finished events (tagged with `parent`).
    async fn subagent(
        &self,
        parent: Option<String>,
        run: AgentRun,
        task: String,
        layer: Option<u32>,
        message: String,
    ) -> Step {
        let agent_id = run.id.clone().unwrap_or_default();
        let name = run.name.clone();
        let model = self.host.model_of(run.model.as_deref());
        let started = AppEvent::SubagentStarted {
            agent_id: agent_id.clone(),
            name: name.clone(),
            model,
            task,
            layer,
            worktree: run.worktree.clone().map(Box::new),
        };
        if let Err(e) = self.host.emit(parent.clone(), started).await {
            return Step::failed(e.to_string());
        }
        let said = user_message(self.host.environment_update(&[]), &[], &message);
        let outcome = self.host.run_agent(run, vec![said]).await;
        let finished = AppEvent::SubagentFinished {
            agent_id,
            name,
            status: outcome.status,
            text: outcome.text.clone(),
            error: outcome.error.clone(),
            usage: outcome.usage,
        };
        let _ = self.host.emit(parent, finished).await;
        Step::from(outcome)
    }

    fn dispatch_tool(&self, layer: &Layer, parent: Option<String>) -> Dispatch {
        Dispatch {
            orchestrator: Orchestrator {
                host: Arc::clone(&self.host),
                agents: Arc::clone(&self.agents),
                dispatch_everywhere: false,
                answering_dispatches: false,
                isolation: self.isolation,
                attachments: Vec::new(),
                next_agent: Arc::clone(&self.next_agent),
                dispatched: Arc::clone(&self.dispatched),
            },
            parent,
            layer: layer.clone(),
        }
    }
}

/// What one agent (or a parallel layer's workers together) came to.
struct Step {
    status: TurnStatus,
    error: Option<String>,
    error_kind: Option<TurnErrorKind>,
    text: String,
    usage: Usage,
    cost_usd: Option<f64>,
}

impl From<TurnOutcome> for Step {
    fn from(outcome: TurnOutcome) -> Step {
        Step {
            status: outcome.status,
            error: outcome.error,
            error_kind: outcome.error_kind,
            text: outcome.text,
            usage: outcome.usage,
            cost_usd: outcome.cost_usd,
        }
    }
}

impl Step {
    fn failed(error: String) -> Step {
        Step {
            status: TurnStatus::Failed,
            error: Some(error),
            error_kind: None,
            text: String::new(),
            usage: Usage::default(),
            cost_usd: None,
        }
    }
}

fn failed(mut done: Orchestrated, error: String) -> Orchestrated {
    done.status = TurnStatus::Failed;
    done.error = Some(error);
    done
}

/// The input of a layer after the first: the user's words and what the layer before said.
pub fn handoff_text(input: &str, from: &str, text: &str) -> String {
    format!("{input}\n\n---\nThe previous layer ({from}) handed over:\n\n{text}")
}

fn worker_input(task: &str, input: &str) -> String {
    format!(
        "Your task:\n\n{task}\n\n---\nIt is one part of the user's request, given here for \
         context; do only your task:\n\n{input}"
    )
}

/// Workers' or subagents' results in task order. The step is interrupted if any was, and
/// failed only when every one failed; a failed one is reported with its task.
fn join_results(tasks: &[String], results: Vec<Step>) -> Step {
    let mut text = String::new();
    let mut usage = Usage::default();
    let mut cost = None;
    let mut interrupted = false;
    let mut failures = Vec::new();
    for (k, (task, step)) in tasks.iter().zip(&results).enumerate() {
        usage.add(&step.usage);
        cost = add_cost(cost, step.cost_usd);
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&format!("## Task {}: {}\n\n", k + 1, first_line(task)));
        match step.status {
            TurnStatus::Completed => text.push_str(step.text.trim()),
            TurnStatus::Interrupted => {
                interrupted = true;
                text.push_str("(interrupted)");
            }
            TurnStatus::Failed => {
                let why = step.error.as_deref().unwrap_or("no reason given");
                failures.push(format!("task {} ({}): {why}", k + 1, first_line(task)));
                text.push_str(&format!("(failed: {why})"));
            }
        }
    }
    let all_failed = !results.is_empty() && failures.len() == results.len();
    Step {
        status: if interrupted {
            TurnStatus::Interrupted
        } else if all_failed {
            TurnStatus::Failed
        } else {
            TurnStatus::Completed
        },
        error: (!failures.is_empty()).then(|| failures.join("; ")),
        // Every worker failed the same way: the layer did.
        error_kind: if all_failed {
            common_kind(results.iter().map(|step| step.error_kind))
        } else {
            None
        },
        text,
        usage,
        cost_usd: cost,
    }
}

/// The kind all of `kinds` are, if they are one.
fn common_kind(mut kinds: impl Iterator<Item = Option<TurnErrorKind>>) -> Option<TurnErrorKind> {
    let first = kinds.next()??;
    kinds.all(|k| k == Some(first)).then_some(first)
}

/// What the next layer (or the dispatching model) is told of a merge: `ids` are the
/// agents in task order, so task numbers can be named.
fn merge_text(merge: &Merge, ids: &[String]) -> String {
    let task = |agent: &str| {
        ids.iter()
            .position(|id| id == agent)
            .map_or_else(|| agent.to_string(), |k| format!("task {}", k + 1))
    };
    let list = |agents: &mut dyn Iterator<Item = String>| agents.collect::<Vec<_>>().join(", ");
    let mut text = String::from("\n\n---\nThe tasks ran in git worktrees of their own. ");
    if let Some(error) = &merge.error {
        text.push_str(&format!(
            "Their changes could not be merged into the folder: {error}. "
        ));
    } else if merge.merged.is_empty() {
        text.push_str("None of them changed a file that was merged into the folder. ");
    } else {
        text.push_str(&format!(
            "The changes of {} were merged into the folder ({} file{}). ",
            list(&mut merge.merged.iter().map(|a| task(a))),
            merge.files,
            if merge.files == 1 { "" } else { "s" }
        ));
    }
    if let Some(conflict) = &merge.conflict {
        text.push_str(&format!(
            "The merge stopped at {}: its changes conflict with those merged before it in {}. ",
            task(&conflict.agent_id),
            conflict.files.join(", ")
        ));
    }
    for kept in &merge.kept {
        let why = match kept.reason {
            KeptReason::Unfinished => "it did not finish",
            KeptReason::Conflict => "its changes conflict",
            KeptReason::NotMerged => "it came after the conflict",
        };
        text.push_str(&format!(
            "{} was not merged ({why}): its branch {} is kept, worktree {}. ",
            capitalised(&task(&kept.agent_id)),
            kept.branch,
            kept.path
        ));
    }
    text.trim_end().to_string()
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    if line.chars().count() > 80 {
        let cut: String = line.chars().take(79).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

/// `assign_tasks`: the task list the next (parallel) layer fans out.
struct AssignTasks {
    next: String,
    tasks: Arc<Mutex<Option<Vec<String>>>>,
}

#[derive(Deserialize)]
struct AssignArgs {
    tasks: Vec<String>,
}

impl Tool for AssignTasks {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "assign_tasks".into(),
            description: format!(
                "Hand independent tasks to the next layer ({}), which runs one worker per \
                 task, in parallel. Each task must stand on its own: say what to do, where, \
                 and what done looks like. Calling it again replaces the list.",
                self.next
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "tasks": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "One self-contained task per entry."
                    }
                },
                "required": ["tasks"],
                "additionalProperties": false
            }),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: serde_json::Value, _cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: AssignArgs = parse_args(args)?;
            let tasks: Vec<String> = args
                .tasks
                .into_iter()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect();
            let n = tasks.len();
            *self.tasks.lock().unwrap_or_else(|p| p.into_inner()) = Some(tasks);
            Ok(ToolOutput::text(if n == 0 {
                format!(
                    "No tasks: the next layer ({}) runs once, as one agent.",
                    self.next
                )
            } else {
                format!(
                    "{n} task{} assigned to the next layer ({}).",
                    if n == 1 { "" } else { "s" },
                    self.next
                )
            }))
        })
    }
}

/// `dispatch`: the model starts subagents for tasks it chooses, run concurrently.
struct Dispatch {
    orchestrator: Orchestrator,
    /// The agent that dispatches (its events' tag).
    parent: Option<String>,
    /// The dispatching layer: its model and tools are a subagent's defaults.
    layer: Layer,
}

#[derive(Deserialize)]
struct DispatchArgs {
    tasks: Vec<DispatchTask>,
}

#[derive(Deserialize)]
struct DispatchTask {
    task: String,
    #[serde(default)]
    agent: Option<String>,
}

impl Tool for Dispatch {
    fn spec(&self) -> ToolSpec {
        let mut description = String::from(
            "Start subagents, each with its own context, for tasks you choose; they run \
             concurrently and you get each one's final answer. Use it for independent work \
             (searching, reviewing, separate changes). Each task must stand on its own.",
        );
        if !self.orchestrator.agents.is_empty() {
            description.push_str("\n\nNamed agents (`agent`):");
            for def in self.orchestrator.agents.iter() {
                description.push_str(&format!("\n- {}: {}", def.name, def.description));
            }
        }
        ToolSpec {
            name: "dispatch".into(),
            description,
            input_schema: json!({
                "type": "object",
                "properties": {
                    "tasks": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "task": {"type": "string", "description": "What the subagent is to do."},
                                "agent": {"type": "string", "description": "A named agent to run it; a general one when absent."}
                            },
                            "required": ["task"]
                        }
                    }
                },
                "required": ["tasks"],
                "additionalProperties": false
            }),
        }
    }

    fn call<'a>(&'a self, args: serde_json::Value, _cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: DispatchArgs = parse_args(args)?;
            if args.tasks.is_empty() {
                return Err(ToolError::InvalidArguments(
                    "no tasks: give at least one".into(),
                ));
            }
            let o = &self.orchestrator;
            let mut runs = Vec::new();
            let mut wanted = Vec::new();
            for t in &args.tasks {
                let def = match &t.agent {
                    None => None,
                    Some(name) => match o.agents.iter().find(|d| &d.name == name) {
                        Some(def) => Some(def),
                        None => {
                            let known: Vec<&str> =
                                o.agents.iter().map(|d| d.name.as_str()).collect();
                            return Err(ToolError::InvalidArguments(format!(
                                "there is no agent named {name:?}; {}",
                                if known.is_empty() {
                                    "leave `agent` out for a general subagent".to_string()
                                } else {
                                    format!("the agents are: {}", known.join(", "))
                                }
                            )));
                        }
                    },
                };
                let n = o.next_agent.fetch_add(1, Ordering::SeqCst);
                let mut run = AgentRun::of_layer(
                    &self.layer,
                    Some(format!("agent-{n}")),
                    AgentKind::Dispatched,
                );
                run.name = def.map_or_else(|| "general".to_string(), |d| d.name.clone());
                run.instructions = def.map(|d| d.instructions.clone()).unwrap_or_default();
                run.base = def.is_none_or(|d| d.base);
                if let Some(def) = def {
                    if def.model.is_some() {
                        run.model = def.model.clone();
                    }
                    // An agent's tools narrow the dispatching layer's; they never widen them.
                    if let Some(tools) = &def.tools {
                        run.tools = Some(match &self.layer.tools {
                            Some(layer) => tools
                                .iter()
                                .filter(|t| layer.contains(t))
                                .cloned()
                                .collect(),
                            None => tools.clone(),
                        });
                    }
                    run.disallowed.extend(def.disallowed.iter().cloned());
                    if let Some(skills) = &def.skills {
                        run.skills = Some(
                            skills
                                .iter()
                                .filter(|s| run.offers_skill(s))
                                .cloned()
                                .collect(),
                        );
                    }
                }
                // No recursion: a subagent neither dispatches nor assigns.
                run.disallowed
                    .extend(["assign_tasks".to_string(), "dispatch".to_string()]);
                let isolation = def
                    .and_then(|d| d.isolation)
                    .or(self.layer.isolation)
                    .unwrap_or(o.isolation);
                wanted.push(isolation == Isolation::Worktree);
                runs.push((t.task.clone(), run));
            }
            let mut agents: Vec<AgentRun> = Vec::new();
            let mut tasks: Vec<String> = Vec::new();
            for (task, run) in runs {
                tasks.push(task);
                agents.push(run);
            }
            let isolated = o.isolate(&mut agents, &wanted).await;
            let ids: Vec<String> = agents.iter().filter_map(|r| r.id.clone()).collect();
            let runs: Vec<(String, AgentRun)> = tasks.iter().cloned().zip(agents).collect();
            let limit = Arc::new(Semaphore::new(
                self.layer.parallel_max.clamp(1, DEFAULT_PARALLEL_MAX * 4),
            ));
            let results = futures::future::join_all(runs.into_iter().map(|(task, run)| {
                let limit = Arc::clone(&limit);
                let parent = self.parent.clone();
                async move {
                    let _permit = limit.acquire_owned().await.ok();
                    o.subagent(parent, run, task.clone(), None, task).await
                }
            }))
            .await;
            let merged = match isolated {
                Some(isolated) => Some(
                    o.merge_back(self.parent.clone(), None, isolated, &ids, &results)
                        .await,
                ),
                None => None,
            };
            let mut joined = join_results(&tasks, results);
            if let Some(report) = merged {
                joined.text.push_str(&report);
            }
            {
                let mut used = o.dispatched.lock().unwrap_or_else(|p| p.into_inner());
                used.0.add(&joined.usage);
                used.1 = add_cost(used.1, joined.cost_usd);
            }
            match joined.status {
                TurnStatus::Interrupted => Err(ToolError::Cancelled),
                _ => Ok(ToolOutput::text(joined.text)),
            }
        })
    }
}
