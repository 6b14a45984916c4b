//! The gate against its adversarial corpus ([`super::gate_corpus`]), for real: each line is
//! first run by bash in a sandbox, where its canary must fire (the line really does what the
//! corpus says), then given to the bash tool through the daemon in `default` mode with every
//! approval denied, where the gate must ask and the canary must stay silent. Lines the gate
//! should allow run without a question.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
use stepper_e2e::fake_llm::{FAKE_KEY, tool_use_stream};
use stepper_e2e::{Reply, TestEnv, submit};
use stepper_protocol::PermissionMode;
use stepper_protocol::client::{DaemonClient, EventStream};
use stepper_protocol::methods::{
    SessionApprove, SessionApproveParams, SessionCreate, SessionCreateParams,
};
use stepper_protocol::{AppEvent, ApprovalDecision, ToolCallStatus};

use super::gate_corpus::{
    ALLOWED, CASES, Canary, Case, Secret, Setup, deep_braces, deep_subshells,
};

/// A sandbox: a project, a home with a key in it, and fake `date` and `hostname` that record
/// an attempt to set the clock or the host name instead of doing it (CI runs as root).
struct Sandbox {
    project: PathBuf,
    home: PathBuf,
    fakebin: PathBuf,
    nonce: String,
}

impl Sandbox {
    fn new(root: &Path, project: PathBuf) -> Sandbox {
        let home = root.join("home");
        let fakebin = root.join("fakebin");
        std::fs::create_dir_all(&fakebin).unwrap();
        let marker = |name: &str| format!("{}/{name}", home.display());
        write_script(
            &fakebin.join("date"),
            &format!(
                "for a in \"$@\"; do case \"$a\" in --se*|-[!-]*s*) touch {0};; -*|+*) ;; *) touch {0};; esac; done\necho date\n",
                marker("clock-set")
            ),
        );
        write_script(
            &fakebin.join("hostname"),
            &format!(
                "for a in \"$@\"; do case \"$a\" in -F|--file|-b|--boot) touch {0};; -*) ;; *) touch {0};; esac; done\necho host\n",
                marker("hostname-set")
            ),
        );
        Sandbox {
            project,
            home,
            fakebin,
            nonce: format!("{:x}", std::process::id() as u64 * 2654435761 % 0xffff_ffff),
        }
    }

    fn key(&self) -> String {
        format!("SECRET-HOME-KEY-{}", self.nonce)
    }

    fn listing(&self) -> String {
        format!("secret-name-{}", self.nonce)
    }

    fn path(&self, name: &str) -> PathBuf {
        match name.strip_prefix("~/") {
            Some(rest) => self.home.join(rest),
            None => self.project.join(name),
        }
    }

    /// The folder a line runs in, here and as the session's.
    fn cwd(&self, setup: Setup) -> PathBuf {
        self.project.join(setup.cwd())
    }

    /// The environment a line runs with, here and in the session.
    fn env(&self, setup: Setup) -> Vec<(String, String)> {
        let first = setup
            .path_first()
            .map(|dir| format!("{}:", self.project.join(dir).display()))
            .unwrap_or_default();
        vec![
            (
                "PATH".into(),
                format!(
                    "{first}{}:{}",
                    self.fakebin.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            ),
            ("HOME".into(), self.home.display().to_string()),
            ("ANTHROPIC_API_KEY".into(), FAKE_KEY.into()),
            ("FSMON".into(), "./fsmon.sh".into()),
            ("LANG".into(), "C".into()),
        ]
    }

    /// The project and home as the corpus expects them, from scratch.
    fn prepare(&self, setup: Setup) {
        for dir in [&self.project, &self.home] {
            std::fs::create_dir_all(dir).unwrap();
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() && !path.is_symlink() {
                    std::fs::remove_dir_all(&path).unwrap();
                } else {
                    std::fs::remove_file(&path).unwrap();
                }
            }
        }
        let p = &self.project;
        let ran = p.join("RAN").display().to_string();
        std::fs::create_dir_all(self.home.join(".ssh")).unwrap();
        std::fs::write(self.home.join(".ssh/id_rsa"), format!("{}\n", self.key())).unwrap();
        std::fs::write(self.home.join(".ssh").join(self.listing()), "x\n").unwrap();
        std::fs::write(p.join("keep.txt"), "keep\n").unwrap();
        for dir in ["src", "test", "echo", "sshcopy", "bin", "x -o -delete"] {
            std::fs::create_dir_all(p.join(dir)).unwrap();
        }
        std::fs::write(p.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(p.join("sshcopy/id_rsa"), "other\n").unwrap();
        for script in ["run.sh", "fsmon.sh", "bin/ls", "textconv.sh"] {
            // Builtins only: a line may have emptied PATH.
            write_script(&p.join(script), &format!(": > {ran}\n"));
        }
        let big: String = (0..20_000)
            .map(|i| format!("line {}\n", 20_000 - i))
            .collect();
        std::fs::write(p.join("big.txt"), big).unwrap();
        std::fs::write(p.join("magic"), "0\tstring\tKEEP\tkeep file\n").unwrap();
        std::os::unix::fs::symlink(self.home.join(".ssh"), p.join("sshlink")).unwrap();
        std::os::unix::fs::symlink(self.home.join(".ssh/id_rsa"), p.join("keylink")).unwrap();
        // A starting point find takes for an operator, a link bash's logical `cd ..` leaves
        // through, and a folder with a link out for `git -C`.
        std::os::unix::fs::symlink(self.home.join(".ssh"), p.join(",")).unwrap();
        std::fs::create_dir_all(p.join("a/b/c")).unwrap();
        std::os::unix::fs::symlink(p.join("a/b/c"), p.join("x")).unwrap();
        std::fs::create_dir_all(p.join("d")).unwrap();
        std::os::unix::fs::symlink(self.home.join(".ssh"), p.join("d/s")).unwrap();
        // A name that is not UTF-8, leading out of the project.
        std::os::unix::fs::symlink(
            self.home.join(".ssh/id_rsa"),
            p.join(std::ffi::OsStr::from_bytes(b"z\xff")),
        )
        .unwrap();
        let key = self.home.join(".ssh/id_rsa");
        match setup {
            Setup::Plain => return,
            Setup::HardLinks => {
                std::fs::hard_link(&key, p.join("hardkey")).unwrap();
                std::fs::create_dir_all(p.join("deep/er")).unwrap();
                std::fs::hard_link(&key, p.join("deep/er/hk")).unwrap();
                return;
            }
            Setup::MetaLinks => {
                let big = std::fs::File::create(self.home.join(".ssh/big")).unwrap();
                big.set_len(7_654_321).unwrap();
                for meta in [p.join("meta"), p.join("src/meta")] {
                    std::fs::create_dir_all(&meta).unwrap();
                    std::os::unix::fs::symlink(self.home.join(".ssh/big"), meta.join("big"))
                        .unwrap();
                    std::os::unix::fs::symlink(self.home.join(".ssh"), meta.join("kdir")).unwrap();
                }
                return;
            }
            Setup::ProjectPath => {
                write_script(&p.join("bin/grep"), &format!(": > {ran}\n"));
                return;
            }
            _ => {}
        }
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "init.defaultBranch=main",
                ])
                .args(args)
                .current_dir(p)
                .env("HOME", &self.home)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        git(&["init", "-q"]);
        if matches!(setup, Setup::Nested | Setup::NestedProcPath) {
            // The repository's top holds what `inner/`, the session's project, must not read.
            std::fs::write(p.join("outer.txt"), "one\n").unwrap();
            std::fs::write(p.join(".gitignore"), "ignored.txt\n").unwrap();
            git(&["add", "outer.txt", ".gitignore"]);
            git(&["commit", "-qm", "top"]);
            std::fs::write(p.join("untracked.txt"), format!("{}\n", self.key())).unwrap();
            std::fs::write(p.join("ignored.txt"), format!("{}\n", self.key())).unwrap();
            std::fs::write(p.join(self.listing()), "x\n").unwrap();
            let inner = p.join("inner");
            std::fs::create_dir_all(inner.join("bin")).unwrap();
            std::fs::write(inner.join("keep.txt"), "keep\n").unwrap();
            std::fs::write(inner.join(":(top)untracked.txt"), "").unwrap();
            let link = |target: &str, name: &str| {
                std::os::unix::fs::symlink(target, inner.join(name)).unwrap()
            };
            // A command in `inner/` finds the top through `inner/inner`; the daemon, whose
            // folder is the top, finds `inner/` itself.
            link("..", "inner");
            link("/proc/self/cwd/inner", "pd");
            link("/proc/self/cwd/inner/untracked.txt", "pl");
            link("/dev/fd/../cwd/inner", "df");
            link("/proc/thread-self/cwd/inner", "tp");
            write_script(&inner.join("bin/ls"), &format!(": > {ran}\n"));
            return;
        }
        std::fs::write(p.join("tracked.txt"), "one\n").unwrap();
        std::fs::write(p.join("data.bin"), "v1\n").unwrap();
        git(&["add", "tracked.txt", "keep.txt", "data.bin"]);
        git(&["commit", "-qm", "first"]);
        std::fs::write(p.join("data.bin"), "v2\n").unwrap();
        git(&["commit", "-qam", "second"]);
        git(&["branch", "old"]);
        git(&["tag", "v1"]);
        std::fs::write(p.join("tracked.txt"), "changed\n").unwrap();
        std::fs::write(p.join("junk.txt"), "junk\n").unwrap();
        let config = p.join(".git/config");
        let add = |text: String| {
            let mut c = std::fs::read_to_string(&config).unwrap();
            c.push_str(&text);
            std::fs::write(&config, c).unwrap();
        };
        match setup {
            Setup::GitFsmonitor => add(format!("[core]\n\tfsmonitor = {}/fsmon.sh\n", p.display())),
            Setup::GitExternalDiff => add(format!("[diff]\n\texternal = {}/run.sh\n", p.display())),
            Setup::GitTextconv => {
                std::fs::write(p.join(".gitattributes"), "*.bin diff=conv\n").unwrap();
                add(format!(
                    "[diff \"conv\"]\n\ttextconv = {}/textconv.sh\n",
                    p.display()
                ));
            }
            Setup::GitIgnoreRevs => add(format!(
                "[blame]\n\tignoreRevsFile = {}\n",
                self.home.join(".ssh/id_rsa").display()
            )),
            Setup::GitHardLink => {
                std::fs::remove_file(p.join("tracked.txt")).unwrap();
                std::fs::hard_link(&key, p.join("tracked.txt")).unwrap();
            }
            Setup::GitHook => {
                write_script(
                    &p.join(".git/hooks/post-index-change"),
                    &format!(": > {ran}\n"),
                );
                // A stale stat makes git refresh and write the index.
                std::fs::write(p.join("keep.txt"), "keep\n").unwrap();
                let f = std::fs::File::options()
                    .write(true)
                    .open(p.join("keep.txt"))
                    .unwrap();
                f.set_modified(std::time::SystemTime::now() + Duration::from_secs(5))
                    .unwrap();
            }
            _ => {}
        }
    }

    /// What the canary watches, before the line runs.
    fn before(&self, canary: Canary) -> Option<Vec<u8>> {
        match canary {
            Canary::Writes(name) | Canary::Removes(name) => read_any(&self.path(name)),
            Canary::Leaks(_) => None,
        }
    }

    fn fired(&self, canary: Canary, before: &Option<Vec<u8>>, output: &str) -> bool {
        match canary {
            Canary::Writes(name) => read_any(&self.path(name)) != *before,
            Canary::Removes(name) => before.is_some() && read_any(&self.path(name)).is_none(),
            Canary::Leaks(secret) => output.contains(&self.secret(secret)),
        }
    }

    fn secret(&self, secret: Secret) -> String {
        match secret {
            Secret::HomeKey => self.key(),
            Secret::ApiKey => FAKE_KEY.into(),
            Secret::Passwd => "root:x:0:0".into(),
            Secret::HomeListing => self.listing(),
            Secret::Shown(text) => text.into(),
        }
    }
}

/// A file's content, a link's target, or None when nothing is there.
fn read_any(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.is_symlink() {
        return std::fs::read_link(path)
            .ok()
            .map(|t| t.as_os_str().as_encoded_bytes().to_vec());
    }
    if meta.is_dir() {
        return Some(b"<dir>".to_vec());
    }
    std::fs::read(path).ok()
}

fn write_script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Run `line` with bash in the sandbox, as the bash tool would; its output.
fn run_for_real(sandbox: &Sandbox, line: &str, setup: Setup) -> String {
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(line)
        .current_dir(sandbox.cwd(setup))
        .env_clear()
        .envs(sandbox.env(setup))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let waiter = std::thread::spawn(move || {
        use std::io::Read;
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut stdout = stdout;
        let mut stderr = stderr;
        let _ = stdout.read_to_end(&mut out);
        let _ = stderr.read_to_end(&mut err);
        let _ = child.wait();
        let _ = tx.send(());
        out.extend_from_slice(&err);
        String::from_utf8_lossy(&out).into_owned()
    });
    if rx.recv_timeout(Duration::from_secs(30)).is_err() {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    // Whatever the line left running in its group goes with it.
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
    waiter.join().unwrap()
}

/// Every case: the corpus, and the nesting lines built here.
fn all_cases() -> Vec<(String, String, Setup, Canary)> {
    let mut cases: Vec<(String, String, Setup, Canary)> = CASES
        .iter()
        .map(
            |Case {
                 class,
                 line,
                 setup,
                 canary,
             }| { (class.to_string(), line.to_string(), *setup, *canary) },
        )
        .collect();
    cases.push((
        "nesting".into(),
        deep_braces(300),
        Setup::Plain,
        Canary::Writes("RAN"),
    ));
    cases.push((
        "nesting".into(),
        deep_subshells(300),
        Setup::Plain,
        Canary::Writes("RAN"),
    ));
    cases.push((
        "nesting".into(),
        format!("{}touch RAN", "true && ".repeat(5_000)),
        Setup::Plain,
        Canary::Writes("RAN"),
    ));
    cases
}

#[test]
fn every_corpus_line_really_does_what_its_canary_says() {
    let root = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(root.path(), root.path().join("project"));
    let cases = all_cases();
    assert!(cases.len() >= 200, "the corpus has {} lines", cases.len());
    let mut silent = Vec::new();
    for (class, line, setup, canary) in &cases {
        sandbox.prepare(*setup);
        let before = sandbox.before(*canary);
        let output = run_for_real(&sandbox, line, *setup);
        if !sandbox.fired(*canary, &before, &output) {
            silent.push(format!(
                "[{class}] {line:?} ({canary:?}): {}",
                output.trim()
            ));
        }
    }
    assert!(
        silent.is_empty(),
        "canaries that did not fire:\n{}",
        silent.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_asks_before_every_corpus_line_and_nothing_happens() {
    let env = TestEnv::new();
    env.start_daemon();
    let root = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(root.path(), env.project.path().to_path_buf());
    let client = env.client().await;
    // One session per folder and PATH the corpus asks for, opened once its folder exists.
    let mut sessions: HashMap<(&str, Option<&str>), (String, EventStream)> = HashMap::new();

    let mut failures = Vec::new();
    let run = |n: usize, line: &str| {
        env.fake.push(Reply::Sse(tool_use_stream(&[(
            &format!("c{n}"),
            "bash",
            json!({ "command": line }),
        )])));
        env.fake.push(Reply::text(&["ok"]));
    };
    let cases = all_cases();
    for (n, (class, line, setup, canary)) in cases.iter().enumerate() {
        sandbox.prepare(*setup);
        let (session, stream) = match sessions.entry((setup.cwd(), setup.path_first())) {
            Entry::Occupied(open) => open.into_mut(),
            Entry::Vacant(new) => new.insert(open_session(&env, &client, &sandbox, *setup).await),
        };
        let before = sandbox.before(*canary);
        run(n, line);
        submit(&client, session, "next").await;
        let turn = follow_turn(&client, session, stream, ApprovalDecision::Deny).await;
        let fired = sandbox.fired(*canary, &before, &turn.output);
        if !turn.asked || turn.status != Some(ToolCallStatus::Denied) || fired {
            failures.push(format!(
                "[{class}] {line:?}: asked {}, status {:?}, canary fired {fired}",
                turn.asked, turn.status
            ));
        }
    }
    for (i, (line, setup)) in ALLOWED.iter().enumerate() {
        sandbox.prepare(*setup);
        let (session, stream) = match sessions.entry((setup.cwd(), setup.path_first())) {
            Entry::Occupied(open) => open.into_mut(),
            Entry::Vacant(new) => new.insert(open_session(&env, &client, &sandbox, *setup).await),
        };
        run(cases.len() + i, line);
        submit(&client, session, "next").await;
        let turn = follow_turn(&client, session, stream, ApprovalDecision::Deny).await;
        if turn.asked || turn.status != Some(ToolCallStatus::Ok) {
            failures.push(format!(
                "allowed line {line:?}: asked {}, status {:?}, output {}",
                turn.asked, turn.status, turn.output
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "the gate failed on:\n{}",
        failures.join("\n")
    );
}

/// A session in `default` mode in the setup's folder, with its environment, and its events.
async fn open_session(
    env: &TestEnv,
    client: &DaemonClient,
    sandbox: &Sandbox,
    setup: Setup,
) -> (String, EventStream) {
    let mut session_env: BTreeMap<String, String> = env.envs().into_iter().collect();
    session_env.extend(sandbox.env(setup));
    let session = client
        .call::<SessionCreate>(SessionCreateParams {
            input_parts: Vec::new(),
            cwd: sandbox.cwd(setup).display().to_string(),
            env: session_env,
            model: None,
            title: Some("gate corpus".into()),
            record: None,
            mode: Some(PermissionMode::Default),
            sandbox: None,
            input: None,
            system_prompt: None,
            append_system_prompt: None,
        })
        .await
        .unwrap()
        .session
        .id;
    let stream = client.subscribe_events(&session, 0).await.unwrap();
    (session, stream)
}

/// What a turn with one tool call did.
struct Turn {
    asked: bool,
    status: Option<ToolCallStatus>,
    output: String,
}

/// Read a turn to its end, answering every approval with `answer`.
async fn follow_turn(
    client: &DaemonClient,
    session: &str,
    stream: &mut EventStream,
    answer: ApprovalDecision,
) -> Turn {
    let mut turn = Turn {
        asked: false,
        status: None,
        output: String::new(),
    };
    loop {
        let e = tokio::time::timeout(Duration::from_secs(60), stream.next())
            .await
            .expect("an event within 60s")
            .expect("stream open")
            .expect("event");
        match e.event {
            AppEvent::ApprovalRequested { request_id, .. } => {
                turn.asked = true;
                client
                    .call::<SessionApprove>(SessionApproveParams {
                        session_id: session.into(),
                        request_id,
                        decision: answer,
                    })
                    .await
                    .unwrap();
            }
            AppEvent::ToolOutputDelta { text, .. } => turn.output.push_str(&text),
            AppEvent::ToolCallFinished { status, .. } => turn.status = Some(status),
            AppEvent::TurnFinished { .. } => return turn,
            _ => {}
        }
    }
}
