//! `stepper`: the command-line front door. A thin client: every decision lives in the daemon.

mod ask;
mod auth;
mod connect;
mod daemon_cmd;
mod models;
mod service;
mod sessions;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// stepper — a local AI coding agent. Sessions live in the stepperd daemon, so a turn keeps
/// running when the terminal closes.
#[derive(Parser)]
#[command(name = "stepper", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Ask once and print the answer (scriptable). The prompt comes from PROMPT or stdin.
    Ask(ask::AskArgs),
    /// List sessions, most recent first.
    Sessions(sessions::SessionsArgs),
    /// Sign in with ChatGPT, or store API keys for the daemon.
    Auth {
        #[command(subcommand)]
        command: auth::AuthCommand,
    },
    /// The models stepper knows, with context windows and prices.
    Models(models::ModelsArgs),
    /// Start, stop or inspect the daemon.
    Daemon {
        #[command(subcommand)]
        command: daemon_cmd::DaemonCommand,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("stepper: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Ask(args) => ask::run(args).await,
            Command::Sessions(args) => sessions::run(args).await,
            Command::Daemon { command } => daemon_cmd::run(command).await,
            Command::Auth { command } => auth::run(command).await,
            Command::Models(args) => models::run(args).await,
        }
    });
    // Do not wait for background tasks (a blocked stdin reader) at exit.
    runtime.shutdown_background();
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("stepper: {e:#}");
            ExitCode::FAILURE
        }
    }
}
