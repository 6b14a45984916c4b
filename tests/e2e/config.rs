//! `stepper init`, `stepper config --validate | --schema`, completions and man pages.

use stepper_e2e::TestEnv;
use stepper_e2e::output::stdout;

#[test]
fn init_scaffolds_files_that_validate_and_problems_are_located() {
    let env = TestEnv::new();
    insta::assert_snapshot!("init", env.shown(&["init"]));
    let dir = env.project.path().join(".stepper");
    for f in ["stepper.md", "setting.json", ".gitignore"] {
        assert!(dir.join(f).exists(), "{f}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
        "setting.local.json\n"
    );
    std::fs::write(dir.join("stepper.md"), "mine").unwrap();
    insta::assert_snapshot!("init_again", env.shown(&["init"]));
    assert_eq!(
        std::fs::read_to_string(dir.join("stepper.md")).unwrap(),
        "mine",
        "init never overwrites without --force"
    );

    insta::assert_snapshot!("scaffold_validates", env.shown(&["config", "--validate"]));

    // The scaffold is commented JSON, and stepper uses it as it is.
    let ask = env.run(&["ask", "hi"]);
    assert!(
        ask.status.success(),
        "{}",
        String::from_utf8_lossy(&ask.stderr)
    );

    std::fs::write(
        dir.join("setting.local.json"),
        "{\n  \"model\": \"anthropic/x\",\n  \"permisions\": {}\n}\n",
    )
    .unwrap();
    let out = env.run(&["config", "--validate"]);
    assert!(out.status.success(), "warnings alone pass");
    insta::assert_snapshot!("a_warning", env.normalized(&out));

    std::fs::write(
        dir.join("setting.local.json"),
        "{\"providers\": {\"l\": {\"kind\": \"openai-chat\"}}}",
    )
    .unwrap();
    let out = env.run(&["config", "--validate"]);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!("an_error", env.normalized(&out));
}

#[test]
fn validate_covers_mcp_servers_in_settings_and_mcp_json() {
    let env = TestEnv::new();
    let dir = env.project.path().join(".stepper");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("setting.json"),
        "{\n  // the team's\n  \"mcpServers\": {\n    \"ok\": {\"command\": \"x\"},\n    \"half\": {\"type\": \"sse\"}\n  }\n}\n",
    )
    .unwrap();
    std::fs::write(
        env.project.path().join(".mcp.json"),
        "{\"mcpServers\": {\n  \"both\": {\"command\": \"x\", \"url\": \"http://h\"}\n}}\n",
    )
    .unwrap();
    let out = env.run(&["config", "--validate"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    // The valid server `ok` is not named.
    insta::assert_snapshot!("two_bad_servers", env.normalized(&out));

    std::fs::write(
        env.project.path().join(".mcp.json"),
        "{\"mcpServers\": {,}}",
    )
    .unwrap();
    insta::assert_snapshot!("mcp_json_unreadable", env.shown(&["config", "--validate"]));
}

#[test]
fn schema_completions_and_man_pages() {
    let env = TestEnv::new();
    let schema: serde_json::Value =
        serde_json::from_slice(&env.run(&["config", "--schema"]).stdout).unwrap();
    assert!(schema["properties"]["providers"].is_object());
    assert!(schema["$defs"]["ProviderKind"].is_object());
    for shell in ["bash", "zsh", "fish"] {
        let out = env.run(&["completions", shell]);
        assert!(
            out.status.success() && stdout(&out).contains("stepper"),
            "{shell}"
        );
    }
    assert!(stdout(&env.run(&["man"])).contains(".TH stepper 1"));
    let dir = env.home.path().join("man");
    assert!(
        env.run(&["man", "--dir", dir.to_str().unwrap()])
            .status
            .success()
    );
    assert!(dir.join("stepper-ask.1").exists() && dir.join("stepper-daemon-install.1").exists());
}

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A project with the skills `beta` and `manual` (only the user may run it).
fn skills(env: &TestEnv) {
    write(
        &env.project.path().join(".stepper/skills/beta/SKILL.md"),
        "---\nname: beta\ndescription: Ship a beta\n---\nBETA-BODY\n",
    );
    write(
        &env.project.path().join(".stepper/skills/manual/SKILL.md"),
        "---\nname: manual\ndescription: By hand\ndisable-model-invocation: true\n---\nM\n",
    );
}

#[test]
fn validate_reports_skills_and_models_layers_and_agents_name_but_the_folder_lacks() {
    let env = TestEnv::new();
    skills(&env);
    write(
        &env.project.path().join(".stepper/stepper.md"),
        "---\nname: plan\ntools: [read]\nskills: [beta]\n---\nPlan.\n\n\
         ---\nname: code\nmodel: antropic/claude-sonnet-4-5\nskills: [bta, manual]\n---\nCode.\n\n\
         ---\nname: check\nmodel: anthropic/claude-sonet-4-5\n---\nCheck.\n",
    );
    write(
        &env.project.path().join(".claude/agents/helper.md"),
        "---\nname: helper\ndescription: Helps\ndisallowedTools: Skill\nskills: [beta]\nmodel: openai/gpt-5.1\n---\nHelp.\n",
    );
    let out = env.run(&["config", "--validate"]);
    let said = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    // A model stepper knows (`openai/gpt-5.1`) is no problem.
    insta::assert_snapshot!(env.normalized(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_says_at_its_start_what_its_layers_name_but_the_folder_lacks() {
    use stepper_e2e::{Reply, submit, until_turn_finished};
    use stepper_protocol::AppEvent;
    let env = TestEnv::new();
    env.trust_project();
    skills(&env);
    write(
        &env.project.path().join(".stepper/stepper.md"),
        "---\nname: plan\ntools: [read]\nskills: [beta]\n---\nPlan.\n\n\
         ---\nname: code\nskills: [bta]\n---\nCode.\n",
    );
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::text(&["PLAN"]));
    env.fake.push(Reply::text(&["DONE"]));
    submit(&client, &id, "go").await;
    let seen = until_turn_finished(&mut events).await;
    let notices: Vec<&str> = seen
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::Notice { message } => Some(message.as_str()),
            _ => None,
        })
        .filter(|m| m.contains("stepper.md"))
        .collect();
    assert_eq!(notices.len(), 2, "{notices:#?}");
    assert!(
        notices[0].ends_with(
            "stepper.md:4: layer `plan` lists skills, but its tools leave out `skill`, so it is \
             offered none — add `skill` to its `tools`, or drop `skills`"
        ),
        "{notices:#?}"
    );
    assert!(
        notices[1].ends_with(
            "stepper.md:10: layer `code` lists an unknown skill `bta` — did you mean `beta`?"
        ),
        "{notices:#?}"
    );
    // Said at the turn's start, before any model call.
    let first_notice = seen
        .iter()
        .position(
            |e| matches!(&e.event, AppEvent::Notice { message } if message.contains("stepper.md")),
        )
        .unwrap();
    let first_layer = seen
        .iter()
        .position(|e| matches!(e.event, AppEvent::LayerStarted { .. }))
        .unwrap();
    assert!(first_notice < first_layer, "{seen:#?}");
    // The turn runs all the same.
    assert!(
        seen.iter()
            .any(|e| matches!(&e.event, AppEvent::MessageCompleted { text, .. } if text == "DONE"))
    );
}
