//! What a tool call starts stays in the call (issue 34): it cannot drive the daemon through
//! its socket — no `initialize`, no reading another session, no `session/setMode`, no
//! approval answered — and nothing it starts outlives it, however it detaches (`setsid -f`
//! without `STEPPER_GROUP`, a double fork that re-execs without it, its reaper killed with
//! `kill -9 $PPID`): not the call, not the turn, not `stepper daemon stop`. Each holds
//! outside the OS sandbox and in it.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{Reply, TestEnv, needs, next_approval, read_until, until_turn_finished};
use stepper_process::testing::processes_with;
use stepper_protocol::client::DaemonClient;
use stepper_protocol::methods::{
    SessionApprove, SessionApproveParams, SessionCreate, SessionCreateParams, SessionExport,
    SessionExportParams, SessionGet, SessionParams,
};
use stepper_protocol::{AppEvent, ApprovalDecision, PermissionMode, SandboxMode};

/// The system's Python, which the sandbox lets commands read.
const PYTHON: &str = "/usr/bin/python3";

/// `tools/check.py`: a command the user approved once, which instead speaks the protocol to
/// the daemon's socket (a WebSocket written by hand) and tries everything a client may do to
/// another session. Each attempt prints `RESULT <method> <reply or what failed>`; it always
/// exits 0 (a failure would have the sandbox ask to run it again outside).
///
/// `check.py SOCKET SESSION REQUEST` tries once; `check.py --loop SOCKET SESSION LOG MARKER`
/// keeps trying every 20 ms for a minute, appending to LOG: a process left behind.
const CHECK_PY: &str = r#"
import base64, json, os, socket, struct, sys, time

def connect(path):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    key = base64.b64encode(os.urandom(16))
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: " + key + b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            raise OSError("closed during the handshake")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    status = head.split(b"\r\n")[0]
    if b" 101 " not in status:
        raise OSError(status.decode())
    return s, rest

def send(s, message):
    payload = json.dumps(message).encode()
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        header = bytes([0x81, 0x80 | n])
    elif n < 65536:
        header = bytes([0x81, 0x80 | 126]) + struct.pack(">H", n)
    else:
        header = bytes([0x81, 0x80 | 127]) + struct.pack(">Q", n)
    s.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

def receive(s, buf):
    def need(n):
        nonlocal buf
        while len(buf) < n:
            chunk = s.recv(65536)
            if not chunk:
                raise OSError("closed by the daemon")
            buf += chunk
    text = b""
    while True:
        need(2)
        fin, op, n, at = buf[0] & 0x80, buf[0] & 0x0F, buf[1] & 0x7F, 2
        if n == 126:
            need(4)
            n, at = struct.unpack(">H", buf[2:4])[0], 4
        elif n == 127:
            need(10)
            n, at = struct.unpack(">Q", buf[2:10])[0], 10
        need(at + n)
        payload, buf = buf[at:at + n], buf[at + n:]
        if op == 8:
            raise OSError("closed by the daemon")
        if op in (0, 1):
            text += payload
            if fin:
                return json.loads(text), buf

def attempts(session, request):
    return [
        ("initialize", {"protocolVersion": {"major": 1, "minor": 0},
                        "client": {"name": "check.py", "kind": "other", "version": "0"}}),
        ("session/list", {}),
        ("session/get", {"sessionId": session}),
        ("session/export", {"sessionId": session}),
        ("session/subscribe", {"sessionId": session, "afterSeq": 0}),
        ("session/setMode", {"sessionId": session, "mode": "auto"}),
        ("session/approve", {"sessionId": session, "requestId": request, "decision": "allow"}),
        ("session/submit", {"sessionId": session, "text": "pwned by check.py"}),
    ]

def try_all(path, session, request, out):
    try:
        s, buf = connect(path)
    except OSError as e:
        print("RESULT connect", json.dumps({"failed": str(e)}), file=out, flush=True)
        return
    for i, (method, params) in enumerate(attempts(session, request)):
        try:
            send(s, {"jsonrpc": "2.0", "id": i + 1, "method": method, "params": params})
            reply, buf = receive(s, buf)
            # Notifications (a subscription's events) are replies too for this purpose.
            print("RESULT", method, json.dumps(reply), file=out, flush=True)
        except OSError as e:
            print("RESULT", method, json.dumps({"failed": str(e)}), file=out, flush=True)
            return
    s.close()

if sys.argv[1] == "--loop":
    _, _, path, session, log, marker = sys.argv
    with open(log, "a") as out:
        end = time.time() + 60
        while time.time() < end:
            try_all(path, session, "none", out)
            time.sleep(0.02)
else:
    try_all(sys.argv[1], sys.argv[2], sys.argv[3], sys.stdout)
    print("CHECK-DONE")
"#;

/// Whether this machine can run the tests: Python, and for `sandboxed` a kernel with the
/// sandbox (skipped otherwise, failed under STEPPER_TEST_STRICT).
fn can_run(env: &TestEnv, sandboxed: bool) -> bool {
    if !needs::that(Path::new(PYTHON).exists(), PYTHON) {
        return false;
    }
    if !sandboxed {
        return true;
    }
    let probe = env
        .stepperd()
        .args(["sandbox", "--probe"])
        .output()
        .unwrap();
    needs::that(
        probe.status.success(),
        &format!(
            "a kernel that can sandbox commands ({})",
            String::from_utf8_lossy(&probe.stderr).trim()
        ),
    )
}

/// A marker unique to this test process and `n`, valid inside a `sleep` duration.
fn marker(n: u32) -> String {
    format!("{}.{n}", std::process::id())
}

/// Wait until no live process carries `marker` in its command line.
fn none_left(what: &str, marker: &str) {
    stepper_e2e::wait_until(what, Duration::from_secs(10), || {
        processes_with(marker).is_empty()
    });
}

/// Kill whatever still carries `marker` (a failing test must not leave it behind).
fn kill_left(marker: &str) {
    for pid in processes_with(marker) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Kills what carries the markers when dropped, so a failed assertion leaves nothing.
struct Cleanup(Vec<String>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for m in &self.0 {
            kill_left(m);
        }
    }
}

/// A session created over the protocol in `cwd`, with its first input.
async fn session(
    env: &TestEnv,
    client: &DaemonClient,
    cwd: &Path,
    mode: PermissionMode,
    sandboxed: bool,
    input: &str,
) -> String {
    client
        .call::<SessionCreate>(SessionCreateParams {
            input_parts: Vec::new(),
            cwd: cwd.display().to_string(),
            env: env.envs().into_iter().collect(),
            model: None,
            title: None,
            record: None,
            mode: Some(mode),
            sandbox: sandboxed.then_some(SandboxMode::WorkspaceWrite),
            input: Some(input.into()),
            system_prompt: None,
            append_system_prompt: None,
        })
        .await
        .unwrap()
        .session
        .id
}

/// The outputs of a turn's finished tool calls, by call id.
fn outputs(events: &[stepper_protocol::EventEnvelope]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::ToolCallFinished {
                call_id, output, ..
            } => Some((call_id.clone(), output.clone())),
            _ => None,
        })
        .collect()
}

/// The `RESULT method reply` lines check.py printed.
fn results(text: &str) -> Vec<(String, Value)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("RESULT "))
        .filter_map(|l| {
            let (method, reply) = l.split_once(' ')?;
            Some((method.to_string(), serde_json::from_str(reply).ok()?))
        })
        .collect()
}

/// Every attempt failed: refused with `PEER_REFUSED` (or, in the sandbox, never connected).
fn assert_all_refused(results: &[(String, Value)], sandboxed: bool, said: &str) {
    assert!(!results.is_empty(), "check.py tried nothing: {said}");
    for (method, reply) in results {
        assert!(
            reply.get("result").is_none() && reply.get("method").is_none(),
            "{method} got through: {reply}\n{said}"
        );
    }
    if sandboxed {
        // The sandbox refuses Unix sockets; whatever it reached instead was refused.
        return;
    }
    let (method, first) = &results[0];
    assert_eq!(method, "initialize", "{said}");
    assert_eq!(first["error"]["code"], -32060, "{said}");
    assert_eq!(first["error"]["data"]["kind"], "peerRefused", "{said}");
    let message = first["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("tool call") && message.contains("your own terminal"),
        "{message}"
    );
    assert_eq!(
        results.len(),
        8,
        "every method answered, each with the refusal: {said}"
    );
}

/// The issue's attack: a command the user approved reads another project's session, sets it
/// to `auto` and answers its pending approval — each refused; the other session is untouched.
async fn an_approved_command_cannot_drive_the_daemon(sandboxed: bool) {
    let env = TestEnv::new();
    if !can_run(&env, sandboxed) {
        return;
    }
    std::fs::create_dir_all(env.project.path().join("tools")).unwrap();
    std::fs::write(env.project.path().join("tools/check.py"), CHECK_PY).unwrap();
    let other = tempfile::tempdir().unwrap();
    env.start_daemon();
    let client = env.client().await;
    let socket = env.places().socket.display().to_string();

    // Another project's session, waiting for an approval.
    env.fake.push_when(
        "input of the other project",
        Reply::Sse(tool_use_stream(&[(
            "b1",
            "bash",
            json!({"command": "touch b-was-here"}),
        )])),
    );
    let other_id = session(
        &env,
        &client,
        other.path(),
        PermissionMode::Default,
        false,
        "input of the other project",
    )
    .await;
    let mut other_events = client.subscribe_events(&other_id, 0).await.unwrap();
    let pending = next_approval(&mut other_events).await.request_id;

    // This project's session runs tools/check.py: approved by the user, or run in the
    // sandbox unasked.
    env.fake.push_when(
        "input of this project",
        Reply::Sse(tool_use_stream(&[(
            "a1",
            "bash",
            json!({"command": format!("{PYTHON} tools/check.py {socket} {other_id} {pending}")}),
        )])),
    );
    env.fake.push_when("CHECK-DONE", Reply::text(&["checked"]));
    let (mode, sandbox) = if sandboxed {
        (PermissionMode::Auto, true)
    } else {
        (PermissionMode::Default, false)
    };
    let this = session(
        &env,
        &client,
        env.project.path(),
        mode,
        sandbox,
        "input of this project",
    )
    .await;
    let mut events = client.subscribe_events(&this, 0).await.unwrap();
    if !sandboxed {
        let asked = next_approval(&mut events).await;
        assert!(asked.summary.contains("check.py"), "{}", asked.summary);
        client
            .call::<SessionApprove>(SessionApproveParams {
                session_id: this.clone(),
                request_id: asked.request_id,
                decision: ApprovalDecision::Allow,
            })
            .await
            .unwrap();
    }
    let events = until_turn_finished(&mut events).await;
    let said = outputs(&events)
        .into_iter()
        .find(|(id, _)| id == "a1")
        .map(|(_, out)| out)
        .expect("check.py ran");
    assert!(said.contains("CHECK-DONE"), "{said}");
    assert_all_refused(&results(&said), sandboxed, &said);

    // The other session is as it was: its mode, its approval still open (answered now, by
    // the user), no input of check.py's.
    let got = client
        .call::<SessionGet>(SessionParams {
            session_id: other_id.clone(),
        })
        .await
        .unwrap();
    assert_eq!(got.mode, Some(PermissionMode::Default));
    client
        .call::<SessionApprove>(SessionApproveParams {
            session_id: other_id.clone(),
            request_id: pending,
            decision: ApprovalDecision::Deny,
        })
        .await
        .expect("the approval was still waiting for the user");
    until_turn_finished(&mut other_events).await;
    assert!(!other.path().join("b-was-here").exists());
    let export = client
        .call::<SessionExport>(SessionExportParams {
            session_id: other_id,
            after_seq: 0,
            limit: None,
        })
        .await
        .unwrap();
    let text = serde_json::to_string(&export).unwrap();
    assert!(!text.contains("pwned"), "check.py queued an input: {text}");

    // A client of the user's own is welcome as before, and the refusal was logged.
    let sessions = env.run(&["sessions"]);
    assert!(sessions.status.success(), "{sessions:?}");
    if !sandboxed {
        stepper_e2e::wait_until("the refusal logged", Duration::from_secs(10), || {
            env.daemon_log().contains("connection refused")
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_command_cannot_drive_the_daemon_through_its_socket() {
    an_approved_command_cannot_drive_the_daemon(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_command_cannot_drive_the_daemon_through_its_socket() {
    an_approved_command_cannot_drive_the_daemon(true).await;
}

/// A command leaves check.py behind (detached, without `STEPPER_GROUP`) to try the socket
/// after the turn: it is dead by the end of the call, and got nothing meanwhile.
async fn a_process_left_behind_cannot_drive_the_daemon(sandboxed: bool) {
    let env = TestEnv::new();
    if !can_run(&env, sandboxed) {
        return;
    }
    std::fs::create_dir_all(env.project.path().join("tools")).unwrap();
    std::fs::write(env.project.path().join("tools/check.py"), CHECK_PY).unwrap();
    let mark = marker(11);
    let _cleanup = Cleanup(vec![mark.clone()]);
    let other = tempfile::tempdir().unwrap();
    env.start_daemon();
    let client = env.client().await;
    let socket = env.places().socket.display().to_string();
    let other_id = client
        .call::<SessionCreate>(SessionCreateParams {
            input_parts: Vec::new(),
            cwd: other.path().display().to_string(),
            env: env.envs().into_iter().collect(),
            model: None,
            title: None,
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
    let log = env.project.path().join("loop.log");
    let line = format!(
        "env -u STEPPER_GROUP setsid -f {PYTHON} tools/check.py --loop {socket} {other_id} {} \
         {mark} </dev/null >/dev/null 2>&1; \
         timeout 10 sh -c 'while [ ! -s {} ]; do sleep 0.01; done'; echo left-behind",
        log.display(),
        log.display()
    );
    env.fake.push_when(
        "leave it behind",
        Reply::Sse(tool_use_stream(&[("l1", "bash", json!({"command": line}))])),
    );
    env.fake.push_when("left-behind", Reply::text(&["done"]));
    let this = session(
        &env,
        &client,
        env.project.path(),
        PermissionMode::Auto,
        sandboxed,
        "leave it behind",
    )
    .await;
    let mut events = client.subscribe_events(&this, 0).await.unwrap();
    let events = until_turn_finished(&mut events).await;
    let said = outputs(&events)
        .into_iter()
        .map(|(_, out)| out)
        .collect::<String>();
    assert!(said.contains("left-behind"), "{said}");
    none_left("check.py, left behind, to be killed", &mark);
    let tried = std::fs::read_to_string(&log).unwrap();
    assert_all_refused(&results(&tried), true, &tried);
    let got = client
        .call::<SessionGet>(SessionParams {
            session_id: other_id,
        })
        .await
        .unwrap();
    assert_eq!(got.mode, Some(PermissionMode::Default), "{tried}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_left_behind_cannot_drive_the_daemon_later() {
    a_process_left_behind_cannot_drive_the_daemon(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_process_left_behind_cannot_drive_the_daemon_later() {
    a_process_left_behind_cannot_drive_the_daemon(true).await;
}

/// A double fork that re-execs `sleep DURATION` without `STEPPER_GROUP`, in a session of its
/// own, its output nowhere.
fn double_fork(duration: &str) -> String {
    format!(
        "{PYTHON} -c 'import os\n\
         if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        \
         fd = os.open(\"/dev/null\", os.O_RDWR)\n        [os.dup2(fd, n) for n in (0, 1, 2)]\n        \
         env = {{k: v for k, v in os.environ.items() if k != \"STEPPER_GROUP\"}}\n        \
         os.execve(\"/bin/sleep\", [\"sleep\", \"{duration}\"], env)\n    os._exit(0)\n\
         os.wait()'"
    )
}

/// The two survivors of the issue, and one whose reaper is killed first: none outlives its
/// call (nor, then, the turn).
async fn orphans_die_with_their_call(sandboxed: bool) {
    let env = TestEnv::new();
    if !can_run(&env, sandboxed) {
        return;
    }
    let (m1, m2, m3) = (marker(21), marker(22), marker(23));
    let _cleanup = Cleanup(vec![m1.clone(), m2.clone(), m3.clone()]);
    let calls = [
        (
            "o1",
            format!("env -u STEPPER_GROUP setsid -f sleep 300{m1} </dev/null >/dev/null 2>&1"),
        ),
        ("o2", double_fork(&format!("301{m2}"))),
        (
            "o3",
            format!(
                "env -u STEPPER_GROUP setsid -f sleep 302{m3} </dev/null >/dev/null 2>&1; \
                 kill -9 $PPID 2>/dev/null; true"
            ),
        ),
    ];
    env.fake.push_when(
        "start orphans",
        Reply::Sse(tool_use_stream(&[(
            calls[0].0,
            "bash",
            json!({"command": calls[0].1}),
        )])),
    );
    // Each call's result (its id in the model's request) brings the next call.
    for pair in calls.windows(2) {
        let (done, (next, line)) = (pair[0].0, (&pair[1].0, &pair[1].1));
        env.fake.push_when(
            &format!("\"{done}\""),
            Reply::Sse(tool_use_stream(&[(next, "bash", json!({"command": line}))])),
        );
    }
    env.fake.push_when("\"o3\"", Reply::text(&["done"]));
    env.start_daemon();
    let client = env.client().await;
    let this = session(
        &env,
        &client,
        env.project.path(),
        PermissionMode::Auto,
        sandboxed,
        "start orphans",
    )
    .await;
    let mut stream = client.subscribe_events(&this, 0).await.unwrap();
    for ((id, _), mark) in calls.iter().zip([&m1, &m2, &m3]) {
        read_until(
            &mut stream,
            |e| matches!(&e.event, AppEvent::ToolCallFinished { call_id, .. } if call_id == id),
        )
        .await;
        none_left(&format!("what call {id} left to be killed"), mark);
    }
    until_turn_finished(&mut stream).await;
    for mark in [&m1, &m2, &m3] {
        none_left("the orphans to stay dead", mark);
    }
    // The daemon is unharmed (o3's `kill -9 $PPID` hit the reaper, not it).
    assert!(env.run(&["daemon", "status"]).status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphans_that_drop_the_group_token_die_with_their_call() {
    orphans_die_with_their_call(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandboxed_orphans_that_drop_the_group_token_die_with_their_call() {
    orphans_die_with_their_call(true).await;
}

/// `stepper daemon stop` while a call that left orphans still runs: nothing survives it.
async fn orphans_die_with_the_daemon(sandboxed: bool) {
    let env = TestEnv::new();
    if !can_run(&env, sandboxed) {
        return;
    }
    let (m1, m2, m3) = (marker(31), marker(32), marker(33));
    let _cleanup = Cleanup(vec![m1.clone(), m2.clone(), m3.clone()]);
    let line = format!(
        "env -u STEPPER_GROUP setsid -f sleep 300{m1} </dev/null >/dev/null 2>&1; {}; \
         sleep 303{m3}",
        double_fork(&format!("301{m2}"))
    );
    env.fake.push_when(
        "start orphans",
        Reply::Sse(tool_use_stream(&[("s1", "bash", json!({"command": line}))])),
    );
    env.start_daemon_with(&[("STEPPER_SHUTDOWN_GRACE_MS", "100")]);
    let client = env.client().await;
    session(
        &env,
        &client,
        env.project.path(),
        PermissionMode::Auto,
        sandboxed,
        "start orphans",
    )
    .await;
    stepper_e2e::wait_until(
        "the call to start its orphans",
        Duration::from_secs(20),
        || {
            [&m1, &m2, &m3]
                .iter()
                .all(|m| !processes_with(m).is_empty())
        },
    );
    drop(client);
    let out = env.run(&["daemon", "stop"]);
    assert!(out.status.success(), "{out:?}");
    for mark in [&m1, &m2, &m3] {
        none_left("the orphans to die with the daemon", mark);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphans_do_not_survive_daemon_stop() {
    orphans_die_with_the_daemon(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandboxed_orphans_do_not_survive_daemon_stop() {
    orphans_die_with_the_daemon(true).await;
}

/// The reaper on its own, as the daemon runs it (`stepperd-reap PID -- bash -c LINE`) and as
/// its fallback (`stepperd reap …`): it returns once the line has, and nothing the line
/// started is left; the line's exit (code or signal) is its own.
#[test]
fn the_reaper_leaves_nothing_and_exits_as_its_command() {
    use std::os::unix::process::ExitStatusExt;
    let env = TestEnv::new();
    if !can_run(&env, false) {
        return;
    }
    let (m1, m2) = (marker(41), marker(42));
    let _cleanup = Cleanup(vec![m1.clone(), m2.clone()]);
    let small = stepper_e2e::bin_dir().join("stepperd-reap");
    for helper in ["stepperd-reap", "stepperd reap"] {
        let reap = |line: &str| {
            let mut command = if helper == "stepperd-reap" {
                std::process::Command::new(&small)
            } else {
                let mut c = env.stepperd();
                c.arg("reap");
                c
            };
            command
                .args([&std::process::id().to_string(), "--", "bash", "-c", line])
                .output()
                .unwrap()
        };
        let out = reap(&format!(
            "env -u STEPPER_GROUP setsid -f sleep 300{m1} </dev/null >/dev/null 2>&1; {}; \
             sleep 1{m2} & exit 3",
            double_fork(&format!("301{m1}"))
        ));
        assert_eq!(out.status.code(), Some(3), "{helper}: {out:?}");
        // Gone already: the reaper returns only once its tree is.
        assert!(
            processes_with(&m1).is_empty() && processes_with(&m2).is_empty(),
            "{helper} left a process"
        );
        assert_eq!(reap("kill -TERM $$").status.signal(), Some(15), "{helper}");
        let missing = reap("exec /nonexistent/program");
        assert_eq!(missing.status.code(), Some(127), "{helper}");
    }
    let bad = std::process::Command::new(&small)
        .args(["x", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("usage:"));
}
