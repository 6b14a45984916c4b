//! What the model is told and given, per family, as requests to the fake: base instructions
//! and the environment without any memory file, each family's tool dialect, and the calls
//! of those dialects running through the gate, hooks and rewind. The normalized requests are
//! snapshots, so every change to the prompt or the tools shows in review.

use std::os::unix::fs::PermissionsExt;
use std::process::Output;

use serde_json::{Value, json};
use stepper_e2e::fake_llm::{chat_tool_calls_stream, responses_call_stream, tool_use_stream};
use stepper_e2e::{Reply, Route, TestEnv, stream_json};
use stepper_protocol::{AppEvent, ToolCallStatus};

fn ask(env: &TestEnv, args: &[&str]) -> Output {
    let mut all = vec!["ask", "--format", "stream-json"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        env.daemon_log()
    );
    out
}

/// A project that is a git repository with one commit, as most are.
fn git_project(env: &TestEnv) {
    let project = env.project.path();
    std::fs::write(project.join("a.txt"), "one\n").unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "a.txt"],
        &["commit", "-q", "-m", "start"],
    ] {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(project)
            .env("GIT_AUTHOR_NAME", "a")
            .env("GIT_AUTHOR_EMAIL", "a@example.com")
            .env("GIT_COMMITTER_NAME", "a")
            .env("GIT_COMMITTER_EMAIL", "a@example.com")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap()
}

fn tool_names(tools: &Value, key: &str) -> Vec<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t.pointer(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[test]
fn anthropic_gets_instructions_the_environment_and_claude_codes_tools() {
    let env = TestEnv::new();
    git_project(&env);
    ask(&env, &["hi"]);
    let request = env.fake.requests().remove(0);
    let system = request["system"].to_string();
    assert!(
        system.contains("You are stepper") && system.contains("# Environment"),
        "no memory file, yet instructions and the environment: {system}"
    );
    assert_eq!(
        tool_names(&request["tools"], "/name"),
        [
            "Bash",
            "Read",
            "Write",
            "Edit",
            "MultiEdit",
            "LS",
            "Glob",
            "Grep",
            "TodoWrite",
            "WebFetch"
        ]
    );
    let said = &request["messages"][0]["content"];
    assert_eq!(said[0]["text"], "hi");
    assert!(
        said[1]["text"]
            .as_str()
            .unwrap()
            .starts_with("<environment_context>"),
        "{said}"
    );
    insta::assert_snapshot!(
        "anthropic_plain_turn",
        pretty(&env.normalizer().request(&request))
    );

    // The next turn in the same session: nothing changed, so no new context is sent, and
    // the cached prefix (system, tools, the first turn) is byte for byte the same.
    let id = session_of(&env);
    env.fake.push(Reply::text(&["again"]));
    ask(&env, &["--session", &id, "and now?"]);
    let second = env.fake.requests().remove(1);
    assert_eq!(second["system"], request["system"]);
    assert_eq!(second["tools"], request["tools"]);
    let last = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"].as_array().unwrap().len(), 1, "{last}");
}

fn session_of(env: &TestEnv) -> String {
    let out = env.run(&["sessions", "--json"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    list.as_array()
        .and_then(|l| l.first())
        .or_else(|| list["sessions"].as_array().and_then(|l| l.first()))
        .and_then(|s| s["id"].as_str())
        .unwrap_or_else(|| panic!("no session in {list}"))
        .to_string()
}

#[test]
fn claude_codes_edit_runs_through_rules_hooks_and_rewind() {
    let env = TestEnv::new();
    let project = env.project.path();
    std::fs::write(project.join("a.txt"), "one\n").unwrap();
    std::fs::write(project.join("secret.txt"), "s\n").unwrap();
    let hooks = project.join(".stepper/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let log = project.join("hook.log");
    std::fs::write(
        hooks.join("log.sh"),
        format!(
            "#!/bin/sh\ncat >> {}\necho >> {}\n",
            log.display(),
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(hooks.join("log.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let settings = json!({
        "permissions": {"deny": ["Edit(secret.txt)"]},
        "hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": [
            {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.stepper/hooks/log.sh"}
        ]}]}
    });
    std::fs::write(project.join(".stepper/setting.json"), settings.to_string()).unwrap();
    env.trust_project();
    env.fake.push(Reply::Sse(tool_use_stream(&[
        (
            "t1",
            "Edit",
            json!({"file_path": project.join("a.txt"), "old_string": "one", "new_string": "two"}),
        ),
        (
            "t2",
            "Edit",
            json!({"file_path": "secret.txt", "old_string": "s", "new_string": "leaked"}),
        ),
    ])));
    env.fake.push(Reply::text(&["done"]));
    let out = ask(&env, &["--mode", "accept-edits", "change a"]);
    let events = stream_json(&out);
    let finished: Vec<(String, ToolCallStatus)> = events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::ToolCallStarted { tool, .. } => Some((tool.clone(), ToolCallStatus::Ok)),
            AppEvent::ToolCallFinished { status, .. } => Some((String::new(), *status)),
            _ => None,
        })
        .collect();
    assert!(
        finished.iter().any(|(t, _)| t == "edit"),
        "events name the internal tool: {finished:?}"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("a.txt")).unwrap(),
        "two\n"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("secret.txt")).unwrap(),
        "s\n",
        "the deny rule holds for Claude Code's Edit"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("\"tool_name\":\"Edit\"") && logged.contains("a.txt"),
        "{logged}"
    );
    let id = session_of(&env);
    let rewound = env.run(&["rewind", &id, "1"]);
    assert!(rewound.status.success(), "{rewound:?}");
    assert_eq!(
        std::fs::read_to_string(project.join("a.txt")).unwrap(),
        "one\n"
    );
}

#[test]
fn openai_gets_apply_patch_and_a_multi_file_patch_applies_and_rewinds() {
    let env = TestEnv::new();
    git_project(&env);
    let project = env.project.path();
    std::fs::create_dir(project.join("src")).unwrap();
    std::fs::write(project.join("src/lib.py"), "def f():\n    return 1\n").unwrap();
    std::fs::write(project.join("old.txt"), "bye\n").unwrap();
    let patch = "*** Begin Patch\n\
                 *** Update File: src/lib.py\n\
                 @@ def f():\n\
                 -    return 1\n\
                 +    return 2\n\
                 *** Add File: src/new.py\n\
                 +NEW = True\n\
                 *** Delete File: old.txt\n\
                 *** Update File: a.txt\n\
                 *** Move to: b.txt\n\
                 @@\n\
                 -one\n\
                 +uno\n\
                 *** End Patch";
    env.fake.push_to(
        Route::Responses,
        Reply::Sse(responses_call_stream(&[(
            "call_1",
            "apply_patch",
            json!({ "input": patch }),
        )])),
    );
    env.fake.push_to(
        Route::Responses,
        Reply::Sse(responses_call_stream(&[(
            "call_2",
            "shell",
            json!({"command": ["bash", "-lc", "cat src/lib.py"], "workdir": "."}),
        )])),
    );
    let out = ask(&env, &["--model", "openai/gpt-5.1", "--yes", "change it"]);
    let events = stream_json(&out);
    let tools: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::ToolCallStarted { tool, .. } => Some(tool.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(tools, ["apply_patch", "bash"]);
    assert_eq!(
        std::fs::read_to_string(project.join("src/lib.py")).unwrap(),
        "def f():\n    return 2\n"
    );
    assert!(project.join("src/new.py").exists() && !project.join("old.txt").exists());
    assert_eq!(
        std::fs::read_to_string(project.join("b.txt")).unwrap(),
        "uno\n"
    );
    assert!(!project.join("a.txt").exists());

    let seen = env.fake.seen(Route::Responses);
    let first = &seen[0].body;
    let names = tool_names(&first["tools"], "/name");
    assert!(
        names.contains(&"apply_patch".to_string())
            && names.contains(&"shell".to_string())
            && names.contains(&"update_plan".to_string()),
        "{names:?}"
    );
    assert!(!names.contains(&"edit".to_string()) && !names.contains(&"bash".to_string()));
    insta::assert_snapshot!(
        "openai_turn_with_a_patch",
        pretty(&env.normalizer().request(first))
    );
    // The shell's output reached the model as the call's result.
    let third = &seen[2].body.to_string();
    assert!(third.contains("return 2"), "{third}");

    let id = session_of(&env);
    let rewound = env.run(&["rewind", &id, "1"]);
    assert!(rewound.status.success(), "{rewound:?}");
    assert_eq!(
        std::fs::read_to_string(project.join("src/lib.py")).unwrap(),
        "def f():\n    return 1\n"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("a.txt")).unwrap(),
        "one\n"
    );
    assert!(project.join("old.txt").exists() && !project.join("b.txt").exists());
    assert!(!project.join("src/new.py").exists());
}

#[test]
fn a_local_model_gets_stepper_tools_and_the_same_instructions() {
    let env = TestEnv::new();
    let settings = json!({
        "providers": { "local": {
            "kind": "openai-chat",
            "baseUrl": format!("{}/v1", env.fake.url),
        }}
    });
    std::fs::write(
        env.places().config_dir.join("setting.json"),
        settings.to_string(),
    )
    .unwrap();
    ask(
        &env,
        &[
            "--model",
            "local/qwen3:8b",
            "--append-system-prompt",
            "Answer in French.",
            "hi",
        ],
    );
    let body = env.fake.seen(Route::Chat).remove(0).body;
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(system.contains("`todo_write`") && system.ends_with("Answer in French."));
    assert!(tool_names(&body["tools"], "/function/name").contains(&"edit".to_string()));
    insta::assert_snapshot!("local_plain_turn", pretty(&env.normalizer().request(&body)));
}

#[test]
fn a_system_prompt_replaces_the_base_and_layers_keep_theirs() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.project.path().join(".stepper")).unwrap();
    std::fs::write(
        env.project.path().join(".stepper/stepper.md"),
        "---\nname: plan\nbase-instructions: false\n---\nPlan only.\n\n---\nname: do\n---\nDo it.\n",
    )
    .unwrap();
    env.trust_project();
    env.fake.push(Reply::text(&["the plan"]));
    env.fake.push(Reply::text(&["done"]));
    ask(
        &env,
        &["--system-prompt", "You are a careful reviewer.", "go"],
    );
    let requests = env.fake.requests();
    let plan = requests[0]["system"].to_string();
    assert!(
        !plan.contains("You are a careful reviewer") && !plan.contains("You are stepper"),
        "base-instructions: false leaves the base out: {plan}"
    );
    assert!(plan.contains("Plan only.") && plan.contains("# Environment"));
    let act = requests[1]["system"].to_string();
    assert!(act.contains("You are a careful reviewer.") && !act.contains("You are stepper"));
    assert!(act.contains("Do it."));
    insta::assert_snapshot!(
        "layered_turn_second_layer",
        pretty(&env.normalizer().request(&requests[1]))
    );
}

#[test]
fn piped_text_goes_with_the_prompt() {
    use std::io::Write;
    let env = TestEnv::new();
    let mut child = env
        .stepper()
        .args(["ask", "--format", "json", "explain this code"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"def add(a, b):\n    return a + b\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let request = env.fake.requests().remove(0);
    let said = request["messages"][0]["content"].to_string();
    assert!(
        said.contains("explain this code")
            && said.contains("Piped to stdin")
            && said.contains("return a + b"),
        "{said}"
    );

    // Binary data is refused before any session exists.
    let mut child = env
        .stepper()
        .args(["ask", "what is this"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"\x7fELF\x00\x01\x02")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("binary data"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.fake.requests().len(), 1);
}

#[test]
fn the_providers_web_search_is_offered_only_where_the_rules_allow_it_unasked() {
    let env = TestEnv::new();
    ask(&env, &["hi"]);
    let hosted = |body: &Value| {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "web_search")
    };
    assert!(
        !hosted(&env.fake.requests()[0]),
        "default mode would have to ask, and a search at the provider cannot wait"
    );
    std::fs::write(
        env.places().config_dir.join("setting.json"),
        json!({"permissions": {"allow": ["WebSearch"]}}).to_string(),
    )
    .unwrap();
    env.fake.push(Reply::text(&["ok"]));
    ask(&env, &["hi again"]);
    let request = env.fake.requests().remove(1);
    let search = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "web_search")
        .expect("offered once the user allows WebSearch");
    assert_eq!(search["type"], "web_search_20250305");
    std::fs::write(
        env.places().config_dir.join("setting.json"),
        json!({"permissions": {"allow": ["WebSearch"], "deny": ["WebSearch"]}}).to_string(),
    )
    .unwrap();
    env.fake.push(Reply::text(&["ok"]));
    ask(&env, &["--yes", "and now"]);
    assert!(
        !hosted(&env.fake.requests()[2]),
        "a deny rule wins, even in auto"
    );
}

/// `promptCache: false` sends no cache breakpoints; by default the system prompt, the tools
/// and the conversation so far carry one each.
#[test]
fn the_prompt_cache_setting_turns_breakpoints_off() {
    let env = TestEnv::new();
    let out = ask(&env, &["hi"]);
    assert!(out.status.success(), "{out:?}");
    let cached = env.fake.requests().last().unwrap().to_string();
    assert_eq!(cached.matches("\"cache_control\"").count(), 3, "{cached}");

    let config = env.places().config_dir;
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("setting.json"), r#"{"promptCache": false}"#).unwrap();
    let out = ask(&env, &["hi again"]);
    assert!(out.status.success(), "{out:?}");
    let cold = env.fake.requests().last().unwrap().to_string();
    assert!(!cold.contains("cache_control"), "{cold}");
    let checked = env.run(&["config", "--validate"]);
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stdout)
    );
}

/// The conversation of the request after one tool call: the call and its result in the
/// family's own blocks (`tool_use`/`tool_result`, `function_call`/`function_call_output`,
/// `tool_calls`/`role: tool`). The system prompt and the tools are the first request's,
/// snapshotted above; this is what follows them.
#[test]
fn after_one_tool_call_each_family_gets_the_call_and_its_result() {
    let env = TestEnv::new();
    std::fs::write(env.project.path().join("a.txt"), "one\n").unwrap();
    let local = json!({ "providers": { "local": {
        "kind": "openai-chat",
        "baseUrl": format!("{}/v1", env.fake.url),
    }}});
    std::fs::write(
        env.places().config_dir.join("setting.json"),
        local.to_string(),
    )
    .unwrap();
    let conversation = |body: &Value, key: &str| {
        let mut body = env.normalizer().request(body);
        pretty(&body[key].take())
    };

    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_1",
        "Read",
        json!({"file_path": "a.txt"}),
    )])));
    env.fake.push(Reply::text(&["it says one"]));
    ask(&env, &["what does a.txt say?"]);
    let anthropic = env.fake.requests().remove(1);
    insta::assert_snapshot!(
        "anthropic_after_a_tool_call",
        conversation(&anthropic, "messages")
    );

    env.fake.push_to(
        Route::Responses,
        Reply::Sse(responses_call_stream(&[(
            "call_1",
            "read",
            json!({"path": "a.txt"}),
        )])),
    );
    ask(&env, &["--model", "openai/gpt-5.1", "what does a.txt say?"]);
    let responses = env.fake.seen(Route::Responses).remove(1).body;
    insta::assert_snapshot!(
        "openai_after_a_tool_call",
        conversation(&responses, "input")
    );

    env.fake.push_to(
        Route::Chat,
        Reply::Sse(chat_tool_calls_stream(&[(
            "call_1",
            "read",
            json!({"path": "a.txt"}),
        )])),
    );
    ask(&env, &["--model", "local/qwen3:8b", "what does a.txt say?"]);
    let chat = env.fake.seen(Route::Chat).remove(1).body;
    let mut messages = env.normalizer().request(&chat)["messages"].take();
    // The system prompt is the first request's (snapshotted in `local_plain_turn`).
    messages[0]["content"] = json!("[system prompt]");
    insta::assert_snapshot!("local_after_a_tool_call", pretty(&messages));
}
