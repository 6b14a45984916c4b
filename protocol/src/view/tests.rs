use serde_json::json;

use super::*;
use crate::event::ToolCallStatus;

/// Envelopes of one session, numbered as the daemon numbers them.
#[derive(Default)]
struct Log {
    seq: u64,
}

impl Log {
    fn at(&mut self, turn: Option<u32>, agent: Option<&str>, event: AppEvent) -> EventEnvelope {
        self.seq += 1;
        EventEnvelope {
            session_id: "s".into(),
            seq: self.seq,
            at: 1000 * self.seq as i64,
            turn,
            agent: agent.map(String::from),
            event,
        }
    }

    fn turn(&mut self, event: AppEvent) -> EventEnvelope {
        self.at(Some(1), None, event)
    }
}

fn queued(id: &str, client: &str) -> AppEvent {
    AppEvent::InputQueued {
        attachments: Vec::new(),
        input_id: id.into(),
        text: format!("do {id}"),
        client: Some(client.into()),
    }
}

fn started(id: &str) -> AppEvent {
    AppEvent::TurnStarted {
        attachments: Vec::new(),
        input_id: id.into(),
        text: format!("do {id}"),
        model: "m".into(),
    }
}

fn delta(text: &str) -> AppEvent {
    AppEvent::TextDelta { text: text.into() }
}

fn message(text: &str, stop_reason: Option<&str>) -> AppEvent {
    AppEvent::MessageCompleted {
        text: text.into(),
        stop_reason: stop_reason.map(String::from),
    }
}

fn finished(status: TurnStatus) -> AppEvent {
    AppEvent::TurnFinished {
        status,
        error: None,
        error_kind: None,
    }
}

fn usage(input: u64, cost_usd: Option<f64>) -> AppEvent {
    AppEvent::UsageUpdated {
        usage: Usage {
            input_tokens: input,
            output_tokens: 10,
            ..Usage::default()
        },
        cost_usd,
    }
}

#[test]
fn a_streamed_message_is_not_repeated_and_a_whole_one_comes_once() {
    let mut view = SessionView::default();
    let mut log = Log::default();
    view.apply(&log.at(None, None, queued("i1", "tui")));
    let start = log.turn(started("i1"));
    assert_eq!(
        view.apply(&start),
        Some(Change::TurnStarted {
            attachments: &[],
            input_id: "i1",
            text: "do i1",
            model: "m",
            client: Some("tui".into()),
        })
    );
    let d = log.turn(delta("Hel"));
    assert_eq!(view.apply(&d), Some(Change::TextDelta("Hel")));
    let d = log.turn(delta("lo. "));
    view.apply(&d);
    let m = log.turn(message("Hello. ", None));
    assert_eq!(
        view.apply(&m),
        Some(Change::MessageCompleted {
            whole: None,
            cut: false
        })
    );
    // The next message did not stream (a parallel layer's joined results): it comes whole,
    // and cut at the model's limit.
    let m = log.turn(message("Joined.", Some("max_tokens")));
    assert_eq!(
        view.apply(&m),
        Some(Change::MessageCompleted {
            whole: Some("Joined."),
            cut: true
        })
    );
    let empty = log.turn(message("", None));
    assert_eq!(
        view.apply(&empty),
        Some(Change::MessageCompleted {
            whole: None,
            cut: false
        })
    );
}

#[test]
fn an_inner_agents_text_and_usage_are_not_the_answers() {
    let mut view = SessionView::default();
    let mut log = Log::default();
    view.apply(&log.turn(started("i1")));
    let d = log.at(Some(1), Some("layer-1"), delta("draft"));
    assert!(matches!(view.apply(&d), Some(Change::Event(_))));
    let m = log.at(Some(1), Some("layer-1"), message("draft", None));
    assert!(matches!(view.apply(&m), Some(Change::Event(_))));
    let u = log.at(Some(1), Some("layer-1"), usage(500, Some(1.0)));
    assert!(matches!(view.apply(&u), Some(Change::Event(_))));
    // The answering agent's message did not stream: the inner agent's deltas do not count.
    let m = log.turn(message("final", None));
    assert_eq!(
        view.apply(&m),
        Some(Change::MessageCompleted {
            whole: Some("final"),
            cut: false
        })
    );
    assert_eq!(view.usage(), Usage::default());
    assert_eq!(view.cost_usd(), None);
}

#[test]
fn an_envelope_seen_already_changes_nothing() {
    let mut view = SessionView::default();
    let mut log = Log::default();
    view.apply(&log.turn(started("i1")));
    let d = log.turn(delta("once"));
    assert_eq!(view.apply(&d), Some(Change::TextDelta("once")));
    assert_eq!(view.apply(&d), None);
    assert_eq!(view.last_seq(), 2);
}

#[test]
fn inputs_wait_in_order_until_their_turn_starts() {
    let mut view = SessionView::default();
    let mut log = Log::default();
    view.apply(&log.at(None, None, queued("i1", "a")));
    view.apply(&log.at(None, None, queued("i2", "b")));
    let ids = |v: &SessionView| -> Vec<String> {
        v.queued().iter().map(|q| q.input_id.clone()).collect()
    };
    assert_eq!(ids(&view), ["i1", "i2"]);
    view.apply(&log.turn(started("i1")));
    assert_eq!(ids(&view), ["i2"]);
    let turn = view.turn().unwrap();
    assert_eq!(
        (turn.number, turn.client.as_deref(), turn.started_at),
        (Some(1), Some("a"), 3000)
    );
    assert_eq!(view.running_since(), Some(3000));
    view.apply(&log.turn(finished(TurnStatus::Completed)));
    assert_eq!(view.running_since(), None);
    // A turn whose input was queued before this view began: no client known.
    view.apply(&log.at(Some(2), None, started("i0")));
    assert_eq!(view.turn().unwrap().client, None);
}

#[test]
fn open_calls_of_every_agent_are_cut_when_the_turn_ends() {
    let mut view = SessionView::default();
    let mut log = Log::default();
    view.apply(&log.turn(started("i1")));
    let call = |id: &str, tool: &str| AppEvent::ToolCallStarted {
        call_id: id.into(),
        tool: tool.into(),
        input: json!({}),
    };
    view.apply(&log.turn(call("c1", "bash")));
    view.apply(&log.turn(call("c2", "dispatch")));
    // The same id in a subagent is another call.
    view.apply(&log.at(Some(1), Some("sub-1"), call("c1", "read")));
    let out = |text: &str| AppEvent::ToolOutputDelta {
        call_id: "c1".into(),
        text: text.into(),
    };
    let first = log.turn(out("a"));
    assert_eq!(
        view.apply(&first),
        Some(Change::ToolOutput {
            call_id: "c1",
            text: "a",
            first: true
        })
    );
    let more = log.turn(out("b"));
    assert!(matches!(
        view.apply(&more),
        Some(Change::ToolOutput { first: false, .. })
    ));
    view.apply(&log.turn(AppEvent::ToolCallFinished {
        call_id: "c1".into(),
        status: ToolCallStatus::Ok,
        output: "ab".into(),
        exit_code: Some(0),
        duration_ms: 1,
        diff: None,
    }));
    let open: Vec<(&str, Option<&str>)> = view
        .open_calls()
        .iter()
        .map(|c| (c.call_id.as_str(), c.agent.as_deref()))
        .collect();
    assert_eq!(open, [("c2", None), ("c1", Some("sub-1"))]);
    let end = log.turn(finished(TurnStatus::Interrupted));
    let Some(Change::TurnFinished { status, cut, .. }) = view.apply(&end) else {
        panic!("not a turn end")
    };
    assert_eq!(status, TurnStatus::Interrupted);
    assert_eq!(cut.len(), 2);
    assert!(view.open_calls().is_empty());
    assert_eq!(view.turn().unwrap().end.as_ref().unwrap().status, status);
}

#[test]
fn an_answer_names_its_question_and_a_denial_is_kept() {
    let mut view = SessionView::default();
    let mut log = Log::default();
    view.apply(&log.turn(started("i1")));
    let ask = |id: &str| AppEvent::ApprovalRequested {
        request_id: id.into(),
        tool: "bash".into(),
        summary: format!("run {id}"),
        command: Some("rm -rf x".into()),
        diff: None,
    };
    view.apply(&log.turn(ask("r1")));
    view.apply(&log.turn(ask("r2")));
    view.apply(&log.turn(ask("r3")));
    let deny = log.turn(AppEvent::ApprovalResolved {
        request_id: "r1".into(),
        decision: ApprovalDecision::Deny,
        by: Some("alice".into()),
    });
    let Some(Change::ApprovalResolved { asked, by, .. }) = view.apply(&deny) else {
        panic!("not an answer")
    };
    assert_eq!(asked.unwrap().summary, "run r1");
    assert_eq!(by, Some("alice"));
    view.apply(&log.turn(AppEvent::ApprovalResolved {
        request_id: "r2".into(),
        decision: ApprovalDecision::Allow,
        by: None,
    }));
    let denials = &view.turn().unwrap().denials;
    assert_eq!(denials.len(), 1);
    assert_eq!(
        (denials[0].request_id.as_str(), denials[0].by.as_deref()),
        ("r1", Some("alice"))
    );
    assert_eq!(view.approvals().len(), 1);
    // What the turn still asked cannot be answered once it is over.
    view.apply(&log.turn(finished(TurnStatus::Completed)));
    assert!(view.approvals().is_empty());
    let late = log.turn(AppEvent::ApprovalResolved {
        request_id: "r3".into(),
        decision: ApprovalDecision::Deny,
        by: None,
    });
    assert!(matches!(
        view.apply(&late),
        Some(Change::ApprovalResolved { asked: None, .. })
    ));
}

#[test]
fn the_context_is_the_last_calls_input_and_costs_add_up_over_turns() {
    let mut view = SessionView::default();
    let mut log = Log::default();
    view.apply(&log.turn(started("i1")));
    view.apply(&log.turn(usage(100, None)));
    assert_eq!(view.context_tokens(), Some(100));
    assert_eq!(view.cost_usd(), None);
    // Usage is summed over the turn's calls: the second call's context is what it added.
    view.apply(&log.turn(message("", None)));
    view.apply(&log.turn(usage(250, Some(0.5))));
    assert_eq!(view.context_tokens(), Some(150));
    assert!(view.turn_priced());
    assert_eq!(view.turn().unwrap().usage.input_tokens, 250);
    view.apply(&log.turn(finished(TurnStatus::Completed)));
    view.apply(&log.at(Some(2), None, started("i2")));
    view.apply(&log.at(Some(2), None, usage(40, Some(0.25))));
    assert_eq!(view.usage().input_tokens, 290);
    assert_eq!(view.usage().output_tokens, 20);
    assert_eq!(view.cost_usd(), Some(0.75));
    let compacted = log.at(
        Some(2),
        None,
        AppEvent::CompactionFinished {
            before_tokens: 290,
            after_tokens: 30,
            pruned: 1,
            summarized: 2,
            error: None,
        },
    );
    view.apply(&compacted);
    assert_eq!(view.context_tokens(), Some(30));
}

#[test]
fn a_layered_turn_keeps_each_layers_end() {
    let mut view = SessionView::default();
    let mut log = Log::default();
    view.apply(&log.turn(started("i1")));
    for index in [1, 2] {
        view.apply(&log.turn(AppEvent::LayerStarted {
            index,
            count: 2,
            name: format!("l{index}"),
            model: "m".into(),
            parallel: false,
            agent_id: None,
        }));
    }
    view.apply(&log.turn(AppEvent::LayerFinished {
        index: 1,
        name: "l1".into(),
        status: TurnStatus::Completed,
        text: "plan".into(),
        error: None,
        workers: 3,
    }));
    let layers = &view.turn().unwrap().layers;
    assert_eq!(
        (layers[0].status, layers[0].text.as_str(), layers[0].workers),
        (TurnStatus::Completed, "plan", 3)
    );
    // A layer that never finished says so.
    assert_eq!(layers[1].status, TurnStatus::Interrupted);
}

#[test]
fn events_of_a_turn_not_seen_starting_fold_into_the_session_only() {
    let mut view = SessionView::default();
    let mut log = Log::default();
    // Attached mid-turn: its start was before this view's first envelope.
    view.apply(&log.at(Some(4), None, delta("tail")));
    view.apply(&log.at(Some(4), None, usage(70, Some(0.1))));
    assert!(view.turn().is_none());
    assert_eq!(view.context_tokens(), Some(70));
    view.apply(&log.at(Some(4), None, finished(TurnStatus::Completed)));
    assert_eq!(view.cost_usd(), Some(0.1));
    assert_eq!(view.usage().input_tokens, 70);
}
