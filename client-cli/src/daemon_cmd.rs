//! `stepper daemon status|start|stop`.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Subcommand;
use stepper_protocol::client::connect_stream;
use stepper_protocol::methods::{DaemonInfo, DaemonShutdown, Empty};

use crate::connect::{connect_existing, places, start_daemon};

#[derive(Subcommand)]
pub enum DaemonCommand {
    /// Is the daemon running, and how is it doing? Exits 3 when it is not running.
    Status {
        /// Print the daemon's info as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Start the daemon in the background (clients also start it when needed).
    Start,
    /// Stop the daemon: running turns get a grace period, then end as interrupted.
    Stop,
}

pub async fn run(command: DaemonCommand) -> anyhow::Result<ExitCode> {
    let places = places()?;
    match command {
        DaemonCommand::Status { json } => {
            let client = match connect_existing(&places, "stepper daemon status").await {
                Ok(c) => c,
                Err(e) if e.is_not_running() => {
                    if json {
                        println!("{{\"running\":false}}");
                    } else {
                        println!(
                            "stepperd is not running (socket {})",
                            places.socket.display()
                        );
                    }
                    return Ok(ExitCode::from(3));
                }
                Err(e) => return Err(e.into()),
            };
            let info = client.call::<DaemonInfo>(Empty {}).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&info)?);
            } else {
                println!("stepperd {} is running (pid {})", info.version, info.pid);
                println!("  socket:   {}", info.socket);
                println!("  data:     {}", info.data_dir);
                println!("  protocol: {}", info.protocol_version);
                println!(
                    "  now:      {} live sessions, {} running turns, {} clients",
                    info.live_sessions, info.running_turns, info.clients
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        DaemonCommand::Start => {
            if start_daemon(&places).await? {
                let client = connect_existing(&places, "stepper daemon start").await?;
                println!("stepperd started (pid {})", client.daemon().pid);
            } else {
                println!("stepperd is already running");
            }
            Ok(ExitCode::SUCCESS)
        }
        DaemonCommand::Stop => {
            let client = match connect_existing(&places, "stepper daemon stop").await {
                Ok(c) => c,
                Err(e) if e.is_not_running() => {
                    println!("stepperd is not running");
                    return Ok(ExitCode::SUCCESS);
                }
                Err(e) => return Err(e.into()),
            };
            let pid = client.daemon().pid;
            client.call::<DaemonShutdown>(Empty {}).await?;
            drop(client);
            // Stopped when nobody listens any more; turns get their grace period first.
            let deadline = Instant::now() + Duration::from_secs(30);
            while connect_stream(&places.socket).await.is_ok() {
                if Instant::now() > deadline {
                    bail!("stepperd (pid {pid}) is still running after 30s — see its log");
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            println!("stepperd stopped (pid {pid})");
            Ok(ExitCode::SUCCESS)
        }
    }
}
