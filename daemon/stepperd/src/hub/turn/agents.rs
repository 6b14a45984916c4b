//! A turn of stepper's own agents: the engine's orchestrator runs the layers of
//! `stepper.md` and the subagents they dispatch, with [`TurnHost`] as its port to the
//! daemon. The project's files are taken (the checkpoint baseline) while the model is first
//! called; the gate holds every tool until they are.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use stepper_engine::ChatMessage;
use stepper_engine::config::SandboxMode;
use stepper_engine::config::layers::Layer;
use stepper_engine::orchestrator::{Orchestrated, Orchestrator};
use stepper_engine::tool::{NoOutput, ToolCx, ToolSource};
use stepper_protocol::{AppEvent, TurnStatus};
use tokio::sync::watch;

use super::host::TurnHost;
use super::plan::TurnPlan;
use super::prepare::TurnContext;
use super::{Outcome, Turn, said_only};
use crate::hub::approvals::SessionGate;
use crate::hub::context::MAIN_LAYER;
use crate::hub::extensions::{Invoked, render};
use crate::hub::{environment, sandbox, worktree};

/// Run the turn's agents; what they said and did, as the turn's outcome.
pub(super) async fn run(turn: &Turn, mut cx: TurnContext) -> Outcome {
    let cwd = cx.setup.cwd.clone();
    let (baseline_taken, baseline) = watch::channel(false);
    let gate = turn.gate(Arc::clone(&cx.policy), cx.hooks.clone(), baseline);
    let tool_cx = ToolCx {
        cwd: cwd.clone(),
        project_root: cwd,
        env: cx.setup.env.clone(),
        cancel: turn.cancel.clone(),
        gate: Arc::new(gate.clone()),
        output: Arc::new(NoOutput),
        sandbox: cx.sandbox.command.take().map(Arc::new),
        hint: None,
    };
    // What the project holds before the turn (changes made outside stepper since the last
    // turn are taken as they are), walked while the model is called: the gate holds every
    // tool until it is done.
    let baseline = async {
        if let Err(e) = turn.session.checkpoints.sync(&turn.deps.store).await {
            let message = format!("file checkpoints are off for this turn: {e}");
            let _ = turn.append(AppEvent::Notice { message }).await;
        }
        let _ = baseline_taken.send(true);
    };
    let said = Mutex::new(turn.input.text.clone());
    let agents = orchestrate(turn, cx, tool_cx, gate, &said);
    let ((), done) = tokio::join!(baseline, agents);
    let said = said.into_inner().unwrap_or_else(|p| p.into_inner());
    let contexts = if done.contexts.is_empty() {
        vec![said_only(&said)]
    } else {
        done.contexts
    };
    Outcome {
        status: done.status,
        error: done.error,
        error_kind: done.error_kind,
        contexts,
    }
}

/// What the orchestrator runs, besides its host.
struct Work {
    plan: TurnPlan,
    invoked: Option<(Invoked, bool)>,
    prompted: Option<String>,
    histories: HashMap<String, Vec<ChatMessage>>,
}

/// The orchestrated turn. A command's `!` lines and `@` files are taken once the gate can
/// answer (after the baseline), then the model gets the whole; `said` becomes what the
/// model was given for the user's words.
async fn orchestrate(
    turn: &Turn,
    cx: TurnContext,
    tool_cx: ToolCx,
    gate: SessionGate,
    said: &Mutex<String>,
) -> Orchestrated {
    let settings = Arc::clone(&cx.setup.settings);
    let attached = cx.setup.attached.clone();
    let (host, work) = host(turn, cx, &tool_cx, gate).await;
    let Work {
        plan,
        invoked,
        prompted,
        histories,
    } = work;
    let layered = plan.layers.is_layered();
    let layers = if layered {
        plan.layers.layers.clone()
    } else {
        vec![Layer::plain(MAIN_LAYER)]
    };
    let mut orchestrator = Orchestrator::new(host, plan.agents, settings.dispatch == Some(true));
    // As Claude Code offers its Task tool: whenever there are agent files, unless the
    // settings say `"dispatch": false`.
    orchestrator.answering_dispatches =
        settings.dispatch.is_none() && !orchestrator.agents.is_empty();
    orchestrator.isolation = settings.worker_isolation();
    orchestrator.attachments = attached;
    let mut text = turn.input.text.clone();
    if let Some(prompted) = prompted {
        text = prompted;
        *said.lock().unwrap_or_else(|p| p.into_inner()) = text.clone();
    }
    if let Some((invoked, runs)) = &invoked {
        match render(&invoked.body, &turn.deps.tools, &tool_cx, *runs).await {
            Ok(rendered) => {
                text = invoked.framed(&rendered);
                *said.lock().unwrap_or_else(|p| p.into_inner()) = text.clone();
            }
            Err(error) => return not_rendered(error),
        }
    }
    orchestrator.run(&layers, layered, &text, histories).await
}

/// The orchestrator's port for this turn. Git's state for the model is read while the
/// baseline is walked.
async fn host(
    turn: &Turn,
    cx: TurnContext,
    tool_cx: &ToolCx,
    gate: SessionGate,
) -> (Arc<TurnHost>, Work) {
    let session = &turn.session;
    let deps = &turn.deps;
    let TurnContext {
        setup,
        model,
        memory,
        path_rules,
        hooks,
        mode,
        trusted,
        plan,
        mcp,
        skills,
        invoked,
        prompted,
        policy: _,
        sandbox,
        histories,
    } = cx;
    let cwd = setup.cwd.clone();
    // What the model is told of where it works.
    let (environment, moment) = environment::gather(environment::Facts {
        cwd: &cwd,
        env: &tool_cx.env,
        mode,
        sandbox: if tool_cx.sandbox.is_some() {
            sandbox.info.mode
        } else {
            SandboxMode::Off
        },
        network: sandbox.info.network,
        mcp_servers: mcp
            .as_ref()
            .map(|t| t.servers.slots.iter().map(|s| s.name.clone()).collect())
            .unwrap_or_default(),
        trusted,
    })
    .await;
    // Worktrees run git with the repository's own filters: only in a folder the user
    // trusts.
    let worktrees = if trusted {
        let part = stepper_protocol::session::random_part(&session.id);
        let label = format!("{}-t{}", &part[..part.len().min(8)], turn.n);
        Ok(Arc::new(worktree::Worktrees::new(
            cwd.clone(),
            tool_cx.env.clone(),
            label,
        )))
    } else {
        Err(
            "worktrees need a folder you trust (git would run the repository's own \
             programs): trust it with `stepper trust`"
                .to_string(),
        )
    };
    let read_only = sandbox::ReadOnly::new(
        Arc::clone(&deps.sandboxes),
        setup.settings.sandbox(),
        cwd.clone(),
        tool_cx.env.clone(),
    );
    let settings = setup.settings;
    let host = Arc::new(TurnHost {
        main_model: model,
        main: (
            setup.resolved.provider,
            setup.resolved.info,
            setup.resolved.kind,
        ),
        providers: deps.providers.clone(),
        instructions: session.instructions().over(&settings.instructions()),
        settings,
        user: setup.user,
        effective: setup.effective,
        cwd,
        memory,
        path_rules,
        environment: environment.render(),
        facts: environment,
        moment: moment.render(),
        tools: deps.tools.clone(),
        mcp: mcp.map(|t| t as Arc<dyn ToolSource>),
        skills,
        cx: tool_cx.clone(),
        gate,
        hooks,
        secrets: setup.secrets,
        steering: session.steering_taker(),
        log: session.log.clone(),
        turn: turn.n,
        cancel: turn.cancel.clone(),
        interrupt: turn.interrupt.clone(),
        worktrees,
        sandboxes: (Arc::clone(&deps.sandboxes), session.state().sandbox),
        places: Mutex::default(),
        read_only,
    });
    let work = Work {
        plan,
        invoked,
        prompted,
        histories,
    };
    (host, work)
}

/// A turn whose command could not be rendered.
fn not_rendered(error: String) -> Orchestrated {
    Orchestrated {
        status: TurnStatus::Failed,
        error: Some(error),
        error_kind: None,
        text: String::new(),
        usage: Default::default(),
        cost_usd: None,
        contexts: Vec::new(),
    }
}
