//! The permission gate of a running turn: the policy decides, and what it cannot decide is
//! asked of the people attached to the session — any client may answer, the first answer
//! wins, every client sees who answered, and a late answer gets a clear error.
//!
//! *A turn waiting for approval with nobody attached keeps waiting*; interrupting the turn answers
//! it with a denial. `stepper ask` without a terminal does not leave it waiting: it denies at once
//! unless a client that can answer is attached (or `--wait-approval`).
//!
//! *The decision runs on a blocking thread*: a 60 KB line takes ~10 ms; the runtime's threads never
//! wait for it, and a panic there becomes a question.
//!
//! A hook's `GateHint` applies over the policy, but never over a deny rule; `PermissionRequest`
//! hooks may answer before anyone is asked, and `Notification` hooks hear of the question.
//! Approvals and MCP elicitations are asked through the one `ask`: the answer registered, the
//! question recorded, the first answer or the interruption awaited, the resolution recorded. An
//! agent with no tool of the `edit` capability gets a `ReadOnly` gate: edits and leaving the
//! sandbox refused, its commands run in the read-only sandbox (`hub::sandbox`, planned once per
//! turn when first needed) or, where there is none, judged as plan mode judges them with no
//! `Bash(…)` allow rule.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use stepper_engine::gate::{Policy, Rule, Verdict};
use stepper_engine::hooks::GateHint;
use stepper_engine::hooks::HookEvent;
use stepper_engine::tool::{Decision, ElicitAnswer, Elicitation, Gate, GateRequest};
use stepper_protocol::{AppEvent, ApprovalDecision, ElicitAction};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::hooks::HookRunner;
use super::log::{EventLog, LogError};

/// An answer, and who gave it.
type Answer<T> = (T, Option<String>);

/// How long a permission decision may take before it becomes a question. Decisions bound
/// their own work (a 60 KB line takes ~10 ms); this is the backstop.
const DECISION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// An answer that came too late.
#[derive(Debug, thiserror::Error)]
#[error("{0} is not waiting for an answer: another client answered it first, or its turn ended")]
pub struct NotWaiting(pub String);

/// Approvals and elicitations waiting for an answer, by request id.
#[derive(Default)]
pub struct Approvals {
    approvals: Waiting<ApprovalDecision>,
    elicitations: Waiting<ElicitAnswer>,
}

impl Approvals {
    /// Answer the approval `request_id`. Only the first answer counts.
    pub fn answer(
        &self,
        request_id: &str,
        decision: ApprovalDecision,
        by: Option<String>,
    ) -> Result<(), NotWaiting> {
        self.approvals.answer(request_id, decision, by)
    }

    /// Answer the elicitation `request_id`. Only the first answer counts.
    pub fn elicited(
        &self,
        request_id: &str,
        answer: ElicitAnswer,
        by: Option<String>,
    ) -> Result<(), NotWaiting> {
        self.elicitations.answer(request_id, answer, by)
    }
}

/// Questions of one kind waiting for their answer, by request id.
struct Waiting<T>(Mutex<HashMap<String, oneshot::Sender<Answer<T>>>>);

impl<T> Default for Waiting<T> {
    fn default() -> Self {
        Waiting(Mutex::default())
    }
}

impl<T> Waiting<T> {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Answer<T>>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new question: its request id, and where its answer will come.
    fn open(&self) -> (String, oneshot::Receiver<Answer<T>>) {
        let request_id = uuid::Uuid::now_v7().to_string();
        let (tx, rx) = oneshot::channel();
        self.map().insert(request_id.clone(), tx);
        (request_id, rx)
    }

    /// Nobody waits for `request_id` any more.
    fn close(&self, request_id: &str) {
        self.map().remove(request_id);
    }

    /// Only the first answer counts.
    fn answer(&self, request_id: &str, answer: T, by: Option<String>) -> Result<(), NotWaiting> {
        let waiting = self.map().remove(request_id);
        match waiting.map(|tx| tx.send((answer, by))) {
            Some(Ok(())) => Ok(()),
            _ => Err(NotWaiting(request_id.to_string())),
        }
    }
}

/// What a question asked of the session's clients came to.
enum Asked<T> {
    /// Someone answered (`by`: who).
    Answered(T, Option<String>),
    /// The turn was interrupted first: the answer an interruption gives.
    Interrupted(T),
}

/// The gate of one turn (one per agent of it: `agent` tags what it asks).
#[derive(Clone)]
pub struct SessionGate {
    /// Set once a tool of the turn asks: only then can the turn have changed files.
    pub consulted: Arc<std::sync::atomic::AtomicBool>,
    pub policy: Arc<Mutex<Policy>>,
    pub approvals: Arc<Approvals>,
    pub log: EventLog,
    pub turn: u32,
    pub cancel: CancellationToken,
    /// True once the turn's checkpoint baseline is taken. It is taken while the model
    /// thinks; a tool may act only after it, or its changes would be missed by rewind.
    pub baseline: tokio::sync::watch::Receiver<bool>,
    /// The user's hooks: `PermissionRequest` before a question, `Notification` with it.
    pub hooks: Option<Arc<HookRunner>>,
    /// The agent of the turn whose calls this gate judges (none: the turn's own).
    pub agent: Option<String>,
    /// What "always" allowed in this session: kept for its later turns too.
    pub always: Arc<Mutex<Vec<Rule>>>,
    /// An agent working in a worktree: (the worktree's folder, the session's folder). Its
    /// requests are judged as the same requests in the session's folder, which the worktree
    /// stands for, so the user's rules and protections hold there as they do at home.
    pub folder: Option<(PathBuf, PathBuf)>,
    /// Set for an agent that may not change files (no tool of the `edit` capability).
    pub read_only: Option<ReadOnly>,
}

/// How an agent that may not change files is held to it. Either way, it changes no file
/// through a tool and never leaves the sandbox.
#[derive(Clone, Debug)]
pub struct ReadOnly {
    /// Who it is, for the refusals.
    pub name: String,
    /// Its commands run in the read-only sandbox (whether it confines reads too): they may
    /// try anything, the OS refuses the writes. Without it (`None`), the gate lets through
    /// only what plan mode does, and no allow rule widens that: a rule says a command may
    /// run, not that it may write.
    pub sandboxed: Option<bool>,
}

impl ReadOnly {
    /// What it is refused whatever the policy says.
    fn refuses(&self, request: &GateRequest) -> Option<String> {
        let why = || {
            format!(
                "`{}` may not change files: its tools leave out the `edit` capability",
                self.name
            )
        };
        match request {
            GateRequest::Edit { .. } => Some(why()),
            GateRequest::Unsandboxed { .. } => Some(format!(
                "{} — its commands stay in the read-only sandbox",
                why()
            )),
            _ => None,
        }
    }

    /// The policy its requests are judged by.
    fn narrow(&self, policy: &mut Policy) {
        match self.sandboxed {
            Some(confines_reads) => {
                policy.sandbox = stepper_engine::gate::SandboxState::Active;
                policy.sandbox_confines_reads = confines_reads;
            }
            None => {
                policy.mode = stepper_protocol::PermissionMode::Plan;
                policy.allow.retain(|rule| !rule.is_bash());
            }
        }
    }
}

impl Gate for SessionGate {
    fn check<'a>(&'a self, request: &'a GateRequest) -> BoxFuture<'a, Decision> {
        self.check_hinted(request, None)
    }

    fn elicit<'a>(&'a self, request: &'a Elicitation) -> BoxFuture<'a, ElicitAnswer> {
        Box::pin(async move {
            let asked = self
                .ask(
                    &self.approvals.elicitations,
                    |request_id| AppEvent::ElicitationRequested {
                        request_id,
                        server: request.server.clone(),
                        message: request.message.clone(),
                        schema: request.schema.clone(),
                    },
                    || {},
                    |request_id, answer: &ElicitAnswer, by| AppEvent::ElicitationResolved {
                        request_id,
                        action: match answer {
                            ElicitAnswer::Accept(_) => ElicitAction::Accept,
                            ElicitAnswer::Decline => ElicitAction::Decline,
                            ElicitAnswer::Cancel => ElicitAction::Cancel,
                        },
                        by,
                    },
                    ElicitAnswer::Cancel,
                )
                .await;
            match asked {
                Ok(Asked::Answered(answer, _) | Asked::Interrupted(answer)) => answer,
                Err(e) => {
                    tracing::error!(error = %e, "cannot record an elicitation");
                    ElicitAnswer::Decline
                }
            }
        })
    }

    fn check_hinted<'a>(
        &'a self,
        request: &'a GateRequest,
        hint: Option<&'a GateHint>,
    ) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            self.consulted
                .store(true, std::sync::atomic::Ordering::SeqCst);
            let mut baseline = self.baseline.clone();
            tokio::select! {
                () = self.cancel.cancelled() => {
                    return Decision::Deny("the turn was interrupted".into());
                }
                // An error means the turn dropped the sender: nothing left to wait for.
                _ = baseline.wait_for(|ready| *ready) => {}
            }
            if let Some(why) = self.read_only.as_ref().and_then(|r| r.refuses(request)) {
                return Decision::Deny(why);
            }
            // Off the runtime's threads (a long line takes milliseconds to judge), and where
            // a failure is a question, never the daemon's end.
            let mut policy = self
                .policy
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            if let Some(read_only) = &self.read_only {
                read_only.narrow(&mut policy);
            }
            let asked = match &self.folder {
                Some((worktree, home)) => in_folder(request, worktree, home),
                None => request.clone(),
            };
            let deciding = tokio::task::spawn_blocking(move || policy.decide(&asked));
            let verdict = tokio::select! {
                () = self.cancel.cancelled() => {
                    return Decision::Deny("the turn was interrupted".into());
                }
                decided = tokio::time::timeout(DECISION_TIMEOUT, deciding) => match decided {
                    Ok(Ok(verdict)) => verdict,
                    Ok(Err(e)) => {
                        tracing::error!(error = %e, "the permission check failed; asking instead");
                        Verdict::Ask(
                            "the permission check failed on this request: approve it only if \
                             you know what it does"
                                .into(),
                        )
                    }
                    Err(_) => {
                        tracing::error!("the permission check took too long; asking instead");
                        Verdict::Ask(
                            "the permission check did not finish in time: approve this only \
                             if you know what it does"
                                .into(),
                        )
                    }
                },
            };
            // What a PreToolUse hook settled: deny rules hold either way.
            let verdict = match (verdict, hint) {
                (Verdict::Deny(why), _) => Verdict::Deny(why),
                (_, Some(GateHint::Allow)) => Verdict::Allow,
                (Verdict::Allow, Some(GateHint::Ask(why))) => Verdict::Ask(why.clone()),
                (verdict, _) => verdict,
            };
            let summary = match verdict {
                Verdict::Allow => return Decision::Allow,
                Verdict::Deny(why) => return Decision::Deny(why),
                Verdict::Ask(summary) => summary,
            };
            // A PermissionRequest hook may answer before anyone is asked.
            if let Some(runner) = self
                .hooks
                .as_ref()
                .filter(|r| r.set.has(HookEvent::PermissionRequest))
            {
                let (name, input) = claude_request(request);
                let ran = runner
                    .run(
                        HookEvent::PermissionRequest,
                        Some(&name),
                        serde_json::json!({"tool_name": name, "tool_input": input}),
                    )
                    .await;
                if let Some(decision) = HookRunner::permission(&ran) {
                    return decision;
                }
            }
            let (tool, command, diff) = describe(request);
            let asked = self
                .ask(
                    &self.approvals.approvals,
                    |request_id| AppEvent::ApprovalRequested {
                        request_id,
                        tool,
                        summary,
                        command,
                        diff,
                    },
                    || self.notify(request),
                    |request_id, decision: &ApprovalDecision, by| AppEvent::ApprovalResolved {
                        request_id,
                        decision: *decision,
                        by,
                    },
                    // Every client closes its prompt: nobody is asked any more.
                    ApprovalDecision::Deny,
                )
                .await;
            let (decision, by) = match asked {
                Ok(Asked::Answered(decision, by)) => (decision, by),
                Ok(Asked::Interrupted(_)) => {
                    return Decision::Deny(
                        "the turn was interrupted while waiting for approval".into(),
                    );
                }
                Err(e) => {
                    return Decision::Deny(format!("the approval could not be recorded: {e}"));
                }
            };
            match decision {
                ApprovalDecision::Allow => Decision::Allow,
                ApprovalDecision::AllowAlways => {
                    let mut policy = self.policy.lock().unwrap_or_else(|p| p.into_inner());
                    let rules = policy.rules_for(request);
                    policy.allow.extend(rules.iter().cloned());
                    // The session's next turns too (each builds its policy afresh).
                    self.always
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .extend(rules);
                    Decision::Allow
                }
                ApprovalDecision::Deny => Decision::Deny(format!(
                    "denied by {}",
                    by.unwrap_or_else(|| "the user".into())
                )),
            }
        })
    }
}

impl SessionGate {
    /// Asks the session's clients: the question (`question`, given its request id) is
    /// recorded, `asked` runs once it is, and the turn waits for the first answer or its
    /// interruption (which answers `dropped`); the answer is recorded too (`resolution`).
    async fn ask<T>(
        &self,
        waiting: &Waiting<T>,
        question: impl FnOnce(String) -> AppEvent,
        asked: impl FnOnce(),
        resolution: impl FnOnce(String, &T, Option<String>) -> AppEvent,
        dropped: T,
    ) -> Result<Asked<T>, LogError> {
        let (request_id, rx) = waiting.open();
        if let Err(e) = self
            .log
            .append_committed_in(
                Some(self.turn),
                self.agent.clone(),
                question(request_id.clone()),
            )
            .await
        {
            waiting.close(&request_id);
            return Err(e);
        }
        asked();
        // Nobody attached? The turn waits: someone may attach and answer.
        let answer = tokio::select! {
            () = self.cancel.cancelled() => None,
            a = rx => a.ok(),
        };
        let ((answer, by), interrupted) = match answer {
            Some(answer) => (answer, false),
            None => {
                waiting.close(&request_id);
                ((dropped, Some("the turn's interruption".to_string())), true)
            }
        };
        let resolved = resolution(request_id, &answer, by.clone());
        if let Err(e) = self
            .log
            .append_in(Some(self.turn), self.agent.clone(), resolved)
            .await
        {
            tracing::error!(error = %e, "cannot record a question's answer");
        }
        Ok(if interrupted {
            Asked::Interrupted(answer)
        } else {
            Asked::Answered(answer, by)
        })
    }

    /// Notification hooks hear of an approval's question; nobody waits for them.
    fn notify(&self, request: &GateRequest) {
        let Some(runner) = self
            .hooks
            .as_ref()
            .filter(|r| r.set.has(HookEvent::Notification))
        else {
            return;
        };
        let runner = runner.outside_turn();
        let (name, _) = claude_request(request);
        tokio::spawn(async move {
            let message = format!("stepper needs your permission to use {name}");
            runner
                .run(
                    HookEvent::Notification,
                    Some("permission_prompt"),
                    serde_json::json!({
                        "message": message,
                        "notification_type": "permission_prompt",
                    }),
                )
                .await;
        });
    }
}

/// A request as Claude Code's hooks name it: the tool, and its input.
/// `request` as the same request made in `home` by an agent working in `worktree` (a
/// worktree of it): its paths, its commands' folder, and the worktree's path in a command
/// line, put back where they stand for.
fn in_folder(request: &GateRequest, worktree: &Path, home: &Path) -> GateRequest {
    let path = |p: &Path| match p.strip_prefix(worktree) {
        Ok(rest) => home.join(rest),
        Err(_) => p.to_path_buf(),
    };
    let line = |command: &str| {
        command.replace(&worktree.display().to_string(), &home.display().to_string())
    };
    match request {
        GateRequest::Read { path: p } => GateRequest::Read { path: path(p) },
        GateRequest::Edit { path: p, diff } => GateRequest::Edit {
            path: path(p),
            diff: diff.clone(),
        },
        GateRequest::Bash { command, cwd, env } => GateRequest::Bash {
            command: line(command),
            cwd: path(cwd),
            env: env.clone(),
        },
        GateRequest::Unsandboxed {
            command,
            cwd,
            env,
            failure,
        } => GateRequest::Unsandboxed {
            command: line(command),
            cwd: path(cwd),
            env: env.clone(),
            failure: failure.clone(),
        },
        other => other.clone(),
    }
}

fn claude_request(request: &GateRequest) -> (String, serde_json::Value) {
    use serde_json::json;
    match request {
        GateRequest::Bash { command, .. } | GateRequest::Unsandboxed { command, .. } => {
            ("Bash".into(), json!({"command": command}))
        }
        GateRequest::Edit { path, .. } => ("Edit".into(), json!({"file_path": path})),
        GateRequest::Read { path } => ("Read".into(), json!({"file_path": path})),
        GateRequest::WebFetch { url } => ("WebFetch".into(), json!({"url": url})),
        GateRequest::Mcp {
            server,
            tool,
            arguments,
            ..
        } => (
            format!("mcp__{server}__{tool}"),
            serde_json::from_str(arguments).unwrap_or_else(|_| json!({})),
        ),
        GateRequest::Tool { name, input } => (
            name.clone(),
            serde_json::from_str(input).unwrap_or_else(|_| json!({})),
        ),
    }
}

/// The tool and what to show for a request.
fn describe(request: &GateRequest) -> (String, Option<String>, Option<String>) {
    match request {
        GateRequest::Bash { command, .. } | GateRequest::Unsandboxed { command, .. } => {
            ("bash".into(), Some(command.clone()), None)
        }
        GateRequest::Edit { path, diff } => (
            "edit".into(),
            Some(path.display().to_string()),
            Some(diff.clone()),
        ),
        GateRequest::Read { path } => ("read".into(), Some(path.display().to_string()), None),
        GateRequest::WebFetch { url } => ("web_fetch".into(), Some(url.clone()), None),
        GateRequest::Mcp {
            server,
            tool,
            arguments,
            ..
        } => (
            format!("mcp__{server}__{tool}"),
            Some(arguments.clone()),
            None,
        ),
        GateRequest::Tool { name, input } => (name.clone(), Some(input.clone()), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stepper_engine::config::Permissions;
    use stepper_engine::gate::SandboxState;
    use stepper_engine::tool::CommandEnv;
    use stepper_protocol::PermissionMode;

    fn bash(command: &str, cwd: &std::path::Path) -> GateRequest {
        let env = [("PATH".to_string(), "/usr/bin:/bin".to_string())]
            .into_iter()
            .collect();
        GateRequest::Bash {
            command: command.into(),
            cwd: cwd.to_path_buf(),
            env: CommandEnv(Arc::new(env)),
        }
    }

    #[test]
    fn a_worktree_agents_requests_are_judged_as_made_in_the_folder() {
        let worktree = Path::new("/p/.git/stepper-worktrees/ab-t1-layer-2.1");
        let home = Path::new("/p");
        let edit = GateRequest::Edit {
            path: worktree.join("src/a.rs"),
            diff: "d".into(),
        };
        assert_eq!(
            in_folder(&edit, worktree, home),
            GateRequest::Edit {
                path: "/p/src/a.rs".into(),
                diff: "d".into()
            }
        );
        // A path outside the worktree stays what it is (outside the folder too).
        let read = GateRequest::Read {
            path: "/etc/passwd".into(),
        };
        assert_eq!(in_folder(&read, worktree, home), read);
        let bash = GateRequest::Bash {
            command: format!("cat {}/x && ls", worktree.display()),
            cwd: worktree.join("sub"),
            env: CommandEnv::default(),
        };
        assert_eq!(
            in_folder(&bash, worktree, home),
            GateRequest::Bash {
                command: "cat /p/x && ls".into(),
                cwd: "/p/sub".into(),
                env: CommandEnv::default(),
            }
        );
    }

    #[test]
    fn without_the_sandbox_a_read_only_agent_runs_what_plan_mode_runs_whatever_the_rules() {
        let dir = tempfile::tempdir().unwrap();
        let permissions = Permissions {
            mode: Some(PermissionMode::Auto),
            allow: vec!["Bash(python3:*)".into(), "Bash".into()],
            ..Permissions::default()
        };
        let (mut policy, problems) = Policy::from_settings(Some(&permissions), dir.path(), None);
        assert!(problems.is_empty(), "{problems:?}");
        let write = bash("python3 -c \"open('f', 'w').write('x')\"", dir.path());
        assert_eq!(policy.decide(&write), Verdict::Allow);
        let gated = ReadOnly {
            name: "look".into(),
            sandboxed: None,
        };
        gated.narrow(&mut policy);
        assert!(matches!(policy.decide(&write), Verdict::Deny(_)));
        assert_eq!(policy.decide(&bash("ls", dir.path())), Verdict::Allow);
        let edit = GateRequest::Edit {
            path: dir.path().join("f"),
            diff: String::new(),
        };
        assert!(
            gated
                .refuses(&edit)
                .is_some_and(|why| why.contains("`look`"))
        );
        assert_eq!(gated.refuses(&bash("ls", dir.path())), None);
    }

    #[test]
    fn in_the_sandbox_it_may_try_but_never_leave() {
        let dir = tempfile::tempdir().unwrap();
        let (mut policy, _) = Policy::from_settings(None, dir.path(), None);
        let sandboxed = ReadOnly {
            name: "look".into(),
            sandboxed: Some(false),
        };
        sandboxed.narrow(&mut policy);
        assert_eq!(policy.sandbox, SandboxState::Active);
        assert_eq!(policy.mode, PermissionMode::Default);
        let leave = GateRequest::Unsandboxed {
            command: "touch f".into(),
            cwd: dir.path().to_path_buf(),
            env: CommandEnv(Arc::new(Default::default())),
            failure: "Read-only file system".into(),
        };
        assert!(sandboxed.refuses(&leave).is_some());
    }
}
