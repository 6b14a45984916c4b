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
