//! `stepper --host user@box …`: a stepperd on another machine, reached through the system's
//! OpenSSH. The remote daemon's Unix socket is forwarded to a local one (`ssh -L
//! local.sock:remote.sock`): no new listener, no new authentication — SSH's. The remote
//! daemon is started when absent (`ssh box stepper daemon start`), and one SSH connection
//! (a control master, kept a few minutes) serves every call, so a second command connects
//! in a round trip instead of a handshake.
//!
//! Knobs: `STEPPER_SSH` (the ssh command and options, default `ssh`), `STEPPER_REMOTE_COMMAND`
//! (stepper on the remote side, default `stepper`), `STEPPER_SSH_CONTROL=off` (no master: one
//! connection per command).
//!
//! *`--host` forwards the daemon's socket and does not proxy it.* Every client (TUI, `ask`, `acp`)
//! then works unchanged over `ssh -L`. The control master makes a warm `--host ask` about 38 ms,
//! compared with about 530 ms when each command opens its own connection (`cargo bench -p
//! stepper-e2e --bench remote`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// How long the remote daemon's socket may take to appear on this side.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(20);

/// How long an idle control master stays, for the next command.
const CONTROL_PERSIST_SECS: u32 = 300;

pub struct Remote {
    pub host: String,
    /// The remote daemon's socket, forwarded here.
    pub local_socket: PathBuf,
    /// The folder new sessions use: `--remote-dir`, else the remote login folder.
    pub dir: String,
    /// The remote daemon's version, when it said.
    pub version: Option<String>,
    ssh: Ssh,
    forward: Forward,
}

enum Forward {
    /// Held by the control master; cancelled at exit.
    Master(String),
    /// An `ssh -N -L` of our own; killed at exit.
    Child(std::sync::Mutex<Child>),
}

static REMOTE: OnceLock<Remote> = OnceLock::new();

/// The remote daemon this process talks to, if `--host` said one.
pub fn get() -> Option<&'static Remote> {
    REMOTE.get()
}

/// Reach the daemon on `host` and forward its socket; every later connection goes there.
pub fn open(host: &str, dir: Option<String>) -> anyhow::Result<&'static Remote> {
    if !cfg!(unix) {
        bail!("--host needs a Unix client: ssh forwards the daemon's Unix socket to a local one");
    }
    if host.starts_with('-') || host.trim().is_empty() {
        bail!("--host {host:?} is not a host: give user@box or an ssh config alias");
    }
    let ssh = Ssh::from_env(host)?;
    let remote_cmd = std::env::var("STEPPER_REMOTE_COMMAND")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(|| "stepper".into());
    let status_line = format!("pwd && {remote_cmd} daemon status --json");
    let out = ssh.run(&status_line)?;
    let mut status = parse_status(host, &remote_cmd, &out)?;
    if !status.running {
        let started = ssh.run(&format!("{remote_cmd} daemon start"))?;
        if !started.status.success() {
            bail!(
                "could not start stepperd on {host}: {}",
                String::from_utf8_lossy(&started.stderr).trim()
            );
        }
        status = parse_status(host, &remote_cmd, &ssh.run(&status_line)?)?;
    }
    let remote_socket = status.socket.with_context(|| {
        format!("stepper on {host} did not say where its daemon listens — is it older than 0.1?")
    })?;
    let local_socket = ssh.dir.join(format!("fwd-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&local_socket);
    let spec = format!("{}:{remote_socket}", local_socket.display());
    // Through the master the first call left (no new connection), else an `ssh -N -L` of
    // our own.
    let forward = match ssh.control.then(|| ssh.forward_through_master(&spec)) {
        Some(Ok(())) => Forward::Master(spec),
        Some(Err(why)) if ssh.master_alive() => {
            bail!("ssh could not forward {host}'s daemon socket: {why}")
        }
        _ => {
            let child = ssh
                .command()
                .args(["-N", "-o", "ExitOnForwardFailure=yes", "-L", &spec, host])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .context("running ssh -N -L")?;
            Forward::Child(std::sync::Mutex::new(child))
        }
    };
    let remote = Remote {
        host: host.to_string(),
        local_socket,
        dir: dir.unwrap_or(status.home),
        version: status.version,
        ssh,
        forward,
    };
    remote.wait_for_socket()?;
    Ok(REMOTE.get_or_init(|| remote))
}

/// Undo the forward: the local socket is gone when this process is.
pub fn close() {
    let Some(remote) = REMOTE.get() else { return };
    match &remote.forward {
        Forward::Master(spec) => {
            let _ = remote
                .ssh
                .command()
                .args(["-O", "cancel", "-L", spec, &remote.host])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        Forward::Child(child) => {
            let mut child = child.lock().unwrap_or_else(|p| p.into_inner());
            let _ = child.kill();
            let _ = child.wait();
        }
    }
    let _ = std::fs::remove_file(&remote.local_socket);
}

impl Remote {
    fn wait_for_socket(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + FORWARD_TIMEOUT;
        loop {
            #[cfg(unix)]
            if std::os::unix::net::UnixStream::connect(&self.local_socket).is_ok() {
                return Ok(());
            }
            if let Forward::Child(child) = &self.forward {
                let mut child = child.lock().unwrap_or_else(|p| p.into_inner());
                if let Ok(Some(status)) = child.try_wait() {
                    let mut said = String::new();
                    if let Some(mut err) = child.stderr.take() {
                        let _ = std::io::Read::read_to_string(&mut err, &mut said);
                    }
                    bail!(
                        "ssh to {} ended ({status}) before the daemon's socket was forwarded: {}",
                        self.host,
                        said.trim()
                    );
                }
            }
            if Instant::now() > deadline {
                bail!(
                    "{}'s daemon socket did not come through ssh within {}s",
                    self.host,
                    FORWARD_TIMEOUT.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// What to say when the remote daemon is not this client's version.
    pub fn skew(&self) -> Option<String> {
        let theirs = self.version.as_deref()?;
        let ours = env!("CARGO_PKG_VERSION");
        (theirs != ours).then(|| {
            format!(
                "the stepperd on {host} is {theirs} and this stepper is {ours}: install the same \
                 version on both sides, then run 'ssh {host} stepper daemon restart'",
                host = self.host
            )
        })
    }
}

/// The ssh command line: the program and options from `STEPPER_SSH`, plus the control
/// master's.
struct Ssh {
    program: String,
    args: Vec<String>,
    host: String,
    /// Where the control socket and forwarded sockets live (only this user may enter).
    dir: PathBuf,
    control: bool,
}

impl Ssh {
    fn from_env(host: &str) -> anyhow::Result<Ssh> {
        let line = std::env::var("STEPPER_SSH").unwrap_or_else(|_| "ssh".into());
        let mut words = line.split_whitespace().map(str::to_string);
        let program = words.next().unwrap_or_else(|| "ssh".into());
        let control = cfg!(unix)
            && !std::env::var("STEPPER_SSH_CONTROL").is_ok_and(|v| v == "off" || v == "0");
        Ok(Ssh {
            program,
            args: words.collect(),
            host: host.to_string(),
            dir: private_dir()?,
            control,
        })
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args);
        if self.control {
            cmd.arg("-o").arg("ControlMaster=auto");
            cmd.arg("-o")
                .arg(format!("ControlPath={}/ssh-%C", self.dir.display()));
            cmd.arg("-o")
                .arg(format!("ControlPersist={CONTROL_PERSIST_SECS}"));
        }
        cmd
    }

    /// Run `line` on the host (through its login shell, as ssh does).
    fn run(&self, line: &str) -> anyhow::Result<std::process::Output> {
        let out = self
            .command()
            .arg(&self.host)
            .arg(line)
            .stdin(Stdio::null())
            .output()
            .with_context(|| {
                format!(
                    "running {} — install OpenSSH's client, or set STEPPER_SSH",
                    self.program
                )
            })?;
        if out.status.code() == Some(255) {
            bail!(
                "ssh {} failed: {}",
                self.host,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(out)
    }

    /// Ask the control master to listen on `spec`'s local socket.
    fn forward_through_master(&self, spec: &str) -> Result<(), String> {
        let out = self
            .command()
            .args(["-O", "forward", "-L", spec, &self.host])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }

    fn master_alive(&self) -> bool {
        self.command()
            .args(["-O", "check", &self.host])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

struct Status {
    running: bool,
    socket: Option<String>,
    version: Option<String>,
    home: String,
}

/// `pwd` then `stepper daemon status --json`, as printed on the host.
fn parse_status(
    host: &str,
    remote_cmd: &str,
    out: &std::process::Output,
) -> anyhow::Result<Status> {
    let text = String::from_utf8_lossy(&out.stdout);
    let (home, json) = text.split_once('\n').unwrap_or((&text, ""));
    if out.status.code() == Some(127) || json.trim().is_empty() {
        bail!(
            "{remote_cmd:?} did not run on {host} ({}): install stepper there, or set \
             STEPPER_REMOTE_COMMAND to its path on {host}{}",
            out.status,
            match String::from_utf8_lossy(&out.stderr).trim() {
                "" => String::new(),
                said => format!(" — it said: {said}"),
            }
        );
    }
    let value: serde_json::Value = serde_json::from_str(json).with_context(|| {
        format!("'{remote_cmd} daemon status --json' on {host} printed something else: {json}")
    })?;
    let field = |name: &str| value.get(name).and_then(|v| v.as_str()).map(str::to_string);
    Ok(Status {
        running: value.get("running").and_then(|v| v.as_bool()) != Some(false),
        socket: field("socket"),
        version: field("version"),
        home: home.trim().to_string(),
    })
}

/// `$XDG_RUNTIME_DIR/stepper`, else a folder of ours under the temp folder: mode 0700, owned
/// by this user (a folder someone else made there is refused).
fn private_dir() -> anyhow::Result<PathBuf> {
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(run) => PathBuf::from(run).join("stepper"),
        None => {
            let user = std::env::var("USER")
                .or_else(|_| std::env::var("LOGNAME"))
                .unwrap_or_else(|_| uid().unwrap_or_else(|| "user".into()));
            // Short: ssh's socket paths must fit in about 100 bytes.
            PathBuf::from("/tmp").join(format!("stepper-{user}"))
        }
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    check_private(&dir)?;
    Ok(dir)
}

/// This process's user id, where `/proc` tells it.
fn uid() -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self")
            .ok()
            .map(|m| m.uid().to_string())
    }
    #[cfg(not(unix))]
    None
}

#[cfg(unix)]
fn check_private(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).with_context(|| {
        format!(
            "{} is not ours: remove it, or set XDG_RUNTIME_DIR",
            dir.display()
        )
    })?;
    // A file made now is ours: the folder must be too.
    let probe = dir.join(format!(".owner-{}", std::process::id()));
    std::fs::write(&probe, b"").with_context(|| format!("cannot write in {}", dir.display()))?;
    let ours = std::fs::metadata(&probe).map(|m| m.uid());
    let _ = std::fs::remove_file(&probe);
    if ours? != dir.metadata()?.uid() {
        bail!(
            "{} belongs to another user: remove it, or set XDG_RUNTIME_DIR",
            dir.display()
        );
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_dir: &Path) -> anyhow::Result<()> {
    Ok(())
}
