//! The OS sandbox for real: commands run by `stepperd sandbox` under Landlock and seccomp
//! (writes inside the project only, no sockets unless allowed, no way out through links or
//! /proc), and sessions whose commands run in it — without asking where the sandbox holds
//! them, through an approval to leave it, and asking again where it cannot be applied.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::json;
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{Asked, Reply, TestEnv, needs, next_approval, stream_json};
use stepper_protocol::methods::{SessionApprove, SessionApproveParams, SessionGet, SessionParams};
use stepper_protocol::{
    AppEvent, ApprovalDecision, EventEnvelope, SandboxMode, SandboxState, ToolCallStatus,
};

/// Whether this kernel can sandbox; without Landlock the tests say so and skip (and fail
/// under STEPPER_TEST_STRICT).
fn landlock(env: &TestEnv) -> bool {
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

/// A folder outside the project and the temp folders (both writable in the sandbox): the
/// build's own temp folder unless the checkout is itself under one, else the home folder.
fn outside() -> tempfile::TempDir {
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

/// `bash -c LINE` in the project under the helper, writable: the project and /dev/null.
fn sandboxed(env: &TestEnv, extra: &[&str], line: &str) -> Output {
    let project = env.project.path().display().to_string();
    let mut args = vec!["sandbox", "--write", &project, "--write", "/dev/null"];
    args.extend(extra);
    args.extend(["--", "bash", "-c", line]);
    env.stepperd().args(&args).output().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn writes_stay_inside_the_project_whatever_the_path() {
    let env = TestEnv::new();
    if !landlock(&env) {
        return;
    }
    let out_dir = outside();
    let o = out_dir.path().display();
    std::os::unix::fs::symlink(out_dir.path(), env.project.path().join("link")).unwrap();
    let out = sandboxed(
        &env,
        &[],
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
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(env.project.path().join("inside.txt")).unwrap(),
        "in\n",
        "written inside, and not moved out: {said}"
    );
    let left: Vec<_> = std::fs::read_dir(out_dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "written outside: {left:?}\n{said}");
    assert!(said.contains("Permission denied"), "{said}");
}

#[test]
fn sockets_need_the_network_and_unix_sockets_never_open() {
    let env = TestEnv::new();
    if !landlock(&env) || !needs::that(Path::new("/usr/bin/python3").exists(), "python3") {
        return;
    }
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
    let off = sandboxed(&env, &[], &connect);
    assert!(!off.status.success(), "{}", text(&off));
    assert!(
        text(&off).contains("Operation not permitted"),
        "{}",
        text(&off)
    );
    let on = sandboxed(&env, &["--network"], &connect);
    assert!(text(&on).contains("got pong"), "{}", text(&on));
    server.join().unwrap();

    // The daemon's socket (a way out of any sandbox) cannot be reached, network or not.
    env.start_daemon();
    let socket = env.places().socket.display().to_string();
    let unix = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{socket}'); print('connected')\""
    );
    for extra in [&[][..], &["--network"]] {
        let out = sandboxed(&env, extra, &unix);
        assert!(!text(&out).contains("connected"), "{}", text(&out));
        assert!(
            text(&out).contains("Operation not permitted"),
            "{}",
            text(&out)
        );
    }
}

#[test]
fn a_kernel_without_landlock_runs_nothing() {
    let env = TestEnv::new();
    let probe = env
        .stepperd()
        .args(["sandbox", "--probe", "--max-abi", "0"])
        .output()
        .unwrap();
    assert_eq!(probe.status.code(), Some(125));
    assert!(
        String::from_utf8_lossy(&probe.stderr).contains("offers no Landlock"),
        "{}",
        text(&probe)
    );
    let marker = env.project.path().join("ran");
    let out = sandboxed(
        &env,
        &["--max-abi", "0"],
        &format!("touch {}", marker.display()),
    );
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(!marker.exists(), "the command must not run unsandboxed");
    let bad = env
        .stepperd()
        .args(["sandbox", "--write", "relative", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(125));
    assert!(text(&bad).contains("not an absolute path") && text(&bad).contains("usage:"));
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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out_dir.path().join("approved").exists());
    let events = stream_json(&out);
    let results = tool_results(&events);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].2.contains("Permission denied") && results[0].2.contains("was not approved"),
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
    // The daemon's probe acts out a kernel without Landlock.
    let out = env
        .stepper()
        .env("STEPPER_SANDBOX_MAX_ABI", "0")
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
