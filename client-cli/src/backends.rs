//! `stepper backends`: the agent CLIs stepper can drive as back-ends (`claude-code/<model>`),
//! each with its version, its login and the MCP servers it has — as the daemon finds them
//! for a session started here.

use std::process::ExitCode;

use clap::Args;
use stepper_protocol::methods::{BackendsList, BackendsListParams};

use crate::connect::{connect_or_start, places};

#[derive(Args)]
pub struct BackendsArgs {
    /// Print the daemon's answer as JSON.
    #[arg(long)]
    json: bool,
}

pub async fn run(args: BackendsArgs) -> anyhow::Result<ExitCode> {
    let client = connect_or_start(&places()?, "stepper backends").await?;
    let cwd = crate::connect::working_dir()
        .ok()
        .map(|d| d.display().to_string());
    let list = client
        .call::<BackendsList>(BackendsListParams {
            cwd,
            env: crate::session::client_env(),
        })
        .await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(ExitCode::SUCCESS);
    }
    for (i, b) in list.backends.iter().enumerate() {
        if i > 0 {
            println!();
        }
        let version = b
            .version
            .as_deref()
            .map_or(String::new(), |v| format!(" {v}"));
        println!("{}{version} — models {}/<model>", b.title, b.name);
        if let Some(program) = &b.program {
            println!("  at      {program}");
        }
        if let Some(problem) = &b.problem {
            println!("  problem {problem}");
            continue;
        }
        match (b.logged_in, &b.login) {
            (Some(true), Some(how)) => println!("  login   yes ({how})"),
            (Some(true), None) => println!("  login   yes"),
            (Some(false), Some(how)) => println!("  login   no ({how})"),
            (Some(false), None) => println!("  login   no"),
            (None, Some(why)) => println!("  login   unknown: {why}"),
            (None, None) => {}
        }
        if let Some(why) = &b.mcp_problem {
            println!("  mcp     cannot list: {why}");
        } else if b.mcp_servers.is_empty() {
            println!("  mcp     none");
        } else {
            println!("  mcp");
            for s in &b.mcp_servers {
                let status = s
                    .status
                    .as_deref()
                    .map_or(String::new(), |s| format!(" — {s}"));
                println!("    {} ({}): {}{status}", s.name, s.transport, s.target);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
