//! MCP servers against the real reference server (`@modelcontextprotocol/server-everything`,
//! installed by `.ci/run` from npm and named in `STEPPER_TEST_MCP_EVERYTHING`): its tools
//! in a turn through the gate, one server shared by a folder's sessions, a project's server
//! left out until approved, no server left after the daemon is killed, the server over
//! streamable HTTP and legacy SSE, a server killed mid-call started again, an idle one
//! stopped, idle servers past `mcpMaxIdleServers` stopped least recently used first (never
//! one in use), and their memory shown.

use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::Signal;
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{Reply, TestEnv, read_until, submit, until_turn_finished, wait_until};
use stepper_process::testing::processes_with;
use stepper_protocol::methods::{SessionApprove, SessionApproveParams};
use stepper_protocol::{AppEvent, ApprovalDecision, ToolCallStatus, TurnStatus};

/// The server's entry point, or `None` (the test skips, or fails in CI).
pub(crate) fn everything() -> Option<PathBuf> {
    let dir = std::env::var_os("STEPPER_TEST_MCP_EVERYTHING").map(PathBuf::from);
    let entry = dir.map(|d| d.join("@modelcontextprotocol/server-everything/dist/index.js"));
    match entry.filter(|e| e.exists()) {
        Some(entry) if stepper_e2e::needs::program("node", "the MCP tests", "install Node.js") => {
            Some(entry)
        }
        Some(_) => None,
        None => {
            assert!(
                !stepper_e2e::needs::strict(),
                "STEPPER_TEST_MCP_EVERYTHING must name a node_modules with \
                 @modelcontextprotocol/server-everything"
            );
            eprintln!(
                "skipped: needs the MCP reference server (npm install --prefix DIR \
                 @modelcontextprotocol/server-everything, then \
                 STEPPER_TEST_MCP_EVERYTHING=DIR/node_modules)"
            );
            None
        }
    }
}

fn user_servers(env: &TestEnv, servers: serde_json::Value) {
    let dir = env.places().config_dir;
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("setting.json"),
        serde_json::json!({"mcpServers": servers}).to_string(),
    )
    .unwrap();
}

/// The turn's finished tool calls, in order: how each ended and what it gave back.
fn calls(seen: &[stepper_protocol::EventEnvelope]) -> Vec<(ToolCallStatus, String)> {
    seen.iter()
        .filter_map(|e| match &e.event {
            AppEvent::ToolCallFinished { status, output, .. } => Some((*status, output.clone())),
            _ => None,
        })
        .collect()
}

fn echo_call(message: &str) -> Reply {
    Reply::Sse(tool_use_stream(&[(
        "toolu_echo",
        "mcp__everything__echo",
        serde_json::json!({ "message": message }),
    )]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_tool_runs_through_the_gate_and_the_server_is_shared_then_reaped() {
    let Some(entry) = everything() else { return };
    let env = TestEnv::new();
    let marker = format!("mcp-mark-{}", std::process::id());
    user_servers(
        &env,
        serde_json::json!({"everything": {
            "command": "node",
            "args": [entry.display().to_string(), "stdio", marker],
        }}),
    );
    // A server the settings of a trusted project name: not started without approval.
    env.trust_project();
    let project = env.project.path().join(".stepper");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("setting.json"),
        serde_json::json!({"mcpServers": {"repo-tool": {"command": "touch", "args": ["ran"]}}})
            .to_string(),
    )
    .unwrap();
    env.start_daemon();
    let client = env.client().await;
    let other = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(echo_call("hello from the test"));
    env.fake.push(Reply::text(&["echoed"]));
    submit(&client, &id, "echo something").await;

    // Default mode asks before an MCP tool; another client answers.
    let mut seen = read_until(&mut events, |e| {
        matches!(e.event, AppEvent::ApprovalRequested { .. })
    })
    .await;
    let Some(AppEvent::ApprovalRequested {
        request_id, tool, ..
    }) = seen.last().map(|e| e.event.clone())
    else {
        unreachable!()
    };
    assert_eq!(tool, "mcp__everything__echo");
    other
        .call::<SessionApprove>(SessionApproveParams {
            session_id: id.clone(),
            request_id,
            decision: ApprovalDecision::Allow,
        })
        .await
        .unwrap();
    seen.extend(until_turn_finished(&mut events).await);
    let finished = seen.iter().find_map(|e| match &e.event {
        AppEvent::ToolCallFinished { status, output, .. } => Some((*status, output.clone())),
        _ => None,
    });
    let (status, output) = finished.expect("the call finished");
    assert_eq!(status, ToolCallStatus::Ok, "{output}");
    assert!(output.contains("hello from the test"), "{output}");
    assert!(
        seen.iter()
            .any(|e| matches!(&e.event, AppEvent::Notice { message }
        if message.contains("repo-tool") && message.contains("not approved")))
    );
    assert!(
        !env.project.path().join("ran").exists(),
        "the project's server never ran"
    );
    // The model was offered the server's tools, and got the result.
    let requests = env.fake.requests();
    let names = requests[0]["tools"].to_string();
    assert!(names.contains("mcp__everything__echo"), "{names}");
    assert!(
        requests[1]["messages"]
            .to_string()
            .contains("hello from the test")
    );
    assert_eq!(processes_with(&marker).len(), 1);

    // A second session in the folder shares the running server.
    let second = env
        .create_session(&client, Some(stepper_protocol::PermissionMode::Auto))
        .await;
    let mut second_events = client.subscribe_events(&second, 0).await.unwrap();
    env.fake.push(echo_call("second session"));
    env.fake.push(Reply::text(&["again"]));
    submit(&client, &second, "echo again").await;
    let seen = until_turn_finished(&mut second_events).await;
    assert!(seen.iter().any(|e| matches!(
        &e.event,
        AppEvent::TurnFinished {
            status: TurnStatus::Completed,
            ..
        }
    )));
    assert_eq!(
        processes_with(&marker).len(),
        1,
        "one server for the folder"
    );

    // SIGKILL: the next daemon reaps the server the dead one started.
    drop(events);
    drop(second_events);
    drop(client);
    drop(other);
    env.signal_daemon(Signal::SIGKILL);
    env.start_daemon();
    wait_until(
        "the old daemon's MCP server to be reaped",
        Duration::from_secs(20),
        || processes_with(&marker).is_empty(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_fails_leaves_its_tools_out_and_says_why() {
    let env = TestEnv::new();
    user_servers(
        &env,
        serde_json::json!({
            "missing": {"command": "/nonexistent/mcp-server"},
            "silent": {"command": "sleep", "args": ["30"]},
            "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp"}
        }),
    );
    // The daemon reads the timeout from its own environment.
    env.start_daemon_with(&[("STEPPER_MCP_CONNECT_TIMEOUT_MS", "500")]);
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::text(&["fine without them"]));
    submit(&client, &id, "hi").await;
    let seen = until_turn_finished(&mut events).await;
    assert!(seen.iter().any(|e| matches!(
        &e.event,
        AppEvent::TurnFinished {
            status: TurnStatus::Completed,
            ..
        }
    )));
    let notices: Vec<String> = seen
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::Notice { message } => Some(message.clone()),
            _ => None,
        })
        .collect();
    let said = notices.join("\n");
    assert!(said.contains("\"missing\": cannot start"), "{said}");
    assert!(
        said.contains("\"silent\": it did not answer within 500 ms"),
        "{said}"
    );
    assert!(
        said.contains("\"remote\": cannot reach http://127.0.0.1:9/mcp — check `url`"),
        "{said}"
    );
    assert!(
        !env.fake.requests()[0]["tools"]
            .to_string()
            .contains("mcp__")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_mcp_json_runs_once_the_user_approves_it() {
    let Some(entry) = everything() else { return };
    let env = TestEnv::new();
    let root = env.project.path();
    std::fs::write(
        root.join(".mcp.json"),
        serde_json::json!({"mcpServers": {"everything": {
            "command": "node",
            "args": [entry.display().to_string(), "stdio"],
        }}})
        .to_string(),
    )
    .unwrap();
    // The repository approving its own servers counts for nothing.
    std::fs::create_dir_all(root.join(".stepper")).unwrap();
    std::fs::write(
        root.join(".stepper/setting.json"),
        r#"{"enableAllProjectMcpServers": true, "enabledMcpjsonServers": ["everything"]}"#,
    )
    .unwrap();
    env.start_daemon();
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(stepper_protocol::PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::text(&["no tools yet"]));
    submit(&client, &id, "first").await;
    let seen = until_turn_finished(&mut events).await;
    // Untrusted, the folder's servers are not even offered for approval: the notice names
    // them with the command that trusts the folder.
    assert!(
        seen.iter()
            .any(|e| matches!(&e.event, AppEvent::Notice { message }
        if message.contains(".mcp.json: MCP servers (everything)")
            && message.contains("stepper trust"))),
        "{seen:#?}"
    );
    assert!(
        !env.fake.requests()[0]["tools"]
            .to_string()
            .contains("mcp__")
    );

    // Trusted, the server still waits for the user's own approval.
    env.trust_project();
    env.fake.push(Reply::text(&["still no tools"]));
    submit(&client, &id, "again").await;
    let seen = until_turn_finished(&mut events).await;
    assert!(
        seen.iter()
            .any(|e| matches!(&e.event, AppEvent::Notice { message }
        if message.contains("everything") && message.contains("not approved")
            && message.contains("setting.local.json"))),
        "{seen:#?}"
    );
    assert!(
        !env.fake.requests()[1]["tools"]
            .to_string()
            .contains("mcp__")
    );

    // The user approves it in the git-ignored local settings: the next turn has its tools.
    std::fs::write(
        root.join(".stepper/setting.local.json"),
        r#"{"enabledMcpjsonServers": ["everything"]}"#,
    )
    .unwrap();
    env.fake.push(echo_call("approved now"));
    env.fake.push(Reply::text(&["done"]));
    submit(&client, &id, "second").await;
    let seen = until_turn_finished(&mut events).await;
    let output = seen.iter().find_map(|e| match &e.event {
        AppEvent::ToolCallFinished { output, .. } => Some(output.clone()),
        _ => None,
    });
    assert!(
        output.is_some_and(|o| o.contains("approved now")),
        "{seen:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_streams_as_tool_output_and_a_hung_call_times_out() {
    let Some(entry) = everything() else { return };
    let env = TestEnv::new();
    user_servers(
        &env,
        serde_json::json!({"everything": {
            "command": "node",
            "args": [entry.display().to_string(), "stdio"],
        }}),
    );
    env.start_daemon_with(&[("STEPPER_MCP_TOOL_TIMEOUT_MS", "1500")]);
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(stepper_protocol::PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let long = |duration: f64, steps: u32| {
        Reply::Sse(tool_use_stream(&[(
            "toolu_long",
            "mcp__everything__trigger-long-running-operation",
            serde_json::json!({ "duration": duration, "steps": steps }),
        )]))
    };
    env.fake.push(long(0.3, 3));
    env.fake.push(Reply::text(&["done"]));
    submit(&client, &id, "run it").await;
    let seen = until_turn_finished(&mut events).await;
    let streamed: String = seen
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::ToolOutputDelta { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    // The last notification may race the result (the SDK handles notifications apart from
    // responses), so the earlier ones are what must show.
    assert!(
        streamed.contains("progress 1/3") && streamed.contains("progress 2/3"),
        "{streamed:?}"
    );

    // A call past STEPPER_MCP_TOOL_TIMEOUT_MS ends with a clear error; the turn goes on.
    env.fake.push(long(30.0, 1));
    env.fake.push(Reply::text(&["it timed out"]));
    submit(&client, &id, "run it long").await;
    let seen = until_turn_finished(&mut events).await;
    let (status, output) = calls(&seen).remove(0);
    assert_eq!(status, ToolCallStatus::Error);
    assert!(output.contains("STEPPER_MCP_TOOL_TIMEOUT_MS"), "{output}");
    assert!(seen.iter().any(|e| matches!(
        &e.event,
        AppEvent::TurnFinished {
            status: TurnStatus::Completed,
            ..
        }
    )));
}

/// A server-everything serving HTTP (`mode`: `streamableHttp` or `sse`) on a free port,
/// killed when dropped.
struct Served {
    child: std::process::Child,
    port: u16,
}

impl Served {
    fn start(entry: &std::path::Path, mode: &str) -> Served {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new("node")
            .arg(entry)
            .arg(mode)
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        wait_until(
            &format!("server-everything ({mode}) to listen"),
            Duration::from_secs(20),
            || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
        );
        Served { child, port }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_servers_over_streamable_http_and_legacy_sse() {
    let Some(entry) = everything() else { return };
    let web = Served::start(&entry, "streamableHttp");
    let old = Served::start(&entry, "sse");
    let env = TestEnv::new();
    user_servers(
        &env,
        serde_json::json!({
            "web": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", web.port),
                    "headers": {"X-Test": "${HOME:-none}"}},
            "old": {"type": "sse", "url": format!("http://127.0.0.1:{}/sse", old.port)},
        }),
    );
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[
        (
            "toolu_web",
            "mcp__web__echo",
            serde_json::json!({"message": "over streamable HTTP"}),
        ),
        (
            "toolu_old",
            "mcp__old__echo",
            serde_json::json!({"message": "over SSE"}),
        ),
        (
            "toolu_roots",
            "mcp__web__get-roots-list",
            serde_json::json!({}),
        ),
    ])));
    env.fake.push(Reply::text(&["both answered"]));
    submit(&client, &id, "echo over both").await;

    // Each call is asked; the approval says what the server says of its tool.
    let mut seen = Vec::new();
    let mut summaries = Vec::new();
    for _ in 0..3 {
        seen.extend(
            read_until(&mut events, |e| {
                matches!(e.event, AppEvent::ApprovalRequested { .. })
            })
            .await,
        );
        let Some(AppEvent::ApprovalRequested {
            request_id,
            summary,
            ..
        }) = seen.last().map(|e| e.event.clone())
        else {
            unreachable!()
        };
        summaries.push(summary);
        client
            .call::<SessionApprove>(SessionApproveParams {
                session_id: id.clone(),
                request_id,
                decision: ApprovalDecision::Allow,
            })
            .await
            .unwrap();
    }
    seen.extend(until_turn_finished(&mut events).await);
    let outputs: Vec<(ToolCallStatus, String)> = calls(&seen);
    assert_eq!(outputs.len(), 3, "{outputs:?}");
    assert!(
        outputs
            .iter()
            .all(|(status, _)| *status == ToolCallStatus::Ok),
        "{outputs:?}"
    );
    let said = format!("{outputs:?}");
    assert!(said.contains("over streamable HTTP"), "{said}");
    assert!(said.contains("over SSE"), "{said}");
    // The roots the client gives are the session's folder.
    let folder = env.project.path().canonicalize().unwrap();
    let folder = folder.display().to_string();
    assert!(
        outputs[2].1.contains(folder.trim_start_matches('/')),
        "{said}"
    );
    assert!(
        summaries
            .iter()
            .any(|s| s.contains("get-roots-list") && s.contains("read-only")),
        "{summaries:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_starts_again_and_an_idle_one_stops() {
    let Some(entry) = everything() else { return };
    let env = TestEnv::new();
    let marker = format!("mcp-kill-{}", std::process::id());
    user_servers(
        &env,
        serde_json::json!({"everything": {
            "command": "node",
            "args": [entry.display().to_string(), "stdio", marker],
        }}),
    );
    env.start_daemon_with(&[("STEPPER_MCP_IDLE_MS", "1500")]);
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(stepper_protocol::PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_long",
        "mcp__everything__trigger-long-running-operation",
        serde_json::json!({ "duration": 60, "steps": 60 }),
    )])));
    env.fake.push(Reply::text(&["it died"]));
    submit(&client, &id, "run it").await;
    let mut seen = read_until(&mut events, |e| {
        matches!(e.event, AppEvent::ToolOutputDelta { .. })
    })
    .await;
    let pids = processes_with(&marker);
    assert_eq!(pids.len(), 1);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pids[0] as i32), Signal::SIGKILL).unwrap();
    seen.extend(until_turn_finished(&mut events).await);
    let (status, output) = calls(&seen).remove(0);
    assert_eq!(status, ToolCallStatus::Error, "{output}");
    assert!(seen.iter().any(|e| matches!(
        &e.event,
        AppEvent::TurnFinished {
            status: TurnStatus::Completed,
            ..
        }
    )));

    // The next turn starts it again; its tools were known, so the turn does not wait.
    env.fake.push(echo_call("back again"));
    env.fake.push(Reply::text(&["echoed"]));
    submit(&client, &id, "echo").await;
    let seen = until_turn_finished(&mut events).await;
    let (status, output) = calls(&seen).remove(0);
    assert_eq!(status, ToolCallStatus::Ok, "{output}");
    assert!(output.contains("back again"), "{output}");
    let again = processes_with(&marker);
    assert_eq!(again.len(), 1);
    assert_ne!(again, pids, "a new server");
    // Every client of the folder's sessions hears of it: it exited, then it is back.
    let mut heard = seen.clone();
    let back = |e: &stepper_protocol::EventEnvelope| matches!(&e.event, AppEvent::McpServerStatus { status: stepper_protocol::methods::McpStatus::Connected, tools: Some(n), .. } if *n > 0);
    if !heard.iter().any(back) {
        heard.extend(read_until(&mut events, back).await);
    }
    assert!(heard.iter().any(|e| matches!(&e.event,
        AppEvent::McpServerStatus { server, status: stepper_protocol::methods::McpStatus::Failed, reason: Some(why), .. }
        if server == "everything" && why.contains("exited"))), "{heard:#?}");

    // No turn uses it: it stops once idle.
    wait_until(
        "the idle MCP server to stop",
        Duration::from_secs(20),
        || processes_with(&marker).is_empty(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stepper_mcp_adds_lists_gets_and_removes_servers() {
    let Some(entry) = everything() else { return };
    let env = TestEnv::new();
    env.start_daemon_with(&[("STEPPER_MCP_CONNECT_TIMEOUT_MS", "20000")]);
    let text = |out: std::process::Output| {
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let entry = entry.display().to_string();
    let (code, said) = text(env.run(&["mcp", "add", "everything", "--", "node", &entry, "stdio"]));
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("setting.json"), "{said}");
    let (code, said) = text(env.run(&[
        "mcp", "add", "repo", "--scope", "project", "--", "touch", "ran",
    ]));
    assert_eq!(code, Some(0), "{said}");
    assert!(env.project.path().join(".mcp.json").is_file());
    let (code, said) = text(env.run(&[
        "mcp",
        "add",
        "web",
        "--transport",
        "http",
        "-H",
        "Authorization: Bearer ${TOKEN}",
        "http://127.0.0.1:9/mcp",
    ]));
    assert_eq!(code, Some(0), "{said}");
    // A bad entry is refused with what to fix, and nothing is written.
    let (code, said) = text(env.run(&["mcp", "add", "a__b", "--", "x"]));
    assert_ne!(code, Some(0));
    assert!(said.contains("rename it"), "{said}");

    let (code, said) = text(env.run(&["mcp", "list"]));
    assert_eq!(code, Some(0), "{said}");
    let line = |name: &str| {
        said.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("everything").contains("connected"), "{said}");
    assert!(line("repo").contains("untrusted folder"), "{said}");
    assert!(line("web").contains("failed"), "{said}");
    assert!(
        said.contains("cannot reach http://127.0.0.1:9/mcp"),
        "{said}"
    );
    // Trusted, the project's server waits for the user's approval.
    env.trust_project();
    let (_, said) = text(env.run(&["mcp", "list"]));
    assert!(
        said.lines()
            .any(|l| l.starts_with("repo") && l.contains("not approved")),
        "{said}"
    );
    assert!(
        !env.project.path().join("ran").exists(),
        "not approved: never run"
    );
    // The token stays a variable: nothing expanded is shown.
    let (_, json) = text(env.run(&["mcp", "list", "--json"]));
    let list: serde_json::Value = serde_json::from_str(&json).unwrap();
    let everything = list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "everything")
        .unwrap();
    assert_eq!(everything["scope"], "user");
    assert_eq!(everything["transport"], "stdio");
    assert!(
        everything["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "mcp__everything__echo")
    );
    assert!(everything["protocolVersion"].is_string());

    let (code, said) = text(env.run(&["mcp", "get", "everything"]));
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("mcp__everything__echo"), "{said}");
    let (code, _) = text(env.run(&["mcp", "get", "nothing"]));
    assert_eq!(code, Some(1));

    let (code, said) = text(env.run(&["mcp", "remove", "repo"]));
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains(".mcp.json"), "{said}");
    let (code, said) = text(env.run(&["mcp", "remove", "repo"]));
    assert_eq!(code, Some(1), "{said}");
    let (_, said) = text(env.run(&["mcp", "list"]));
    assert!(!said.contains("repo"), "{said}");

    // A settings file with comments is not rewritten (they would be lost).
    let user = env.places().config_dir.join("setting.json");
    let before = std::fs::read_to_string(&user).unwrap();
    let commented = format!("// mine\n{before}");
    std::fs::write(&user, &commented).unwrap();
    let (code, said) = text(env.run(&["mcp", "remove", "web"]));
    assert_ne!(code, Some(0));
    assert!(said.contains("comments"), "{said}");
    assert_eq!(std::fs::read_to_string(&user).unwrap(), commented);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_tools_are_known_does_not_hold_up_a_turn() {
    let Some(entry) = everything() else { return };
    let env = TestEnv::new();
    // The server starts only once the file `go` exists.
    let go = env.project.path().join("go");
    let script = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; exec node '{}' stdio",
        go.display(),
        entry.display()
    );
    user_servers(
        &env,
        serde_json::json!({"everything": {"command": "sh", "args": ["-c", script]}}),
    );
    std::fs::write(&go, "").unwrap();
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    // Never seen before: the first turn waits for it, and its tools are kept.
    env.fake.push(Reply::text(&["first"]));
    submit(&client, &id, "hi").await;
    until_turn_finished(&mut events).await;
    assert!(
        env.fake.requests()[0]["tools"]
            .to_string()
            .contains("mcp__everything__echo")
    );
    drop(events);
    drop(client);
    let out = env.run(&["daemon", "stop"]);
    assert!(out.status.success());

    // A new daemon: the server cannot start yet, and a turn that does not use it runs
    // anyway, offering the tools it listed last.
    // (Were the turn to wait, it would wait out this timeout and the test time out.)
    std::fs::remove_file(&go).unwrap();
    env.start_daemon_with(&[("STEPPER_MCP_CONNECT_TIMEOUT_MS", "600000")]);
    let client = env.client().await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::text(&["second"]));
    submit(&client, &id, "hi again").await;
    // The first turn, replayed, then the second.
    until_turn_finished(&mut events).await;
    let seen = until_turn_finished(&mut events).await;
    assert!(seen.iter().any(|e| matches!(
        &e.event,
        AppEvent::TurnFinished {
            status: TurnStatus::Completed,
            ..
        }
    )));
    assert!(
        env.fake.requests()[1]["tools"]
            .to_string()
            .contains("mcp__everything__echo"),
        "the kept tools are offered while it starts"
    );
    assert!(
        !seen
            .iter()
            .any(|e| matches!(&e.event, AppEvent::Notice { message } if message.contains("MCP"))),
        "nothing to say: its tools are known"
    );

    // Once it can start, a call to its tool waits for it.
    env.fake.push(echo_call("it came up"));
    env.fake.push(Reply::text(&["done"]));
    client
        .call::<stepper_protocol::methods::SessionSetMode>(
            stepper_protocol::methods::SessionSetModeParams {
                session_id: id.clone(),
                mode: stepper_protocol::PermissionMode::Auto,
            },
        )
        .await
        .unwrap();
    submit(&client, &id, "echo").await;
    std::fs::write(&go, "").unwrap();
    let seen = until_turn_finished(&mut events).await;
    let (status, output) = calls(&seen).remove(0);
    assert_eq!(status, ToolCallStatus::Ok, "{output}");
    assert!(output.contains("it came up"), "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_are_listed_and_read_and_prompts_are_slash_commands() {
    let Some(entry) = everything() else { return };
    let env = TestEnv::new();
    user_servers(
        &env,
        serde_json::json!({"everything": {
            "command": "node",
            "args": [entry.display().to_string(), "stdio"],
        }}),
    );
    env.start_daemon();
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(stepper_protocol::PermissionMode::Default))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    // Listing and reading resources change nothing: neither asks, even in default mode.
    let doc = "demo://resource/static/document/architecture.md";
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_list",
        "list_mcp_resources",
        serde_json::json!({}),
    )])));
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_read",
        "read_mcp_resource",
        serde_json::json!({"server": "everything", "uri": doc}),
    )])));
    env.fake.push(Reply::text(&["read it"]));
    submit(&client, &id, "what resources are there?").await;
    let seen = until_turn_finished(&mut events).await;
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e.event, AppEvent::ApprovalRequested { .. }))
    );
    let outputs: Vec<(ToolCallStatus, String)> = calls(&seen);
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    assert_eq!(outputs[0].0, ToolCallStatus::Ok, "{outputs:?}");
    assert!(outputs[0].1.contains(doc), "{}", outputs[0].1);
    assert_eq!(outputs[1].0, ToolCallStatus::Ok, "{outputs:?}");
    assert!(
        outputs[1].1.contains(&format!("[{doc}]")),
        "{}",
        outputs[1].1
    );
    assert!(
        outputs[1].1.len() > 200,
        "the document's text: {}",
        outputs[1].1
    );

    // The server's prompts are commands; words fill its arguments in order.
    let commands = client
        .call::<stepper_protocol::methods::CommandsList>(stepper_protocol::methods::CwdParams {
            cwd: env.project.path().display().to_string(),
        })
        .await
        .unwrap();
    let prompt = commands
        .commands
        .iter()
        .find(|c| c.name == "mcp__everything__args-prompt")
        .expect("the prompt is listed");
    assert_eq!(prompt.kind.as_str(), "mcp");
    assert_eq!(prompt.argument_hint.as_deref(), Some("CITY STATE"));
    env.fake.push(Reply::text(&["sunny"]));
    submit(
        &client,
        &id,
        "/mcp__everything__args-prompt Paris Île-de-France",
    )
    .await;
    until_turn_finished(&mut events).await;
    let last = env.fake.requests().last().unwrap()["messages"].to_string();
    assert!(
        last.contains("What's weather in Paris, Île-de-France?"),
        "{last}"
    );
    // A prompt missing its required argument says how to call it, and the model is not
    // called.
    let calls = env.fake.requests().len();
    submit(&client, &id, "/mcp__everything__args-prompt").await;
    let seen = until_turn_finished(&mut events).await;
    assert!(
        seen.iter().any(|e| matches!(&e.event,
            AppEvent::TurnFinished { status: TurnStatus::Failed, error: Some(error), .. }
            if error.contains("needs city") && error.contains("CITY STATE"))),
        "{seen:?}"
    );
    assert_eq!(env.fake.requests().len(), calls);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_is_answered_from_a_second_client_and_defaults_fill_the_rest() {
    let Some(entry) = everything() else { return };
    let env = TestEnv::new();
    user_servers(
        &env,
        serde_json::json!({"everything": {
            "command": "node",
            "args": [entry.display().to_string(), "stdio"],
        }}),
    );
    env.start_daemon();
    let client = env.client().await;
    let other = env.client().await;
    let id = env
        .create_session(&client, Some(stepper_protocol::PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    let mut theirs = other.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_ask",
        "mcp__everything__trigger-elicitation-request",
        serde_json::json!({}),
    )])));
    env.fake.push(Reply::text(&["thanks"]));
    submit(&client, &id, "ask me").await;

    // Every client sees the form; the second one answers.
    let seen = read_until(&mut theirs, |e| {
        matches!(e.event, AppEvent::ElicitationRequested { .. })
    })
    .await;
    let Some(AppEvent::ElicitationRequested {
        request_id,
        server,
        schema,
        ..
    }) = seen.last().map(|e| e.event.clone())
    else {
        unreachable!()
    };
    assert_eq!(server, "everything");
    let fields = stepper_protocol::elicit::fields(&schema);
    assert!(fields.iter().any(|f| f.name == "firstLine"));
    let mut content = serde_json::Map::new();
    content.insert("name".into(), "Ada Lovelace".into());
    content.insert("check".into(), true.into());
    other
        .call::<stepper_protocol::methods::SessionElicit>(
            stepper_protocol::methods::SessionElicitParams {
                session_id: id.clone(),
                request_id: request_id.clone(),
                action: stepper_protocol::ElicitAction::Accept,
                content: Some(content),
            },
        )
        .await
        .unwrap();
    // A late answer is refused.
    let late = client
        .call::<stepper_protocol::methods::SessionElicit>(
            stepper_protocol::methods::SessionElicitParams {
                session_id: id.clone(),
                request_id,
                action: stepper_protocol::ElicitAction::Decline,
                content: None,
            },
        )
        .await;
    assert!(late.is_err());
    let seen = until_turn_finished(&mut events).await;
    assert!(seen.iter().any(|e| matches!(
        &e.event,
        AppEvent::ElicitationResolved {
            action: stepper_protocol::ElicitAction::Accept,
            by: Some(_),
            ..
        }
    )));
    let output = seen
        .iter()
        .find_map(|e| match &e.event {
            AppEvent::ToolCallFinished { output, .. } => Some(output.clone()),
            _ => None,
        })
        .unwrap();
    assert!(output.contains("Ada Lovelace"), "{output}");
    // What was left out took the schema's defaults (SEP-1034).
    assert!(
        output.contains("It was a dark and stormy night."),
        "{output}"
    );
    // What was entered is not recorded with the elicitation (the server's own output
    // holds what it chose to say).
    for e in &seen {
        if let AppEvent::ElicitationRequested { .. } | AppEvent::ElicitationResolved { .. } =
            &e.event
        {
            let json = serde_json::to_string(&e.event).unwrap();
            assert!(!json.contains("Ada Lovelace"), "{json}");
        }
    }
}

/// `GET url` over a plain socket, as a browser would: the status and the `Location`.
fn browse(url: &str) -> (u16, Option<String>) {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "GET {} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n",
        if path.is_empty() { "/" } else { path }
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let location = answer.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("location")
            .then(|| v.trim().to_string())
    });
    (status, location)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_server_behind_oauth_is_signed_in_to_and_its_token_stays_out_of_logs() {
    use std::io::BufRead;
    let server = stepper_e2e::fake_mcp_oauth::FakeMcpOAuth::start();
    let env = TestEnv::new();
    user_servers(
        &env,
        serde_json::json!({"remote": {"type": "http", "url": server.url}}),
    );
    env.start_daemon();
    let said = |out: std::process::Output| {
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let list = said(env.run(&["mcp", "list"]));
    assert!(
        list.lines()
            .any(|l| l.starts_with("remote") && l.contains("needs login")),
        "{list}"
    );
    assert!(list.contains("stepper mcp login"), "{list}");

    // Sign in: the page to open is printed; the "browser" is approved at once and comes
    // back to the daemon's listener.
    let mut login = env
        .stepper()
        .args(["mcp", "login", "remote"])
        .env("STEPPER_NO_BROWSER", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(login.stdout.take().unwrap()).lines();
    let page = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.trim()
                .starts_with("http://")
                .then(|| l.trim().to_string())
        })
        .expect("the page to open");
    let (status, back) = browse(&page);
    assert_eq!(status, 302, "{page}");
    let (status, _) = browse(&back.expect("the way back"));
    assert_eq!(status, 200);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let done = login.wait().unwrap();
    assert!(done.success(), "{rest:?}");
    assert!(
        rest.iter().any(|l| l.contains("Signed in to remote")),
        "{rest:?}"
    );

    // Its tools are there now, and a turn calls one with the token.
    let list = said(env.run(&["mcp", "list"]));
    assert!(
        list.lines()
            .any(|l| l.starts_with("remote") && l.contains("connected")),
        "{list}"
    );
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(stepper_protocol::PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_who",
        "mcp__remote__whoami",
        serde_json::json!({}),
    )])));
    env.fake.push(Reply::text(&["you are signed in"]));
    submit(&client, &id, "who am I?").await;
    let seen = until_turn_finished(&mut events).await;
    let output = seen
        .iter()
        .find_map(|e| match &e.event {
            AppEvent::ToolCallFinished { output, .. } => Some(output.clone()),
            _ => None,
        })
        .unwrap();
    assert!(output.contains("hello, signed-in user"), "{output}");

    // The token is kept in a file of its own, readable by the user alone, and nowhere else.
    let tokens = env.places().data_dir.join("mcp-credentials.json");
    let kept = std::fs::read_to_string(&tokens).unwrap();
    assert!(kept.contains(stepper_e2e::fake_mcp_oauth::ACCESS_TOKEN));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&tokens).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(
        !env.daemon_log()
            .contains(stepper_e2e::fake_mcp_oauth::ACCESS_TOKEN)
    );
    let events_json = serde_json::to_string(&seen).unwrap();
    assert!(!events_json.contains(stepper_e2e::fake_mcp_oauth::ACCESS_TOKEN));
    assert!(server.refused() > 0, "it asked before the sign-in");

    // Signing out forgets it.
    let out = said(env.run(&["mcp", "logout", "remote"]));
    assert!(out.contains("Signed out of remote"), "{out}");
    assert!(
        !std::fs::read_to_string(&tokens)
            .unwrap()
            .contains(stepper_e2e::fake_mcp_oauth::ACCESS_TOKEN)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_registered_client_signs_in_with_its_secret_and_the_secret_is_never_shown() {
    use std::io::BufRead;
    const SECRET: &str = "pre-registered-secret-91c2";
    let server = stepper_e2e::fake_mcp_oauth::FakeMcpOAuth::start_with_client("team-app", SECRET);
    let env = TestEnv::new();
    user_servers(
        &env,
        serde_json::json!({"remote": {"type": "http", "url": server.url,
            "oauth": {"clientId": "team-app", "clientSecret": SECRET}}}),
    );
    env.start_daemon();
    let said = |out: std::process::Output| {
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let mut login = env
        .stepper()
        .args(["mcp", "login", "remote"])
        .env("STEPPER_NO_BROWSER", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(login.stdout.take().unwrap()).lines();
    let page = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.trim()
                .starts_with("http://")
                .then(|| l.trim().to_string())
        })
        .expect("the page to open");
    assert!(page.contains("client_id=team-app"), "{page}");
    assert!(!page.contains(SECRET), "{page}");
    let (status, back) = browse(&page);
    assert_eq!(status, 302, "{page}");
    let (status, _) = browse(&back.expect("the way back"));
    assert_eq!(status, 200);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(login.wait().unwrap().success(), "{rest:?}");
    assert!(
        rest.iter().any(|l| l.contains("Signed in to remote")),
        "the token request took the client's secret (client_secret_basic): {rest:?}"
    );
    assert_eq!(server.registered(), 0, "no client was registered");

    let list = said(env.run(&["mcp", "list"]));
    assert!(
        list.lines()
            .any(|l| l.starts_with("remote") && l.contains("connected")),
        "{list}"
    );
    let shown = said(env.run(&["mcp", "get", "remote", "--json"]));
    assert!(shown.contains("\"status\""), "{shown}");
    for text in [&list, &shown, &env.daemon_log()] {
        assert!(!text.contains(SECRET), "{text}");
    }
}

/// `stepper mcp login NAME`, the "browser" approving at once: the page it was sent to.
fn mcp_login(env: &TestEnv, name: &str) -> String {
    use std::io::BufRead;
    let mut login = env
        .stepper()
        .args(["mcp", "login", name])
        .env("STEPPER_NO_BROWSER", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(login.stdout.take().unwrap()).lines();
    let page = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.trim()
                .starts_with("http://")
                .then(|| l.trim().to_string())
        })
        .expect("the page to open");
    let (status, back) = browse(&page);
    assert_eq!(status, 302, "{page}");
    let (status, _) = browse(&back.expect("the way back"));
    assert_eq!(status, 200);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(login.wait().unwrap().success(), "{rest:?}");
    page
}

/// A turn that calls the remote server's `whoami`: how the call ended and what it said.
async fn whoami_turn(env: &TestEnv) -> (ToolCallStatus, String) {
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(stepper_protocol::PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_who",
        "mcp__remote__whoami",
        serde_json::json!({}),
    )])));
    env.fake.push(Reply::text(&["done"]));
    submit(&client, &id, "who am I?").await;
    let seen = until_turn_finished(&mut events).await;
    calls(&seen).pop().expect("the call finished")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_refused_for_its_scope_says_to_sign_in_again_which_asks_for_the_wider_one() {
    let server = stepper_e2e::fake_mcp_oauth::FakeMcpOAuth::start_step_up();
    let env = TestEnv::new();
    user_servers(
        &env,
        serde_json::json!({"remote": {"type": "http", "url": server.url}}),
    );
    env.start_daemon();
    mcp_login(&env, "remote");
    assert_eq!(server.scopes_asked(), ["mcp"]);

    // The call needs `mcp:write` too: the model and the user are told to sign in again.
    let (status, output) = whoami_turn(&env).await;
    assert_eq!(status, ToolCallStatus::Error, "{output}");
    assert!(output.contains("stepper mcp login remote"), "{output}");
    assert!(output.contains("mcp mcp:write"), "{output}");

    // The next sign-in asks for what was granted and what the call needs; the call works.
    mcp_login(&env, "remote");
    assert_eq!(server.scopes_asked(), ["mcp", "mcp mcp:write"]);
    let (status, output) = whoami_turn(&env).await;
    assert_eq!(status, ToolCallStatus::Ok, "{output}");
    assert!(output.contains("hello, signed-in user"), "{output}");
    let log = env.daemon_log();
    for token in [
        stepper_e2e::fake_mcp_oauth::ACCESS_TOKEN,
        stepper_e2e::fake_mcp_oauth::WIDE_TOKEN,
    ] {
        assert!(!log.contains(token));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_client_signs_in_by_itself_and_its_secret_is_never_shown() {
    const SECRET: &str = "machine-secret-6b0e";
    let server = stepper_e2e::fake_mcp_oauth::FakeMcpOAuth::start_machine("robot", SECRET);
    let env = TestEnv::new();
    user_servers(
        &env,
        serde_json::json!({"remote": {"type": "http", "url": server.url,
            "oauth": {"clientId": "robot", "clientSecret": SECRET}}}),
    );
    env.start_daemon();
    // No `stepper mcp login`: its authorization server grants client_credentials only.
    let (status, output) = whoami_turn(&env).await;
    assert_eq!(status, ToolCallStatus::Ok, "{output}");
    assert!(output.contains("hello, signed-in user"), "{output}");
    assert!(server.refused() > 0, "it asked before the client signed in");
    assert!(server.scopes_asked().is_empty(), "no browser sign-in");
    assert_eq!(server.tokens_granted(), 1);

    // Its token revoked mid-session, the call signs in again and goes through.
    server.revoke();
    let (status, output) = whoami_turn(&env).await;
    assert_eq!(status, ToolCallStatus::Ok, "{output}");
    assert_eq!(server.tokens_granted(), 2);
    let list = env.run(&["mcp", "list"]);
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    assert!(
        list.lines()
            .any(|l| l.starts_with("remote") && l.contains("connected")),
        "{list}"
    );
    for text in [&list, &env.daemon_log()] {
        assert!(!text.contains(SECRET), "{text}");
        assert!(
            !text.contains(stepper_e2e::fake_mcp_oauth::ACCESS_TOKEN),
            "{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_filesystem_server_takes_the_sessions_folder_as_its_root() {
    let Some(entry) = everything() else { return };
    // server-filesystem is installed beside server-everything.
    let fs = entry
        .ancestors()
        .nth(3)
        .unwrap()
        .join("server-filesystem/dist/index.js");
    assert!(fs.exists(), "{} (see .ci/run)", fs.display());
    let env = TestEnv::new();
    // No folder on its command line: it serves the roots the client gives.
    user_servers(
        &env,
        serde_json::json!({"fs": {"command": "node", "args": [fs.display().to_string()]}}),
    );
    let folder = env.project.path().canonicalize().unwrap();
    std::fs::write(folder.join("notes.txt"), "the project's notes\n").unwrap();
    env.start_daemon();
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(stepper_protocol::PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    // The server asks for its roots once it is initialized and serves none until it has
    // them (a busy machine can be a moment late): wait, with a deadline, until it lists the
    // session's folder. A client that never answered would fail here.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        env.fake.push(Reply::Sse(tool_use_stream(&[(
            "toolu_wait",
            "mcp__fs__list_allowed_directories",
            serde_json::json!({}),
        )])));
        env.fake.push(Reply::text(&["listed"]));
        submit(&client, &id, "list the roots").await;
        let seen = until_turn_finished(&mut events).await;
        let listed = calls(&seen);
        if listed
            .iter()
            .any(|(_, out)| out.contains(&folder.display().to_string()))
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server never took the session's folder as its root: {listed:?}"
        );
    }
    env.fake.push(Reply::Sse(tool_use_stream(&[
        (
            "toolu_dirs",
            "mcp__fs__list_allowed_directories",
            serde_json::json!({}),
        ),
        (
            "toolu_read",
            "mcp__fs__read_text_file",
            serde_json::json!({"path": folder.join("notes.txt")}),
        ),
        (
            "toolu_out",
            "mcp__fs__read_text_file",
            serde_json::json!({"path": "/etc/hostname"}),
        ),
    ])));
    env.fake.push(Reply::text(&["read"]));
    submit(&client, &id, "read the notes").await;
    let seen = until_turn_finished(&mut events).await;
    let outputs: Vec<(ToolCallStatus, String)> = calls(&seen);
    assert_eq!(outputs.len(), 3, "{outputs:?}");
    assert!(
        outputs[0].1.contains(&folder.display().to_string()),
        "{outputs:?}"
    );
    assert_eq!(outputs[1].0, ToolCallStatus::Ok, "{outputs:?}");
    assert!(outputs[1].1.contains("the project's notes"), "{outputs:?}");
    assert_eq!(
        outputs[2].0,
        ToolCallStatus::Error,
        "outside the root: {outputs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_at_a_terminal_asks_about_a_projects_server_and_remembers() {
    let Some(entry) = everything() else { return };
    if !stepper_e2e::Tmux::available() {
        return;
    }
    let env = TestEnv::new();
    let root = env.project.path();
    let marker = format!("mcp-ask-{}", std::process::id());
    std::fs::write(
        root.join(".mcp.json"),
        serde_json::json!({"mcpServers": {
            "everything": {"command": "node", "args": [entry.display().to_string(), "stdio", marker]},
            "other": {"command": "touch", "args": ["ran"]},
        }})
        .to_string(),
    )
    .unwrap();
    env.start_daemon();
    // Without a terminal nothing is asked: the servers stay off and the turn says why.
    env.fake.push(Reply::text(&["no servers"]));
    let out = env
        .stepper()
        .args(["ask", "first"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("MCP servers (everything, other)"), "{said}");
    assert!(said.contains("stepper trust"), "{said}");
    assert!(processes_with(&marker).is_empty());

    // At a terminal, the folder is asked about first, then each server; a yes and a no are
    // remembered.
    let tmux = stepper_e2e::Tmux::new(&env);
    let pane = tmux.shell();
    env.fake.push(echo_call("asked and approved"));
    env.fake.push(Reply::text(&["done"]));
    pane.run("stepper ask --yes 'echo something'");
    pane.wait_for_text("? [y/N]");
    pane.type_text("y");
    pane.press("Enter");
    pane.wait_for_text("names an MCP server, everything");
    pane.type_text("y");
    pane.press("Enter");
    pane.wait_for_text("names an MCP server, other");
    pane.type_text("n");
    pane.press("Enter");
    pane.wait_for_text("done");
    let local = std::fs::read_to_string(root.join(".stepper/setting.local.json")).unwrap();
    let local: serde_json::Value = serde_json::from_str(&local).unwrap();
    assert_eq!(
        local["enabledMcpjsonServers"],
        serde_json::json!(["everything"])
    );
    assert_eq!(
        local["disabledMcpjsonServers"],
        serde_json::json!(["other"])
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".stepper/.gitignore")).unwrap(),
        "setting.local.json\n",
        "what was approved is not committed"
    );
    assert!(!root.join("ran").exists(), "the refused server never ran");
    let requests = env.fake.requests();
    assert!(
        requests[requests.len() - 1]["messages"]
            .to_string()
            .contains("asked and approved")
    );
    // Nothing waits any more; `stepper mcp approve --all` lets later ones run too.
    let out = env.run(&["mcp", "approve"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("No project server here waits"));
    let out = env.run(&["mcp", "approve", "--all"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let local = std::fs::read_to_string(root.join(".stepper/setting.local.json")).unwrap();
    assert!(
        local.contains("\"enableAllProjectMcpServers\": true"),
        "{local}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_the_server_adds_mid_turn_is_offered_at_the_next_model_call() {
    let Some(entry) = everything() else { return };
    let sdk = entry
        .ancestors()
        .nth(3)
        .unwrap()
        .join("sdk")
        .canonicalize()
        .unwrap();
    let env = TestEnv::new();
    let script = env.home.path().join("grow.mjs");
    let source = include_str!("../fixtures/mcp/grow.mjs")
        .replace("SDK_DIR", &format!("file://{}", sdk.display()));
    std::fs::write(&script, source).unwrap();
    user_servers(
        &env,
        serde_json::json!({"grower": {"command": "node", "args": [script.display().to_string()]}}),
    );
    env.start_daemon();
    let client = env.client().await;
    let id = env
        .create_session(&client, Some(stepper_protocol::PermissionMode::Auto))
        .await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_grow",
        "mcp__grower__grow",
        serde_json::json!({}),
    )])));
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_new",
        "mcp__grower__grown-1",
        serde_json::json!({}),
    )])));
    env.fake.push(Reply::text(&["grew"]));
    submit(&client, &id, "grow a tool and use it").await;
    let seen = until_turn_finished(&mut events).await;
    let requests = env.fake.requests();
    assert!(
        !requests[0]["tools"].to_string().contains("grown-1"),
        "not there at first"
    );
    assert!(
        requests[1]["tools"]
            .to_string()
            .contains("mcp__grower__grown-1"),
        "offered at the next model call, within the turn"
    );
    let calls = calls(&seen);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[1], (ToolCallStatus::Ok, "grown-1 ran".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_is_off_until_the_settings_lend_the_model_and_then_asked() {
    let Some(entry) = everything() else { return };
    let env = TestEnv::new();
    let server = serde_json::json!({"everything": {
        "command": "node",
        "args": [entry.display().to_string(), "stdio"],
    }});
    user_servers(&env, server.clone());
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    // Off: the server is not offered the model, so it does not offer its sampling tool.
    env.fake.push(Reply::text(&["nothing"]));
    submit(&client, &id, "hi").await;
    until_turn_finished(&mut events).await;
    assert!(
        !env.fake.requests()[0]["tools"]
            .to_string()
            .contains("trigger-sampling-request")
    );

    // On: the server's request is asked like a tool call, then answered by the model.
    std::fs::write(
        env.places().config_dir.join("setting.json"),
        serde_json::json!({"mcpServers": server, "mcpSampling": true}).to_string(),
    )
    .unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_sample",
        "mcp__everything__trigger-sampling-request",
        serde_json::json!({"prompt": "name a colour", "maxTokens": 20}),
    )])));
    env.fake.push(Reply::text(&["vermilion"]));
    env.fake.push(Reply::text(&["it said vermilion"]));
    submit(&client, &id, "sample").await;
    let mut seen = Vec::new();
    for _ in 0..2 {
        seen.extend(
            read_until(&mut events, |e| {
                matches!(e.event, AppEvent::ApprovalRequested { .. })
            })
            .await,
        );
        let Some(AppEvent::ApprovalRequested { request_id, .. }) =
            seen.last().map(|e| e.event.clone())
        else {
            unreachable!()
        };
        client
            .call::<SessionApprove>(SessionApproveParams {
                session_id: id.clone(),
                request_id,
                decision: ApprovalDecision::Allow,
            })
            .await
            .unwrap();
    }
    seen.extend(until_turn_finished(&mut events).await);
    let summaries: Vec<String> = seen
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::ApprovalRequested { summary, .. } => Some(summary.clone()),
            _ => None,
        })
        .collect();
    assert!(
        summaries[1].contains("sampling/createMessage")
            && summaries[1].contains("use the session's model"),
        "{summaries:?}"
    );
    let calls = calls(&seen);
    assert_eq!(calls[0].0, ToolCallStatus::Ok, "{calls:?}");
    assert!(calls[0].1.contains("vermilion"), "{calls:?}");
    // The model got the server's conversation and instructions.
    let requests = env.fake.requests();
    let sampled = &requests[requests.len() - 2];
    assert!(sampled.to_string().contains("name a colour"), "{sampled}");
    assert!(
        sampled
            .to_string()
            .contains("You are a helpful test server."),
        "{sampled}"
    );
}

/// The user's settings: the reference server, marked with `marker`, and an idle cap of `cap`.
fn capped_servers(env: &TestEnv, entry: &std::path::Path, marker: &str, cap: u32) {
    let dir = env.places().config_dir;
    std::fs::create_dir_all(&dir).unwrap();
    let settings = serde_json::json!({
        "mcpServers": {"everything": {
            "command": "node",
            "args": [entry.display().to_string(), "stdio", marker],
        }},
        "mcpMaxIdleServers": cap,
    });
    std::fs::write(dir.join("setting.json"), settings.to_string()).unwrap();
}

/// Folders of their own, as their servers see them (`/proc/<pid>/cwd` is resolved).
fn folders(n: usize) -> Vec<(tempfile::TempDir, PathBuf)> {
    (0..n)
        .map(|_| {
            let dir = tempfile::Builder::new().prefix("fold").tempdir().unwrap();
            let path = std::fs::canonicalize(dir.path()).unwrap();
            (dir, path)
        })
        .collect()
}

/// The folders the servers marked with `marker` run in, sorted.
fn server_folders(marker: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = processes_with(marker)
        .into_iter()
        .filter_map(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).ok())
        .collect();
    found.sort();
    found
}

/// A session in `cwd` that runs tools without asking.
async fn session_in(
    env: &TestEnv,
    client: &stepper_protocol::client::DaemonClient,
    cwd: &std::path::Path,
) -> String {
    let params = stepper_protocol::methods::SessionCreateParams {
        input_parts: Vec::new(),
        cwd: cwd.display().to_string(),
        env: env.envs().into_iter().collect(),
        model: None,
        title: Some("e2e".into()),
        record: None,
        mode: Some(stepper_protocol::PermissionMode::Auto),
        sandbox: None,
        input: None,
        system_prompt: None,
        append_system_prompt: None,
    };
    client
        .call::<stepper_protocol::methods::SessionCreate>(params)
        .await
        .unwrap()
        .session
        .id
}

/// A turn in a new session in `cwd` that calls the server's echo tool, to its end.
async fn echo_turn_in(
    env: &TestEnv,
    client: &stepper_protocol::client::DaemonClient,
    cwd: &std::path::Path,
) {
    let id = session_in(env, client, cwd).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(echo_call("here"));
    env.fake.push(Reply::text(&["echoed"]));
    submit(client, &id, "echo").await;
    let seen = until_turn_finished(&mut events).await;
    let (status, output) = calls(&seen).remove(0);
    assert_eq!(status, ToolCallStatus::Ok, "{output}");
}

/// `stepper ARGS` run in `cwd`, its standard output parsed as JSON.
fn json_in(env: &TestEnv, cwd: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let out = env.stepper().args(args).current_dir(cwd).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Stop the daemon as a user would, and see its servers go.
fn stop_daemon(env: &TestEnv, marker: &str) {
    let out = env.run(&["daemon", "stop"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_until(
        "the daemon's MCP servers to stop with it",
        Duration::from_secs(20),
        || processes_with(marker).is_empty(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_servers_past_the_cap_stop_the_least_recently_used_first() {
    let Some(entry) = everything() else { return };
    let env = TestEnv::new();
    let marker = format!("mcp-cap-{}", std::process::id());
    capped_servers(&env, &entry, &marker, 2);
    env.start_daemon_with(&[("STEPPER_MCP_CONNECT_TIMEOUT_MS", "20000")]);
    let client = env.client().await;
    let folders = folders(4);
    for (_, folder) in &folders {
        echo_turn_in(&env, &client, folder).await;
    }

    // Two may stay idle: those of the last two folders; the first two folders' stopped.
    let mut newest = vec![folders[2].1.clone(), folders[3].1.clone()];
    newest.sort();
    wait_until(
        "only the two most recently used servers to stay",
        Duration::from_secs(20),
        || server_folders(&marker) == newest,
    );

    // `mcp list` shows a running server's memory, and a stopped one as stopped (not
    // started again to be listed).
    let list = json_in(&env, &folders[3].1, &["mcp", "list", "--json"]);
    let running = &list["servers"][0];
    assert_eq!(running["status"], "connected", "{list}");
    let bytes = running["memoryBytes"].as_u64().unwrap_or(0);
    assert!(bytes > 0, "{list}");
    eprintln!("a server-everything process holds {bytes} bytes");
    let list = json_in(&env, &folders[0].1, &["mcp", "list", "--json"]);
    let stopped = &list["servers"][0];
    assert_eq!(stopped["status"], "stopped", "{list}");
    assert!(
        stopped["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("mcpMaxIdleServers allows (2)"),
        "{list}"
    );
    assert!(
        stopped["tools"]
            .to_string()
            .contains("mcp__everything__echo"),
        "its tools as it listed them last: {list}"
    );
    assert!(stopped.get("memoryBytes").is_none(), "{list}");
    assert_eq!(server_folders(&marker), newest, "a listing starts nothing");

    // `mcp ps`: what runs daemon-wide, idle, with its memory.
    let ps = json_in(&env, &folders[0].1, &["mcp", "ps", "--json"]);
    assert_eq!(ps["maxIdle"], 2, "{ps}");
    let mut shown: Vec<PathBuf> = ps["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert_eq!(s["inUse"], false, "{ps}");
            assert!(s["memoryBytes"].as_u64().unwrap_or(0) > 0, "{ps}");
            PathBuf::from(s["cwd"].as_str().unwrap())
        })
        .collect();
    shown.sort();
    assert_eq!(shown, newest, "{ps}");

    // A turn in the first folder again starts its server, and the least recently used
    // of the others (the third folder's) stops.
    echo_turn_in(&env, &client, &folders[0].1).await;
    let mut now = vec![folders[0].1.clone(), folders[3].1.clone()];
    now.sort();
    wait_until(
        "the third folder's server to stop",
        Duration::from_secs(20),
        || server_folders(&marker) == now,
    );
    drop(client);
    stop_daemon(&env, &marker);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_in_use_is_not_stopped_by_the_cap() {
    let Some(entry) = everything() else { return };
    let env = TestEnv::new();
    let marker = format!("mcp-busy-{}", std::process::id());
    // No server may stay idle: each stops as soon as its turn ends.
    capped_servers(&env, &entry, &marker, 0);
    env.start_daemon_with(&[("STEPPER_MCP_CONNECT_TIMEOUT_MS", "20000")]);
    let client = env.client().await;
    let folders = folders(2);
    let (busy, idle) = (&folders[0].1, &folders[1].1);

    // A call in flight in the first folder...
    let id = session_in(&env, &client, busy).await;
    let mut events = client.subscribe_events(&id, 0).await.unwrap();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_long",
        "mcp__everything__trigger-long-running-operation",
        serde_json::json!({ "duration": 60, "steps": 60 }),
    )])));
    // Nothing more is queued for this turn: it is interrupted, and the other folder's
    // turn takes the next replies.
    submit(&client, &id, "run it").await;
    read_until(&mut events, |e| {
        matches!(e.event, AppEvent::ToolOutputDelta { .. })
    })
    .await;
    // ...while a turn in the second folder comes and goes: its server stops, the busy one
    // runs on.
    echo_turn_in(&env, &client, idle).await;
    wait_until(
        "the idle folder's server to stop",
        Duration::from_secs(20),
        || server_folders(&marker) == [busy.clone()],
    );
    let ps = json_in(&env, busy, &["mcp", "ps", "--json"]);
    assert_eq!(ps["servers"][0]["inUse"], true, "{ps}");
    assert_eq!(ps["servers"].as_array().map(Vec::len), Some(1), "{ps}");

    // Once its turn ends, it is idle too, and stops.
    client
        .call::<stepper_protocol::methods::SessionInterrupt>(
            stepper_protocol::methods::SessionParams {
                session_id: id.clone(),
            },
        )
        .await
        .unwrap();
    until_turn_finished(&mut events).await;
    wait_until(
        "the busy server to stop once its turn ended",
        Duration::from_secs(20),
        || processes_with(&marker).is_empty(),
    );
    drop(events);
    drop(client);
    stop_daemon(&env, &marker);
}

/// What `mcp/login` answers when it cannot begin, by what the caller can do about it: a
/// server that does not answer is `unreachable` (try again later), never `invalidParams`;
/// a name the folder does not have is `mcpServerNotFound`; an entry that cannot work is
/// the settings'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_that_cannot_begin_answers_with_the_kind_of_failure() {
    use stepper_protocol::error::{self, ErrorKind};
    use stepper_protocol::methods::{McpLogin, McpServerParams};
    // A port nothing listens on: the connection is refused at once, no network needed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!(
        "http://127.0.0.1:{}/mcp",
        closed.local_addr().unwrap().port()
    );
    drop(closed);
    let env = TestEnv::new();
    user_servers(
        &env,
        serde_json::json!({
            "down": {"type": "http", "url": down},
            "broken": {"type": "http"},
        }),
    );
    env.start_daemon();
    let client = env.client().await;
    let login = |name: &str| {
        client.call::<McpLogin>(McpServerParams {
            cwd: env.project.path().display().to_string(),
            name: name.to_string(),
            env: Default::default(),
        })
    };
    for (name, kind, code, says) in [
        (
            "down",
            ErrorKind::Unreachable,
            error::UNREACHABLE,
            "cannot discover its authorization server",
        ),
        (
            "nope",
            ErrorKind::McpServerNotFound,
            error::NOT_FOUND,
            "there is no MCP server \"nope\" here",
        ),
        (
            "broken",
            ErrorKind::Settings,
            error::BAD_SETTINGS,
            "`type: http` needs `url`",
        ),
    ] {
        let e = login(name).await.unwrap_err();
        assert_eq!(
            (e.kind(), e.code()),
            (Some(kind), Some(code)),
            "{name}: {e}"
        );
        assert!(e.to_string().contains(says), "{name}: {e}");
    }
}
