//! Preparing a turn: which kind it is, and what it runs with — its provider, settings,
//! environment and secrets ([`Setup`]); for a turn of stepper's own agents also its
//! instructions, hooks, policy, sandbox, MCP tools and plan ([`TurnContext`]). Preparing
//! announces the turn (`TurnStarted`, with the model that will run it) and says what the
//! folder's files got wrong, once per session.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use stepper_engine::config::memory::PathRule;
use stepper_engine::config::{PermissionMode, Settings};
use stepper_engine::gate::{Policy, Rule};
use stepper_engine::hooks::HookEvent;
use stepper_engine::orchestrator::context_key;
use stepper_engine::redact::Redactor;
use stepper_engine::{ChatMessage, ChatRequest, Media, ModelRef};
use stepper_mcp::McpTools;
use stepper_protocol::session::Env;
use stepper_protocol::{AppEvent, TurnErrorKind};
use stepper_providers::replay::Recorder;
use stepper_providers::{ResolveContext, Resolved};

use super::Turn;
use super::compact::{Compaction, summarizer};
use super::overhead::overhead;
use super::plan::{TurnPlan, instructions, plan};
use crate::hub::builtin::Builtin;
use crate::hub::context::{ContextError, MAIN_LAYER, history, load_media};
use crate::hub::env::{login_env, tool_env};
use crate::hub::extensions::{Invoked, SkillTool, invoke};
use crate::hub::hooks::{HookRunner, HookSet};
use crate::hub::log::LogError;
use crate::hub::mcp::McpSettings;
use crate::hub::sandbox;
use crate::hub::settings::SettingsError;
use crate::hub::trust;
use stepper_engine::config::extensions::Extensions;

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
    /// The input's attachments cannot go to this model, or are gone from the store.
    #[error("{0}")]
    Attachment(String),
}

/// Which kind of turn this is, with what it runs with.
pub(super) enum Kind<'t> {
    /// A command the daemon answers itself (`/model`, `/context`, `/help`, `/clear`).
    Builtin(Builtin<'t>),
    /// It cannot reach a model.
    Failed(Failure),
    /// Another agent CLI runs the whole turn.
    Backend(Setup),
    /// `/compact`.
    Compact(Compaction<'t>),
    /// stepper's own agents: the layers of `stepper.md` and the subagents they dispatch.
    Agents(Box<TurnContext>),
}

/// Why a turn cannot reach a model, and what to say first.
pub(super) struct Failure {
    pub(super) notices: Vec<String>,
    pub(super) error: String,
    pub(super) kind: Option<TurnErrorKind>,
}

impl Failure {
    fn kind(notices: Vec<String>, error: String) -> Kind<'static> {
        Kind::Failed(Failure {
            notices,
            error,
            kind: None,
        })
    }
}

/// What every turn that asks a model runs with.
pub(super) struct Setup {
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
    /// The input's images and documents, with their bytes.
    pub(super) attached: Vec<Media>,
}

/// What a turn of stepper's own agents runs with.
pub(super) struct TurnContext {
    pub(super) setup: Setup,
    /// The model the turn runs: the session's, or the one its command names.
    pub(super) model: String,
    /// The memory files, then what the prompt's hooks added.
    pub(super) memory: String,
    /// Memory that applies once a matching file is touched.
    pub(super) path_rules: Arc<Vec<PathRule>>,
    pub(super) hooks: Option<Arc<HookRunner>>,
    pub(super) mode: PermissionMode,
    /// Whether the user trusts the folder.
    pub(super) trusted: bool,
    pub(super) plan: TurnPlan,
    pub(super) mcp: Option<Arc<McpTools>>,
    /// The skills the model may load.
    pub(super) skills: SkillTool,
    /// The command or skill the user typed, and whether its programs may run.
    pub(super) invoked: Option<(Invoked, bool)>,
    /// An MCP prompt the input named, expanded: the input's text.
    pub(super) prompted: Option<String>,
    pub(super) policy: Arc<Mutex<Policy>>,
    pub(super) sandbox: sandbox::Plan,
    /// Each layer's conversation so far, by context key.
    pub(super) histories: HashMap<String, Vec<ChatMessage>>,
}

/// Announce the turn and say which kind it is, with what it runs with.
pub(super) async fn prepare(turn: &Turn) -> Result<Kind<'_>, LogError> {
    let deps = &turn.deps;
    let session = &turn.session;
    let text = &turn.input.text;
    // A command the daemon answers itself (`/compact` is a turn of compaction, below).
    if let Some(builtin) = Builtin::parse(text).filter(|b| !matches!(b, Builtin::Compact(_))) {
        started(turn, &turn.model).await?;
        return Ok(Kind::Builtin(builtin));
    }
    // The history read below is complete without a flush: each turn's end (with its
    // context) is committed before the next turn starts, and the other context writes go
    // to the store directly.
    let stored = match history(&deps.store, &session.id, MAIN_LAYER).await {
        Ok(mut messages) => {
            load_media(&deps.store, &session.id, &mut messages).await;
            Ok(messages)
        }
        Err(e) => Err(e),
    };
    // A custom command or a skill the user typed: its model, if it names one, runs it.
    let folder = session.state().cwd.clone();
    let home = turn.env.get("HOME").map(PathBuf::from);
    let ext = deps.extensions.get(&folder, home.as_deref()).await;
    let invoked = invoke(&ext, text, &session.id);
    let model = invoked
        .as_ref()
        .and_then(|i| i.model.clone())
        .unwrap_or_else(|| turn.model.clone());
    started(turn, &model).await?;
    let prepared = async {
        let messages = stored?;
        Ok::<_, TurnError>((setup(turn, &model).await?, messages))
    };
    let (setup, messages) = match prepared.await {
        Ok(prepared) => prepared,
        Err(e) => {
            let kind = matches!(e, TurnError::Provider(_)).then_some(TurnErrorKind::Provider);
            return Ok(Kind::Failed(Failure {
                notices: Vec::new(),
                error: e.to_string(),
                kind,
            }));
        }
    };
    if setup.resolved.backend.is_some() {
        return Ok(Kind::Backend(setup));
    }
    // A session that left its CLI back-end lets its process go (the conversation's id
    // stays, for a return).
    if let Some(backend) = session.backend.lock().await.as_mut() {
        backend.shut().await;
    }
    let (hook_set, hooks, mode) = hooks(turn, &setup);
    // `/compact [what to keep]`: the conversation is compacted now, as a turn of its own.
    if let Some(Builtin::Compact(keep)) = Builtin::parse(text) {
        let compaction = compaction(turn, setup, messages, &model, keep, hooks).await;
        return Ok(Kind::Compact(compaction));
    }
    let asked = Asked {
        setup,
        messages,
        model,
        home,
        ext,
        invoked,
        hook_set,
        hooks,
        mode,
    };
    Ok(agents(turn, asked).await)
}

/// What a turn of stepper's own agents is prepared from.
struct Asked {
    setup: Setup,
    messages: Vec<ChatMessage>,
    model: String,
    home: Option<PathBuf>,
    ext: Arc<Extensions>,
    invoked: Option<Invoked>,
    hook_set: Arc<HookSet>,
    hooks: Option<Arc<HookRunner>>,
    mode: PermissionMode,
}

/// The folder's hooks (their runner, when there are any), and the session's mode.
fn hooks(turn: &Turn, setup: &Setup) -> (Arc<HookSet>, Option<Arc<HookRunner>>, PermissionMode) {
    let session = &turn.session;
    let hook_set = Arc::new(HookSet::parse(setup.settings.hooks.as_ref()));
    let mode = session
        .state()
        .mode
        .unwrap_or_else(|| setup.settings.mode());
    let hooks = (!hook_set.is_empty()).then(|| {
        Arc::new(HookRunner {
            set: Arc::clone(&hook_set),
            session_id: session.id.clone(),
            prompt_id: Some(turn.input.input_id.clone()).filter(|id| !id.is_empty()),
            transcript: turn.deps.transcripts.path(&session.id),
            cwd: setup.cwd.clone(),
            env: setup.env.clone(),
            mode,
            log: session.log.clone(),
            turn: Some(turn.n),
            redactor: Redactor::new(setup.secrets.clone()),
            cancel: turn.cancel.clone(),
        })
    });
    (hook_set, hooks, mode)
}

/// A compaction of `messages` by the summariser the settings name, else by `model`,
/// keeping what the user said to keep.
async fn compaction<'t>(
    turn: &Turn,
    setup: Setup,
    messages: Vec<ChatMessage>,
    model: &str,
    keep: &'t str,
    hooks: Option<Arc<HookRunner>>,
) -> Compaction<'t> {
    let deps = &turn.deps;
    let (provider, id) = summarizer(
        (&setup.settings, &setup.user),
        &deps.providers,
        &setup.effective,
        &setup.cwd,
    )
    .unwrap_or_else(|| {
        let id = ModelRef::parse(model).map_or_else(|_| model.to_string(), |m| m.model);
        (Arc::clone(&setup.resolved.provider), id)
    });
    let mut request = ChatRequest::new(id, messages);
    request.cache = setup.settings.prompt_cache();
    // Its figures count what the next model call sends, as automatic compaction's and
    // `/context` do: the conversation and all the rest.
    let fixed = overhead(deps, &turn.session)
        .await
        .map_or(0, |o| o.tokens());
    Compaction {
        request,
        fixed,
        provider,
        instructions: keep,
        hooks,
    }
}

/// A turn of stepper's own agents, or why it cannot run: what the folder's files say (said
/// once in notices where they are wrong), its MCP tools, its prompt hooks, its policy and
/// sandbox, and each layer's conversation.
async fn agents(turn: &Turn, asked: Asked) -> Kind<'static> {
    let Asked {
        setup,
        messages,
        model,
        home,
        ext,
        invoked,
        hook_set,
        hooks,
        mode,
    } = asked;
    let deps = &turn.deps;
    let cwd = setup.cwd.clone();
    let memory = instructions(
        &cwd,
        home.as_deref(),
        &setup.settings,
        deps.settings.config_dir(),
    )
    .await;
    let mut notices = memory.notices;
    // A folder the user has not trusted: what its files asked for is said once.
    let trust = trust::report(deps, &cwd, home.as_deref()).await.ok();
    let trusted = trust.as_ref().is_some_and(|t| t.trust.trusted);
    notices.extend(trust.as_ref().and_then(trust::Report::notice));
    // A project's command runs programs and allows tools only once trusted.
    let runs = invoked.as_ref().is_none_or(|i| !i.project || trusted);
    notices.extend(
        hook_set
            .problems
            .iter()
            .map(|p| format!("setting.json: {p}")),
    );
    // How the turn runs: the layers of stepper.md, the subagents of the project and the
    // user. A broken stepper.md fails the turn at once.
    let plan = plan(&cwd, home.as_deref(), deps).await;
    notices.extend(file_notices(&ext, &plan, deps, &setup.settings));
    if !plan.problems.is_empty() {
        return Failure::kind(notices, plan.failure());
    }
    let (mcp, mcp_notices) = mcp_tools(turn, &setup, &model).await;
    notices.extend(mcp_notices);
    // `/mcp__server__prompt args`: the server's prompt is the input.
    let mut prompted = None;
    if invoked.is_none() {
        let servers = mcp.as_ref().map(|t| &*t.servers);
        match stepper_mcp::prompts::expand(servers, &turn.input.text).await {
            Some(Ok(expanded)) => prompted = Some(expanded),
            Some(Err(why)) => return Failure::kind(notices, why),
            None => {}
        }
    }
    let added = match &hooks {
        Some(runner) => match prompt_hooks(turn, runner).await {
            Ok(added) => added,
            Err(reason) => {
                let why = format!("a UserPromptSubmit hook blocked this prompt: {reason}");
                return Failure::kind(notices, why);
            }
        },
        None => Vec::new(),
    };
    let mut system = memory.text;
    if !added.is_empty() {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str("# From the user's hooks\n\n");
        system.push_str(&added.join("\n\n"));
    }
    for message in notices {
        turn.notice_once(message).await;
    }
    let allowed = invoked
        .iter()
        .filter(|_| runs)
        .flat_map(|i| i.allowed_tools.iter());
    let (policy, sandbox) = gated(turn, &setup, home.as_deref(), allowed).await;
    let histories = match histories(turn, &plan, messages).await {
        Ok(histories) => histories,
        Err(e) => return Failure::kind(Vec::new(), e.to_string()),
    };
    Kind::Agents(Box::new(TurnContext {
        setup,
        model,
        memory: system,
        path_rules: Arc::new(memory.rules),
        hooks,
        mode,
        trusted,
        plan,
        mcp,
        // The skills the model may use: named in the system prompt, loaded by a tool.
        skills: SkillTool {
            skills: ext.model_invocable(),
            session: turn.session.id.clone(),
        },
        invoked: invoked.map(|i| (i, runs)),
        prompted,
        policy,
        sandbox,
        histories,
    }))
}

/// What the folder's commands, skills and agents got wrong, and what its layers and agents
/// name that it lacks.
fn file_notices(
    ext: &Extensions,
    plan: &TurnPlan,
    deps: &crate::hub::HubDeps,
    settings: &Settings,
) -> Vec<String> {
    let mut notices: Vec<String> = ext
        .problems
        .iter()
        .map(|p| {
            if ext.loaded(&p.path) {
                p.to_string()
            } else {
                format!("{p} — this command or skill is left out until it is fixed")
            }
        })
        .collect();
    // A problem in an agent that still loads (a tool it runs without) is said as it is;
    // one that kept the file from loading says so.
    notices.extend(plan.agent_problems.iter().map(|p| {
        if plan.agents.iter().any(|a| a.path == p.path) {
            p.to_string()
        } else {
            format!("{p} — this subagent definition is left out until it is fixed")
        }
    }));
    if plan.problems.is_empty() {
        // What they name that this folder lacks: skills, the skill tool, models.
        let missing = crate::hub::references::check(
            &plan.layers,
            &plan.agents,
            &ext.skills,
            &deps.providers,
            settings,
        );
        notices.extend(crate::hub::references::notices(&missing));
    }
    notices
}

/// MCP servers' tools; a server that fails is left out, with a notice.
async fn mcp_tools(
    turn: &Turn,
    setup: &Setup,
    model: &str,
) -> (Option<Arc<McpTools>>, Vec<String>) {
    let deps = &turn.deps;
    let user_settings = deps.settings.get(None).await.unwrap_or_default();
    let here = deps
        .settings
        .folder(Some(&setup.cwd))
        .await
        .unwrap_or_default();
    // With `mcpSampling`, servers may ask the session's model (each request asked).
    let sampler = (setup.settings.mcp_sampling == Some(true)).then(|| {
        Arc::new(crate::hub::mcp::ModelSampler {
            provider: Arc::clone(&setup.resolved.provider),
            model: ModelRef::parse(model).map_or_else(|_| model.to_string(), |m| m.model),
            cancel: turn.cancel.clone(),
        }) as Arc<dyn stepper_engine::tool::Sampler>
    });
    deps.mcp
        .tools(
            &setup.cwd,
            McpSettings::of(&user_settings, &here),
            &setup.env,
            sampler,
        )
        .await
}

/// The turn's policy — with what the invoked command or skill may use without asking
/// (`allowed`) — and its sandbox; the policy is the session's active one from now on.
async fn gated(
    turn: &Turn,
    setup: &Setup,
    home: Option<&Path>,
    allowed: impl Iterator<Item = &String>,
) -> (Arc<Mutex<Policy>>, sandbox::Plan) {
    let cwd = &setup.cwd;
    let mut policy = policy(turn, &setup.settings, cwd, home).await;
    for rule in allowed {
        match Rule::parse(rule, cwd, home) {
            Ok(rule) => policy.allow.push(rule),
            Err(e) => {
                turn.notice_once(format!("allowed-tools: {rule:?}: {e}"))
                    .await;
            }
        }
    }
    let sandbox = sandbox_plan(turn, &setup.settings, cwd, &setup.env).await;
    policy.sandbox = sandbox.info.state;
    policy.sandbox_confines_reads = sandbox.confines_reads;
    let policy = Arc::new(Mutex::new(policy));
    turn.session.state().active_policy = Some(Arc::clone(&policy));
    (policy, sandbox)
}

/// Each layer's conversation so far, by context key: the main one (read already) and,
/// with layers, those of the layers before the last.
async fn histories(
    turn: &Turn,
    plan: &TurnPlan,
    main: Vec<ChatMessage>,
) -> Result<HashMap<String, Vec<ChatMessage>>, ContextError> {
    let mut histories = HashMap::new();
    histories.insert(MAIN_LAYER.to_string(), main);
    if plan.layers.is_layered() {
        let layers = &plan.layers.layers;
        for i in 0..layers.len().saturating_sub(1) {
            let key = context_key(layers, i);
            let mut history = history(&turn.deps.store, &turn.session.id, &key).await?;
            load_media(&turn.deps.store, &turn.session.id, &mut history).await;
            histories.insert(key, history);
        }
    }
    Ok(histories)
}

/// `TurnStarted`, with the model that runs the turn.
async fn started(turn: &Turn, model: &str) -> Result<(), LogError> {
    turn.append(AppEvent::TurnStarted {
        attachments: turn.input.attachments.clone(),
        input_id: turn.input.input_id.clone(),
        text: turn.input.text.clone(),
        model: model.to_string(),
    })
    .await
}

/// The provider for this turn: settings for the session's folder, the model, the
/// credentials, and a recorder around it when the session records.
async fn setup(turn: &Turn, model: &str) -> Result<Setup, TurnError> {
    let deps = &turn.deps;
    let env = &turn.env;
    let (cwd, record, from_client) = {
        let state = turn.session.state();
        (
            state.cwd.clone(),
            state.record.clone(),
            state.env_from_client,
        )
    };
    let model_ref = ModelRef::parse(model)?;
    let settings = deps.settings.get(Some(&cwd)).await?;
    let user = deps.settings.get(None).await?;
    // A client's environment is whole: the login shell's fills gaps if it is read already,
    // and is not waited for — unless the provider finds no credentials without it. An
    // environment from the store (it keeps no secrets) waits for it.
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
    let attached = attached(turn, &model_ref.to_string(), &resolved).await?;
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
    Ok(Setup {
        resolved,
        env: tool_env(&effective, &settings),
        effective,
        settings,
        user,
        secrets,
        cwd,
        attached,
    })
}

/// The input's attachments with their bytes from the store, once the model is known to take
/// them: a model whose catalogue entry takes no images (or no PDFs) is said so here, before
/// any request.
async fn attached(turn: &Turn, model: &str, resolved: &Resolved) -> Result<Vec<Media>, TurnError> {
    let about = &turn.input.attachments;
    if about.is_empty() {
        return Ok(Vec::new());
    }
    // Another agent CLI says what it takes; a model, its catalogue entry.
    let refused = about.iter().find_map(|a| match &resolved.backend {
        Some(backend) => backend.cli.refuses(a),
        None => resolved.info.refuses(model, a),
    });
    if let Some(refused) = refused {
        return Err(TurnError::Attachment(refused));
    }
    let hashes: Vec<&str> = about.iter().map(|a| a.sha256.as_str()).collect();
    let bytes = turn
        .deps
        .store
        .attachment_bytes(&turn.session.id, &hashes)
        .await
        .map_err(ContextError::from)?;
    about
        .iter()
        .map(|a| match bytes.get(&a.sha256) {
            Some(data) => Ok(Media::new(a.clone(), Arc::clone(data))),
            None => Err(TurnError::Attachment(format!(
                "{} is missing from the session's store: submit it again",
                a.label()
            ))),
        })
        .collect()
}

/// `SessionStart` (the first turn this daemon runs of the session) and
/// `UserPromptSubmit`: what they add to the context, or why the prompt is blocked.
async fn prompt_hooks(turn: &Turn, runner: &HookRunner) -> Result<Vec<String>, String> {
    let mut added = Vec::new();
    let first = !std::mem::replace(&mut turn.session.state().hooks_started, true);
    let cleared = std::mem::take(&mut turn.session.state().cleared);
    if first && runner.set.has(HookEvent::SessionStart) {
        let source = match (cleared, turn.n) {
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
                serde_json::json!({"prompt": turn.input.text}),
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
    turn: &Turn,
    settings: &Settings,
    cwd: &Path,
    home: Option<&Path>,
) -> Policy {
    let (mut policy, problems) = Policy::from_settings(settings.permissions.as_ref(), cwd, home);
    for problem in problems {
        let message = format!("setting.json: {problem}");
        let _ = turn.append(AppEvent::Notice { message }).await;
    }
    if let Some(mode) = turn.session.state().mode {
        policy.mode = mode;
    }
    // What "always" allowed earlier in the session.
    policy.allow.extend(
        turn.session
            .always
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned(),
    );
    policy
}

/// The sandbox of this turn's commands. A sandbox that is wanted but cannot be applied is
/// said once per session (a notice): its commands then ask as in `default` mode.
async fn sandbox_plan(turn: &Turn, settings: &Settings, cwd: &Path, env: &Env) -> sandbox::Plan {
    let chosen = turn.session.state().sandbox;
    let plan = turn
        .deps
        .sandboxes
        .plan(chosen, &settings.sandbox(), cwd, env)
        .await;
    if plan.info.state == stepper_protocol::SandboxState::Unavailable {
        let first = !std::mem::replace(&mut turn.session.state().sandbox_noticed, true);
        if first {
            let message = format!(
                "the sandbox ({}) is not available here: {}. Commands it would have confined \
                 ask first, as in the default mode",
                plan.info.mode,
                plan.info.reason.as_deref().unwrap_or("no reason given")
            );
            let _ = turn.append(AppEvent::Notice { message }).await;
        }
    }
    plan
}
