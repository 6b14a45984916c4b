//! `stepper mcp`: the MCP servers of this folder — list them with their status and memory,
//! show one, add or remove one (in Claude Code's formats: the user's `setting.json` or the
//! project's `.mcp.json`) — and `ps`, what the daemon runs in every folder.

use std::process::ExitCode;

use anyhow::{anyhow, bail};
use clap::{Args, Subcommand, ValueEnum};
use stepper_protocol::methods::{
    CwdParams, Empty, McpAdd, McpAddParams, McpApproval, McpApprove, McpApproveParams, McpList,
    McpListParams, McpLogin, McpLogout, McpPending, McpRemove, McpRemoveParams, McpRunning,
    McpRunningResponse, McpScope, McpServerInfo, McpServerParams, McpStatus, McpWaitLogin,
    McpWaitLoginParams,
};

use crate::connect::{connect_or_start, places, working_dir};
use crate::exit::{self, ExitWith};

#[derive(Subcommand)]
pub enum McpCommand {
    /// Every server of this folder: where it is configured, its transport, whether it
    /// runs (starting those that may and never ran; one stopped while idle stays stopped),
    /// how many tools it has, and its memory.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Every server the daemon runs now, in every folder: in use or idle, and its memory.
    Ps {
        #[arg(long)]
        json: bool,
    },
    /// One server: its configuration, status and tools.
    Get {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Add a server: `stepper mcp add NAME -- CMD ARGS…`, or
    /// `stepper mcp add NAME --transport http URL`.
    Add(AddArgs),
    /// Remove a server from the files that name it.
    Remove {
        name: String,
        /// Only from this scope's files (all when absent).
        #[arg(long, short)]
        scope: Option<Scope>,
    },
    /// Sign in to a remote server that asks for it (OAuth, in the browser).
    Login { name: String },
    /// Forget a remote server's sign-in.
    Logout { name: String },
    /// Let a project's servers (its .mcp.json) run, or refuse them — remembered in the
    /// project's git-ignored .stepper/setting.local.json. With no name, those waiting.
    Approve {
        names: Vec<String>,
        /// All of this project's servers, later ones too.
        #[arg(long, conflicts_with = "deny")]
        all: bool,
        /// Refuse them: they do not run and are not asked about again.
        #[arg(long)]
        deny: bool,
    },
}

#[derive(Args)]
pub struct AddArgs {
    name: String,
    /// `user`: your setting.json, every folder; `project`: this project's .mcp.json,
    /// shared through the repository (each user approves it once).
    #[arg(long, short, default_value = "user")]
    scope: Scope,
    #[arg(long, short, default_value = "stdio")]
    transport: TransportArg,
    /// KEY=VALUE for a stdio server's environment (repeatable).
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// "Name: value" for a remote server's requests (repeatable).
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// The command and its arguments, or the URL.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    target: Vec<String>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Scope {
    User,
    Project,
    Local,
}

impl From<Scope> for McpScope {
    fn from(s: Scope) -> McpScope {
        match s {
            Scope::User => McpScope::User,
            Scope::Project => McpScope::Project,
            Scope::Local => McpScope::Local,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransportArg {
    Stdio,
    Http,
    Sse,
}

pub async fn run(command: McpCommand) -> anyhow::Result<ExitCode> {
    let cwd = working_dir()?.display().to_string();
    if let McpCommand::Login { name } = command {
        return login(cwd, name).await;
    }
    let client = connect_or_start(&places()?, "stepper mcp").await?;
    match command {
        McpCommand::List { json } => {
            let list = client
                .call::<McpList>(McpListParams {
                    cwd,
                    env: crate::session::client_env(),
                })
                .await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&list)?);
                return Ok(ExitCode::SUCCESS);
            }
            print!("{}", list_table(&list.servers));
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Ps { json } => {
            let running = client.call::<McpRunning>(Empty {}).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&running)?);
            } else {
                print!("{}", running_table(&running, dirs_home().as_deref()));
            }
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Get { name, json } => {
            let list = client
                .call::<McpList>(McpListParams {
                    cwd,
                    env: crate::session::client_env(),
                })
                .await?;
            let Some(server) = list.servers.into_iter().find(|s| s.name == name) else {
                eprintln!("stepper: no MCP server named {name:?} here — see 'stepper mcp list'");
                return Ok(ExitCode::FAILURE);
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&server)?);
            } else {
                print_one(&server);
            }
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Add(args) => {
            let server = server_json(&args).exit_with(exit::USAGE)?;
            // Its name, scope and server are the command line's: a refused one is usage.
            let added = exit::flags_checked(
                client
                    .call::<McpAdd>(McpAddParams {
                        cwd,
                        name: args.name.clone(),
                        scope: args.scope.into(),
                        server,
                    })
                    .await,
            )?;
            println!("Added {} to {}", args.name, added.path);
            if matches!(args.scope, Scope::Project) {
                println!(
                    "A project's server runs once you approve it: add \"enabledMcpjsonServers\": \
                     [\"{}\"] to .stepper/setting.local.json",
                    args.name
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Remove { name, scope } => {
            let removed = client
                .call::<McpRemove>(McpRemoveParams {
                    cwd,
                    name: name.clone(),
                    scope: scope.map(Into::into),
                })
                .await?;
            if removed.removed.is_empty() {
                eprintln!("stepper: no file here names an MCP server {name:?}");
                return Ok(ExitCode::FAILURE);
            }
            for path in removed.removed {
                println!("Removed {name} from {path}");
            }
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Logout { name } => {
            let out = client
                .call::<McpLogout>(McpServerParams {
                    cwd,
                    name: name.clone(),
                    env: crate::session::client_env(),
                })
                .await?;
            if out.removed {
                println!("Signed out of {name}");
            } else {
                println!("{name} had no sign-in");
            }
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Approve { names, all, deny } => {
            let names = if names.is_empty() && !all {
                let pending = client
                    .call::<McpPending>(CwdParams { cwd: cwd.clone() })
                    .await?;
                if pending.servers.is_empty() {
                    println!("No project server here waits for approval.");
                    return Ok(ExitCode::SUCCESS);
                }
                pending.servers.into_iter().map(|s| s.name).collect()
            } else {
                names
            };
            let decision = match (all, deny) {
                (true, _) => McpApproval::AllowAll,
                (_, true) => McpApproval::Deny,
                _ => McpApproval::Allow,
            };
            let done = client
                .call::<McpApprove>(McpApproveParams {
                    cwd,
                    names: names.clone(),
                    decision,
                })
                .await?;
            let what = if all {
                "all of this project's servers".to_string()
            } else {
                names.join(", ")
            };
            let verb = if deny { "Refused" } else { "Approved" };
            println!("{verb} {what} in {}", done.path);
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Login { .. } => Ok(ExitCode::from(2)),
    }
}

/// Sign in: the daemon gives the page to open and waits for the browser's return.
async fn login(cwd: String, name: String) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    use stepper_protocol::client::{ConnectOptions, DaemonClient};
    let places = places()?;
    // Make sure a daemon runs, then wait long: the user is in the browser.
    drop(connect_or_start(&places, "stepper mcp").await?);
    let options = ConnectOptions {
        request_timeout: std::time::Duration::from_secs(11 * 60),
        ..Default::default()
    };
    let client = DaemonClient::connect_with(
        &places.socket,
        crate::connect::client_info("stepper mcp"),
        options,
    )
    .await?;
    let begun = client
        .call::<McpLogin>(McpServerParams {
            cwd,
            name: name.clone(),
            env: crate::session::client_env(),
        })
        .await?;
    println!(
        "Sign in to {name} by opening this page in a browser:\n\n  {}\n",
        begun.url
    );
    std::io::stdout().flush()?;
    if crate::auth::open_browser(&begun.url) {
        println!("(opened in your browser)");
    }
    println!("Waiting for the browser… (Ctrl-C to give up)");
    client
        .call::<McpWaitLogin>(McpWaitLoginParams {
            login_id: begun.login_id,
        })
        .await?;
    println!("Signed in to {name}: its tools join the next turn.");
    Ok(ExitCode::SUCCESS)
}

/// The server as `.mcp.json` has it.
fn server_json(args: &AddArgs) -> anyhow::Result<serde_json::Value> {
    let mut server = serde_json::Map::new();
    match args.transport {
        TransportArg::Stdio => {
            let (command, rest) = args.target.split_first().ok_or_else(|| {
                anyhow!("give the command: stepper mcp add NAME -- COMMAND ARGS…")
            })?;
            server.insert("command".into(), command.clone().into());
            if !rest.is_empty() {
                server.insert("args".into(), rest.to_vec().into());
            }
            let mut env = serde_json::Map::new();
            for pair in &args.env {
                let (k, v) = pair
                    .split_once('=')
                    .ok_or_else(|| anyhow!("--env {pair:?}: give KEY=VALUE"))?;
                env.insert(k.to_string(), v.into());
            }
            if !env.is_empty() {
                server.insert("env".into(), env.into());
            }
        }
        TransportArg::Http | TransportArg::Sse => {
            let [url] = args.target.as_slice() else {
                bail!(
                    "give one URL, after the options: stepper mcp add NAME --transport http -H \
                     \"Authorization: Bearer ${{TOKEN}}\" URL"
                );
            };
            let kind = if args.transport == TransportArg::Http {
                "http"
            } else {
                "sse"
            };
            server.insert("type".into(), kind.into());
            server.insert("url".into(), url.clone().into());
            let mut headers = serde_json::Map::new();
            for pair in &args.headers {
                let (k, v) = pair
                    .split_once(':')
                    .ok_or_else(|| anyhow!("--header {pair:?}: give \"Name: value\""))?;
                headers.insert(k.trim().to_string(), v.trim().into());
            }
            if !headers.is_empty() {
                server.insert("headers".into(), headers.into());
            }
        }
    }
    Ok(server.into())
}

fn print_one(s: &McpServerInfo) {
    println!("{}", s.name);
    println!("  scope:     {} ({})", scope_word(s.scope), s.source);
    println!("  transport: {}", s.transport);
    println!("  runs:      {}", s.target);
    println!("  status:    {}", status_word(s.status));
    if let Some(reason) = &s.reason {
        println!("             {reason}");
    }
    if let Some(version) = &s.protocol_version {
        println!("  protocol:  {version}");
    }
    if let Some(bytes) = s.memory_bytes {
        println!("  memory:    {}", memory(bytes));
    }
    if !s.tools.is_empty() {
        println!("  tools:");
        for tool in &s.tools {
            println!("    {tool}");
        }
    }
}

fn scope_word(scope: McpScope) -> &'static str {
    match scope {
        McpScope::User => "user",
        McpScope::Project => "project",
        McpScope::Local => "local",
    }
}

fn status_word(status: McpStatus) -> &'static str {
    match status {
        McpStatus::Connected => "connected",
        McpStatus::Starting => "starting",
        McpStatus::Failed => "failed",
        McpStatus::NeedsLogin => "needs login",
        McpStatus::NotApproved => "not approved",
        McpStatus::Disabled => "disabled",
        McpStatus::Untrusted => "untrusted folder",
        McpStatus::Invalid => "invalid",
        McpStatus::Stopped => "stopped (idle)",
    }
}

/// `stepper mcp list`: one line per server, and why below one that has a reason.
fn list_table(servers: &[McpServerInfo]) -> String {
    use std::fmt::Write;
    if servers.is_empty() {
        return "No MCP servers here. Add one with: stepper mcp add NAME -- COMMAND ARGS…\n".into();
    }
    let mut out = format!(
        "{:<20} {:<8} {:<5} {:<14} {:>5} {:>10}\n",
        "NAME", "SCOPE", "VIA", "STATUS", "TOOLS", "MEMORY"
    );
    for s in servers {
        let tools = if matches!(s.status, McpStatus::Connected | McpStatus::Stopped) {
            s.tools.len().to_string()
        } else {
            "-".into()
        };
        let _ = writeln!(
            out,
            "{:<20} {:<8} {:<5} {:<14} {:>5} {:>10}",
            s.name,
            scope_word(s.scope),
            s.transport,
            status_word(s.status),
            tools,
            s.memory_bytes.map_or_else(|| "-".into(), memory)
        );
        if let Some(reason) = &s.reason {
            let _ = writeln!(out, "    {reason}");
        }
    }
    out
}

/// `stepper mcp ps`: one line per server, the folder last (it is the longest), then what
/// the daemon keeps.
fn running_table(running: &McpRunningResponse, home: Option<&std::path::Path>) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if running.servers.is_empty() {
        out.push_str("No MCP server runs now.\n");
    } else {
        let _ = writeln!(
            out,
            "{:<20} {:<5} {:<12} {:>10}  FOLDER",
            "NAME", "VIA", "STATE", "MEMORY"
        );
    }
    for s in &running.servers {
        let state = if s.in_use {
            "in use".to_string()
        } else {
            format!("idle {}", duration(s.idle_ms))
        };
        let folder = match home.and_then(|h| std::path::Path::new(&s.cwd).strip_prefix(h).ok()) {
            Some(rest) if rest.as_os_str().is_empty() => "~".to_string(),
            Some(rest) => format!("~/{}", rest.display()),
            None => s.cwd.clone(),
        };
        let _ = writeln!(
            out,
            "{:<20} {:<5} {:<12} {:>10}  {folder}",
            s.name,
            s.transport,
            state,
            s.memory_bytes.map_or_else(|| "-".into(), memory)
        );
    }
    let idle = running.servers.iter().filter(|s| !s.in_use).count();
    let _ = writeln!(
        out,
        "{idle} idle of at most {} (mcpMaxIdleServers); an idle server stops after {} \
         (STEPPER_MCP_IDLE_MS)",
        running.max_idle,
        duration(running.idle_timeout_ms)
    );
    out
}

fn dirs_home() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(std::path::PathBuf::from)
}

/// Bytes as people read them: `512 KiB`, `58.3 MiB`, `1.25 GiB`.
fn memory(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    const GIB: u64 = 1024 * MIB;
    // Display only: a float's precision is more than a reader sees.
    #[allow(clippy::cast_precision_loss)]
    let scaled = |unit: u64| bytes as f64 / unit as f64;
    if bytes < MIB {
        format!("{} KiB", bytes.div_ceil(KIB))
    } else if bytes < GIB {
        format!("{:.1} MiB", scaled(MIB))
    } else {
        format!("{:.2} GiB", scaled(GIB))
    }
}

/// Milliseconds as people say them: `40s`, `3m`, `2h`.
fn duration(ms: u64) -> String {
    match ms / 1000 {
        s @ 0..120 => format!("{s}s"),
        s @ 120..7200 => format!("{}m", s / 60),
        s => format!("{}h", s / 3600),
    }
}

/// Before a turn of `stepper ask` at a terminal: ask about the project's servers waiting for
/// approval, and remember the answer. Nothing is asked without a terminal (the servers
/// stay off, and the turn's notice says how to approve them).
pub async fn ask_pending(
    client: &stepper_protocol::client::DaemonClient,
    cwd: &std::path::Path,
) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return Ok(());
    }
    let cwd = cwd.display().to_string();
    let pending = client
        .call::<McpPending>(CwdParams { cwd: cwd.clone() })
        .await?;
    for server in pending.servers {
        eprintln!(
            "\nThis project's {} names an MCP server, {}, which runs: {}",
            std::path::Path::new(&server.source)
                .file_name()
                .map_or_else(
                    || server.source.clone(),
                    |n| n.to_string_lossy().into_owned()
                ),
            server.name,
            server.target
        );
        eprint!("Use it? [y]es / [a]ll of this project's servers / [n]o: ");
        let line = crate::typed::read_line().await.unwrap_or_default();
        let decision = match line.trim().to_lowercase().as_str() {
            "y" | "yes" => McpApproval::Allow,
            "a" | "all" => McpApproval::AllowAll,
            "n" | "no" => McpApproval::Deny,
            // No answer is no decision: asked again next time.
            _ => continue,
        };
        client
            .call::<McpApprove>(McpApproveParams {
                cwd: cwd.clone(),
                names: vec![server.name.clone()],
                decision,
            })
            .await?;
        if decision == McpApproval::AllowAll {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use stepper_protocol::methods::McpRunningServer;

    #[test]
    fn memory_and_durations_read_as_people_say_them() {
        assert_eq!(memory(300), "1 KiB");
        assert_eq!(memory(512 * 1024), "512 KiB");
        assert_eq!(memory(61_134_848), "58.3 MiB");
        assert_eq!(memory(1_342_177_280), "1.25 GiB");
        assert_eq!(duration(40_000), "40s");
        assert_eq!(duration(600_000), "10m");
        assert_eq!(duration(3 * 3_600_000), "3h");
    }

    #[test]
    fn list_shows_status_tools_and_memory() {
        let server = |name: &str, status, tools: &[&str], memory_bytes, reason: Option<&str>| {
            McpServerInfo {
                name: name.into(),
                scope: McpScope::User,
                source: "/home/u/.config/stepper/setting.json".into(),
                transport: stepper_protocol::methods::McpTransport::Stdio,
                target: "node server.js".into(),
                status,
                reason: reason.map(str::to_string),
                tools: tools.iter().map(|t| t.to_string()).collect(),
                protocol_version: None,
                memory_bytes,
            }
        };
        let servers = [
            server(
                "everything",
                McpStatus::Connected,
                &["mcp__everything__echo", "mcp__everything__add"],
                Some(69_988_352),
                None,
            ),
            server(
                "files",
                McpStatus::Stopped,
                &["mcp__files__read"],
                None,
                Some(
                    "no turn used it for 10 min (STEPPER_MCP_IDLE_MS) — it starts again at the next turn here",
                ),
            ),
            server("broken", McpStatus::Failed, &[], None, Some("it exited")),
        ];
        insta::assert_snapshot!(list_table(&servers), @r"
        NAME                 SCOPE    VIA   STATUS         TOOLS     MEMORY
        everything           user     stdio connected          2   66.7 MiB
        files                user     stdio stopped (idle)     1          -
            no turn used it for 10 min (STEPPER_MCP_IDLE_MS) — it starts again at the next turn here
        broken               user     stdio failed             -          -
            it exited
        ");
        insta::assert_snapshot!(
            list_table(&[]),
            @"No MCP servers here. Add one with: stepper mcp add NAME -- COMMAND ARGS…"
        );
    }

    #[test]
    fn ps_shows_each_server_with_its_folder_last() {
        let server = |cwd: &str, in_use, idle_ms, memory_bytes| McpRunningServer {
            cwd: cwd.into(),
            name: "everything".into(),
            transport: stepper_protocol::methods::McpTransport::Stdio,
            in_use,
            idle_ms,
            memory_bytes,
        };
        let running = McpRunningResponse {
            servers: vec![
                server("/home/u/src/app", true, 0, Some(61_134_848)),
                server("/srv/other", false, 200_000, None),
            ],
            max_idle: 4,
            idle_timeout_ms: 600_000,
        };
        let shown = running_table(&running, Some(std::path::Path::new("/home/u")));
        insta::assert_snapshot!(shown, @r"
        NAME                 VIA   STATE            MEMORY  FOLDER
        everything           stdio in use         58.3 MiB  ~/src/app
        everything           stdio idle 3m               -  /srv/other
        1 idle of at most 4 (mcpMaxIdleServers); an idle server stops after 10m (STEPPER_MCP_IDLE_MS)
        ");
        let none = McpRunningResponse {
            servers: Vec::new(),
            max_idle: 2,
            idle_timeout_ms: 90_000,
        };
        insta::assert_snapshot!(running_table(&none, None), @r"
        No MCP server runs now.
        0 idle of at most 2 (mcpMaxIdleServers); an idle server stops after 90s (STEPPER_MCP_IDLE_MS)
        ");
    }
}
