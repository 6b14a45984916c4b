//! `TurnHost`: the daemon's side of the engine's orchestrator. It builds each agent loop of
//! a turn — its model's provider, its tools filtered by its layer, its instructions, its
//! gate (tagged with its agent id; read-only for an agent that cannot write; judging a
//! worktree agent's calls as made in the session's folder), its hooks — makes worktrees for
//! isolated agents and merges them back, and logs events tagged with agent ids.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use stepper_engine::capability::Capability;
use stepper_engine::catalogue::ModelInfo;
use stepper_engine::compaction::CompactionPlan;
use stepper_engine::config::memory::PathRule;
use stepper_engine::config::{ProviderKind, SandboxMode, Settings};
use stepper_engine::gate::Verdict;
use stepper_engine::hooks::HookEvent;
use stepper_engine::interrupt::Interrupt;
use stepper_engine::orchestrator::{AgentHost, AgentKind, AgentRun, Isolated, Merge};
use stepper_engine::prompt::environment::CONTEXT_TAG;
use stepper_engine::prompt::{Base, SystemPrompt, UserInstructions};
use stepper_engine::redact::Redactor;
use stepper_engine::tool::{GateRequest, Tool, ToolCx, ToolSource};
use stepper_engine::{
    AgentLoop, ChatMessage, ChatRequest, ContentPart, HostedTool, LlmProvider, ModelRef,
    TurnOutcome, agent::SinkError,
};
use stepper_protocol::AppEvent;
use stepper_protocol::session::Env;
use stepper_providers::{ResolveContext, Resolved};
use tokio_util::sync::CancellationToken;

use super::approvals::{ReadOnly, SessionGate};
use super::extensions::SkillTool;
use super::hooks::{HookRunner, SessionHooks};
use super::log::EventLog;
use super::turn::{AgentSink, MAX_TOKENS, summarizer};

/// The tools that name one file by `path`: a rule for that file comes with their result.
const PATH_TOOLS: &[&str] = &["read", "edit", "multi_edit", "write"];

/// A file tool whose first call on a file a path rule covers brings that rule along (as
/// Claude Code gives `.claude/rules` with `paths:` when the agent works on such a file).
struct WithRules {
    tool: Arc<dyn Tool>,
    rules: Arc<Vec<PathRule>>,
    /// The rules this agent was given already.
    given: Arc<Mutex<std::collections::HashSet<PathBuf>>>,
    /// The session's folder, which a worktree stands for.
    home: PathBuf,
}

impl Tool for WithRules {
    fn spec(&self) -> stepper_engine::tool::ToolSpec {
        self.tool.spec()
    }

    fn read_only(&self) -> bool {
        self.tool.read_only()
    }

    fn call<'a>(
        &'a self,
        args: serde_json::Value,
        cx: &'a ToolCx,
    ) -> BoxFuture<'a, stepper_engine::tool::ToolResult> {
        Box::pin(async move {
            let file = args
                .get("path")
                .and_then(serde_json::Value::as_str)
                .map(|p| cx.cwd.join(p));
            let mut out = self.tool.call(args, cx).await?;
            let Some(file) = file else {
                return Ok(out);
            };
            // In a worktree, the file it stands for in the session's folder.
            let file = match file.strip_prefix(&cx.project_root) {
                Ok(rest) => self.home.join(rest),
                Err(_) => file,
            };
            for rule in self.rules.iter().filter(|r| r.applies_to(&file)) {
                let first = self
                    .given
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(rule.path.clone());
                if first {
                    out.content.push_str(&format!(
                        "\n\n<system-reminder>\nInstructions for files matching {} (from {}):\n\n{}\n</system-reminder>",
                        rule.globs.join(", "),
                        rule.path.display(),
                        rule.text
                    ));
                }
            }
            Ok(out)
        })
    }
}

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
    pub(super) worktrees: Result<Arc<super::worktree::Worktrees>, String>,
    /// The daemon's sandboxes and the session's choice, to confine commands in a worktree.
    pub(super) sandboxes: (Arc<super::sandbox::Sandboxes>, Option<SandboxMode>),
    /// The worktree and sandbox of each isolated agent, by id.
    pub(super) places: Mutex<HashMap<String, Place>>,
    /// Where the commands of agents that may not change files run.
    pub(super) read_only: super::sandbox::ReadOnly,
}

/// Where an isolated agent works.
pub(super) struct Place {
    pub(super) cwd: PathBuf,
    /// The worktree's top.
    pub(super) top: PathBuf,
    pub(super) sandbox: Option<Arc<stepper_engine::tool::CommandSandbox>>,
}

/// The tools of `source` an agent may use.
struct Permitted {
    source: Arc<dyn ToolSource>,
    tools: Option<Vec<String>>,
    disallowed: Vec<String>,
}

impl ToolSource for Permitted {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools = self.source.tools();
        tools.retain(|t| {
            stepper_engine::config::layers::permits(
                self.tools.as_deref(),
                &self.disallowed,
                &t.spec().name,
            )
        });
        tools
    }
}

/// Whether `run` may use the internal tool `name`. `apply_patch` stands in for edit and
/// write, so an agent that may use both may use it — unless it is denied by name (or as
/// the `edit` capability).
fn allows(run: &AgentRun, name: &str) -> bool {
    run.allows(name)
        || (name == "apply_patch"
            && !run.disallowed.iter().any(|t| t == name)
            && run.allows("edit")
            && run.allows("write"))
}

/// Whether `run` may change files: it has a tool of the `edit` capability. Without one, its
/// commands may not write either.
fn writes(run: &AgentRun) -> bool {
    Capability::Edit.tools().iter().any(|t| allows(run, t))
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
            Err(error) => return TurnOutcome::failed(error),
        };
        let dialect = resolved.dialect();
        let kind = resolved.kind;
        let Resolved {
            provider,
            info,
            secrets: more_secrets,
            ..
        } = resolved;
        let mut tools: Vec<Arc<dyn Tool>> = self
            .tools
            .iter()
            .filter(|t| allows(&run, &t.spec().name))
            .cloned()
            .collect();
        if !self.path_rules.is_empty() {
            let given = Arc::new(Mutex::new(std::collections::HashSet::new()));
            tools = tools
                .into_iter()
                .map(|tool| {
                    if !PATH_TOOLS.contains(&tool.spec().name.as_str()) {
                        return tool;
                    }
                    Arc::new(WithRules {
                        tool,
                        rules: Arc::clone(&self.path_rules),
                        given: Arc::clone(&given),
                        home: self.cx.cwd.clone(),
                    }) as Arc<dyn Tool>
                })
                .collect();
        }
        // An isolated agent works in its worktree: its folder, its sandbox, its environment.
        let place = run.id.as_ref().and_then(|id| {
            self.places
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(id)
                .map(|p| (p.cwd.clone(), p.top.clone(), p.sandbox.clone()))
        });
        let environment = match &place {
            Some((cwd, top, _)) => stepper_engine::prompt::Environment {
                repository: self.facts.repository.as_ref().map(|_| top.clone()),
                cwd: cwd.clone(),
                worktree_of: Some(self.cx.cwd.clone()),
                ..self.facts.clone()
            }
            .render(),
            None => self.environment.clone(),
        };
        let mut system = SystemPrompt {
            dialect,
            base: if run.base {
                self.instructions.base()
            } else {
                Base::Left
            },
            environment: &environment,
            memory: &self.memory,
            append: self
                .instructions
                .append_system_prompt
                .as_deref()
                .unwrap_or_default(),
            agent: &run.instructions,
        }
        .render();
        let mut add = |text: &str| {
            if !text.is_empty() {
                if !system.is_empty() {
                    system.push_str("\n\n");
                }
                system.push_str(text);
            }
        };
        let skills: Vec<_> = self
            .skills
            .skills
            .iter()
            .filter(|s| run.offers_skill(&s.name))
            .cloned()
            .collect();
        if !skills.is_empty() && run.allows("skill") {
            let tool = SkillTool {
                skills,
                session: self.skills.session.clone(),
            };
            add(&tool.listing_for(info.context_window()));
            tools.push(Arc::new(tool));
        }
        tools.extend(
            run.extra_tools
                .iter()
                .filter(|t| !run.disallowed.contains(&t.spec().name))
                .cloned(),
        );
        let mut request = ChatRequest::new(
            ModelRef::parse(&model).map_or_else(|_| model.clone(), |m| m.model),
            messages,
        );
        request.max_tokens = info.max_output().min(MAX_TOKENS);
        request.cache = self.settings.prompt_cache();
        if !system.is_empty() {
            request.system = Some(system);
        }
        let mut cx = self.cx.clone();
        let mut gate = SessionGate {
            agent: run.id.clone(),
            ..self.gate.clone()
        };
        if let Some((cwd, _, sandbox)) = place {
            // The gate judges what it does as if done in the session's folder, which the
            // worktree stands for.
            gate.folder = Some((cwd.clone(), self.cx.cwd.clone()));
            cx.project_root = cwd.clone();
            cx.cwd = cwd;
            if sandbox.is_some() {
                cx.sandbox = sandbox;
            }
        }
        // An agent that may not change files runs its commands in the read-only sandbox, or
        // where there is none, only those plan mode runs.
        if !writes(&run) {
            let sandboxed = if allows(&run, "bash") {
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
        let mut secrets = self.secrets.clone();
        secrets.extend(more_secrets);
        let plan = CompactionPlan {
            threshold: self.settings.compaction_threshold(),
            window: info.context_window(),
            summarizer: self.summarizer(),
        };
        let mut agent = AgentLoop::new(provider)
            .with_compaction(plan)
            .with_redactor(Redactor::new(secrets))
            .with_model_info(info)
            .with_max_steps(
                run.max_steps
                    .unwrap_or(stepper_engine::agent::DEFAULT_MAX_STEPS),
            )
            .with_base_usage(run.base_usage, run.base_cost)
            .with_interrupt(self.interrupt.clone())
            .with_dialect(dialect)
            .with_hosted(self.hosted(&run, kind))
            .with_tools(tools, cx);
        if let Some(source) = &self.mcp {
            agent = agent.with_tool_source(Arc::new(Permitted {
                source: Arc::clone(source),
                tools: run.tools.clone(),
                disallowed: run.disallowed.clone(),
            }));
        }
        // Steering reaches the layer that runs; workers and subagents have their tasks. The
        // layer that answers (no id) answers what comes as it finishes too.
        if run.kind == AgentKind::Layer {
            agent = agent.with_steering(Arc::clone(&self.steering), run.id.is_none());
        }
        let subagent = run.kind != AgentKind::Layer;
        if let Some(runner) = &self.hooks {
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
                // What the hooks add goes to the subagent, as Claude Code gives it.
                let added = HookRunner::additional_context(&ran);
                if !added.is_empty() {
                    let system = request.system.get_or_insert_with(String::new);
                    if !system.is_empty() {
                        system.push_str("\n\n");
                    }
                    system.push_str("# From the user's hooks\n\n");
                    system.push_str(&added.join("\n\n"));
                }
            }
            let stop_event = match (subagent, &run.id) {
                (true, _) => Some(HookEvent::SubagentStop),
                (false, None) => Some(HookEvent::Stop),
                // A layer before the last: the turn has not stopped.
                (false, Some(_)) => None,
            };
            agent = agent.with_hooks(Arc::new(SessionHooks {
                runner: Arc::clone(runner),
                stop_event,
                subagent: run
                    .id
                    .clone()
                    .filter(|_| subagent)
                    .map(|id| (id, run.name.clone())),
            }));
        }
        let sink = AgentSink {
            log: &self.log,
            turn: self.turn,
            agent: run.id,
        };
        agent.run(request, self.cancel.clone(), &sink).await
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
