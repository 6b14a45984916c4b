//! `stepper eval`: measure whether tasks get done. Each task of a suite (`tests/evals`) runs
//! in a fresh copy of its repository, through the daemon like any session, then is graded by
//! its own command; the report says what passed and what it took (model calls, tool calls,
//! tokens, cost, time), and what changed against a baseline report.
//!
//! `suite` reads the tasks, `workspace` makes each copy and grades it, `agent` drives the
//! session and counts its events, `report` sums up and prints. This module runs them.

mod agent;
mod report;
mod suite;
mod workspace;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::{Args, ValueEnum};
use stepper_protocol::client::DaemonClient;
use tokio_util::sync::CancellationToken;

use report::{Report, TaskResult, Tokens};
use suite::Task;
use workspace::Workspace;

#[derive(Args)]
pub struct EvalArgs {
    /// The folder of tasks: one folder per task, with task.json, prompt.md and repo/.
    #[arg(long, value_name = "DIR", default_value = "tests/evals")]
    suite: PathBuf,
    /// The model, as provider/model-id (e.g. anthropic/claude-sonnet-4-5, or a CLI back-end:
    /// claude-code/sonnet, codex-cli/gpt-5-codex); your default model when absent.
    #[arg(long, short)]
    model: Option<String>,
    /// Only the tasks whose names match GLOB ('py-*', '{go-a,rs-b}').
    #[arg(long, value_name = "GLOB")]
    tasks: Option<String>,
    /// How many tasks run at once.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    parallel: u32,
    /// How to print the results: a table and a summary, or one JSON report (a baseline
    /// for a later run).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Compare with an earlier run's JSON report: what passes or fails now that did not,
    /// and the change of the totals.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Keep each task's copy (printed with the results) instead of deleting it.
    #[arg(long)]
    keep: bool,
    /// How long the agent may work on one task before its turn is interrupted.
    #[arg(long, value_name = "SECS", default_value_t = 900)]
    time_limit: u64,
    /// List the suite's tasks (name, language, kind, description) and run nothing.
    #[arg(long)]
    list: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// The exit code when some task could not run (as for bad input): the numbers measure less
/// than the suite.
const NOT_ALL_RAN: u8 = 1;

pub async fn run(args: EvalArgs) -> anyhow::Result<ExitCode> {
    if crate::remote::get().is_some() {
        bail!(
            "stepper eval runs each task in a folder on this machine, so it needs the daemon \
             here — run it without --host (or on that machine)"
        );
    }
    let tasks = suite::load(&args.suite, args.tasks.as_deref())?;
    if args.list {
        match args.format {
            Format::Text => print!("{}", suite::list_table(&tasks)),
            Format::Json => {
                let list: Vec<serde_json::Value> = tasks
                    .iter()
                    .map(|t| {
                        serde_json::json!({
                            "name": t.name, "language": t.spec.language, "kind": t.spec.kind,
                            "description": t.spec.description,
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&list)?);
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let baseline = args
        .baseline
        .as_deref()
        .map(|path| report::read_baseline(path).map(|r| (path, r)))
        .transpose()?;
    if args.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
        bail!("--model is empty — give provider/model-id, e.g. anthropic/claude-sonnet-4-5");
    }
    if args.time_limit == 0 {
        bail!("--time-limit 0 leaves the agent no time — give the seconds a task may take");
    }

    let client =
        crate::connect::connect_or_start(&crate::connect::places()?, "stepper eval").await?;
    let started_at = now_ms();
    let wall = Instant::now();
    eprintln!(
        "stepper eval: {} task(s) from {} on {}, {} at a time",
        tasks.len(),
        args.suite.display(),
        args.model.as_deref().unwrap_or("the default model"),
        args.parallel
    );

    let stop = CancellationToken::new();
    let options = Arc::new(Options {
        model: args.model.clone(),
        keep: args.keep,
        time_limit: Duration::from_secs(args.time_limit),
    });
    let results = run_all(&client, &tasks, args.parallel, &options, &stop).await;
    let stopped = stop.is_cancelled();

    let models: Vec<&str> = results.iter().filter_map(|r| r.model.as_deref()).collect();
    let mut report = Report {
        schema: report::SCHEMA.into(),
        model: agent::model_of(args.model.as_deref(), &models),
        suite: args.suite.display().to_string(),
        started_at,
        summary: report::summarize(&results, wall.elapsed().as_millis() as u64),
        tasks: results,
        comparison: None,
    };
    if let Some((path, baseline)) = &baseline {
        report.comparison = Some(report::compare(&report, baseline, path));
    }
    match args.format {
        Format::Text => print!("{}", report::text(&report)),
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
    }
    if stopped {
        return Ok(ExitCode::from(130));
    }
    Ok(if report.summary.harness_errors > 0 {
        eprintln!(
            "stepper eval: {} task(s) could not run, each with why: their results measure nothing",
            report.summary.harness_errors
        );
        ExitCode::from(NOT_ALL_RAN)
    } else {
        ExitCode::SUCCESS
    })
}

struct Options {
    model: Option<String>,
    keep: bool,
    time_limit: Duration,
}

/// Run every task, `parallel` at a time, telling each as it ends; the results in the
/// suite's order. Ctrl-C stops the running tasks (their turns too) and starts no more; so
/// does a session the daemon refuses to make (an unknown model, no key), which every
/// later task would meet as well.
async fn run_all(
    client: &DaemonClient,
    tasks: &[Task],
    parallel: u32,
    options: &Arc<Options>,
    stop: &CancellationToken,
) -> Vec<TaskResult> {
    let mut results: Vec<Option<TaskResult>> = vec![None; tasks.len()];
    let mut running = tokio::task::JoinSet::new();
    let mut next = 0;
    let mut done = 0;
    // The first task whose session the daemon would not make.
    let mut refused: Option<String> = None;
    let mut ctrl_c = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        // Started in the suite's order, as slots free up.
        while running.len() < parallel as usize && next < tasks.len() {
            let task = &tasks[next];
            let why = if stop.is_cancelled() {
                Some("not started: stopped by Ctrl-C".to_string())
            } else {
                refused.as_ref().map(|first| {
                    format!("not started: the daemon would not make {first}'s session")
                })
            };
            if let Some(why) = why {
                results[next] = Some(not_run(task, why, None));
            } else {
                let (client, task, options, stop, index) = (
                    client.clone(),
                    task.clone(),
                    Arc::clone(options),
                    stop.clone(),
                    next,
                );
                running.spawn(async move {
                    let (result, no_session) = run_task(&client, &task, &options, &stop).await;
                    (index, result, no_session)
                });
            }
            next += 1;
        }
        if running.is_empty() {
            break;
        }
        let joined = tokio::select! {
            joined = running.join_next() => joined,
            _ = &mut ctrl_c, if !stop.is_cancelled() => {
                eprintln!("\nstepper eval: stopping the running tasks…");
                stop.cancel();
                continue;
            }
        };
        match joined {
            Some(Ok((index, result, no_session))) => {
                done += 1;
                eprintln!("[{done}/{}] {}", tasks.len(), progress(&result));
                if no_session && refused.is_none() {
                    refused = Some(result.name.clone());
                }
                results[index] = Some(result);
            }
            // A task that panicked: said in its place below.
            Some(Err(e)) => eprintln!("stepper eval: a task stopped unexpectedly: {e}"),
            None => break,
        }
    }
    results
        .into_iter()
        .zip(tasks)
        .map(|(r, task)| {
            r.unwrap_or_else(|| not_run(task, "the harness stopped unexpectedly".into(), None))
        })
        .collect()
}

fn progress(r: &TaskResult) -> String {
    match &r.harness_error {
        Some(e) => format!("{}: not run: {e}", r.name),
        None => format!(
            "{}: {} (agent {:.1}s, grade {:.1}s)",
            r.name,
            r.outcome(),
            r.agent_ms as f64 / 1000.0,
            r.grade_ms as f64 / 1000.0
        ),
    }
}

/// One task: its copy, the agent's turn in it, then the grade. True beside the result when
/// the daemon would not make the task's session.
async fn run_task(
    client: &DaemonClient,
    task: &Task,
    options: &Options,
    stop: &CancellationToken,
) -> (TaskResult, bool) {
    let ws = match Workspace::create(&task.name, &task.repo()).await {
        Ok(ws) => ws,
        Err(e) => return (not_run(task, format!("{e:#}"), None), false),
    };
    let ran = agent::run(
        client,
        &ws.copy(),
        options.model.clone(),
        &task.prompt,
        options.time_limit,
        stop,
    )
    .await;
    let no_session = matches!(&ran, Err(f) if f.session_id.is_none());
    let mut result = match ran {
        Ok(run) => measured(task, &run),
        Err(failure) => not_run(task, format!("{:#}", failure.error), failure.session_id),
    };
    if result.harness_error.is_none() {
        match ws
            .grade(
                task.grade_dir().as_deref(),
                &task.spec.grade,
                Duration::from_secs(task.spec.timeout_secs),
            )
            .await
        {
            Ok(graded) => {
                result.passed = graded.passed;
                result.grade_ms = graded.elapsed.as_millis() as u64;
                result.grade_exit = graded.exit_code;
                result.grade_timed_out = graded.timed_out;
                result.grade_tail = (!graded.passed).then_some(graded.tail);
            }
            Err(e) => result.harness_error = Some(format!("{e:#}")),
        }
    }
    if options.keep {
        result.kept = Some(ws.keep().join("copy").display().to_string());
    }
    (result, no_session)
}

/// The result of a task whose agent ran: counted, not graded yet.
fn measured(task: &Task, run: &agent::AgentRun) -> TaskResult {
    let mut result = not_run(task, String::new(), Some(run.session_id.clone()));
    result.harness_error = agent::never_answered(run);
    result.model = Some(run.model.clone());
    result.status = Some(run.status);
    result.error = run.error.clone();
    result.agent_timed_out = run.timed_out;
    result.model_calls = run.tally.model_calls;
    result.tool_calls = run.tally.tool_calls;
    result.tokens = run.tally.usage.map(|u| Tokens {
        input: u.input_tokens,
        output: u.output_tokens,
        cached: u.cache_read_tokens,
        cache_write: u.cache_write_tokens,
    });
    result.cost_usd = run.tally.cost_usd;
    result.agent_ms = run.elapsed.as_millis() as u64;
    result
}

/// A task the harness could not run, and why.
fn not_run(task: &Task, why: String, session_id: Option<String>) -> TaskResult {
    TaskResult {
        name: task.name.clone(),
        language: task.spec.language,
        kind: task.spec.kind,
        passed: false,
        harness_error: Some(why),
        session_id,
        model: None,
        status: None,
        error: None,
        agent_timed_out: false,
        model_calls: 0,
        tool_calls: 0,
        tokens: None,
        cost_usd: None,
        agent_ms: 0,
        grade_ms: 0,
        grade_exit: None,
        grade_timed_out: false,
        grade_tail: None,
        kept: None,
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
