//! The turn actor: one turn at a time per session, in the order inputs were queued. A turn
//! prepares its provider, gate and tools, runs the agent loop while the checkpoint baseline is
//! walked, records what changed, stores its context, and only then says it finished.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use stepper_engine::LlmProvider;
use stepper_engine::catalogue::ModelInfo;
use stepper_engine::compaction::CompactionPlan;
use stepper_engine::config::layers::{self, AgentDef, Layer, Layers};
use stepper_engine::config::{extensions, memory};
use stepper_engine::hooks::HookEvent;
use stepper_engine::hooks::TurnHooks;
use stepper_engine::orchestrator::{LayerContext, Orchestrator, context_key};
use stepper_engine::tool::Tool;

use super::extensions::{SkillTool, invoke, render};
use super::hooks::{HookRunner, HookSet, SessionHooks};
use stepper_engine::gate::Rule;

use stepper_engine::config::{SandboxMode, Settings};
use stepper_engine::gate::Policy;
use stepper_engine::prompt::Base;
use stepper_engine::redact::Redactor;
use stepper_engine::tool::{NoOutput, ToolCx, ToolSource};
use stepper_engine::{ChatMessage, ChatRequest, EventSink, ModelRef, agent::SinkError};
use stepper_protocol::session::Env;
use stepper_protocol::{AppEvent, TurnErrorKind, TurnStatus};
use stepper_providers::replay::Recorder;
use stepper_providers::{ResolveContext, Resolved};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::HubDeps;
use super::approvals::SessionGate;
use super::builtin::Builtin;
use super::context::{ContextError, MAIN_LAYER, context_rows, history};
use super::env::{login_env, tool_env};
use super::host::TurnHost;
use super::log::{EventLog, LogError};
use super::mcp::McpSettings;
use super::session::{LiveSession, QueuedInput, Running};
use super::settings::SettingsError;

/// Why a turn could not start; its `TurnFinished` says so (`failed`, with this message).
#[derive(Debug, thiserror::Error)]
enum TurnError {
    #[error(transparent)]
    Context(#[from] ContextError),
    #[error(transparent)]
    Model(#[from] stepper_engine::model::BadModelRef),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Provider(#[from] stepper_engine::ProviderError),
}

/// The longest answer asked of a model, whatever larger limit it has: long enough for any
/// edit, short enough not to eat rate limits that count the limit up front.
pub(super) const MAX_TOKENS: u32 = 32_000;

/// What a turn runs with.
pub(super) struct Prepared {
    pub(super) resolved: Resolved,
    pub(super) settings: Arc<Settings>,
    /// The user's own settings: where their keys may go.
    pub(super) user: Arc<Settings>,
    /// What the tools run with: the login environment overlaid with the session's, less
    /// the provider keys (see `tool_env`).
    pub(super) env: Env,
    /// Every credential the daemon knows of, taken out of tool output.
    pub(super) secrets: Vec<String>,
    pub(super) cwd: PathBuf,
    /// The environment providers of other layers' models are resolved with.
    pub(super) effective: Env,
}

impl LiveSession {
    pub(super) async fn run_turn(&self, input: QueuedInput, deps: &HubDeps) {
        let running = Running::default();
        let (turn, model, env) = {
            let mut state = self.state();
            state.turns += 1;
            state.running = Some(running.clone());
            (state.turns, state.model.clone(), state.env.clone())
        };
        self.open_steering();
        deps.running.send_modify(|n| *n += 1);
        let status = self
            .turn_body(turn, &input, &model, &env, running, deps)
            .await;
        if let Err(e) = status {
            tracing::error!(session = %self.id, turn, error = %e, "turn could not be recorded");
        }
        {
            let mut state = self.state();
            state.running = None;
            state.active_policy = None;
        }
        self.close_steering().await;
        deps.running.send_modify(|n| *n = n.saturating_sub(1));
    }

    async fn turn_body(
        &self,
        turn: u32,
        input: &QueuedInput,
        model: &str,
        env: &Env,
        running: Running,
        deps: &HubDeps,
    ) -> Result<(), LogError> {
        let Running { cancel, interrupt } = running;
        // A command the daemon answers itself (`/compact` is a turn of compaction, below).
        if let Some(builtin) =
            Builtin::parse(&input.text).filter(|b| !matches!(b, Builtin::Compact(_)))
        {
            let started = AppEvent::TurnStarted {
                input_id: input.input_id.clone(),
                text: input.text.clone(),
                model: model.to_string(),
            };
            self.log.append(Some(turn), started).await?;
            return self
                .builtin_turn(turn, builtin, input.by.clone(), deps)
                .await;
        }
        // The history read below is complete without a flush: each turn's end (with its
        // context) is committed before the next turn starts, and the other context writes
        // go to the store directly.
        let stored = history(&deps.store, &self.id, MAIN_LAYER).await;
        // A custom command or a skill the user typed: its model, if it names one, runs it.
        let folder = self.state().cwd.clone();
        let ext = deps
            .extensions
            .get(&folder, env.get("HOME").map(std::path::Path::new))
            .await;
        let invoked = invoke(&ext, &input.text, &self.id);
        let model = invoked
            .as_ref()
            .and_then(|i| i.model.clone())
            .unwrap_or_else(|| model.to_string());
        let model = model.as_str();
        let started = AppEvent::TurnStarted {
            input_id: input.input_id.clone(),
            text: input.text.clone(),
            model: model.to_string(),
        };
        self.log.append(Some(turn), started).await?;

        let consulted = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let prepared = match stored {
            Ok(messages) => self.prepare(model, env, deps).await.map(|p| (p, messages)),
            Err(e) => Err(TurnError::from(e)),
        };
        let said = Mutex::new(input.text.clone());
        let (status, error, error_kind, contexts) = match prepared {
            Err(e) => {
                let kind = matches!(e, TurnError::Provider(_)).then_some(TurnErrorKind::Provider);
                (TurnStatus::Failed, Some(e.to_string()), kind, Vec::new())
            }
            // Another agent CLI runs the whole turn.
            Ok((prepared, _)) if prepared.resolved.backend.is_some() => {
                let (status, error, contexts) = self
                    .backend_turn(turn, &input.text, prepared, &consulted, &cancel, deps)
                    .await?;
                (status, error, None, contexts)
            }
            Ok((prepared, messages)) => {
                // A session that left its CLI back-end lets its process go (the
                // conversation's id stays, for a return).
                if let Some(backend) = self.backend.lock().await.as_mut() {
                    backend.shut().await;
                }
                let Prepared {
                    resolved,
                    settings,
                    user,
                    env,
                    effective,
                    secrets,
                    cwd,
                    ..
                } = prepared;
                let home = env.get("HOME").map(PathBuf::from);
                let memory =
                    instructions(&cwd, home.as_deref(), &settings, deps.settings.config_dir())
                        .await;
                let mut system = memory.text;
                let path_rules = Arc::new(memory.rules);
                let hook_set = Arc::new(HookSet::parse(settings.hooks.as_ref()));
                let mode = self.state().mode.unwrap_or_else(|| settings.mode());
                let hooks = (!hook_set.is_empty()).then(|| {
                    Arc::new(HookRunner {
                        set: Arc::clone(&hook_set),
                        session_id: self.id.clone(),
                        prompt_id: Some(input.input_id.clone()).filter(|id| !id.is_empty()),
                        transcript: deps.transcripts.path(&self.id),
                        cwd: cwd.clone(),
                        env: env.clone(),
                        mode,
                        log: self.log.clone(),
                        turn: Some(turn),
                        redactor: Redactor::new(secrets.clone()),
                        cancel: cancel.clone(),
                    })
                });
                // `/compact [what to keep]`: the conversation is compacted now, as a turn
                // of its own, so it waits for the turn before it like any input.
                if let Some(Builtin::Compact(instructions)) = Builtin::parse(&input.text) {
                    let summarizer =
                        summarizer((&settings, &user), &deps.providers, &effective, &cwd)
                            .unwrap_or_else(|| {
                                let id = ModelRef::parse(model)
                                    .map_or_else(|_| model.to_string(), |m| m.model);
                                (Arc::clone(&resolved.provider), id)
                            });
                    let mut request = ChatRequest::new(summarizer.1.clone(), messages);
                    request.cache = settings.prompt_cache();
                    // Its figures count what the next model call sends, as automatic
                    // compaction's and `/context` do: the conversation and all the rest.
                    let fixed = overhead(deps, self).await.map_or(0, |o| o.tokens());
                    return self
                        .compact_turn(
                            turn,
                            (request, fixed),
                            summarizer.0,
                            instructions,
                            hooks,
                            &cancel,
                        )
                        .await;
                }
                let mut notices = memory.notices;
                // A folder the user has not trusted: what its files asked for is said once.
                let trust = super::trust::report(deps, &cwd, home.as_deref()).await.ok();
                let trusted = trust.as_ref().is_some_and(|t| t.trust.trusted);
                notices.extend(trust.as_ref().and_then(super::trust::Report::notice));
                // A project's command runs programs and allows tools only once trusted.
                let runs = invoked.as_ref().is_none_or(|i| !i.project || trusted);
                notices.extend(
                    hook_set
                        .problems
                        .iter()
                        .map(|p| format!("setting.json: {p}")),
                );
                notices.extend(ext.problems.iter().map(|p| {
                    if ext.loaded(&p.path) {
                        p.to_string()
                    } else {
                        format!("{p} — this command or skill is left out until it is fixed")
                    }
                }));
                // How the turn runs: the layers of stepper.md, the subagents of the
                // project and the user. A broken stepper.md fails the turn at once.
                let plan = plan(&cwd, home.as_deref(), deps).await;
                // A problem in an agent that still loads (a tool it runs without) is said
                // as it is; one that kept the file from loading says so.
                notices.extend(plan.agent_problems.iter().map(|p| {
                    if plan.agents.iter().any(|a| a.path == p.path) {
                        p.to_string()
                    } else {
                        format!("{p} — this subagent definition is left out until it is fixed")
                    }
                }));
                if !plan.problems.is_empty() {
                    return self
                        .fail_before_model(turn, notices, plan.failure(), &input.text)
                        .await;
                }
                // What they name that this folder lacks: skills, the skill tool, models.
                let missing = super::references::check(
                    &plan.layers,
                    &plan.agents,
                    &ext.skills,
                    &deps.providers,
                    &settings,
                );
                notices.extend(super::references::notices(&missing));
                // MCP servers' tools; a server that fails is left out, with a notice.
                let user_settings = deps.settings.get(None).await.unwrap_or_default();
                let here = deps.settings.folder(Some(&cwd)).await.unwrap_or_default();
                // With `mcpSampling`, servers may ask the session's model (each request asked).
                let sampler = (settings.mcp_sampling == Some(true)).then(|| {
                    Arc::new(super::mcp::ModelSampler {
                        provider: Arc::clone(&resolved.provider),
                        model: ModelRef::parse(model)
                            .map_or_else(|_| model.to_string(), |m| m.model),
                        cancel: cancel.clone(),
                    }) as Arc<dyn stepper_engine::tool::Sampler>
                });
                let (mcp_tools, mcp_notices) = deps
                    .mcp
                    .tools(&cwd, McpSettings::of(&user_settings, &here), &env, sampler)
                    .await;
                notices.extend(mcp_notices);
                // `/mcp__server__prompt args`: the server's prompt is the input.
                let mut prompted = None;
                if invoked.is_none() {
                    let servers = mcp_tools.as_ref().map(|t| &*t.servers);
                    match stepper_mcp::prompts::expand(servers, &input.text).await {
                        Some(Ok(text)) => prompted = Some(text),
                        Some(Err(why)) => {
                            return self
                                .fail_before_model(turn, notices, why, &input.text)
                                .await;
                        }
                        None => {}
                    }
                }
                // The skills the model may use: named in the system prompt, loaded by a tool.
                let skills = SkillTool {
                    skills: ext.model_invocable(),
                    session: self.id.clone(),
                };
                let blocked = match &hooks {
                    Some(runner) => self.prompt_hooks(runner, turn, &input.text).await,
                    None => Ok(Vec::new()),
                };
                let added = match blocked {
                    Ok(added) => added,
                    Err(reason) => {
                        let why = format!("a UserPromptSubmit hook blocked this prompt: {reason}");
                        return self
                            .fail_before_model(turn, notices, why, &input.text)
                            .await;
                    }
                };
                if !added.is_empty() {
                    if !system.is_empty() {
                        system.push_str("\n\n");
                    }
                    system.push_str("# From the user's hooks\n\n");
                    system.push_str(&added.join("\n\n"));
                }
                for message in notices {
                    self.notice_once(turn, message).await;
                }
                let mut policy = self.policy(turn, &settings, &cwd, home.as_deref()).await;
                // What the invoked command or skill may use without asking, for this turn.
                for text in invoked
                    .iter()
                    .filter(|_| runs)
                    .flat_map(|i| i.allowed_tools.iter())
                {
                    match Rule::parse(text, &cwd, home.as_deref()) {
                        Ok(rule) => policy.allow.push(rule),
                        Err(e) => {
                            self.notice_once(turn, format!("allowed-tools: {text:?}: {e}"))
                                .await;
                        }
                    }
                }
                let sandbox = self.sandbox_plan(&settings, &cwd, &env, turn, deps).await;
                policy.sandbox = sandbox.info.state;
                policy.sandbox_confines_reads = sandbox.confines_reads;
                let policy = Arc::new(Mutex::new(policy));
                self.state().active_policy = Some(Arc::clone(&policy));
                let (baseline_taken, baseline) = watch::channel(false);
                let gate = SessionGate {
                    consulted: Arc::clone(&consulted),
                    policy,
                    approvals: Arc::clone(&self.approvals),
                    log: self.log.clone(),
                    turn,
                    cancel: cancel.clone(),
                    baseline,
                    hooks: hooks.clone(),
                    agent: None,
                    always: Arc::clone(&self.always),
                    folder: None,
                    read_only: None,
                };
                let cx = ToolCx {
                    cwd: cwd.clone(),
                    project_root: cwd.clone(),
                    env,
                    cancel: cancel.clone(),
                    gate: Arc::new(gate.clone()),
                    output: Arc::new(NoOutput),
                    sandbox: sandbox.command.map(Arc::new),
                    hint: None,
                };
                // What the project holds before the turn (changes made outside stepper since
                // the last turn are taken as they are), walked while the model is called:
                // the gate holds every tool until it is done.
                let baseline = async {
                    if let Err(e) = self.checkpoints.sync(&deps.store).await {
                        let message = format!("file checkpoints are off for this turn: {e}");
                        let _ = self
                            .log
                            .append(Some(turn), AppEvent::Notice { message })
                            .await;
                    }
                    let _ = baseline_taken.send(true);
                };
                let layered = plan.layers.is_layered();
                let layers = if layered {
                    plan.layers.layers.clone()
                } else {
                    vec![Layer::plain(MAIN_LAYER)]
                };
                let mut histories = HashMap::new();
                histories.insert(MAIN_LAYER.to_string(), messages);
                for i in 0..layers.len().saturating_sub(1) {
                    let key = context_key(&layers, i);
                    match history(&deps.store, &self.id, &key).await {
                        Ok(h) => {
                            histories.insert(key, h);
                        }
                        Err(e) => {
                            return self
                                .fail_before_model(turn, Vec::new(), e.to_string(), &input.text)
                                .await;
                        }
                    }
                }
                // A command's `!` lines and `@` files are taken once the gate can answer
                // (after the baseline), then the model gets the whole. Git's state for the
                // model is read while the baseline is walked.
                let run = async {
                    let take = self.steering_taker();
                    let render_cx = cx.clone();
                    // What the model is told of where it works.
                    let (environment, moment) =
                        super::environment::gather(super::environment::Facts {
                            cwd: &cwd,
                            env: &render_cx.env,
                            mode,
                            sandbox: if render_cx.sandbox.is_some() {
                                sandbox.info.mode
                            } else {
                                SandboxMode::Off
                            },
                            network: sandbox.info.network,
                            mcp_servers: mcp_tools
                                .as_ref()
                                .map(|t| t.servers.slots.iter().map(|s| s.name.clone()).collect())
                                .unwrap_or_default(),
                            trusted,
                        })
                        .await;
                    let chosen = self.instructions();
                    // Worktrees run git with the repository's own filters: only in a folder
                    // the user trusts.
                    let worktrees = if trusted {
                        let part = stepper_protocol::session::random_part(&self.id);
                        let label = format!("{}-t{turn}", &part[..part.len().min(8)]);
                        Ok(Arc::new(super::worktree::Worktrees::new(
                            cwd.clone(),
                            render_cx.env.clone(),
                            label,
                        )))
                    } else {
                        Err("worktrees need a folder you trust (git would run the \
                             repository's own programs): trust it with `stepper trust`"
                            .to_string())
                    };
                    let read_only = super::sandbox::ReadOnly::new(
                        Arc::clone(&deps.sandboxes),
                        settings.sandbox(),
                        cwd.clone(),
                        render_cx.env.clone(),
                    );
                    let host = Arc::new(TurnHost {
                        main_model: model.to_string(),
                        main: (resolved.provider, resolved.info, resolved.kind),
                        providers: deps.providers.clone(),
                        settings: Arc::clone(&settings),
                        user,
                        effective,
                        cwd: cwd.clone(),
                        memory: system,
                        path_rules,
                        instructions: chosen.over(&settings.instructions()),
                        environment: environment.render(),
                        facts: environment,
                        moment: moment.render(),
                        tools: deps.tools.clone(),
                        mcp: mcp_tools.map(|t| t as Arc<dyn ToolSource>),
                        skills,
                        cx,
                        gate,
                        hooks,
                        secrets,
                        steering: take,
                        log: self.log.clone(),
                        turn,
                        cancel: cancel.clone(),
                        interrupt,
                        worktrees,
                        sandboxes: (Arc::clone(&deps.sandboxes), self.state().sandbox),
                        places: Mutex::default(),
                        read_only,
                    });
                    let mut orchestrator =
                        Orchestrator::new(host, plan.agents, settings.dispatch == Some(true));
                    // As Claude Code offers its Task tool: whenever there are agent files,
                    // unless the settings say `"dispatch": false`.
                    orchestrator.answering_dispatches =
                        settings.dispatch.is_none() && !orchestrator.agents.is_empty();
                    orchestrator.isolation = settings.worker_isolation();
                    let mut text = input.text.clone();
                    if let Some(prompted) = prompted {
                        text = prompted;
                        *said.lock().unwrap_or_else(|p| p.into_inner()) = text.clone();
                    }
                    if let Some(invoked) = &invoked {
                        match render(&invoked.body, &deps.tools, &render_cx, runs).await {
                            Ok(rendered) => {
                                text = invoked.framed(&rendered);
                                *said.lock().unwrap_or_else(|p| p.into_inner()) = text.clone();
                            }
                            Err(error) => {
                                return stepper_engine::orchestrator::Orchestrated {
                                    status: TurnStatus::Failed,
                                    error: Some(error),
                                    error_kind: None,
                                    text: String::new(),
                                    usage: Default::default(),
                                    cost_usd: None,
                                    contexts: Vec::new(),
                                };
                            }
                        }
                    }
                    orchestrator.run(&layers, layered, &text, histories).await
                };
                let ((), done) = tokio::join!(baseline, run);
                (done.status, done.error, done.error_kind, done.contexts)
            }
        };
        // What the turn's commands left running outside their groups (`setsid cmd &`) ends
        // with the turn; its registry entries go once nothing carries their token. So does
        // what was re-parented to the daemon, its reaper killed.
        if consulted.load(std::sync::atomic::Ordering::SeqCst) {
            let swept = tokio::task::spawn_blocking(|| {
                stepper_process::registry::sweep() + stepper_process::lineage::reap_adopted().killed
            })
            .await
            .unwrap_or(0);
            if swept > 0 {
                tracing::info!(session = %self.id, turn, killed = swept, "killed what the turn's commands left running");
            }
        }
        // A turn whose tools never asked the gate changed nothing: every tool that acts
        // asks first. Its files are not walked again; what changes outside stepper is taken
        // at the next turn's start.
        let walked = if consulted.load(std::sync::atomic::Ordering::SeqCst) {
            self.checkpoints.record(&deps.store, &self.id, turn).await
        } else {
            Ok(0)
        };
        match walked {
            Ok(0) => {}
            Ok(n) => {
                let files = u32::try_from(n).unwrap_or(u32::MAX);
                self.log
                    .append(Some(turn), AppEvent::CheckpointCreated { files })
                    .await?;
            }
            Err(e) => tracing::error!(session = %self.id, turn, error = %e, "checkpoint failed"),
        }
        let said = said.into_inner().unwrap_or_else(|p| p.into_inner());
        let contexts = if contexts.is_empty() {
            vec![said_only(&said)]
        } else {
            contexts
        };
        self.finish_turn(turn, status, error, error_kind, contexts)
            .await
    }

    /// The context and the end of the turn in one commit: a client that sees
    /// TurnFinished can count on the next turn seeing this one whole.
    pub(super) async fn finish_turn(
        &self,
        turn: u32,
        status: TurnStatus,
        error: Option<String>,
        error_kind: Option<TurnErrorKind>,
        contexts: Vec<LayerContext>,
    ) -> Result<(), LogError> {
        // A turn the store's trouble ended (see `LiveSession::start`) failed, and says why.
        let (status, error, error_kind) = match self.log.trouble() {
            Some(why) if status == TurnStatus::Interrupted => (
                TurnStatus::Failed,
                Some(why.to_string()),
                Some(TurnErrorKind::Store),
            ),
            _ => (status, error, error_kind),
        };
        let rows = contexts
            .iter()
            .map(|c| context_rows(turn, &c.key, &c.messages, c.replace))
            .collect();
        // An interrupted turn says so only when it was not the user's doing.
        let error = match (status, error) {
            (TurnStatus::Interrupted, None) => self
                .state()
                .running
                .as_ref()
                .and_then(|r| r.interrupt.why().turn_error())
                .map(String::from),
            (_, error) => error,
        };
        self.log
            .append_with_context(
                Some(turn),
                AppEvent::TurnFinished {
                    status,
                    error,
                    error_kind,
                },
                rows,
            )
            .await?;
        // The turn is over once its end is queued: a client that sees `TurnFinished` may
        // rewind at once (a rewind flushes the log first, so it comes after this commit).
        {
            let mut state = self.state();
            state.running = None;
            state.active_policy = None;
        }
        match self.log.flush().await {
            // The end waits in the log's backlog, stored once the store writes again.
            Ok(_) | Err(LogError::Unavailable(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// End a turn that cannot reach the model: its notices, then `TurnFinished` failed with
    /// `error`; the user's words stay in the conversation.
    async fn fail_before_model(
        &self,
        turn: u32,
        notices: Vec<String>,
        error: String,
        said: &str,
    ) -> Result<(), LogError> {
        for message in notices {
            self.notice_once(turn, message).await;
        }
        self.finish_turn(
            turn,
            TurnStatus::Failed,
            Some(error),
            None,
            vec![said_only(said)],
        )
        .await
    }

    /// Say `message` in the session unless it was said already.
    async fn notice_once(&self, turn: u32, message: String) {
        if self.state().memory_noticed.insert(message.clone()) {
            let _ = self
                .log
                .append(Some(turn), AppEvent::Notice { message })
                .await;
        }
    }

    /// `SessionStart` (the first turn this daemon runs of the session) and
    /// `UserPromptSubmit`: what they add to the context, or why the prompt is blocked.
    async fn prompt_hooks(
        &self,
        runner: &HookRunner,
        turn: u32,
        prompt: &str,
    ) -> Result<Vec<String>, String> {
        let mut added = Vec::new();
        let first = !std::mem::replace(&mut self.state().hooks_started, true);
        let cleared = std::mem::take(&mut self.state().cleared);
        if first && runner.set.has(HookEvent::SessionStart) {
            let source = match (cleared, turn) {
                (true, _) => "clear",
                (false, 1) => "startup",
                (false, _) => "resume",
            };
            let ran = runner
                .run(
                    HookEvent::SessionStart,
                    Some(source),
                    serde_json::json!({"source": source}),
                )
                .await;
            added.extend(
                HookRunner::context_or_block(HookEvent::SessionStart, &ran).unwrap_or_default(),
            );
        }
        if runner.set.has(HookEvent::UserPromptSubmit) {
            let ran = runner
                .run(
                    HookEvent::UserPromptSubmit,
                    None,
                    serde_json::json!({"prompt": prompt}),
                )
                .await;
            added.extend(HookRunner::context_or_block(
                HookEvent::UserPromptSubmit,
                &ran,
            )?);
        }
        Ok(added)
    }

    /// The permission policy of a turn: the settings' rules, the session's mode. Bad rules
    /// are said in notices and left out.
    pub(super) async fn policy(
        &self,
        turn: u32,
        settings: &Settings,
        cwd: &Path,
        home: Option<&Path>,
    ) -> Policy {
        let (mut policy, problems) =
            Policy::from_settings(settings.permissions.as_ref(), cwd, home);
        for problem in problems {
            let _ = self
                .log
                .append(
                    Some(turn),
                    AppEvent::Notice {
                        message: format!("setting.json: {problem}"),
                    },
                )
                .await;
        }
        if let Some(mode) = self.state().mode {
            policy.mode = mode;
        }
        // What "always" allowed earlier in the session.
        policy.allow.extend(
            self.always
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned(),
        );
        policy
    }

    /// The sandbox of this turn's commands. A sandbox that is wanted but cannot be applied
    /// is said once per session (a notice): its commands then ask as in `default` mode.
    async fn sandbox_plan(
        &self,
        settings: &Settings,
        cwd: &std::path::Path,
        env: &Env,
        turn: u32,
        deps: &HubDeps,
    ) -> super::sandbox::Plan {
        let chosen = self.state().sandbox;
        let plan = deps
            .sandboxes
            .plan(chosen, &settings.sandbox(), cwd, env)
            .await;
        if plan.info.state == stepper_protocol::SandboxState::Unavailable {
            let first = !std::mem::replace(&mut self.state().sandbox_noticed, true);
            if first {
                let message = format!(
                    "the sandbox ({}) is not available here: {}. Commands it would have \
                     confined ask first, as in the default mode",
                    plan.info.mode,
                    plan.info.reason.as_deref().unwrap_or("no reason given")
                );
                let _ = self
                    .log
                    .append(Some(turn), AppEvent::Notice { message })
                    .await;
            }
        }
        plan
    }

    /// The provider for this turn: settings for the session's folder, the model, the
    /// credentials, and a recorder around it when the session records.
    async fn prepare(&self, model: &str, env: &Env, deps: &HubDeps) -> Result<Prepared, TurnError> {
        let (cwd, record, from_client) = {
            let state = self.state();
            (
                state.cwd.clone(),
                state.record.clone(),
                state.env_from_client,
            )
        };
        let model_ref = ModelRef::parse(model)?;
        let settings = deps.settings.get(Some(&cwd)).await?;
        let user = deps.settings.get(None).await?;
        // A client's environment is whole: the login shell's fills gaps if it is read
        // already, and is not waited for — unless the provider finds no credentials without
        // it. An environment from the store (it keeps no secrets) waits for it.
        let overlay = |base: &Env| {
            let mut effective = base.clone();
            effective.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
            effective
        };
        let ready = deps.login_env.get();
        let mut effective = match (from_client, ready) {
            (true, Some(login)) => overlay(login),
            (true, None) => overlay(&Env::new()),
            (false, _) => overlay(login_env(deps).await),
        };
        let resolve = |effective: &Env| {
            let cx = ResolveContext {
                env: effective,
                settings: &settings,
                user: &user,
                cwd: &cwd,
            };
            deps.providers.resolve(&model_ref, &cx)
        };
        let mut resolved = match resolve(&effective) {
            Ok(resolved) => resolved,
            Err(_) if from_client && ready.is_none() => {
                effective = overlay(login_env(deps).await);
                resolve(&effective)?
            }
            Err(e) => return Err(e.into()),
        };
        let mut secrets = deps.providers.known_secrets(&settings, &effective);
        secrets.extend(resolved.secrets.iter().cloned());
        let record = record.or_else(|| settings.record.as_ref().map(|r| cwd.join(r)));
        if let Some(path) = record {
            let secrets = std::mem::take(&mut resolved.secrets);
            resolved.provider = Arc::new(Recorder::new(
                resolved.provider,
                path,
                model_ref.to_string(),
                secrets,
            ));
        }
        Ok(Prepared {
            resolved,
            env: tool_env(&effective, &settings),
            effective,
            settings,
            user,
            secrets,
            cwd,
        })
    }
}

/// The instructions a turn in `cwd` is given (`stepper.md`, `AGENTS.md`, `CLAUDE.md` and
/// their imports), read off the runtime.
pub(crate) async fn instructions(
    cwd: &std::path::Path,
    home: Option<&std::path::Path>,
    settings: &stepper_engine::config::Settings,
    config_dir: &std::path::Path,
) -> memory::Memory {
    let (cwd, home, config_dir) = (
        cwd.to_path_buf(),
        home.map(std::path::Path::to_path_buf),
        config_dir.to_path_buf(),
    );
    let cap = settings.memory_max_bytes.unwrap_or(memory::DEFAULT_CAP);
    tokio::task::spawn_blocking(move || memory::load(&cwd, &config_dir, home.as_deref(), cap))
        .await
        .unwrap_or_default()
}

pub(super) async fn run_inputs(
    session: Weak<LiveSession>,
    mut rx: mpsc::Receiver<QueuedInput>,
    deps: HubDeps,
) {
    loop {
        // A stopping daemon starts no turn: the input stays pending in the store and runs
        // when the daemon starts again, instead of starting now only to be interrupted.
        let Some(ended) = session.upgrade().map(|s| s.ended.clone()) else {
            break;
        };
        let input = tokio::select! {
            biased;
            () = deps.shutdown.cancelled() => break,
            () = ended.cancelled() => break,
            input = rx.recv() => match input {
                Some(input) => input,
                None => break,
            },
        };
        let Some(session) = session.upgrade() else {
            break;
        };
        // While the store cannot write, no turn starts: the input (stored already) waits
        // until it can, rather than run a turn nothing of which could be kept.
        let mut trouble = session.log.watch_trouble();
        let writable = tokio::select! {
            biased;
            () = deps.shutdown.cancelled() => false,
            () = ended.cancelled() => false,
            w = trouble.wait_for(|t| t.is_none()) => w.is_ok(),
        };
        if !writable {
            break;
        }
        session.run_turn(input, &deps).await;
        session.input_done();
    }
}

/// Where one agent's events go: the session's log, tagged with the agent.
pub(super) struct AgentSink<'a> {
    pub(super) log: &'a EventLog,
    pub(super) turn: u32,
    pub(super) agent: Option<String>,
}

impl EventSink for AgentSink<'_> {
    async fn emit(&self, event: AppEvent) -> Result<(), SinkError> {
        self.log
            .append_in(Some(self.turn), self.agent.clone(), event)
            .await
            .map_err(|e| SinkError(e.to_string()))
    }
}

/// The context a turn that never reached the model adds: the user's words.
fn said_only(text: &str) -> LayerContext {
    LayerContext {
        key: MAIN_LAYER.to_string(),
        messages: vec![ChatMessage::user(text.to_string())],
        replace: false,
    }
}

/// How a turn in a folder runs: its layers and the subagents it can dispatch.
struct TurnPlan {
    layers: Layers,
    problems: Vec<extensions::Problem>,
    agents: Vec<AgentDef>,
    agent_problems: Vec<extensions::Problem>,
}

impl TurnPlan {
    /// Why the turn cannot run, with the fix.
    fn failure(&self) -> String {
        let path = self
            .layers
            .path
            .as_ref()
            .map_or_else(|| "stepper.md".to_string(), |p| p.display().to_string());
        let listed: Vec<String> = self.problems.iter().map(|p| p.to_string()).collect();
        format!(
            "{path} has problems, so no layer ran:\n{}\nfix the file (`stepper config \
             --validate` lists its problems) and send the message again",
            listed.join("\n")
        )
    }
}

/// The names of the tools a layer may list.
pub(crate) fn tool_names(tools: &[Arc<dyn Tool>]) -> Vec<String> {
    let mut names: Vec<String> = tools.iter().map(|t| t.spec().name).collect();
    names.push("skill".into());
    // The provider's own search (see `hosted`).
    names.push("web_search".into());
    names
}

async fn plan(cwd: &Path, home: Option<&Path>, deps: &HubDeps) -> TurnPlan {
    let names = tool_names(&deps.tools);
    let (cwd, home, config_dir) = (
        cwd.to_path_buf(),
        home.map(Path::to_path_buf),
        deps.settings.config_dir().to_path_buf(),
    );
    tokio::task::spawn_blocking(move || {
        let known: Vec<&str> = names.iter().map(String::as_str).collect();
        let (layers, problems) = layers::load(&cwd, &config_dir, &known);
        let (agents, agent_problems) = layers::agents(&cwd, &config_dir, home.as_deref(), &known);
        TurnPlan {
            layers,
            problems,
            agents,
            agent_problems,
        }
    })
    .await
    .unwrap_or_else(|_| TurnPlan {
        layers: Layers::default(),
        problems: Vec::new(),
        agents: Vec::new(),
        agent_problems: Vec::new(),
    })
}

/// What a model call of a session sends besides its conversation, in estimated tokens, as
/// a turn now would send it: the system prompt (base instructions, environment, skills),
/// the memory files and the tools' definitions.
pub(crate) struct Overhead {
    pub(crate) model: String,
    pub(crate) info: ModelInfo,
    pub(crate) system: u64,
    pub(crate) memory: u64,
    pub(crate) tools: u64,
    pub(crate) threshold: f64,
}

impl Overhead {
    /// Its parts together.
    pub(crate) fn tokens(&self) -> u64 {
        self.system + self.memory + self.tools
    }
}

/// What a model call of `session` sends besides its conversation (see [`Overhead`]).
pub(crate) async fn overhead(
    deps: &HubDeps,
    session: &LiveSession,
) -> Result<Overhead, super::HubError> {
    use stepper_engine::compaction::tokens;
    let cwd = session.cwd();
    let home = session.env_and_mode().0.get("HOME").map(PathBuf::from);
    let settings = deps.settings.get(Some(&cwd)).await?;
    let model = session.model();
    let info = ModelRef::parse(&model)
        .map(|m| deps.providers.model_info(&m, &settings))
        .unwrap_or_default();
    let memory = instructions(&cwd, home.as_deref(), &settings, deps.settings.config_dir()).await;
    let ext = deps.extensions.get(&cwd, home.as_deref()).await;
    let skills = ext.model_invocable();
    let dialect = ModelRef::parse(&model)
        .map(|m| deps.providers.dialect_of(&m, &settings))
        .unwrap_or_default();
    let specs: Vec<_> = deps.tools.iter().map(|t| t.spec()).collect();
    let mut specs = dialect.offer(specs);
    // The base instructions and the environment, as a turn now would send them (the
    // environment's size without running git: it is a few hundred bytes).
    let base = session.instructions().over(&settings.instructions());
    let mut system = match base.base() {
        Base::Family => stepper_engine::prompt::base(dialect).len(),
        Base::Replaced(text) => text.len(),
        Base::Left => 0,
    } + base.append_system_prompt.as_ref().map_or(0, String::len)
        + ENVIRONMENT_BYTES;
    if !skills.is_empty() {
        let tool = SkillTool {
            skills,
            session: String::new(),
        };
        system += tool.listing_for(info.context_window()).len();
        specs.push(tool.spec());
    }
    Ok(Overhead {
        model,
        info,
        system: tokens(system),
        memory: tokens(memory.text.len()),
        tools: tokens(serde_json::to_string(&specs).map_or(0, |s| s.len())),
        threshold: settings.compaction_threshold(),
    })
}

/// `session/context`: what the session's next model call would send, by part.
pub(crate) async fn context_window(
    deps: &HubDeps,
    session: &LiveSession,
    session_id: &str,
) -> Result<stepper_protocol::methods::SessionContextResponse, super::HubError> {
    let overhead = overhead(deps, session).await?;
    // A stored context that cannot be read counts as empty here; the next turn says why.
    let messages = history(&deps.store, session_id, MAIN_LAYER)
        .await
        .map(|m| stepper_engine::compaction::messages_bytes(&m))
        .unwrap_or(0);
    let messages = stepper_engine::compaction::tokens(messages);
    let window = overhead.info.context_window();
    Ok(stepper_protocol::methods::SessionContextResponse {
        window,
        system: overhead.system,
        tools: overhead.tools,
        memory: overhead.memory,
        messages,
        free: window.saturating_sub(overhead.tokens() + messages),
        compact_at: CompactionPlan {
            threshold: overhead.threshold,
            window,
            summarizer: None,
        }
        .limit(),
        model: overhead.model,
    })
}

/// The summariser settings name (`compaction.model`, or its older name `provider`).
pub(super) fn summarizer(
    (settings, user): (&Settings, &Settings),
    providers: &stepper_providers::Providers,
    env: &Env,
    cwd: &Path,
) -> Option<(Arc<dyn LlmProvider>, String)> {
    let compaction = settings.compaction.as_ref()?;
    let model = compaction.model.as_ref().or(compaction.provider.as_ref())?;
    let model_ref = ModelRef::parse(model).ok()?;
    let cx = ResolveContext {
        env,
        settings,
        user,
        cwd,
    };
    let resolved = providers.resolve(&model_ref, &cx).ok()?;
    Some((resolved.provider, model_ref.model))
}

impl LiveSession {
    /// `/compact`: the session's conversation compacted on demand; the stored context is
    /// the compacted one from now on. `fixed`: the tokens a model call sends besides the
    /// conversation, counted in its figures.
    async fn compact_turn(
        &self,
        turn: u32,
        (request, fixed): (ChatRequest, u64),
        provider: Arc<dyn LlmProvider>,
        instructions: &str,
        hooks: Option<Arc<HookRunner>>,
        cancel: &CancellationToken,
    ) -> Result<(), LogError> {
        use stepper_engine::compaction::{messages_bytes, tokens};
        let instructions = (!instructions.is_empty()).then_some(instructions);
        let before_tokens = fixed + tokens(messages_bytes(&request.messages));
        self.log
            .append(
                Some(turn),
                AppEvent::CompactionStarted {
                    before_tokens,
                    manual: true,
                },
            )
            .await?;
        let hooks = hooks.map(|runner| SessionHooks {
            runner,
            stop_event: None,
            subagent: None,
        });
        if let Some(h) = &hooks {
            h.compacting("manual", instructions, false).await;
        }
        let done = stepper_engine::compaction::compact(
            &request,
            provider.as_ref(),
            &request.model,
            0,
            true,
            instructions,
            cancel,
        )
        .await;
        let changed = done.changed();
        if done.usage != stepper_protocol::Usage::default() {
            // The summary's model call, as the turn's usage.
            self.log
                .append(
                    Some(turn),
                    AppEvent::UsageUpdated {
                        usage: done.usage,
                        cost_usd: None,
                    },
                )
                .await?;
        }
        let status = if done.error.is_some() && !changed {
            TurnStatus::Failed
        } else {
            TurnStatus::Completed
        };
        let error = done.error.clone();
        self.log
            .append(
                Some(turn),
                AppEvent::CompactionFinished {
                    before_tokens,
                    after_tokens: fixed + tokens(messages_bytes(&done.messages)),
                    pruned: done.pruned,
                    summarized: done.summarized,
                    error: done.error,
                },
            )
            .await?;
        if let Some(h) = &hooks {
            h.compacting("manual", instructions, true).await;
        }
        let contexts = if changed {
            vec![LayerContext {
                key: MAIN_LAYER.to_string(),
                messages: done.messages,
                replace: true,
            }]
        } else {
            Vec::new()
        };
        let error = (status == TurnStatus::Failed).then_some(error).flatten();
        self.finish_turn(turn, status, error, None, contexts).await
    }
}

/// About what the environment and its context add to a request, for `/context`.
const ENVIRONMENT_BYTES: usize = 900;
