//! What a folder's files say about how a turn there runs: its memory (instructions), the
//! layers of `stepper.md`, and the subagents it can dispatch. Read off the runtime.

use std::path::Path;
use std::sync::Arc;

use stepper_engine::config::layers::{self, AgentDef, Layers};
use stepper_engine::config::{extensions, memory};
use stepper_engine::tool::Tool;

use crate::hub::HubDeps;

/// The instructions a turn in `cwd` is given (`stepper.md`, `AGENTS.md`, `CLAUDE.md` and
/// their imports), read off the runtime.
pub(crate) async fn instructions(
    cwd: &Path,
    home: Option<&Path>,
    settings: &stepper_engine::config::Settings,
    config_dir: &Path,
) -> memory::Memory {
    let (cwd, home, config_dir) = (
        cwd.to_path_buf(),
        home.map(Path::to_path_buf),
        config_dir.to_path_buf(),
    );
    let cap = settings.memory_max_bytes.unwrap_or(memory::DEFAULT_CAP);
    tokio::task::spawn_blocking(move || memory::load(&cwd, &config_dir, home.as_deref(), cap))
        .await
        .unwrap_or_default()
}

/// How a turn in a folder runs: its layers and the subagents it can dispatch.
pub(super) struct TurnPlan {
    pub(super) layers: Layers,
    pub(super) problems: Vec<extensions::Problem>,
    pub(super) agents: Vec<AgentDef>,
    pub(super) agent_problems: Vec<extensions::Problem>,
}

impl TurnPlan {
    /// Why the turn cannot run, with the fix.
    pub(super) fn failure(&self) -> String {
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

/// The plan of a turn in `cwd`.
pub(super) async fn plan(cwd: &Path, home: Option<&Path>, deps: &HubDeps) -> TurnPlan {
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
