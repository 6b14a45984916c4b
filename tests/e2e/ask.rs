//! `stepper ask` as a user and a script run it.

use std::io::Write;
use std::process::Stdio;

use stepper_e2e::fake_llm::fixture;
use stepper_e2e::output::{stderr, stdout};
use stepper_e2e::{Reply, TestEnv};
use stepper_protocol::methods::AskResult;
use stepper_protocol::{AppEvent, EventEnvelope, TurnStatus};

#[test]
fn text_format_prints_the_answer_and_starts_the_daemon() {
    let env = TestEnv::new();
    assert!(env.daemon_pid().is_none());
    let out = env.run(&["ask", "say hello"]);
    assert!(
        out.status.success(),
        "stderr: {}\nlog: {}",
        stderr(&out),
        env.daemon_log()
    );
    assert_eq!(stdout(&out), "Hello, world! ✓\n");
    assert!(env.daemon_pid().is_some(), "ask started the daemon");

    // The request the provider saw: the prompt, the model, streaming.
    let requests = env.fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["model"], "claude-sonnet-4-5");
    assert_eq!(
        requests[0]["messages"][0]["content"][0]["text"],
        "say hello"
    );
}

#[test]
fn json_format_prints_one_object() {
    let env = TestEnv::new();
    env.fake.push(Reply::Sse(fixture("thinking.sse")));
    let out = env.run(&[
        "ask",
        "--format",
        "json",
        "--model",
        "anthropic/claude-opus-4-1",
        "27*453?",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 1, "exactly one line: {lines:?}");
    let result: AskResult = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(result.status, TurnStatus::Completed);
    assert_eq!(result.text, "27 * 453 = 12,231");
    assert_eq!(result.usage.input_tokens, 40);
    assert_eq!(result.usage.output_tokens, 21);
    assert_eq!(result.usage.cache_read_tokens, 2048);
    assert_eq!(result.usage.cache_write_tokens, 12);
    assert_eq!(env.fake.requests()[0]["model"], "claude-opus-4-1");
}

#[test]
fn stream_json_prints_every_event_in_order() {
    let env = TestEnv::new();
    let out = env.run(&["ask", "--format", "stream-json", "hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<EventEnvelope> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "gap-free from 1"
    );
    let kinds: Vec<&str> = events.iter().map(|e| e.event.kind()).collect();
    assert_eq!(kinds.first(), Some(&"SessionCreated"));
    assert_eq!(kinds.last(), Some(&"TurnFinished"));
    for needed in [
        "InputQueued",
        "TurnStarted",
        "TextDelta",
        "MessageCompleted",
        "UsageUpdated",
    ] {
        assert!(kinds.contains(&needed), "{needed} missing from {kinds:?}");
    }
    let text: String = events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Hello, world! ✓");
    assert!(events.iter().all(|e| e.session_id == events[0].session_id));
}

#[test]
fn prompt_from_stdin() {
    let env = TestEnv::new();
    let mut child = env
        .stepper()
        .arg("ask")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from a pipe\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        env.fake.requests()[0]["messages"][0]["content"][0]["text"],
        "from a pipe\n"
    );
}

#[test]
fn no_key_is_a_clear_error_and_no_request_is_sent() {
    let env = TestEnv::new();
    // Asked for by name, a provider without its key is refused before any request.
    let out = env
        .stepper()
        .args(["ask", "--model", "anthropic/claude-sonnet-4-5", "hi"])
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "the provider's exit code: {}",
        stderr(&out)
    );
    insta::assert_snapshot!(env.normalized(&out));
    assert!(env.fake.requests().is_empty());
}

#[test]
fn provider_errors_fail_the_turn_with_the_reason() {
    let env = TestEnv::new();
    env.fake.push(Reply::status(400, "max_tokens: too large"));
    let out = env.run(&["ask", "hi"]);
    assert_eq!(out.status.code(), Some(3), "the provider's exit code");
    insta::assert_snapshot!("refused_by_the_provider", env.normalized(&out));

    // A stream that reports an error midway keeps the partial text.
    env.fake.push(Reply::Sse(fixture("overloaded.sse")));
    let out = env.run(&["ask", "--format", "json", "hi"]);
    assert_eq!(out.status.code(), Some(3));
    let result: AskResult = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result.status, TurnStatus::Failed);
    assert_eq!(
        result.error_kind,
        Some(stepper_protocol::TurnErrorKind::Provider)
    );
    assert_eq!(result.text, "Partial ans");
    assert!(result.error.unwrap().contains("Overloaded"));
}

#[test]
fn bad_input_gets_a_clear_error() {
    let env = TestEnv::new();
    insta::assert_snapshot!(
        "not_a_model",
        env.shown(&["ask", "--model", "not a model", "hi"])
    );
    insta::assert_snapshot!("an_empty_prompt", env.shown(&["ask", "   "]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_interrupts_the_turn_and_keeps_the_partial_answer() {
    use stepper_e2e::Gate;
    let env = TestEnv::new();
    env.start_daemon();
    let gate = Gate::new();
    env.fake.push(Reply::held(&["so far"], &gate));
    let ask = env
        .stepper()
        .args(["ask", "--format", "json", "long"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    env.running_session(5).await;
    let pid = nix::unistd::Pid::from_raw(ask.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = ask.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    let result: AskResult = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result.status, TurnStatus::Interrupted);
    assert_eq!(result.text, "so far");
    // The daemon is free for the next turn at once.
    gate.open();
    let out = env.run(&["ask", "next"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn the_api_key_never_reaches_disk() {
    let env = TestEnv::new();
    let out = env
        .stepper()
        .args(["ask", "hi"])
        .env("GITHUB_TOKEN", "ghp_secretvalue42")
        .output()
        .unwrap();
    assert!(out.status.success());
    // Stop the daemon so the WAL is checkpointed and the log flushed, then read every file.
    assert!(env.run(&["daemon", "stop"]).status.success());
    let mut checked = 0;
    for path in stepper_e2e::files_under(env.home.path()) {
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for secret in [stepper_e2e::fake_llm::FAKE_KEY, "ghp_secretvalue42"] {
            assert!(
                !text.contains(secret),
                "{secret} found in {}",
                path.display()
            );
        }
        checked += 1;
    }
    assert!(checked >= 3, "the store and the log were read");
}

#[test]
fn a_prompt_over_the_limit_is_refused_and_leaves_no_session() {
    let env = TestEnv::new();
    env.start_daemon();
    let mut child = env
        .stepper()
        .arg("ask")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Over the input limit (4 MiB) and the transport's message limit (32 MiB) alike. ask
    // stops reading once it is over, so the rest may find the pipe closed.
    let written = stdin.write_all(&vec![b'x'; 40 * 1024 * 1024]);
    assert!(
        written.is_ok()
            || written
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe),
        "{written:?}"
    );
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let said = stderr(&out);
    assert!(said.contains("4194304"), "names the limit: {said}");
    assert!(env.fake.requests().is_empty());
    let listed = env.run(&["sessions", "--json"]);
    assert_eq!(
        stdout(&listed).trim(),
        "[]",
        "no empty session is left behind"
    );
}

/// A reader that goes away (`stepper sessions | head`) ends the command quietly: no panic,
/// exit 0, as a Unix tool killed by SIGPIPE would be.
#[test]
fn a_closed_stdout_ends_a_command_quietly() {
    let env = TestEnv::new();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = env
        .stepper()
        .args(["sessions"])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(!said.contains("panicked"), "{said}");
}
