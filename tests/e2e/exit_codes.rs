//! The daemon's error kinds as clients get them, and `stepper`'s exit code for an error a
//! command did not code itself, which comes from that kind (client-cli/src/exit.rs):
//! scripts branch on it, and the daemon's hint is printed under the message.

use stepper_e2e::TestEnv;
use stepper_e2e::output::stderr;

/// A port on 127.0.0.1 nothing listens on: a connection to it is refused at once.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn a_provider_that_cannot_be_reached_exits_3_with_the_daemons_hint() {
    let env = TestEnv::new();
    env.start_daemon();
    let url = format!("http://127.0.0.1:{}/v1", closed_port());
    let out = env.run(&["auth", "login", "--local", &url]);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(said.contains(&url), "{said}");
    assert!(said.contains("\n  hint: 'providers/status'"), "{said}");
}

#[test]
fn a_name_the_daemon_does_not_know_exits_1_with_the_daemons_hint() {
    let env = TestEnv::new();
    env.start_daemon();
    let out = env.run(&["mcp", "login", "nope"]);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("there is no MCP server \"nope\" here"),
        "{said}"
    );
    assert!(
        said.contains("\n  hint: 'mcp/list' (or 'stepper mcp list')"),
        "{said}"
    );
}

#[test]
fn a_daemon_that_does_not_answer_the_handshake_exits_5() {
    let env = TestEnv::new();
    // Something else holds the daemon's socket: it takes connections and drops them.
    let socket = env.places().socket;
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let accepting = std::thread::spawn({
        let done = done.clone();
        move || {
            for stream in listener.incoming() {
                if done.load(std::sync::atomic::Ordering::SeqCst) || stream.is_err() {
                    return;
                }
            }
        }
    });
    let out = env.run(&["sessions"]);
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    // One more connection wakes the listener to see that it is done.
    let _ = std::os::unix::net::UnixStream::connect(&socket);
    accepting.join().unwrap();
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(5), "{said}");
    assert!(said.starts_with("stepper: "), "{said}");
}

#[test]
fn a_value_the_daemon_refuses_from_the_command_line_exits_2() {
    let env = TestEnv::new();
    env.start_daemon();
    let out = env.run(&["mcp", "add", "two__parts", "--", "server"]);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("a server's name is letters, digits"),
        "{said}"
    );
    // Nothing was written.
    assert!(!env.places().config_dir.join("setting.json").exists());
}

/// A trust file that is not JSON is the settings' problem (the message names the file),
/// not the call's params.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_trust_file_is_bad_settings_not_invalid_params() {
    use stepper_protocol::error::{BAD_SETTINGS, ErrorKind};
    use stepper_protocol::methods::{Empty, TrustList};
    let env = TestEnv::new();
    let config = env.places().config_dir;
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("trust.json"), "{ not json").unwrap();
    env.start_daemon();
    let client = env.client().await;
    let e = client.call::<TrustList>(Empty {}).await.unwrap_err();
    assert_eq!(
        (e.kind(), e.code()),
        (Some(ErrorKind::Settings), Some(BAD_SETTINGS)),
        "{e}"
    );
    assert!(e.to_string().contains("trust.json"), "{e}");
}
