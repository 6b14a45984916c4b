//! The OS sandbox of a session's commands: which one applies (the session's own, else the
//! settings' for its folder), whether this machine can apply it (probed once, by running
//! the helper the way a command runs), and where it lets commands write.

use std::path::{Path, PathBuf};

use stepper_engine::config::{SandboxConfig, SandboxMode};
use stepper_engine::tool::CommandSandbox;
use stepper_process::sandbox::{HELPER_FAILED, Policy, Support};
use stepper_protocol::session::Env;
use stepper_protocol::{SandboxInfo, SandboxState};

/// Devices every command may write (and, for terminals, drive): the sink and source files,
/// pseudo-terminals of its own, and POSIX shared memory.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

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
}

/// What one turn's commands run in.
pub struct Plan {
    pub info: SandboxInfo,
    /// `None` when commands run unconfined (off, or unavailable).
    pub command: Option<CommandSandbox>,
    pub confines_reads: bool,
}

impl Sandboxes {
    pub fn from_env() -> Sandboxes {
        let helper = if cfg!(target_os = "linux") {
            PathBuf::from("/proc/self/exe")
        } else {
            std::env::current_exe().unwrap_or_else(|_| PathBuf::from("stepperd"))
        };
        let max_abi = std::env::var("STEPPER_SANDBOX_MAX_ABI")
            .ok()
            .and_then(|v| v.trim().parse().ok());
        Sandboxes {
            support: tokio::sync::OnceCell::new(),
            helper,
            max_abi,
        }
    }

    /// Whether commands can be sandboxed here, found out once.
    pub async fn support(&self) -> &Support {
        self.support
            .get_or_init(|| async {
                let found = stepper_process::sandbox::probe(&self.helper, self.max_abi).await;
                match &found {
                    Support::Available { what } => {
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
        let policy = Policy {
            writable: roots
                .iter()
                .cloned()
                .chain(DEVICES.iter().map(PathBuf::from))
                .collect(),
            readable,
            network,
            max_abi: self.max_abi,
        };
        let wrapped = match self.support().await {
            Support::Available { what } => policy.wrap(&self.helper).map(|w| (w, what.clone())),
            Support::Unavailable { why } => {
                info.reason = Some(why.clone());
                None
            }
        };
        let Some((wrapped, what)) = wrapped else {
            info.state = SandboxState::Unavailable;
            info.reason
                .get_or_insert_with(|| "this operating system has no sandbox".into());
            return Plan {
                info,
                command: None,
                confines_reads: false,
            };
        };
        info.state = SandboxState::Active;
        info.reason = Some(what);
        Plan {
            info,
            command: Some(CommandSandbox {
                program: wrapped.program,
                prefix: wrapped.args,
                helper_failed: cfg!(target_os = "linux").then_some(HELPER_FAILED),
            }),
            confines_reads,
        }
    }
}
