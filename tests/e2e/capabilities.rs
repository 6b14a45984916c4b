//! Capabilities in layers' and agents' tool lists, against the fake LLM: an agent denied
//! `edit` changes no file through any tool, in any dialect — multi_edit, write, apply_patch,
//! or a command under `--yes` (`echo > f`, `tee`, `sed -i`, python, git, `cp`, subshells) —
//! with the read-only sandbox where the machine has one and through the plan-mode gate where
//! it does not, while its read-only commands still run.

use serde_json::json;
use stepper_e2e::fake_llm::{responses_call_stream, tool_use_stream};
use stepper_e2e::{Reply, Route, TestEnv, submit, until_turn_finished};
use stepper_protocol::{AppEvent, EventEnvelope, PermissionMode, ToolCallStatus, TurnStatus};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A repository whose `f.txt` says `committed` at HEAD and `original` in the work tree, and a
/// `g.txt` to copy over it.
fn project(env: &TestEnv) {
    let dir = env.project.path();
    std::fs::write(dir.join("f.txt"), "committed\n").unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "f.txt"],
        &[
            "-c",
            "user.name=a",
            "-c",
            "user.email=a@e",
            "commit",
            "-q",
            "-m",
            "x",
        ],
    ] {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }
    std::fs::write(dir.join("f.txt"), "original\n").unwrap();
    std::fs::write(dir.join("g.txt"), "other\n").unwrap();
}

/// The project's files and their contents (outside `.git` and `.stepper`).
fn files(env: &TestEnv) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = std::fs::read_dir(env.project.path())
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).unwrap_or_default(),
            )
        })
        .collect();
    all.sort();
    all
}

/// Lines that change `f.txt` (or make a file) in every way a shell can.
const ATTACKS: &[&str] = &[
    "echo changed > f.txt",
    "echo changed | tee f.txt",
    "sed -i s/original/changed/ f.txt",
    "python3 -c \"open('f.txt', 'w').write('changed')\"",
    "git checkout -- f.txt",
    "cp g.txt f.txt",
    "(echo changed > f.txt)",
    "{ echo changed; } > f.txt",
    "bash -c 'echo changed > f.txt'",
    "echo $(echo changed > f.txt)",
    "touch new.txt",
];

/// Run one turn of a session in `mode` and return its events.
async fn turn(env: &TestEnv, mode: PermissionMode, vars: &[(&str, &str)]) -> Vec<EventEnvelope> {
    env.start_daemon_with(vars);
    let client = env.client().await;
    let id = env.create_session(&client, Some(mode)).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    submit(&client, &id, "change f.txt").await;
    until_turn_finished(&mut events).await
}

/// The output of each finished tool call, by call id.
fn outputs(seen: &[EventEnvelope]) -> Vec<(String, ToolCallStatus, String)> {
    seen.iter()
        .filter_map(|e| match &e.event {
            AppEvent::ToolCallFinished {
                call_id,
                status,
                output,
                ..
            } => Some((call_id.clone(), *status, output.clone())),
            _ => None,
        })
        .collect()
}

fn finished_status(seen: &[EventEnvelope]) -> TurnStatus {
    seen.iter()
        .find_map(|e| match &e.event {
            AppEvent::TurnFinished { status, .. } => Some(*status),
            _ => None,
        })
        .expect("a TurnFinished")
}

/// A layer denied `edit` (Claude Code's dialect) under `--yes`: its model's MultiEdit,
/// Write and Edit are not its tools, and every command that would write fails — at the OS
/// with the sandbox, at the gate without — while `cat` runs.
async fn denied_edit_anthropic(sandbox: bool) {
    let env = TestEnv::new();
    project(&env);
    write(
        &env.project.path().join(".stepper/stepper.md"),
        "---\nname: look\ndisallowed-tools: [edit]\n---\nLook, change nothing.\n",
    );
    let mut calls: Vec<(String, &str, serde_json::Value)> = vec![
        (
            "toolu_multi".into(),
            "MultiEdit",
            json!({"file_path": "f.txt", "edits": [{"old_string": "original", "new_string": "changed"}]}),
        ),
        (
            "toolu_write".into(),
            "Write",
            json!({"file_path": "f.txt", "content": "changed\n"}),
        ),
        (
            "toolu_edit".into(),
            "Edit",
            json!({"file_path": "f.txt", "old_string": "original", "new_string": "changed"}),
        ),
        ("toolu_cat".into(), "Bash", json!({"command": "cat f.txt"})),
    ];
    for (i, line) in ATTACKS.iter().enumerate() {
        calls.push((format!("toolu_sh{i}"), "Bash", json!({ "command": line })));
    }
    let borrowed: Vec<(&str, &str, serde_json::Value)> = calls
        .iter()
        .map(|(id, name, args)| (id.as_str(), *name, args.clone()))
        .collect();
    env.fake.push(Reply::Sse(tool_use_stream(&borrowed)));
    let vars: &[(&str, &str)] = if sandbox {
        &[]
    } else {
        // A kernel without Landlock, and no bubblewrap.
        &[
            ("STEPPER_SANDBOX_MAX_ABI", "0"),
            ("STEPPER_SANDBOX_BWRAP", "off"),
        ]
    };
    let before = files(&env);
    let seen = turn(&env, PermissionMode::Auto, vars).await;
    assert_eq!(finished_status(&seen), TurnStatus::Completed, "{seen:#?}");
    assert_eq!(files(&env), before, "no file changed, none was made");

    // The model was not offered a tool that writes.
    let request = &env.fake.requests()[0];
    let offered: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for name in ["Write", "Edit", "MultiEdit", "apply_patch"] {
        assert!(!offered.contains(&name), "{name} offered: {offered:?}");
    }
    assert!(
        offered.contains(&"Bash") && offered.contains(&"Read"),
        "{offered:?}"
    );

    let outputs = outputs(&seen);
    let output = |id: &str| {
        outputs
            .iter()
            .find(|(call, _, _)| call == id)
            .map(|(_, status, text)| (*status, text.clone()))
            .unwrap_or_else(|| panic!("no result for {id}: {outputs:#?}"))
    };
    // Its read-only commands run.
    let (status, text) = output("toolu_cat");
    assert_eq!(status, ToolCallStatus::Ok, "{text}");
    assert!(text.contains("original"), "{text}");
    // In the sandbox, the lines run and the OS refuses their writes; leaving the sandbox
    // is refused too. Without it, the gate refuses what plan mode refuses.
    if sandbox {
        let (_, text) = output("toolu_sh0");
        assert!(
            (text.contains("Permission denied") || text.contains("Read-only file system"))
                && text.contains("may not change files"),
            "{text}"
        );
    } else {
        for (i, line) in ATTACKS.iter().enumerate() {
            let (status, text) = output(&format!("toolu_sh{i}"));
            assert_eq!(status, ToolCallStatus::Denied, "{line}: {text}");
            assert!(text.contains("only reads"), "{line}: {text}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layer_denied_edit_changes_no_file_in_the_read_only_sandbox() {
    let env = TestEnv::new();
    if !crate::sandbox::landlock(&env) {
        return;
    }
    denied_edit_anthropic(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layer_denied_edit_changes_no_file_through_the_gate_without_a_sandbox() {
    denied_edit_anthropic(false).await;
}

/// The same in Codex's dialect: no apply_patch is offered, a call of it changes nothing, and
/// `shell` writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layer_denied_edit_gets_no_apply_patch_and_its_shell_writes_nothing() {
    let env = TestEnv::new();
    project(&env);
    write(
        &env.project.path().join(".stepper/stepper.md"),
        "---\nname: look\nmodel: openai/gpt-5.1\ndisallowed-tools: [edit]\n---\nLook.\n",
    );
    let patch = "*** Begin Patch\n*** Update File: f.txt\n@@\n-original\n+changed\n*** End Patch";
    env.fake.push_to(
        Route::Responses,
        Reply::Sse(responses_call_stream(&[
            ("call_patch", "apply_patch", json!({ "input": patch })),
            (
                "call_sh",
                "shell",
                json!({"command": ["bash", "-lc", "echo changed > f.txt"]}),
            ),
            (
                "call_cp",
                "shell",
                json!({"command": ["cp", "g.txt", "f.txt"]}),
            ),
        ])),
    );
    let before = files(&env);
    let seen = turn(&env, PermissionMode::Auto, &[]).await;
    assert_eq!(finished_status(&seen), TurnStatus::Completed, "{seen:#?}");
    assert_eq!(files(&env), before);
    let request = &env.fake.seen(Route::Responses)[0].body;
    let offered: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(offered.contains(&"shell"), "{offered:?}");
    for name in ["apply_patch", "edit", "write", "multi_edit"] {
        assert!(!offered.contains(&name), "{name} offered: {offered:?}");
    }
}

/// An agent file in Claude Code's format with `disallowedTools: Write, Edit`, dispatched:
/// what it may not do holds for it too, and one with `tools: Read, Bash` runs its commands
/// read-only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispatched_agents_without_edit_change_nothing() {
    let env = TestEnv::new();
    project(&env);
    env.trust_project();
    write(
        &env.project.path().join(".stepper/setting.json"),
        &json!({"dispatch": true}).to_string(),
    );
    write(
        &env.project.path().join(".claude/agents/safe.md"),
        "---\nname: safe\ndescription: Looks\ndisallowedTools: Write, Edit\n---\nSAFE-PROMPT\n",
    );
    write(
        &env.project.path().join(".claude/agents/runner.md"),
        "---\nname: runner\ndescription: Runs\ntools: Read, Bash\n---\nRUNNER-PROMPT\n",
    );
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_d",
        "dispatch",
        json!({"tasks": [
            {"task": "SAFE-TASK", "agent": "safe"},
            {"task": "RUNNER-TASK", "agent": "runner"},
        ]}),
    )])));
    env.fake.push_when(
        "SAFE-TASK",
        Reply::Sse(tool_use_stream(&[
            (
                "toolu_m",
                "MultiEdit",
                json!({"file_path": "f.txt", "edits": [{"old_string": "original", "new_string": "changed"}]}),
            ),
            ("toolu_s1", "Bash", json!({"command": "echo changed > f.txt"})),
        ])),
    );
    env.fake.push_when(
        "RUNNER-TASK",
        Reply::Sse(tool_use_stream(&[(
            "toolu_s2",
            "Bash",
            json!({"command": "sed -i s/original/changed/ f.txt; touch new.txt"}),
        )])),
    );
    let before = files(&env);
    let seen = turn(&env, PermissionMode::Auto, &[]).await;
    assert_eq!(finished_status(&seen), TurnStatus::Completed, "{seen:#?}");
    assert_eq!(files(&env), before);
    let requests = env.fake.requests();
    let offered = |prompt: &str| -> Vec<String> {
        let request = requests
            .iter()
            .find(|r| r["system"].to_string().contains(prompt))
            .unwrap_or_else(|| panic!("no request with {prompt}"));
        request["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    let safe = offered("SAFE-PROMPT");
    assert!(safe.contains(&"Bash".to_string()), "{safe:?}");
    assert!(
        !safe
            .iter()
            .any(|t| ["Write", "Edit", "MultiEdit"].contains(&t.as_str())),
        "{safe:?}"
    );
    assert_eq!(offered("RUNNER-PROMPT"), ["Bash", "Read"]);
}
