//! `stepper mcp`: the MCP servers of this folder — list them with their status, show one,
//! add or remove one (in Claude Code's formats: the user's `setting.json` or the project's
//! `.mcp.json`).

use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use stepper_protocol::methods::{
    CwdParams, McpAdd, McpAddParams, McpApproval, McpApprove, McpApproveParams, McpList,
    McpListParams, McpLogin, McpLogout, McpPending, McpRemove, McpRemoveParams, McpScope,
    McpServerInfo, McpServerParams, McpStatus, McpWaitLogin, McpWaitLoginParams,
};

use crate::connect::{connect_or_start, places, working_dir};

#[derive(Subcommand)]
pub enum McpCommand {
    /// Every server of this folder: where it is configured, its transport, whether it
    /// runs (starting those that may), and how many tools it has.
    List {
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
            if list.servers.is_empty() {
                println!(
                    "No MCP servers here. Add one with: stepper mcp add NAME -- COMMAND ARGS…"
                );
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "{:<20} {:<8} {:<5} {:<13} {:>5}",
                "NAME", "SCOPE", "VIA", "STATUS", "TOOLS"
            );
            for s in &list.servers {
                let tools = if s.status == McpStatus::Connected {
                    s.tools.len().to_string()
                } else {
                    "-".into()
                };
                println!(
                    "{:<20} {:<8} {:<5} {:<13} {:>5}",
                    s.name,
                    scope_word(s.scope),
                    s.transport,
                    status_word(s.status),
                    tools
                );
                if let Some(reason) = &s.reason {
                    println!("    {reason}");
                }
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
            let server = match server_json(&args) {
                Ok(server) => server,
                Err(why) => {
                    eprintln!("stepper: {why}");
                    return Ok(ExitCode::from(2));
                }
            };
            let added = client
                .call::<McpAdd>(McpAddParams {
                    cwd,
                    name: args.name.clone(),
                    scope: args.scope.into(),
                    server,
                })
                .await?;
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
fn server_json(args: &AddArgs) -> Result<serde_json::Value, String> {
    let mut server = serde_json::Map::new();
    match args.transport {
        TransportArg::Stdio => {
            let (command, rest) = args
                .target
                .split_first()
                .ok_or("give the command: stepper mcp add NAME -- COMMAND ARGS…")?;
            server.insert("command".into(), command.clone().into());
            if !rest.is_empty() {
                server.insert("args".into(), rest.to_vec().into());
            }
            let mut env = serde_json::Map::new();
            for pair in &args.env {
                let (k, v) = pair
                    .split_once('=')
                    .ok_or_else(|| format!("--env {pair:?}: give KEY=VALUE"))?;
                env.insert(k.to_string(), v.into());
            }
            if !env.is_empty() {
                server.insert("env".into(), env.into());
            }
        }
        TransportArg::Http | TransportArg::Sse => {
            let [url] = args.target.as_slice() else {
                return Err("give one URL, after the options: stepper mcp add NAME \
                            --transport http -H \"Authorization: Bearer ${TOKEN}\" URL"
                    .into());
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
                    .ok_or_else(|| format!("--header {pair:?}: give \"Name: value\""))?;
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
        let line = crate::ask::read_line().await.unwrap_or_default();
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
