//! What a session's tools get from its environment: no provider key unless settings pass
//! it on, never a key in what they print, and a PATH that cannot reach into the project.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;
use stepper_e2e::fake_llm::{FAKE_KEY, tool_use_stream};
use stepper_e2e::{Reply, TestEnv};
use stepper_protocol::methods::AskResult;
use stepper_protocol::{AppEvent, EventEnvelope};

fn stream_json(out: &std::process::Output) -> Vec<EventEnvelope> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn tool_output(events: &[EventEnvelope]) -> String {
    let mut text = String::new();
    for e in events {
        match &e.event {
            AppEvent::ToolOutputDelta { text: t, .. } => text.push_str(t),
            AppEvent::ToolCallFinished { output, .. } => {
                text.push_str("\n--finished--\n");
                text.push_str(output);
            }
            _ => {}
        }
    }
    text
}

#[test]
fn provider_keys_stay_out_of_tools_and_their_output() {
    let env = TestEnv::new();
    // A file that holds the key, as a config or a log might.
    std::fs::write(
        env.project.path().join("creds.txt"),
        format!("token={FAKE_KEY}\n"),
    )
    .unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": "echo \"var=[$ANTHROPIC_API_KEY]\"; env | grep -c API_KEY; cat creds.txt"}),
    )])));
    env.fake.push(Reply::text(&["done"]));
    let out = env
        .stepper()
        .args(["ask", "--yes", "--format", "stream-json", "look around"])
        .output()
        .unwrap();
    let events = stream_json(&out);
    let printed = tool_output(&events);
    assert!(
        printed.contains("var=[]"),
        "the key is not passed: {printed}"
    );
    assert!(
        printed.contains("\n0\n"),
        "no key variable at all: {printed}"
    );
    assert!(
        printed.contains("token=[redacted]"),
        "a key in a file is scrubbed, streamed and final: {printed}"
    );
    assert!(!printed.contains(FAKE_KEY), "{printed}");
    // Nor does it reach the provider with the tool's result.
    let requests = env.fake.requests();
    let second = requests.last().unwrap().to_string();
    assert!(second.contains("token=[redacted]"), "{second}");
    assert!(!second.contains(FAKE_KEY));
    // Nor the store.
    let session = events[0].session_id.clone();
    let export = env.run(&["sessions", "export", &session]);
    assert!(export.status.success());
    let export = String::from_utf8_lossy(&export.stdout);
    assert!(export.contains("token=[redacted]"));
    assert!(!export.contains(FAKE_KEY));

    // Settings can pass a key on (a script of the project that calls the API itself), in a
    // folder the user trusts.
    env.trust_project();
    std::fs::create_dir_all(env.project.path().join(".stepper")).unwrap();
    std::fs::write(
        env.project.path().join(".stepper/setting.json"),
        r#"{"passKeysToTools": ["ANTHROPIC_API_KEY"]}"#,
    )
    .unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t2",
        "bash",
        json!({"command": "test -n \"$ANTHROPIC_API_KEY\" && echo passed; echo \"$ANTHROPIC_API_KEY\""}),
    )])));
    env.fake.push(Reply::text(&["done"]));
    let out = env
        .stepper()
        .args([
            "ask",
            "--yes",
            "--format",
            "stream-json",
            "--session",
            &session,
            "again",
        ])
        .output()
        .unwrap();
    let printed = tool_output(&stream_json(&out));
    assert!(printed.contains("passed\n[redacted]"), "{printed}");
    assert!(!printed.contains(FAKE_KEY));
}

#[test]
fn without_a_path_tools_never_run_a_program_of_the_project() {
    let env = TestEnv::new();
    // A program of the project named like one that is not installed (as `rg` or `tree` may
    // not be); bash's built-in PATH ends in `.`.
    let marker = env.project.path().join("ran");
    let fake = env.project.path().join("stepper-absent-tool");
    std::fs::write(&fake, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": "stepper-absent-tool; echo \"path=$PATH\""}),
    )])));
    env.fake.push(Reply::text(&["done"]));
    let out = env
        .stepper()
        .env_remove("PATH")
        .args(["ask", "--yes", "--format", "json", "list the files"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: AskResult = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result.text, "done");
    assert!(!marker.exists(), "the project's tree ran");
    let second = env.fake.requests().last().unwrap().to_string();
    assert!(
        second.contains("path=/usr/local/bin:/usr/bin:/bin"),
        "{second}"
    );
}
