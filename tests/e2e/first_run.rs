//! A new user's first run: no key anywhere. A session that could not answer is refused at
//! once, with the same words from `ask`, the protocol and the TUI; the TUI offers the ways
//! to set a provider up and then starts the session; `stepper doctor` says what is set up.

use std::io::Write;
use std::process::Stdio;

use stepper_e2e::fake_llm::{FAKE_KEY, FAKE_MODELS};
use stepper_e2e::output::{stderr, stdout};
use stepper_e2e::{Route, TestEnv, Tmux};
use stepper_protocol::client::ClientError;
use stepper_protocol::error::PROVIDER_UNAVAILABLE;
use stepper_protocol::methods::*;

/// What the daemon says when nothing is set up (`status::nothing_set_up`).
const NOTHING_SET_UP: &str = "no model provider is set up: set ANTHROPIC_API_KEY or \
     OPENAI_API_KEY in the environment you run stepper from";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn create_params(env: &TestEnv, model: Option<&str>) -> SessionCreateParams {
    SessionCreateParams {
        input_parts: Vec::new(),
        cwd: env.project.path().display().to_string(),
        env: env.envs().into_iter().collect(),
        model: model.map(str::to_string),
        title: None,
        record: None,
        mode: None,
        sandbox: None,
        input: Some("hello".into()),
        system_prompt: None,
        append_system_prompt: None,
    }
}

/// The daemon's refusal: its code and its words.
fn refusal(result: Result<SessionResponse, ClientError>) -> String {
    match result {
        Err(ClientError::Rpc { code, message, .. }) => {
            assert_eq!(code, PROVIDER_UNAVAILABLE, "{message}");
            message
        }
        other => panic!("expected the provider to be refused, got {other:?}"),
    }
}

fn store_key(env: &TestEnv, flag: &str, key: &str) {
    let mut child = env
        .stepper()
        .args(["auth", "login", flag])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{key}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_missing_key_is_refused_at_once_with_the_same_words_everywhere() {
    let env = TestEnv::without_keys();

    // `ask`: refused before any request, no session left behind.
    let out = env.run(&["ask", "hello"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains(NOTHING_SET_UP), "{}", stderr(&out));
    insta::assert_snapshot!("ask_with_nothing_set_up", env.normalized(&out));
    let asked_model = env.run(&["ask", "--model", "openai/gpt-5", "hello"]);
    assert!(!asked_model.status.success());
    let openai_words = stderr(&asked_model);
    assert!(
        openai_words.contains("no openai API key: set OPENAI_API_KEY"),
        "{openai_words}"
    );

    runtime().block_on(async {
        let client = env.client().await;
        // The protocol: the same code and words, for the default model and a named one.
        let message = refusal(
            client
                .call::<SessionCreate>(create_params(&env, None))
                .await,
        );
        assert!(message.starts_with(NOTHING_SET_UP), "{message}");
        assert!(
            stderr(&out).contains(&message),
            "ask says what the protocol says"
        );
        let message = refusal(
            client
                .call::<SessionCreate>(create_params(&env, Some("openai/gpt-5")))
                .await,
        );
        assert!(
            openai_words.contains(&message),
            "{message} / {openai_words}"
        );
        let message = refusal(
            client
                .call::<SessionCreate>(create_params(&env, Some("codex/gpt-5-codex")))
                .await,
        );
        assert!(message.contains("stepper auth login --codex"), "{message}");
        let listed = client
            .call::<SessionList>(SessionListParams {
                cwd: None,
                limit: None,
                cursor: None,
            })
            .await
            .unwrap();
        assert!(listed.sessions.is_empty(), "nothing was stored");

        // The status says the same, provider by provider.
        let status = client
            .call::<ProvidersStatus>(ProvidersStatusParams {
                cwd: Some(env.project.path().display().to_string()),
                env: env.envs().into_iter().collect(),
                probe: true,
            })
            .await
            .unwrap();
        assert!(status.providers.iter().all(|p| !p.usable), "{status:?}");
        assert!(!status.default_usable);
    });
    assert!(
        env.fake.requests().is_empty(),
        "no request reached a provider"
    );

    // Stored: a key makes the default model usable, and the session answers.
    store_key(&env, "--anthropic", "sk-ant-stored-first-run");
    runtime().block_on(async {
        let client = env.client().await;
        let created = client
            .call::<SessionCreate>(create_params(&env, None))
            .await
            .unwrap();
        assert_eq!(created.session.model, "anthropic/claude-sonnet-4-5");
        let status = client
            .call::<ProvidersStatus>(ProvidersStatusParams {
                env: env.envs().into_iter().collect(),
                ..Default::default()
            })
            .await
            .unwrap();
        let anthropic = status
            .providers
            .iter()
            .find(|p| p.name == "anthropic")
            .unwrap();
        assert!(anthropic.usable);
        assert_eq!(anthropic.source, Some(ProviderSource::StoredKey));
        assert!(!anthropic.detail.contains("sk-ant"), "never the key itself");

        // Changing the model to one whose provider is not set up: refused, same words.
        let changed = client
            .call::<SessionSetModel>(SessionSetModelParams {
                session_id: created.session.id.clone(),
                model: "openai/gpt-5".into(),
            })
            .await;
        match changed {
            Err(ClientError::Rpc { code, message, .. }) => {
                assert_eq!(code, PROVIDER_UNAVAILABLE);
                assert!(openai_words.contains(&message), "{message}");
            }
            other => panic!("setModel should be refused: {other:?}"),
        }
        let got = client
            .call::<SessionGet>(SessionParams {
                session_id: created.session.id,
            })
            .await
            .unwrap();
        assert_eq!(got.session.model, "anthropic/claude-sonnet-4-5");
    });
}

#[test]
fn a_local_server_stored_once_is_where_new_sessions_start() {
    let env = TestEnv::without_keys();
    let url = format!("{}/v1", env.fake.url);
    let out = env.run(&["auth", "login", "--local", &url]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("local/{}", FAKE_MODELS[0])),
        "{}",
        stdout(&out)
    );
    // A server that does not answer is not stored.
    let refused = env.run(&[
        "auth",
        "login",
        "--local",
        "http://127.0.0.1:9/v1",
        "--name",
        "other",
    ]);
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("nothing answers at http://127.0.0.1:9/v1"));

    let out = env.run(&["ask", "--format", "json", "hello"]);
    assert!(
        out.status.success(),
        "{}\n{}",
        stderr(&out),
        env.daemon_log()
    );
    let result: AskResult = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result.text, "Hello there!");
    let seen = env.fake.seen(Route::Chat);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body["model"], FAKE_MODELS[0]);
}

#[test]
fn doctor_on_an_unconfigured_home() {
    let env = TestEnv::without_keys();
    let out = env.shown(&["doctor"]);
    assert!(
        !out.success(),
        "a home where no session can answer is a problem"
    );
    insta::assert_snapshot!(out);
}

#[test]
fn doctor_on_a_configured_home() {
    let env = TestEnv::new();
    env.start_daemon();
    std::fs::create_dir_all(env.project.path().join(".stepper")).unwrap();
    std::fs::write(
        env.project.path().join(".stepper/setting.json"),
        "{\n  // a comment\n  \"modle\": \"anthropic/claude-opus-4-1\"\n}\n",
    )
    .unwrap();
    let url = format!("{}/v1", env.fake.url);
    let out = env.run(&["auth", "login", "--local", &url, "--model", FAKE_MODELS[1]]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = env.shown(&["doctor"]);
    assert!(out.success(), "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn the_tui_first_run_takes_a_key_and_starts_the_session() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::without_keys();
    let tmux = Tmux::new(&env);
    let pane = tmux.shell();
    pane.run("stepper; echo \"stepper exited $?\"");
    pane.wait_for_text("stepper needs a model provider to start a session");
    let screen = pane.screen();
    assert!(
        screen.contains(NOTHING_SET_UP.split(':').next().unwrap()),
        "{screen}"
    );
    assert!(screen.contains("Sign in with ChatGPT"), "{screen}");
    pane.press("2");
    pane.wait_for_text("Paste your Anthropic API key");
    pane.type_text(FAKE_KEY);
    // Masked: the key is never on the screen.
    let screen = pane.wait_for_text(&format!("({} characters)", FAKE_KEY.len()));
    assert!(!screen.contains(FAKE_KEY), "{screen}");
    pane.press("Enter");
    // The session is up: the status line names the model.
    pane.wait_for_text("claude-sonnet-4-5");
    pane.type_text("hello");
    pane.press("Enter");
    pane.wait_for_history("the fake's answer", |h| h.contains("Hello, world! ✓"));
    let requests = env.fake.seen(Route::Anthropic);
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].headers.get("x-api-key").map(String::as_str),
        Some(FAKE_KEY)
    );
    assert!(!pane.history().contains(FAKE_KEY), "the key never shows");
    pane.press("C-d");
    pane.wait_for_text("stepper exited 0");
}

/// `stepper --version` says which build it is — the version, the commit and the build date —
/// as a bug report needs it.
#[test]
fn version_names_the_commit_and_the_build_date() {
    let env = TestEnv::new();
    let out = env.run(&["--version"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    let prefix = format!("stepper {} ({head}, built ", env!("CARGO_PKG_VERSION"));
    assert!(
        text.starts_with(&prefix),
        "{text:?} should start with {prefix:?}"
    );
    let date = text[prefix.len()..].trim_end().trim_end_matches(')');
    let digits: Vec<&str> = date.split('-').collect();
    assert!(
        digits.len() == 3
            && digits.iter().map(|d| d.len()).eq([4, 2, 2])
            && digits.iter().all(|d| d.bytes().all(|b| b.is_ascii_digit())),
        "a YYYY-MM-DD date: {text:?}"
    );
}
