//! Assistant Markdown as it lands in scrollback: tables, headings, line breaks, lists,
//! quotes, code, rules and links, each streamed the way a model sends it.

use insta::assert_snapshot;
use ratatui::style::Modifier;
use ratatui::text::Line;
use stepper_protocol::event::AppEvent;

use crate::support::*;

const WIDTH: u16 = 72;

/// `src` streamed in small chunks, then completed, as scrollback gets it at `width`. The
/// same text completed at once must give the same lines: what streaming commits early is
/// final.
fn answer(src: &str, width: u16) -> Vec<Line<'static>> {
    let mut streamed = app();
    start_turn(&mut streamed, "explain");
    streamed.take_history(width);
    let mut lines = Vec::new();
    let chars: Vec<char> = src.chars().collect();
    for chunk in chars.chunks(5) {
        feed(
            &mut streamed,
            [AppEvent::TextDelta {
                text: chunk.iter().collect(),
            }],
        );
        lines.extend(streamed.take_history(width));
    }
    let completed = AppEvent::MessageCompleted {
        text: src.into(),
        stop_reason: Some("end_turn".into()),
    };
    feed(&mut streamed, [completed.clone()]);
    lines.extend(streamed.take_history(width));

    let mut whole = app();
    start_turn(&mut whole, "explain");
    whole.take_history(width);
    feed(&mut whole, [completed]);
    assert_eq!(
        text(&lines),
        text(&whole.take_history(width)),
        "streamed and whole differ"
    );
    lines
}

fn modifiers_of(lines: &[Line<'_>], content: &str) -> Modifier {
    lines
        .iter()
        .flat_map(|l| &l.spans)
        .find(|s| s.content == content)
        .unwrap_or_else(|| panic!("no span {content:?}"))
        .style
        .add_modifier
}

const TABLE: &str = "\
| Function | Kind | Lines | What it does |
|:---|:---:|---:|:---|
| `render` | **pure** fn | 120 | Markdown to styled lines |
| `stable_len` | scan | 40 | Where the finished blocks end |
| `open_fence` | scan | 8 | 漢字 and 🙂 are two columns wide |

After the table.
";

#[test]
fn a_table_has_aligned_columns_and_a_ruled_bold_head() {
    let lines = answer(TABLE, WIDTH);
    assert_snapshot!("table", text(&lines));
    assert!(modifiers_of(&lines, "What it does").contains(Modifier::BOLD));
    assert!(modifiers_of(&lines, "pure").contains(Modifier::BOLD));
}

/// The same table in 40 columns: the prose column shrinks and wraps inside itself, the
/// others keep their words, and no line runs past the edge.
#[test]
fn a_table_wider_than_the_terminal_wraps_its_cells_within_their_columns() {
    let lines = answer(TABLE, 40);
    assert_snapshot!("table_narrow", text(&lines));
    for line in &lines {
        assert!(line.width() <= 40, "{line} is wider than the terminal");
    }
}

#[test]
fn headings_are_styled_without_their_marks() {
    let lines = answer(
        "# The fix\n\nOne paragraph.\n\n## Why it broke\n\nAnother.\n\n### Details\n\nThe end.\n",
        WIDTH,
    );
    assert_snapshot!("headings", text(&lines));
    let h1 = modifiers_of(&lines, "The fix");
    assert!(h1.contains(Modifier::BOLD | Modifier::UNDERLINED));
    assert!(modifiers_of(&lines, "Why it broke").contains(Modifier::BOLD));
    assert!(modifiers_of(&lines, "Details").contains(Modifier::BOLD | Modifier::ITALIC));
}

/// A single newline inside a paragraph ends the line, as the author wrote it.
#[test]
fn short_lines_keep_their_line_breaks() {
    let src = "Checked each crate:\nprotocol: ok\nstore: ok\nengine: 2 warnings\nstepperd: ok\ncli: ok\ntui: 1 failing test\nNext I will fix the test.\n";
    assert_snapshot!("short_lines", text(&answer(src, WIDTH)));

    let long: String = (1..=120).map(|i| format!("line {i}\n")).collect();
    let lines = answer(&long, WIDTH);
    let shown: Vec<_> = lines.iter().map(|l| l.to_string()).collect();
    assert_eq!(shown.len(), 121, "an empty line, then the 120 lines");
    assert_eq!(shown[120], "line 120");
}

#[test]
fn hard_and_soft_breaks_both_end_a_line_and_long_lines_still_wrap() {
    let src = "Two trailing spaces  \nthen a backslash\\\nthen a plain newline\nand one line long enough that it has to wrap at the width of this narrow terminal.\n";
    assert_snapshot!("breaks", text(&answer(src, 40)));
}

#[test]
fn nested_lists_with_numbers_and_tasks() {
    let src = "\
- first
- second, with a line
  that goes on
  - nested
    1. one
    2. two
- [ ] to do
- [x] done

3. three
4. four
";
    assert_snapshot!("lists", text(&answer(src, WIDTH)));
}

#[test]
fn a_quote_keeps_its_gutter_and_lines() {
    let src = "> The token check ignores clock skew between the issuer and this host, so fresh tokens can look expired.\n> Fix it with a leeway.\n>\n> > nested\n\nAfter the quote.\n";
    assert_snapshot!("quote", text(&answer(src, 48)));
}

/// Code stays as written; in a tight list item it is set apart from the item's text, which
/// would otherwise read as going on.
#[test]
fn code_blocks_are_kept_as_they_are() {
    let src = "Run:\n\n```sh\ncargo test -p auth\n```\n\n- in an item:\n  ```rust\n  fn main() {\n\n      run();\n  }\n  ```\n- next\n\nIndented:\n\n    let a = 1;\n    let b = 2;\n";
    assert_snapshot!("code", text(&answer(src, WIDTH)));
}

#[test]
fn rules_stay_inside_quotes_and_items() {
    let src = "Above.\n\n---\n\nBelow.\n\n> quoted\n>\n> ***\n>\n> more\n";
    assert_snapshot!("rule", text(&answer(src, WIDTH)));
}

/// A link shows its URL beside its text only when the text does not already say it.
#[test]
fn links_show_their_url_when_it_differs() {
    let src = "See [the docs](https://docs.rs/jwt), [docs.rs/jwt](https://docs.rs/jwt), <https://example.com>, [a `code` link](https://e.xyz/c), [this section](#setup) and <me@example.com>.\n";
    assert_snapshot!("links", text(&answer(src, WIDTH)));
}
