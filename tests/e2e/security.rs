//! Another user is refused before any method runs, even when the socket's permissions
//! would let them in.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use stepper_e2e::{TestEnv, needs};

/// Open the socket and ask for the WebSocket upgrade; print the status line, or `closed`.
const PROBE: &str = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(10)
data = b""
try:
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
except OSError as e:
    print("error", e)
print(data.split(b"\r\n")[0].decode() if data else "closed")
"#;

/// The system's Python (a user's own, under root's home, is not reachable by `nobody`).
const PYTHON: &str = "/usr/bin/python3";

fn probe(env: &TestEnv, as_nobody: bool) -> String {
    use std::os::unix::process::CommandExt;
    let socket = env.places().socket.display().to_string();
    let mut cmd = Command::new(PYTHON);
    if as_nobody {
        cmd.uid(65534).gid(65534);
    }
    let out = cmd
        .args(["-c", PROBE, &socket])
        .output()
        .expect("running the probe");
    assert!(
        out.status.success(),
        "probe failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn another_user_is_refused_before_any_method_runs() {
    if !needs::that(
        nix::unistd::geteuid().is_root() && std::path::Path::new(PYTHON).exists(),
        &format!("acting as another user needs root and {PYTHON}"),
    ) {
        return;
    }
    let env = TestEnv::new();
    env.start_daemon();
    // Open the folder and the socket to everyone: only the uid check stands in the way now.
    let places = env.places();
    std::fs::set_permissions(&places.data_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&places.socket, std::fs::Permissions::from_mode(0o666)).unwrap();

    assert_eq!(
        probe(&env, false),
        "HTTP/1.1 101 Switching Protocols",
        "the probe works for the owner"
    );
    let refused = probe(&env, true);
    assert!(
        refused.ends_with("closed") && !refused.contains("101"),
        "uid 65534 got: {refused}"
    );
    // The log is written in the background: wait for the line.
    stepper_e2e::wait_until(
        "the refusal to be logged",
        std::time::Duration::from_secs(10),
        || env.daemon_log().contains("peer runs as uid 65534"),
    );
    // The daemon is unharmed.
    assert!(env.run(&["daemon", "status"]).status.success());
}

/// Provider keys leave the daemon's process environment (`/proc/<pid>/environ` keeps what
/// a process had at exec, for a tool to read) and stay usable from memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_keeps_no_provider_key_in_its_environment() {
    use stepper_e2e::fake_llm::FAKE_KEY;
    use stepper_protocol::methods::{SessionCreate, SessionCreateParams};
    let env = TestEnv::new();
    env.start_daemon();
    let pid = env.daemon_pid().expect("a running daemon");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(
        !environ.contains(FAKE_KEY),
        "the key is in the daemon's environ"
    );
    assert!(
        environ.contains("STEPPER_HOME="),
        "the rest stays: {environ}"
    );
    // A client without the key: the daemon's own, kept in memory, still serves it.
    let client = env.client().await;
    let keyless: std::collections::BTreeMap<String, String> = env
        .envs()
        .into_iter()
        .filter(|(k, _)| !k.ends_with("_API_KEY"))
        .collect();
    env.fake
        .push(stepper_e2e::Reply::text(&["served by the daemon's key"]));
    let created = client
        .call::<SessionCreate>(SessionCreateParams {
            input_parts: Vec::new(),
            cwd: env.project.path().display().to_string(),
            env: keyless.into_iter().collect(),
            model: Some("anthropic/claude-sonnet-4-5".into()),
            title: None,
            record: None,
            mode: None,
            sandbox: None,
            input: Some("hello".into()),
            system_prompt: None,
            append_system_prompt: None,
        })
        .await
        .unwrap();
    let mut events = client
        .subscribe_events(&created.session.id, 0)
        .await
        .unwrap();
    let done = stepper_e2e::until_turn_finished(&mut events).await;
    assert!(
        matches!(
            done.last().map(|e| &e.event),
            Some(stepper_protocol::AppEvent::TurnFinished {
                status: stepper_protocol::TurnStatus::Completed,
                ..
            })
        ),
        "{done:#?}"
    );
}
