//! `stepper`: the command-line front door. A thin client: every decision lives in the daemon.

/// `println!` that ends the program quietly when stdout's reader has gone (`stepper sessions
/// | head`), where std's would panic; see [`out::print`]. Defined before the modules, so it
/// is theirs too.
macro_rules! println {
    () => {
        $crate::out::print(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!`, as [`println!`].
#[allow(unused_macros)]
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::out::print(format_args!($($arg)*))
    };
}

mod out;

mod acp;
mod ask;
mod attach;
mod auth;
mod backends;
mod config_cmd;
mod connect;
mod daemon_cmd;
mod doctor;
mod eval;
mod exit;
mod first_run;
mod mcp;
mod media;
mod models;
mod remote;
mod service;
mod session;
mod sessions;
mod trust;
mod typed;
mod worktrees;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// stepper — a local AI coding agent. Sessions live in the stepperd daemon, so a turn keeps
/// running when the terminal closes.
/// What `stepper --version` says: the version, the commit and the build date (build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("STEPPER_COMMIT"),
    ", built ",
    env!("STEPPER_BUILD_DATE"),
    ")"
);

#[derive(Parser)]
#[command(name = "stepper", version = VERSION)]
struct Cli {
    /// With no command: a new session in this folder, in the terminal UI.
    #[command(subcommand)]
    command: Option<Command>,
    /// Use the stepperd on another machine, through ssh (user@box, or an ssh config alias):
    /// its socket is forwarded here, and it is started there when absent. Also STEPPER_HOST.
    #[arg(long, global = true, value_name = "HOST")]
    host: Option<String>,
    /// With --host: the folder on that machine new sessions work in (default: the login
    /// folder there). Also STEPPER_REMOTE_DIR.
    #[arg(long, global = true, value_name = "DIR", requires = "host")]
    remote_dir: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Open a session in the terminal UI: by id, the latest here (--last), or pick one.
    /// Detach with Ctrl-D or /detach: the turn goes on, and attach brings you back.
    Attach(attach::AttachArgs),
    /// Ask once and print the answer (scriptable). The prompt comes from PROMPT or stdin.
    #[command(after_help = exit::HELP)]
    Ask(ask::AskArgs),
    /// Serve an editor over the Agent Client Protocol on stdin/stdout (Zed, JetBrains,
    /// Neovim…): its sessions are ordinary sessions, which `stepper attach` can join.
    Acp,
    /// Answer a tool's request for approval in a session (from any terminal).
    Approve {
        session: String,
        request: String,
        /// allow, always (allow and stop asking for the same in this session) or deny.
        #[arg(value_parser = ["allow", "always", "deny"])]
        decision: String,
    },
    /// Put a session back as it was before turn TURN ran (turns as `sessions show` lists
    /// them): the files its turns changed, tools and shell alike, and the conversation.
    Rewind {
        session: String,
        turn: u32,
        #[arg(long, conflicts_with = "conversation_only")]
        files_only: bool,
        #[arg(long)]
        conversation_only: bool,
    },
    /// List sessions, most recent first.
    Sessions(sessions::SessionsArgs),
    /// The git worktrees kept for workers whose changes were not merged (a conflict, a
    /// failure), with their branches; --remove takes them away.
    Worktrees(worktrees::WorktreesArgs),
    /// Sign in with ChatGPT, or store API keys for the daemon.
    Auth {
        #[command(subcommand)]
        command: auth::AuthCommand,
    },
    /// Scaffold .stepper/stepper.md and .stepper/setting.json here.
    Init(config_cmd::InitArgs),
    /// Print the settings schema, or check the settings files that apply here.
    Config(config_cmd::ConfigArgs),
    /// Print shell completions (bash, zsh, fish, powershell, elvish) to stdout.
    Completions { shell: clap_complete::Shell },
    /// Print the man page, or write one per command into DIR.
    Man {
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
    /// The models stepper knows, with context windows and prices.
    Models(models::ModelsArgs),
    /// Measure whether tasks get done: run a suite of tasks (tests/evals) through the
    /// agent, each in a fresh copy of its repository, grade them, and report what passed
    /// and what it took. `--list` names the tasks.
    Eval(eval::EvalArgs),
    /// The agent CLIs stepper can drive (Claude Code, Codex): version, login, MCP servers.
    Backends(backends::BackendsArgs),
    /// What is set up and what is not, each problem with its fix: the daemon, the session
    /// store, providers, settings, the login service, the login environment.
    Doctor(doctor::DoctorArgs),
    /// The MCP servers of this folder: list, get, add, remove, approve, login, logout.
    Mcp {
        #[command(subcommand)]
        command: mcp::McpCommand,
    },
    /// Trust a folder: its project files (settings, hooks, MCP servers, commands) then apply
    /// as your own do. Until then they may only narrow what happens. --revoke takes it back,
    /// --list shows your decisions.
    Trust(trust::TrustArgs),
    /// Start, stop or inspect the daemon.
    Daemon {
        #[command(subcommand)]
        command: daemon_cmd::DaemonCommand,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let host = cli
        .host
        .clone()
        .or_else(|| std::env::var("STEPPER_HOST").ok().filter(|h| !h.is_empty()));
    if let Some(host) = host {
        if let Some(Command::Daemon { .. } | Command::Doctor(_)) = cli.command {
            eprintln!(
                "stepper: 'daemon' and 'doctor' look at this machine — for {host}'s, run \
                 'ssh {host} stepper daemon …' or 'ssh {host} stepper doctor'"
            );
            return ExitCode::from(2);
        }
        let dir = cli.remote_dir.clone().or_else(|| {
            std::env::var("STEPPER_REMOTE_DIR")
                .ok()
                .filter(|d| !d.is_empty())
        });
        if let Err(e) = remote::open(&host, dir) {
            eprintln!("stepper: {e:#}");
            remote::close();
            return ExitCode::FAILURE;
        }
    }
    let code = run(cli);
    remote::close();
    code
}

fn run(cli: Cli) -> ExitCode {
    // `ask` is one request after another: one thread does it without handing work between
    // threads, and starts sooner. The TUI and the rest keep two workers.
    let mut builder = match cli.command {
        Some(Command::Ask(_)) => tokio::runtime::Builder::new_current_thread(),
        _ => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(2);
            b
        }
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("stepper: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            None => attach::run(attach::AttachArgs::default(), true).await,
            Some(Command::Attach(args)) => attach::run(args, false).await,
            Some(Command::Ask(args)) => ask::run(args).await,
            Some(Command::Acp) => acp::run().await,
            Some(Command::Sessions(args)) => sessions::run(args).await,
            Some(Command::Approve {
                session,
                request,
                decision,
            }) => approve(session, request, decision).await,
            Some(Command::Rewind {
                session,
                turn,
                files_only,
                conversation_only,
            }) => rewind(session, turn, !conversation_only, !files_only).await,
            Some(Command::Daemon { command }) => daemon_cmd::run(command).await,
            Some(Command::Doctor(args)) => doctor::run(args).await,
            Some(Command::Auth { command }) => auth::run(command).await,
            Some(Command::Models(args)) => models::run(args).await,
            Some(Command::Worktrees(args)) => worktrees::run(args),
            Some(Command::Backends(args)) => backends::run(args).await,
            Some(Command::Eval(args)) => eval::run(args).await,
            Some(Command::Mcp { command }) => mcp::run(command).await,
            Some(Command::Trust(args)) => trust::run(args).await,
            Some(Command::Init(args)) => config_cmd::init(args).await,
            Some(Command::Completions { shell }) => {
                let mut cmd = Cli::command();
                clap_complete::generate(shell, &mut cmd, "stepper", &mut std::io::stdout());
                Ok(ExitCode::SUCCESS)
            }
            Some(Command::Man { dir }) => man(dir),
            Some(Command::Config(args)) => config_cmd::config(args).await,
        }
    });
    // Do not wait for background tasks (a blocked stdin reader) at exit.
    runtime.shutdown_background();
    match result {
        Ok(code) => code,
        // The reader went away (`stepper ... | head`): nothing left to say to anyone.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("stepper: {e:#}");
            // What the daemon said to do about it, when it said more than the message.
            let hint =
                exit::find::<stepper_protocol::client::ClientError>(&e).and_then(|c| c.hint());
            if let Some(hint) = hint {
                eprintln!("  hint: {hint}");
            }
            ExitCode::from(exit::code_of(&e))
        }
    }
}

/// The man page of `stepper` to stdout, or of it and every subcommand into `dir`.
fn man(dir: Option<std::path::PathBuf>) -> anyhow::Result<ExitCode> {
    use anyhow::Context;
    let cmd = Cli::command();
    let Some(dir) = dir else {
        clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?;
        return Ok(ExitCode::SUCCESS);
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    clap_mangen::generate_to(cmd, &dir)
        .with_context(|| format!("writing man pages into {}", dir.display()))?;
    println!("wrote man pages into {}", dir.display());
    Ok(ExitCode::SUCCESS)
}

async fn approve(session: String, request: String, decision: String) -> anyhow::Result<ExitCode> {
    use stepper_protocol::ApprovalDecision;
    use stepper_protocol::methods::{SessionApprove, SessionApproveParams};
    let decision = match decision.as_str() {
        "allow" => ApprovalDecision::Allow,
        "always" => ApprovalDecision::AllowAlways,
        _ => ApprovalDecision::Deny,
    };
    let client = connect::connect_or_start(&connect::places()?, "stepper approve").await?;
    let session = session::resolve(&client, &session).await?;
    client
        .call::<SessionApprove>(SessionApproveParams {
            session_id: session,
            request_id: request,
            decision,
        })
        .await?;
    println!("answered");
    Ok(ExitCode::SUCCESS)
}

async fn rewind(
    session: String,
    turn: u32,
    files: bool,
    conversation: bool,
) -> anyhow::Result<ExitCode> {
    use stepper_protocol::methods::{SessionRewind, SessionRewindParams};
    let client = connect::connect_or_start(&connect::places()?, "stepper rewind").await?;
    let session = session::resolve(&client, &session).await?;
    let out = client
        .call::<SessionRewind>(SessionRewindParams {
            session_id: session.clone(),
            turn,
            files,
            conversation,
        })
        .await?;
    let mut done = Vec::new();
    if files {
        done.push(format!("{} file(s) restored", out.files));
    }
    if conversation {
        done.push("the conversation".to_string());
    }
    println!(
        "rewound session {session} to before turn {turn}: {}",
        done.join(" and ")
    );
    Ok(ExitCode::SUCCESS)
}
