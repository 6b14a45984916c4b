//! The turn actor: one per live session, spawned by the hub beside it. It takes the
//! session's inputs one at a time, in the order they were queued, and runs each as a
//! [`Turn`]: prepared, run by its kind, its files checkpointed, then finished.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use stepper_protocol::AppEvent;
use tokio::sync::mpsc;

use super::prepare::{self, Kind};
use super::{Outcome, Turn, agents, backend, builtin, compact};
use crate::hub::HubDeps;
use crate::hub::log::LogError;
use crate::hub::session::{LiveSession, QueuedInput, Running};

/// Run `session`'s inputs from `rx` until the session ends or the daemon stops.
pub(in crate::hub) async fn run_inputs(
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
        run(Arc::clone(&session), input, &deps).await;
        session.input_done();
    }
}

/// Run one input as the session's next turn.
async fn run(session: Arc<LiveSession>, input: QueuedInput, deps: &HubDeps) {
    let running = Running::default();
    let (n, model, env) = {
        let mut state = session.state();
        state.turns += 1;
        state.running = Some(running.clone());
        (state.turns, state.model.clone(), state.env.clone())
    };
    session.open_steering();
    deps.running.send_modify(|n| *n += 1);
    let turn = Turn {
        session: Arc::clone(&session),
        deps: deps.clone(),
        n,
        input,
        model,
        env,
        cancel: running.cancel,
        interrupt: running.interrupt,
        consulted: Arc::new(AtomicBool::new(false)),
    };
    if let Err(e) = body(&turn).await {
        tracing::error!(session = %session.id, turn = n, error = %e, "turn could not be recorded");
    }
    {
        let mut state = session.state();
        state.running = None;
        state.active_policy = None;
    }
    session.close_steering().await;
    deps.running.send_modify(|n| *n = n.saturating_sub(1));
}

/// The turn by its kind.
async fn body(turn: &Turn) -> Result<(), LogError> {
    let outcome = match prepare::prepare(turn).await? {
        Kind::Builtin(command) => return builtin::run(turn, command).await,
        Kind::Failed(failure) => {
            return turn
                .fail_before_model(failure.notices, failure.error, failure.kind)
                .await;
        }
        Kind::Compact(compaction) => return compact::run(turn, compaction).await,
        Kind::Backend(setup) => backend::run(turn, setup).await?,
        Kind::Agents(cx) => agents::run(turn, *cx).await,
    };
    end(turn, outcome).await
}

/// After a turn that may have acted: what its commands left running ends, what it changed
/// is checkpointed, then it finishes.
/// A turn that added no context adds the user's words.
async fn end(turn: &Turn, mut outcome: Outcome) -> Result<(), LogError> {
    if outcome.contexts.is_empty() {
        outcome.contexts.push(turn.said_only());
    }
    let session = &turn.session;
    let consulted = turn.consulted.load(Ordering::SeqCst);
    // What the turn's commands left running outside their groups (`setsid cmd &`) ends
    // with the turn; its registry entries go once nothing carries their token. So does
    // what was re-parented to the daemon, its reaper killed.
    if consulted {
        let swept = tokio::task::spawn_blocking(|| {
            stepper_process::registry::sweep() + stepper_process::lineage::reap_adopted().killed
        })
        .await
        .unwrap_or(0);
        if swept > 0 {
            tracing::info!(session = %session.id, turn = turn.n, killed = swept, "killed what the turn's commands left running");
        }
    }
    // A turn whose tools never asked the gate changed nothing: every tool that acts
    // asks first. Its files are not walked again; what changes outside stepper is taken
    // at the next turn's start.
    let walked = if consulted {
        session
            .checkpoints
            .record(&turn.deps.store, &session.id, turn.n)
            .await
    } else {
        Ok(0)
    };
    match walked {
        Ok(0) => {}
        Ok(n) => {
            let files = u32::try_from(n).unwrap_or(u32::MAX);
            turn.append(AppEvent::CheckpointCreated { files }).await?;
        }
        Err(e) => {
            tracing::error!(session = %session.id, turn = turn.n, error = %e, "checkpoint failed");
        }
    }
    turn.finish(outcome).await
}
