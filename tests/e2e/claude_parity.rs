//! The same Claude Code project given to stepper and to the real Claude Code (issue 39's
//! closing check): both talk to the fake LLM, which answers the same script, and what each
//! sends is compared — the memory files and their order, the skills and commands offered,
//! the agents, a custom command's text, a deny rule and a PreToolUse hook from
//! `.claude/settings.json`, and what the hook is given. Claude Code is the one `.ci/run`
//! installs (`STEPPER_TEST_CLAUDE_CODE`); without it only stepper's half runs.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{Reply, Route, TestEnv, needs};

/// The memory lines, in the order Claude Code gives them.
const MEMORY: [&str; 6] = [
    "USER-MEMORY-LINE",
    "ROOT-MEMORY-LINE",
    "STYLE-IMPORT-LINE",
    "DOT-CLAUDE-MEMORY-LINE",
    "ALWAYS-RULE-LINE",
    "LOCAL-MEMORY-LINE",
];

const SECRET: &str = "sk-parity-secret-0042";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A repository set up for Claude Code as the ones the issue tried: memory in every place
/// Claude Code reads it, an import, a rule for some paths only, a folded skill, commands
/// (one only the user may run), an agent with a tool stepper lacks, and settings that deny
/// reading `.env` and guard commands with a hook that keeps what it was given in `out`.
fn project(env: &TestEnv, out: &Path) {
    let p = env.project.path();
    std::fs::create_dir_all(p.join(".git")).unwrap();
    write(&p.join("build/app"), "built");
    write(&p.join(".env"), &format!("API_TOKEN={SECRET}\n"));
    write(
        &env.home.path().join(".claude/CLAUDE.md"),
        "USER-MEMORY-LINE\n",
    );
    write(
        &p.join("CLAUDE.md"),
        "# Root\nROOT-MEMORY-LINE. See @docs/style.md for style.\n",
    );
    write(&p.join("docs/style.md"), "STYLE-IMPORT-LINE\n");
    write(&p.join(".claude/CLAUDE.md"), "DOT-CLAUDE-MEMORY-LINE\n");
    write(&p.join("CLAUDE.local.md"), "LOCAL-MEMORY-LINE\n");
    write(&p.join(".claude/rules/always.md"), "ALWAYS-RULE-LINE\n");
    write(
        &p.join(".claude/rules/rust.md"),
        "---\npaths:\n  - \"src/**/*.rs\"\n---\nRUST-RULE-LINE\n",
    );
    write(
        &p.join(".claude/commands/greet.md"),
        "---\ndescription: Greets\nargument-hint: name place\n---\n\
         Say hello to $0 at $1, all: $ARGUMENTS, session ${CLAUDE_SESSION_ID}.\n",
    );
    write(
        &p.join(".claude/commands/hidden.md"),
        "---\ndescription: Hidden one\ndisable-model-invocation: true\n---\nHIDDEN-BODY\n",
    );
    write(
        &p.join(".claude/skills/fold/SKILL.md"),
        "---\nname: fold\ndescription: >\n  A folded skill\n  over two lines.\n---\nFOLD-BODY\n",
    );
    write(
        &p.join(".claude/agents/reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews code carefully\n\
         tools: Read, Grep, WebSearch\n---\nYou review.\n",
    );
    let hook = p.join(".claude/hooks/guard.sh");
    write(
        &hook,
        &format!(
            "#!/bin/sh\ninput=$(cat)\nprintf '%s' \"$input\" > '{}'\n\
             case \"$input\" in *'rm -rf'*) echo 'no rm -rf in this repository' >&2; exit 2;; esac\n\
             exit 0\n",
            out.join("hook-input.json").display()
        ),
    );
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    write(
        &p.join(".claude/settings.json"),
        &json!({
            "permissions": {"deny": ["Read(./.env)"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh"}
            ]}]}
        })
        .to_string(),
    );
}

/// The fake's script for the agent's own requests (those offering Bash): read `.env` and
/// clean the build, then answer.
fn script(project: PathBuf) -> impl Fn(Route, &Value) -> Option<Reply> + Send + Sync {
    move |route, body| {
        let offers_bash = body["tools"]
            .as_array()?
            .iter()
            .any(|t| t["name"] == "Bash");
        if route != Route::Anthropic || !offers_bash {
            return None;
        }
        let results = parts(body)
            .iter()
            .filter(|p| p["type"] == "tool_result")
            .count();
        Some(match results {
            0 => Reply::Sse(tool_use_stream(&[
                (
                    "toolu_env",
                    "Read",
                    json!({"file_path": project.join(".env").display().to_string()}),
                ),
                (
                    "toolu_rm",
                    "Bash",
                    json!({"command": "rm -rf ./build", "description": "Clean the build"}),
                ),
            ])),
            _ => Reply::text(&["done"]),
        })
    }
}

/// Every content part of a request's messages.
fn parts(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| match &m["content"] {
            Value::Array(parts) => parts.clone(),
            Value::String(text) => vec![json!({"type": "text", "text": text})],
            _ => Vec::new(),
        })
        .collect()
}

/// All the words a request gives the model: system, messages and tool descriptions.
fn words(body: &Value) -> String {
    let mut all = match &body["system"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    for part in parts(body) {
        if let Some(text) = part["text"].as_str() {
            all.push('\n');
            all.push_str(text);
        }
    }
    for tool in body["tools"].as_array().into_iter().flatten() {
        all.push('\n');
        all.push_str(tool["description"].as_str().unwrap_or(""));
    }
    all
}

/// What one agent sent and what its hook was given.
struct Observed {
    who: &'static str,
    /// The first request of the turn.
    first: Value,
    /// The request that carried the tool results.
    results: Value,
    hook_input: Value,
}

fn observe(who: &'static str, env: &TestEnv, out: &Path) -> Observed {
    let turn: Vec<Value> = env
        .fake
        .seen(Route::Anthropic)
        .into_iter()
        .map(|s| s.body)
        .filter(|b| {
            b["tools"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["name"] == "Bash"))
        })
        .collect();
    let [first, results, ..] = &turn[..] else {
        panic!("{who} made {} requests of the turn", turn.len());
    };
    let hook_input = std::fs::read_to_string(out.join("hook-input.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| panic!("{who}: the PreToolUse hook did not run"));
    Observed {
        who,
        first: first.clone(),
        results: results.clone(),
        hook_input,
    }
}

/// What both must do.
fn check(seen: &Observed, project: &Path) {
    let who = seen.who;
    let said = words(&seen.first);
    // Every memory file, in Claude Code's order; the rule for other paths not yet.
    let mut at = 0;
    for line in MEMORY {
        let found = said[at..]
            .find(line)
            .unwrap_or_else(|| panic!("{who}: {line} missing or out of order in:\n{said}"));
        at += found;
    }
    assert!(!said.contains("RUST-RULE-LINE"), "{who}: {said}");
    // The import is a file of its own: the reference stays where it was written.
    assert!(said.contains("See @docs/style.md for style."), "{who}");
    // Skills and commands offered alike, the folded description whole; not the hidden one.
    assert!(
        said.contains("fold: A folded skill over two lines."),
        "{who}"
    );
    assert!(said.contains("greet: Greets"), "{who}: {said}");
    assert!(!said.contains("Hidden one"), "{who}");
    // The agent, with its description.
    assert!(said.contains("reviewer"), "{who}");
    assert!(said.contains("Reviews code carefully"), "{who}");
    // The command, framed, its arguments in place and the session's id.
    assert!(
        said.contains(
            "<command-message>greet</command-message>\n<command-name>/greet</command-name>\n\
             <command-args>Ann Paris</command-args>"
        ),
        "{who}: {said}"
    );
    let hello = "Say hello to Ann at Paris, all: Ann Paris, session ";
    let at = said
        .find(hello)
        .unwrap_or_else(|| panic!("{who}: the command's text in:\n{said}"));
    let id: String = said[at + hello.len()..].chars().take(36).collect();
    assert!(
        id.len() == 36 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-'),
        "{who}: the session id {id:?}"
    );
    // The deny rule: `.env` not read, its secret never sent. The hook: rm -rf blocked,
    // with the hook's words for the model.
    let sent = seen.results.to_string();
    assert!(!sent.contains(SECRET), "{who}: {sent}");
    let result = |id: &str| {
        parts(&seen.results)
            .into_iter()
            .find(|p| p["type"] == "tool_result" && p["tool_use_id"] == id)
            .unwrap_or_else(|| panic!("{who}: no result for {id}"))
    };
    assert_eq!(result("toolu_env")["is_error"], true, "{who}");
    let rm = result("toolu_rm");
    assert_eq!(rm["is_error"], true, "{who}");
    assert!(
        rm.to_string().contains("no rm -rf in this repository"),
        "{who}: {rm}"
    );
    assert!(project.join("build/app").exists(), "{who}: rm -rf ran");
    // What the hook was given.
    let hook = &seen.hook_input;
    assert_eq!(hook["hook_event_name"], "PreToolUse", "{who}: {hook}");
    assert_eq!(hook["tool_name"], "Bash", "{who}");
    assert_eq!(hook["tool_input"]["command"], "rm -rf ./build", "{who}");
    assert_eq!(hook["tool_use_id"], "toolu_rm", "{who}");
    let transcript = hook["transcript_path"].as_str().unwrap_or("");
    assert!(
        Path::new(transcript).is_file(),
        "{who}: the transcript {transcript:?}"
    );
}

#[test]
fn a_claude_code_project_gets_what_claude_code_gives_it() {
    // stepper.
    let env = TestEnv::new();
    let out = tempfile::tempdir().unwrap();
    project(&env, out.path());
    env.trust_project();
    env.fake
        .respond_with(script(env.project.path().to_path_buf()));
    let asked = env.run(&[
        "ask",
        "--model",
        "anthropic/claude-sonnet-4-5",
        "/greet Ann Paris",
    ]);
    assert!(
        asked.status.success(),
        "{}{}\n{}",
        String::from_utf8_lossy(&asked.stdout),
        String::from_utf8_lossy(&asked.stderr),
        env.daemon_log()
    );
    let ours = observe("stepper", &env, out.path());
    check(&ours, env.project.path());
    // stepper reads AGENTS.md beside CLAUDE.md; Claude Code (2.1.332) does not.

    // Claude Code, in the same kind of folder.
    let Some(claude) = std::env::var_os("STEPPER_TEST_CLAUDE_CODE")
        .map(PathBuf::from)
        .filter(|p| p.exists())
    else {
        assert!(
            !needs::strict(),
            "STEPPER_TEST_CLAUDE_CODE must name an installed claude"
        );
        eprintln!("skipped Claude Code's half: needs STEPPER_TEST_CLAUDE_CODE");
        return;
    };
    let env = TestEnv::new();
    let out = tempfile::tempdir().unwrap();
    project(&env, out.path());
    env.fake
        .respond_with(script(env.project.path().to_path_buf()));
    let mut child = Command::new(&claude)
        .args([
            "-p",
            "/greet Ann Paris",
            "--model",
            "claude-sonnet-4-5",
            "--permission-mode",
            "default",
        ])
        .env_clear()
        .envs(env.envs())
        .envs([
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_TELEMETRY", "1"),
        ])
        .current_dir(env.project.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting Claude Code");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("Claude Code did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let ran = child.wait_with_output().unwrap();
    assert!(
        ran.status.success(),
        "Claude Code: {}{}",
        String::from_utf8_lossy(&ran.stdout),
        String::from_utf8_lossy(&ran.stderr)
    );
    let theirs = observe("claude-code", &env, out.path());
    check(&theirs, env.project.path());

    // The hook is given at least every field Claude Code gives it.
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        k.sort();
        k
    };
    let ours_keys = keys(&ours.hook_input);
    let theirs_keys = keys(&theirs.hook_input);
    let missing: Vec<&String> = theirs_keys
        .iter()
        .filter(|k| !ours_keys.contains(k))
        .collect();
    assert!(
        missing.is_empty(),
        "the hook lacks {missing:?}: ours {}, Claude Code's {}",
        ours.hook_input,
        theirs.hook_input
    );
}
