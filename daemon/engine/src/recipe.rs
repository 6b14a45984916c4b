//! An agent's recipe: from what the orchestrator asks to run ([`AgentRun`]: its tools, its
//! skills, its instructions, its limits) and what the host supplies — the resolved model
//! (provider, catalogue entry, dialect), the tool context whose gate decides, the hooks,
//! the secrets — the request and the [`AgentLoop`] that runs it. The host keeps only its
//! ports: resolving models, the gate, the places agents work in, hooks, where events go.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;

use crate::agent::{AgentLoop, DEFAULT_MAX_STEPS};
use crate::capability::Capability;
use crate::catalogue::ModelInfo;
use crate::compaction::CompactionPlan;
use crate::config::layers::permits;
use crate::config::memory::PathRule;
use crate::dialect::ToolDialect;
use crate::hooks::TurnHooks;
use crate::interrupt::Interrupt;
use crate::orchestrator::{AgentKind, AgentRun};
use crate::prompt::{Base, SystemPrompt, UserInstructions};
use crate::provider::{ChatMessage, ChatRequest, HostedTool, LlmProvider, ToolSpec};
use crate::redact::Redactor;
use crate::tool::{Tool, ToolCx, ToolResult, ToolSource};

/// The tools that name one file by `path`: a rule for that file comes with their result.
const PATH_TOOLS: &[&str] = &["read", "edit", "multi_edit", "write"];

/// Whether `run` may use the internal tool `name`. `apply_patch` stands in for edit and
/// write, so an agent that may use both may use it — unless it is denied by name (or as
/// the `edit` capability).
pub fn allows(run: &AgentRun, name: &str) -> bool {
    run.allows(name)
        || (name == "apply_patch"
            && !run.disallowed.iter().any(|t| t == name)
            && run.allows("edit")
            && run.allows("write"))
}

/// Whether `run` may change files: it has a tool of the `edit` capability. Without one, its
/// commands may not write either.
pub fn writes(run: &AgentRun) -> bool {
    Capability::Edit.tools().iter().any(|t| allows(run, t))
}

/// The tools of `tools` that `run` may use; with path rules, its file tools bring a rule
/// along on their first call on a file it covers. `home` is the session's folder, which a
/// worktree stands for.
pub fn tools_for(
    run: &AgentRun,
    tools: &[Arc<dyn Tool>],
    rules: &Arc<Vec<PathRule>>,
    home: &std::path::Path,
) -> Vec<Arc<dyn Tool>> {
    let tools = tools
        .iter()
        .filter(|t| allows(run, &t.spec().name))
        .cloned();
    if rules.is_empty() {
        return tools.collect();
    }
    let given = Arc::new(Mutex::new(HashSet::new()));
    tools
        .map(|tool| {
            if !PATH_TOOLS.contains(&tool.spec().name.as_str()) {
                return tool;
            }
            Arc::new(WithRules {
                tool,
                rules: Arc::clone(rules),
                given: Arc::clone(&given),
                home: home.to_path_buf(),
            }) as Arc<dyn Tool>
        })
        .collect()
}

/// The tools of `source` (an MCP pool) that `run` may use.
pub fn permitted(run: &AgentRun, source: &Arc<dyn ToolSource>) -> Arc<dyn ToolSource> {
    Arc::new(Permitted {
        source: Arc::clone(source),
        tools: run.tools.clone(),
        disallowed: run.disallowed.clone(),
    })
}

/// `run`'s system prompt: its model family's base instructions (unless it goes without, or
/// the user replaced them), where it works, the memory files, what the user appends, and
/// its own instructions.
pub fn system_prompt(
    run: &AgentRun,
    dialect: ToolDialect,
    instructions: &UserInstructions,
    environment: &str,
    memory: &str,
) -> String {
    SystemPrompt {
        dialect,
        base: if run.base {
            instructions.base()
        } else {
            Base::Left
        },
        environment,
        memory,
        append: instructions
            .append_system_prompt
            .as_deref()
            .unwrap_or_default(),
        agent: &run.instructions,
    }
    .render()
}

/// Add `text` to a system prompt as a part of its own.
pub fn append_part(system: &mut String, text: &str) {
    if !text.is_empty() {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(text);
    }
}

/// The first request of `run`'s loop: `model`'s id (without its provider), the
/// conversation, no longer an answer than `max_tokens` or the model's limit.
pub fn request(
    model: &str,
    messages: Vec<ChatMessage>,
    info: &ModelInfo,
    max_tokens: u32,
    system: String,
) -> ChatRequest {
    let id = crate::ModelRef::parse(model).map_or_else(|_| model.to_string(), |m| m.model);
    let mut request = ChatRequest::new(id, messages);
    request.max_tokens = info.max_output().min(max_tokens);
    if !system.is_empty() {
        request.system = Some(system);
    }
    request
}

/// What the host supplies for one agent's loop.
pub struct Ingredients {
    pub provider: Arc<dyn LlmProvider>,
    pub info: ModelInfo,
    pub dialect: ToolDialect,
    /// Tools the provider runs itself that the agent is offered.
    pub hosted: Vec<HostedTool>,
    pub tools: Vec<Arc<dyn Tool>>,
    /// Where its tools run, and the gate that decides whether they may.
    pub cx: ToolCx,
    /// MCP tools, already narrowed to what the agent may use.
    pub source: Option<Arc<dyn ToolSource>>,
    /// Every credential known, taken out of what tools return.
    pub secrets: Vec<String>,
    pub compaction: CompactionPlan,
    pub interrupt: Interrupt,
    /// What the user steered into the turn, for the layer that runs.
    pub steering: Arc<dyn Fn() -> Vec<String> + Send + Sync>,
    pub hooks: Option<Arc<dyn TurnHooks>>,
}

/// The loop that runs `run`.
pub fn agent_loop(run: &AgentRun, ingredients: Ingredients) -> AgentLoop {
    let Ingredients {
        provider,
        info,
        dialect,
        hosted,
        tools,
        cx,
        source,
        secrets,
        compaction,
        interrupt,
        steering,
        hooks,
    } = ingredients;
    let mut agent = AgentLoop::new(provider)
        .with_compaction(compaction)
        .with_redactor(Redactor::new(secrets))
        .with_model_info(info)
        .with_max_steps(run.max_steps.unwrap_or(DEFAULT_MAX_STEPS))
        .with_base_usage(run.base_usage, run.base_cost)
        .with_interrupt(interrupt)
        .with_dialect(dialect)
        .with_hosted(hosted)
        .with_tools(tools, cx);
    if let Some(source) = source {
        agent = agent.with_tool_source(source);
    }
    // Steering reaches the layer that runs; workers and subagents have their tasks. The
    // layer that answers (no id) answers what comes as it finishes too.
    if run.kind == AgentKind::Layer {
        agent = agent.with_steering(steering, run.id.is_none());
    }
    if let Some(hooks) = hooks {
        agent = agent.with_hooks(hooks);
    }
    agent
}

/// A file tool whose first call on a file a path rule covers brings that rule along (as
/// Claude Code gives `.claude/rules` with `paths:` when the agent works on such a file).
struct WithRules {
    tool: Arc<dyn Tool>,
    rules: Arc<Vec<PathRule>>,
    /// The rules this agent was given already.
    given: Arc<Mutex<HashSet<PathBuf>>>,
    /// The session's folder, which a worktree stands for.
    home: PathBuf,
}

impl Tool for WithRules {
    fn spec(&self) -> ToolSpec {
        self.tool.spec()
    }

    fn read_only(&self) -> bool {
        self.tool.read_only()
    }

    fn call<'a>(&'a self, args: serde_json::Value, cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
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

/// The tools of `source` an agent may use.
struct Permitted {
    source: Arc<dyn ToolSource>,
    tools: Option<Vec<String>>,
    disallowed: Vec<String>,
}

impl ToolSource for Permitted {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools = self.source.tools();
        tools.retain(|t| permits(self.tools.as_deref(), &self.disallowed, &t.spec().name));
        tools
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(tools: Option<&[&str]>, disallowed: &[&str]) -> AgentRun {
        AgentRun {
            id: Some("a1".into()),
            kind: AgentKind::Dispatched,
            name: "reviewer".into(),
            model: None,
            instructions: "Review the change.".into(),
            base: false,
            tools: tools.map(|t| t.iter().map(|s| s.to_string()).collect()),
            disallowed: disallowed.iter().map(|s| s.to_string()).collect(),
            skills: None,
            max_steps: None,
            extra_tools: Vec::new(),
            base_usage: Default::default(),
            base_cost: None,
            worktree: None,
        }
    }

    #[test]
    fn a_patch_goes_with_edit_and_write_unless_denied() {
        let both = run(Some(&["read", "edit", "write"]), &[]);
        assert!(allows(&both, "apply_patch"));
        assert!(writes(&both));
        let denied = run(Some(&["read", "edit", "write"]), &["apply_patch"]);
        assert!(!allows(&denied, "apply_patch"));
        let reader = run(Some(&["read", "grep"]), &[]);
        assert!(!allows(&reader, "apply_patch"));
        assert!(
            !writes(&reader),
            "an agent without an edit tool does not write"
        );
    }

    #[test]
    fn an_agent_without_base_gets_only_its_own_instructions_and_the_rest() {
        let mut system = system_prompt(
            &run(None, &[]),
            ToolDialect::Anthropic,
            &UserInstructions::default(),
            "<env>here</env>",
            "memory text",
        );
        assert!(system.contains("<env>here</env>"), "{system}");
        assert!(system.contains("memory text"), "{system}");
        assert!(system.ends_with("Review the change."), "{system}");
        let before = system.len();
        append_part(&mut system, "");
        assert_eq!(system.len(), before, "an empty part adds nothing");
        append_part(&mut system, "# From the user's hooks");
        assert!(system.ends_with("Review the change.\n\n# From the user's hooks"));
    }

    #[test]
    fn the_request_asks_no_more_than_the_cap_or_the_model_allows() {
        let info = ModelInfo::default();
        let request = request(
            "anthropic/claude-sonnet-4-5",
            vec![ChatMessage::user("hi".to_string())],
            &info,
            32_000,
            String::new(),
        );
        assert_eq!(request.model, "claude-sonnet-4-5");
        assert_eq!(request.max_tokens, info.max_output().min(32_000));
        assert_eq!(request.system, None, "no system prompt when there is none");
    }
}
