//! Screens of the same turn in stepper and Claude Code side by side (issue 37's closing
//! evidence): an approval, a tool's long output, a table and a long answer. Not a check:
//! run by hand, it writes each screen to `target/captures/`.
//!
//! `cargo test -p stepper-e2e --test all -- --ignored captures --nocapture`

use std::path::PathBuf;

use serde_json::{Value, json};
use stepper_e2e::fake_llm::{responses_call_stream, tool_use_stream};
use stepper_e2e::{Pane, Reply, Route, TestEnv, Tmux};

/// The answer's last words: once shown, the turn is over.
const END: &str = "END-OF-ANSWER";

/// The turn, by how far it got: a command that needs approval, then one with 40 lines of
/// output, then an answer with a heading, a table and 30 short lines. Only the agent's own
/// turn (a request offering its tools) is scripted; side requests get the fixture.
fn script(route: Route, body: &Value) -> Option<Reply> {
    let tools = body["tools"].as_array().map_or(0, Vec::len);
    if route != Route::Anthropic || tools < 4 {
        return None;
    }
    let results = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|part| part["type"] == "tool_result")
        .count();
    let call = |id: &str, command: &str, what: &str| {
        Reply::Sse(tool_use_stream(&[(
            id,
            "Bash",
            json!({"command": command, "description": what}),
        )]))
    };
    Some(match results {
        0 => call("t1", "touch made.txt", "Make the file"),
        1 => call("t2", "seq 1 40", "Count to forty"),
        _ => Reply::text(&[&answer()]),
    })
}

/// The same turn for Codex, on the Responses API with Codex's `exec_command`.
fn codex_script(route: Route, body: &Value) -> Option<Reply> {
    let tools = body["tools"].as_array().map_or(0, Vec::len);
    if route != Route::Responses || tools < 4 {
        return None;
    }
    let results = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .count();
    let call =
        |id: &str, args: Value| Reply::Sse(responses_call_stream(&[(id, "exec_command", args)]));
    Some(match results {
        // Out of the read-only sandbox: Codex asks.
        0 => call(
            "c1",
            json!({"cmd": "touch made.txt", "sandbox_permissions": "require_escalated",
                "justification": "Make the file?"}),
        ),
        1 => call("c2", json!({"cmd": "seq 1 40"})),
        _ => Reply::Sse(responses_text(&answer())),
    })
}

/// The answer all three give at the end.
fn answer() -> String {
    let mut text = String::from(
        "## What changed\n\n| File | Lines | What |\n|---|---:|:---:|\n\
         | made.txt | 0 | created |\n| src/lib.rs | 120 | untouched |\n\
         | README.md | 14 | read for context |\n\nThe steps:\n",
    );
    for i in 1..=30 {
        text.push_str(&format!("step {i}: checked\n"));
    }
    text.push_str(END);
    text
}

/// A Responses stream of one assistant message saying `text`.
fn responses_text(text: &str) -> String {
    let message = |status: &str, content: Value| {
        json!({"id": "msg_1", "type": "message", "status": status, "role": "assistant",
            "content": content})
    };
    let part = json!({"type": "output_text", "text": text, "annotations": []});
    let events = [
        json!({"type": "response.created", "response": {"id": "resp_t", "object": "response",
            "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": message("in_progress", json!([]))}),
        json!({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0,
            "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
            "content_index": 0, "delta": text}),
        json!({"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0,
            "content_index": 0, "text": text}),
        json!({"type": "response.content_part.done", "item_id": "msg_1", "output_index": 0,
            "content_index": 0, "part": part}),
        json!({"type": "response.output_item.done", "output_index": 0,
            "item": message("completed", json!([part]))}),
        json!({"type": "response.completed", "response": {"id": "resp_t", "object": "response",
            "status": "completed", "output": [message("completed", json!([part]))],
            "usage": {"input_tokens": 90, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 40, "total_tokens": 130}}}),
    ];
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

fn out_dir() -> PathBuf {
    // target/<profile>/deps/<test-binary>
    let dir = std::env::current_exe()
        .unwrap()
        .ancestors()
        .nth(3)
        .unwrap()
        .join("captures");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn save(name: &str, screen: &str) {
    let path = out_dir().join(format!("{name}.txt"));
    std::fs::write(&path, screen).unwrap();
    eprintln!("--- {name} ({})\n{screen}", path.display());
}

/// Wait for the approval, keep the screen, say yes with `yes`; then keep the end.
fn walk(pane: &Pane, agent: &str, asked: &str, yes: &str) {
    let approval = pane.wait_for_text(asked);
    save(&format!("{agent}-approval"), &approval);
    pane.press(yes);
    let end = pane.wait_for_text(END);
    save(&format!("{agent}-answer"), &end);
    let history = pane.history();
    save(&format!("{agent}-history"), &history);
}

#[test]
#[ignore = "writes screens for a person to look at; run by hand"]
fn captures_side_by_side() {
    // stepper.
    let env = TestEnv::new();
    env.fake.respond_with(script);
    let tmux = Tmux::new(&env);
    let pane = tmux.shell();
    pane.run("stepper");
    pane.wait_for_text("● idle");
    pane.type_text("make a file and count to forty");
    pane.press("Enter");
    // Keys count once the box says so.
    pane.wait_for("the approval, answerable", |s| {
        s.contains("Allow ") && !s.contains("keys in a moment")
    });
    walk(&pane, "stepper", "Allow bash?", "y");
    drop(tmux);

    // Claude Code, with its first-run screens answered as a returning user has them.
    let Some(claude) = std::env::var_os("STEPPER_TEST_CLAUDE_CODE") else {
        return;
    };
    let env = TestEnv::new();
    env.fake.respond_with(script);
    let key = stepper_e2e::fake_llm::FAKE_KEY;
    let tail = &key[key.len().saturating_sub(20)..];
    let project = env.project.path().display().to_string();
    std::fs::write(
        env.home.path().join(".claude.json"),
        json!({
            "hasCompletedOnboarding": true,
            "theme": "dark",
            "customApiKeyResponses": {"approved": [tail], "rejected": []},
            "projects": {project: {"hasTrustDialogAccepted": true, "allowedTools": []}},
        })
        .to_string(),
    )
    .unwrap();
    let tmux = Tmux::new(&env);
    let pane = tmux.shell();
    pane.run(&format!(
        "{} --permission-mode default 'make a file and count to forty'",
        claude.to_string_lossy()
    ));
    walk(&pane, "claude-code", "Do you want", "Enter");
    drop(tmux);

    // Codex in its read-only sandbox, asking when a command must leave it.
    let Some(codex) = std::env::var_os("STEPPER_TEST_CODEX_CLI") else {
        return;
    };
    let env = TestEnv::new();
    env.fake.respond_with(codex_script);
    env.codex_config();
    let config = env.home.path().join(".codex/config.toml");
    let mut toml = std::fs::read_to_string(&config).unwrap();
    toml.push_str(&format!(
        "\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        env.project.path().display()
    ));
    std::fs::write(&config, toml).unwrap();
    let tmux = Tmux::new(&env);
    let pane = tmux.shell();
    // Codex draws on the alternate screen (nothing goes to scrollback): a tall window
    // keeps the whole turn in view.
    tmux.tmux(&["resize-window", "-t", pane.id(), "-y", "110"]);
    pane.run(&format!(
        "{} -m gpt-5.5 -s read-only -a on-request 'make a file and count to forty'",
        codex.to_string_lossy()
    ));
    // Its nudge towards a newer model, declined.
    pane.wait_for_text("Use existing model");
    pane.press("Down");
    pane.press("Enter");
    walk(&pane, "codex", "Would you like to run", "y");
}
