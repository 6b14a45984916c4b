//! Custom slash commands and skills in Claude Code's formats: expanded by the daemon, so the
//! TUI and `ask` send the model the same thing; skills disclosed progressively.

use serde_json::{Value, json};
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{Reply, TestEnv, Tmux, stream_json};
use stepper_protocol::AppEvent;
use stepper_protocol::methods::{CommandsList, CwdParams};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The text of the last user message of request `i`.
fn last_user_text(env: &TestEnv, i: usize) -> String {
    let request = &env.fake.requests()[i];
    let last = request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => other.to_string(),
    }
}

const REVIEW: &str = "---
description: Review a file with the project's notes
argument-hint: FILE [FOCUS]
---
Review $0 carefully, with a focus on $1.
Status: !`echo BANG-RAN`
Notes: @notes.md
All: $ARGUMENTS
";

#[test]
fn a_command_with_arguments_bang_and_at_expands_the_same_in_ask_and_the_tui() {
    let env = TestEnv::new();
    write(
        &env.project.path().join(".claude/commands/review.md"),
        REVIEW,
    );
    write(&env.project.path().join("notes.md"), "NOTES-CONTENT\n");
    env.fake.push(Reply::text(&["reviewed"]));
    let out = env.run(&["ask", "/review src/lib.rs errors"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = last_user_text(&env, 0);
    for piece in [
        "Review src/lib.rs carefully, with a focus on errors.",
        "BANG-RAN",
        "NOTES-CONTENT",
        "All: src/lib.rs errors",
    ] {
        assert!(
            sent.contains(piece),
            "{piece:?} not in what the model got:\n{sent}"
        );
    }
    assert!(!sent.contains("!`echo"), "{sent}");

    // The session's history keeps what was typed; the model's context what it was sent.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listed = rt.block_on(async {
        env.client()
            .await
            .call::<CommandsList>(CwdParams {
                cwd: env.project.path().display().to_string(),
            })
            .await
            .unwrap()
    });
    let review = listed
        .commands
        .iter()
        .find(|c| c.name == "review")
        .expect("review is listed");
    assert_eq!(review.kind.as_str(), "command");
    assert_eq!(review.scope.map(|s| s.as_str()), Some("project"));
    assert_eq!(review.argument_hint.as_deref(), Some("FILE [FOCUS]"));

    if !Tmux::available() {
        return;
    }
    env.fake.push(Reply::text(&["reviewed again"]));
    let tmux = Tmux::new(&env);
    let pane = tmux.shell();
    pane.run("stepper");
    pane.wait_for_text("● idle");
    // The folder is undecided, so the TUI asks about trust first; keys typed before its
    // question takes keys would be swallowed. Left unanswered, the folder stays as `ask`
    // found it, and other keys go to the input.
    pane.wait_for("the trust question, answerable", |s| {
        s.contains("don't trust it") && !s.contains("keys in a moment")
    });
    pane.type_text("/review src/lib.rs errors");
    pane.press("Enter");
    pane.wait_for_text("reviewed again");
    assert_eq!(last_user_text(&env, 1), sent, "the TUI sends what ask sent");
    pane.press("C-d");
}

/// As Claude Code does: a `!` line that fails stops the command before any model call, and
/// says what failed.
#[test]
fn a_failing_bang_line_fails_the_command_without_a_model_call() {
    let env = TestEnv::new();
    write(
        &env.project.path().join(".claude/commands/ship.md"),
        "---\ndescription: Ship it\n---\nTests: !`echo SAID-BEFORE; exit 3`\nNow ship $0.\n",
    );
    env.trust_project();
    let out = env.run(&["ask", "--yes", "/ship v2"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("!`echo SAID-BEFORE; exit 3` failed (exit 3)")
            && said.contains("SAID-BEFORE"),
        "{said}"
    );
    assert!(env.fake.requests().is_empty(), "the model was called");
}

#[test]
fn a_skill_is_named_up_front_and_its_body_sent_only_when_the_model_asks() {
    let env = TestEnv::new();
    write(
        &env.project.path().join(".stepper/skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the app to staging\n---\nSKILL-BODY: run make deploy, then check $ARGUMENTS\n",
    );
    write(
        &env.project.path().join(".stepper/skills/secret/SKILL.md"),
        "---\nname: secret\ndescription: Only by hand\ndisable-model-invocation: true\n---\nHIDDEN\n",
    );
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "skill",
        json!({"name": "deploy", "arguments": "the health page"}),
    )])));
    env.fake.push(Reply::text(&["deployed"]));
    let out = env.run(&["ask", "--format", "stream-json", "ship it"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = env.fake.requests();
    let first = requests[0].to_string();
    assert!(
        first.contains("deploy: Deploy the app to staging"),
        "{first}"
    );
    assert!(
        !first.contains("SKILL-BODY"),
        "the body waits for the model to ask"
    );
    assert!(
        !first.contains("Only by hand"),
        "disable-model-invocation hides it"
    );
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(tools.contains(&"skill"), "{tools:?}");
    let second = requests[1].to_string();
    assert!(
        second.contains("SKILL-BODY: run make deploy, then check the health page"),
        "{second}"
    );
    assert!(
        second.contains(".stepper/skills/deploy"),
        "the skill's folder is named"
    );
    let events = stream_json(&out);
    assert!(events.iter().any(|e| matches!(&e.event,
        AppEvent::ToolCallStarted { tool, .. } if tool == "skill")));

    // A skill the model may not call is still the user's: /secret runs it.
    env.fake.push(Reply::text(&["done by hand"]));
    let out = env.run(&["ask", "/secret"]);
    assert!(out.status.success());
    assert!(last_user_text(&env, 2).contains("HIDDEN"));
}

#[test]
fn skills_written_in_full_yaml_all_reach_the_model() {
    let env = TestEnv::new();
    // As Claude Code's skills are written: folded and literal blocks, a quoted description
    // with a colon, a plain one with `: ` unquoted, allowed-tools as a block list.
    for (name, front) in [
        (
            "changelog",
            "description: >\n  Writes the changelog\n  from git history.\nallowed-tools:\n  - Bash(git log:*)\n  - Read",
        ),
        (
            "pdf",
            "description: |\n  Fills PDF forms.\nallowed-tools: [Read, Write]",
        ),
        ("review", "description: \"Reviews: diffs and PRs\""),
        ("deploy", "description: Deploys when: the user says ship"),
    ] {
        write(
            &env.project
                .path()
                .join(format!(".claude/skills/{name}/SKILL.md")),
            &format!("---\nname: {name}\n{front}\n---\nBODY\n"),
        );
    }
    env.fake.push(Reply::text(&["ok"]));
    let out = env.run(&["ask", "which skills"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = env.fake.requests()[0].to_string();
    for said in [
        "changelog: Writes the changelog from git history.",
        "pdf: Fills PDF forms.",
        "review: Reviews: diffs and PRs",
        "deploy: Deploys when: the user says ship",
    ] {
        assert!(first.contains(said), "{said:?} not in {first}");
    }
}

#[test]
fn a_broken_command_file_is_reported_with_its_line_and_the_rest_goes_on() {
    let env = TestEnv::new();
    write(
        &env.project.path().join(".stepper/commands/bad.md"),
        "---\ndescription: never closed\n",
    );
    write(
        &env.project.path().join(".stepper/commands/good.md"),
        "GOOD-COMMAND $ARGUMENTS\n",
    );
    let out = env.run(&["config", "--validate"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("bad.md:1"), "{said}");
    assert!(said.contains("never closes"), "{said}");

    env.fake.push(Reply::text(&["ok"]));
    let out = env.run(&["ask", "--format", "stream-json", "/good x"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(last_user_text(&env, 0).contains("GOOD-COMMAND x"));
    let events = stream_json(&out);
    assert!(
        events.iter().any(|e| matches!(&e.event,
            AppEvent::Notice { message } if message.contains("bad.md:1"))),
        "{events:#?}"
    );
}
