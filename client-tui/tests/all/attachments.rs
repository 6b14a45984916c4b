//! Images and PDFs in an input: attached to the input box (the core reads them for a pasted
//! path, an `@` completion, Ctrl-V), shown there and in the transcript, sent with the input.

use crossterm::event::KeyCode;
use insta::assert_snapshot;
use stepper_protocol::event::AppEvent;
use stepper_protocol::{Attachment, AttachmentKind};
use stepper_tui::{Action, Attached, CoreEvent};

use crate::support::*;

const WIDTH: u16 = 72;

fn attached(name: &str, kind: AttachmentKind, size: usize) -> Attached {
    Attached {
        name: name.into(),
        kind,
        media_type: match kind {
            AttachmentKind::Document => "application/pdf".into(),
            _ => "image/png".into(),
        },
        bytes: vec![0u8; size].into(),
    }
}

fn shot() -> Attached {
    attached("shot.png", AttachmentKind::Image, 120 * 1024)
}

fn spec() -> Attached {
    attached("spec.pdf", AttachmentKind::Document, 2_200_000)
}

fn attachment(name: &str, size: u64) -> Attachment {
    Attachment {
        kind: AttachmentKind::Image,
        media_type: "image/png".into(),
        name: name.into(),
        size,
        sha256: "ab".repeat(32),
        width: Some(800),
        height: Some(600),
        pages: None,
    }
}

#[test]
fn the_input_box_shows_its_attachments_on_a_row() {
    let mut app = app();
    app.apply(CoreEvent::Attached(shot()));
    app.apply(CoreEvent::Attached(spec()));
    type_text(&mut app, "what differs?");
    assert_snapshot!("composer_two_attachments", frame(&app, WIDTH));
}

#[test]
fn a_turn_shows_the_attachments_it_was_sent_with() {
    let mut app = app();
    feed(
        &mut app,
        [
            AppEvent::InputQueued {
                attachments: vec![attachment("shot.png", 120 * 1024)],
                input_id: "in-1".into(),
                text: "what is wrong here?".into(),
                client: Some("me".into()),
            },
            AppEvent::TurnStarted {
                attachments: vec![attachment("shot.png", 120 * 1024)],
                input_id: "in-1".into(),
                text: "what is wrong here?".into(),
                model: "anthropic/claude-sonnet-4-5".into(),
            },
            AppEvent::InputQueued {
                attachments: vec![attachment("after.png", 3 * 1024 * 1024)],
                input_id: "in-2".into(),
                text: "and now?".into(),
                client: Some("me".into()),
            },
        ],
    );
    assert_snapshot!("turn_with_an_image", text(&app.take_history(WIDTH)));
    assert_snapshot!("queued_with_an_image", frame(&app, WIDTH));
}

#[test]
fn no_clipboard_image_is_a_notice() {
    let mut app = app();
    assert_eq!(app.on_key(ctrl('v')), vec![Action::PasteImage]);
    app.apply(CoreEvent::Notice(
        "no image on the clipboard — copy one (a screenshot), or paste an image file's path".into(),
    ));
    assert_snapshot!("no_clipboard_image", text(&app.take_history(WIDTH)));
}

#[test]
fn enter_sends_the_attachments_with_the_text() {
    let mut app = app();
    app.apply(CoreEvent::Attached(shot()));
    type_text(&mut app, "look");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        vec![Action::Submit {
            text: "look".into(),
            attachments: vec![shot()],
        }]
    );
    // Nothing stays behind for the next input.
    type_text(&mut app, "again");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        vec![Action::Submit {
            text: "again".into(),
            attachments: Vec::new(),
        }]
    );
    // An image alone is an input too.
    app.apply(CoreEvent::Attached(shot()));
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        vec![Action::Submit {
            text: String::new(),
            attachments: vec![shot()],
        }]
    );
}

#[test]
fn while_a_turn_runs_an_input_with_attachments_is_queued_not_steered() {
    let mut app = app();
    start_turn(&mut app, "first");
    app.apply(CoreEvent::Attached(shot()));
    type_text(&mut app, "this too");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        vec![Action::Submit {
            text: "this too".into(),
            attachments: vec![shot()],
        }]
    );
}

#[test]
fn backspace_in_an_empty_box_takes_the_last_attachment_back() {
    let mut app = app();
    app.apply(CoreEvent::Attached(shot()));
    app.apply(CoreEvent::Attached(spec()));
    type_text(&mut app, "x");
    app.on_key(key(KeyCode::Backspace));
    assert!(frame(&app, WIDTH).contains("[document: spec.pdf 2.1 MB]"));
    app.on_key(key(KeyCode::Backspace));
    assert!(!frame(&app, WIDTH).contains("spec.pdf"));
    assert!(frame(&app, WIDTH).contains("[image: shot.png 120 KB]"));
    app.on_key(key(KeyCode::Backspace));
    assert!(!frame(&app, WIDTH).contains("shot.png"));
    // Nothing left: Ctrl-D detaches again.
    assert_eq!(app.on_key(ctrl('d')), vec![Action::Detach]);
}

#[test]
fn a_command_leaves_the_attachments_for_the_next_input() {
    let mut app = app();
    app.apply(CoreEvent::Attached(shot()));
    type_text(&mut app, "/mode plan");
    let actions = app.on_key(key(KeyCode::Enter));
    assert!(
        matches!(actions[..], [Action::SetMode { .. }]),
        "{actions:?}"
    );
    type_text(&mut app, "now look");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        vec![Action::Submit {
            text: "now look".into(),
            attachments: vec![shot()],
        }]
    );
}

#[test]
fn more_than_an_input_takes_is_refused_with_a_notice() {
    let mut app = app();
    for _ in 0..stepper_protocol::attachment::MAX_PARTS {
        app.apply(CoreEvent::Attached(attached(
            "a.png",
            AttachmentKind::Image,
            10,
        )));
    }
    app.apply(CoreEvent::Attached(attached(
        "one-more.png",
        AttachmentKind::Image,
        10,
    )));
    let said = text(&app.take_history(WIDTH));
    assert!(
        said.contains("not attached: [image: one-more.png 10 B] — one input takes at most 20"),
        "{said}"
    );
}

#[test]
fn a_pasted_image_path_is_attached_and_other_paths_are_text() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("my shot.png");
    std::fs::write(&png, b"\x89PNG\r\n\x1a\n").unwrap();
    let full = png.display().to_string();
    let mut app = app();
    for pasted in [
        full.clone(),
        format!("'{full}'\n"),
        full.replace(' ', "\\ "),
        format!("file://{}", full.replace(' ', "%20")),
    ] {
        assert_eq!(
            app.on_paste(&pasted),
            vec![Action::Attach { path: full.clone() }],
            "{pasted}"
        );
    }
    assert!(frame(&app, WIDTH).contains("Ask stepper"), "nothing typed");
    // A path to no file, or to a file that is no image, is text as ever.
    let missing = dir.path().join("gone.png").display().to_string();
    assert!(app.on_paste(&missing).is_empty());
    assert!(frame(&app, WIDTH).contains("gone.png"));
}

#[test]
fn accepting_an_image_completion_attaches_it() {
    let mut app = app();
    app.apply(CoreEvent::Files(vec![
        "docs/shot.png".into(),
        "src/main.rs".into(),
    ]));
    type_text(&mut app, "see @shot");
    assert_eq!(
        app.on_key(key(KeyCode::Tab)),
        vec![Action::Attach {
            path: "docs/shot.png".into()
        }]
    );
    // The word stays, naming it for the model.
    assert!(frame(&app, WIDTH).contains("see @docs/shot.png"));
    type_text(&mut app, "and @main");
    assert!(
        app.on_key(key(KeyCode::Enter)).is_empty(),
        "a source file is only named"
    );
}
