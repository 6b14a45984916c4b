//! Parallel workers in worktrees of their own (`isolation: worktree`) against the fake LLM:
//! each edits its own copy of the repository, their changes come back in task order, a
//! conflict stops the merge and keeps the branch, and rewind undoes the merged turn.

use std::path::Path;

use serde_json::json;
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{Reply, TestEnv, submit, until_turn_finished};
use stepper_protocol::{AppEvent, EventEnvelope, KeptReason, PermissionMode, TurnStatus};

/// Plan, then workers in worktrees, then a review that is told what the merge did.
const ISOLATED: &str = "---\nname: split\n---\nSplit the work.\n\n---\nname: work\nparallel: true\nisolation: worktree\n---\nDo your one task.\n\n---\nname: review\n---\nReview the workers' changes.\n";

const LINES: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\n";

fn sh(dir: &Path, line: &str) -> String {
    let out = std::process::Command::new("bash")
        .args(["-c", line])
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A trusted repository with `f.txt` committed and the layers above.
fn project(env: &TestEnv) {
    let dir = env.project.path();
    std::fs::write(dir.join("f.txt"), LINES).unwrap();
    std::fs::create_dir_all(dir.join(".stepper")).unwrap();
    std::fs::write(dir.join(".stepper/stepper.md"), ISOLATED).unwrap();
    sh(
        dir,
        "git init -q -b main && git add -A && git commit -qm first",
    );
    env.trust_project();
}

/// Workers and subagents are answered by their task: `EDIT <from> <to>` edits `f.txt` in the worker's
/// folder, then says it is done.
fn answer_workers(env: &TestEnv) {
    env.fake.respond_with(|_, body| {
        let task = task_of(body)?;
        let mut words = task.split_whitespace().skip(1);
        let (from, to) = (words.next()?.to_string(), words.next()?.to_string());
        if body["messages"].as_array()?.len() > 1 {
            return Some(Reply::text(&[&format!("changed {from} to {to}")]));
        }
        Some(Reply::Sse(tool_use_stream(&[(
            "toolu_edit",
            "edit",
            json!({"path": "f.txt", "old_string": from, "new_string": to}),
        )])))
    });
}

/// The task of a worker's (`Your task: …`) or a dispatched subagent's (the task alone)
/// request, when it is one of `EDIT …`.
fn task_of(body: &serde_json::Value) -> Option<String> {
    let first = body["messages"][0]["content"][0]["text"].as_str()?;
    let task = first
        .strip_prefix("Your task:\n\n")
        .unwrap_or(first)
        .lines()
        .next()?;
    task.starts_with("EDIT ").then(|| task.to_string())
}

fn assign(tasks: &[&str]) -> Reply {
    Reply::Sse(tool_use_stream(&[(
        "toolu_assign",
        "assign_tasks",
        json!({ "tasks": tasks }),
    )]))
}

fn merged_event(seen: &[EventEnvelope]) -> AppEvent {
    seen.iter()
        .find(|e| matches!(e.event, AppEvent::WorktreesMerged { .. }))
        .map(|e| e.event.clone())
        .expect("a WorktreesMerged event")
}

fn finished(seen: &[EventEnvelope]) -> (TurnStatus, Option<String>) {
    seen.iter()
        .find_map(|e| match &e.event {
            AppEvent::TurnFinished { status, error, .. } => Some((*status, error.clone())),
            _ => None,
        })
        .expect("a TurnFinished")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_editing_one_file_merge_cleanly_and_rewind_undoes_them() {
    let env = TestEnv::new();
    project(&env);
    answer_workers(&env);
    env.start_daemon();
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(assign(&[
        "EDIT two TWO",
        "EDIT five FIVE",
        "EDIT eight EIGHT",
    ]));
    env.fake.push(Reply::text(&["three tasks assigned"]));
    env.fake.push(Reply::text(&["REVIEWED"]));
    submit(&client, &id, "shout three lines").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None), "{seen:#?}");

    let dir = env.project.path();
    assert_eq!(
        std::fs::read_to_string(dir.join("f.txt")).unwrap(),
        LINES
            .replace("two", "TWO")
            .replace("five", "FIVE")
            .replace("eight", "EIGHT")
    );
    // Each worker said where it worked, each in a worktree of its own.
    let worktrees: Vec<String> = seen
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::SubagentStarted {
                worktree: Some(w), ..
            } => Some(w.path.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(worktrees.len(), 3, "{seen:#?}");
    assert!(worktrees.iter().all(|w| w.contains("stepper-worktrees")));
    let AppEvent::WorktreesMerged {
        layer,
        merged,
        files,
        conflict,
        kept,
        error,
    } = merged_event(&seen)
    else {
        unreachable!()
    };
    assert_eq!(layer, Some(2));
    assert_eq!(merged, vec!["layer-2.1", "layer-2.2", "layer-2.3"]);
    assert_eq!((files, conflict, kept, error), (1, None, vec![], None));
    // A worker is told it works in a worktree, and where.
    let requests = env.fake.requests();
    let worker = requests
        .iter()
        .find(|r| {
            r["messages"][0]["content"]
                .to_string()
                .contains("EDIT five")
        })
        .unwrap();
    assert!(
        worker["system"]
            .to_string()
            .contains("git worktree made for your task alone"),
        "{}",
        worker["system"]
    );
    // The review layer is told what the merge did.
    let review = requests.last().unwrap();
    assert!(
        review["messages"]
            .to_string()
            .contains("were merged into the folder (1 file)"),
        "{}",
        review["messages"]
    );
    // Nothing is left behind: no worktree, no branch; the user's branch is as it was.
    assert_eq!(sh(dir, "git worktree list | wc -l").trim(), "1");
    assert_eq!(sh(dir, "git branch --list 'stepper/*'"), "");
    assert_eq!(sh(dir, "git status --porcelain"), " M f.txt\n");
    let kept = env.run(&["worktrees"]);
    assert!(kept.status.success());
    assert!(
        String::from_utf8_lossy(&kept.stdout).contains("no worktrees"),
        "{}",
        String::from_utf8_lossy(&kept.stdout)
    );

    // Rewind undoes the merged turn.
    let out = env.run(&["rewind", &id, "1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(dir.join("f.txt")).unwrap(), LINES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_on_the_same_lines_conflict_and_the_second_branch_is_kept() {
    let env = TestEnv::new();
    project(&env);
    answer_workers(&env);
    env.start_daemon();
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake
        .push(assign(&["EDIT three FIRST", "EDIT three SECOND"]));
    env.fake.push(Reply::text(&["two tasks assigned"]));
    env.fake.push(Reply::text(&["REVIEWED"]));
    submit(&client, &id, "change line three twice").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None), "{seen:#?}");

    let dir = env.project.path();
    let text = std::fs::read_to_string(dir.join("f.txt")).unwrap();
    assert!(text.contains("FIRST") && !text.contains("SECOND"), "{text}");
    let AppEvent::WorktreesMerged {
        merged,
        conflict,
        kept,
        ..
    } = merged_event(&seen)
    else {
        unreachable!()
    };
    assert_eq!(merged, vec!["layer-2.1"]);
    let conflict = conflict.expect("a conflict");
    assert_eq!(
        (conflict.agent_id.as_str(), conflict.files),
        ("layer-2.2", vec!["f.txt".to_string()])
    );
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].reason, KeptReason::Conflict);
    // The second worker's branch is kept with its change, and its worktree with it.
    let branch = &kept[0].branch;
    assert!(sh(dir, &format!("git show {branch}:f.txt")).contains("SECOND"));
    assert!(Path::new(&kept[0].path).join("f.txt").exists());
    // The next layer is told which files conflict, and so is the user.
    let review = env.fake.requests().last().unwrap().clone();
    let told = review["messages"].to_string();
    assert!(
        told.contains("The merge stopped at task 2")
            && told.contains("f.txt")
            && told.contains(branch.as_str()),
        "{told}"
    );
    let listed = env.run(&["worktrees"]);
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(listed.contains(branch.as_str()), "{listed}");
    // Removing them leaves nothing.
    let removed = env.run(&["worktrees", "--remove"]);
    assert!(
        removed.status.success(),
        "{}",
        String::from_utf8_lossy(&removed.stderr)
    );
    assert_eq!(sh(dir, "git worktree list | wc -l").trim(), "1");
    assert_eq!(sh(dir, "git branch --list 'stepper/*'"), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_folder_runs_its_workers_in_the_folder_and_says_why() {
    let env = TestEnv::new();
    let dir = env.project.path();
    std::fs::write(dir.join("f.txt"), LINES).unwrap();
    std::fs::create_dir_all(dir.join(".stepper")).unwrap();
    std::fs::write(dir.join(".stepper/stepper.md"), ISOLATED).unwrap();
    sh(
        dir,
        "git init -q -b main && git add -A && git commit -qm first",
    );
    answer_workers(&env);
    env.start_daemon();
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(assign(&["EDIT two TWO"]));
    env.fake.push(Reply::text(&["assigned"]));
    env.fake.push(Reply::text(&["REVIEWED"]));
    submit(&client, &id, "shout").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen).0, TurnStatus::Completed, "{seen:#?}");
    assert!(
        seen.iter().any(|e| matches!(&e.event,
            AppEvent::Notice { message } if message.contains("share the folder") && message.contains("trust"))),
        "{seen:#?}"
    );
    assert!(
        std::fs::read_to_string(dir.join("f.txt"))
            .unwrap()
            .contains("TWO")
    );
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e.event, AppEvent::WorktreesMerged { .. }))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispatched_subagents_work_in_worktrees_when_the_settings_say_so() {
    let env = TestEnv::new();
    let dir = env.project.path();
    std::fs::write(dir.join("f.txt"), LINES).unwrap();
    std::fs::create_dir_all(dir.join(".stepper")).unwrap();
    std::fs::write(
        dir.join(".stepper/setting.json"),
        r#"{"dispatch": true, "workerIsolation": "worktree"}"#,
    )
    .unwrap();
    sh(
        dir,
        "git init -q -b main && git add -A && git commit -qm first",
    );
    env.trust_project();
    answer_workers(&env);
    env.start_daemon();
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_dispatch",
        "dispatch",
        json!({"tasks": [{"task": "EDIT one ONE"}, {"task": "EDIT nine NINE"}]}),
    )])));
    env.fake.push(Reply::text(&["both done"]));
    submit(&client, &id, "have two helpers shout").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None), "{seen:#?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("f.txt")).unwrap(),
        LINES.replace("one", "ONE").replace("nine", "NINE")
    );
    let AppEvent::WorktreesMerged {
        layer,
        merged,
        files,
        ..
    } = merged_event(&seen)
    else {
        unreachable!()
    };
    assert_eq!((layer, merged.len(), files), (None, 2, 1));
    // The dispatching model reads what the merge did in the tool's result.
    let last = env.fake.requests().last().unwrap().clone();
    assert!(
        last["messages"]
            .to_string()
            .contains("were merged into the folder"),
        "{}",
        last["messages"]
    );
    assert_eq!(sh(dir, "git worktree list | wc -l").trim(), "1");
}

/// A worker in Default mode under the project's allow rule and the workspace-write sandbox:
/// the rule written for the folder covers the same file in the worktree (nothing asks), and
/// the sandbox lets its commands write in the worktree — and not in the folder itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_is_judged_and_confined_as_in_the_folder_its_worktree_stands_for() {
    let mut env = TestEnv::new();
    if !crate::sandbox::landlock(&env) {
        return;
    }
    // Not under /tmp, which every sandboxed command may write.
    env.project = crate::sandbox::outside();
    let dir = env.project.path();
    std::fs::write(dir.join("f.txt"), LINES).unwrap();
    std::fs::create_dir_all(dir.join(".stepper")).unwrap();
    std::fs::write(dir.join(".stepper/stepper.md"), ISOLATED).unwrap();
    std::fs::write(
        dir.join(".stepper/setting.json"),
        r#"{"permissions": {"allow": ["Edit(./f.txt)", "Bash(bash -c:*)"]}, "sandbox": {"mode": "workspace-write"}}"#,
    )
    .unwrap();
    sh(
        dir,
        "git init -q -b main && git add -A && git commit -qm first",
    );
    env.trust_project();
    let home = dir.display().to_string();
    env.fake.respond_with(move |_, body| {
        task_of(body)?;
        Some(match body["messages"].as_array()?.len() {
            1 => Reply::Sse(tool_use_stream(&[(
                "toolu_edit",
                "edit",
                json!({"path": "f.txt", "old_string": "two", "new_string": "TWO"}),
            )])),
            3 => Reply::Sse(tool_use_stream(&[(
                "toolu_bash",
                "bash",
                json!({"command": format!(
                    "bash -c 'echo from-shell >> f.txt; echo escaped >> {home}/f.txt; true'"
                )}),
            )])),
            _ => Reply::text(&["done"]),
        })
    });
    env.start_daemon();
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(PermissionMode::Default))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(assign(&["EDIT two TWO"]));
    env.fake.push(Reply::text(&["assigned"]));
    env.fake.push(Reply::text(&["REVIEWED"]));
    submit(&client, &id, "shout").await;
    let seen = until_turn_finished(&mut events).await;
    assert_eq!(finished(&seen), (TurnStatus::Completed, None), "{seen:#?}");
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e.event, AppEvent::ApprovalRequested { .. })),
        "nothing asks: {seen:#?}"
    );
    let text = std::fs::read_to_string(dir.join("f.txt")).unwrap();
    assert!(
        text.contains("TWO") && text.contains("from-shell"),
        "{text}"
    );
    assert!(
        !text.contains("escaped"),
        "the worker wrote the folder itself: {text}"
    );
    // The sandbox refused that write: the worktree is all the worker may change.
    assert!(
        seen.iter().any(|e| matches!(&e.event,
            AppEvent::ToolCallFinished { output, .. } if output.contains("Read-only file system"))),
        "{seen:#?}"
    );
}
