//! `stepper init`, `stepper config --validate | --schema`, completions and man pages.

use stepper_e2e::TestEnv;

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn init_scaffolds_files_that_validate_and_problems_are_located() {
    let env = TestEnv::new();
    let out = env.run(&["init"]);
    assert!(out.status.success());
    let dir = env.project.path().join(".stepper");
    for f in ["stepper.md", "setting.json", ".gitignore"] {
        assert!(dir.join(f).exists(), "{f}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
        "setting.local.json\n"
    );
    std::fs::write(dir.join("stepper.md"), "mine").unwrap();
    assert!(stdout(&env.run(&["init"])).contains("kept"));
    assert_eq!(
        std::fs::read_to_string(dir.join("stepper.md")).unwrap(),
        "mine",
        "init never overwrites without --force"
    );

    let out = env.run(&["config", "--validate"]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).contains("no problems"));

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
    assert!(
        stdout(&out).contains("setting.local.json:3:3: warning: unknown key \"permisions\""),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("did you mean \"permissions\"?"));

    std::fs::write(
        dir.join("setting.local.json"),
        "{\"providers\": {\"l\": {\"kind\": \"openai-chat\"}}}",
    )
    .unwrap();
    let out = env.run(&["config", "--validate"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("an openai-chat provider needs a baseUrl"),
        "{}",
        stdout(&out)
    );
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
    let said = stdout(&out);
    assert!(said.contains("setting.json:5:1: error:"), "{said}");
    assert!(said.contains("\"half\": `type: sse` needs `url`"), "{said}");
    assert!(said.contains(".mcp.json:2:1: error:"), "{said}");
    assert!(said.contains("not both"), "{said}");
    assert!(!said.contains("\"ok\""), "{said}");

    std::fs::write(
        env.project.path().join(".mcp.json"),
        "{\"mcpServers\": {,}}",
    )
    .unwrap();
    let said = stdout(&env.run(&["config", "--validate"]));
    assert!(said.contains(".mcp.json:1:17: error:"), "{said}");
    assert!(said.contains("plain JSON"), "{said}");
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
