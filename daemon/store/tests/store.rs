use stepper_protocol::event::{AppEvent, EventEnvelope, TurnStatus};
use stepper_protocol::session::{Env, SessionStatus};
use stepper_store::{Encoded, NewSession, Store, now_ms};

async fn open() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("stepper.db")).await.unwrap();
    (dir, store)
}

fn new_session(id: &str, cwd: &str) -> NewSession {
    NewSession {
        id: id.into(),
        title: None,
        cwd: cwd.into(),
        model: "anthropic/test".into(),
        env: Env::from([("PATH".to_string(), "/bin".to_string())]),
        created_at: now_ms(),
        mode: None,
        sandbox: None,
        instructions: None,
    }
}

fn ev(id: &str, seq: u64, turn: Option<u32>, event: AppEvent) -> EventEnvelope {
    EventEnvelope {
        session_id: id.into(),
        seq,
        at: now_ms(),
        turn,
        agent: None,
        event,
    }
}

#[tokio::test]
async fn events_round_trip_and_session_follows_the_log() {
    let (dir, store) = open().await;
    let (info, first) = store
        .create_session(&new_session("s1", "/p"))
        .await
        .unwrap();
    assert_eq!(info.last_seq, 1);
    assert_eq!(first.seq, 1);
    let batch = vec![
        ev(
            "s1",
            2,
            None,
            AppEvent::InputQueued {
                attachments: Vec::new(),
                input_id: "i1".into(),
                text: "fix the bug\nplease".into(),
                client: None,
            },
        ),
        ev(
            "s1",
            3,
            Some(1),
            AppEvent::TurnStarted {
                attachments: Vec::new(),
                input_id: "i1".into(),
                text: "fix the bug".into(),
                model: "m".into(),
            },
        ),
        ev("s1", 4, Some(1), AppEvent::TextDelta { text: "ok".into() }),
    ];
    store.append_events("s1", &batch).await.unwrap();
    let s = store.session("s1").await.unwrap().unwrap();
    assert_eq!(
        (s.last_seq, s.turns, s.status),
        (4, 1, SessionStatus::Running)
    );
    assert_eq!(s.title.as_deref(), Some("fix the bug"));
    assert_eq!(store.running_sessions().await.unwrap().len(), 1);

    store
        .append_events(
            "s1",
            &[ev(
                "s1",
                5,
                Some(1),
                AppEvent::TurnFinished {
                    status: TurnStatus::Completed,
                    error: None,
                    error_kind: None,
                },
            )],
        )
        .await
        .unwrap();
    let all = store.events_after("s1", 0, 100).await.unwrap();
    assert_eq!(
        all.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5]
    );
    assert_eq!(all[3], batch[2]);
    assert_eq!(store.events_after("s1", 3, 1).await.unwrap()[0].seq, 4);
    assert!(store.running_sessions().await.unwrap().is_empty());

    // Reopen: everything is still there.
    store.close().await;
    let store = Store::open(&dir.path().join("stepper.db")).await.unwrap();
    assert_eq!(store.events_after("s1", 0, 100).await.unwrap(), all);
    assert_eq!(store.session_env("s1").await.unwrap()["PATH"], "/bin");
}

#[tokio::test]
async fn a_taken_seq_fails_the_whole_batch() {
    let (_dir, store) = open().await;
    store
        .create_session(&new_session("s1", "/p"))
        .await
        .unwrap();
    let batch = vec![
        ev(
            "s1",
            2,
            None,
            AppEvent::Notice {
                message: "a".into(),
            },
        ),
        ev(
            "s1",
            1,
            None,
            AppEvent::Notice {
                message: "dup".into(),
            },
        ),
    ];
    assert!(store.append_events("s1", &batch).await.is_err());
    assert_eq!(store.events_after("s1", 0, 100).await.unwrap().len(), 1);
    assert_eq!(store.session("s1").await.unwrap().unwrap().last_seq, 1);

    // A commit goes to SQLite as one script of statements (a multi-row INSERT per 128
    // events, then the session row): a failure in a later statement takes back the earlier.
    let mut batch: Vec<EventEnvelope> = (2..300)
        .map(|seq| {
            ev(
                "s1",
                seq,
                None,
                AppEvent::Notice {
                    message: format!("n{seq}"),
                },
            )
        })
        .collect();
    batch.push(ev(
        "s1",
        1,
        None,
        AppEvent::Notice {
            message: "dup".into(),
        },
    ));
    assert!(store.append_events("s1", &batch).await.is_err());
    assert_eq!(store.events_after("s1", 0, 1000).await.unwrap().len(), 1);
    assert_eq!(store.session("s1").await.unwrap().unwrap().last_seq, 1);
    batch.pop();
    store.append_events("s1", &batch).await.unwrap();
    assert_eq!(store.events_after("s1", 0, 1000).await.unwrap().len(), 299);
    assert_eq!(store.session("s1").await.unwrap().unwrap().last_seq, 299);
}

#[tokio::test]
async fn list_paginates_newest_first_and_filters_by_cwd() {
    let (_dir, store) = open().await;
    for i in 0..5 {
        let mut s = new_session(&format!("s{i}"), if i % 2 == 0 { "/a" } else { "/b" });
        s.created_at = 1000 + i;
        store.create_session(&s).await.unwrap();
    }
    let page = store.list_sessions(None, 2, None).await.unwrap();
    assert_eq!(
        page.sessions
            .iter()
            .map(|s| s.id.as_str())
            .collect::<Vec<_>>(),
        ["s4", "s3"]
    );
    let page2 = store
        .list_sessions(None, 2, page.next_cursor.as_deref())
        .await
        .unwrap();
    assert_eq!(
        page2
            .sessions
            .iter()
            .map(|s| s.id.as_str())
            .collect::<Vec<_>>(),
        ["s2", "s1"]
    );
    let page3 = store
        .list_sessions(None, 2, page2.next_cursor.as_deref())
        .await
        .unwrap();
    assert_eq!(page3.sessions.len(), 1);
    assert!(page3.next_cursor.is_none());
    let a = store.list_sessions(Some("/a"), 10, None).await.unwrap();
    assert_eq!(a.sessions.len(), 3);
}

#[tokio::test]
async fn context_appends_in_order_per_layer() {
    let (_dir, store) = open().await;
    store
        .create_session(&new_session("s1", "/p"))
        .await
        .unwrap();
    store
        .append_context("s1", "main", 1, &["{\"a\":1}".into(), "{\"b\":2}".into()])
        .await
        .unwrap();
    store
        .append_context("s1", "main", 2, &["{\"c\":3}".into()])
        .await
        .unwrap();
    store
        .append_context("s1", "plan", 2, &["{\"p\":1}".into()])
        .await
        .unwrap();
    assert_eq!(
        store.context("s1", "main").await.unwrap(),
        ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]
    );
    assert_eq!(store.context("s1", "plan").await.unwrap().len(), 1);
    assert!(store.context("s2", "main").await.unwrap().is_empty());
}

#[tokio::test]
async fn inputs_are_pending_until_their_turn_starts() {
    let (_dir, store) = open().await;
    store
        .create_session(&new_session("s1", "/p"))
        .await
        .unwrap();
    let queued = |seq, id: &str| {
        ev(
            "s1",
            seq,
            None,
            AppEvent::InputQueued {
                attachments: Vec::new(),
                input_id: id.into(),
                text: format!("text {id}"),
                client: None,
            },
        )
    };
    let started = ev(
        "s1",
        4,
        Some(1),
        AppEvent::TurnStarted {
            attachments: Vec::new(),
            input_id: "a".into(),
            text: "text a".into(),
            model: "m".into(),
        },
    );
    store
        .append_events("s1", &[queued(2, "a"), queued(3, "b"), started])
        .await
        .unwrap();
    let pending = store.pending_inputs().await.unwrap();
    let ids: Vec<&str> = pending.iter().map(|p| p.input_id.as_str()).collect();
    assert_eq!(ids, ["b"]);
    assert_eq!(pending[0].text, "text b");
    // A deleted session takes its queue with it.
    store.delete_session("s1").await.unwrap();
    assert!(store.pending_inputs().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_fork_leaves_out_turns_a_rewind_took_back() {
    let (_dir, store) = open().await;
    store
        .create_session(&new_session("s1", "/p"))
        .await
        .unwrap();
    let mut seq = 1;
    let mut events = Vec::new();
    let mut push = |turn: Option<u32>, event: AppEvent| {
        seq += 1;
        events.push(ev("s1", seq, turn, event));
    };
    for (turn, text) in [(1, "one"), (2, "two (rewound)")] {
        push(
            None,
            AppEvent::InputQueued {
                attachments: Vec::new(),
                input_id: text.into(),
                text: text.into(),
                client: None,
            },
        );
        push(
            Some(turn),
            AppEvent::TurnStarted {
                attachments: Vec::new(),
                input_id: text.into(),
                text: text.into(),
                model: "m".into(),
            },
        );
        push(
            Some(turn),
            AppEvent::TurnFinished {
                status: TurnStatus::Completed,
                error: None,
                error_kind: None,
            },
        );
    }
    push(
        None,
        AppEvent::Rewound {
            turn: 2,
            files: 0,
            conversation: true,
        },
    );
    push(
        None,
        AppEvent::InputQueued {
            attachments: Vec::new(),
            input_id: "three".into(),
            text: "three".into(),
            client: None,
        },
    );
    push(
        Some(3),
        AppEvent::TurnStarted {
            attachments: Vec::new(),
            input_id: "three".into(),
            text: "three".into(),
            model: "m".into(),
        },
    );
    store.append_events("s1", &events).await.unwrap();

    let fork = store
        .fork_session("s1", &new_session("f1", "/p"), 4)
        .await
        .unwrap();
    let copied = store.events_after(&fork.id, 0, 100).await.unwrap();
    let inputs: Vec<&str> = copied
        .iter()
        .filter_map(|e| match &e.event {
            AppEvent::TurnStarted { text, .. } | AppEvent::InputQueued { text, .. } => {
                Some(text.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(inputs, ["one", "one", "three", "three"]);
    assert!(
        copied
            .iter()
            .all(|e| !matches!(e.event, AppEvent::Rewound { .. }))
    );
    let seqs: Vec<u64> = copied.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=copied.len() as u64).collect::<Vec<_>>());
    assert!(
        store
            .fork_session("nope", &new_session("f2", "/p"), 1)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn stored_events_come_back_as_the_text_that_was_committed() {
    let (_dir, store) = open().await;
    store
        .create_session(&new_session("s1", "/p"))
        .await
        .unwrap();
    // A cost the JSON parser reads back one unit off: decoding and encoding again would
    // send 0.000096 where 0.00009599999999999999 went out live.
    let payload = r#"{"type":"UsageUpdated","usage":{"inputTokens":7,"outputTokens":5,"cacheReadTokens":0,"cacheWriteTokens":0},"costUsd":0.00009599999999999999}"#;
    let event: AppEvent = serde_json::from_str(payload).unwrap();
    assert_ne!(
        serde_json::to_string(&event).unwrap(),
        payload,
        "the premise: a round trip through the types changes the text"
    );
    let encoded = Encoded {
        envelope: ev("s1", 2, Some(1), event),
        payload: serde_json::value::RawValue::from_string(payload.to_string()).unwrap(),
    };
    let live = encoded.raw().unwrap();
    store.append_encoded("s1", &[encoded]).await.unwrap();
    let page = store
        .events_after_raw("s1", 1, 10, usize::MAX)
        .await
        .unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].0, 2);
    assert_eq!(page[0].1.get(), live.get(), "byte for byte");
    assert!(live.get().contains("0.00009599999999999999"));
}

#[tokio::test]
async fn a_page_of_raw_events_stops_at_its_byte_budget() {
    let (_dir, store) = open().await;
    store
        .create_session(&new_session("s1", "/p"))
        .await
        .unwrap();
    let big = "z".repeat(10_000);
    let batch: Vec<_> = (2..=11)
        .map(|seq| {
            ev(
                "s1",
                seq,
                Some(1),
                AppEvent::TextDelta { text: big.clone() },
            )
        })
        .collect();
    store.append_events("s1", &batch).await.unwrap();
    let page = store.events_after_raw("s1", 1, 100, 35_000).await.unwrap();
    assert_eq!(page.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [2, 3, 4]);
    // The first event always comes, whatever its size.
    let page = store.events_after_raw("s1", 1, 100, 10).await.unwrap();
    assert_eq!(page.len(), 1);
    let rest = store.events_after_raw("s1", 11, 100, 10).await.unwrap();
    assert!(rest.is_empty());
}

#[tokio::test]
async fn a_cursor_no_list_handed_out_is_an_error() {
    let (_dir, store) = open().await;
    for bad in ["garbage", "12:", ":id", "x:y"] {
        let got = store.list_sessions(None, 10, Some(bad)).await;
        assert!(
            matches!(got, Err(stepper_store::StoreError::InvalidCursor(_))),
            "{bad}: {:?}",
            got.map(|p| p.sessions.len())
        );
    }
    assert!(store.list_sessions(None, 10, Some("12:abc")).await.is_ok());
}

#[tokio::test]
async fn history_leaves_out_the_streamed_pieces_of_completed_turns_only() {
    let (_dir, store) = open().await;
    store
        .create_session(&new_session("s1", "/p"))
        .await
        .unwrap();
    let delta = |seq, turn| {
        ev(
            "s1",
            seq,
            Some(turn),
            AppEvent::TextDelta { text: "d".into() },
        )
    };
    let done = |seq, turn, status| {
        ev(
            "s1",
            seq,
            Some(turn),
            AppEvent::TurnFinished {
                status,
                error: None,
                error_kind: None,
            },
        )
    };
    let batch = vec![
        delta(2, 1),
        delta(3, 1),
        done(4, 1, TurnStatus::Completed),
        delta(5, 2),
        done(6, 2, TurnStatus::Interrupted),
        delta(7, 3),
    ];
    store.append_events("s1", &batch).await.unwrap();
    assert_eq!(store.completed_turns("s1").await.unwrap(), [1]);
    let seqs = |page: Vec<(u64, _)>| page.into_iter().map(|(s, _)| s).collect::<Vec<_>>();
    let all = store
        .events_after_filtered("s1", 0, 100, usize::MAX, &[])
        .await
        .unwrap();
    assert_eq!(seqs(all), [1, 2, 3, 4, 5, 6, 7]);
    let history = store
        .events_after_filtered("s1", 0, 100, usize::MAX, &[1])
        .await
        .unwrap();
    assert_eq!(
        seqs(history),
        [1, 4, 5, 6, 7],
        "an interrupted or running turn keeps its pieces"
    );
}

#[tokio::test]
async fn a_sessions_own_sandbox_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).await.unwrap();
    let mut new = new_session("sb", "/p");
    new.sandbox = Some("workspace-write".into());
    store.create_session(&new).await.unwrap();
    store
        .create_session(&new_session("plain", "/p"))
        .await
        .unwrap();
    assert_eq!(
        store.session_sandbox("sb").await.unwrap().as_deref(),
        Some("workspace-write")
    );
    assert_eq!(store.session_sandbox("plain").await.unwrap(), None);
}

#[tokio::test]
async fn attachments_are_stored_once_go_with_a_queued_input_a_fork_and_a_deletion() {
    let (_dir, store) = open().await;
    store
        .create_session(&new_session("s1", "/p"))
        .await
        .unwrap();
    let about = stepper_protocol::Attachment {
        kind: stepper_protocol::AttachmentKind::Image,
        media_type: "image/png".into(),
        name: "a.png".into(),
        size: 4,
        sha256: "abc".into(),
        width: Some(1),
        height: Some(1),
        pages: None,
    };
    let bytes: &[u8] = b"\x89PNG";
    store
        .put_attachments("s1", &[(&about, bytes), (&about, bytes)])
        .await
        .unwrap();
    store
        .put_attachments("s1", &[(&about, bytes)])
        .await
        .unwrap();
    assert_eq!(
        store.attachment("s1", "abc").await.unwrap(),
        Some((about.clone(), bytes.to_vec()))
    );
    assert_eq!(store.attachment("s1", "nope").await.unwrap(), None);
    let found = store
        .attachment_bytes("s1", &["abc", "nope", "abc"])
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(&found["abc"][..], bytes);

    // A queued input keeps naming its attachments after a restart.
    let queued = ev(
        "s1",
        2,
        None,
        AppEvent::InputQueued {
            input_id: "i".into(),
            text: "look".into(),
            client: None,
            attachments: vec![about.clone()],
        },
    );
    store.append_events("s1", &[queued]).await.unwrap();
    let pending = store.pending_inputs().await.unwrap();
    assert_eq!(pending[0].attachments, vec![about.clone()]);

    let fork = store
        .fork_session("s1", &new_session("f1", "/p"), 1)
        .await
        .unwrap();
    assert_eq!(
        store.attachment(&fork.id, "abc").await.unwrap(),
        Some((about.clone(), bytes.to_vec()))
    );
    assert!(store.delete_session("s1").await.unwrap());
    assert_eq!(store.attachment("s1", "abc").await.unwrap(), None);
    assert!(store.attachment(&fork.id, "abc").await.unwrap().is_some());
}
