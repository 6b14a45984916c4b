//! The OS sandbox for real: commands run by `stepperd sandbox` — in bubblewrap's namespaces
//! with Landlock and seccomp inside, and under Landlock and seccomp alone (the fallback) —
//! (writes inside the project only, no sockets unless allowed, no way out through links or
//! /proc; file metadata outside the writable roots, /dev/shm, other terminals, the daemon's
//! /proc entries, credentials and stepper's own files out of reach; what git and stepper run
//! from read-only inside the project), and sessions whose commands run in it — without asking
//! where the sandbox holds them, through an approval to leave it, and asking again where it
//! cannot be applied.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::json;
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::output::said as text;
use stepper_e2e::{Asked, Reply, TestEnv, needs, next_approval, stream_json};
use stepper_protocol::methods::{SessionApprove, SessionApproveParams, SessionGet, SessionParams};
use stepper_protocol::{
    AppEvent, ApprovalDecision, EventEnvelope, SandboxInfo, SandboxMechanism, SandboxMode,
    SandboxState, ToolCallStatus,
};

/// Whether this kernel can sandbox; without Landlock the tests say so and skip (and fail
/// under STEPPER_TEST_STRICT).
pub(crate) fn landlock(env: &TestEnv) -> bool {
    let out = env
        .stepperd()
        .args(["sandbox", "--probe"])
        .output()
        .unwrap();
    needs::that(
        out.status.success(),
        &format!(
            "a kernel with Landlock and seccomp ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    )
}

/// Whether bubblewrap can make the sandbox here (`/usr/bin/bwrap`, and user namespaces for
/// this user); without it the tests say so and skip (and fail under STEPPER_TEST_STRICT).
pub(crate) fn bubblewrap(env: &TestEnv) -> bool {
    let out = env
        .stepperd()
        .args(["sandbox", "--bwrap", "--probe"])
        .output()
        .unwrap();
    needs::that(
        out.status.success(),
        &format!(
            "bubblewrap at /usr/bin/bwrap, with user namespaces (apt-get install bubblewrap): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    )
}

/// The helper's flags for each mechanism this machine has: bubblewrap's, then Landlock's
/// alone (which every test of both needs anyway).
fn mechanisms(env: &TestEnv) -> Vec<&'static [&'static str]> {
    let mut all: Vec<&'static [&'static str]> = Vec::new();
    if bubblewrap(env) {
        all.push(&["--bwrap"]);
    }
    all.push(&[]);
    all
}

/// A folder outside the project and the temp folders (both writable in the sandbox): the
/// build's own temp folder unless the checkout is itself under one, else the home folder.
pub(crate) fn outside() -> tempfile::TempDir {
    let temp = |p: &Path| p.starts_with("/tmp") || p.starts_with("/var/tmp");
    let candidates = [
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        std::env::var_os("HOME").map(PathBuf::from),
    ];
    candidates
        .into_iter()
        .flatten()
        .filter(|p| !temp(p) && !p.starts_with("/dev"))
        .find_map(|dir| {
            tempfile::Builder::new()
                .prefix("outside")
                .tempdir_in(dir)
                .ok()
        })
        .expect("a writable folder outside /tmp for the test (the build's temp folder or HOME)")
}

/// `bash -c LINE` in the project under the helper (with `extra` flags: `--bwrap` for
/// bubblewrap), writable: the project and /dev/null.
fn sandboxed(env: &TestEnv, extra: &[&str], line: &str) -> Output {
    let project = env.project.path().display().to_string();
    let mut args = vec!["sandbox", "--write", &project, "--write", "/dev/null"];
    args.extend(extra);
    args.extend(["--", "bash", "-c", line]);
    env.stepperd().args(&args).output().unwrap()
}

#[test]
fn writes_stay_inside_the_project_whatever_the_path() {
    let env = TestEnv::new();
    if !landlock(&env) {
        return;
    }
    for mechanism in mechanisms(&env) {
        let out_dir = outside();
        let o = out_dir.path().display();
        let link = env.project.path().join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(out_dir.path(), &link).unwrap();
        let out = sandboxed(
            &env,
            mechanism,
            &format!(
                "echo in > inside.txt && echo ok-inside; \
                 echo x > {o}/direct; \
                 echo x > link/through-link; \
                 echo x > /proc/self/root{o}/through-proc; \
                 echo x > /proc/self/cwd/link/through-cwd; \
                 mkdir {o}/made-dir; ln -s /etc {o}/made-link; \
                 mv inside.txt {o}/moved.txt; \
                 cat /etc/hostname >/dev/null && echo ok-read"
            ),
        );
        let said = text(&out);
        assert!(
            said.contains("ok-inside") && said.contains("ok-read"),
            "{mechanism:?}: {said}"
        );
        assert_eq!(
            std::fs::read_to_string(env.project.path().join("inside.txt")).unwrap(),
            "in\n",
            "{mechanism:?}: written inside, and not moved out: {said}"
        );
        let left: Vec<_> = std::fs::read_dir(out_dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(
            left.is_empty(),
            "{mechanism:?}: written outside: {left:?}\n{said}"
        );
        assert!(
            said.contains("Permission denied") || said.contains("Read-only file system"),
            "{mechanism:?}: {said}"
        );
    }
}

#[test]
fn sockets_need_the_network_and_unix_sockets_never_open() {
    let env = TestEnv::new();
    if !landlock(&env) || !needs::that(Path::new("/usr/bin/python3").exists(), "python3") {
        return;
    }
    env.start_daemon();
    for mechanism in mechanisms(&env) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            // Answers each connection it gets; the test's connections decide how many.
            for stream in listener.incoming().take(1) {
                let mut stream = stream.unwrap();
                let mut buf = [0u8; 64];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(b"pong");
            }
        });
        let connect = format!(
            "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), 5); \
             s.sendall(b'ping'); print('got', s.recv(4).decode())\""
        );
        let off = sandboxed(&env, mechanism, &connect);
        assert!(!off.status.success(), "{mechanism:?}: {}", text(&off));
        assert!(
            text(&off).contains("Operation not permitted"),
            "{mechanism:?}: {}",
            text(&off)
        );
        let on = sandboxed(&env, &[mechanism, &["--network"]].concat(), &connect);
        assert!(
            text(&on).contains("got pong"),
            "{mechanism:?}: {}",
            text(&on)
        );
        server.join().unwrap();

        // The daemon's socket (a way out of any sandbox) cannot be reached, network or not.
        let socket = env.places().socket.display().to_string();
        let unix = format!(
            "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{socket}'); print('connected')\""
        );
        for extra in [&[][..], &["--network"]] {
            let out = sandboxed(&env, &[mechanism, extra].concat(), &unix);
            assert!(
                !text(&out).contains("connected"),
                "{mechanism:?}: {}",
                text(&out)
            );
            assert!(
                text(&out).contains("Operation not permitted"),
                "{mechanism:?}: {}",
                text(&out)
            );
        }
    }
}

#[test]
fn a_kernel_without_landlock_runs_nothing() {
    let env = TestEnv::new();
    // Landlock alone, and Landlock inside bubblewrap where reads are confined: without it,
    // nothing runs.
    for mechanism in [&[][..], &["--bwrap", "--read-none"]] {
        let probe = env
            .stepperd()
            .args(["sandbox", "--probe", "--max-abi", "0"])
            .args(mechanism)
            .output()
            .unwrap();
        assert_eq!(
            probe.status.code(),
            Some(125),
            "{mechanism:?}: {}",
            text(&probe)
        );
        let said = text(&probe);
        assert!(
            said.contains("offers no Landlock") || said.contains("bubblewrap"),
            "{mechanism:?}: {said}"
        );
        let marker = env.project.path().join("ran");
        let out = sandboxed(
            &env,
            &[mechanism, &["--max-abi", "0"]].concat(),
            &format!("touch {}", marker.display()),
        );
        assert_eq!(
            out.status.code(),
            Some(125),
            "{mechanism:?}: {}",
            text(&out)
        );
        assert!(!marker.exists(), "the command must not run unsandboxed");
    }
    // bubblewrap needs no Landlock where reads are not confined.
    if bubblewrap(&env) {
        let probe = env
            .stepperd()
            .args(["sandbox", "--bwrap", "--probe", "--max-abi", "0"])
            .output()
            .unwrap();
        assert!(probe.status.success(), "{}", text(&probe));
    }
    let bad = env
        .stepperd()
        .args(["sandbox", "--write", "relative", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(125));
    assert!(text(&bad).contains("not an absolute path") && text(&bad).contains("usage:"));
}

/// bubblewrap's own failure (here: a mount it cannot make) is the helper's: exit 125, with
/// the reason, and the command not run.
#[test]
fn a_sandbox_bubblewrap_cannot_make_runs_nothing() {
    let env = TestEnv::new();
    if !landlock(&env) || !bubblewrap(&env) {
        return;
    }
    let marker = env.project.path().join("ran");
    // The command's folder is inside a hidden one: bubblewrap cannot start it there, and
    // must not start it anywhere else.
    let sub = env.project.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let project = env.project.path().display().to_string();
    let out = env
        .stepperd()
        .current_dir(&sub)
        .args(["sandbox", "--bwrap", "--hide", &project, "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    let last = String::from_utf8_lossy(&out.stderr)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    assert!(
        last.starts_with("stepper sandbox: bubblewrap"),
        "{}",
        text(&out)
    );
    assert!(!marker.exists());
    // The command's own exit code, even 125 or a signal, passes through.
    for (line, code) in [("exit 3", 3), ("exit 125", 125), ("kill -9 $$", 137)] {
        let out = sandboxed(&env, &["--bwrap"], line);
        let got = out
            .status
            .code()
            .or(std::os::unix::process::ExitStatusExt::signal(&out.status).map(|s| 128 + s));
        assert_eq!(got, Some(code), "{line}: {}", text(&out));
    }
}

/// The class of changes Landlock never governed: mode, times, owner and extended attributes
/// of files outside the writable roots. bubblewrap shows them read-only (the fallback leaves
/// them open; README says so).
#[test]
fn file_metadata_outside_the_writable_roots_cannot_change() {
    let env = TestEnv::new();
    if !landlock(&env)
        || !bubblewrap(&env)
        || !needs::that(Path::new("/usr/bin/python3").exists(), "python3")
    {
        return;
    }
    let out_dir = outside();
    let file = out_dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    std::fs::write(env.project.path().join("own"), "x").unwrap();
    let mut perms = std::fs::metadata(&file).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o644);
    std::fs::set_permissions(&file, perms).unwrap();
    let change = |path: &str| {
        format!(
            "chmod 600 {path}; echo mode=$?; touch -d 2001-01-01 {path}; echo times=$?; \
             chown $(id -u):$(id -g) {path}; echo owner=$?; \
             python3 -c \"import os; os.setxattr('{path}', 'user.stepper', b'1')\"; echo xattr=$?"
        )
    };
    // Where it may write, every change goes through: the test can tell a refusal.
    let inside = sandboxed(&env, &["--bwrap"], &change("own"));
    for op in ["mode", "times", "owner", "xattr"] {
        assert!(
            text(&inside).contains(&format!("{op}=0")),
            "{}",
            text(&inside)
        );
    }
    let before = std::fs::metadata(&file).unwrap();
    let out = sandboxed(&env, &["--bwrap"], &change(&file.display().to_string()));
    let said = text(&out);
    for op in ["mode", "times", "owner", "xattr"] {
        assert!(!said.contains(&format!("{op}=0")), "{op} changed: {said}");
    }
    assert_eq!(said.matches("Read-only file system").count(), 4, "{said}");
    let after = std::fs::metadata(&file).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&after.permissions()) & 0o777,
        0o644
    );
    assert_eq!(after.modified().unwrap(), before.modified().unwrap());
}

/// POSIX shared memory is the command's own under bubblewrap (an empty /dev/shm that goes
/// with it), and refused without it.
#[test]
fn dev_shm_is_the_commands_own_or_refused() {
    let env = TestEnv::new();
    if !landlock(&env) || !needs::that(Path::new("/dev/shm").is_dir(), "/dev/shm") {
        return;
    }
    let theirs = tempfile::Builder::new()
        .prefix("stepper-e2e-shm")
        .tempfile_in("/dev/shm")
        .unwrap();
    std::fs::write(theirs.path(), "SHARED-SECRET").unwrap();
    let name = theirs
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let mine = format!("/dev/shm/{name}-mine");
    for mechanism in mechanisms(&env) {
        let out = sandboxed(
            &env,
            mechanism,
            &format!(
                "echo \"listed: $(ls /dev/shm | tr '\\n' ' ')\"; cat /dev/shm/{name}; \
                 echo own > {mine} && cat {mine}"
            ),
        );
        let said = text(&out);
        let listed = said
            .lines()
            .find(|l| l.starts_with("listed:"))
            .unwrap_or_default();
        assert!(!said.contains("SHARED-SECRET"), "{mechanism:?}: {said}");
        assert!(!Path::new(&mine).exists(), "{mechanism:?}: {said}");
        if mechanism.is_empty() {
            assert!(said.contains("Permission denied"), "{said}");
        } else {
            // Its own: writable, and nobody else's in it.
            assert!(!listed.contains(&name) && said.contains("own\n"), "{said}");
        }
    }
}

/// Another terminal's `/dev/pts/N`, and the controlling terminal the daemon may have, take
/// nothing from a sandboxed command (unsandboxed, the same lines reach both).
#[test]
fn other_terminals_are_out_of_reach() {
    let env = TestEnv::new();
    if !landlock(&env) || !needs::that(Path::new("/usr/bin/python3").exists(), "python3") {
        return;
    }
    // A terminal of its own (its slave, /dev/pts/N, also the controlling terminal of the
    // commands run "with a terminal"), every line run unsandboxed then sandboxed, and what
    // reached the terminal read back up to a closing mark.
    const SCRIPT: &str = r#"
import os, select, subprocess, sys, time
master, slave = os.openpty()
name = os.ttyname(slave)
helper = sys.argv[1:]
def run(line, sandboxed, terminal):
    def controlling():
        if terminal:
            os.setsid()
            os.close(os.open(name, os.O_RDWR))
    argv = (helper if sandboxed else []) + ["bash", "-c", line.replace("@PTS@", name)]
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, preexec_fn=controlling)
    print("ran:", r.returncode, r.stdout.decode().strip(), flush=True)
for sandboxed in (False, True):
    tag = "INTRUDER" if sandboxed else "CONTROL"
    run(f"echo {tag}-PTS > @PTS@", sandboxed, False)
    run(f"echo {tag}-TTY > /dev/tty", sandboxed, True)
os.write(slave, b"END-OF-TEST\n")
got, deadline = b"", time.monotonic() + 20
while b"END-OF-TEST" not in got and time.monotonic() < deadline:
    if select.select([master], [], [], 1)[0]:
        got += os.read(master, 4096)
print("terminal:", got)
"#;
    let project = env.project.path().display().to_string();
    let stepperd = stepper_e2e::bin_dir().join("stepperd");
    for mechanism in mechanisms(&env) {
        let out = std::process::Command::new("/usr/bin/python3")
            .arg("-c")
            .arg(SCRIPT)
            .arg(&stepperd)
            .args(["sandbox", "--write", &project])
            .args(mechanism)
            .arg("--")
            .current_dir(env.project.path())
            .output()
            .unwrap();
        let said = text(&out);
        assert!(said.contains("END-OF-TEST"), "{mechanism:?}: {said}");
        assert!(
            said.contains("CONTROL-PTS") && said.contains("CONTROL-TTY"),
            "{mechanism:?}: unsandboxed, both reach the terminal: {said}"
        );
        assert!(!said.contains("INTRUDER-PTS"), "{mechanism:?}: {said}");
        assert!(!said.contains("INTRUDER-TTY"), "{mechanism:?}: {said}");
    }
}

fn tool_results(events: &[EventEnvelope]) -> Vec<(String, ToolCallStatus, String)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::ToolCallFinished {
                call_id,
                status,
                output,
                ..
            } => Some((call_id.clone(), *status, output.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_edits_runs_sandboxed_commands_unasked_and_leaving_the_sandbox_is_asked() {
    let env = TestEnv::new();
    if !landlock(&env) {
        return;
    }
    let out_dir = outside();
    let o = out_dir.path().display().to_string();
    std::fs::create_dir_all(env.project.path().join(".stepper")).unwrap();
    std::fs::write(
        env.project.path().join(".stepper/setting.json"),
        r#"{"sandbox": {"mode": "workspace-write"}}"#,
    )
    .unwrap();
    // Not a read-only command: in accept-edits without a sandbox it would ask.
    let line = |name: &str| format!("touch made-{name} && echo x > {o}/{name}");
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": line("denied")}),
    )])));
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t2",
        "bash",
        json!({"command": line("approved")}),
    )])));
    env.fake.push(Reply::text(&["done"]));
    env.start_daemon();
    let ask = env
        .stepper()
        .args([
            "ask",
            "--wait-approval",
            "--mode",
            "accept-edits",
            "--format",
            "stream-json",
            "go",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let session_id = env.running_session(3).await;
    let second = env.client().await;
    let got = second
        .call::<SessionGet>(SessionParams {
            session_id: session_id.clone(),
        })
        .await
        .unwrap();
    let sandbox = got.sandbox.expect("session/get says the sandbox");
    assert_eq!(
        (sandbox.mode, sandbox.state, sandbox.network),
        (SandboxMode::WorkspaceWrite, SandboxState::Active, false)
    );
    assert!(
        sandbox
            .writable_roots
            .contains(&env.project.path().display().to_string())
    );

    let mut stream = second.subscribe_events(&session_id, 0).await.unwrap();
    let answer = |request_id: String, decision| SessionApproveParams {
        session_id: session_id.clone(),
        request_id,
        decision,
    };
    // The first command ran in the sandbox without a question; its write outside failed,
    // and running it outside the sandbox is asked — and refused here.
    let Asked {
        request_id: id,
        summary,
        ..
    } = next_approval(&mut stream).await;
    assert!(summary.contains("outside the sandbox"), "{summary}");
    assert!(env.project.path().join("made-denied").exists());
    assert!(!out_dir.path().join("denied").exists());
    second
        .call::<SessionApprove>(answer(id, ApprovalDecision::Deny))
        .await
        .unwrap();
    // The second is let out, and its write outside lands.
    let id = next_approval(&mut stream).await.request_id;
    second
        .call::<SessionApprove>(answer(id, ApprovalDecision::Allow))
        .await
        .unwrap();
    let out = ask.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "completed, with a denial: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out_dir.path().join("approved").exists());
    let events = stream_json(&out);
    let results = tool_results(&events);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        (results[0].2.contains("Permission denied")
            || results[0].2.contains("Read-only file system"))
            && results[0].2.contains("was not approved"),
        "{results:?}"
    );
    assert!(
        results[1].2.contains("outside the sandbox, approved"),
        "{results:?}"
    );
    let asked = events
        .iter()
        .filter(|e| matches!(e.event, AppEvent::ApprovalRequested { .. }))
        .count();
    assert_eq!(asked, 2, "only leaving the sandbox was asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_kernel_sandbox_auto_asks_and_says_so_once() {
    let env = TestEnv::new();
    // The daemon's probe acts out a kernel without Landlock, on a machine without bubblewrap.
    let out = env
        .stepper()
        .env("STEPPER_SANDBOX_MAX_ABI", "0")
        .env("STEPPER_SANDBOX_BWRAP", "off")
        .args(["daemon", "start"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let marker: PathBuf = env.project.path().join("made");
    for call in ["t1", "t2"] {
        env.fake.push(Reply::Sse(tool_use_stream(&[(
            call,
            "bash",
            json!({"command": format!("touch {}-{call}", marker.display())}),
        )])));
    }
    env.fake.push(Reply::text(&["done"]));
    let ask = env
        .stepper()
        .args([
            "ask",
            "--wait-approval",
            "--yes",
            "--sandbox",
            "workspace-write",
            "--format",
            "stream-json",
            "go",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let session_id = env.running_session(3).await;
    let second = env.client().await;
    let mut stream = second.subscribe_events(&session_id, 0).await.unwrap();
    for _ in 0..2 {
        let Asked {
            request_id: id,
            summary,
            ..
        } = next_approval(&mut stream).await;
        assert!(summary.contains("touch"), "{summary}");
        second
            .call::<SessionApprove>(SessionApproveParams {
                session_id: session_id.clone(),
                request_id: id,
                decision: ApprovalDecision::Allow,
            })
            .await
            .unwrap();
    }
    let out = ask.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = second
        .call::<SessionGet>(SessionParams {
            session_id: session_id.clone(),
        })
        .await
        .unwrap()
        .sandbox
        .unwrap();
    assert_eq!(got.state, SandboxState::Unavailable);
    assert!(got.reason.unwrap().contains("Landlock"));
    let events = stream_json(&out);
    let notices: Vec<&String> = events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::Notice { message } if message.contains("sandbox") => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(notices.len(), 1, "said once: {notices:?}");
    assert!(notices[0].contains("ask first"), "{}", notices[0]);
    // Approved, they ran (unsandboxed, as the user chose).
    assert!(env.project.path().join("made-t1").exists());
}

/// A daemon for `env` whose sandbox is bubblewrap's (`bwrap`) or Landlock's alone, with
/// `vars` in its environment.
fn start_daemon(env: &TestEnv, bwrap: bool, vars: &[(&str, &str)]) {
    let mut vars = vars.to_vec();
    if !bwrap {
        vars.push(("STEPPER_SANDBOX_BWRAP", "off"));
    }
    env.start_daemon_with(&vars);
}

/// One `stepper ask --yes --sandbox workspace-write` turn in the project, with HOME at
/// `home`, whose bash calls are `lines` (each made to end well, so that none asks to leave
/// the sandbox): what each printed, and the session's sandbox as `session/get` tells it.
async fn in_a_session(env: &TestEnv, home: &Path, lines: &[String]) -> (Vec<String>, SandboxInfo) {
    for (i, line) in lines.iter().enumerate() {
        env.fake.push(Reply::Sse(tool_use_stream(&[(
            &format!("t{i}"),
            "bash",
            json!({"command": format!("{line}; true")}),
        )])));
    }
    env.fake.push(Reply::text(&["done"]));
    let out = env
        .stepper()
        .env("HOME", home)
        .args([
            "ask",
            "--wait-approval",
            "--yes",
            "--sandbox",
            "workspace-write",
            "--format",
            "stream-json",
            "go",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let events = stream_json(&out);
    let outputs: Vec<String> = tool_results(&events).into_iter().map(|r| r.2).collect();
    assert_eq!(outputs.len(), lines.len(), "{outputs:?}");
    let session_id = events[0].session_id.clone();
    let sandbox = env
        .client()
        .await
        .call::<SessionGet>(SessionParams { session_id })
        .await
        .unwrap()
        .sandbox
        .expect("session/get says the sandbox");
    (outputs, sandbox)
}

/// What says which mechanism holds a session's sandbox.
fn expect_mechanism(sandbox: &SandboxInfo, bwrap: bool) {
    assert_eq!(sandbox.state, SandboxState::Active, "{sandbox:?}");
    let reason = sandbox.reason.clone().unwrap_or_default();
    if bwrap {
        assert_eq!(sandbox.mechanism, Some(SandboxMechanism::Bubblewrap));
        assert!(reason.starts_with("bubblewrap + seccomp"), "{reason}");
    } else {
        assert_eq!(sandbox.mechanism, Some(SandboxMechanism::Landlock));
        assert!(
            reason.contains("only") && reason.contains("bubblewrap turned off"),
            "{reason}"
        );
    }
}

/// The daemon's `/proc` entries — its environment above all, which holds what it was
/// started with — are not a sandboxed command's to read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemons_proc_entries_are_out_of_reach() {
    for bwrap in [true, false] {
        let env = TestEnv::new();
        if !landlock(&env) || (bwrap && !bubblewrap(&env)) {
            continue;
        }
        start_daemon(&env, bwrap, &[("STEPPER_E2E_SECRET", "daemon-env-secret")]);
        let pid = env.daemon_pid().expect("the daemon's pid");
        let (outputs, sandbox) = in_a_session(
            &env,
            env.home.path(),
            &[format!(
                "cat /proc/{pid}/environ; cat /proc/{pid}/cmdline; ls /proc/{pid}/fd; \
                 tr '\\0' '\\n' < /proc/{pid}/environ | grep SECRET"
            )],
        )
        .await;
        expect_mechanism(&sandbox, bwrap);
        let said = &outputs[0];
        if bwrap || !nix::unistd::geteuid().is_root() {
            assert!(!said.contains("daemon-env-secret"), "{said}");
        }
        if bwrap {
            // Not even there: the command's PID namespace is its own.
            assert_eq!(
                said.matches("No such file or directory").count(),
                4,
                "{said}"
            );
        } else if !nix::unistd::geteuid().is_root() {
            // Landlock keeps a sandboxed process from ptracing, so from reading another's
            // memory and environment — unless it has CAP_SYS_PTRACE, as root's commands do
            // (README: the fallback's gaps).
            assert!(said.contains("Permission denied"), "{said}");
        }
    }
}

/// Credentials in the usual places under HOME, and stepper's own files (the store, the
/// settings, the socket), are unreadable in the sandbox; what else is in HOME is readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_and_stepper_files_are_hidden() {
    for bwrap in [true, false] {
        let env = TestEnv::new();
        if !landlock(&env) || (bwrap && !bubblewrap(&env)) {
            continue;
        }
        // A home outside the temp folders (writable in the sandbox, which the fallback
        // could not hide anything inside of).
        let home = outside();
        let secrets = [
            ".ssh/id_ed25519",
            ".aws/credentials",
            ".gnupg/private-keys-v1.d/key",
            ".config/gcloud/credentials.db",
            ".kube/config",
            ".docker/config.json",
            ".netrc",
            ".git-credentials",
            ".config/gh/hosts.yml",
        ];
        for (i, path) in secrets.iter().enumerate() {
            let path = home.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, format!("SECRET-{i}\n")).unwrap();
        }
        std::fs::create_dir_all(home.path().join(".config/tool")).unwrap();
        std::fs::write(home.path().join(".config/tool/settings"), "READABLE-1\n").unwrap();
        std::fs::write(home.path().join(".docker/daemon.json"), "READABLE-2\n").unwrap();
        let data = env.places().data_dir;
        std::fs::write(data.join("marker"), "STEPPER-OWN\n").unwrap();
        start_daemon(&env, bwrap, &[]);
        // A key stored as `stepper auth login` stores it, in the data folder.
        let mut login = env
            .stepper()
            .args(["auth", "login", "--anthropic"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        login
            .stdin
            .take()
            .unwrap()
            .write_all(format!("{}\n", stepper_e2e::fake_llm::FAKE_KEY).as_bytes())
            .unwrap();
        assert!(login.wait().unwrap().success());
        let stored = std::fs::read_to_string(data.join("credentials.json")).unwrap();
        assert!(stored.contains("apiKeys"), "{stored}");
        let cats: Vec<String> = secrets.iter().map(|p| format!("~/{p}")).collect();
        let (outputs, sandbox) = in_a_session(
            &env,
            home.path(),
            &[
                format!(
                    "cat {} ~/.config/tool/settings ~/.docker/daemon.json",
                    cats.join(" ")
                ),
                format!(
                    "cat {d}/marker {d}/credentials.json; ls -a {d}; \
                     cat {d}/stepper.db | head -c 16",
                    d = data.display()
                ),
            ],
        )
        .await;
        expect_mechanism(&sandbox, bwrap);
        let said = outputs.join("\n");
        assert!(
            said.contains("READABLE-1") && said.contains("READABLE-2"),
            "{said}"
        );
        assert!(!said.contains("SECRET-"), "{said}");
        assert!(!said.contains("STEPPER-OWN"), "{said}");
        // (The key itself would be redacted from a tool's output; the file's shape is not.)
        assert!(!said.contains("apiKeys"), "{said}");
        assert!(!said.contains("SQLite"), "{said}");
        if bwrap {
            // An empty folder; Landlock alone can only keep what is in it from being read.
            assert!(!said.contains("stepper.db\n"), "listed: {said}");
        }
    }
}

/// `denyRead` in the settings replaces the defaults: what it names is hidden, the rest of
/// the defaults no longer is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_read_in_the_settings_says_what_is_hidden() {
    let env = TestEnv::new();
    if !landlock(&env) {
        return;
    }
    let bwrap = bubblewrap(&env);
    let home = outside();
    for (path, text) in [
        (".ssh/config", "SSH-CONFIG"),
        (".aws/credentials", "AWS-SECRET"),
    ] {
        let path = home.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    std::fs::write(
        env.places().config_dir.join("setting.json"),
        r#"{"sandbox": {"denyRead": ["~/.aws"]}}"#,
    )
    .unwrap();
    start_daemon(&env, bwrap, &[]);
    let (outputs, sandbox) = in_a_session(
        &env,
        home.path(),
        &["cat ~/.ssh/config ~/.aws/credentials".into()],
    )
    .await;
    expect_mechanism(&sandbox, bwrap);
    assert!(outputs[0].contains("SSH-CONFIG"), "{}", outputs[0]);
    assert!(!outputs[0].contains("AWS-SECRET"), "{}", outputs[0]);
}

/// What git and stepper run programs from stays read-only in the project — and cannot be
/// swapped out by renaming a folder above it — while the rest of the project, `.git`'s
/// objects and refs included, is writable: a commit goes through, a planted hook does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protected_paths_in_the_project_stay_read_only() {
    let env = TestEnv::new();
    if !landlock(&env)
        || !bubblewrap(&env)
        || !needs::program("git", "this test", "apt-get install git")
    {
        return;
    }
    let project = env.project.path();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(project)
            .env("HOME", env.home.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    git(&["init", "-q"]);
    let config = std::fs::read_to_string(project.join(".git/config")).unwrap();
    std::fs::create_dir(project.join(".claude")).unwrap();
    start_daemon(&env, true, &[]);
    let (outputs, sandbox) = in_a_session(
        &env,
        env.home.path(),
        &[
            "echo 'echo pwned' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; \
             echo '[core]' >> .git/config; git config core.hooksPath /tmp; \
             echo x > .git/info/attributes; rm -rf .git/hooks; \
             echo '{}' > .stepper/setting.json; echo '{}' > .claude/settings.json; \
             mv .git .git-moved; mv .stepper .stepper-moved; mv .claude .claude-moved"
                .into(),
            "echo hello > file.txt && git add file.txt && \
             git -c user.name=t -c user.email=t@example.com commit -qm one && echo committed"
                .into(),
        ],
    )
    .await;
    expect_mechanism(&sandbox, true);
    let said = outputs.join("\n");
    assert!(said.contains("committed"), "{said}");
    assert!(said.contains("Read-only file system"), "{said}");
    assert!(!project.join(".git/hooks/pre-commit").exists(), "{said}");
    assert!(!project.join(".git/info/attributes").exists(), "{said}");
    assert_eq!(
        std::fs::read_to_string(project.join(".git/config")).unwrap(),
        config,
        "{said}"
    );
    for moved in [".git-moved", ".stepper-moved", ".claude-moved"] {
        assert!(!project.join(moved).exists(), "{moved}: {said}");
    }
    assert!(!project.join(".stepper/setting.json").exists(), "{said}");
    assert!(!project.join(".claude/settings.json").exists(), "{said}");
    assert!(git(&["log", "--oneline"]).contains("one"));
    assert_eq!(
        std::fs::read_to_string(project.join("file.txt")).unwrap(),
        "hello\n"
    );
}

/// `readableRoots` confines reads under both mechanisms (inside bubblewrap, Landlock does
/// it): the project and the system's folders are readable, the rest of HOME is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_confined_to_the_readable_roots() {
    for bwrap in [true, false] {
        let env = TestEnv::new();
        if !landlock(&env) || (bwrap && !bubblewrap(&env)) {
            continue;
        }
        let home = outside();
        std::fs::write(home.path().join("notes.txt"), "HOME-NOTES").unwrap();
        std::fs::write(env.project.path().join("src.txt"), "PROJECT-SRC").unwrap();
        std::fs::write(
            env.places().config_dir.join("setting.json"),
            r#"{"sandbox": {"readableRoots": []}}"#,
        )
        .unwrap();
        start_daemon(&env, bwrap, &[]);
        let (outputs, sandbox) = in_a_session(
            &env,
            home.path(),
            &["cat src.txt ~/notes.txt; head -c 0 /etc/hostname && echo system-readable".into()],
        )
        .await;
        expect_mechanism(&sandbox, bwrap);
        let said = &outputs[0];
        assert!(said.contains("PROJECT-SRC"), "{said}");
        assert!(said.contains("system-readable"), "{said}");
        assert!(!said.contains("HOME-NOTES"), "{said}");
        assert!(said.contains("Permission denied"), "{said}");
    }
}

/// The daemon keeps the folder it was started from: gone by the time it first sandboxes a
/// command, it must not cost the daemon its bubblewrap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_does_not_depend_on_the_folder_the_daemon_started_in() {
    let env = TestEnv::new();
    if !landlock(&env) || !bubblewrap(&env) {
        return;
    }
    let gone = tempfile::tempdir().unwrap();
    let out = env
        .stepper()
        .current_dir(gone.path())
        .args(["daemon", "start"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    drop(gone);
    let (outputs, sandbox) = in_a_session(&env, env.home.path(), &["echo ran".into()]).await;
    expect_mechanism(&sandbox, true);
    assert!(outputs[0].contains("ran"), "{}", outputs[0]);
}
