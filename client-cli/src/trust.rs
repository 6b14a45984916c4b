//! `stepper trust`: trust a folder, so its project files (settings, hooks, MCP servers,
//! commands) apply as your own do; take trust back; list your decisions. And the question
//! `ask` puts at a terminal, once per folder, when an untrusted folder's files ask for more
//! than they get.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use stepper_protocol::client::DaemonClient;
use stepper_protocol::methods::{
    CwdParams, Empty, TrustGet, TrustGetResponse, TrustList, TrustSet, TrustSetParams,
};

use crate::connect::{connect_or_start, places};

#[derive(Args)]
pub struct TrustArgs {
    /// The folder (default: this one). What is trusted is the top of its git repository,
    /// or the folder itself outside one; every folder below it is trusted with it.
    dir: Option<PathBuf>,
    /// Take trust back: the folder's files may only narrow what happens again.
    #[arg(long, conflicts_with_all = ["list", "all_below"])]
    revoke: bool,
    /// List every folder you decided about.
    #[arg(long, conflicts_with = "dir")]
    list: bool,
    /// Trust even your home folder or / as a whole, and so every project below it.
    #[arg(long)]
    all_below: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub async fn run(args: TrustArgs) -> anyhow::Result<ExitCode> {
    let client = connect_or_start(&places()?, "stepper trust").await?;
    if args.list {
        let list = client.call::<TrustList>(Empty {}).await?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&list)?);
        } else if list.folders.is_empty() {
            println!("no folder decided yet: `stepper trust [DIR]` trusts one");
        } else {
            for f in &list.folders {
                let what = if f.trusted {
                    "trusted    "
                } else {
                    "not trusted"
                };
                println!("{what}  {}", f.folder);
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let dir = match args.dir {
        Some(d) => std::path::absolute(&d).with_context(|| format!("{}", d.display()))?,
        None => crate::connect::working_dir()?,
    };
    let cwd = dir.display().to_string();
    let before = client
        .call::<TrustGet>(CwdParams { cwd: cwd.clone() })
        .await?;
    let after = client
        .call::<TrustSet>(TrustSetParams {
            cwd,
            trusted: !args.revoke,
            all_below: args.all_below,
        })
        .await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&after)?);
        return Ok(ExitCode::SUCCESS);
    }
    if args.revoke {
        println!(
            "{} is not trusted now: its files may only narrow what happens (deny rules, a \
             stricter mode or sandbox), from the next turn",
            after.folder
        );
        if after.trusted {
            // A decision further up still trusts it: say which.
            println!(
                "(it is still trusted through {} — `stepper trust --revoke {}` takes that back)",
                after.decided_by.as_deref().unwrap_or("a folder above"),
                after.decided_by.as_deref().unwrap_or("DIR")
            );
        }
    } else {
        println!(
            "trusted {}: its settings, hooks, MCP servers and commands apply as your own do, \
             from the next turn",
            after.folder
        );
        if !before.ignored.is_empty() {
            println!("now applying:");
            for item in &before.ignored {
                println!("  - {item}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// At a terminal, ask once whether to trust `cwd` when it is undecided and its files ask for
/// what only trust gives; the answer is remembered either way. Elsewhere nothing is asked:
/// the session runs with what narrows, and its notice says what was left out.
pub async fn ask_once(client: &DaemonClient, cwd: &Path) -> anyhow::Result<()> {
    let report = client
        .call::<TrustGet>(CwdParams {
            cwd: cwd.display().to_string(),
        })
        .await?;
    if report.decided_by.is_some() || report.ignored.is_empty() {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(());
    }
    eprintln!("{}", question(&report));
    if report.too_broad.is_some() {
        return Ok(());
    }
    eprint!("Trust {}? [y/N] ", report.folder);
    let trusted = crate::typed::read_line()
        .await
        .is_some_and(|a| matches!(a.trim().to_lowercase().as_str(), "y" | "yes"));
    client
        .call::<TrustSet>(TrustSetParams {
            cwd: cwd.display().to_string(),
            trusted,
            all_below: false,
        })
        .await?;
    if trusted {
        eprintln!("stepper: trusted {}", report.folder);
    } else {
        eprintln!(
            "stepper: not trusted (remembered): its files only narrow what happens — \
             `stepper trust` changes that"
        );
    }
    Ok(())
}

/// What an undecided folder asks for, as the question shows it.
pub fn question(report: &TrustGetResponse) -> String {
    let mut text = format!(
        "{} is a folder you have not trusted. Its files ask for what only trust gives:\n",
        report.folder
    );
    for item in &report.ignored {
        text.push_str(&format!("  - {item}\n"));
    }
    match &report.too_broad {
        Some(why) => text.push_str(&format!(
            "They are left out: {why}. `stepper trust DIR` trusts a project folder."
        )),
        None => text.push_str(
            "Trusting it lets them run code and widen permissions, as your own settings do. \
             Until then they are left out; deny rules and stricter modes still apply.",
        ),
    }
    text
}
