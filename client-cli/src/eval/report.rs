//! What `stepper eval` reports: each task's result, the suite's summary and, against a
//! baseline, what changed. The JSON form is a stable schema (`schema: "stepper-eval/1"`)
//! that a later run reads back as its baseline; the text form is a table and a summary.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use stepper_protocol::TurnStatus;

use super::suite::{Kind, Language};

/// The schema of the JSON report; a baseline must carry it.
pub const SCHEMA: &str = "stepper-eval/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub schema: String,
    /// The model asked for, or the one every session ran on; none when they differed.
    pub model: Option<String>,
    pub suite: String,
    /// When the run began, ms since the Unix epoch (UTC).
    pub started_at: i64,
    pub tasks: Vec<TaskResult>,
    pub summary: Summary,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
}

/// One task's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskResult {
    pub name: String,
    pub language: Language,
    pub kind: Kind,
    /// The grade passed. False too when the task could not run (`harnessError`).
    pub passed: bool,
    /// Why the harness could not run the task (no session, the daemon lost, the grader
    /// missing, the agent never answering); the other fields hold what was measured.
    pub harness_error: Option<String>,
    /// Kept for a look afterwards: `stepper attach <id>`.
    pub session_id: Option<String>,
    pub model: Option<String>,
    /// How the agent's turn ended: completed, interrupted (the time limit) or failed.
    pub status: Option<TurnStatus>,
    /// The turn's error, or the time limit it reached.
    pub error: Option<String>,
    /// The turn reached `--time-limit` and was interrupted.
    pub agent_timed_out: bool,
    pub model_calls: u32,
    pub tool_calls: u32,
    /// Token counts as the provider reported them; none when it reported none.
    pub tokens: Option<Tokens>,
    /// What the turn cost, when the model's prices are known.
    pub cost_usd: Option<f64>,
    /// Wall time of the agent's turn and of the grading.
    pub agent_ms: u64,
    pub grade_ms: u64,
    /// The grade command's exit code (none when it did not run to its end).
    pub grade_exit: Option<i32>,
    pub grade_timed_out: bool,
    /// The end of the grade output, when the grade failed.
    pub grade_tail: Option<String>,
    /// Where the copy is, with `--keep`.
    pub kept: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    /// Read from the provider's prompt cache.
    pub cached: u64,
    /// Written to it.
    pub cache_write: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub total: u32,
    pub passed: u32,
    /// Passed over total, 0 to 1.
    pub pass_rate: f64,
    /// Tasks the harness could not run.
    pub harness_errors: u32,
    /// Tasks whose provider reported tokens, and cost.
    pub with_usage: u32,
    pub with_cost: u32,
    /// Sums over the tasks (tokens and cost over those that reported them).
    pub totals: Figures,
    /// Medians over the tasks that ran (tokens and cost over those that reported them).
    pub medians: Figures,
    /// Wall time of the whole run (less than the sum with --parallel).
    pub wall_ms: u64,
}

/// The measured quantities, as totals, medians or differences.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    pub model_calls: f64,
    pub tool_calls: f64,
    pub input_tokens: f64,
    pub output_tokens: f64,
    pub cached_tokens: f64,
    pub cost_usd: Option<f64>,
    pub agent_ms: f64,
    pub grade_ms: f64,
}

/// This run against a baseline: over the tasks both ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    pub baseline: String,
    pub baseline_model: Option<String>,
    /// Tasks in both runs.
    pub common: u32,
    /// Each task whose result changed, in order of name.
    pub changed: Vec<Change>,
    /// In this run, not in the baseline; and the other way round.
    pub only_here: Vec<String>,
    pub only_in_baseline: Vec<String>,
    /// Passed here minus passed there, over the common tasks.
    pub passed_delta: i64,
    /// This run's totals minus the baseline's, over the common tasks.
    pub deltas: Figures,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    pub name: String,
    /// `pass`, `fail` or `error` (not run).
    pub before: String,
    pub after: String,
}

impl TaskResult {
    /// `pass`, `fail`, or `error` when the harness could not run it.
    pub fn outcome(&self) -> &'static str {
        match (&self.harness_error, self.passed) {
            (Some(_), _) => "error",
            (None, true) => "pass",
            (None, false) => "fail",
        }
    }

    fn figures(&self) -> Figures {
        let tokens = self.tokens.unwrap_or_default();
        Figures {
            model_calls: f64::from(self.model_calls),
            tool_calls: f64::from(self.tool_calls),
            input_tokens: tokens.input as f64,
            output_tokens: tokens.output as f64,
            cached_tokens: tokens.cached as f64,
            cost_usd: self.cost_usd,
            agent_ms: self.agent_ms as f64,
            grade_ms: self.grade_ms as f64,
        }
    }
}

fn total(results: &[&TaskResult]) -> Figures {
    let mut sum = Figures::default();
    for r in results {
        let f = r.figures();
        sum.model_calls += f.model_calls;
        sum.tool_calls += f.tool_calls;
        sum.input_tokens += f.input_tokens;
        sum.output_tokens += f.output_tokens;
        sum.cached_tokens += f.cached_tokens;
        sum.agent_ms += f.agent_ms;
        sum.grade_ms += f.grade_ms;
        if let Some(c) = f.cost_usd {
            *sum.cost_usd.get_or_insert(0.0) += c;
        }
    }
    // Sums of prices gather float noise (0.040100000000000004): a millionth of a dollar is
    // finer than any price.
    sum.cost_usd = sum.cost_usd.map(|c| (c * 1e6).round() / 1e6);
    sum
}

fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

pub fn summarize(tasks: &[TaskResult], wall_ms: u64) -> Summary {
    let all: Vec<&TaskResult> = tasks.iter().collect();
    let ran: Vec<&TaskResult> = tasks.iter().filter(|t| t.harness_error.is_none()).collect();
    let with_usage: Vec<&TaskResult> = ran.iter().copied().filter(|t| t.tokens.is_some()).collect();
    let of = |set: &[&TaskResult], f: fn(&TaskResult) -> f64| set.iter().map(|t| f(t)).collect();
    let costs: Vec<f64> = ran.iter().filter_map(|t| t.cost_usd).collect();
    let passed = tasks.iter().filter(|t| t.passed).count() as u32;
    let total_tasks = tasks.len() as u32;
    Summary {
        total: total_tasks,
        passed,
        pass_rate: if total_tasks == 0 {
            0.0
        } else {
            f64::from(passed) / f64::from(total_tasks)
        },
        harness_errors: total_tasks - ran.len() as u32,
        with_usage: with_usage.len() as u32,
        with_cost: costs.len() as u32,
        totals: total(&all),
        medians: Figures {
            model_calls: median(of(&ran, |t| f64::from(t.model_calls))),
            tool_calls: median(of(&ran, |t| f64::from(t.tool_calls))),
            input_tokens: median(of(&with_usage, |t| t.figures().input_tokens)),
            output_tokens: median(of(&with_usage, |t| t.figures().output_tokens)),
            cached_tokens: median(of(&with_usage, |t| t.figures().cached_tokens)),
            cost_usd: (!costs.is_empty()).then(|| median(costs.clone())),
            agent_ms: median(of(&ran, |t| t.agent_ms as f64)),
            grade_ms: median(of(&ran, |t| t.grade_ms as f64)),
        },
        wall_ms,
    }
}

/// Read a report written by `stepper eval --format json`, to compare with.
pub fn read_baseline(path: &Path) -> anyhow::Result<Report> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the baseline {}", path.display()))?;
    let not_ours = || {
        format!(
            "{} is not a stepper eval report — make one with 'stepper eval --format json > \
             FILE' and pass that FILE to --baseline",
            path.display()
        )
    };
    let value: serde_json::Value = serde_json::from_str(&text).with_context(not_ours)?;
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA) => {}
        Some(other) => bail!(
            "{} is a report of schema {other}; this stepper reads {SCHEMA} — run the \
             baseline again with this stepper",
            path.display()
        ),
        None => bail!("{}", not_ours()),
    }
    serde_json::from_value(value).with_context(not_ours)
}

pub fn compare(now: &Report, baseline: &Report, path: &Path) -> Comparison {
    let before: BTreeMap<&str, &TaskResult> = baseline
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t))
        .collect();
    let after: BTreeMap<&str, &TaskResult> =
        now.tasks.iter().map(|t| (t.name.as_str(), t)).collect();
    let mut changed = Vec::new();
    let (mut here, mut there) = (Vec::new(), Vec::new());
    for (name, a) in &after {
        let Some(b) = before.get(name) else { continue };
        if b.outcome() != a.outcome() {
            changed.push(Change {
                name: name.to_string(),
                before: b.outcome().into(),
                after: a.outcome().into(),
            });
        }
        here.push(*a);
        there.push(*b);
    }
    let passed = |set: &[&TaskResult]| set.iter().filter(|t| t.passed).count() as i64;
    let (a, b) = (total(&here), total(&there));
    Comparison {
        baseline: path.display().to_string(),
        baseline_model: baseline.model.clone(),
        common: here.len() as u32,
        changed,
        only_here: after
            .keys()
            .filter(|n| !before.contains_key(*n))
            .map(|n| n.to_string())
            .collect(),
        only_in_baseline: before
            .keys()
            .filter(|n| !after.contains_key(*n))
            .map(|n| n.to_string())
            .collect(),
        passed_delta: passed(&here) - passed(&there),
        deltas: Figures {
            model_calls: a.model_calls - b.model_calls,
            tool_calls: a.tool_calls - b.tool_calls,
            input_tokens: a.input_tokens - b.input_tokens,
            output_tokens: a.output_tokens - b.output_tokens,
            cached_tokens: a.cached_tokens - b.cached_tokens,
            cost_usd: match (a.cost_usd, b.cost_usd) {
                (Some(x), Some(y)) => Some(x - y),
                _ => None,
            },
            agent_ms: a.agent_ms - b.agent_ms,
            grade_ms: a.grade_ms - b.grade_ms,
        },
    }
}

/// A count, shortened past ten thousand (12.3k, 4.1M).
fn count(n: f64) -> String {
    if n >= 1e6 {
        format!("{:.1}M", n / 1e6)
    } else if n >= 1e4 {
        format!("{:.1}k", n / 1e3)
    } else if n.fract() == 0.0 {
        format!("{n:.0}")
    } else {
        format!("{n:.1}")
    }
}

fn seconds(ms: f64) -> String {
    if ms >= 60_000.0 {
        format!(
            "{}m{:02.0}s",
            (ms / 60_000.0).floor(),
            (ms % 60_000.0) / 1000.0
        )
    } else {
        format!("{:.1}s", ms / 1000.0)
    }
}

fn dollars(c: Option<f64>) -> String {
    c.map_or_else(|| "-".into(), |c| format!("${c:.4}"))
}

fn signed(n: f64, show: impl Fn(f64) -> String) -> String {
    if n < 0.0 {
        format!("-{}", show(-n))
    } else {
        format!("+{}", show(n))
    }
}

/// The report as a person reads it: a line per task, the summary, then what failed and,
/// with a baseline, what changed.
pub fn text(report: &Report) -> String {
    let mut out = String::new();
    let width = report
        .tasks
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "{:<width$}  {:<10}  {:<11}  {:<6}  {:>5}  {:>5}  {:>7}  {:>7}  {:>7}  {:>8}  {:>7}  {:>7}",
        "TASK",
        "LANGUAGE",
        "KIND",
        "RESULT",
        "CALLS",
        "TOOLS",
        "IN",
        "OUT",
        "CACHED",
        "COST",
        "AGENT",
        "GRADE"
    );
    for t in &report.tasks {
        let tokens =
            |f: fn(&Tokens) -> u64| t.tokens.as_ref().map_or("-".into(), |k| count(f(k) as f64));
        let _ = writeln!(
            out,
            "{:<width$}  {:<10}  {:<11}  {:<6}  {:>5}  {:>5}  {:>7}  {:>7}  {:>7}  {:>8}  {:>7}  {:>7}",
            t.name,
            t.language,
            t.kind,
            t.outcome(),
            t.model_calls,
            t.tool_calls,
            tokens(|k| k.input),
            tokens(|k| k.output),
            tokens(|k| k.cached),
            dollars(t.cost_usd),
            seconds(t.agent_ms as f64),
            seconds(t.grade_ms as f64),
        );
    }
    let s = &report.summary;
    let _ = writeln!(
        out,
        "\npassed {}/{} ({:.1}%){}{}",
        s.passed,
        s.total,
        s.pass_rate * 100.0,
        match s.harness_errors {
            0 => String::new(),
            n => format!(", {n} not run"),
        },
        report
            .model
            .as_ref()
            .map(|m| format!(" on {m}"))
            .unwrap_or_default()
    );
    /// A summary row: its label and how it shows a figure.
    type Row = (&'static str, fn(&Figures) -> String);
    let rows: [Row; 8] = [
        ("model calls", |f| count(f.model_calls)),
        ("tool calls", |f| count(f.tool_calls)),
        ("tokens in", |f| count(f.input_tokens)),
        ("tokens out", |f| count(f.output_tokens)),
        ("tokens cached", |f| count(f.cached_tokens)),
        ("cost", |f| dollars(f.cost_usd)),
        ("agent time", |f| seconds(f.agent_ms)),
        ("grade time", |f| seconds(f.grade_ms)),
    ];
    let _ = writeln!(out, "{:<13}  {:>9}  {:>9}", "", "total", "median");
    for (label, show) in rows {
        let _ = writeln!(
            out,
            "{label:<13}  {:>9}  {:>9}",
            show(&s.totals),
            show(&s.medians)
        );
    }
    let _ = writeln!(out, "wall time      {:>9}", seconds(s.wall_ms as f64));
    if s.with_usage < s.total - s.harness_errors {
        let _ = writeln!(
            out,
            "({} of {} tasks reported tokens: token figures cover those)",
            s.with_usage,
            s.total - s.harness_errors
        );
    }

    for t in report.tasks.iter().filter(|t| !t.passed) {
        let why = match (&t.harness_error, t.grade_timed_out, t.grade_exit) {
            (Some(e), _, _) => format!("not run: {e}"),
            (None, true, _) => "the grade timed out".into(),
            (None, false, Some(code)) => format!("the grade exited with {code}"),
            (None, false, None) => "the grade was stopped".into(),
        };
        let _ = writeln!(out, "\n{}: {why}", t.name);
        if let (Some(status), Some(error)) = (t.status, &t.error) {
            let _ = writeln!(out, "  turn {}: {error}", status_word(status));
        }
        if let Some(id) = &t.session_id {
            let _ = writeln!(out, "  session {id} (stepper attach {id})");
        }
        if let Some(tail) = t.grade_tail.as_deref().filter(|t| !t.is_empty()) {
            for line in tail.lines() {
                let _ = writeln!(out, "  │ {line}");
            }
        }
    }
    let kept: Vec<&TaskResult> = report.tasks.iter().filter(|t| t.kept.is_some()).collect();
    if !kept.is_empty() {
        let _ = writeln!(out, "\nkept copies:");
        for t in kept {
            let _ = writeln!(
                out,
                "  {:<width$}  {}",
                t.name,
                t.kept.as_deref().unwrap_or_default()
            );
        }
    }

    if let Some(c) = &report.comparison {
        let _ = writeln!(
            out,
            "\nagainst {}{} ({} task(s) in both):",
            c.baseline,
            c.baseline_model
                .as_ref()
                .map(|m| format!(" on {m}"))
                .unwrap_or_default(),
            c.common
        );
        if c.changed.is_empty() {
            let _ = writeln!(out, "  no task changed result");
        }
        for ch in &c.changed {
            let _ = writeln!(out, "  {:<width$}  {} → {}", ch.name, ch.before, ch.after);
        }
        let d = &c.deltas;
        let _ = writeln!(
            out,
            "  passed {:+}, model calls {}, tool calls {}, tokens in {}, out {}, cached {}, \
             cost {}, agent time {}",
            c.passed_delta,
            signed(d.model_calls, count),
            signed(d.tool_calls, count),
            signed(d.input_tokens, count),
            signed(d.output_tokens, count),
            signed(d.cached_tokens, count),
            d.cost_usd
                .map_or_else(|| "-".into(), |c| signed(c, |c| format!("${c:.4}"))),
            signed(d.agent_ms, seconds),
        );
        if !c.only_here.is_empty() {
            let _ = writeln!(out, "  new here: {}", c.only_here.join(", "));
        }
        if !c.only_in_baseline.is_empty() {
            let _ = writeln!(out, "  not run here: {}", c.only_in_baseline.join(", "));
        }
    }
    out
}

fn status_word(status: TurnStatus) -> &'static str {
    match status {
        TurnStatus::Completed => "completed",
        TurnStatus::Interrupted => "interrupted",
        TurnStatus::Failed => "failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(name: &str, passed: bool, calls: u32, tokens: Option<u64>) -> TaskResult {
        TaskResult {
            name: name.into(),
            language: Language::Python,
            kind: Kind::FixTests,
            passed,
            harness_error: None,
            session_id: Some(format!("sess-{name}")),
            model: Some("local/m".into()),
            status: Some(TurnStatus::Completed),
            error: None,
            agent_timed_out: false,
            model_calls: calls,
            tool_calls: calls * 2,
            tokens: tokens.map(|t| Tokens {
                input: t,
                output: t / 10,
                cached: t / 2,
                cache_write: 0,
            }),
            cost_usd: tokens.map(|t| t as f64 / 100_000.0),
            agent_ms: u64::from(calls) * 1500,
            grade_ms: 400,
            grade_exit: Some(if passed { 0 } else { 1 }),
            grade_timed_out: false,
            grade_tail: (!passed).then(|| "FAILED test_add\nassert 3 == 4".into()),
            kept: None,
        }
    }

    fn report(tasks: Vec<TaskResult>) -> Report {
        Report {
            schema: SCHEMA.into(),
            model: Some("local/m".into()),
            suite: "tests/evals".into(),
            started_at: 0,
            summary: summarize(&tasks, 4200),
            tasks,
            comparison: None,
        }
    }

    #[test]
    fn the_summary_sums_and_takes_medians_over_what_was_measured() {
        let mut broken = result("py-d", false, 0, None);
        broken.harness_error = Some("cannot run python3".into());
        broken.grade_tail = None;
        let r = report(vec![
            result("py-a", true, 2, Some(1000)),
            result("py-b", false, 4, Some(3000)),
            result("py-c", true, 3, None),
            broken,
        ]);
        let s = &r.summary;
        assert_eq!((s.total, s.passed, s.harness_errors), (4, 2, 1));
        assert_eq!(s.pass_rate, 0.5);
        assert_eq!((s.with_usage, s.with_cost), (2, 2));
        assert_eq!(s.totals.model_calls, 9.0);
        assert_eq!(s.medians.model_calls, 3.0, "over the three that ran");
        assert_eq!(s.totals.input_tokens, 4000.0);
        assert_eq!(s.medians.input_tokens, 2000.0, "over the two that reported");
        assert_eq!(s.totals.cost_usd, Some(0.04));
        insta::assert_snapshot!(text(&r), @r"
        TASK  LANGUAGE    KIND         RESULT  CALLS  TOOLS       IN      OUT   CACHED      COST    AGENT    GRADE
        py-a  python      fix-tests    pass        2      4     1000      100      500   $0.0100     3.0s     0.4s
        py-b  python      fix-tests    fail        4      8     3000      300     1500   $0.0300     6.0s     0.4s
        py-c  python      fix-tests    pass        3      6        -        -        -         -     4.5s     0.4s
        py-d  python      fix-tests    error       0      0        -        -        -         -     0.0s     0.4s

        passed 2/4 (50.0%), 1 not run on local/m
                           total     median
        model calls            9          3
        tool calls            18          6
        tokens in           4000       2000
        tokens out           400        200
        tokens cached       2000       1000
        cost             $0.0400    $0.0200
        agent time         13.5s       4.5s
        grade time          1.6s       0.4s
        wall time           4.2s
        (2 of 3 tasks reported tokens: token figures cover those)

        py-b: the grade exited with 1
          session sess-py-b (stepper attach sess-py-b)
          │ FAILED test_add
          │ assert 3 == 4

        py-d: not run: cannot run python3
          session sess-py-d (stepper attach sess-py-d)
        ");
    }

    #[test]
    fn a_baseline_comparison_names_the_changes_and_the_deltas() {
        let before = report(vec![
            result("py-a", true, 2, Some(1000)),
            result("py-b", true, 4, Some(3000)),
            result("py-gone", true, 1, Some(10)),
        ]);
        let mut now = report(vec![
            result("py-a", true, 3, Some(1500)),
            result("py-b", false, 2, Some(2000)),
            result("py-new", false, 1, Some(10)),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("base.json");
        std::fs::write(&path, serde_json::to_string(&before).unwrap()).unwrap();
        let read = read_baseline(&path).unwrap();
        assert_eq!(
            read.tasks, before.tasks,
            "a report reads back as it was written"
        );
        assert_eq!(read.summary.totals.cost_usd, Some(0.0401));
        let c = compare(&now, &read, Path::new("base.json"));
        assert_eq!(c.common, 2);
        assert_eq!(c.passed_delta, -1);
        assert_eq!(c.deltas.model_calls, -1.0);
        assert_eq!(c.only_here, ["py-new"]);
        assert_eq!(c.only_in_baseline, ["py-gone"]);
        now.comparison = Some(c);
        let shown = text(&now);
        let tail = &shown[shown.find("\nagainst").unwrap()..];
        insta::assert_snapshot!(tail, @r"
        against base.json on local/m (2 task(s) in both):
          py-b    pass → fail
          passed -1, model calls -1, tool calls -2, tokens in -500, out -50, cached -250, cost -$0.0050, agent time -1.5s
          new here: py-new
          not run here: py-gone
        ");
    }

    #[test]
    fn a_baseline_that_is_not_a_report_says_how_to_make_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.json");
        let shown =
            |e: anyhow::Error| format!("{e:#}").replace(&dir.path().display().to_string(), "DIR");
        std::fs::write(&path, "{\"tasks\": []}").unwrap();
        insta::assert_snapshot!(shown(read_baseline(&path).unwrap_err()), @"DIR/b.json is not a stepper eval report — make one with 'stepper eval --format json > FILE' and pass that FILE to --baseline");
        std::fs::write(&path, "passed 3/4").unwrap();
        assert!(
            shown(read_baseline(&path).unwrap_err())
                .starts_with("DIR/b.json is not a stepper eval report")
        );
        std::fs::write(&path, "{\"schema\": \"stepper-eval/9\"}").unwrap();
        insta::assert_snapshot!(shown(read_baseline(&path).unwrap_err()), @"DIR/b.json is a report of schema stepper-eval/9; this stepper reads stepper-eval/1 — run the baseline again with this stepper");
        std::fs::write(&path, "{\"schema\": \"stepper-eval/1\", \"tasks\": 3}").unwrap();
        assert!(
            shown(read_baseline(&path).unwrap_err())
                .starts_with("DIR/b.json is not a stepper eval report")
        );
        let missing = read_baseline(&dir.path().join("nope.json")).unwrap_err();
        assert!(shown(missing).starts_with("reading the baseline DIR/nope.json: "));
    }
}
