//! Claude Code's settings files (issue 39, 1): a project set up for Claude Code —
//! `.claude/settings.json` committed, `.claude/settings.local.json` the user's own,
//! `~/.claude/settings.json` — behaves here as it does there, its files through folder trust
//! as stepper's own are: deny rules at once, what runs or widens once trusted.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use serde_json::json;
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::output::said as text;
use stepper_e2e::{Reply, TestEnv, stream_json};
use stepper_protocol::{AppEvent, EventEnvelope, ToolCallStatus};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `stepper ask --format stream-json ARGS`, which must succeed; its events.
fn ask(env: &TestEnv, args: &[&str]) -> (Output, Vec<EventEnvelope>) {
    let mut all = vec!["ask", "--format", "stream-json"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    assert!(out.status.success(), "{}\n{}", text(&out), env.daemon_log());
    let events = stream_json(&out);
    (out, events)
}

/// How each tool call of the events ended, by call id.
fn statuses(events: &[EventEnvelope]) -> Vec<(String, ToolCallStatus)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::ToolCallFinished {
                call_id, status, ..
            } => Some((call_id.clone(), *status)),
            _ => None,
        })
        .collect()
}

/// A repository as it comes, set up for Claude Code: its `.claude/settings.json` denies
/// `rm -rf` and reading `.env`, allows every command, and guards commands with a
/// PreToolUse hook that leaves a marker in `out`.
fn claude_project(env: &TestEnv, out: &Path) {
    let p = env.project.path();
    std::fs::create_dir_all(p.join(".git")).unwrap();
    std::fs::create_dir_all(p.join("build")).unwrap();
    write(&p.join("build/app"), "built");
    write(&p.join(".env"), "API_TOKEN=sk-very-secret-0042\n");
    let hook = p.join(".claude/hooks/guard.sh");
    write(
        &hook,
        &format!(
            "#!/bin/sh\necho ran >> '{}'\nexit 0\n",
            out.join("hook-ran").display()
        ),
    );
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    write(
        &p.join(".claude/settings.json"),
        &json!({
            "permissions": {
                "allow": ["Bash(touch:*)"],
                "deny": ["Bash(rm -rf:*)", "Read(./.env)"]
            },
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh"}
            ]}]}
        })
        .to_string(),
    );
}

#[test]
fn a_projects_claude_settings_deny_at_once_and_its_hook_runs_only_once_trusted() {
    let env = TestEnv::new();
    let out = tempfile::tempdir().unwrap();
    claude_project(&env, out.path());
    let p = env.project.path();

    // Untrusted, with every question answered yes: the deny rules hold all the same.
    env.fake.push(Reply::Sse(tool_use_stream(&[
        ("rm", "bash", json!({"command": "rm -rf ./build"})),
        ("env", "read", json!({"path": ".env"})),
    ])));
    env.fake.push(Reply::text(&["could not"]));
    let (asked, events) = ask(&env, &["--yes", "clean the build and show me .env"]);
    assert_eq!(
        statuses(&events),
        [
            ("rm".to_string(), ToolCallStatus::Denied),
            ("env".to_string(), ToolCallStatus::Denied)
        ],
        "{}",
        text(&asked)
    );
    assert!(p.join("build/app").exists(), "rm -rf did not run");
    let sent: String = env.fake.requests().iter().map(|r| r.to_string()).collect();
    assert!(!sent.contains("sk-very-secret-0042"), "{sent}");
    assert!(
        !out.path().join("hook-ran").exists(),
        "no hook before trust"
    );
    // What waits for trust is said, by file.
    let said = text(&asked);
    assert!(
        said.contains(".claude/settings.json: hooks (PreToolUse)")
            && said.contains(".claude/settings.json: permissions.allow (Bash(touch:*))"),
        "{said}"
    );

    // Trusted: the hook guards commands, the allow rule lets touch run without a question,
    // and the deny rules still hold.
    env.trust_project();
    env.fake.push(Reply::Sse(tool_use_stream(&[
        ("touch", "bash", json!({"command": "touch made.txt"})),
        ("rm", "bash", json!({"command": "rm -rf ./build"})),
    ])));
    env.fake.push(Reply::text(&["done"]));
    let (_, events) = ask(&env, &["make a file, then clean"]);
    assert_eq!(
        statuses(&events),
        [
            ("touch".to_string(), ToolCallStatus::Ok),
            ("rm".to_string(), ToolCallStatus::Denied)
        ]
    );
    assert!(p.join("made.txt").exists());
    assert!(p.join("build/app").exists());
    assert!(out.path().join("hook-ran").exists(), "the hook ran");
}

#[test]
fn the_users_and_the_local_claude_settings_apply_and_stepper_wins_at_the_same_scope() {
    let env = TestEnv::new();
    let p = env.project.path();
    // The user's own Claude Code settings: a model by its alias, a variable for commands and
    // a rule that allows a command everywhere.
    write(
        &env.home.path().join(".claude/settings.json"),
        &json!({
            "model": "haiku",
            "env": {"FROM_CLAUDE_USER": "user-level"},
            "permissions": {"allow": ["Bash(printenv:*)"]}
        })
        .to_string(),
    );
    // The project's git-ignored file, the user's own once the folder is trusted: a rule and
    // a variable stepper's own local file sets too (stepper's wins).
    write(
        &p.join(".claude/settings.local.json"),
        &json!({
            "env": {"SAME_KEY": "from-claude", "FROM_CLAUDE_LOCAL": "local-level"},
            "permissions": {"allow": ["Bash(touch local.txt)"]}
        })
        .to_string(),
    );
    write(
        &p.join(".stepper/setting.local.json"),
        &json!({"env": {"SAME_KEY": "from-stepper"}}).to_string(),
    );
    env.trust_project();
    env.fake.push(Reply::Sse(tool_use_stream(&[
        ("touch", "bash", json!({"command": "touch local.txt"})),
        (
            "env",
            "bash",
            json!({"command": "printenv FROM_CLAUDE_USER FROM_CLAUDE_LOCAL SAME_KEY"}),
        ),
    ])));
    env.fake.push(Reply::text(&["done"]));
    // No --yes and no terminal: a call that asked would be refused.
    let (out, events) = ask(&env, &["go"]);
    assert_eq!(
        statuses(&events),
        [
            ("touch".to_string(), ToolCallStatus::Ok),
            ("env".to_string(), ToolCallStatus::Ok)
        ],
        "{}",
        text(&out)
    );
    assert!(p.join("local.txt").exists());
    let requests = env.fake.requests();
    assert_eq!(
        requests[0]["model"], "claude-haiku-4-5",
        "the alias is mapped"
    );
    let results = requests[1]["messages"].to_string();
    assert!(
        results.contains("user-level\\nlocal-level\\nfrom-stepper"),
        "{results}"
    );
}

#[test]
fn config_validate_names_every_file_read_and_each_key_stepper_does_not_use() {
    let env = TestEnv::new();
    let p = env.project.path();
    write(
        &env.home.path().join(".claude/settings.json"),
        "{\n  \"model\": \"opus\",\n  \"theme\": \"dark\"\n}\n",
    );
    write(
        &p.join(".claude/settings.json"),
        "{\n  \"permissions\": {\n    \"deny\": [\"Read(./.env)\"],\n    \"defaultMode\": \"dontAsk\"\n  },\n  \"cleanupPeriodDays\": 20,\n  \"statusLine\": {\"type\": \"command\", \"command\": \"~/.claude/line.sh\"},\n  \"hooks\": {\"PreToolUs\": []}\n}\n",
    );
    write(
        &p.join(".claude/settings.local.json"),
        "{\"enabledMcpjsonServers\": [\"github\"]}",
    );
    let out = env.run(&["config", "--validate"]);
    let shown = String::from_utf8_lossy(&out.stdout)
        .replace(&p.display().to_string(), "[project]")
        .replace(&env.home.path().display().to_string(), "[home]");
    assert_eq!(out.status.code(), Some(1), "{shown}");
    insta::assert_snapshot!(shown, @r#"
    read [home]/.claude/settings.json
    read [project]/.claude/settings.json
    read [project]/.claude/settings.local.json
    [home]/.claude/settings.json:3:3: warning: "theme" is not supported by stepper
        hint: a Claude Code setting stepper does not use: it is ignored (README, "Claude Code's settings files", lists what is)
    [project]/.claude/settings.json:4:20: warning: permissions.defaultMode "dontAsk": stepper has no such mode, so what no rule allows is asked about instead of refused
        hint: list what may run in permissions.allow, or use "plan" to change nothing
    [project]/.claude/settings.json:6:3: warning: "cleanupPeriodDays" is not supported by stepper
        hint: a Claude Code setting stepper does not use: it is ignored (README, "Claude Code's settings files", lists what is)
    [project]/.claude/settings.json:8:13: error: "PreToolUs" is not a hook event
        hint: did you mean "PreToolUse"?
    1 error(s), 3 warning(s)
    "#);
}

#[test]
fn an_mcp_approval_given_in_claude_code_is_honoured_in_a_trusted_folder() {
    let Some(entry) = super::mcp::everything() else {
        return;
    };
    let env = TestEnv::new();
    let p = env.project.path();
    write(
        &p.join(".mcp.json"),
        &json!({"mcpServers": {"everything": {
            "command": "node",
            "args": [entry.display().to_string(), "stdio"],
        }}})
        .to_string(),
    );
    // Where Claude Code keeps the approval its user gave.
    write(
        &p.join(".claude/settings.local.json"),
        &json!({"enabledMcpjsonServers": ["everything"]}).to_string(),
    );
    env.trust_project();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "echo",
        "mcp__everything__echo",
        json!({"message": "approved in claude code"}),
    )])));
    env.fake.push(Reply::text(&["done"]));
    let (out, events) = ask(&env, &["--yes", "echo"]);
    let output = events.iter().find_map(|e| match &e.event {
        AppEvent::ToolCallFinished { status, output, .. } => Some((*status, output.clone())),
        _ => None,
    });
    assert!(
        output
            .as_ref()
            .is_some_and(|(status, o)| *status == ToolCallStatus::Ok
                && o.contains("approved in claude code")),
        "{output:?}\n{}",
        text(&out)
    );
}

/// Claude Code's `statusLine` from the project's `.claude/settings.json`: not run until the
/// folder is trusted (it runs a program), then run with Claude Code's status line input on
/// stdin, its output given back plain; a failing one says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_status_line_runs_once_trusted_with_claude_codes_input() {
    use stepper_protocol::methods::{SessionParams, SessionStatusLine};
    let env = TestEnv::new();
    let out = tempfile::tempdir().unwrap();
    let p = env.project.path();
    let script = p.join(".claude/statusline.sh");
    write(
        &script,
        &format!(
            "#!/bin/sh\ncat > '{}'\nprintf '\\033[1;32mSTATUS-OK\\033[0m on main\\n\\nsecond\\n'\n",
            out.path().join("input.json").display()
        ),
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    write(
        &p.join(".claude/settings.json"),
        &json!({"statusLine": {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/statusline.sh"}})
            .to_string(),
    );
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let params = || SessionParams {
        session_id: id.clone(),
    };
    let untrusted = client.call::<SessionStatusLine>(params()).await.unwrap();
    assert_eq!((untrusted.text, untrusted.error), (None, None));
    assert!(!out.path().join("input.json").exists(), "not run untrusted");

    env.trust_project();
    let shown = client.call::<SessionStatusLine>(params()).await.unwrap();
    assert_eq!(
        shown.text.as_deref(),
        Some("STATUS-OK on main\nsecond"),
        "{shown:?}"
    );
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("input.json")).unwrap())
            .unwrap();
    assert_eq!(input["hook_event_name"], "Status");
    assert_eq!(input["session_id"], id.as_str());
    assert_eq!(input["model"]["id"], "claude-sonnet-4-5", "{input}");
    let folder = std::fs::canonicalize(p).unwrap();
    assert_eq!(
        std::fs::canonicalize(input["workspace"]["current_dir"].as_str().unwrap()).unwrap(),
        folder
    );

    // A command that fails says so, with what it printed.
    write(&script, "#!/bin/sh\necho 'no git here' >&2\nexit 3\n");
    let failed = client.call::<SessionStatusLine>(params()).await.unwrap();
    assert_eq!(failed.text, None);
    let error = failed.error.unwrap_or_default();
    assert!(
        error.contains("exit 3") && error.contains("no git here"),
        "{error}"
    );
}
