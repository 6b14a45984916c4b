//! `stepper daemon status|start|stop`.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Subcommand;
use stepper_protocol::methods::{DaemonInfo, Empty};

use stepper_protocol::places::Places;

use crate::connect::{
    connect_existing, daemon_gone, places, shut_down, start_daemon, stepperd_path,
};
use crate::service::Manager;

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
    /// Stop the daemon (if it runs), then start it.
    Restart {
        /// Restart even while turns run (they end as interrupted after the grace period).
        #[arg(long)]
        force: bool,
    },
    /// Start the daemon at login: a systemd user unit with socket activation (Linux), a
    /// launchd agent (macOS), a scheduled task at logon (Windows).
    Install,
    /// Undo `install`: disable and remove the service files.
    Uninstall,
    /// Print the daemon's log (the last lines; -f to follow).
    Logs {
        /// Keep printing what is appended.
        #[arg(short, long)]
        follow: bool,
        /// How many lines from the end.
        #[arg(short = 'n', long, default_value_t = 100)]
        lines: usize,
    },
}

pub async fn run(command: DaemonCommand) -> anyhow::Result<ExitCode> {
    let places = places()?;
    match command {
        DaemonCommand::Status { json } => {
            let service = match (Manager::detect(&places.data_dir), stepperd_path()) {
                (Ok(m), Ok(d)) if m.installed(&d, &places.log_dir) => {
                    format!("installed as a {} service", m.name())
                }
                _ => "not installed as a login service (stepper daemon install)".to_string(),
            };
            let client = match connect_existing(&places, "stepper daemon status").await {
                Ok(c) => c,
                Err(e) if e.is_not_running() => {
                    if json {
                        let socket = serde_json::to_string(&places.socket.display().to_string())?;
                        println!("{{\"running\":false,\"socket\":{socket}}}");
                    } else {
                        println!(
                            "stepperd is not running (socket {})",
                            places.socket.display()
                        );
                        println!("  service:  {service}");
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
                println!("  service:  {service}");
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
        DaemonCommand::Stop => stop(&places).await,
        DaemonCommand::Restart { force } => {
            if let Ok(client) = connect_existing(&places, "stepper daemon restart").await {
                let running = client.daemon().running_turns;
                if running > 0 && !force {
                    bail!(
                        "stepperd has {running} running turn(s): wait for them, or pass --force to interrupt them"
                    );
                }
                drop(client);
            }
            stop(&places).await?;
            start_daemon(&places).await?;
            let client = connect_existing(&places, "stepper daemon restart").await?;
            println!("stepperd started (pid {})", client.daemon().pid);
            Ok(ExitCode::SUCCESS)
        }
        DaemonCommand::Install => {
            let manager = Manager::detect(&places.data_dir)?;
            let stepperd = stepperd_path()?
                .canonicalize()
                .context("finding stepperd")?;
            // A daemon started by hand holds the socket the service manager is to own.
            if manager_needs_socket(&manager) && !daemon_gone(&places) {
                stop(&places).await?;
            }
            let (written, said) = manager.install(&stepperd, &places.log_dir)?;
            println!("installed stepperd as a {} service:", manager.name());
            if let Some(dir) = manager.packaged(&stepperd) {
                println!("  enabled the package's units in {}", dir.display());
            }
            for path in written {
                println!("  wrote {}", path.display());
            }
            for line in said {
                println!("  {line}");
            }
            Ok(ExitCode::SUCCESS)
        }
        DaemonCommand::Uninstall => {
            let manager = Manager::detect(&places.data_dir)?;
            let stepperd = stepperd_path().unwrap_or_else(|_| "stepperd".into());
            let (removed, said) = manager.uninstall(&stepperd, &places.log_dir)?;
            if let Some(dir) = manager.packaged(&stepperd) {
                println!(
                    "  disabled the package's units in {} (they go with the package)",
                    dir.display()
                );
                if manager.enabled_globally() {
                    println!(
                        "  still enabled for every user: an administrator's \
                         'systemctl --global disable stepperd.socket' undoes that"
                    );
                }
            } else if removed.is_empty() {
                println!("no {} service was installed", manager.name());
            }
            for path in removed {
                println!("  removed {}", path.display());
            }
            for line in said {
                println!("  {line}");
            }
            Ok(ExitCode::SUCCESS)
        }
        DaemonCommand::Logs { follow, lines } => logs(&places, follow, lines).await,
    }
}

fn manager_needs_socket(manager: &Manager) -> bool {
    matches!(manager, Manager::Systemd { .. })
}

async fn stop(places: &Places) -> anyhow::Result<ExitCode> {
    let client = match connect_existing(places, "stepper daemon stop").await {
        Ok(c) => c,
        Err(e) if e.is_not_running() => {
            println!("stepperd is not running");
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(e.into()),
    };
    let pid = shut_down(places, client).await?;
    println!("stepperd stopped (pid {pid})");
    Ok(ExitCode::SUCCESS)
}

async fn logs(places: &Places, follow: bool, lines: usize) -> anyhow::Result<ExitCode> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let path = places.log_path();
    let mut file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!(
                "no log yet at {} — the daemon has not run with this data dir",
                path.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(e).with_context(|| format!("opening {}", path.display())),
    };
    let mut text = String::new();
    file.read_to_string(&mut text)
        .with_context(|| format!("reading {}", path.display()))?;
    let all: Vec<&str> = text.lines().collect();
    let mut out = std::io::stdout().lock();
    for line in &all[all.len().saturating_sub(lines)..] {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    if !follow {
        return Ok(ExitCode::SUCCESS);
    }
    let mut position = file.stream_position()?;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        if len < position {
            // Replaced or truncated: start over.
            file = std::fs::File::open(&path)?;
            position = 0;
        }
        if len > position {
            file.seek(SeekFrom::Start(position))?;
            let mut chunk = Vec::new();
            file.read_to_end(&mut chunk)?;
            position += chunk.len() as u64;
            out.write_all(&chunk)?;
            out.flush()?;
        }
    }
}
