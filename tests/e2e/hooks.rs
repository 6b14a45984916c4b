//! Hooks in Claude Code's format (`setting.json`'s `hooks`), run by the daemon: fixtures as a
//! Claude Code user writes them — shell scripts reading the event's JSON on stdin, answering
//! by exit code or JSON on stdout.

use std::os::unix::fs::PermissionsExt;
use std::process::Output;

use serde_json::{Value, json};
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{Reply, TestEnv, stream_json};
use stepper_protocol::{AppEvent, ToolCallStatus};

/// A hook script in the project's `.stepper/hooks/`, and `hooks` in its settings.
fn setup(env: &TestEnv, scripts: &[(&str, &str)], hooks: Value) {
    let dir = env.project.path().join(".stepper/hooks");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, body) in scripts {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(
        env.project.path().join(".stepper/setting.json"),
        json!({"hooks": hooks}).to_string(),
    )
    .unwrap();
    // The user's own project: its hooks run.
    env.trust_project();
}

fn hook(command: &str) -> Value {
    json!({"type": "command", "command": format!("\"$CLAUDE_PROJECT_DIR\"/.stepper/hooks/{command}")})
}

fn ask(env: &TestEnv, args: &[&str]) -> (Output, Vec<stepper_protocol::EventEnvelope>) {
    let mut all = vec!["ask", "--format", "stream-json"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        env.daemon_log()
    );
    let events = stream_json(&out);
    (out, events)
}

fn hook_runs(events: &[stepper_protocol::EventEnvelope]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::HookRan { event, outcome, .. } => {
                Some((event.to_string(), outcome.to_string()))
            }
            _ => None,
        })
        .collect()
}

/// What the model was given back for its tool call, in the second request.
fn tool_result(env: &TestEnv) -> String {
    let requests = env.fake.requests();
    let last = requests.last().unwrap();
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["type"] == "tool_result")
        .map(|c| c["content"].to_string())
        .collect()
}

#[test]
fn a_pre_tool_use_hook_blocks_rm_and_its_reason_reaches_the_model() {
    let env = TestEnv::new();
    std::fs::write(env.project.path().join("keep.txt"), "precious").unwrap();
    setup(
        &env,
        &[(
            "no-rm.sh",
            r#"input=$(cat)
case "$input" in
  *'"command":"rm '*) echo "rm is not allowed in this project; move files to trash/ instead" >&2; exit 2;;
esac
exit 0"#,
        )],
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [hook("no-rm.sh")]}]}),
    );
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": "rm keep.txt"}),
    )])));
    env.fake.push(Reply::text(&["understood"]));
    let (_, events) = ask(&env, &["--yes", "clean up"]);
    assert!(
        env.project.path().join("keep.txt").exists(),
        "nothing removed"
    );
    assert_eq!(
        hook_runs(&events),
        [("PreToolUse".into(), "blocked".into())]
    );
    assert!(events.iter().any(|e| matches!(
        &e.event,
        AppEvent::ToolCallFinished {
            status: ToolCallStatus::Denied,
            ..
        }
    )));
    let result = tool_result(&env);
    assert!(result.contains("move files to trash/ instead"), "{result}");
}

#[test]
fn a_hook_rewrites_a_calls_input_and_another_allows_without_asking() {
    let env = TestEnv::new();
    let redirected = env.project.path().join("redirected.txt");
    setup(
        &env,
        &[
            (
                "redirect.sh",
                &format!(
                    r#"cat >/dev/null
echo '{{"hookSpecificOutput": {{"hookEventName": "PreToolUse", "updatedInput": {{"file_path": "{}"}}}}}}'"#,
                    redirected.display()
                ),
            ),
            (
                "allow.sh",
                r#"cat >/dev/null
echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "trusted"}}'"#,
            ),
        ],
        json!({"PreToolUse": [
            {"matcher": "Write", "hooks": [hook("redirect.sh")]},
            {"matcher": "Bash", "hooks": [hook("allow.sh")]}
        ]}),
    );
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "write",
        json!({"path": "asked-for.txt", "content": "hello"}),
    )])));
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t2",
        "bash",
        json!({"command": "touch made-by-bash.txt"}),
    )])));
    env.fake.push(Reply::text(&["done"]));
    // accept-edits lets the write through; the command would ask, but the hook allows it.
    let (_, events) = ask(&env, &["--mode", "accept-edits", "write and touch"]);
    assert_eq!(std::fs::read_to_string(&redirected).unwrap(), "hello");
    assert!(!env.project.path().join("asked-for.txt").exists());
    assert!(env.project.path().join("made-by-bash.txt").exists());
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.event, AppEvent::ApprovalRequested { .. })),
        "the hook's allow means nobody is asked: {events:#?}"
    );
}

#[test]
fn user_prompt_submit_adds_context_and_a_hung_hook_is_killed_at_its_timeout() {
    let env = TestEnv::new();
    let marker = format!("hung-hook-{}", std::process::id());
    setup(
        &env,
        &[
            (
                "context.sh",
                "cat >/dev/null\necho 'CONTEXT-FROM-HOOK: the build uses make'",
            ),
            ("hang.sh", "cat >/dev/null\nexec sh -c 'sleep 30; :' \"$1\""),
        ],
        json!({
            "UserPromptSubmit": [{"hooks": [hook("context.sh")]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": format!("\"$CLAUDE_PROJECT_DIR\"/.stepper/hooks/hang.sh {marker}"), "timeout": 1}
            ]}]
        }),
    );
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": "echo still-ran"}),
    )])));
    env.fake.push(Reply::text(&["ok"]));
    let started = std::time::Instant::now();
    let (_, events) = ask(&env, &["--yes", "build it"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let system = env.fake.requests()[0]["system"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(system.contains("CONTEXT-FROM-HOOK"), "{system}");
    let runs = hook_runs(&events);
    assert!(
        runs.contains(&("UserPromptSubmit".into(), "ok".into())),
        "{runs:?}"
    );
    assert!(
        runs.contains(&("PreToolUse".into(), "timeout".into())),
        "{runs:?}"
    );
    // A hook that hangs blocks nothing: the call ran.
    assert!(tool_result(&env).contains("still-ran"));
    assert!(
        stepper_process::testing::processes_with(&marker).is_empty(),
        "the hung hook's process is gone"
    );
}

#[test]
fn a_prompt_blocked_by_a_hook_and_a_broken_hook_setting() {
    let env = TestEnv::new();
    setup(
        &env,
        &[(
            "gate.sh",
            "cat >/dev/null\necho 'prompts about secrets are not sent' >&2\nexit 2",
        )],
        json!({
            "UserPromptSubmit": [{"hooks": [hook("gate.sh")]}],
            "OnFullMoon": [{"hooks": [hook("gate.sh")]}]
        }),
    );
    let out = env.run(&["ask", "--format", "stream-json", "tell me the secrets"]);
    let events = stream_json(&out);
    assert!(env.fake.requests().is_empty(), "the model is not called");
    let finished = events
        .iter()
        .find_map(|e| match &e.event {
            AppEvent::TurnFinished { error, .. } => Some(error.clone().unwrap_or_default()),
            _ => None,
        })
        .unwrap();
    assert!(
        finished.contains("prompts about secrets are not sent"),
        "{finished}"
    );
    assert!(
        events.iter().any(|e| matches!(&e.event,
            AppEvent::Notice { message } if message.contains("OnFullMoon"))),
        "{events:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_stops_a_running_hook() {
    let env = TestEnv::new();
    let marker = format!("interrupted-hook-{}", std::process::id());
    setup(
        &env,
        &[("hang.sh", "cat >/dev/null\nexec sh -c 'sleep 60; :' \"$1\"")],
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": format!("\"$CLAUDE_PROJECT_DIR\"/.stepper/hooks/hang.sh {marker}")}
        ]}]}),
    );
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": "touch never.txt"}),
    )])));
    env.fake.push(Reply::text(&["unused"]));
    env.start_daemon();
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(stepper_protocol::PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    stepper_e2e::submit(&client, &id, "go").await;
    stepper_e2e::wait_until_async(
        "the hook to run",
        std::time::Duration::from_secs(20),
        || {
            let marker = marker.clone();
            async move { !stepper_process::testing::processes_with(&marker).is_empty() }
        },
    )
    .await;
    let started = std::time::Instant::now();
    client
        .call::<stepper_protocol::methods::SessionInterrupt>(
            stepper_protocol::methods::SessionParams {
                session_id: id.clone(),
            },
        )
        .await
        .unwrap();
    let seen = stepper_e2e::until_turn_finished(&mut events).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(
        matches!(
            seen.last().map(|e| &e.event),
            Some(AppEvent::TurnFinished {
                status: stepper_protocol::TurnStatus::Interrupted,
                ..
            })
        ),
        "{seen:#?}"
    );
    assert!(stepper_process::testing::processes_with(&marker).is_empty());
    assert!(!env.project.path().join("never.txt").exists());
}

/// `SessionEnd` hooks run when `stepper ask` ends its use of a session (`reason: other`, as
/// for `claude -p`), once per use, and when the session is deleted.
#[test]
fn session_end_hooks_run_when_an_ask_ends_and_when_a_session_is_deleted() {
    let env = TestEnv::new();
    let ended = env.project.path().join("ended.jsonl");
    setup(
        &env,
        &[(
            "ended.sh",
            "cat >> \"$CLAUDE_PROJECT_DIR/ended.jsonl\"; echo >> \"$CLAUDE_PROJECT_DIR/ended.jsonl\"",
        )],
        json!({"SessionEnd": [{"hooks": [hook("ended.sh")]}]}),
    );
    let inputs = || -> Vec<Value> {
        std::fs::read_to_string(&ended)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let wait_for = |n: usize| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while inputs().len() < n {
            assert!(
                std::time::Instant::now() < deadline,
                "{n} SessionEnd runs expected: {:#?}\n{}",
                inputs(),
                env.daemon_log()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    env.fake.push(Reply::text(&["hi"]));
    let (_, events) = ask(&env, &["hello"]);
    let id = events[0].session_id.to_string();
    wait_for(1);
    env.fake.push(Reply::text(&["again"]));
    ask(&env, &["--session", &id, "more"]);
    wait_for(2);
    let out = env.run(&["sessions", "rm", &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let inputs = inputs();
    assert_eq!(inputs.len(), 3, "two uses and a deletion: {inputs:#?}");
    for input in &inputs {
        assert_eq!(input["hook_event_name"], "SessionEnd");
        assert_eq!(input["session_id"], id.as_str());
        assert_eq!(input["reason"], "other");
    }
}

/// `PostToolUse` hooks get `tool_response` in Claude Code's shape: an object with `stdout`
/// for Bash, `filePath` for the file tools — what hooks written for Claude Code read.
#[test]
fn post_tool_use_hooks_get_claude_codes_tool_response() {
    let env = TestEnv::new();
    let seen = env.project.path().join("seen");
    setup(
        &env,
        &[(
            "record.sh",
            &format!("cat >> {}; echo >> {}", seen.display(), seen.display()),
        )],
        json!({"PostToolUse": [{"matcher": "Bash|Write", "hooks": [hook("record.sh")]}]}),
    );
    env.fake.push(Reply::Sse(tool_use_stream(&[
        ("t1", "bash", json!({"command": "echo FROM-BASH"})),
        (
            "t2",
            "write",
            json!({"path": "notes.txt", "content": "NOTE\n"}),
        ),
    ])));
    env.fake.push(Reply::text(&["done"]));
    ask(&env, &["--yes", "do two things"]);
    let inputs: Vec<Value> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let bash = inputs
        .iter()
        .find(|i| i["tool_name"] == "Bash")
        .expect("the Bash call's hook input");
    assert!(
        bash["tool_response"]["stdout"]
            .as_str()
            .is_some_and(|s| s.contains("FROM-BASH")),
        "{bash}"
    );
    assert_eq!(bash["tool_response"]["interrupted"], false);
    let write = inputs
        .iter()
        .find(|i| i["tool_name"] == "Write")
        .expect("the Write call's hook input");
    let path = write["tool_response"]["filePath"].as_str().unwrap_or("");
    assert!(path.ends_with("notes.txt"), "{write}");
    assert_eq!(write["tool_response"]["content"], "NOTE\n");
}

/// `Stop` hooks get the reply the turn ends on as `last_assistant_message`, as Claude Code
/// gives it.
#[test]
fn stop_hooks_get_the_last_assistant_message() {
    let env = TestEnv::new();
    let seen = env.project.path().join("stop.json");
    setup(
        &env,
        &[("stop.sh", &format!("cat > {}", seen.display()))],
        json!({"Stop": [{"hooks": [hook("stop.sh")]}]}),
    );
    env.fake.push(Reply::text(&["all ", "done here"]));
    ask(&env, &["finish up"]);
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "Stop");
    assert_eq!(input["stop_hook_active"], false);
    assert_eq!(input["last_assistant_message"], "all done here");
}

/// `transcript_path` is the session's transcript in Claude Code's format: when the `Stop`
/// hook runs it already holds the turn's prompt and reply, one JSON object a line chained by
/// `parentUuid`; deleting the session removes it.
#[test]
fn hooks_get_a_transcript_in_claude_codes_format() {
    let env = TestEnv::new();
    let seen = env.project.path().join("stop.json");
    let copy = env.project.path().join("copy.jsonl");
    setup(
        &env,
        &[(
            "stop.sh",
            &format!(
                r#"input=$(cat)
printf '%s' "$input" > {}
path=$(printf '%s' "$input" | sed 's/.*"transcript_path":"\([^"]*\)".*/\1/')
cp "$path" {}"#,
                seen.display(),
                copy.display()
            ),
        )],
        json!({"Stop": [{"hooks": [hook("stop.sh")]}]}),
    );
    env.fake.push(Reply::text(&["the answer ", "is 42"]));
    let (_, events) = ask(&env, &["what is the answer?"]);
    let id = events[0].session_id.to_string();
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    let path = std::path::PathBuf::from(input["transcript_path"].as_str().unwrap());
    assert!(path.is_absolute() && path.exists(), "{input}");
    assert!(path.ends_with(format!("transcripts/{id}.jsonl")), "{input}");
    let lines: Vec<Value> = std::fs::read_to_string(&copy)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:#?}");
    let (user, assistant) = (&lines[0], &lines[1]);
    assert_eq!(user["type"], "user");
    assert_eq!(user["message"]["role"], "user");
    assert_eq!(user["message"]["content"], "what is the answer?");
    assert_eq!(user["sessionId"], id.as_str());
    assert_eq!(assistant["type"], "assistant");
    assert_eq!(assistant["message"]["role"], "assistant");
    assert_eq!(assistant["message"]["content"][0]["type"], "text");
    assert_eq!(
        assistant["message"]["content"][0]["text"],
        "the answer is 42"
    );
    assert_eq!(assistant["parentUuid"], user["uuid"]);
    for line in &lines {
        assert!(
            line["uuid"].is_string() && line["timestamp"].is_string(),
            "{line}"
        );
        assert_eq!(line["cwd"], input["cwd"]);
    }
    let out = env.run(&["sessions", "rm", &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!path.exists(), "a deleted session's transcript stays");
}

/// The TUI leaving a session (Ctrl-D, `/exit`, `/detach`) ends its use: `SessionEnd` runs
/// once, with `reason: prompt_input_exit` as when a Claude Code user quits at the prompt.
#[test]
fn session_end_hooks_run_when_the_tui_detaches() {
    if !stepper_e2e::Tmux::available() {
        return;
    }
    let env = TestEnv::new();
    let ended = env.project.path().join("ended.jsonl");
    setup(
        &env,
        &[(
            "ended.sh",
            "cat >> \"$CLAUDE_PROJECT_DIR/ended.jsonl\"; echo >> \"$CLAUDE_PROJECT_DIR/ended.jsonl\"",
        )],
        json!({"SessionEnd": [{"hooks": [hook("ended.sh")]}]}),
    );
    env.start_daemon();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let id = runtime.block_on(async { env.create_session(&env.client().await, None).await });
    let tmux = stepper_e2e::Tmux::new(&env);
    let pane = tmux.shell();
    pane.run(&format!("stepper attach {id}; echo \"attach exited $?\""));
    let short = stepper_protocol::session::short_ids(&[&id]);
    let status = format!(" · {} · ", short[0]);
    pane.wait_for_history("the TUI's status line", |h| h.contains(&status));
    pane.press("C-d");
    pane.wait_for_text("attach exited 0");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let input: Value = loop {
        let text = std::fs::read_to_string(&ended).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| !l.trim().is_empty()) {
            break serde_json::from_str(line).unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no SessionEnd after the TUI left\n{}",
            env.daemon_log()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(input["hook_event_name"], "SessionEnd");
    assert_eq!(input["session_id"], id.as_str());
    assert_eq!(input["reason"], "prompt_input_exit");
}

/// `continue: false` from a `PostToolUse` hook ends the turn after the call, its
/// `stopReason` said to the user, with no further model call; from a `Stop` hook it wins
/// over a `decision: block` of another — as Claude Code does.
#[test]
fn continue_false_ends_the_turn_after_a_tool_and_wins_at_stop() {
    let env = TestEnv::new();
    setup(
        &env,
        &[
            (
                "halt.sh",
                r#"cat > /dev/null; echo '{"continue": false, "stopReason": "the build is red, look first"}'"#,
            ),
            (
                "again.sh",
                r#"cat > /dev/null; echo '{"decision": "block", "reason": "keep going"}'"#,
            ),
        ],
        json!({
            "PostToolUse": [{"matcher": "Bash", "hooks": [hook("halt.sh")]}],
            "Stop": [{"hooks": [hook("again.sh"), hook("halt.sh")]}],
        }),
    );
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": "echo built"}),
    )])));
    let (_, events) = ask(&env, &["--yes", "build it"]);
    assert_eq!(env.fake.requests().len(), 1, "no model call after the hook");
    assert!(
        events.iter().any(|e| matches!(
            &e.event,
            AppEvent::Notice { message } if message.contains("the build is red, look first")
        )),
        "{events:#?}"
    );

    // A turn that ends on its own: the Stop hook that says stop wins over the one that
    // says go on.
    env.fake.push(Reply::text(&["finished"]));
    env.fake.push(Reply::text(&["kept going"]));
    let id = events[0].session_id.to_string();
    ask(&env, &["--session", &id, "and now?"]);
    assert_eq!(
        env.fake.requests().len(),
        2,
        "one more call, not a kept-going one"
    );
}

/// Claude Code's `Setup` event (fired only by `claude --init`/`--maintenance`) is accepted:
/// a session in the folder runs without a notice and without running it, and
/// `config --validate` warns that it never runs, saying what to use instead.
#[test]
fn setup_hooks_are_accepted_and_config_validate_says_they_never_run() {
    let env = TestEnv::new();
    let marker = env.project.path().join("set-up");
    setup(
        &env,
        &[("setup.sh", &format!("cat > {}", marker.display()))],
        json!({"Setup": [{"matcher": "init", "hooks": [hook("setup.sh")]}]}),
    );
    env.fake.push(Reply::text(&["hi"]));
    let (_, events) = ask(&env, &["hello"]);
    assert!(
        !events.iter().any(|e| matches!(&e.event,
            AppEvent::Notice { message } if message.contains("Setup"))),
        "{events:#?}"
    );
    assert!(!marker.exists(), "Setup never fires in a session");
    let out = env.run(&["config", "--validate"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "a warning alone passes: {said}");
    assert!(
        said.contains("warning: Setup hooks are accepted and never run"),
        "{said}"
    );
    assert!(said.contains("SessionStart"), "{said}");
}

/// `additionalContext` from a `PreToolUse` hook reaches the model with the call's result.
#[test]
fn pre_tool_use_context_reaches_the_model_with_the_result() {
    let env = TestEnv::new();
    setup(
        &env,
        &[(
            "note.sh",
            r#"cat > /dev/null; echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "this repository builds with pnpm"}}'"#,
        )],
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [hook("note.sh")]}]}),
    );
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": "echo ran"}),
    )])));
    env.fake.push(Reply::text(&["ok"]));
    ask(&env, &["--yes", "build"]);
    let result = tool_result(&env);
    assert!(result.contains("ran"), "{result}");
    assert!(
        result.contains("this repository builds with pnpm"),
        "{result}"
    );
}

/// `PermissionRequest` as Claude Code answers it: `allow` with `updatedInput` runs the call
/// changed, nobody asked; `deny` with `interrupt` refuses it and ends the turn at once.
/// `SubagentStart`'s `additionalContext` reaches the subagent.
#[test]
fn permission_request_hooks_change_a_call_or_end_the_turn_and_subagent_start_adds_context() {
    let env = TestEnv::new();
    setup(
        &env,
        &[
            (
                "permission.sh",
                r#"input=$(cat)
case "$input" in
  *'touch asked.txt'*) echo '{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow", "updatedInput": {"command": "touch changed.txt"}}}}';;
  *'touch stop.txt'*) echo '{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "not on a Friday", "interrupt": true}}}';;
esac
exit 0"#,
            ),
            (
                "subagent.sh",
                r#"cat > /dev/null; echo '{"hookSpecificOutput": {"hookEventName": "SubagentStart", "additionalContext": "SUBAGENT-CONTEXT-FROM-HOOK"}}'"#,
            ),
        ],
        json!({
            "PermissionRequest": [{"matcher": "Bash", "hooks": [hook("permission.sh")]}],
            "SubagentStart": [{"hooks": [hook("subagent.sh")]}],
        }),
    );
    // The command would ask; the hook allows it changed.
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": "touch asked.txt"}),
    )])));
    env.fake.push(Reply::text(&["done"]));
    let (_, events) = ask(&env, &["make the file"]);
    assert!(
        env.project.path().join("changed.txt").exists(),
        "{events:#?}"
    );
    assert!(!env.project.path().join("asked.txt").exists());
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.event, AppEvent::ApprovalRequested { .. })),
        "nobody was asked"
    );
    // The call as it ran is what clients see finish.
    assert!(events.iter().any(|e| matches!(
        &e.event,
        AppEvent::ToolCallFinished {
            status: ToolCallStatus::Ok,
            ..
        }
    )));

    // Denied with interrupt: no model call after it.
    let before = env.fake.requests().len();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t2",
        "bash",
        json!({"command": "touch stop.txt"}),
    )])));
    env.fake.push(Reply::text(&["should never be asked for"]));
    let id = events[0].session_id.to_string();
    let (_, events) = ask(&env, &["--session", &id, "and another"]);
    assert!(!env.project.path().join("stop.txt").exists());
    assert_eq!(env.fake.requests().len(), before + 1, "{events:#?}");
    assert!(events.iter().any(|e| matches!(
        &e.event,
        AppEvent::ToolCallFinished { status: ToolCallStatus::Denied, output, .. }
            if output.contains("not on a Friday")
    )));

    // A subagent gets what SubagentStart adds.
    std::fs::write(
        env.project.path().join(".stepper/setting.json"),
        json!({"dispatch": true, "hooks": {
            "SubagentStart": [{"hooks": [hook("subagent.sh")]}],
            "SubagentStop": [{"hooks": [{"type": "command",
                "command": "cat > \"$CLAUDE_PROJECT_DIR\"/subagent-stop.json"}]}],
        }})
        .to_string(),
    )
    .unwrap();
    let start = env.fake.requests().len();
    // (Ahead of the reply the interrupted turn never asked for, still queued.)
    env.fake.push_when(
        "send a helper",
        Reply::Sse(tool_use_stream(&[(
            "toolu_d",
            "dispatch",
            json!({"tasks": [{"task": "SUB-TASK: look around"}]}),
        )])),
    );
    env.fake.push_when("SUB-TASK", Reply::text(&["LOOKED"]));
    env.fake.push_when("toolu_d", Reply::text(&["all done"]));
    ask(&env, &["--session", &id, "send a helper"]);
    let requests = env.fake.requests().split_off(start);
    let sub = requests
        .iter()
        .find(|r| r["messages"].to_string().contains("SUB-TASK: look around"))
        .unwrap_or_else(|| {
            let lasts: Vec<String> = requests
                .iter()
                .map(|r| {
                    r["messages"]
                        .as_array()
                        .unwrap()
                        .last()
                        .unwrap()
                        .to_string()
                })
                .collect();
            panic!("no subagent's request in {lasts:#?}")
        });
    assert!(
        sub["system"]
            .to_string()
            .contains("SUBAGENT-CONTEXT-FROM-HOOK"),
        "{sub}"
    );
    let main = requests.first().unwrap();
    assert!(!main.to_string().contains("SUBAGENT-CONTEXT-FROM-HOOK"));
    // SubagentStop names the subagent and its own transcript, in Claude Code's format.
    let stop: Value = serde_json::from_str(
        &std::fs::read_to_string(env.project.path().join("subagent-stop.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(stop["hook_event_name"], "SubagentStop");
    assert_eq!(stop["agent_type"], "general", "{stop}");
    assert!(
        stop["agent_id"]
            .as_str()
            .is_some_and(|a| a.starts_with("agent-"))
    );
    let side = std::fs::read_to_string(stop["agent_transcript_path"].as_str().unwrap())
        .unwrap_or_else(|e| panic!("{stop}: {e}"));
    let lines: Vec<Value> = side
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "user");
    assert!(
        lines[0]["message"]["content"]
            .as_str()
            .unwrap()
            .contains("SUB-TASK")
    );
    assert!(
        lines
            .iter()
            .all(|l| l["isSidechain"] == true && l["agentId"] == stop["agent_id"])
    );
    assert!(side.contains("LOOKED"), "{side}");
    let main_transcript =
        std::fs::read_to_string(stop["transcript_path"].as_str().unwrap()).unwrap();
    // The session's own holds the dispatch and its result, not the subagent's steps.
    assert!(
        main_transcript
            .lines()
            .all(|l| serde_json::from_str::<Value>(l).unwrap()["isSidechain"] == false),
        "{main_transcript}"
    );
}
