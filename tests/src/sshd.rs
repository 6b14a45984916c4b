//! A real OpenSSH server on a loopback port, for `stepper --host`: a throwaway host key and
//! client key, the test's own config, and the "remote machine" being another [`TestEnv`]
//! (its home, its fake LLM) whose environment the server gives every session (`SetEnv`).
//! Dropping it ends the control master stepper left behind and the server.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::env::{TestEnv, bin_dir};

const SSHD: &str = "/usr/sbin/sshd";

pub struct Sshd {
    dir: tempfile::TempDir,
    child: Child,
    pub port: u16,
    /// An ssh config where the host `box` is this server.
    pub ssh_config: PathBuf,
}

impl Sshd {
    /// Whether OpenSSH's server and client are here; a test that needs them returns early
    /// when not (see `needs`).
    pub fn available() -> bool {
        crate::needs::that(
            Path::new(SSHD).exists(),
            "this remote test needs sshd (apt-get install openssh-server)",
        ) && crate::needs::program("ssh", "this remote test", "apt-get install openssh-client")
    }

    /// Serve `machine`: sessions get its environment (its STEPPER_HOME, its provider keys).
    pub fn start(machine: &TestEnv) -> Sshd {
        // Short: ssh's control socket lives under it (a Unix socket path).
        let dir = tempfile::Builder::new()
            .prefix("ssh")
            .tempdir_in("/tmp")
            .expect("temp dir for sshd");
        let path = |name: &str| dir.path().join(name);
        for key in ["host_key", "id"] {
            let status = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(path(key))
                .status()
                .expect("ssh-keygen");
            assert!(status.success(), "ssh-keygen failed");
        }
        std::fs::copy(path("id.pub"), path("authorized_keys")).unwrap();
        // sshd run by root wants its privilege separation folder.
        if nix::unistd::geteuid().is_root() {
            std::fs::create_dir_all("/run/sshd").expect("creating /run/sshd");
        }
        let port = free_port();
        let set_env: Vec<String> = machine
            .envs()
            .into_iter()
            .map(|(k, v)| format!("\"{k}={v}\""))
            .collect();
        std::fs::write(
            path("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n\
                 AuthorizedKeysFile {keys}\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
                 PidFile {pid}\nAllowStreamLocalForwarding yes\nSetEnv {set_env}\n",
                host_key = path("host_key").display(),
                keys = path("authorized_keys").display(),
                pid = path("sshd.pid").display(),
                set_env = set_env.join(" "),
            ),
        )
        .unwrap();
        std::fs::write(
            path("ssh_config"),
            format!(
                "Host box\n  HostName 127.0.0.1\n  Port {port}\n  IdentityFile {id}\n  \
                 IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  \
                 LogLevel ERROR\n  BatchMode yes\n",
                id = path("id").display(),
            ),
        )
        .unwrap();
        let mut child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(path("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(path("sshd.log")).unwrap())
            .spawn()
            .expect("starting sshd");
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "sshd exited ({status}): {}",
                    std::fs::read_to_string(path("sshd.log")).unwrap_or_default()
                );
            }
            assert!(Instant::now() < deadline, "sshd did not listen on {port}");
            std::thread::sleep(Duration::from_millis(10));
        }
        let ssh_config = path("ssh_config");
        Sshd {
            dir,
            child,
            port,
            ssh_config,
        }
    }

    /// What a local `stepper --host box` needs: ssh with this config, stepper's path on the
    /// "remote" side, and a runtime folder of the test's own for the control master.
    pub fn client_envs(&self) -> Vec<(String, String)> {
        vec![
            (
                "STEPPER_SSH".into(),
                format!("ssh -F {}", self.ssh_config.display()),
            ),
            (
                "STEPPER_REMOTE_COMMAND".into(),
                bin_dir().join("stepper").display().to_string(),
            ),
            (
                "XDG_RUNTIME_DIR".into(),
                self.runtime_dir().display().to_string(),
            ),
        ]
    }

    /// Where stepper keeps the control master's socket and the forwarded ones.
    pub fn runtime_dir(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    /// The forwarded sockets left in the runtime folder (none once a command is done).
    pub fn forwarded_sockets(&self) -> Vec<String> {
        std::fs::read_dir(self.runtime_dir().join("stepper"))
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name.starts_with("fwd-"))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The sshd log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        // The control master stepper started outlives its commands by design; end it.
        let _ = Command::new("ssh")
            .arg("-F")
            .arg(&self.ssh_config)
            .arg("-o")
            .arg(format!(
                "ControlPath={}/stepper/ssh-%C",
                self.runtime_dir().display()
            ))
            .args(["-O", "exit", "box"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a free port");
    listener.local_addr().expect("its address").port()
}
