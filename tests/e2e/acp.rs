//! `stepper acp` spoken to as an editor does: raw ACP v1 (newline-delimited JSON-RPC) on its
//! stdin and stdout, against the real daemon and the fake LLM.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{Gate, Reply, TestEnv, next_approval};
use stepper_protocol::ApprovalDecision;
use stepper_protocol::methods::{SessionApprove, SessionApproveParams, SessionGet, SessionParams};

const TIMEOUT: Duration = Duration::from_secs(30);

/// An editor's end of `stepper acp`.
struct Editor {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    next_id: u64,
    /// Everything received that a wait did not consume, in order.
    seen: Vec<Value>,
}

impl Editor {
    fn start(env: &TestEnv) -> Editor {
        let mut child = env
            .stepper()
            .arg("acp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("stepper acp");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("stepper acp wrote a line that is not JSON ({e}): {line}")
                });
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Editor {
            child,
            stdin,
            lines,
            next_id: 100,
            seen: Vec::new(),
        }
    }

    fn write(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: Value) {
        self.write(&message.to_string());
    }

    /// Send a request; returns its id.
    fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The next message matching `check`; the others are kept in `seen`.
    fn wait(&mut self, what: &str, mut check: impl FnMut(&Value) -> bool) -> Value {
        if let Some(i) = self.seen.iter().position(&mut check) {
            return self.seen.remove(i);
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(message) if check(&message) => return message,
                Ok(message) => self.seen.push(message),
                Err(_) => panic!("no {what} from stepper acp; it sent: {:#?}", self.seen),
            }
        }
    }

    /// The answer to request `id`.
    fn response(&mut self, id: u64) -> Value {
        self.wait(&format!("answer to request {id}"), |m| {
            m.get("id") == Some(&json!(id)) && m.get("method").is_none()
        })
    }

    /// Call and return the result (panics on an error answer).
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        let answer = self.response(id);
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// The `update`s of `session/update`s received so far (and taken out of `seen`).
    fn updates(&mut self) -> Vec<Value> {
        let mut updates = Vec::new();
        self.seen.retain(|m| {
            if m["method"] == "session/update" {
                updates.push(m["params"]["update"].clone());
                false
            } else {
                true
            }
        });
        updates
    }

    fn initialize(&mut self) -> Value {
        self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "test-editor", "version": "1"}}),
        )
    }

    fn new_session(&mut self, env: &TestEnv) -> String {
        let result = self.call(
            "session/new",
            json!({"cwd": env.project.path(), "mcpServers": []}),
        );
        result["sessionId"].as_str().unwrap().to_string()
    }

    fn prompt(&mut self, session: &str, text: &str) -> u64 {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
    }
}

impl Drop for Editor {
    fn drop(&mut self) {
        // Closing stdin is how an editor leaves; the agent must exit on it.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !std::thread::panicking() {
            panic!("stepper acp did not exit when its stdin closed");
        }
    }
}

/// The call `id` was reported completed.
fn assert_completed(updates: &[Value], id: &str) {
    assert!(
        updates
            .iter()
            .any(|u| u["sessionUpdate"] == "tool_call_update"
                && u["toolCallId"] == id
                && u["status"] == "completed"),
        "{id} did not complete: {updates:#?}"
    );
}

fn texts(updates: &[Value], kind: &str) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .map(|u| u["content"]["text"].as_str().unwrap_or_default())
        .collect()
}

#[test]
fn an_editor_starts_a_session_streams_a_turn_and_loads_it_again() {
    let env = TestEnv::new();
    env.fake.push(Reply::text(&["Hel", "lo ", "editor"]));
    let mut editor = Editor::start(&env);
    let init = editor.initialize();
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(init["authMethods"], json!([]), "the daemon has a key");

    let commands = env.project.path().join(".claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("review.md"),
        "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $0\n",
    )
    .unwrap();
    let session = editor.new_session(&env);
    let prompt = editor.prompt(&session, "say hello");
    let answer = editor.response(prompt);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let updates = editor.updates();
    assert_eq!(texts(&updates, "agent_message_chunk"), "Hello editor");
    let chunks = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .count();
    assert!(chunks >= 2, "the answer streams in pieces: {updates:#?}");
    assert!(
        texts(&updates, "user_message_chunk").is_empty(),
        "the editor's own prompt is not echoed: {updates:#?}"
    );
    let offered = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "available_commands_update")
        .expect("the commands are offered");
    let names: Vec<&str> = offered["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    // The daemon's built-ins, then the folder's commands; not what only a terminal runs.
    assert_eq!(
        names,
        ["model", "context", "compact", "clear", "help", "review"],
        "{offered}"
    );
    assert_eq!(offered["availableCommands"][5]["input"]["hint"], "FILE");

    // An ordinary session: the daemon lists it, and another editor loads its history.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let got = rt.block_on(async {
        env.client()
            .await
            .call::<SessionGet>(SessionParams {
                session_id: session.clone(),
            })
            .await
            .unwrap()
    });
    assert_eq!(got.session.turns, 1);
    let list = editor.call("session/list", json!({}));
    assert_eq!(list["sessions"][0]["sessionId"], session.as_str());
    assert!(
        list["sessions"][0]["updatedAt"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    drop(editor);

    let mut other = Editor::start(&env);
    other.initialize();
    let load = other.request(
        "session/load",
        json!({"sessionId": session, "cwd": env.project.path(), "mcpServers": []}),
    );
    let answer = other.response(load);
    assert!(answer.get("error").is_none(), "{answer}");
    let replayed = other.updates();
    assert_eq!(texts(&replayed, "user_message_chunk"), "say hello");
    assert_eq!(texts(&replayed, "agent_message_chunk"), "Hello editor");

    // Bad input gets an answer that says what is wrong, and the agent goes on.
    other.write("this is not json");
    let parse = other.wait("a parse error", |m| m["error"]["code"] == -32700);
    assert!(parse["id"].is_null());
    let id = other.request("session/fly", json!({}));
    assert_eq!(other.response(id)["error"]["code"], -32601);
    let id = other.prompt("no-such-session", "hi");
    let missing = other.response(id);
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    let id = other.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "image", "data": "", "mimeType": "image/png"}]}),
    );
    let refused = other.response(id);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("image")
    );

    // The daemon answers its built-ins as turns: the editor gets the text as the agent's.
    let id = other.prompt(&session, "/context");
    let answer = other.response(id);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let shown = texts(&other.updates(), "agent_message_chunk");
    assert!(
        shown.starts_with("context of anthropic/claude-sonnet-4-5: "),
        "{shown}"
    );
    let id = other.prompt(&session, "/model anthropic/claude-nope");
    let refused = other.response(id);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("anthropic has no model \"claude-nope\""),
        "{refused}"
    );
}

#[test]
fn approvals_are_answered_by_the_editor_or_by_a_terminal() {
    let env = TestEnv::new();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t1",
        "bash",
        json!({"command": "touch made.txt"}),
    )])));
    env.fake.push(Reply::text(&["made it"]));
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "t2",
        "bash",
        json!({"command": "touch second.txt"}),
    )])));
    env.fake.push(Reply::text(&["made the second"]));
    let mut editor = Editor::start(&env);
    editor.initialize();
    let session = editor.new_session(&env);

    // The editor answers.
    let prompt = editor.prompt(&session, "make a file");
    let asked = editor.wait("a permission request", |m| {
        m["method"] == "session/request_permission"
    });
    assert_eq!(asked["params"]["sessionId"], session.as_str());
    assert_eq!(asked["params"]["toolCall"]["toolCallId"], "t1", "{asked}");
    let kinds: Vec<&str> = asked["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    assert!(!env.project.path().join("made.txt").exists());
    editor.send(json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}));
    assert_eq!(editor.response(prompt)["result"]["stopReason"], "end_turn");
    assert!(env.project.path().join("made.txt").exists());
    let updates = editor.updates();
    let call = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .expect("the tool call is shown");
    assert_eq!(call["kind"], "execute");
    assert_eq!(call["title"], "touch made.txt");
    assert_completed(&updates, "t1");

    // A terminal answers first: the editor's question is withdrawn.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = rt.block_on(env.client());
    let mut events = rt.block_on(client.subscribe_events(&session, 0)).unwrap();
    let prompt = editor.prompt(&session, "make another");
    let asked = editor.wait("the second permission request", |m| {
        m["method"] == "session/request_permission"
    });
    let ask_id = asked["id"].clone();
    let approval = rt.block_on(async {
        // The first approval of the session was answered; this is the open one.
        loop {
            let a = next_approval(&mut events).await;
            if a.command.as_deref() == Some("touch second.txt") {
                break a;
            }
        }
    });
    rt.block_on(client.call::<SessionApprove>(SessionApproveParams {
        session_id: session.clone(),
        request_id: approval.request_id,
        decision: ApprovalDecision::Allow,
    }))
    .unwrap();
    let withdrawn = editor.wait("the withdrawal of the editor's question", |m| {
        m["method"] == "$/cancel_request"
    });
    assert_eq!(withdrawn["params"]["requestId"], ask_id);
    assert_eq!(editor.response(prompt)["result"]["stopReason"], "end_turn");
    assert!(env.project.path().join("second.txt").exists());
    // A late answer from the editor changes nothing and breaks nothing.
    editor.send(json!({"jsonrpc": "2.0", "id": ask_id,
        "result": {"outcome": {"outcome": "selected", "optionId": "deny"}}}));
    let list = editor.call("session/list", json!({}));
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1);
}

#[test]
fn cancel_ends_the_prompt_as_cancelled_and_modes_change() {
    let env = TestEnv::new();
    let gate = Gate::new();
    env.fake.push(Reply::held(&["working on it"], &gate));
    let mut editor = Editor::start(&env);
    editor.initialize();
    let created = editor.call(
        "session/new",
        json!({"cwd": env.project.path(), "mcpServers": []}),
    );
    let session = created["sessionId"].as_str().unwrap().to_string();
    assert_eq!(created["modes"]["currentModeId"], "default");
    let modes = created["modes"]["availableModes"].as_array().unwrap();
    assert_eq!(modes.len(), 4);

    editor.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "accept-edits"}),
    );
    let changed = editor.wait("the mode change", |m| {
        m["params"]["update"]["sessionUpdate"] == "current_mode_update"
    });
    assert_eq!(changed["params"]["update"]["currentModeId"], "accept-edits");
    let id = editor.request(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "yolo"}),
    );
    assert_eq!(editor.response(id)["error"]["code"], -32602);

    let prompt = editor.prompt(&session, "take your time");
    editor.wait("the first words", |m| {
        m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    });
    editor.send(
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
    );
    let answer = editor.response(prompt);
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    gate.open();
}

#[test]
fn with_no_provider_set_up_the_editor_is_told_how_to_sign_in() {
    let env = TestEnv::without_keys();
    let mut editor = Editor::start(&env);
    let init = editor.initialize();
    assert_eq!(init["authMethods"][0]["id"], "stepper", "{init}");
    let id = editor.request(
        "session/new",
        json!({"cwd": env.project.path(), "mcpServers": []}),
    );
    let refused = editor.response(id);
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("stepper auth login"),
        "{refused}"
    );
    let id = editor.request("authenticate", json!({"methodId": "stepper"}));
    assert_eq!(editor.response(id)["error"]["code"], -32000);
    let id = editor.request("session/new", json!({"cwd": "relative/path"}));
    assert_eq!(editor.response(id)["error"]["code"], -32602);
}

/// The official TypeScript SDK as the editor: its schema checks every message stepper sends.
/// `.ci/run` installs it and names it in `STEPPER_TEST_ACP_SDK` (its `node_modules`).
#[test]
fn the_official_acp_sdk_accepts_every_message() {
    let sdk = std::env::var_os("STEPPER_TEST_ACP_SDK").map(std::path::PathBuf::from);
    let Some(sdk) = sdk.filter(|p| p.join("@agentclientprotocol/sdk").exists()) else {
        assert!(
            !stepper_e2e::needs::strict(),
            "STEPPER_TEST_ACP_SDK must name a node_modules with @agentclientprotocol/sdk"
        );
        eprintln!(
            "skipped: needs the ACP SDK (npm install --prefix DIR @agentclientprotocol/sdk, \
             then STEPPER_TEST_ACP_SDK=DIR/node_modules)"
        );
        return;
    };
    if !stepper_e2e::needs::program("node", "the ACP SDK test", "install Node.js") {
        return;
    }
    let env = TestEnv::new();
    env.fake.push(Reply::text(&["Hello ", "from stepper"]));
    env.fake.push(Reply::Sse(tool_use_stream(&[
        (
            "t1",
            "write",
            json!({"path": "notes.txt", "content": "from the editor\n"}),
        ),
        (
            "t2",
            "todo_write",
            json!({"todos": [{"content": "write notes", "status": "completed"}]}),
        ),
    ])));
    env.fake.push(Reply::text(&["Wrote it."]));
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&sdk, dir.path().join("node_modules")).unwrap();
    let script = dir.path().join("client.mjs");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/acp-client/client.mjs"),
        &script,
    )
    .unwrap();
    let out = std::process::Command::new("node")
        .arg(&script)
        .arg(stepper_e2e::bin_dir().join("stepper"))
        .arg(env.project.path())
        .env_clear()
        .envs(env.envs())
        .current_dir(env.project.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the SDK client failed: {stderr}");
    assert!(
        !stderr.contains("Error handling") && !stderr.contains("Invalid"),
        "the SDK refused a message: {stderr}"
    );
    let seen: Value = serde_json::from_slice(&out.stdout).expect("the client's summary");
    assert_eq!(seen["init"]["protocolVersion"], 1);
    assert_eq!(seen["first"]["stopReason"], "end_turn");
    assert_eq!(seen["second"]["stopReason"], "end_turn");
    assert_eq!(seen["asked"][0]["toolCall"]["toolCallId"], "t1", "{seen:#}");
    assert_eq!(
        std::fs::read_to_string(env.project.path().join("notes.txt")).unwrap(),
        "from the editor\n"
    );
    let updates = seen["updates"].as_array().unwrap();
    let kinds: std::collections::BTreeSet<&str> = updates
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .collect();
    for kind in [
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "user_message_chunk",
        "available_commands_update",
        "usage_update",
    ] {
        assert!(kinds.contains(kind), "no {kind} among {kinds:?}");
    }
    let diff = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "t1")
        .unwrap();
    assert_eq!(diff["content"][0]["type"], "diff");
    // The SDK drops what its schema refuses inside a message (a list item, a field): what
    // it parsed must still hold what was sent.
    let of = |kind: &str| {
        updates
            .iter()
            .find(|u| u["sessionUpdate"] == kind)
            .unwrap_or_else(|| panic!("no {kind}"))
    };
    assert_eq!(
        of("plan")["entries"],
        json!([{"content": "write notes", "priority": "medium", "status": "completed"}])
    );
    assert_eq!(diff["content"][0]["newText"], "from the editor\n");
    assert_eq!(diff["kind"], "edit");
    assert_eq!(
        diff["locations"][0]["path"],
        env.project.path().join("notes.txt").display().to_string()
    );
    assert!(of("usage_update")["size"].as_u64().unwrap() > 0);
    assert_eq!(
        of("available_commands_update")["availableCommands"][0]["name"],
        "model"
    );
    assert_completed(updates, "t1");
    assert_eq!(
        seen["session"]["modes"]["availableModes"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    assert_eq!(seen["asked"][0]["options"].as_array().unwrap().len(), 3);
    assert!(seen["replayed"].as_u64().unwrap() >= 4, "{seen:#}");
    assert_eq!(
        seen["list"]["sessions"][0]["sessionId"],
        seen["session"]["sessionId"]
    );
}

/// An editor's first prompt in a folder whose files ask for what only trust gives: the
/// question comes as a permission request first; "don't trust it" runs nothing of the
/// folder's, is remembered, and is not asked again.
#[test]
fn an_untrusted_folder_is_asked_about_once_before_the_first_prompt() {
    let env = TestEnv::new();
    let marker = env.home.path().join("hook-ran");
    std::fs::create_dir_all(env.project.path().join(".stepper")).unwrap();
    std::fs::write(
        env.project.path().join(".stepper/setting.json"),
        json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
            "command": format!("touch {}", marker.display())}]}]}})
        .to_string(),
    )
    .unwrap();
    env.fake.push(Reply::text(&["first"]));
    env.fake.push(Reply::text(&["second"]));
    let mut editor = Editor::start(&env);
    editor.initialize();
    let session = editor.new_session(&env);
    let prompt = editor.prompt(&session, "hello");
    let asked = editor.wait("the trust question", |m| {
        m["method"] == "session/request_permission"
            && m["params"]["toolCall"]["toolCallId"] == "stepper-trust"
    });
    let text = asked["params"]["toolCall"]["content"][0]["content"]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("hooks (UserPromptSubmit)"), "{text}");
    editor.send(json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": "untrusted"}}}));
    let answer = editor.response(prompt);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(!marker.exists(), "the folder's hook ran");
    let listed = String::from_utf8_lossy(&env.run(&["trust", "--list"]).stdout).to_string();
    assert!(listed.contains("not trusted"), "{listed}");
    // Decided: the next prompt is not asked about.
    let prompt = editor.prompt(&session, "again");
    let answer = editor.response(prompt);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(
        !editor
            .seen
            .iter()
            .any(|m| m["method"] == "session/request_permission"),
        "{:#?}",
        editor.seen
    );
}

#[test]
fn an_editor_sends_an_image_and_a_pdf_and_the_model_sees_them() {
    let env = TestEnv::new();
    let mut editor = Editor::start(&env);
    let init = editor.initialize();
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["image"],
        true
    );
    let session = editor.new_session(&env);
    let pdf = crate::images::tiny_pdf();
    use base64::Engine as _;
    let pdf = base64::engine::general_purpose::STANDARD.encode(pdf);
    let id = editor.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "data": crate::images::DOT_PNG, "mimeType": "image/png",
             "uri": "file:///tmp/shot.png"},
            {"type": "resource", "resource": {"uri": "file:///tmp/spec.pdf",
             "blob": pdf, "mimeType": "application/pdf"}}
        ]}),
    );
    let answer = editor.response(id);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let body = env.fake.requests().last().unwrap().clone();
    let content = body["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(content[0]["type"], "image", "{content}");
    assert_eq!(content[0]["source"]["data"], crate::images::DOT_PNG);
    assert_eq!(content[1]["type"], "document");
    assert_eq!(content[1]["source"]["data"], pdf);

    // A picture stepper cannot show a model is refused as such, not as bad input.
    let id = editor.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [
            {"type": "image", "data": "PHN2Zy8+", "mimeType": "image/svg+xml"}
        ]}),
    );
    let answer = editor.response(id);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("PNG, JPEG, GIF and WebP"),
        "{answer}"
    );
}
