//! The near-miss corpus: edits whose old_string misses the file by whitespace the way models
//! miss it (trailing spaces, spaces for tabs, a block indented more or less), and edits that
//! must be refused (text that differs, two places that fit). Every case in
//! `tests/near_miss/*.json` runs through the real edit tool on a real file.
//!
//! A case is `{name, file, old, new, replace_all?, after | refused, says?}`. Texts are a string
//! or an array of lines joined with `\n` (end it with `""` for a final newline). `after` is the
//! whole file the edit must leave; `refused` says why the edit must fail and leave the file
//! alone; `says` is text the result or the error must contain.

use std::fs;
use std::path::Path;

use serde::Deserialize;
use serde_json::json;
use stepper_engine::tool::{Tool, ToolCx};
use stepper_tools::fs::EditTool;

#[derive(Deserialize)]
#[serde(untagged)]
enum Text {
    Whole(String),
    Lines(Vec<String>),
}

impl Text {
    fn text(&self) -> String {
        match self {
            Text::Whole(text) => text.clone(),
            Text::Lines(lines) => lines.join("\n"),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    file: Text,
    old: Text,
    new: Text,
    #[serde(default)]
    replace_all: bool,
    after: Option<Text>,
    refused: Option<String>,
    says: Option<String>,
}

/// How the cases came out.
#[derive(Default)]
struct Tally {
    cases: usize,
    expected_applied: usize,
    expected_refused: usize,
    applied_right: usize,
    refused: usize,
    /// Applied, but the file is not what was expected, or applied where refusal was expected.
    wrong: usize,
    /// Refused where the edit was expected to apply.
    missed: usize,
    /// What went wrong, case by case, for the failure message.
    problems: Vec<String>,
}

fn load(dir: &Path) -> Vec<(String, Case)> {
    let mut files: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for path in files {
        let group = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(&path).unwrap();
        let list: Vec<Case> =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        cases.extend(list.into_iter().map(|case| (group.clone(), case)));
    }
    cases
}

#[tokio::test]
async fn every_near_miss_case_is_applied_right_or_refused() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/near_miss");
    let cases = load(&corpus);
    let mut tally = Tally::default();
    let dir = tempfile::tempdir().unwrap();
    let cx = ToolCx::permissive(dir.path());

    for (number, (group, case)) in cases.iter().enumerate() {
        let label = format!("{group}: {}", case.name);
        assert!(
            case.after.is_some() != case.refused.is_some(),
            "{label}: give exactly one of after and refused"
        );
        tally.cases += 1;
        let name = format!("case{number}");
        let path = dir.path().join(&name);
        let before = case.file.text();
        fs::write(&path, &before).unwrap();
        let result = EditTool
            .call(
                json!({
                    "path": name,
                    "old_string": case.old.text(),
                    "new_string": case.new.text(),
                    "replace_all": case.replace_all,
                }),
                &cx,
            )
            .await;
        let now = fs::read_to_string(&path).unwrap();
        let said = match &result {
            Ok(out) => out.content.clone(),
            Err(e) => e.to_string(),
        };
        match (&result, &case.after) {
            (Ok(_), Some(after)) if now == after.text() => tally.applied_right += 1,
            (Ok(_), Some(after)) => {
                tally.wrong += 1;
                tally.problems.push(format!(
                    "{label}: wrong result\n  expected {:?}\n  got      {now:?}",
                    after.text()
                ));
            }
            (Ok(_), None) => {
                tally.wrong += 1;
                tally.problems.push(format!(
                    "{label}: applied, but must be refused ({})\n  got {now:?}\n  said {said}",
                    case.refused.as_deref().unwrap_or_default()
                ));
            }
            (Err(_), after) => {
                tally.refused += 1;
                if after.is_some() {
                    tally.missed += 1;
                    tally.problems.push(format!("{label}: refused: {said}"));
                }
                if now != before {
                    tally.wrong += 1;
                    tally
                        .problems
                        .push(format!("{label}: refused, yet the file changed"));
                }
            }
        }
        if case.after.is_some() {
            tally.expected_applied += 1;
        } else {
            tally.expected_refused += 1;
        }
        if let Some(says) = &case.says
            && !said.contains(says.as_str())
        {
            tally
                .problems
                .push(format!("{label}: should say {says:?}, said: {said}"));
        }
    }

    eprintln!(
        "near-miss corpus: {} cases ({} to apply, {} to refuse): {} applied right, {} refused, \
         {} wrong, {} refused that should apply",
        tally.cases,
        tally.expected_applied,
        tally.expected_refused,
        tally.applied_right,
        tally.refused,
        tally.wrong,
        tally.missed
    );
    assert!(
        tally.problems.is_empty(),
        "{} problem(s):\n{}",
        tally.problems.len(),
        tally.problems.join("\n")
    );
    assert_eq!(tally.wrong, 0);
    assert_eq!(tally.applied_right, tally.expected_applied);
    assert_eq!(tally.refused, tally.expected_refused);
    assert!(
        tally.cases >= 100,
        "the corpus has only {} cases",
        tally.cases
    );
}
