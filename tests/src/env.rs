//! `TestEnv`: one isolated stepper installation per test — its own `STEPPER_HOME`, project
//! folder and fake provider — and the real binaries to drive it. Dropping it kills the
//! daemon it started, so no test leaves a process behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Duration;

use stepper_protocol::client::{ConnectOptions, DaemonClient};
use stepper_protocol::methods::{ClientInfo, ClientKind};
use stepper_protocol::places::Places;

use crate::fake_llm::{FAKE_KEY, FAKE_OPENAI_KEY, FakeLlm};
use crate::normalize::Normalizer;
use crate::output::CommandOutput;
use crate::wait::wait_until;

/// Where the binaries under test are, built once per test process.
///
/// `cargo test` builds a package's own binaries for its tests, not other packages' — so the
/// harness asks cargo for `stepper` and `stepperd` (a no-op when they are current).
pub fn bin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable path");
        // target/<profile>/deps/<test-binary>
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target dir")
            .to_path_buf();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args([
            "build",
            "--quiet",
            "-p",
            "stepperd",
            "-p",
            "stepper-cli",
            "--bins",
        ]);
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        // What cargo sets for this test process only: build scripts that watch these (ring's
        // `rerun-if-env-changed=CARGO_PKG_NAME`, …) would otherwise see a change from the
        // `cargo test` that built this binary, and rebuild — and `cargo test` after them.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            if key.starts_with("CARGO_PKG_")
                || key.starts_with("CARGO_MANIFEST_")
                || key.starts_with("CARGO_BIN_")
                || [
                    "CARGO_CRATE_NAME",
                    "CARGO_PRIMARY_PACKAGE",
                    "CARGO_TARGET_TMPDIR",
                    "OUT_DIR",
                ]
                .contains(&key.as_ref())
            {
                cmd.env_remove(key.as_ref());
            }
        }
        let status = cmd.status().expect("running cargo build for the binaries");
        assert!(status.success(), "building stepper and stepperd failed");
        dir
    })
}

pub struct TestEnv {
    pub home: tempfile::TempDir,
    pub project: tempfile::TempDir,
    pub fake: FakeLlm,
    /// Whether commands get provider keys (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`); the
    /// providers' addresses are the fake's either way.
    pub keys: bool,
}

impl Default for TestEnv {
    fn default() -> Self {
        TestEnv::new()
    }
}

impl TestEnv {
    pub fn new() -> TestEnv {
        bin_dir();
        // Short paths: a Unix socket path must fit in 107 bytes.
        let home = tempfile::Builder::new()
            .prefix("stp")
            .tempdir_in("/tmp")
            .expect("temp home");
        let project = tempfile::Builder::new()
            .prefix("proj")
            .tempdir()
            .expect("temp project");
        TestEnv {
            home,
            project,
            fake: FakeLlm::start(),
            keys: true,
        }
    }

    /// A new user's machine: no provider key anywhere, nothing stored.
    pub fn without_keys() -> TestEnv {
        let mut env = TestEnv::new();
        env.keys = false;
        env
    }

    /// Codex pointed at the fake LLM's Responses endpoint with the test's dummy key, as a
    /// user with a provider of their own would write `~/.codex/config.toml`.
    pub fn codex_config(&self) {
        let dir = self.home.path().join(".codex");
        std::fs::create_dir_all(&dir).expect("the test's .codex folder");
        std::fs::write(
            dir.join("config.toml"),
            format!(
                "model_provider = \"fake\"\n\n[model_providers.fake]\nname = \"fake\"\n\
                 base_url = \"{}/v1\"\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n",
                self.fake.url
            ),
        )
        .expect("writing the test's Codex config");
    }

    /// Trust the project folder, as `stepper trust` does (a decision in the user's config
    /// folder): its settings, hooks, MCP servers and commands then apply in full.
    pub fn trust_project(&self) {
        self.trust(self.project.path());
    }

    /// Trust `folder` (and every folder below it).
    pub fn trust(&self, folder: &Path) {
        let path = self.places().config_dir.join("trust.json");
        let mut stored: serde_json::Value = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_else(|| serde_json::json!({"folders": {}}));
        let folder = std::fs::canonicalize(folder).expect("the folder to trust");
        stored["folders"][folder.display().to_string()] =
            serde_json::json!({"trusted": true, "at": 0});
        std::fs::create_dir_all(path.parent().expect("the config folder")).unwrap();
        std::fs::write(&path, stored.to_string()).expect("writing trust.json");
    }

    pub fn places(&self) -> Places {
        Places::resolve(|k| match k {
            "STEPPER_HOME" => Some(self.home.path().into()),
            _ => None,
        })
        .expect("places")
    }

    /// The environment every command of this test runs with: nothing from the host leaks in.
    pub fn envs(&self) -> Vec<(String, String)> {
        let mut envs: Vec<(String, String)> = vec![
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".into(), self.home.path().display().to_string()),
            (
                "STEPPER_HOME".into(),
                self.home.path().display().to_string(),
            ),
            (
                "STEPPERD".into(),
                bin_dir().join("stepperd").display().to_string(),
            ),
            ("ANTHROPIC_API_KEY".into(), FAKE_KEY.into()),
            ("ANTHROPIC_BASE_URL".into(), self.fake.url.clone()),
            ("OPENAI_API_KEY".into(), FAKE_OPENAI_KEY.into()),
            ("OPENAI_BASE_URL".into(), format!("{}/v1", self.fake.url)),
            (
                "STEPPER_CODEX_BASE_URL".into(),
                format!("{}/codex", self.fake.url),
            ),
            ("STEPPER_CODEX_ISSUER".into(), self.fake.url.clone()),
            ("STEPPER_CODEX_CALLBACK_PORT".into(), "0".into()),
            ("STEPPER_NO_BROWSER".into(), "1".into()),
            ("STEPPER_RETRY_BASE_MS".into(), "5".into()),
            // Hermetic: the host's shell profile must not leak into tests.
            ("STEPPER_LOGIN_ENV".into(), "off".into()),
            (
                "STEPPER_LOG".into(),
                "debug,sqlx=warn,hyper=warn,jsonrpsee=info".into(),
            ),
            // Where nothing listens: no test depends on a server the host may run.
            ("OLLAMA_BASE_URL".into(), "http://127.0.0.1:9/v1".into()),
        ];
        if !self.keys {
            envs.retain(|(k, _)| !k.ends_with("_API_KEY"));
        }
        envs
    }

    fn command(&self, bin: &str) -> Command {
        let mut cmd = Command::new(bin_dir().join(bin));
        cmd.env_clear()
            .envs(self.envs())
            .current_dir(self.project.path());
        cmd
    }

    /// `stepper` with this test's environment, run in the project folder.
    pub fn stepper(&self) -> Command {
        self.command("stepper")
    }

    /// `stepperd` with this test's environment.
    pub fn stepperd(&self) -> Command {
        self.command("stepperd")
    }

    /// Run `stepper ARGS` to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.stepper().args(args).output().expect("running stepper")
    }

    /// Run `stepper ARGS` to completion and take what it showed, normalized for a snapshot.
    pub fn shown(&self, args: &[&str]) -> CommandOutput {
        self.normalized(&self.run(args))
    }

    /// `out`, from a command of this test, normalized for a snapshot.
    pub fn normalized(&self, out: &Output) -> CommandOutput {
        CommandOutput::new(out, &self.normalizer())
    }

    /// What differs from one run of this test to the next: its folders (`$HOME`, which is
    /// also `STEPPER_HOME`, and `$PROJECT`), the binaries' folder (`$BIN`) and the fake
    /// server's address (`$FAKE`).
    pub fn normalizer(&self) -> Normalizer {
        Normalizer::new(&[
            (self.home.path(), "$HOME"),
            (self.project.path(), "$PROJECT"),
            (bin_dir(), "$BIN"),
        ])
        .with(self.fake.url.clone(), "$FAKE")
    }

    /// Start the daemon (through the CLI, as a user would) and wait until it answers.
    pub fn start_daemon(&self) {
        self.start_daemon_with(&[]);
    }

    /// [`TestEnv::start_daemon`] with more variables in the daemon's environment.
    pub fn start_daemon_with(&self, vars: &[(&str, &str)]) {
        let out = self
            .stepper()
            .args(["daemon", "start"])
            .envs(vars.iter().copied())
            .output()
            .expect("running stepper");
        assert!(
            out.status.success(),
            "daemon start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A protocol client connected to this test's daemon.
    pub async fn client(&self) -> DaemonClient {
        self.client_with(ConnectOptions::default()).await
    }

    pub async fn client_with(&self, options: ConnectOptions) -> DaemonClient {
        let info = ClientInfo {
            name: "e2e".into(),
            kind: ClientKind::Other,
            version: "0".into(),
            pid: Some(std::process::id()),
        };
        DaemonClient::connect_with(&self.places().socket, info, options)
            .await
            .expect("connect to daemon")
    }

    /// `session/create`'s parameters for a session in the project folder with this test's
    /// environment, and nothing else set.
    pub fn session_params(&self) -> stepper_protocol::methods::SessionCreateParams {
        stepper_protocol::methods::SessionCreateParams {
            cwd: self.project.path().display().to_string(),
            env: self.envs().into_iter().collect(),
            model: None,
            title: None,
            record: None,
            mode: None,
            sandbox: None,
            input: None,
            input_parts: Vec::new(),
            system_prompt: None,
            append_system_prompt: None,
        }
    }

    /// A local OpenAI-compatible provider `local` at the fake LLM, in the project's settings
    /// (and the project trusted, so they count).
    pub fn local_provider(&self) {
        let settings = serde_json::json!({
            "providers": { "local": {
                "kind": "openai-chat",
                "baseUrl": format!("{}/v1", self.fake.url),
            }}
        });
        std::fs::create_dir_all(self.project.path().join(".stepper")).unwrap();
        std::fs::write(
            self.project.path().join(".stepper/setting.json"),
            settings.to_string(),
        )
        .unwrap();
        self.trust_project();
    }

    /// A session in the project folder, created over the protocol with this test's
    /// environment; `mode` as `session/create` takes it.
    pub async fn create_session(
        &self,
        client: &DaemonClient,
        mode: Option<stepper_protocol::PermissionMode>,
    ) -> String {
        let params = stepper_protocol::methods::SessionCreateParams {
            title: Some("e2e".into()),
            mode,
            ..self.session_params()
        };
        client
            .call::<stepper_protocol::methods::SessionCreate>(params)
            .await
            .expect("session/create")
            .session
            .id
    }

    /// The pid of the daemon holding this data dir, if one is alive.
    pub fn daemon_pid(&self) -> Option<i32> {
        let text = std::fs::read_to_string(self.places().daemon_lock_path()).ok()?;
        let pid: i32 = text.trim().parse().ok()?;
        // Guard against a reused pid: it must be a stepperd.
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let is_daemon = String::from_utf8_lossy(&cmdline).contains("stepperd");
        (is_daemon && alive(pid)).then_some(pid)
    }

    /// Send `signal` to the daemon and wait until it is gone — not just dying: until its
    /// files (the lock, the listening socket) are closed.
    pub fn signal_daemon(&self, signal: nix::sys::signal::Signal) {
        let pid = self.daemon_pid().expect("a running daemon");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).expect("signal daemon");
        // A killed process's main thread can be a zombie while its other threads still hold
        // its files: only the data-dir lock coming free says the socket is closed too.
        let lock = self.places().daemon_lock_path();
        wait_until("the daemon to exit", Duration::from_secs(20), || {
            !alive(pid) && lock_is_free(&lock)
        });
    }

    /// Wait until the newest session runs a turn and has committed at least `min_seq` events;
    /// returns its id.
    pub async fn running_session(&self, min_seq: u64) -> String {
        let client = self.client().await;
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let list = client
                .call::<stepper_protocol::methods::SessionList>(Default::default())
                .await
                .unwrap();
            match list.sessions.first() {
                Some(s)
                    if s.status == stepper_protocol::SessionStatus::Running
                        && s.last_seq >= min_seq =>
                {
                    return s.id.clone();
                }
                _ => {}
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no running turn with seq {min_seq}: {list:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The daemon's log so far (for failure messages).
    pub fn daemon_log(&self) -> String {
        std::fs::read_to_string(self.places().log_path()).unwrap_or_default()
    }
}

/// Whether nobody holds the daemon's lock on `path` (it is released with the last of the
/// holder's files).
fn lock_is_free(path: &Path) -> bool {
    match std::fs::OpenOptions::new().write(true).open(path) {
        Ok(file) => file.try_lock().is_ok(),
        Err(_) => true,
    }
}

/// Whether `pid` is a process that has not finished exiting. A dying process loses its
/// memory (and `cmdline`) before its files; only a zombie or a missing entry has closed them.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X'),
        Err(_) => false,
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        if let Some(pid) = self.daemon_pid() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// Queue `text` in a session, over the protocol.
/// Every file under `dir`, in any depth.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

pub async fn submit(client: &DaemonClient, session_id: &str, text: &str) {
    let params = stepper_protocol::methods::SessionSubmitParams {
        session_id: session_id.into(),
        text: text.into(),
        parts: Vec::new(),
        env: None,
    };
    client
        .call::<stepper_protocol::methods::SessionSubmit>(params)
        .await
        .expect("session/submit");
}
