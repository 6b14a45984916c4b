//! What a model call of a session sends besides its conversation, as a turn now would
//! send it — for `/context`, `session/context` and `/compact`'s figures.

use std::path::PathBuf;

use stepper_engine::ModelRef;
use stepper_engine::catalogue::ModelInfo;
use stepper_engine::compaction::CompactionPlan;
use stepper_engine::media_tokens::Accounting;
use stepper_engine::prompt::Base;
use stepper_engine::tool::Tool;

use super::plan::instructions;
use crate::hub::context::{MAIN_LAYER, history};
use crate::hub::extensions::SkillTool;
use crate::hub::session::LiveSession;
use crate::hub::{HubDeps, HubError};

/// About what the environment and its context add to a request, for `/context`.
const ENVIRONMENT_BYTES: usize = 900;

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
    /// How the model counts the conversation's images and PDFs.
    pub(crate) accounting: Accounting,
}

impl Overhead {
    /// Its parts together.
    pub(crate) fn tokens(&self) -> u64 {
        self.system + self.memory + self.tools
    }
}

/// What a model call of `session` sends besides its conversation (see [`Overhead`]).
pub(crate) async fn overhead(deps: &HubDeps, session: &LiveSession) -> Result<Overhead, HubError> {
    use stepper_engine::compaction::tokens;
    let cwd = session.cwd();
    let home = session.env_and_mode().0.get("HOME").map(PathBuf::from);
    let settings = deps.settings.get(Some(&cwd)).await?;
    let model = session.model();
    let info = ModelRef::parse(&model)
        .map(|m| deps.providers.model_info(&m, &settings))
        .unwrap_or_default();
    let kind = ModelRef::parse(&model)
        .ok()
        .and_then(|m| deps.providers.kind_of(&m, &settings));
    let accounting = Accounting::of_call(kind, &model);
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
        accounting,
    })
}

/// `session/context`: what the session's next model call would send, by part.
pub(crate) async fn context_window(
    deps: &HubDeps,
    session: &LiveSession,
    session_id: &str,
) -> Result<stepper_protocol::methods::SessionContextResponse, HubError> {
    let overhead = overhead(deps, session).await?;
    // A stored context that cannot be read counts as empty here; the next turn says why.
    // Images and PDFs counted as the model counts them, not as their labels' bytes.
    let messages = history(&deps.store, session_id, MAIN_LAYER)
        .await
        .map(|m| stepper_engine::compaction::messages_tokens(overhead.accounting, &m))
        .unwrap_or(0);
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
