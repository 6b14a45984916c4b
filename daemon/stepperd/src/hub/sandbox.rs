//! The OS sandbox of a session's commands: which one applies (the session's own, else the
//! settings' for its folder), whether this machine can apply it (probed once, by running
//! the helper the way a command runs), where it lets commands write, what stays read-only
//! inside the project, and what it hides.
//!
//! *The sandbox stands in for approvals only in `accept-edits` and `auto`*: `default` asks as
//! before (what is approved runs sandboxed); in `accept-edits` a line runs unasked unless a rule
//! asks or a read outside the project is in view and reads are not confined. Leaving the sandbox
//! after a refusal is asked every time, in every mode, and no rule stands for it. Known gap: under
//! Landlock alone (no bubblewrap) `.git/` and the other protected paths inside the project are
//! writable in `workspace-write` (Landlock cannot take a folder back out of a granted one).

use std::path::{Path, PathBuf};

use stepper_engine::config::{SandboxConfig, SandboxMode};
use stepper_engine::tool::CommandSandbox;
use stepper_process::sandbox::{HELPER_FAILED, Mechanism, Policy, Support};
use stepper_protocol::places::Places;
use stepper_protocol::session::Env;
use stepper_protocol::{SandboxInfo, SandboxMechanism, SandboxState};

/// What programs need to read wherever reads are confined to `readableRoots`.
const SYSTEM: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
    "/dev",
    "/run",
    "/nix",
    "/snap",
    "/var/lib",
    "/System",
    "/Library",
    "/private/etc",
    "/private/var/db",
];

/// The sandbox as the daemon applies it.
pub struct Sandboxes {
    support: tokio::sync::OnceCell<Support>,
    /// The binary whose `sandbox` subcommand is the helper: this daemon's own, as the
    /// kernel has it (so a rebuilt or upgraded file on disk changes nothing).
    helper: PathBuf,
    /// `STEPPER_SANDBOX_MAX_ABI`: use at most this Landlock ABI (0 acts out a kernel
    /// without Landlock).
    max_abi: Option<u32>,
    /// Whether bubblewrap may be tried (`STEPPER_SANDBOX_BWRAP=off` says no: Landlock and
    /// seccomp alone, as on a machine without it).
    bubblewrap: bool,
    /// What commands never read, whatever the settings: the store and the credentials
    /// (the data folder), the settings (the config folder) and the daemon's socket.
    own: Vec<PathBuf>,
}

/// What one turn's commands run in.
pub struct Plan {
    pub info: SandboxInfo,
    /// `None` when commands run unconfined (off, or unavailable).
    pub command: Option<CommandSandbox>,
    pub confines_reads: bool,
}

impl Sandboxes {
    /// The sandbox of the daemon keeping its files in `places`, as the environment tunes it.
    pub fn new(places: &Places) -> Sandboxes {
        // The daemon's executable as it was found at start. Not `/proc/self/exe`: commands
        // start under the reaper, a process of its own, and the daemon is not dumpable, so
        // its `/proc/<pid>/exe` is closed to the reaper of a user without CAP_SYS_PTRACE.
        let helper = std::env::current_exe()
            .ok()
            .filter(|p| p.is_file())
            .unwrap_or_else(|| PathBuf::from("/proc/self/exe"));
        let max_abi = std::env::var("STEPPER_SANDBOX_MAX_ABI")
            .ok()
            .and_then(|v| v.trim().parse().ok());
        let bubblewrap = std::env::var("STEPPER_SANDBOX_BWRAP").map_or(true, |v| v.trim() != "off");
        Sandboxes {
            support: tokio::sync::OnceCell::new(),
            helper,
            max_abi,
            bubblewrap,
            own: own_files(places),
        }
    }

    /// Whether commands can be sandboxed here, found out once.
    pub async fn support(&self) -> &Support {
        self.support
            .get_or_init(|| async {
                let found =
                    stepper_process::sandbox::probe(&self.helper, self.max_abi, self.bubblewrap)
                        .await;
                match &found {
                    Support::Available { what, .. } => {
                        tracing::info!(%what, "the sandbox is available")
                    }
                    Support::Unavailable { why } => {
                        tracing::warn!(%why, "the sandbox is unavailable")
                    }
                }
                found
            })
            .await
    }

    /// The sandbox for commands run in `cwd` with `env`: the session's `chosen` mode, else
    /// the one of `config` (the settings' sandbox), else none.
    pub async fn plan(
        &self,
        chosen: Option<SandboxMode>,
        config: &SandboxConfig,
        cwd: &Path,
        env: &Env,
    ) -> Plan {
        let mode = chosen.or(config.mode).unwrap_or(SandboxMode::Off);
        let network = config.network.unwrap_or(false);
        let mut info = SandboxInfo {
            mode,
            state: SandboxState::Off,
            network,
            writable_roots: Vec::new(),
            reason: None,
            mechanism: None,
        };
        if mode == SandboxMode::Off {
            return Plan {
                info,
                command: None,
                confines_reads: false,
            };
        }
        let home = env.get("HOME").map(PathBuf::from);
        let expand = |root: &str| -> Option<PathBuf> {
            match root.strip_prefix("~/") {
                Some(rest) => home.as_ref().map(|h| h.join(rest)),
                None => Some(PathBuf::from(root)).filter(|p| p.is_absolute()),
            }
        };
        let mut roots: Vec<PathBuf> = Vec::new();
        if mode == SandboxMode::WorkspaceWrite {
            roots.push(cwd.to_path_buf());
            roots.push(PathBuf::from("/tmp"));
            roots.push(PathBuf::from("/var/tmp"));
            if let Some(tmp) = env.get("TMPDIR").map(PathBuf::from)
                && tmp.is_absolute()
            {
                roots.push(tmp);
            }
            roots.extend(config.writable_roots.iter().filter_map(|r| expand(r)));
        }
        roots.dedup();
        info.writable_roots = roots.iter().map(|p| p.display().to_string()).collect();
        let readable = config.readable_roots.as_ref().map(|list| {
            let mut all: Vec<PathBuf> = list.iter().filter_map(|r| expand(r)).collect();
            all.push(cwd.to_path_buf());
            all.extend(roots.iter().cloned());
            all.extend(SYSTEM.iter().map(PathBuf::from));
            all
        });
        let confines_reads = readable.is_some();
        let support = self.support().await;
        let (what, mechanism) = match support {
            Support::Available { what, mechanism } => (what.clone(), *mechanism),
            Support::Unavailable { why } => {
                info.state = SandboxState::Unavailable;
                info.reason = Some(why.clone());
                return Plan {
                    info,
                    command: None,
                    confines_reads: false,
                };
            }
        };
        // What git and stepper run programs from stays read-only inside the project (and
        // the empty settings folders are made, to be held so). Nothing is writable in
        // `read-only`, so nothing needs it there.
        let read_only = if mode == SandboxMode::WorkspaceWrite {
            let root = cwd.to_path_buf();
            tokio::task::spawn_blocking(move || {
                stepper_engine::gate::protected::read_only_in_sandbox(&root)
            })
            .await
            .unwrap_or_default()
        } else {
            Vec::new()
        };
        let hidden: Vec<PathBuf> = config
            .deny_read()
            .iter()
            .filter_map(|p| expand(p))
            .chain(self.own.iter().cloned())
            .collect();
        let policy = Policy {
            writable: roots,
            readable,
            read_only,
            hidden,
            network,
            max_abi: self.max_abi,
            bubblewrap: mechanism == Mechanism::Bubblewrap,
        };
        let Some(wrapped) = policy.wrap(&self.helper) else {
            info.state = SandboxState::Unavailable;
            info.reason = Some("this operating system has no sandbox".into());
            return Plan {
                info,
                command: None,
                confines_reads: false,
            };
        };
        info.state = SandboxState::Active;
        info.reason = Some(what);
        info.mechanism = Some(match mechanism {
            Mechanism::Bubblewrap => SandboxMechanism::Bubblewrap,
            Mechanism::Landlock => SandboxMechanism::Landlock,
            Mechanism::Seatbelt => SandboxMechanism::Seatbelt,
        });
        Plan {
            info,
            command: Some(CommandSandbox {
                program: wrapped.program,
                prefix: wrapped.args,
                helper_failed: cfg!(target_os = "linux").then_some(HELPER_FAILED),
                holds_processes: mechanism == Mechanism::Bubblewrap,
            }),
            confines_reads,
        }
    }
}

/// The daemon's own files, hidden from every command: the data folder (the store,
/// `credentials.json`, logs), the config folder (settings), and the socket — its folder when
/// that is stepper's own, else the socket alone (a socket set in `/tmp` must not hide `/tmp`).
fn own_files(places: &Places) -> Vec<PathBuf> {
    let mut own = vec![places.data_dir.clone(), places.config_dir.clone()];
    let socket_dir = places.socket.parent().filter(|dir| {
        *dir == places.data_dir || dir.file_name().is_some_and(|name| name == "stepper")
    });
    own.push(match socket_dir {
        Some(dir) => dir.to_path_buf(),
        None => places.socket.clone(),
    });
    own.sort();
    own.dedup();
    own
}

/// The read-only sandbox of a turn's agents that may not change files (no tool of the `edit`
/// capability): planned the first time one of them may run a command, since most turns
/// have none.
pub struct ReadOnly {
    sandboxes: std::sync::Arc<Sandboxes>,
    config: SandboxConfig,
    cwd: PathBuf,
    env: Env,
    plan: tokio::sync::OnceCell<Option<(std::sync::Arc<CommandSandbox>, bool)>>,
}

impl ReadOnly {
    /// For commands run in `cwd` with `env`, under the settings' sandbox `config` (its
    /// network and what it hides and confines reads to; nothing is writable).
    pub fn new(
        sandboxes: std::sync::Arc<Sandboxes>,
        config: SandboxConfig,
        cwd: PathBuf,
        env: Env,
    ) -> ReadOnly {
        ReadOnly {
            sandboxes,
            config,
            cwd,
            env,
            plan: tokio::sync::OnceCell::new(),
        }
    }

    /// The sandbox, and whether it confines reads too; `None` where this machine has none.
    pub async fn get(&self) -> Option<(std::sync::Arc<CommandSandbox>, bool)> {
        self.plan
            .get_or_init(|| async {
                let plan = self
                    .sandboxes
                    .plan(
                        Some(SandboxMode::ReadOnly),
                        &self.config,
                        &self.cwd,
                        &self.env,
                    )
                    .await;
                let confines_reads = plan.confines_reads;
                plan.command
                    .map(|command| (std::sync::Arc::new(command), confines_reads))
            })
            .await
            .clone()
    }
}
