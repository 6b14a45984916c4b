//! Images and documents in a turn, end to end: what each provider family is sent for them,
//! how they live in a session (replay, export, fork, rewind, a restart), and the limits.

use base64::Engine as _;
use stepper_e2e::events::until_turn_finished;
use stepper_e2e::{Route, TestEnv};
use stepper_protocol::attachment::PartSource;
use stepper_protocol::client::DaemonClient;
use stepper_protocol::methods::*;
use stepper_protocol::{AppEvent, Attachment, EventEnvelope, InputPart, TurnStatus};

/// A 1×1 PNG.
pub const DOT_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/// A one-page PDF, small and whole.
pub fn tiny_pdf() -> Vec<u8> {
    b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
      2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n\
      3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] >> endobj\n\
      trailer << /Root 1 0 R >>\n%%EOF\n"
        .to_vec()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn dot() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(DOT_PNG)
        .unwrap()
}

fn image_part() -> InputPart {
    InputPart::image("dot.png", DOT_PNG.to_string())
}

fn pdf_part() -> InputPart {
    InputPart::Document {
        source: PartSource {
            data: Some(b64(&tiny_pdf())),
            name: Some("spec.pdf".into()),
            ..PartSource::default()
        },
    }
}

/// A session on `model` whose first input is `text` with `parts`; returns its id and its
/// first turn's events.
async fn ask_with(
    env: &TestEnv,
    client: &DaemonClient,
    model: Option<&str>,
    text: &str,
    parts: Vec<InputPart>,
) -> (String, Vec<EventEnvelope>) {
    let created = client
        .call::<SessionCreate>(SessionCreateParams {
            model: model.map(str::to_string),
            input: Some(text.to_string()),
            input_parts: parts,
            ..env.session_params()
        })
        .await
        .unwrap();
    let id = created.session.id;
    let mut stream = client.subscribe_events(&id, 0).await.unwrap();
    let events = until_turn_finished(&mut stream).await;
    (id, events)
}

async fn submit_with(
    client: &DaemonClient,
    id: &str,
    text: &str,
    parts: Vec<InputPart>,
) -> Vec<EventEnvelope> {
    let after = client
        .call::<SessionGet>(SessionParams {
            session_id: id.into(),
        })
        .await
        .unwrap()
        .session
        .last_seq;
    let mut stream = client
        .subscribe_events(&id.to_string(), after)
        .await
        .unwrap();
    client
        .call::<SessionSubmit>(SessionSubmitParams {
            session_id: id.into(),
            text: text.into(),
            parts,
            env: None,
        })
        .await
        .unwrap();
    until_turn_finished(&mut stream).await
}

fn finished_ok(events: &[EventEnvelope]) {
    match &events.last().map(|e| &e.event) {
        Some(AppEvent::TurnFinished { status, error, .. }) => {
            assert_eq!(*status, TurnStatus::Completed, "{error:?}")
        }
        other => panic!("not finished: {other:?}"),
    }
}

fn attachments_of(events: &[EventEnvelope]) -> Vec<Attachment> {
    events
        .iter()
        .find_map(|e| match &e.event {
            AppEvent::TurnStarted { attachments, .. } => Some(attachments.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// The user content of the last message of the last request on `route`.
fn last_user_content(env: &TestEnv, route: Route) -> serde_json::Value {
    let seen = env.fake.seen(route);
    let body = &seen.last().expect("a request").body;
    match route {
        Route::Anthropic => body["messages"].as_array().unwrap().last().unwrap()["content"].clone(),
        Route::Chat => body["messages"].as_array().unwrap().last().unwrap()["content"].clone(),
        _ => body["input"].clone(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_image_and_a_pdf_reach_each_wire_format_as_its_own_blocks() {
    let env = TestEnv::new();
    env.local_provider();
    env.start_daemon();
    let client = env.client().await;
    let png = b64(&dot());
    let pdf = b64(&tiny_pdf());

    // Anthropic: image and document blocks, before the words.
    let (_, events) = ask_with(
        &env,
        &client,
        None,
        "what is this?",
        vec![image_part(), pdf_part()],
    )
    .await;
    finished_ok(&events);
    let content = last_user_content(&env, Route::Anthropic);
    assert_eq!(
        content[0],
        serde_json::json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}})
    );
    assert_eq!(
        content[1],
        serde_json::json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": pdf}, "title": "spec.pdf"})
    );
    assert_eq!(content[2]["text"], "what is this?");

    // OpenAI Responses: input_image and input_file as data URLs.
    let (_, events) = ask_with(
        &env,
        &client,
        Some("openai/gpt-5"),
        "what is this?",
        vec![image_part(), pdf_part()],
    )
    .await;
    finished_ok(&events);
    let input = last_user_content(&env, Route::Responses);
    let parts: Vec<&serde_json::Value> = input
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["role"] == "user")
        .flat_map(|i| i["content"].as_array().unwrap())
        .collect();
    assert_eq!(
        *parts[0],
        serde_json::json!({"type": "input_image", "image_url": format!("data:image/png;base64,{png}"), "detail": "auto"})
    );
    assert_eq!(
        *parts[1],
        serde_json::json!({"type": "input_file", "filename": "spec.pdf", "file_data": format!("data:application/pdf;base64,{pdf}")})
    );
    assert_eq!(parts[2]["text"], "what is this?");

    // Chat Completions: image_url and file parts in one user message.
    let (_, events) = ask_with(
        &env,
        &client,
        Some("local/qwen3-vl"),
        "what is this?",
        vec![image_part(), pdf_part()],
    )
    .await;
    finished_ok(&events);
    let content = last_user_content(&env, Route::Chat);
    assert_eq!(
        content[0],
        serde_json::json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}})
    );
    assert_eq!(
        content[1],
        serde_json::json!({"type": "file", "file": {"filename": "spec.pdf", "file_data": format!("data:application/pdf;base64,{pdf}")}})
    );
    assert_eq!(content[2]["type"], "text");
    assert!(
        content[2]["text"]
            .as_str()
            .unwrap()
            .starts_with("what is this?\n\n<environment_context>"),
        "{content}"
    );
}

/// The image of turn 1 in the request of a later turn (its bytes read back from the store).
fn carries_the_dot(body: &serde_json::Value) -> bool {
    let png = b64(&dot());
    body["messages"].as_array().unwrap().iter().any(|m| {
        m["content"].as_array().is_some_and(|c| {
            c.iter()
                .any(|b| b["type"] == "image" && b["source"]["data"] == png)
        })
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_with_an_image_survives_replay_export_fork_rewind_and_a_restart() {
    let env = TestEnv::new();
    env.start_daemon();
    let client = env.client().await;
    let (id, events) = ask_with(&env, &client, None, "look", vec![image_part()]).await;
    finished_ok(&events);
    let attached = attachments_of(&events);
    assert_eq!(attached.len(), 1);
    assert_eq!(
        (attached[0].name.as_str(), attached[0].width),
        ("dot.png", Some(1))
    );

    // The bytes are stored once and handed out by hash; events name them, never carry them.
    let got = client
        .call::<SessionAttachment>(SessionAttachmentParams {
            session_id: id.clone(),
            sha256: attached[0].sha256.clone(),
        })
        .await
        .unwrap();
    assert_eq!(got.data, DOT_PNG);
    assert_eq!(got.attachment, attached[0]);
    let export = client
        .call::<SessionExport>(SessionExportParams {
            session_id: id.clone(),
            after_seq: 0,
            limit: None,
        })
        .await
        .unwrap();
    let raw: Vec<String> = export.events.iter().map(|e| e.get().to_string()).collect();
    assert!(raw.iter().any(|e| e.contains(&attached[0].sha256)));
    assert!(
        !raw.iter().any(|e| e.contains(DOT_PNG)),
        "bytes copied into an event"
    );

    // A later turn sends the image again, read back from the store.
    let events = submit_with(&client, &id, "and now?", Vec::new()).await;
    finished_ok(&events);
    assert!(carries_the_dot(env.fake.requests().last().unwrap()));

    // After a restart too.
    drop(client);
    let out = env.run(&["daemon", "stop"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    env.start_daemon();
    let client = env.client().await;
    let events = submit_with(&client, &id, "still there?", Vec::new()).await;
    finished_ok(&events);
    assert!(carries_the_dot(env.fake.requests().last().unwrap()));

    // A replay from the start shows the attachment where it was given.
    let mut stream = client.subscribe_events(&id, 0).await.unwrap();
    let replayed = stepper_e2e::events::read_until(&mut stream, |e| {
        matches!(e.event, AppEvent::TurnStarted { .. })
    })
    .await;
    assert_eq!(attachments_of(&replayed), attached);
    drop(stream);

    // A fork before turn 3 keeps the image with turn 1.
    let fork = client
        .call::<SessionFork>(SessionForkParams {
            session_id: id.clone(),
            from_turn: 3,
            title: None,
        })
        .await
        .unwrap()
        .session
        .id;
    client
        .call::<SessionAttachment>(SessionAttachmentParams {
            session_id: fork.clone(),
            sha256: attached[0].sha256.clone(),
        })
        .await
        .unwrap();
    let events = submit_with(&client, &fork, "in the fork?", Vec::new()).await;
    finished_ok(&events);
    assert!(carries_the_dot(env.fake.requests().last().unwrap()));

    // A rewind to before turn 2 keeps turn 1, image and all.
    client
        .call::<SessionRewind>(SessionRewindParams {
            session_id: id.clone(),
            turn: 2,
            files: false,
            conversation: true,
        })
        .await
        .unwrap();
    let events = submit_with(&client, &id, "after the rewind?", Vec::new()).await;
    finished_ok(&events);
    let body = env.fake.requests().last().unwrap().clone();
    assert!(carries_the_dot(&body));
    assert!(!body.to_string().contains("still there?"), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn parts_past_a_limit_or_of_the_wrong_shape_are_refused_saying_what_to_do() {
    let env = TestEnv::new();
    env.start_daemon();
    let client = env.client().await;
    let id = env.create_session(&client, None).await;
    let refused = |parts: Vec<InputPart>| {
        let client = &client;
        let id = id.clone();
        async move {
            client
                .call::<SessionSubmit>(SessionSubmitParams {
                    session_id: id,
                    text: "look".into(),
                    parts,
                    env: None,
                })
                .await
                .unwrap_err()
                .to_string()
        }
    };
    let too_many = vec![image_part(); stepper_protocol::attachment::MAX_PARTS + 1];
    assert!(refused(too_many).await.contains("at most 20"));
    let not_media = InputPart::image("notes.png", b64(b"just text"));
    assert!(
        refused(vec![not_media])
            .await
            .contains("not an image or a PDF")
    );
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.png"), dot()).unwrap();
    let far = InputPart::Image {
        source: PartSource {
            path: Some(outside.path().join("x.png").display().to_string()),
            ..PartSource::default()
        },
    };
    assert!(
        refused(vec![far])
            .await
            .contains("outside the session's folder")
    );
    let steer = client
        .call::<SessionSteer>(SessionSubmitParams {
            session_id: id.clone(),
            text: "look".into(),
            parts: vec![image_part()],
            env: None,
        })
        .await
        .unwrap_err()
        .to_string();
    assert!(steer.contains("takes text only"), "{steer}");
    // Nothing refused was queued.
    let session = client
        .call::<SessionGet>(SessionParams { session_id: id })
        .await
        .unwrap()
        .session;
    assert_eq!(session.turns, 0);

    // A file inside the folder, by path.
    std::fs::write(env.project.path().join("shot.png"), dot()).unwrap();
    let here = InputPart::Image {
        source: PartSource {
            path: Some("shot.png".into()),
            ..PartSource::default()
        },
    };
    let (_, events) = ask_with(&env, &client, None, "", vec![here]).await;
    finished_ok(&events);
    assert_eq!(attachments_of(&events)[0].name, "shot.png");
}

#[test]
fn ask_attaches_an_image_by_flag_and_a_pdf_by_its_at_word() {
    let env = TestEnv::new();
    let shots = tempfile::tempdir().unwrap();
    // Outside the project: the client reads it and sends its bytes.
    let shot = shots.path().join("shot.png");
    std::fs::write(&shot, dot()).unwrap();
    std::fs::write(env.project.path().join("spec.pdf"), tiny_pdf()).unwrap();
    let out = env.run(&[
        "ask",
        "--image",
        &shot.display().to_string(),
        "compare with @spec.pdf",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let content = last_user_content(&env, Route::Anthropic);
    assert_eq!(content[0]["type"], "image");
    assert_eq!(content[0]["source"]["data"], b64(&dot()));
    assert_eq!(content[1]["type"], "document");
    assert_eq!(content[1]["title"], "spec.pdf");
    assert!(
        content[2]["text"]
            .as_str()
            .unwrap()
            .starts_with("compare with @spec.pdf")
    );
    // The same from the command line to the other families: each gets both, in its blocks.
    env.local_provider();
    for (model, route, image, pdf) in [
        (
            "openai/gpt-5",
            Route::Responses,
            "input_image",
            "input_file",
        ),
        ("local/qwen3-vl", Route::Chat, "image_url", "file"),
    ] {
        let out = env.run(&[
            "ask",
            "--model",
            model,
            "--image",
            &shot.display().to_string(),
            "compare with @spec.pdf",
        ]);
        assert!(
            out.status.success(),
            "{model}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let body = env.fake.seen(route).last().unwrap().body.to_string();
        for needle in [
            format!("\"type\":\"{image}\""),
            format!("\"type\":\"{pdf}\""),
            format!("data:image/png;base64,{}", b64(&dot())),
            format!("data:application/pdf;base64,{}", b64(&tiny_pdf())),
        ] {
            assert!(body.contains(&needle), "{model}: no {needle} in {body}");
        }
    }

    // A file that is no image is refused before anything is sent.
    let notes = shots.path().join("notes.png");
    std::fs::write(&notes, "text").unwrap();
    let before = env.fake.requests().len();
    let out = env.run(&["ask", "--image", &notes.display().to_string(), "look"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("is not an image (PNG, JPEG, GIF, WebP) or a PDF")
    );
    assert_eq!(env.fake.requests().len(), before);
}

/// The agent reads a picture and a PDF, and each wire format carries them back in its own
/// way: Anthropic inside the tool result, Responses as the call's output list, Chat in a user
/// message after the tool messages (a tool message holds text only).
#[test]
fn a_read_picture_or_pdf_comes_back_as_content_the_model_can_see() {
    use stepper_e2e::Reply;
    use stepper_e2e::fake_llm::{chat_tool_calls_stream, responses_call_stream, tool_use_stream};
    let env = TestEnv::new();
    std::fs::write(env.project.path().join("shot.png"), dot()).unwrap();
    std::fs::write(env.project.path().join("spec.pdf"), tiny_pdf()).unwrap();
    let png = b64(&dot());
    let pdf = b64(&tiny_pdf());
    env.local_provider();
    let ask = |model: &str| {
        let out = env.run(&["ask", "--model", model, "what do they show?"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };

    env.fake.push(Reply::Sse(tool_use_stream(&[
        ("t1", "Read", serde_json::json!({"file_path": "shot.png"})),
        ("t2", "Read", serde_json::json!({"file_path": "spec.pdf"})),
    ])));
    env.fake.push(Reply::text(&["A dot and a page."]));
    ask("anthropic/claude-sonnet-4-5");
    let body = env.fake.requests().remove(1);
    let results = body["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(results[0]["type"], "tool_result", "{results}");
    assert!(
        results[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("shot.png")
    );
    assert_eq!(
        results[0]["content"][1],
        serde_json::json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}})
    );
    assert_eq!(results[1]["content"][1]["type"], "document");
    assert_eq!(results[1]["content"][1]["source"]["data"], pdf);

    env.fake.push_to(
        Route::Responses,
        Reply::Sse(responses_call_stream(&[(
            "call_1",
            "read",
            serde_json::json!({"path": "shot.png"}),
        )])),
    );
    ask("openai/gpt-5");
    let body = env.fake.seen(Route::Responses).remove(1).body;
    let output = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap()["output"]
        .clone();
    assert_eq!(output[0]["type"], "input_text", "{output}");
    assert_eq!(
        output[1],
        serde_json::json!({"type": "input_image", "image_url": format!("data:image/png;base64,{png}"), "detail": "auto"})
    );

    env.fake.push_to(
        Route::Chat,
        Reply::Sse(chat_tool_calls_stream(&[(
            "call_1",
            "read",
            serde_json::json!({"path": "shot.png"}),
        )])),
    );
    ask("local/qwen3-vl");
    let body = env.fake.seen(Route::Chat).remove(1).body;
    let messages = body["messages"].as_array().unwrap();
    let tool = messages.iter().position(|m| m["role"] == "tool").unwrap();
    assert!(messages[tool]["content"].is_string());
    let shown = &messages[tool + 1];
    assert_eq!(shown["role"], "user", "{body}");
    assert_eq!(
        shown["content"][1],
        serde_json::json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}})
    );
}

#[test]
fn a_model_that_takes_no_images_is_refused_before_any_request() {
    let env = TestEnv::new();
    let shot = env.project.path().join("shot.png");
    std::fs::write(&shot, dot()).unwrap();
    let out = env.run(&[
        "ask",
        "--model",
        "openai/o3-mini",
        "--image",
        &shot.display().to_string(),
        "what is this?",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("takes no images"), "{err}");
    assert!(env.fake.seen(Route::Responses).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_context_counts_a_pdf_by_its_pages() {
    let env = TestEnv::new();
    env.start_daemon();
    let client = env.client().await;
    let (id, events) = ask_with(&env, &client, None, "read it", vec![pdf_part()]).await;
    finished_ok(&events);
    let context = client
        .call::<SessionContext>(SessionParams {
            session_id: id.clone(),
        })
        .await
        .unwrap();
    // One page, at the 3,000 tokens a page Anthropic's accounting reaches (its bytes alone
    // would be some 100 tokens).
    assert!(context.messages >= 3000, "{context:?}");
    let (other, events) = ask_with(&env, &client, None, "read it", Vec::new()).await;
    finished_ok(&events);
    let without = client
        .call::<SessionContext>(SessionParams { session_id: other })
        .await
        .unwrap();
    assert!(without.messages < 1000, "{without:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compacted_conversation_stops_sending_its_old_pictures() {
    let env = TestEnv::new();
    env.start_daemon();
    let client = env.client().await;
    let (id, events) = ask_with(&env, &client, None, "look at this", vec![image_part()]).await;
    finished_ok(&events);
    for n in 1..=4 {
        let events = submit_with(&client, &id, &format!("more {n}"), Vec::new()).await;
        finished_ok(&events);
    }
    assert!(carries_the_dot(env.fake.requests().last().unwrap()));
    let mut stream = client.subscribe_events(&id, 0).await.unwrap();
    stepper_e2e::events::read_until(&mut stream, |e| {
        matches!(e.event, AppEvent::TurnFinished { .. }) && e.turn == Some(5)
    })
    .await;
    client
        .call::<SessionCompact>(SessionCompactParams {
            session_id: id.clone(),
            instructions: None,
        })
        .await
        .unwrap();
    until_turn_finished(&mut stream).await;
    // The summariser is told of the picture, not sent it.
    let summary = env.fake.requests().last().unwrap().to_string();
    assert!(summary.contains("[image: dot.png"), "{summary}");
    assert!(
        !summary.contains(DOT_PNG),
        "the summary request carried the picture"
    );
    let events = submit_with(&client, &id, "and now?", Vec::new()).await;
    finished_ok(&events);
    assert!(!carries_the_dot(env.fake.requests().last().unwrap()));
}
