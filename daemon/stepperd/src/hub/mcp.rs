//! The daemon's MCP servers, by the settings of a turn's folder: the pool
//! (`stepper_mcp::Pool`) starts them in the background, shares them between the folder's
//! sessions, starts them again with backoff and stops them when idle (after a while, or past
//! `mcpMaxIdleServers`); their tools join the turn's, read again before every model call.
//!
//! Servers in the user's own `setting.json` run. A server a project names (its `.mcp.json`,
//! Claude Code's file, or its `.stepper/setting.json`) runs a command from the repository,
//! so it runs only once the user approved it, as Claude Code has it:
//! `enableAllProjectMcpServers`, `enabledMcpjsonServers`, `disabledMcpjsonServers` — read from
//! the user's `setting.json` and the project's git-ignored `setting.local.json` only, never
//! from files the repository ships.

pub mod edit;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use stepper_engine::config::Settings;
use stepper_engine::tool::{Sampler, Sampling};
use stepper_mcp::oauth::OAuthError;
use stepper_mcp::{IdleCap, McpTools, Pool, Servers, State, parse_servers};
use stepper_protocol::methods::{
    McpRunningResponse, McpRunningServer, McpScope, McpServerInfo, McpStatus, McpTransport,
};
use stepper_protocol::session::Env;

pub struct McpPool {
    pool: Pool,
    /// Where the user's `setting.json` is.
    config_dir: PathBuf,
    /// Sign-ins under way, by id: the folder and server they are for.
    logins: std::sync::Mutex<HashMap<String, (PathBuf, String, stepper_mcp::oauth::Login)>>,
}

/// Why `mcp/waitLogin` did not sign in: told apart as `auth/waitLogin` tells them.
#[derive(Debug, thiserror::Error)]
pub enum WaitLoginError {
    #[error("no sign-in {0} is under way — begin one with `stepper mcp login NAME`")]
    Unknown(String),
    /// The sign-in ran and failed (refused, timed out, the server unreachable).
    #[error("{0}")]
    Failed(#[from] OAuthError),
}

/// Why an `mcp/*` method could not do what it was asked, by what the caller can do about
/// it (`rpc::error` gives each its error kind).
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("there is no MCP server {0:?} here — see `stepper mcp list`")]
    NoSuchServer(String),
    #[error(
        "{0:?} is in the .mcp.json of a folder you have not trusted — if you trust it, run \
         `stepper trust` there first"
    )]
    Untrusted(String),
    #[error("MCP server {0:?} is not a streamable HTTP server: only those sign in")]
    NotRemote(String),
    /// The server's entry in a settings file (or `.mcp.json`) is not usable as written.
    #[error("{0}")]
    BadConfig(String),
    /// The entry `mcp/add` was given is not a server.
    #[error("{0}")]
    BadEntry(String),
    #[error(
        "add a local server to .stepper/setting.local.json by hand, or use --scope user or \
         --scope project"
    )]
    LocalScope,
    /// A settings file cannot be changed as it is (it has comments, it is not an object):
    /// the message names it and what to do.
    #[error("{0}")]
    File(String),
    /// Reading or writing a file failed on this machine.
    #[error("{0}")]
    Io(String),
    #[error("signing in to MCP servers is off in this daemon")]
    LoginsOff,
    #[error("MCP server {server:?}: {error}")]
    SignIn { server: String, error: OAuthError },
}

/// How long a sign-in waits for the browser.
const LOGIN_WAIT: Duration = Duration::from_secs(10 * 60);

impl McpPool {
    pub fn new(config_dir: PathBuf, pool: Pool) -> McpPool {
        McpPool {
            pool,
            config_dir,
            logins: Default::default(),
        }
    }

    /// `mcp/login`: begin signing in to the remote server `name` of `cwd`.
    pub async fn begin_login(
        &self,
        cwd: &Path,
        name: &str,
        settings: McpSettings<'_>,
        env: &Env,
    ) -> Result<(String, String), McpError> {
        let (url, client) = self.remote(cwd, name, settings, env)?;
        let tokens = self.pool.tokens().ok_or(McpError::LoginsOff)?;
        let login = stepper_mcp::oauth::begin_login(&url, tokens, client.as_ref())
            .await
            .map_err(|error| McpError::SignIn {
                server: name.to_string(),
                error,
            })?;
        let id = uuid::Uuid::now_v7().to_string();
        let open = login.url.clone();
        self.logins
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), (cwd.to_path_buf(), name.to_string(), login));
        Ok((id, open))
    }

    /// `mcp/waitLogin`: the sign-in `id` completed (its tokens stored), and the server starts
    /// afresh at its next use.
    pub async fn wait_login(&self, id: &str) -> Result<(), WaitLoginError> {
        let Some((cwd, name, login)) = self
            .logins
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id)
        else {
            return Err(WaitLoginError::Unknown(id.to_string()));
        };
        login.finish(LOGIN_WAIT).await?;
        self.pool.restart(&cwd, &name);
        Ok(())
    }

    /// `mcp/logout`: forget the sign-in of the remote server `name` of `cwd`.
    pub fn logout(
        &self,
        cwd: &Path,
        name: &str,
        settings: McpSettings<'_>,
        env: &Env,
    ) -> Result<bool, McpError> {
        let (url, _) = self.remote(cwd, name, settings, env)?;
        let Some(tokens) = self.pool.tokens() else {
            return Ok(false);
        };
        let removed = tokens
            .forget(&url)
            .map_err(|e| McpError::Io(format!("cannot forget {name:?}'s sign-in: {e}")))?;
        self.pool.restart(cwd, name);
        Ok(removed)
    }

    /// `mcp/pending`: the project's servers waiting for approval, none started.
    pub fn pending(&self, cwd: &Path, settings: McpSettings<'_>) -> Vec<McpServerInfo> {
        let (configured, _) = configured(&self.config_dir, cwd, settings);
        configured
            .into_iter()
            .filter(|c| c.standing == McpStatus::NotApproved)
            .map(|c| McpServerInfo {
                transport: {
                    let one: ServerMap = [(c.name.clone(), c.value.clone())].into();
                    parse_servers(&one, &Env::new())
                        .0
                        .first()
                        .map_or(McpTransport::Invalid, |s| {
                            McpTransport::parse(s.transport.word())
                        })
                },
                target: target(&c.value),
                name: c.name,
                scope: c.scope,
                source: c.source.display().to_string(),
                status: McpStatus::NotApproved,
                reason: None,
                tools: Vec::new(),
                protocol_version: None,
                memory_bytes: None,
            })
            .collect()
    }

    /// The URL of the streamable HTTP server `name` configured for `cwd`, and the client its
    /// owner registered for it (`oauth`), if any.
    fn remote(
        &self,
        cwd: &Path,
        name: &str,
        settings: McpSettings<'_>,
        env: &Env,
    ) -> Result<(String, Option<stepper_mcp::OAuthClient>), McpError> {
        let (configured, _) = configured(&self.config_dir, cwd, settings);
        let Some(found) = configured.into_iter().find(|c| c.name == name) else {
            return Err(McpError::NoSuchServer(name.to_string()));
        };
        if found.standing == McpStatus::Untrusted {
            return Err(McpError::Untrusted(name.to_string()));
        }
        let one: ServerMap = [(found.name.clone(), found.value)].into_iter().collect();
        let (specs, problems) = parse_servers(&one, env);
        match specs.into_iter().next().map(|s| s.transport) {
            Some(stepper_mcp::Transport::Http {
                url,
                sse: false,
                oauth,
                ..
            }) => Ok((url, oauth)),
            Some(_) => Err(McpError::NotRemote(name.to_string())),
            None => Err(McpError::BadConfig(
                problems.into_iter().next().unwrap_or_default(),
            )),
        }
    }

    pub fn config_dir(&self) -> &Path {
        &self.config_dir
    }

    /// Stop the servers idle for `STEPPER_MCP_IDLE_MS`, checking a few times per period.
    pub fn reap_idle(&self) -> tokio::task::JoinHandle<()> {
        let pool = self.pool.clone();
        let idle = stepper_mcp::idle_timeout();
        let every = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                pool.reap(idle);
            }
        })
    }

    /// The servers a turn in `cwd` has (`user`: the user's own settings, `trusted`: those
    /// and the project's `setting.local.json`, `merged`: every file's), starting those that
    /// do not run; a server's first start is waited for. What went wrong, as notices.
    ///
    /// With `sampler` (`mcpSampling` on), the servers are offered the session's model.
    pub async fn tools(
        &self,
        cwd: &Path,
        settings: McpSettings<'_>,
        env: &Env,
        sampler: Option<Arc<dyn Sampler>>,
    ) -> (Option<Arc<McpTools>>, Vec<String>) {
        let (configured, mut notices) = configured(&self.config_dir, cwd, settings);
        let waiting: Vec<&str> = configured
            .iter()
            .filter(|c| c.standing == McpStatus::NotApproved)
            .map(|c| c.name.as_str())
            .collect();
        if !waiting.is_empty() {
            notices.push(format!(
                "the project's MCP servers {} are not approved, so they do not run — approve them \
                 with `stepper mcp approve` (or `stepper ask` at a terminal asks), or put \
                 \"enabledMcpjsonServers\": [{}] (or \"enableAllProjectMcpServers\": true) in \
                 ~/.config/stepper/setting.json or .stepper/setting.local.json",
                waiting.join(", "),
                waiting
                    .iter()
                    .map(|n| format!("\"{n}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let servers: BTreeMap<String, serde_json::Value> = configured
            .into_iter()
            .filter(|c| c.standing == McpStatus::Connected)
            .map(|c| (c.name, c.value))
            .collect();
        let (mut specs, problems) = parse_servers(&servers, env);
        notices.extend(problems);
        if specs.is_empty() {
            return (None, notices);
        }
        for spec in &mut specs {
            spec.sampling = sampler.is_some();
        }
        let servers = self.start(cwd, &specs, env, settings.idle_cap()).await;
        notices.extend(servers.notices());
        let tools = McpTools {
            servers: Arc::new(servers),
            sampler,
        };
        (Some(Arc::new(tools)), notices)
    }

    /// The servers of `specs`, their first start waited for.
    async fn start(
        &self,
        cwd: &Path,
        specs: &[stepper_mcp::ServerSpec],
        env: &Env,
        cap: IdleCap,
    ) -> Servers {
        let servers = self.pool.session(cwd, specs, env, cap);
        // The connect timeout ends a first start; the margin lets it say so itself.
        servers
            .settle(stepper_mcp::connect_timeout() + Duration::from_millis(250))
            .await;
        servers
    }

    /// The prompts of the servers running for `cwd` now, as slash commands
    /// (`mcp__server__prompt`; a server not running is not started for a listing).
    pub async fn prompt_commands(&self, cwd: &Path) -> Vec<stepper_protocol::methods::CommandInfo> {
        let mut commands = Vec::new();
        for (name, server) in self.pool.running_in(cwd) {
            let Ok(prompts) = server.prompts(Duration::from_secs(2)).await else {
                continue;
            };
            for p in prompts {
                let args: Vec<String> = p
                    .arguments
                    .iter()
                    .flatten()
                    .map(|a| a.name.to_uppercase())
                    .collect();
                commands.push(stepper_protocol::methods::CommandInfo {
                    name: stepper_mcp::tool_name(&name, &p.name),
                    description: p
                        .description
                        .clone()
                        .or(p.title.clone())
                        .unwrap_or_else(|| {
                            format!("the {} prompt of the MCP server {name}", p.name)
                        }),
                    argument_hint: (!args.is_empty()).then(|| args.join(" ")),
                    kind: stepper_protocol::methods::CommandKind::Mcp,
                    scope: None,
                });
            }
        }
        commands
    }

    /// `mcp/running`: every server running now, of every folder, with the user's cap.
    pub async fn running(&self, user: &Settings) -> McpRunningResponse {
        let running = self.pool.running();
        let memory: Vec<Option<u64>> = {
            let servers: Vec<_> = running.iter().map(|r| Arc::clone(&r.server)).collect();
            tokio::task::spawn_blocking(move || servers.iter().map(|s| s.memory()).collect())
                .await
                .unwrap_or_else(|_| vec![None; running.len()])
        };
        let servers = running
            .into_iter()
            .zip(memory)
            .map(|(r, memory_bytes)| McpRunningServer {
                cwd: r.cwd.display().to_string(),
                name: r.name,
                transport: McpTransport::parse(r.transport),
                in_use: r.in_use,
                idle_ms: u64::try_from(r.idle_for.as_millis()).unwrap_or(u64::MAX),
                memory_bytes,
            })
            .collect();
        McpRunningResponse {
            servers,
            max_idle: user
                .mcp_max_idle_servers
                .unwrap_or(stepper_engine::config::DEFAULT_MCP_MAX_IDLE_SERVERS),
            idle_timeout_ms: u64::try_from(stepper_mcp::idle_timeout().as_millis())
                .unwrap_or(u64::MAX),
        }
    }

    /// `mcp/list`: every server configured for `cwd`; those that may run are started, but
    /// for those stopped while idle (shown as such: a listing is no use of a server).
    pub async fn list(
        &self,
        cwd: &Path,
        settings: McpSettings<'_>,
        env: &Env,
    ) -> Vec<McpServerInfo> {
        let (configured, _) = configured(&self.config_dir, cwd, settings);
        let mut infos = Vec::new();
        let mut runnable = Vec::new();
        for c in configured {
            let one: BTreeMap<_, _> = [(c.name.clone(), c.value.clone())].into_iter().collect();
            let (mut spec, problems) = parse_servers(&one, env);
            // The same start as a turn's: offered sampling when the settings lend the model.
            for s in &mut spec {
                s.sampling = settings.merged.mcp_sampling == Some(true);
            }
            let mut info = McpServerInfo {
                name: c.name.clone(),
                scope: c.scope,
                source: c.source.display().to_string(),
                transport: spec.first().map_or(McpTransport::Invalid, |s| {
                    McpTransport::parse(s.transport.word())
                }),
                target: target(&c.value),
                status: c.standing,
                reason: None,
                tools: Vec::new(),
                protocol_version: None,
                memory_bytes: None,
            };
            match spec.into_iter().next() {
                None => {
                    info.status = McpStatus::Invalid;
                    info.reason = problems.into_iter().next();
                }
                Some(spec) if c.standing == McpStatus::Connected => {
                    match self.pool.stopped(cwd, &spec) {
                        Some(stopped) => {
                            info.status = McpStatus::Stopped;
                            info.reason = Some(stopped.why);
                            info.tools = stopped
                                .tools
                                .iter()
                                .map(|t| stepper_mcp::tool_name(&info.name, &t.name))
                                .collect();
                        }
                        None => runnable.push((infos.len(), spec)),
                    }
                }
                Some(_) => {}
            }
            infos.push(info);
        }
        let specs: Vec<_> = runnable.iter().map(|(_, s)| s.clone()).collect();
        let servers = self.start(cwd, &specs, env, settings.idle_cap()).await;
        let mut measured = Vec::new();
        for ((at, _), slot) in runnable.iter().zip(&servers.slots) {
            let info = &mut infos[*at];
            match slot.state() {
                State::Ready(server) => {
                    info.protocol_version = Some(server.protocol_version.clone());
                    info.tools = server
                        .tools()
                        .iter()
                        .map(|t| stepper_mcp::tool_name(&info.name, &t.name))
                        .collect();
                    measured.push((*at, server));
                }
                State::Starting => info.status = McpStatus::Starting,
                State::Failed(why) => {
                    info.status = if why.starts_with(stepper_mcp::server::NEEDS_LOGIN) {
                        McpStatus::NeedsLogin
                    } else {
                        McpStatus::Failed
                    };
                    info.reason = Some(why);
                }
            }
        }
        // Read from /proc: off the runtime's threads.
        let memory = tokio::task::spawn_blocking(move || {
            measured
                .into_iter()
                .map(|(at, server)| (at, server.memory()))
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        for (at, bytes) in memory {
            infos[at].memory_bytes = bytes;
        }
        infos
    }
}

/// `config/validate`'s MCP part: what is wrong in the `mcpServers` of `files` (settings,
/// JSON with comments) and of the project's `.mcp.json`, as (file, line, column, message).
pub fn validate(cwd: &Path, files: &[PathBuf]) -> Vec<(PathBuf, usize, usize, String)> {
    let mut problems = Vec::new();
    let mut check = |path: &Path, text: &str, servers: &serde_json::Value| {
        let Some(servers) = servers.as_object() else {
            problems.push((
                path.to_path_buf(),
                line_of(text, "\"mcpServers\""),
                1,
                "`mcpServers` must be an object of servers by name".to_string(),
            ));
            return;
        };
        let servers: ServerMap = servers.clone().into_iter().collect();
        for (name, value) in &servers {
            let one: ServerMap = [(name.clone(), value.clone())].into_iter().collect();
            if let Some(problem) = parse_servers(&one, &Env::new()).1.into_iter().next() {
                let line = line_of(text, &format!("\"{name}\""));
                problems.push((path.to_path_buf(), line, 1, problem));
            }
        }
    };
    for path in files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        // A file that does not parse is the settings check's to report.
        let plain = stepper_engine::config::jsonc::strip(&text);
        if let Ok(doc) = serde_json::from_str::<serde_json::Value>(&plain)
            && let Some(servers) = doc.get("mcpServers")
        {
            check(path, &text, servers);
        }
    }
    if let Some(path) = mcp_json_path(cwd) {
        match std::fs::read_to_string(&path) {
            Err(e) => problems.push((path.clone(), 1, 1, format!("cannot read it: {e}"))),
            Ok(text) => match serde_json::from_str::<serde_json::Value>(&text) {
                Err(e) => problems.push((
                    path.clone(),
                    e.line(),
                    e.column(),
                    format!("{e} — .mcp.json is plain JSON (Claude Code's format)"),
                )),
                Ok(doc) => match doc.get("mcpServers") {
                    Some(servers) => check(&path, &text, servers),
                    None => problems.push((
                        path.clone(),
                        1,
                        1,
                        "no `mcpServers`: .mcp.json holds {\"mcpServers\": {name: server}}".into(),
                    )),
                },
            },
        }
    }
    problems
}

/// The project's `.mcp.json`: in `cwd`, else at the repository root.
pub fn mcp_json_path(cwd: &Path) -> Option<PathBuf> {
    let root = stepper_engine::config::repository::repository_root(cwd);
    [cwd.join(".mcp.json"), root.join(".mcp.json")]
        .into_iter()
        .find(|p| p.is_file())
}

/// The servers a folder's `.mcp.json` names, with the file; `None` when it names none (or
/// cannot be read: `mcp/list` says why).
pub fn project_servers(cwd: &Path) -> Option<(String, Vec<String>)> {
    let (path, servers) = mcp_json(cwd).ok()??;
    (!servers.is_empty()).then(|| (path.display().to_string(), servers.into_keys().collect()))
}

/// The line `needle` first appears on (1 when it does not).
fn line_of(text: &str, needle: &str) -> usize {
    text.find(needle)
        .map_or(1, |at| text[..at].matches('\n').count() + 1)
}

/// Servers by name, as a file has them.
type ServerMap = BTreeMap<String, serde_json::Value>;

/// The session's model, lent to MCP servers that ask (`mcpSampling`): their conversation,
/// one model call, its text. What it costs is not counted in the turn's usage.
pub struct ModelSampler {
    pub provider: Arc<dyn stepper_engine::provider::LlmProvider>,
    /// The model's id at its provider.
    pub model: String,
    pub cancel: tokio_util::sync::CancellationToken,
}

/// The most a server may ask the model to write.
const SAMPLING_MAX_TOKENS: u32 = 4096;

impl Sampler for ModelSampler {
    fn sample<'a>(
        &'a self,
        request: &'a Sampling,
    ) -> futures::future::BoxFuture<'a, Result<(String, String), String>> {
        Box::pin(async move {
            use futures::StreamExt;
            let messages = request
                .messages
                .iter()
                .map(|(role, text)| match role {
                    stepper_engine::Role::User => stepper_engine::ChatMessage::user(text.clone()),
                    stepper_engine::Role::Assistant => {
                        stepper_engine::ChatMessage::assistant(text.clone())
                    }
                })
                .collect();
            let mut chat = stepper_engine::ChatRequest::new(self.model.clone(), messages);
            chat.system = request.system.clone();
            chat.max_tokens = request.max_tokens.clamp(1, SAMPLING_MAX_TOKENS);
            let mut stream = self.provider.chat_stream(chat, self.cancel.clone());
            let mut acc = stepper_engine::MessageAccumulator::new();
            while let Some(event) = stream.next().await {
                let event = event.map_err(|e| format!("the model failed: {e}"))?;
                acc.push(&event)
                    .map_err(|e| format!("the model failed: {e}"))?;
            }
            Ok((acc.text(), self.model.clone()))
        })
    }
}

/// The pool's state changes as `McpServerStatus` events, sent with their folder.
pub fn status_hook(
    to: tokio::sync::mpsc::UnboundedSender<(PathBuf, stepper_protocol::AppEvent)>,
) -> stepper_mcp::pool::StatusHook {
    Arc::new(move |cwd: &Path, name: &str, state: &State| {
        let (status, reason, tools) = match state {
            State::Starting => (McpStatus::Starting, None, None),
            State::Ready(server) => (
                McpStatus::Connected,
                None,
                Some(u32::try_from(server.tools().len()).unwrap_or(u32::MAX)),
            ),
            State::Failed(why) if why.starts_with(stepper_mcp::server::NEEDS_LOGIN) => {
                (McpStatus::NeedsLogin, Some(why.clone()), None)
            }
            State::Failed(why) => (McpStatus::Failed, Some(why.clone()), None),
        };
        let event = stepper_protocol::AppEvent::McpServerStatus {
            server: name.to_string(),
            status,
            reason,
            tools,
        };
        let _ = to.send((cwd.to_path_buf(), event));
    })
}

/// A server as configured, and whether it may run (`Connected`: it may).
struct Configured {
    name: String,
    scope: McpScope,
    source: PathBuf,
    value: serde_json::Value,
    standing: McpStatus,
}

/// The settings that decide a folder's servers.
#[derive(Clone, Copy)]
pub struct McpSettings<'a> {
    /// The user's own.
    pub user: &'a Settings,
    /// What may approve the project's servers (the user's, and the trusted project's
    /// `setting.local.json`).
    pub approvals: &'a Settings,
    /// Every file's, as the folder's sessions get them.
    pub merged: &'a Settings,
    /// Whether the user trusts the folder: an untrusted one offers none of its servers.
    pub trusted: bool,
}

impl<'a> McpSettings<'a> {
    /// How many servers may stay idle: the user's number for the daemon, and the folder's,
    /// which its project may only lower (an untrusted one's higher number was already left
    /// out by the settings' narrowing; a trusted one's is held to the user's here).
    pub fn idle_cap(&self) -> IdleCap {
        let default = stepper_engine::config::DEFAULT_MCP_MAX_IDLE_SERVERS;
        let user = self.user.mcp_max_idle_servers.unwrap_or(default);
        let folder = self.merged.mcp_max_idle_servers.unwrap_or(user).min(user);
        let size = |n: u32| usize::try_from(n).unwrap_or(usize::MAX);
        IdleCap {
            daemon: size(user),
            folder: size(folder),
        }
    }

    pub fn of(user: &'a Settings, folder: &'a super::settings::Folder) -> McpSettings<'a> {
        McpSettings {
            user,
            approvals: &folder.approvals,
            merged: &folder.settings,
            trusted: folder.trust.trusted,
        }
    }
}

/// Every server configured for `cwd`, by name: the user's and the project's local ones run;
/// the project's shared ones run once approved.
fn configured(
    config_dir: &Path,
    cwd: &Path,
    McpSettings {
        user,
        approvals: trusted,
        merged,
        trusted: folder_trusted,
    }: McpSettings<'_>,
) -> (Vec<Configured>, Vec<String>) {
    let mut notices = Vec::new();
    let mut all: BTreeMap<String, Configured> = BTreeMap::new();
    let user_file = config_dir.join("setting.json");
    let local_file = cwd.join(".stepper").join("setting.local.json");
    let project_file = cwd.join(".stepper").join("setting.json");
    // Later entries win, as the settings merge: project, then local; `.mcp.json` below them.
    // A folder the user has not trusted offers none of its own servers: its settings'
    // are left out by the settings' narrowing, `.mcp.json` here.
    let mcp_json = match mcp_json(cwd) {
        Ok(found) => found,
        Err(_) if !folder_trusted => None,
        Err(why) => {
            notices.push(why);
            None
        }
    };
    if let Some((path, servers)) = mcp_json {
        for (name, value) in servers {
            all.insert(
                name.clone(),
                Configured {
                    name,
                    scope: McpScope::Project,
                    source: path.clone(),
                    value,
                    standing: McpStatus::NotApproved,
                },
            );
        }
    }
    for (name, value) in &merged.mcp_servers {
        let (scope, source) = if trusted.mcp_servers.get(name) == Some(value) {
            if user.mcp_servers.get(name) == Some(value) {
                (McpScope::User, user_file.clone())
            } else {
                (McpScope::Local, local_file.clone())
            }
        } else {
            (McpScope::Project, project_file.clone())
        };
        all.insert(
            name.clone(),
            Configured {
                name: name.clone(),
                scope,
                source,
                value: value.clone(),
                standing: McpStatus::NotApproved,
            },
        );
    }
    for c in all.values_mut() {
        c.standing = if c.scope != McpScope::Project {
            McpStatus::Connected
        } else if !folder_trusted {
            McpStatus::Untrusted
        } else if trusted.disabled_mcpjson_servers.contains(&c.name) {
            McpStatus::Disabled
        } else if trusted.enable_all_project_mcp_servers == Some(true)
            || trusted.enabled_mcpjson_servers.contains(&c.name)
        {
            McpStatus::Connected
        } else {
            McpStatus::NotApproved
        };
    }
    (all.into_values().collect(), notices)
}

/// The command line or URL as written.
fn target(value: &serde_json::Value) -> String {
    if let Some(url) = value["url"].as_str() {
        return url.to_string();
    }
    let mut words = vec![value["command"].as_str().unwrap_or("").to_string()];
    if let Some(args) = value["args"].as_array() {
        words.extend(args.iter().filter_map(|a| a.as_str()).map(str::to_string));
    }
    words.join(" ")
}

/// The servers of the project's `.mcp.json` (in `cwd`, else at the repository root).
pub(super) fn mcp_json(cwd: &Path) -> Result<Option<(PathBuf, ServerMap)>, String> {
    let Some(path) = mcp_json_path(cwd) else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}:{}:{}: {e} — its MCP servers are left out until it is fixed",
            path.display(),
            e.line(),
            e.column()
        )
    })?;
    match value.get("mcpServers") {
        None => Ok(None),
        Some(servers) => serde_json::from_value(servers.clone())
            .map(|servers| Some((path.clone(), servers)))
            .map_err(|_| {
                format!(
                    "{}: `mcpServers` must be an object of servers by name",
                    path.display()
                )
            }),
    }
}
