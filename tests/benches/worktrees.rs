//! What worktrees cost a parallel layer. Eight workers, each editing one file of a
//! 5,000-file repository, run once with `isolation: worktree` and once sharing the folder;
//! the parallel layer is timed from its `LayerStarted` to its `LayerFinished` (the fake
//! answers at once). Beside them, the same git commands the daemon runs for that layer
//! (snapshot, 8 `worktree add`, each worker's commit, the merges, the write-back, the
//! removals) timed alone in a shell-free loop: what isolation costs per worker beyond git
//! itself is (isolated − shared − git) / 8, and the goal is at most 50 ms. Runs are
//! interleaved, so noise falls on every column alike.
//!
//! `cargo bench -p stepper-e2e --bench worktrees`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{Reply, TestEnv, read_until};
use stepper_protocol::client::{DaemonClient, EventStream};
use stepper_protocol::methods::{
    SessionCreate, SessionCreateParams, SessionSubmit, SessionSubmitParams,
};
use stepper_protocol::{AppEvent, EventEnvelope};

const WORKERS: usize = 8;
const DIRS: usize = 50;
const FILES_PER_DIR: usize = 100;
const RUNS: usize = 5;

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn git(dir: &Path, args: &[&str]) -> String {
    git_env(dir, args, &[])
}

fn git_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
        ])
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@b")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@b")
        .output()
        .unwrap();
    assert!(
        out.status.success() || args[0] == "merge-tree",
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository of 5,000 small files, committed, with `.stepper/stepper.md`.
fn repository(root: &Path, name: &str, stepper_md: &str) -> std::path::PathBuf {
    let dir = root.join(name);
    for d in 0..DIRS {
        let sub = dir.join(format!("src/m{d:02}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..FILES_PER_DIR {
            let text: String = (0..8).map(|l| format!("line {l} of {d}/{f}\n")).collect();
            std::fs::write(sub.join(format!("f{f:03}.txt")), text).unwrap();
        }
    }
    std::fs::create_dir_all(dir.join(".stepper")).unwrap();
    std::fs::write(dir.join(".stepper/stepper.md"), stepper_md).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "files"]);
    dir
}

async fn session(env: &TestEnv, client: &DaemonClient, cwd: &Path) -> (String, EventStream) {
    let created = client
        .call::<SessionCreate>(SessionCreateParams {
            input_parts: Vec::new(),
            cwd: cwd.display().to_string(),
            env: env.envs().into_iter().collect(),
            model: None,
            title: None,
            record: None,
            mode: Some(stepper_protocol::PermissionMode::Auto),
            sandbox: None,
            input: None,
            system_prompt: None,
            append_system_prompt: None,
        })
        .await
        .unwrap();
    let id = created.session.id;
    let events = client.subscribe_events(&id, 0).await.unwrap();
    (id, events)
}

/// One turn whose parallel layer runs [`WORKERS`] workers, each editing its own file
/// (`run` makes the edit new each time); the parallel layer's wall time.
async fn layer(
    env: &TestEnv,
    client: &DaemonClient,
    id: &str,
    events: &mut EventStream,
    run: usize,
) -> Duration {
    let tasks: Vec<String> = (0..WORKERS)
        .map(|k| format!("EDIT src/m{k:02}/f000.txt {run}"))
        .collect();
    env.fake.push(Reply::Sse(tool_use_stream(&[(
        "toolu_a",
        "assign_tasks",
        json!({ "tasks": tasks }),
    )])));
    env.fake.push(Reply::text(&["assigned"]));
    client
        .call::<SessionSubmit>(SessionSubmitParams {
            parts: Vec::new(),
            session_id: id.to_string(),
            text: "go".into(),
            env: None,
        })
        .await
        .unwrap();
    let seen: Vec<EventEnvelope> =
        read_until(events, |e| matches!(e.event, AppEvent::TurnFinished { .. })).await;
    let at = |f: &dyn Fn(&AppEvent) -> bool| {
        seen.iter()
            .find(|e| f(&e.event))
            .map(|e| e.at)
            .expect("a layer event")
    };
    let started = at(&|e| matches!(e, AppEvent::LayerStarted { index: 2, .. }));
    let finished = at(&|e| matches!(e, AppEvent::LayerFinished { index: 2, .. }));
    let edits = seen
        .iter()
        .filter(|e| {
            matches!(&e.event, AppEvent::ToolCallFinished { status, .. }
                if *status == stepper_protocol::ToolCallStatus::Ok)
        })
        .count();
    assert!(edits > WORKERS, "every worker edited: {seen:#?}");
    Duration::from_millis(u64::try_from(finished - started).unwrap_or(0))
}

/// The git commands the daemon runs for one isolated layer of [`WORKERS`], alone, and as
/// the daemon runs them: worktrees registered one at a time, checked out, committed and
/// removed four at a time.
fn git_alone(repo: &Path, run: usize) -> Duration {
    let start = Instant::now();
    let git_dir = repo.join(".git");
    let trees = git_dir.join("bench-worktrees");
    std::fs::create_dir_all(&trees).unwrap();
    let index = trees.join("snap.index");
    let snapshot = |index: &Path| {
        std::fs::copy(git_dir.join("index"), index).unwrap();
        let env = [("GIT_INDEX_FILE", index.to_str().unwrap())];
        git_env(repo, &["add", "--all", "--", "."], &env);
        let tree = git_env(repo, &["write-tree"], &env);
        let head = git(repo, &["rev-parse", "HEAD"]);
        git(repo, &["commit-tree", &tree, "-p", &head, "-m", "snap"])
    };
    let base = snapshot(&index);
    let workers: Vec<(PathBuf, String)> = (0..WORKERS)
        .map(|k| {
            (
                trees.join(format!("w{run}-{k}")),
                format!("bench/{run}/{k}"),
            )
        })
        .collect();
    for (path, branch) in &workers {
        let path = path.to_str().unwrap();
        let add = [
            "worktree",
            "add",
            "--no-checkout",
            "--quiet",
            "-b",
            branch,
            path,
        ];
        git(repo, &[&add[..], &[base.as_str()]].concat());
    }
    in_fours(&workers, |(path, _)| {
        git(path, &["reset", "--hard", "--quiet"]);
    });
    for (k, (path, _)) in workers.iter().enumerate() {
        // The worker's edit.
        let file = path.join(format!("src/m{k:02}/f000.txt"));
        std::fs::write(&file, format!("written in run {run}\n")).unwrap();
    }
    let commits: Vec<String> = in_fours(&workers, |(path, branch)| {
        git(path, &["add", "--all", "--", "."]);
        let tree = git(path, &["write-tree"]);
        let commit = git(repo, &["commit-tree", &tree, "-p", &base, "-m", "task"]);
        git(
            repo,
            &["update-ref", &format!("refs/heads/{branch}"), &commit],
        );
        commit
    });
    let mut merged = commits[0].clone();
    for commit in &commits[1..] {
        let out = git(
            repo,
            &[
                "merge-tree",
                "--write-tree",
                "--name-only",
                "--no-messages",
                &format!("--merge-base={base}"),
                &merged,
                commit,
            ],
        );
        let tree = out.lines().next().unwrap().to_string();
        merged = git(
            repo,
            &[
                "commit-tree",
                &tree,
                "-p",
                &merged,
                "-p",
                commit,
                "-m",
                "merge",
            ],
        );
    }
    let now = snapshot(&index);
    let listed = git(
        repo,
        &[
            "diff-tree",
            "-r",
            "--no-renames",
            "--name-only",
            &now,
            &merged,
        ],
    );
    let apply = trees.join("apply.index");
    let env = [("GIT_INDEX_FILE", apply.to_str().unwrap())];
    git_env(repo, &["read-tree", &merged], &env);
    let mut args = vec!["checkout-index", "--force", "--"];
    args.extend(listed.lines());
    git_env(repo, &args, &env);
    in_fours(&workers, |(path, _)| {
        let name = path.file_name().unwrap();
        std::fs::remove_dir_all(path).unwrap();
        std::fs::remove_dir_all(git_dir.join("worktrees").join(name)).unwrap();
    });
    let mut delete = vec!["branch", "--delete", "--force", "--quiet"];
    delete.extend(workers.iter().map(|(_, b)| b.as_str()));
    git(repo, &delete);
    start.elapsed()
}

/// `work` on each of `items`, four at a time; the results in order.
fn in_fours<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let mut done = Vec::new();
    for four in items.chunks(4) {
        std::thread::scope(|scope| {
            let running: Vec<_> = four
                .iter()
                .map(|item| {
                    let work = &work;
                    scope.spawn(move || work(item))
                })
                .collect();
            done.extend(running.into_iter().map(|r| r.join().unwrap()));
        });
    }
    done
}

fn main() {
    let env = TestEnv::new();
    let root = env.project.path();
    let fan = |isolation: &str| {
        format!(
            "---\nname: split\n---\nSplit.\n\n---\nname: work\nparallel: true\nparallel-max: {WORKERS}\n{isolation}---\nDo it.\n"
        )
    };
    let isolated = repository(root, "isolated", &fan("isolation: worktree\n"));
    let shared = repository(root, "shared", &fan(""));
    let alone = repository(root, "alone", &fan(""));
    env.trust(root);
    // Workers are answered by their task: one edit, then done.
    env.fake.respond_with(|_, body| {
        let first = body["messages"][0]["content"][0]["text"].as_str()?;
        let task = first.strip_prefix("Your task:\n\n")?.lines().next()?;
        let mut words = task.split_whitespace().skip(1);
        let (path, run) = (words.next()?.to_string(), words.next()?.to_string());
        if body["messages"].as_array()?.len() > 1 {
            return Some(Reply::text(&["done"]));
        }
        Some(Reply::Sse(tool_use_stream(&[(
            "toolu_e",
            "write",
            json!({"path": path, "content": format!("written in run {run}\n")}),
        )])))
    });
    env.start_daemon();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = env.client().await;
        let (iso_id, mut iso_events) = session(&env, &client, &isolated).await;
        let (shared_id, mut shared_events) = session(&env, &client, &shared).await;
        // Warm both (and git's caches), then interleave.
        layer(&env, &client, &iso_id, &mut iso_events, 0).await;
        layer(&env, &client, &shared_id, &mut shared_events, 0).await;
        git_alone(&alone, 0);
        let (mut iso, mut plain, mut raw) = (vec![], vec![], vec![]);
        for run in 1..=RUNS {
            iso.push(layer(&env, &client, &iso_id, &mut iso_events, run).await);
            plain.push(layer(&env, &client, &shared_id, &mut shared_events, run).await);
            raw.push(git_alone(&alone, run));
        }
        let (iso, plain, raw) = (median(&mut iso), median(&mut plain), median(&mut raw));
        let leftover = git(&isolated, &["worktree", "list"]).lines().count();
        assert_eq!(leftover, 1, "no worktree is left behind");
        let per_worker = |d: Duration| ms(d) / WORKERS as f64;
        // Signed: on a noisy disk the daemon's run can come out under git's alone.
        let beyond = ms(iso) - ms(plain) - ms(raw);
        println!(
            "medians of {RUNS} runs; {WORKERS} workers, {} files:",
            DIRS * FILES_PER_DIR
        );
        println!(
            "  parallel layer, worktrees      {:>8.1} ms   shared folder: {:.1} ms ({:.2}x)",
            ms(iso),
            ms(plain),
            iso.as_secs_f64() / plain.as_secs_f64()
        );
        println!(
            "  its git commands alone         {:>8.1} ms   ({:.1} ms a worker)",
            ms(raw),
            per_worker(raw)
        );
        println!(
            "  per worker, beyond git         {:>8.1} ms   (goal: at most 50 ms; set-up and merge {:.1} ms a worker in all)",
            beyond / WORKERS as f64,
            per_worker(iso.saturating_sub(plain))
        );
    });
}
