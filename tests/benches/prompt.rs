//! What each agent sends the model on a plain first turn ("hi", a fresh git project, no
//! memory file): stepper per model family (Anthropic Messages, OpenAI Responses, a local
//! Chat Completions model) next to the real Claude Code and Codex CLIs
//! (`STEPPER_TEST_CLAUDE_CODE`, `STEPPER_TEST_CODEX_CLI`, as for the tests), all against the
//! fake LLM. The prompt and the tools are paid for on every request of a session, so their
//! size next to the peers' is the number to watch when either grows.
//!
//! Per agent: the bytes of its instructions, of the environment it describes, of its tool
//! schemas and of the user's side of the turn. A Markdown table on stdout, the same as JSON
//! in `target/prompt-sizes.json`, and each measured request in `target/prompt-requests/`, to
//! read what the numbers count. Codex is measured with its default model, with the GPT-5 its
//! catalog lists, and with `gpt-5.1-codex` (which it no longer knows): what it sends depends
//! on the model more than stepper's does.
//!
//! `STEPPER_TEST_CLAUDE_CODE=DIR/node_modules/.bin/claude STEPPER_TEST_CODEX_CLI=DIR/node_modules/.bin/codex cargo bench -p stepper-e2e --bench prompt`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde_json::{Value, json};
use stepper_e2e::{Route, TestEnv};

/// What the CLIs would otherwise do on the side (update checks, telemetry).
const QUIET: [(&str, &str); 3] = [
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("DISABLE_AUTOUPDATER", "1"),
    ("DISABLE_TELEMETRY", "1"),
];

/// How long a CLI may take for one turn against the fake before the bench gives up on it.
const CLI_DEADLINE: Duration = Duration::from_secs(180);

const PROMPT: &str = "hi";

/// A fresh installation (its own home, fake LLM and daemon) with a project that is a git
/// repository with one commit, as most are.
fn fresh() -> TestEnv {
    let env = TestEnv::new();
    let project = env.project.path();
    std::fs::write(project.join("a.txt"), "one\n").unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "a.txt"],
        &["commit", "-q", "-m", "start"],
    ] {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(project)
            .env("GIT_AUTHOR_NAME", "a")
            .env("GIT_AUTHOR_EMAIL", "a@example.com")
            .env("GIT_COMMITTER_NAME", "a")
            .env("GIT_COMMITTER_EMAIL", "a@example.com")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }
    env
}

/// `stepper ask --model MODEL hi`; the daemon it started is stopped after.
fn stepper_turn(env: &TestEnv, model: &str) {
    let out = env.run(&["ask", "--format", "json", "--model", model, PROMPT]);
    let _ = env.run(&["daemon", "stop"]);
    assert!(
        out.status.success(),
        "stepper ask --model {model}: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        env.daemon_log()
    );
}

/// Run a CLI once in the project with the test's environment (keys and base URLs at the
/// fake), in a process group of its own, and kill whatever is left of that group when it
/// ends. Returns its stderr.
async fn cli_turn(env: &TestEnv, program: &Path, args: &[&str]) -> String {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .env_clear()
        .envs(env.envs())
        .envs(QUIET)
        .current_dir(env.project.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let child = command.spawn().unwrap();
    let group = nix::unistd::Pid::from_raw(-(child.id().unwrap() as i32));
    let out = tokio::time::timeout(CLI_DEADLINE, child.wait_with_output()).await;
    // Helpers the CLI started (and anything it left behind) go with it.
    let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL);
    let out = out
        .unwrap_or_else(|_| panic!("{} took over {CLI_DEADLINE:?}", program.display()))
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{} {args:?} failed: {}\n{stderr}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
    );
    stderr
}

/// `program --version`'s version number.
fn version(env: &TestEnv, program: &Path) -> String {
    let out = std::process::Command::new(program)
        .arg("--version")
        .env_clear()
        .envs(env.envs())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or("?")
        .to_string()
}

/// The wire format a request was written in.
#[derive(Clone, Copy)]
enum Api {
    Messages,
    Responses,
    Chat,
}

impl Api {
    fn name(self) -> &'static str {
        match self {
            Api::Messages => "Anthropic Messages",
            Api::Responses => "OpenAI Responses",
            Api::Chat => "Chat Completions",
        }
    }

    fn route(self) -> Route {
        match self {
            Api::Messages => Route::Anthropic,
            Api::Responses => Route::Responses,
            Api::Chat => Route::Chat,
        }
    }
}

/// One agent's first-turn request, measured. Text is counted in UTF-8 bytes; JSON as
/// compact JSON.
struct Row {
    agent: String,
    model: String,
    api: Api,
    /// Instructions: Anthropic `system`; Responses `instructions` and developer/system input
    /// messages; Chat's system messages.
    system: usize,
    /// The environment described, in the instructions or the user's messages.
    environment: usize,
    /// Callable tools, a namespace's counted by its members.
    tools: Vec<String>,
    /// The tool definitions: the `tools` array, and Responses' `additional_tools` items.
    tool_bytes: usize,
    /// The user-role messages: the prompt and the context an agent sends with it.
    user: usize,
    /// The whole request body.
    request: usize,
    note: String,
}

/// The text of a message's content: a string, or the `text` of its parts.
fn texts(content: &Value) -> Vec<&str> {
    match content {
        Value::String(s) => vec![s.as_str()],
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => Vec::new(),
    }
}

/// `value`'s elements, none when it is not an array.
fn list(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}

/// A request's instructions, user messages and tool definitions, per wire format.
fn parts(api: Api, body: &Value) -> (Vec<&str>, Vec<&str>, Vec<&Value>) {
    let (mut system, mut user, mut tools) = (Vec::new(), Vec::new(), Vec::new());
    tools.extend(list(&body["tools"]));
    match api {
        Api::Messages => {
            system = texts(&body["system"]);
            for m in list(&body["messages"]) {
                if m["role"] == "user" {
                    user.extend(texts(&m["content"]));
                }
            }
        }
        Api::Responses => {
            system.extend(body["instructions"].as_str());
            for item in list(&body["input"]) {
                if item["type"] == "additional_tools" {
                    tools.extend(list(&item["tools"]));
                } else if item["role"] == "developer" || item["role"] == "system" {
                    system.extend(texts(&item["content"]));
                } else if item["role"] == "user" {
                    user.extend(texts(&item["content"]));
                }
            }
        }
        Api::Chat => {
            for m in list(&body["messages"]) {
                match m["role"].as_str() {
                    Some("system") => system.extend(texts(&m["content"])),
                    Some("user") => user.extend(texts(&m["content"])),
                    _ => {}
                }
            }
        }
    }
    (system, user, tools)
}

/// The callable tools among `tools`: a namespace stands for its members.
fn tool_names(tools: &[&Value], prefix: &str, names: &mut Vec<String>) {
    for tool in tools {
        let name = tool["name"]
            .as_str()
            .or(tool["function"]["name"].as_str())
            .or(tool["type"].as_str())
            .unwrap_or("?");
        match tool["tools"].as_array() {
            Some(members) if tool["type"] == "namespace" => {
                let members: Vec<&Value> = members.iter().collect();
                tool_names(&members, &format!("{prefix}{name}."), names);
            }
            _ => names.push(format!("{prefix}{name}")),
        }
    }
}

/// Where the environment is described in a text, as byte ranges: stepper's and Codex's
/// `<environment_context>`, Claude Code's `<env>` (older versions), a `# Environment`
/// section (stepper's system prompt, Claude Code's system prompt and first message), Claude
/// Code's git status and date reminders.
fn environment_ranges(text: &str) -> Vec<(usize, usize)> {
    let patterns = [
        r"(?s)(<environment_context>.*?</environment_context>)",
        r"(?s)(<env>.*?</env>)",
        r"(?ms)^(# Environment\n.*?)(?:\n\n|\n</system-reminder>|\z)",
        r"(?ms)^(#? ?gitStatus\b.*?)(?:\n</system-reminder>|\z)",
        r"(Today's date is [^\n]*)",
    ];
    let mut ranges: Vec<(usize, usize)> = patterns
        .iter()
        .flat_map(|p| {
            Regex::new(p)
                .unwrap()
                .captures_iter(text)
                .filter_map(|c| c.get(1).map(|m| (m.start(), m.end())))
                .collect::<Vec<_>>()
        })
        .collect();
    // Overlapping matches count once.
    ranges.sort();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (start, end) in ranges {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// How many tools Claude Code names as deferred (their schemas loaded by `ToolSearch` only
/// when the model asks), if `text` is that reminder.
fn deferred_tools(text: &str) -> Option<usize> {
    let list = Regex::new(
        r"(?s)deferred tools are now available via ToolSearch[^\n]*\n(.*?)</system-reminder>",
    )
    .unwrap();
    let names = list.captures(text)?.get(1)?.as_str();
    Some(names.lines().filter(|l| !l.trim().is_empty()).count())
}

fn measure(agent: String, api: Api, body: &Value, note: String) -> Row {
    let (system, user, tools) = parts(api, body);
    let environment = system
        .iter()
        .chain(&user)
        .flat_map(|t| environment_ranges(t))
        .map(|(start, end)| end - start)
        .sum();
    let mut names = Vec::new();
    tool_names(&tools, "", &mut names);
    let mut note = note;
    if let Some(deferred) = user.iter().find_map(|t| deferred_tools(t)) {
        if !note.is_empty() {
            note.push_str("; ");
        }
        note.push_str(&format!(
            "{deferred} more tools named in a reminder, schemas fetched on demand (ToolSearch)"
        ));
    }
    Row {
        agent,
        model: body["model"].as_str().unwrap_or("?").to_string(),
        api,
        system: system.iter().map(|t| t.len()).sum(),
        environment,
        tools: names,
        tool_bytes: tools.iter().map(|t| t.to_string().len()).sum(),
        user: user.iter().map(|t| t.len()).sum(),
        request: body.to_string().len(),
        note,
    }
}

/// The turn's request on `api`'s route: the one with the most tool definitions, so side
/// requests a CLI may make (a title, a quota check) are passed over. Written to
/// `target/prompt-requests/<file>.json`.
fn the_request(env: &TestEnv, api: Api, file: &str) -> Value {
    let body = env
        .fake
        .seen(api.route())
        .into_iter()
        .map(|s| s.body)
        .max_by_key(|body| parts(api, body).2.len())
        .unwrap_or_else(|| panic!("no request on {:?}", api.route()));
    let dir = target_dir().join("prompt-requests");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{file}.json")),
        serde_json::to_string_pretty(&body).unwrap(),
    )
    .unwrap();
    body
}

fn target_dir() -> PathBuf {
    // target/<profile>/deps/<bench-binary>
    std::env::current_exe()
        .unwrap()
        .ancestors()
        .nth(3)
        .unwrap()
        .to_path_buf()
}

/// stepper's first turn with `model`, in a fresh installation `setup` prepared.
fn stepper(model: &str, api: Api, file: &str, setup: fn(&TestEnv)) -> Row {
    let env = fresh();
    setup(&env);
    stepper_turn(&env, model);
    let body = the_request(&env, api, file);
    measure(format!("stepper ({model})"), api, &body, String::new())
}

/// A local OpenAI-compatible server as a user adds one (`openai-chat`); the fake serves its
/// Chat Completions route.
fn local_provider(env: &TestEnv) {
    let config = env.places().config_dir;
    std::fs::create_dir_all(&config).unwrap();
    let providers = json!({ "local": {
        "kind": "openai-chat", "baseUrl": format!("{}/v1", env.fake.url),
    }});
    std::fs::write(
        config.join("setting.json"),
        json!({ "providers": providers }).to_string(),
    )
    .unwrap();
}

fn claude_code(rt: &tokio::runtime::Runtime, claude: &Path) -> Row {
    let env = fresh();
    let name = format!("Claude Code {}", version(&env, claude));
    rt.block_on(cli_turn(
        &env,
        claude,
        &["-p", PROMPT, "--model", "claude-sonnet-4-5"],
    ));
    let body = the_request(&env, Api::Messages, "claude-code");
    measure(name, Api::Messages, &body, String::new())
}

/// `codex exec hi`, with `model` or Codex's default.
fn codex(rt: &tokio::runtime::Runtime, codex: &Path, model: Option<&str>) -> Row {
    let env = fresh();
    // Codex talks to the fake LLM's Responses API with the test's dummy key.
    env.codex_config();
    let name = format!("Codex {}", version(&env, codex));
    let mut args = vec!["exec"];
    if let Some(model) = model {
        args.extend(["-m", model]);
    }
    args.push(PROMPT);
    let stderr = rt.block_on(cli_turn(&env, codex, &args));
    let file = format!("codex-{}", model.unwrap_or("default"));
    let body = the_request(&env, Api::Responses, &file);
    let mut notes = Vec::new();
    if model.is_none() {
        notes.push("its default model".to_string());
    }
    if stderr.contains("Model metadata for") {
        notes.push("not in Codex's model catalog: its fallback metadata".into());
    }
    if body["input"]
        .as_array()
        .is_some_and(|i| i.iter().any(|item| item["type"] == "additional_tools"))
    {
        notes.push("tools sent as an `additional_tools` input item".into());
    }
    measure(name, Api::Responses, &body, notes.join("; "))
}

fn skipped(agent: &str, var: &str) -> Value {
    json!({ "agent": agent, "skipped": format!("{var} is not set") })
}

fn main() {
    let claude = std::env::var_os("STEPPER_TEST_CLAUDE_CODE").map(PathBuf::from);
    let codex_cli = std::env::var_os("STEPPER_TEST_CODEX_CLI").map(PathBuf::from);
    let rt = tokio::runtime::Runtime::new().unwrap();

    let mut rows = vec![
        stepper(
            "anthropic/claude-sonnet-4-5",
            Api::Messages,
            "stepper-anthropic",
            |_| {},
        ),
        stepper("openai/gpt-5.1", Api::Responses, "stepper-openai", |_| {}),
        stepper("local/qwen3:8b", Api::Chat, "stepper-local", local_provider),
    ];
    let mut skips = Vec::new();
    match &claude {
        Some(claude) => rows.push(claude_code(&rt, claude)),
        None => skips.push(skipped("Claude Code", "STEPPER_TEST_CLAUDE_CODE")),
    }
    match &codex_cli {
        Some(path) => {
            for model in [None, Some("gpt-5.5"), Some("gpt-5.1-codex")] {
                rows.push(codex(&rt, path, model));
            }
        }
        None => skips.push(skipped("Codex", "STEPPER_TEST_CODEX_CLI")),
    }
    drop(rt);
    report(&rows, &skips);
}

fn report(rows: &[Row], skips: &[Value]) {
    println!(
        "| Agent | Model | API | Instructions | Environment | Tools | Tool schemas | User messages | Request | Notes |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.agent,
            r.model,
            r.api.name(),
            r.system,
            r.environment,
            r.tools.len(),
            r.tool_bytes,
            r.user,
            r.request,
            r.note
        );
    }
    println!();
    println!(
        "Bytes: text in UTF-8, JSON compact. Instructions: Anthropic `system`; Responses `instructions` and developer/system messages; Chat's system message. Environment: `# Environment` sections, `<environment_context>`, `<env>`, Claude Code's git status and date, wherever they are. User messages: every user-role message of the turn, the prompt \"{PROMPT}\" included."
    );
    println!();
    println!("Tools offered:");
    for r in rows {
        println!("- {} with {}: {}", r.agent, r.model, r.tools.join(", "));
    }
    for s in skips {
        println!("- {}: skipped, {}", s["agent"], s["skipped"]);
    }
    let json: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "agent": r.agent, "model": r.model, "api": r.api.name(),
                "instructions_bytes": r.system, "environment_bytes": r.environment,
                "tools": r.tools.len(), "tool_names": r.tools, "tool_schema_bytes": r.tool_bytes,
                "user_message_bytes": r.user, "request_bytes": r.request, "note": r.note,
            })
        })
        .chain(skips.iter().cloned())
        .collect();
    let path = target_dir().join("prompt-sizes.json");
    std::fs::write(&path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    eprintln!("written: {}", path.display());
}
