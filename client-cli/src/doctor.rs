//! `stepper doctor`: what a user needs to know when something is off, each line with its
//! fix — the daemon and its version, where things are kept, the session store, the providers
//! and how each was found, the settings files and their problems, the login service, the
//! login environment.
//!
//! It starts the daemon when none runs (as any command would) and says so: the checks after
//! that need it. It exits non-zero when it found a problem (a `✗` line). With
//! `--recover-store` it first has the daemon rebuild the session store (stopping it, and
//! starting it again with the request in the data folder).

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use stepper_protocol::PROTOCOL_VERSION;
use stepper_protocol::client::DaemonClient;
use stepper_protocol::methods::*;
use stepper_protocol::places::Places;

use crate::connect::{
    Staleness, connect_existing, outdated, places, shut_down, start_daemon, stepperd_path,
};
use crate::service::Manager;
use crate::session::client_env;

const CLIENT: &str = "stepper doctor";

/// The report, as it is written: sections of marked lines, fixes indented below.
#[derive(Default)]
struct Report {
    text: String,
    problems: usize,
}

impl Report {
    fn section(&mut self, name: &str) {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        let _ = writeln!(self.text, "{name}");
    }

    fn line(&mut self, mark: char, what: &str, fix: Option<&str>) {
        let _ = writeln!(self.text, "  {mark} {what}");
        if let Some(fix) = fix {
            let _ = writeln!(self.text, "      fix: {fix}");
        }
    }

    fn ok(&mut self, what: &str) {
        self.line('✓', what, None);
    }

    /// Worth knowing, not wrong.
    fn note(&mut self, what: &str, fix: Option<&str>) {
        self.line('·', what, fix);
    }

    fn bad(&mut self, what: &str, fix: &str) {
        self.problems += 1;
        self.line('✗', what, Some(fix));
    }
}

#[derive(clap::Args, Default)]
pub struct DoctorArgs {
    /// Rebuild the session store first: the daemon stops (refused while turns run), moves
    /// the store aside and copies what can be read of it into a new one as it starts again,
    /// as it does by itself when it finds the store damaged.
    #[arg(long)]
    pub recover_store: bool,
}

pub async fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    if args.recover_store {
        ask_for_a_rebuild().await?;
    }
    let mut report = Report::default();
    let _ = writeln!(
        report.text,
        "stepper {} (protocol {PROTOCOL_VERSION})",
        env!("CARGO_PKG_VERSION")
    );
    let places = match places() {
        Ok(places) => places,
        Err(e) => {
            report.section("places");
            report.bad(
                &e.to_string(),
                "set HOME (or STEPPER_HOME) in the environment you run stepper from",
            );
            return Ok(finish(report));
        }
    };
    let cwd = std::env::current_dir()?;
    let client = daemon(&mut report, &places).await;
    if let Some(client) = &client {
        store(&mut report, client).await;
        providers(&mut report, client, &cwd).await;
        settings(&mut report, client, &cwd).await;
    }
    service(&mut report, &places);
    if let Some(client) = &client {
        login_env(&mut report, client).await;
    }
    Ok(finish(report))
}

fn finish(report: Report) -> ExitCode {
    let mut text = report.text;
    match report.problems {
        0 => text.push_str("\nno problems found\n"),
        1 => text.push_str("\n1 problem found\n"),
        n => {
            let _ = writeln!(text, "\n{n} problems found");
        }
    }
    print!("{text}");
    if report.problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The daemon: running or started, its version against ours, its places.
async fn daemon(report: &mut Report, places: &Places) -> Option<DaemonClient> {
    report.section("daemon");
    let client = match connect_existing(places, CLIENT).await {
        Ok(client) => client,
        Err(e) if e.is_not_running() => match start_daemon(places).await {
            Ok(_) => match connect_existing(places, CLIENT).await {
                Ok(client) => {
                    report.note(
                        "stepperd was not running: started it now (any stepper command does)",
                        None,
                    );
                    client
                }
                Err(e) => {
                    report.bad(
                        &format!("stepperd started but does not answer: {e}"),
                        "see 'stepper daemon logs', then 'stepper daemon restart'",
                    );
                    return None;
                }
            },
            Err(e) => {
                report.bad(
                    &format!("stepperd is not running and cannot start: {e:#}"),
                    &format!(
                        "see the log in {} ('stepper daemon logs')",
                        places.log_dir.display()
                    ),
                );
                return None;
            }
        },
        Err(e) => {
            report.bad(
                &format!("stepperd does not answer: {e}"),
                "'stepper daemon restart' (or 'stepper daemon stop' and run the command again)",
            );
            return None;
        }
    };
    let daemon = client.daemon();
    let running = format!(
        "stepperd {} is running (pid {}), protocol {}",
        daemon.daemon_version, daemon.pid, daemon.protocol_version
    );
    match outdated(&client) {
        None => report.ok(&format!("{running}: the same as this stepper")),
        Some(Staleness::DaemonOlder(why)) => report.bad(
            &format!("{running}: {why}"),
            "'stepper daemon restart' (it waits for running turns; --force does not)",
        ),
        Some(Staleness::DaemonNewer(why)) => report.bad(
            &format!("{running}: {why}"),
            "update this stepper, or run the one installed with that stepperd",
        ),
    }
    let mut place = |what: &str, path: &Path, fix: &str| match std::fs::metadata(path) {
        Ok(_) => report.ok(&format!("{what} {}", path.display())),
        Err(e) => report.bad(&format!("{what} {}: {e}", path.display()), fix),
    };
    place(
        "socket",
        &places.socket,
        "'stepper daemon restart' makes it again",
    );
    place(
        "data  ",
        &places.data_dir,
        "check that the folder exists and is yours (STEPPER_HOME or XDG_DATA_HOME moves it)",
    );
    place(
        "logs  ",
        &places.log_dir,
        "'stepper daemon restart' makes it again",
    );
    Some(client)
}

/// Leave the request in the data folder, stop the daemon and start it again: it rebuilds the
/// store before it listens.
async fn ask_for_a_rebuild() -> anyhow::Result<()> {
    use anyhow::{Context, bail};
    let places = places()?;
    let running = match connect_existing(&places, CLIENT).await {
        Ok(client) => Some(client),
        Err(e) if e.is_not_running() => None,
        Err(e) => return Err(e.into()),
    };
    if let Some(client) = &running {
        let turns = client.daemon().running_turns;
        if turns > 0 {
            bail!(
                "stepperd has {turns} running turn(s): wait for them to finish (or stop it with \
                 'stepper daemon stop'), then run 'stepper doctor --recover-store' again"
            );
        }
    }
    let request = places.store_recovery_request_path();
    std::fs::create_dir_all(&places.data_dir)
        .with_context(|| format!("creating the data dir {}", places.data_dir.display()))?;
    std::fs::write(&request, b"")
        .with_context(|| format!("writing the request {}", request.display()))?;
    if let Some(client) = running {
        shut_down(&places, client).await?;
    }
    println!("rebuilding the session store (the daemon does it as it starts)…");
    start_daemon(&places).await?;
    Ok(())
}

/// The session store: checked at start, rebuilt if it was damaged, copies kept aside.
async fn store(report: &mut Report, client: &DaemonClient) {
    report.section("session store");
    let info = match client.call::<DaemonInfo>(Empty {}).await {
        Ok(info) => info.store,
        Err(e) => {
            report.bad(
                &format!("cannot ask the daemon: {e}"),
                "see 'stepper daemon logs'",
            );
            return;
        }
    };
    let Some(store) = info else {
        report.note(
            "the daemon does not say (it is older than this stepper)",
            None,
        );
        return;
    };
    let mut told = Vec::new();
    if let Some(wal) = &store.wal_dropped {
        told.push(wal.copy.clone());
        report.bad(
            &wal.summary,
            "nothing to do to go on; the copy of the log may hold what was lost — delete it \
             once you no longer need it",
        );
    }
    match &store.recovered {
        Some(r) if r.damaged => {
            told.push(r.damaged_copy.clone());
            report.bad(
                &r.summary,
                &format!(
                    "nothing to do to go on; the damaged copy may hold more than was recovered \
                     ('sqlite3 {} .recover' reads what SQLite's shell can) — delete it once you \
                     no longer need it",
                    r.damaged_copy
                ),
            );
        }
        Some(r) => {
            told.push(r.damaged_copy.clone());
            report.note(&r.summary, None);
        }
        None => report.ok(&format!(
            "{}: no damage found at start (quick_check, {} ms)",
            store.path, store.check_ms
        )),
    }
    for copy in &store.kept_aside {
        if told.iter().any(|t| copy.path.starts_with(t.as_str())) {
            continue;
        }
        report.note(
            &format!(
                "kept aside by an earlier rebuild: {} ({})",
                copy.path,
                size(copy.bytes)
            ),
            Some("delete it once you no longer need what it may hold"),
        );
    }
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KB", b as f64 / f64::from(1 << 10)),
        b => format!("{b} bytes"),
    }
}

async fn providers(report: &mut Report, client: &DaemonClient, cwd: &Path) {
    report.section("providers");
    let status = client
        .call::<ProvidersStatus>(ProvidersStatusParams {
            cwd: Some(cwd.display().to_string()),
            env: client_env(),
            probe: true,
        })
        .await;
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            report.bad(
                &format!("cannot ask the daemon: {e}"),
                "see 'stepper daemon logs'",
            );
            return;
        }
    };
    let width = status
        .providers
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(0);
    for p in &status.providers {
        let what = format!("{:width$}  {}", p.name, p.detail);
        if p.usable {
            report.ok(&what);
        } else {
            report.note(&what, p.fix.as_deref());
        }
    }
    if status.default_usable {
        report.ok(&format!(
            "new sessions here start on {}",
            status.default_model
        ));
    } else if status.providers.iter().any(|p| p.usable) {
        report.bad(
            &format!(
                "new sessions here start on {}, whose provider is not set up",
                status.default_model
            ),
            "set \"model\" in setting.json to a model of a provider above, or set that one up",
        );
    } else {
        report.bad(
            "no provider is set up: a session cannot answer",
            "run 'stepper' and choose one, or set ANTHROPIC_API_KEY / OPENAI_API_KEY, or \
             'stepper auth login --codex' (ChatGPT)",
        );
    }
}

async fn settings(report: &mut Report, client: &DaemonClient, cwd: &Path) {
    report.section("settings");
    let out = client
        .call::<ConfigValidate>(CwdParams {
            cwd: cwd.display().to_string(),
        })
        .await;
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            report.bad(
                &format!("cannot check them: {e}"),
                "'stepper config --validate' says more",
            );
            return;
        }
    };
    for file in &out.files {
        let problems: Vec<&ConfigProblem> =
            out.problems.iter().filter(|p| &p.file == file).collect();
        if !Path::new(file).exists() {
            report.note(&format!("{file} (none)"), None);
        } else if problems.is_empty() {
            report.ok(file);
        }
        for p in problems {
            let what = format!(
                "{}:{}:{}: {}: {}",
                p.file, p.line, p.column, p.severity, p.message
            );
            let fix = p.hint.as_deref().unwrap_or("edit the file there");
            if p.severity == stepper_protocol::methods::Severity::Error {
                report.bad(&what, fix);
            } else {
                report.note(&what, Some(fix));
            }
        }
    }
    trust(report, client, cwd).await;
}

/// Whether this folder's project files apply in full, and what waits for trust.
async fn trust(report: &mut Report, client: &DaemonClient, cwd: &Path) {
    let Ok(t) = client
        .call::<TrustGet>(CwdParams {
            cwd: cwd.display().to_string(),
        })
        .await
    else {
        return;
    };
    match (t.trusted, t.ignored.len()) {
        (true, _) => report.ok(&format!(
            "trusted: the project's files apply in full ({})",
            t.decided_by.as_deref().unwrap_or(&t.folder)
        )),
        (false, 0) => report.note(
            &format!(
                "{} is not trusted; its files ask for nothing trust gives",
                t.folder
            ),
            None,
        ),
        (false, n) => report.note(
            &format!(
                "{} is not trusted: {n} thing(s) its files ask for are left out ({})",
                t.folder,
                t.ignored.join("; ")
            ),
            Some(&format!("if you trust it: 'stepper trust {}'", t.folder)),
        ),
    }
}

fn service(report: &mut Report, places: &Places) {
    report.section("service");
    let manager = match Manager::detect(&places.data_dir) {
        Ok(manager) => manager,
        Err(e) => {
            report.note(&format!("cannot tell: {e:#}"), None);
            return;
        }
    };
    let Ok(stepperd) = stepperd_path() else {
        report.bad(
            "no stepperd beside this stepper",
            "install both binaries together (packaging/install.sh), or set STEPPERD",
        );
        return;
    };
    if manager.installed(&stepperd, &places.log_dir) {
        report.ok(&format!(
            "installed with {}: stepperd starts at login",
            manager.name()
        ));
    } else {
        report.note(
            "not installed: stepperd starts when a stepper command needs it",
            Some(&format!(
                "'stepper daemon install' starts it at login ({})",
                manager.name()
            )),
        );
    }
}

async fn login_env(report: &mut Report, client: &DaemonClient) {
    report.section("login environment");
    let info = match client.call::<DaemonInfo>(Empty {}).await {
        Ok(info) => info.login_env,
        Err(e) => {
            report.bad(
                &format!("cannot ask the daemon: {e}"),
                "see 'stepper daemon logs'",
            );
            return;
        }
    };
    let Some(info) = info else {
        report.note(
            "the daemon does not say (it is older than this stepper)",
            None,
        );
        return;
    };
    let shell = info.shell.as_deref().unwrap_or("the login shell");
    match info.state {
        LoginEnvState::Read => report.ok(&format!(
            "read from {shell}: {} variables fill what a session's own environment lacks",
            info.variables
        )),
        LoginEnvState::Pending => report.note(&format!("still being read from {shell}"), None),
        LoginEnvState::Off => report.note(
            "not read (STEPPER_LOGIN_ENV=off): sessions use their own environment only",
            None,
        ),
        LoginEnvState::Failed => report.bad(
            &format!(
                "{shell} could not be read: {}",
                info.error.as_deref().unwrap_or("no reason given")
            ),
            "make the shell's profile finish quickly and without asking for input, or set \
             STEPPER_LOGIN_ENV=off for the daemon",
        ),
    }
}
