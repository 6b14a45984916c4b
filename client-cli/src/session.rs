//! What this terminal gives a session: its environment, and new sessions in its folder.

use std::path::Path;

use stepper_protocol::client::DaemonClient;
use stepper_protocol::methods::{SessionCreate, SessionCreateParams, SessionResponse};
use stepper_protocol::session::{Env, PermissionMode, SandboxMode};

/// This process's environment, which the session's tools and provider keys will use. None
/// of it goes to a daemon on another machine (`--host`): its sessions run with that
/// machine's login environment, and this one's keys stay here.
pub fn client_env() -> Env {
    if crate::remote::get().is_some() {
        return Env::new();
    }
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// What a new session may be given beyond its folder and this process's environment.
#[derive(Default)]
pub struct NewSession {
    pub model: Option<String>,
    pub mode: Option<PermissionMode>,
    pub sandbox: Option<SandboxMode>,
    /// An absolute path to record the model exchanges to.
    pub record: Option<String>,
    /// A first input, queued with the session in one commit.
    pub input: Option<String>,
    /// The first input's images and documents.
    pub input_parts: Vec<stepper_protocol::InputPart>,
    /// Instructions in place of stepper's own (`--system-prompt`).
    pub system_prompt: Option<String>,
    /// Instructions after stepper's own (`--append-system-prompt`).
    pub append_system_prompt: Option<String>,
}

/// Create a session in `cwd` with this process's environment.
pub async fn create(
    client: &DaemonClient,
    cwd: &Path,
    new: NewSession,
) -> anyhow::Result<SessionResponse> {
    Ok(client
        .call::<SessionCreate>(SessionCreateParams {
            input_parts: new.input_parts,
            cwd: cwd.display().to_string(),
            env: client_env(),
            model: new.model,
            title: None,
            record: new.record,
            mode: new.mode,
            sandbox: new.sandbox,
            input: new.input,
            system_prompt: new.system_prompt,
            append_system_prompt: new.append_system_prompt,
        })
        .await?)
}

/// The session `given` names: its id, or any unique prefix of the id or of its short form
/// (as `stepper sessions` shows it). A prefix that names several is refused with the
/// candidates, and one that names none with where to look.
pub async fn resolve(client: &DaemonClient, given: &str) -> anyhow::Result<String> {
    use stepper_protocol::methods::{SessionList, SessionListParams};
    use stepper_protocol::session::{id_matches, short_ids};
    // A whole id goes as it is: the daemon says whether it exists.
    if given.len() == 36 && given.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return Ok(given.to_string());
    }
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let page = client
            .call::<SessionList>(SessionListParams {
                cwd: None,
                limit: Some(500),
                cursor,
            })
            .await?;
        all.extend(page.sessions);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
    let short = short_ids(&ids);
    let found: Vec<usize> = (0..all.len())
        .filter(|&i| id_matches(&all[i].id, given))
        .collect();
    match found[..] {
        [i] => Ok(all[i].id.clone()),
        [] => anyhow::bail!("no session matches {given:?} — 'stepper sessions' lists them"),
        _ => {
            let mut said = format!(
                "{given:?} names {} sessions — give more of the id:",
                found.len()
            );
            for &i in found.iter().take(10) {
                let s = &all[i];
                said.push_str(&format!(
                    "\n  {}  {}  {}",
                    short[i],
                    s.title.as_deref().unwrap_or("(untitled)"),
                    s.cwd
                ));
            }
            if found.len() > 10 {
                said.push_str(&format!("\n  … and {} more", found.len() - 10));
            }
            anyhow::bail!(said)
        }
    }
}
