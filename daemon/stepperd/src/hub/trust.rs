//! Folder trust as the daemon applies it: what a folder's project files ask for that waits
//! for the user's trust (settings that widen, `.mcp.json` servers, commands that run
//! programs or allow tools), said to clients before they ask and to sessions as a notice.
//! The decisions themselves are the engine's (`stepper_engine::config::trust`), kept in the
//! user's config folder.

use std::path::{Path, PathBuf};

use stepper_engine::config::extensions::Extensions;
use stepper_engine::config::trust::{self, Trust};

use super::HubDeps;
use super::settings::SettingsError;

/// A folder as trust sees it.
#[derive(Debug, Clone)]
pub struct Report {
    /// What trusting from this folder records: its repository's top, else the folder.
    pub folder: PathBuf,
    pub trust: Trust,
    /// What the project's files ask for that applies only once the folder is trusted.
    pub ignored: Vec<String>,
    /// Why `folder` should not be trusted as a whole (the home folder, `/`).
    pub too_broad: Option<String>,
}

impl Report {
    /// The notice a session in an untrusted folder gets, once: what was left out and the
    /// command that trusts the folder. `None` when nothing was.
    pub fn notice(&self) -> Option<String> {
        if self.trust.trusted || self.ignored.is_empty() {
            return None;
        }
        Some(format!(
            "{} is not a folder you trust, so what its files ask for is left out: {} — if you \
             trust it, run `stepper trust {}`",
            self.folder.display(),
            self.ignored.join("; "),
            shell_quoted(&self.folder)
        ))
    }
}

/// The trust report of `cwd` for a user whose home is `home`.
pub async fn report(
    deps: &HubDeps,
    cwd: &Path,
    home: Option<&Path>,
) -> Result<Report, SettingsError> {
    let here = deps.settings.folder(Some(cwd)).await?;
    let mut ignored = here.ignored.clone();
    if !here.trust.trusted {
        let dir = cwd.to_path_buf();
        let servers = tokio::task::spawn_blocking(move || super::mcp::project_servers(&dir))
            .await
            .unwrap_or_default();
        if let Some((file, names)) = servers {
            ignored.push(format!("{file}: MCP servers ({})", names.join(", ")));
        }
        let ext = deps.extensions.get(cwd, home).await;
        ignored.extend(running_commands(&ext));
    }
    let folder = {
        let cwd = cwd.to_path_buf();
        tokio::task::spawn_blocking(move || trust::target(&cwd))
            .await
            .map_err(|e| SettingsError::Task(e.to_string()))?
    };
    let too_broad = trust::too_broad(&folder, home);
    Ok(Report {
        folder,
        trust: here.trust.clone(),
        ignored,
        too_broad,
    })
}

/// The project's commands and skills that run programs (`` !`cmd` ``) or allow tools
/// (`allowed-tools`) when invoked: neither happens in a folder the user has not trusted.
fn running_commands(ext: &Extensions) -> Vec<String> {
    let mut out = Vec::new();
    for c in ext.commands.iter().filter(|c| c.scope == "project") {
        let what = what_runs(&c.body, &c.allowed_tools);
        if !what.is_empty() {
            out.push(format!("/{} ({})", c.name, what.join(", ")));
        }
    }
    for s in ext.skills.iter().filter(|s| s.scope == "project") {
        let what = what_runs(&s.body, &s.allowed_tools);
        if !what.is_empty() {
            out.push(format!("skill {} ({})", s.name, what.join(", ")));
        }
    }
    out
}

fn what_runs(body: &str, allowed_tools: &[String]) -> Vec<&'static str> {
    let mut what = Vec::new();
    if body.contains("!`") {
        what.push("runs commands");
    }
    if !allowed_tools.is_empty() {
        what.push("allows tools");
    }
    what
}

/// A path as one shell word.
pub fn shell_quoted(path: &Path) -> String {
    let text = path.display().to_string();
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-~+".contains(c))
    {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}
