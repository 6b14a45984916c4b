//! The first run's choice: keys and replies through `Setup`, what it shows, and its loop
//! with a core that answers (or never does).

use std::sync::Mutex;

use crossterm::event::{Event, KeyCode};
use insta::assert_snapshot;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Position;
use stepper_tui::{
    Screen, Setup, SetupCalls, SetupOffer, SetupOutcome, SetupReply, SetupRequest, SetupStep,
    setup_with,
};
use tokio::sync::mpsc;

use crate::support::*;

const REASON: &str = "no model provider is set up: set ANTHROPIC_API_KEY or OPENAI_API_KEY";

fn offer() -> SetupOffer {
    SetupOffer {
        reason: REASON.into(),
        usable: Vec::new(),
        defaults: [(
            "anthropic".to_string(),
            "anthropic/claude-sonnet-4-5".to_string(),
        )]
        .into_iter()
        .collect(),
        local_url: "http://localhost:11434/v1".into(),
    }
}

fn shown(setup: &Setup, width: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, setup.height(width))).unwrap();
    terminal
        .draw(|f| {
            let area = f.area();
            setup.render(area, f.buffer_mut());
        })
        .unwrap();
    buffer_text(terminal.backend().buffer())
}

fn typed(setup: &mut Setup, text: &str) {
    for c in text.chars() {
        assert_eq!(setup.on_key(key(KeyCode::Char(c))), None);
    }
}

#[test]
fn a_pasted_key_is_stored_masked_and_starts_the_providers_model() {
    let mut setup = Setup::new(offer());
    assert_snapshot!("setup_menu", shown(&setup, 72));
    assert_eq!(setup.on_key(key(KeyCode::Char('2'))), None);
    // Enter on nothing asks for the key rather than storing an empty one.
    assert_eq!(setup.on_key(key(KeyCode::Enter)), None);
    assert!(shown(&setup, 72).contains("paste the key first"));
    assert_eq!(
        setup.on_event(&Event::Paste("sk-ant-secret\n".into())),
        None
    );
    typed(&mut setup, "42");
    let screen = shown(&setup, 72);
    assert!(!screen.contains("secret"), "{screen}");
    assert_snapshot!("setup_key", screen);
    assert_eq!(
        setup.on_key(key(KeyCode::Enter)),
        Some(SetupStep::Call(SetupRequest::StoreKey {
            provider: "anthropic".into(),
            key: "sk-ant-secret42".into(),
        }))
    );
    // Busy: keys wait for the reply.
    assert_eq!(setup.on_key(key(KeyCode::Char('x'))), None);
    assert_eq!(
        setup.on_reply(SetupReply::Done),
        Some(SetupStep::Finish(SetupOutcome::Model(
            "anthropic/claude-sonnet-4-5".into()
        )))
    );
}

#[test]
fn a_failed_request_says_why_and_lets_the_user_try_again() {
    let mut setup = Setup::new(offer());
    setup.on_key(key(KeyCode::Char('3')));
    typed(&mut setup, "sk-openai");
    assert!(matches!(
        setup.on_key(key(KeyCode::Enter)),
        Some(SetupStep::Call(SetupRequest::StoreKey { .. }))
    ));
    assert_eq!(
        setup.on_reply(SetupReply::Failed(
            "the credentials file is not writable".into()
        )),
        None
    );
    assert!(shown(&setup, 72).contains("the credentials file is not writable"));
    // Still at the key, which can be sent again; Esc goes back to the menu, Esc again quits.
    assert!(matches!(
        setup.on_key(key(KeyCode::Enter)),
        Some(SetupStep::Call(SetupRequest::StoreKey { .. }))
    ));
    assert_eq!(setup.on_key(key(KeyCode::Esc)), None);
    assert!(!setup.is_busy());
    assert!(shown(&setup, 72).contains("1. Sign in with ChatGPT"));
    // A late reply to the request left behind changes nothing.
    assert_eq!(setup.on_reply(SetupReply::Done), None);
    assert_eq!(
        setup.on_key(key(KeyCode::Esc)),
        Some(SetupStep::Finish(SetupOutcome::Cancelled))
    );
}

#[test]
fn a_local_server_is_probed_and_a_model_chosen() {
    let mut setup = Setup::new(offer());
    setup.on_key(key(KeyCode::Char('4')));
    assert!(shown(&setup, 72).contains("url: http://localhost:11434/v1"));
    assert_eq!(
        setup.on_key(key(KeyCode::Enter)),
        Some(SetupStep::Call(SetupRequest::Probe {
            url: "http://localhost:11434/v1".into()
        }))
    );
    // A server with no model says so and stays at the address.
    setup.on_reply(SetupReply::Models {
        url: "http://localhost:11434/v1".into(),
        models: vec![],
    });
    assert!(shown(&setup, 72).contains("serves no model"));
    setup.on_key(key(KeyCode::Enter));
    setup.on_reply(SetupReply::Models {
        url: "http://localhost:11434/v1".into(),
        models: vec!["qwen3:8b".into(), "llama3.2:3b".into()],
    });
    setup.on_key(key(KeyCode::Down));
    assert_snapshot!("setup_local_models", shown(&setup, 72));
    assert_eq!(
        setup.on_key(key(KeyCode::Enter)),
        Some(SetupStep::Call(SetupRequest::UseLocal {
            url: "http://localhost:11434/v1".into(),
            model: "llama3.2:3b".into(),
        }))
    );
    assert_eq!(
        setup.on_reply(SetupReply::Done),
        Some(SetupStep::Finish(SetupOutcome::Model(
            "local/llama3.2:3b".into()
        )))
    );
}

#[test]
fn signing_in_shows_the_whole_page_address_then_waits_for_the_browser() {
    let mut setup = Setup::new(offer());
    assert_eq!(
        setup.on_key(key(KeyCode::Char('1'))),
        Some(SetupStep::Call(SetupRequest::BeginSignIn))
    );
    let url = format!("https://auth.example/oauth/authorize?{}", "x".repeat(150));
    assert_eq!(
        setup.on_reply(SetupReply::SignInBegun {
            login_id: "l1".into(),
            url: url.clone()
        }),
        Some(SetupStep::Call(SetupRequest::WaitSignIn {
            login_id: "l1".into()
        }))
    );
    let screen = shown(&setup, 60);
    let joined: String = screen.lines().map(str::trim_end).collect();
    assert!(
        joined.contains(&url),
        "the address is all there, wrapped:\n{screen}"
    );
    assert!(screen.contains("ssh -L 1455:localhost:1455"), "{screen}");
    assert_eq!(
        setup.on_reply(SetupReply::Done),
        Some(SetupStep::Finish(SetupOutcome::Model(
            "codex/gpt-5-codex".into()
        )))
    );
}

#[test]
fn a_provider_already_usable_is_offered_first() {
    let mut offer = offer();
    offer.usable = vec![(
        "OPENAI_API_KEY in this terminal's environment".into(),
        "openai/gpt-5".into(),
    )];
    let mut setup = Setup::new(offer);
    assert!(shown(&setup, 100).contains("1. Use openai/gpt-5 (OPENAI_API_KEY"));
    assert_eq!(
        setup.on_key(key(KeyCode::Enter)),
        Some(SetupStep::Finish(SetupOutcome::Model(
            "openai/gpt-5".into()
        )))
    );
}

/// A core whose sign-in never completes, and which stores keys.
#[derive(Default)]
struct Core {
    asked: Mutex<Vec<SetupRequest>>,
}

impl SetupCalls for Core {
    async fn call(&self, request: SetupRequest) -> SetupReply {
        self.asked.lock().unwrap().push(request.clone());
        match request {
            SetupRequest::BeginSignIn => SetupReply::SignInBegun {
                login_id: "l1".into(),
                url: "https://auth.example/authorize".into(),
            },
            SetupRequest::WaitSignIn { .. } => std::future::pending().await,
            _ => SetupReply::Done,
        }
    }
}

#[tokio::test]
async fn the_loop_leaves_a_request_that_never_answers_on_esc() {
    let (tx, rx) = mpsc::unbounded_channel();
    let core = Core::default();
    let screen = Screen::new(TestBackend::new(80, 24), Position::new(0, 0)).unwrap();
    let send = |code| tx.send(Event::Key(key(code))).unwrap();
    // Sign in (it hangs), go back, paste a key instead.
    send(KeyCode::Char('1'));
    let run = setup_with(offer(), &core, screen, Keys(rx));
    let keys = async {
        // Wait until the sign-in is waited on (polled, with a deadline).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !core
            .asked
            .lock()
            .unwrap()
            .iter()
            .any(|r| matches!(r, SetupRequest::WaitSignIn { .. }))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the sign-in was never waited on"
            );
            tokio::task::yield_now().await;
        }
        send(KeyCode::Esc);
        send(KeyCode::Char('2'));
        for c in "k-1".chars() {
            send(KeyCode::Char(c));
        }
        send(KeyCode::Enter);
    };
    let (outcome, ()) = tokio::join!(run, keys);
    assert_eq!(
        outcome.unwrap(),
        SetupOutcome::Model("anthropic/claude-sonnet-4-5".into())
    );
    let asked = core.asked.lock().unwrap();
    assert_eq!(
        asked.last(),
        Some(&SetupRequest::StoreKey {
            provider: "anthropic".into(),
            key: "k-1".into()
        })
    );
}
