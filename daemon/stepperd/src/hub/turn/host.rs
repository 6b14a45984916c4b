//! `TurnHost`: the daemon's side of the engine's orchestrator — its ports. The recipe of an
//! agent's loop is the engine's (`stepper_engine::recipe`); the host supplies what only the
//! daemon has: each agent's model resolved to a provider, its gate (tagged with its agent
//! id; read-only for an agent that cannot write; judging a worktree agent's calls as made
//! in the session's folder), the skills and hooks of the folder, worktrees for isolated
//! agents (made and merged back), and the session's log for events tagged with agent ids.
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use stepper_engine::catalogue::ModelInfo;
use stepper_engine::compaction::CompactionPlan;
use stepper_engine::config::memory::PathRule;
use stepper_engine::config::{ProviderKind, SandboxMode, Settings};
use stepper_engine::gate::Verdict;
use stepper_engine::hooks::HookEvent;
use stepper_engine::interrupt::Interrupt;
use stepper_engine::orchestrator::{AgentHost, AgentKind, AgentRun, Isolated, Merge};
use stepper_engine::prompt::UserInstructions;
use stepper_engine::prompt::environment::CONTEXT_TAG;
use stepper_engine::recipe;
use stepper_engine::tool::{GateRequest, Tool, ToolCx, ToolSource};
use stepper_engine::{
    ChatMessage, ContentPart, HostedTool, LlmProvider, ModelRef, TurnOutcome, agent::SinkError,
};
use stepper_protocol::AppEvent;
use stepper_protocol::session::Env;
use stepper_providers::{ResolveContext, Resolved};
use tokio_util::sync::CancellationToken;

use super::compact::summarizer;
use super::{AgentSink, MAX_TOKENS};
use crate::hub::approvals::{ReadOnly, SessionGate};
use crate::hub::extensions::SkillTool;
use crate::hub::hooks::{HookRunner, SessionHooks};
use crate::hub::log::EventLog;

/// What every agent loop of one turn is built from: the daemon's side of the orchestrator.
pub(super) struct TurnHost {
    /// The session's model and its provider, resolved for the turn.
    pub(super) main_model: String,
    pub(super) main: (Arc<dyn LlmProvider>, ModelInfo, ProviderKind),
    pub(super) providers: stepper_providers::Providers,
    pub(super) settings: Arc<Settings>,
    /// The user's own settings: where their keys may go.
    pub(super) user: Arc<Settings>,
    pub(super) effective: Env,
    pub(super) cwd: PathBuf,
    /// The memory files' instructions and the hooks' additions, which every agent gets.
    pub(super) memory: String,
    /// Rules for some files only (`.claude/rules` with `paths:`), given with the result of
    /// the first call that touches one of those files.
    pub(super) path_rules: Arc<Vec<PathRule>>,
    /// The user's instructions in place of or after the base.
    pub(super) instructions: UserInstructions,
    /// The environment's stable part, for the system prompt.
    pub(super) environment: String,
    /// What it was rendered from, for agents that work in worktrees.
    pub(super) facts: stepper_engine::prompt::Environment,
    /// Its moving part (date, git), sent when it changed.
    pub(super) moment: String,
    pub(super) tools: Vec<Arc<dyn Tool>>,
    /// The MCP servers' tools, read again before every model call.
    pub(super) mcp: Option<Arc<dyn ToolSource>>,
    /// The skills the model may be offered, each agent those its definition allows.
    pub(super) skills: SkillTool,
    /// The turn's tool context; each agent gets it with its own gate.
    pub(super) cx: ToolCx,
    pub(super) gate: SessionGate,
    pub(super) hooks: Option<Arc<HookRunner>>,
    pub(super) secrets: Vec<String>,
    pub(super) steering: Arc<dyn Fn() -> Vec<String> + Send + Sync>,
    pub(super) log: EventLog,
    pub(super) turn: u32,
    pub(super) cancel: CancellationToken,
    /// Why `cancel` was cancelled, when it is.
    pub(super) interrupt: Interrupt,
    /// Worktrees for isolated agents, or why there can be none.
    pub(super) worktrees: Result<Arc<crate::hub::worktree::Worktrees>, String>,
    /// The daemon's sandboxes and the session's choice, to confine commands in a worktree.
    pub(super) sandboxes: (Arc<crate::hub::sandbox::Sandboxes>, Option<SandboxMode>),
    /// The worktree and sandbox of each isolated agent, by id.
    pub(super) places: Mutex<HashMap<String, Place>>,
    /// Where the commands of agents that may not change files run.
    pub(super) read_only: crate::hub::sandbox::ReadOnly,
}

/// Where an isolated agent works.
#[derive(Clone)]
pub(super) struct Place {
    pub(super) cwd: PathBuf,
    /// The worktree's top.
    pub(super) top: PathBuf,
    pub(super) sandbox: Option<Arc<stepper_engine::tool::CommandSandbox>>,
}

impl TurnHost {
    /// The tools `run`'s provider (of `kind`) runs itself that it is offered: its web search
    /// where it has one, when the agent may use `WebSearch` and the user's rules let it run
    /// without asking (a search at the provider cannot stop for an approval).
    fn hosted(&self, run: &AgentRun, kind: ProviderKind) -> Vec<HostedTool> {
        let searches = matches!(kind, ProviderKind::Anthropic | ProviderKind::Openai);
        if !searches || !run.allows("web_search") {
            return Vec::new();
        }
        let request = GateRequest::Tool {
            name: "WebSearch".into(),
            input: "{}".into(),
        };
        let verdict = self
            .gate
            .policy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .decide(&request);
        if verdict == Verdict::Allow {
            vec![HostedTool::WebSearch]
        } else {
            Vec::new()
        }
    }

    fn provider(&self, model: &str) -> Result<Resolved, String> {
        if model == self.main_model {
            return Ok(Resolved {
                provider: Arc::clone(&self.main.0),
                info: self.main.1.clone(),
                secrets: Vec::new(),
                backend: None,
                kind: self.main.2,
            });
        }
        let model_ref = ModelRef::parse(model).map_err(|e| e.to_string())?;
        let cx = ResolveContext {
            env: &self.effective,
            settings: &self.settings,
            user: &self.user,
            cwd: &self.cwd,
        };
        self.providers
            .resolve(&model_ref, &cx)
            .map_err(|e| format!("{model}: {e}"))
    }

    /// The model settings name for summaries (`compaction.model`), when it is not the
    /// agent's own.
    fn summarizer(&self) -> Option<(Arc<dyn LlmProvider>, String)> {
        summarizer(
            (&self.settings, &self.user),
            &self.providers,
            &self.effective,
            &self.cwd,
        )
    }

    async fn run(&self, run: AgentRun, messages: Vec<ChatMessage>) -> TurnOutcome {
        let model = self.model_of(run.model.as_deref());
        let resolved = match self.provider(&model) {
            Ok(p) => p,
            // A model no provider can serve (or not set up): the provider's kind of failure.
            Err(error) => {
                let mut failed = TurnOutcome::failed(error);
                failed.error_kind = Some(stepper_protocol::TurnErrorKind::Provider);
                return failed;
            }
        };
        let dialect = resolved.dialect();
        let hosted = self.hosted(&run, resolved.kind);
        let Resolved {
            provider,
            info,
            secrets: more_secrets,
            ..
        } = resolved;
        let mut tools = recipe::tools_for(&run, &self.tools, &self.path_rules, &self.cx.cwd);
        // An isolated agent works in its worktree: its folder, its sandbox, its environment.
        let place = run.id.as_ref().and_then(|id| {
            self.places
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(id)
                .cloned()
        });
        let environment = match &place {
            Some(place) => stepper_engine::prompt::Environment {
                repository: self.facts.repository.as_ref().map(|_| place.top.clone()),
                cwd: place.cwd.clone(),
                worktree_of: Some(self.cx.cwd.clone()),
                ..self.facts.clone()
            }
            .render(),
            None => self.environment.clone(),
        };
        let mut system = recipe::system_prompt(
            &run,
            dialect,
            &self.instructions,
            &environment,
            &self.memory,
        );
        if let Some(skills) = self.skills_for(&run) {
            recipe::append_part(&mut system, &skills.listing_for(info.context_window()));
            tools.push(Arc::new(skills));
        }
        tools.extend(
            run.extra_tools
                .iter()
                .filter(|t| !run.disallowed.contains(&t.spec().name))
                .cloned(),
        );
        let cx = self.cx_for(&run, place).await;
        let hooks = self.hooks_for(&run, &mut system).await;
        let mut request = recipe::request(&model, messages, &info, MAX_TOKENS, system);
        request.cache = self.settings.prompt_cache();
        let mut secrets = self.secrets.clone();
        secrets.extend(more_secrets);
        let compaction = CompactionPlan {
            threshold: self.settings.compaction_threshold(),
            window: info.context_window(),
            summarizer: self.summarizer(),
        };
        let agent = recipe::agent_loop(
            &run,
            recipe::Ingredients {
                provider,
                info,
                dialect,
                hosted,
                tools,
                cx,
                source: self.mcp.as_ref().map(|m| recipe::permitted(&run, m)),
                secrets,
                compaction,
                interrupt: self.interrupt.clone(),
                steering: Arc::clone(&self.steering),
                hooks,
            },
        );
        let sink = AgentSink {
            log: &self.log,
            turn: self.turn,
            agent: run.id,
        };
        agent.run(request, self.cancel.clone(), &sink).await
    }

    /// The skill tool `run` is offered, when it may load skills and is offered any.
    fn skills_for(&self, run: &AgentRun) -> Option<SkillTool> {
        let skills: Vec<_> = self
            .skills
            .skills
            .iter()
            .filter(|s| run.offers_skill(&s.name))
            .cloned()
            .collect();
        (!skills.is_empty() && run.allows("skill")).then(|| SkillTool {
            skills,
            session: self.skills.session.clone(),
        })
    }

    /// Where `run`'s tools run and its gate: in its worktree when it has one (judged as if
    /// in the session's folder, which the worktree stands for), tagged with its id, and
    /// read-only for an agent that may not change files — whose commands then run in the
    /// read-only sandbox, or where there is none, only those plan mode runs.
    async fn cx_for(&self, run: &AgentRun, place: Option<Place>) -> ToolCx {
        let mut cx = self.cx.clone();
        let mut gate = SessionGate {
            agent: run.id.clone(),
            ..self.gate.clone()
        };
        if let Some(Place { cwd, sandbox, .. }) = place {
            gate.folder = Some((cwd.clone(), self.cx.cwd.clone()));
            cx.project_root = cwd.clone();
            cx.cwd = cwd;
            if sandbox.is_some() {
                cx.sandbox = sandbox;
            }
        }
        if !recipe::writes(run) {
            let sandboxed = if recipe::allows(run, "bash") {
                self.read_only.get().await
            } else {
                None
            };
            gate.read_only = Some(ReadOnly {
                name: run.name.clone(),
                sandboxed: sandboxed
                    .as_ref()
                    .map(|(_, confines_reads)| *confines_reads),
            });
            if let Some((sandbox, _)) = sandboxed {
                cx.sandbox = Some(sandbox);
            }
        }
        cx.gate = Arc::new(gate);
        cx
    }

    /// The user's hooks for `run`'s loop. A subagent's `SubagentStart` hooks run now, and
    /// what they add goes to its system prompt, as Claude Code gives it.
    async fn hooks_for(
        &self,
        run: &AgentRun,
        system: &mut String,
    ) -> Option<Arc<dyn stepper_engine::hooks::TurnHooks>> {
        let runner = self.hooks.as_ref()?;
        let subagent = run.kind != AgentKind::Layer;
        if subagent && runner.set.has(HookEvent::SubagentStart) {
            let ran = runner
                .run(
                    HookEvent::SubagentStart,
                    Some(&run.name),
                    serde_json::json!({
                        "agent_id": run.id,
                        "agent_type": run.name,
                    }),
                )
                .await;
            let added = HookRunner::additional_context(&ran);
            if !added.is_empty() {
                let part = format!("# From the user's hooks\n\n{}", added.join("\n\n"));
                recipe::append_part(system, &part);
            }
        }
        let stop_event = match (subagent, &run.id) {
            (true, _) => Some(HookEvent::SubagentStop),
            (false, None) => Some(HookEvent::Stop),
            // A layer before the last: the turn has not stopped.
            (false, Some(_)) => None,
        };
        Some(Arc::new(SessionHooks {
            runner: Arc::clone(runner),
            stop_event,
            subagent: run
                .id
                .clone()
                .filter(|_| subagent)
                .map(|id| (id, run.name.clone())),
        }))
    }
}

impl AgentHost for TurnHost {
    fn model_of(&self, model: Option<&str>) -> String {
        model.unwrap_or(&self.main_model).to_string()
    }

    fn run_agent(&self, run: AgentRun, messages: Vec<ChatMessage>) -> BoxFuture<'_, TurnOutcome> {
        Box::pin(self.run(run, messages))
    }

    fn take_steering(&self) -> Vec<String> {
        (self.steering)()
    }

    fn environment_update(&self, history: &[ChatMessage]) -> Option<String> {
        // The last environment the conversation was told, wherever it was.
        let told = history.iter().rev().find_map(|m| {
            m.content.iter().find_map(|p| match p {
                ContentPart::Text { text } if text.starts_with(CONTEXT_TAG) => Some(text),
                _ => None,
            })
        });
        (told != Some(&self.moment)).then(|| self.moment.clone())
    }

    fn isolate(&self, agents: Vec<String>) -> BoxFuture<'_, Result<Isolated, String>> {
        Box::pin(async move {
            let worktrees = self.worktrees.as_ref().map_err(String::clone)?;
            let isolated = worktrees.isolate(agents).await.map_err(|e| e.to_string())?;
            let (sandboxes, chosen) = &self.sandboxes;
            for agent in &isolated.agents {
                let Some(place) = worktrees.place(agent) else {
                    continue;
                };
                // Commands confined to the worktree as the session's are to its folder.
                let sandbox = if self.cx.sandbox.is_some() {
                    sandboxes
                        .plan(*chosen, &self.settings.sandbox(), &place.cwd, &self.cx.env)
                        .await
                        .command
                        .map(Arc::new)
                } else {
                    None
                };
                self.places
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(
                        agent.clone(),
                        Place {
                            cwd: place.cwd,
                            top: place.top,
                            sandbox,
                        },
                    );
            }
            Ok(isolated)
        })
    }

    fn merge(&self, batch: u64, finished: Vec<bool>) -> BoxFuture<'_, Merge> {
        Box::pin(async move {
            match &self.worktrees {
                Ok(worktrees) => worktrees.merge(batch, &finished).await,
                Err(why) => Merge {
                    error: Some(why.clone()),
                    ..Merge::default()
                },
            }
        })
    }

    fn emit(&self, agent: Option<String>, event: AppEvent) -> BoxFuture<'_, Result<(), SinkError>> {
        Box::pin(async move {
            self.log
                .append_in(Some(self.turn), agent, event)
                .await
                .map_err(|e| SinkError(e.to_string()))
        })
    }
}
