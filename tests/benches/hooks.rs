//! What hooks, commands and skills cost. One `PreToolUse` hook (a shell script that reads its input and says
//! nothing) is measured next to the call it guards, `bash true`. Both times come from the
//! same turn's events (`HookRan` and `ToolCallFinished`). Then the whole turn with that hook
//! is set next to the same turn in a folder without hooks. Last, a turn that calls no tool
//! is timed with 5 hooks configured (none of them fire before the model) and with none: the
//! settings are parsed once per turn, and that parse is the start-up cost. Then the same turn
//! with 50 skills, 30 commands and those 5 hooks: the listing is cached on a stat of the
//! files, so a turn pays for the stats and for the longer system prompt, not for reading
//! the files. Runs are interleaved, so the machine's noise falls on every column alike.
//!
//! `cargo bench -p stepper-e2e --bench hooks`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{Reply, TestEnv, read_until};
use stepper_protocol::AppEvent;
use stepper_protocol::client::DaemonClient;
use stepper_protocol::methods::{
    SessionCreate, SessionCreateParams, SessionSubmit, SessionSubmitParams,
};

const RUNS: usize = 40;

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn folder(root: &Path, name: &str, hooks: Option<serde_json::Value>) -> String {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join(".stepper")).unwrap();
    if let Some(hooks) = hooks {
        let script = dir.join(".stepper/quiet.sh");
        std::fs::write(&script, "#!/bin/sh\ncat >/dev/null\nexit 0\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(
            dir.join(".stepper/setting.json"),
            json!({"hooks": hooks}).to_string(),
        )
        .unwrap();
    }
    dir.display().to_string()
}

struct Session {
    id: String,
    events: stepper_protocol::client::EventStream,
}

async fn session(env: &TestEnv, client: &DaemonClient, cwd: String) -> Session {
    let created = client
        .call::<SessionCreate>(SessionCreateParams {
            input_parts: Vec::new(),
            cwd,
            env: env.envs().into_iter().collect(),
            model: None,
            title: None,
            record: None,
            mode: Some(stepper_protocol::PermissionMode::Auto),
            sandbox: None,
            input: None,
            system_prompt: None,
            append_system_prompt: None,
        })
        .await
        .unwrap();
    let id = created.session.id;
    let events = client.subscribe_events(&id, 0).await.unwrap();
    Session { id, events }
}

/// One turn; its wall time, and the `HookRan` and bash call durations it reported.
async fn turn(
    env: &TestEnv,
    client: &DaemonClient,
    s: &mut Session,
    calls_tool: bool,
) -> (Duration, Option<u64>, Option<u64>) {
    if calls_tool {
        env.fake.push(Reply::Sse(tool_use_stream(&[(
            "t1",
            "bash",
            json!({"command": "true"}),
        )])));
    }
    env.fake.push(Reply::text(&["ok"]));
    let t = Instant::now();
    client
        .call::<SessionSubmit>(SessionSubmitParams {
            parts: Vec::new(),
            session_id: s.id.clone(),
            text: "go".into(),
            env: None,
        })
        .await
        .unwrap();
    let events = read_until(&mut s.events, |e| {
        matches!(e.event, AppEvent::TurnFinished { .. })
    })
    .await;
    let took = t.elapsed();
    let mut hook = None;
    let mut tool = None;
    for e in events {
        match e.event {
            AppEvent::HookRan { duration_ms, .. } => hook = Some(duration_ms),
            AppEvent::ToolCallFinished { duration_ms, .. } => tool = Some(duration_ms),
            _ => {}
        }
    }
    (took, hook, tool)
}

fn main() {
    let env = TestEnv::new();
    env.start_daemon();
    let root = env.project.path();
    // The user's own folders: a project's hooks run only once it is trusted.
    env.trust(root);
    let guard = json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.stepper/quiet.sh"}]}]});
    let five = json!({
        "PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "x"}]}],
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "x"}]}],
        "PreCompact": [{"hooks": [{"type": "command", "command": "x"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "x"}]}],
        "PermissionRequest": [{"matcher": "WebFetch", "hooks": [{"type": "command", "command": "x"}]}]
    });
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = env.client().await;
        let mut guarded = session(&env, &client, folder(root, "guarded", Some(guard))).await;
        let mut plain = session(&env, &client, folder(root, "plain", None)).await;
        let loaded_dir = folder(root, "loaded", Some(five.clone()));
        for i in 0..50 {
            let dir = Path::new(&loaded_dir).join(format!(".stepper/skills/skill{i}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("SKILL.md"),
                format!("---\nname: skill{i}\ndescription: Does task number {i} the house way\n---\n{}\n", "Step.\n".repeat(40)),
            )
            .unwrap();
        }
        for i in 0..30 {
            let path = Path::new(&loaded_dir).join(format!(".claude/commands/group{}/cmd{i}.md", i % 3));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, format!("---\ndescription: Command {i}\n---\nDo $ARGUMENTS\n")).unwrap();
        }
        let mut configured = session(&env, &client, folder(root, "five", Some(five))).await;
        let mut loaded = session(&env, &client, loaded_dir).await;
        // Warm: each folder's settings read once, the daemon's paths taken.
        for s in [&mut guarded, &mut plain, &mut configured, &mut loaded] {
            turn(&env, &client, s, true).await;
        }
        let (mut hook, mut tool, mut with, mut without, mut five, mut none) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        let mut all = vec![];
        let mut edited = vec![];
        let touched = Path::new(root).join("loaded/.stepper/skills/skill0/SKILL.md");
        for _ in 0..RUNS {
            let (t, h, b) = turn(&env, &client, &mut guarded, true).await;
            with.push(t);
            hook.push(Duration::from_millis(h.unwrap()));
            tool.push(Duration::from_millis(b.unwrap()));
            without.push(turn(&env, &client, &mut plain, true).await.0);
            five.push(turn(&env, &client, &mut configured, false).await.0);
            none.push(turn(&env, &client, &mut plain, false).await.0);
            all.push(turn(&env, &client, &mut loaded, false).await.0);
            // An edit between turns: the listing is read again.
            let text = std::fs::read_to_string(&touched).unwrap();
            std::fs::write(&touched, format!("{text}.")).unwrap();
            edited.push(turn(&env, &client, &mut loaded, false).await.0);
        }
        let (hook, tool) = (median(&mut hook), median(&mut tool));
        let (with, without) = (median(&mut with), median(&mut without));
        let (five, none) = (median(&mut five), median(&mut none));
        let all = median(&mut all);
        let edited = median(&mut edited);
        println!("{RUNS} runs each, interleaved; medians:");
        println!(
            "  PreToolUse hook (sh script)         {:>7.1} ms   next to the call it guards (bash true): {:.1} ms ({:.2}x)",
            ms(hook),
            ms(tool),
            hook.as_secs_f64() / tool.as_secs_f64().max(1e-9)
        );
        println!(
            "  turn calling bash, with the hook    {:>7.1} ms   without: {:.1} ms (+{:.1} ms, {:.2}x)",
            ms(with),
            ms(without),
            ms(with.saturating_sub(without)),
            with.as_secs_f64() / without.as_secs_f64()
        );
        println!(
            "  turn, 5 hooks configured (unfired) {:>7.1} ms   none: {:.1} ms ({:.2}x)",
            ms(five),
            ms(none),
            five.as_secs_f64() / none.as_secs_f64()
        );
        println!(
            "  turn, 50 skills + 30 commands + 5 hooks {:>5.1} ms   none: {:.1} ms ({:.2}x)",
            ms(all),
            ms(none),
            all.as_secs_f64() / none.as_secs_f64()
        );
        println!(
            "  the same after a skill was edited  {:>7.1} ms   (the listing read again: +{:.1} ms over cached)",
            ms(edited),
            ms(edited.saturating_sub(all))
        );
    });
}
