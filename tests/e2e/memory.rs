//! Instructions from the files users keep — `.stepper/stepper.md`, the user's AGENTS.md, and
//! AGENTS.md and Claude Code's CLAUDE.md, `.claude/CLAUDE.md`, `.claude/rules` and
//! CLAUDE.local.md from the repository root down to the session's folder, with `@path`
//! imports — reach the model as the system prompt, root first; a rule for some paths comes
//! with the first call on one of them.

use stepper_e2e::{Reply, TestEnv, read_until};
use stepper_protocol::AppEvent;
use stepper_protocol::methods::{
    SessionCreate, SessionCreateParams, SessionMemory, SessionParams, SessionSubmit,
    SessionSubmitParams,
};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_agents_and_claude_files_with_an_import_reach_the_model() {
    let env = TestEnv::new();
    let root = env.project.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    write(&root.join(".stepper/stepper.md"), "STEPPER-PROSE\n");
    write(&env.home.path().join("AGENTS.md"), "USER-RULES\n");
    write(
        &root.join("AGENTS.md"),
        "ROOT-RULES; style in @docs/style.md\n",
    );
    write(
        &root.join("docs/style.md"),
        "STYLE-RULES, and again: @style.md\n",
    );
    write(
        &root.join("CLAUDE.md"),
        "ROOT-CLAUDE: read beside AGENTS.md, as Claude Code reads it\n",
    );
    let app = root.join("app");
    write(&app.join("CLAUDE.md"), "APP-CLAUDE\n");
    write(&app.join("CLAUDE.local.md"), "APP-LOCAL\n");

    env.start_daemon();
    let client = env.client().await;
    let created = client
        .call::<SessionCreate>(SessionCreateParams {
            input_parts: Vec::new(),
            cwd: app.display().to_string(),
            env: env.envs().into_iter().collect(),
            model: None,
            title: None,
            record: None,
            mode: None,
            sandbox: None,
            input: None,
            system_prompt: None,
            append_system_prompt: None,
        })
        .await
        .unwrap();
    let id = created.session.id;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    for (text, reply) in [("one", "first"), ("two", "second")] {
        env.fake.push(Reply::text(&[reply]));
        client
            .call::<SessionSubmit>(SessionSubmitParams {
                parts: Vec::new(),
                session_id: id.clone(),
                text: text.into(),
                env: None,
            })
            .await
            .unwrap();
    }
    let mut finished = 0;
    let seen = read_until(&mut events, |e| {
        finished += usize::from(matches!(e.event, AppEvent::TurnFinished { .. }));
        finished == 2
    })
    .await;

    let requests = env.fake.requests();
    assert_eq!(requests.len(), 2);
    let system = requests[0]["system"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    let mut at = 0;
    for piece in [
        "STEPPER-PROSE",
        "USER-RULES",
        "ROOT-RULES",
        "STYLE-RULES",
        "ROOT-CLAUDE",
        "APP-CLAUDE",
        "APP-LOCAL",
    ] {
        at += system[at..]
            .find(piece)
            .unwrap_or_else(|| panic!("{piece} is not in order in the system prompt:\n{system}"));
    }
    assert_eq!(requests[1]["system"], requests[0]["system"]);

    // The import that comes back to itself is said once, not at every turn.
    let cycles = seen
        .iter()
        .filter(|e| matches!(&e.event, AppEvent::Notice { message } if message.contains("imports itself")))
        .count();
    assert_eq!(cycles, 1, "{seen:#?}");

    let memory = client
        .call::<SessionMemory>(SessionParams {
            session_id: id.clone(),
        })
        .await
        .unwrap();
    let sources: Vec<&str> = memory.files.iter().map(|f| f.source.as_str()).collect();
    assert_eq!(
        sources,
        [
            "stepper", "user", "agents", "import", "claude", "claude", "claude"
        ]
    );
    assert!(memory.files[5].path.ends_with("app/CLAUDE.md"));
    assert_eq!(memory.cap, 32768);
    // The memory is the system prompt's end, after the base instructions and environment.
    let at = system.len() - memory.bytes as usize;
    assert!(system[..at].contains("# Environment"), "{system}");
    assert!(system[at..].contains("STEPPER-PROSE"), "{system}");
    assert!(memory.notices.iter().any(|n| n.contains("imports itself")));
}

#[test]
fn the_cap_cuts_and_says_what_it_cut() {
    let env = TestEnv::new();
    write(
        &env.project.path().join(".stepper/setting.json"),
        r#"{"memoryMaxBytes": 2048}"#,
    );
    write(
        &env.project.path().join("AGENTS.md"),
        &format!("FIRST-LINE\n{}\n", "x".repeat(8000)),
    );
    env.fake.push(Reply::text(&["ok"]));
    let out = env.run(&["ask", "--format", "stream-json", "hi"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = stepper_e2e::stream_json(&out);
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.event, AppEvent::Notice { message }
            if message.contains("over 2048 bytes") && message.contains("AGENTS.md"))),
        "{events:#?}"
    );
    let system = env.fake.requests()[0]["system"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    // The cap is the memory's, which comes after the base instructions and environment.
    let memory = &system[system.find("FIRST-LINE").expect("the memory's start")..];
    assert!(memory.len() <= 2048, "{}", memory.len());
}

#[test]
fn slash_memory_in_the_tui_lists_where_the_instructions_come_from() {
    if !stepper_e2e::Tmux::available() {
        return;
    }
    let env = TestEnv::new();
    write(&env.project.path().join("AGENTS.md"), "RULES\n");
    let tmux = stepper_e2e::Tmux::new(&env);
    let pane = tmux.shell();
    pane.run("stepper");
    pane.wait_for_text("● idle");
    pane.type_text("/memory");
    pane.press("Enter");
    pane.wait_for_history("the instructions' files", |s| {
        s.contains("AGENTS.md (agents, 6 bytes)")
    });
    // The other built-ins: the TUI's own, and the daemon's window split.
    for (command, shown) in [
        ("/cost", "this session: 0 input"),
        ("/context", "context of anthropic/claude-sonnet-4-5: "),
        ("/init", "wrote"),
    ] {
        pane.type_text(command);
        pane.press("Enter");
        pane.wait_for_history(command, |s| s.contains(shown));
    }
    assert!(env.project.path().join(".stepper/stepper.md").exists());
    pane.type_text("/fork");
    pane.press("Enter");
    stepper_e2e::wait_until("the fork", std::time::Duration::from_secs(20), || {
        let out = env.run(&["sessions", "--json"]);
        serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .ok()
            .and_then(|v| v.as_array().map(Vec::len))
            == Some(2)
    });
    pane.press("C-d");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_codes_memory_files_and_a_rule_for_some_paths_reach_the_model() {
    let env = TestEnv::new();
    let root = env.project.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    write(&env.home.path().join(".claude/CLAUDE.md"), "HOME-CLAUDE\n");
    write(&root.join("AGENTS.md"), "AGENTS-TEXT; see @CLAUDE.md\n");
    write(&root.join("CLAUDE.md"), "CLAUDE-TEXT\n");
    write(&root.join(".claude/CLAUDE.md"), "DOT-CLAUDE-TEXT\n");
    write(
        &root.join(".claude/rules/testing.md"),
        "---\ndescription: >\n  how we test\n---\nRULE-ALWAYS\n",
    );
    write(
        &root.join(".claude/rules/frontend/ts.md"),
        "---\npaths:\n  - \"src/**/*.ts\"\n---\nRULE-FOR-TS\n",
    );
    write(&root.join("src/app.ts"), "export const x = 1;\n");
    write(&root.join("src/lib.rs"), "fn main() {}\n");
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake
        .push(Reply::Sse(stepper_e2e::fake_llm::tool_use_stream(&[(
            "t1",
            "read",
            serde_json::json!({"path": "src/lib.rs"}),
        )])));
    env.fake
        .push(Reply::Sse(stepper_e2e::fake_llm::tool_use_stream(&[(
            "t2",
            "read",
            serde_json::json!({"path": "src/app.ts"}),
        )])));
    env.fake
        .push(Reply::Sse(stepper_e2e::fake_llm::tool_use_stream(&[(
            "t3",
            "read",
            serde_json::json!({"path": "src/app.ts"}),
        )])));
    env.fake.push(Reply::text(&["done"]));
    stepper_e2e::submit(&client, &id, "look around").await;
    stepper_e2e::until_turn_finished(&mut events).await;

    let requests = env.fake.requests();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    let system = requests[0]["system"].to_string();
    let mut at = 0;
    for piece in [
        "HOME-CLAUDE",
        "AGENTS-TEXT",
        "CLAUDE-TEXT",
        "DOT-CLAUDE-TEXT",
        "RULE-ALWAYS",
    ] {
        at += system[at..]
            .find(piece)
            .unwrap_or_else(|| panic!("{piece} is not in order in the system prompt:\n{system}"));
    }
    // CLAUDE.md is imported by AGENTS.md: it is read once (the other match is
    // DOT-CLAUDE-TEXT).
    assert_eq!(system.matches("CLAUDE-TEXT").count(), 2, "{system}");
    assert!(!system.contains("RULE-FOR-TS"), "{system}");
    assert!(!system.contains("how we test"), "{system}");
    // The rule for .ts files comes with the first read of one, once.
    let result_of = |n: usize| {
        requests[n]["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .to_string()
    };
    assert!(!result_of(1).contains("RULE-FOR-TS"), "{}", result_of(1));
    assert!(result_of(2).contains("RULE-FOR-TS"), "{}", result_of(2));
    assert!(!result_of(3).contains("RULE-FOR-TS"), "{}", result_of(3));

    let memory = client
        .call::<SessionMemory>(SessionParams {
            session_id: id.clone(),
        })
        .await
        .unwrap();
    let rules: Vec<&str> = memory
        .files
        .iter()
        .filter(|f| f.source.as_str() == "rules")
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(rules.len(), 2, "{:?}", memory.files);
    assert!(rules.iter().any(|p| p.ends_with("frontend/ts.md")));
}
