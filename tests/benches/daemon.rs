//! Daemon cold start to its first accepted connection (a fresh data dir each time: the store
//! is created and migrated), next to spawning `stepperd --version` (the cost of starting the
//! binary at all); the first turn of a fresh install (`stepper ask` starting the daemon),
//! with the login shell's environment read and without, and a warm turn, next to
//! `stepper --version`; and the daemon's memory when idle after serving a client and over
//! many one-shot asks.
//!
//! `cargo bench -p stepper-e2e --bench daemon`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use stepper_e2e::{TestEnv, bin_dir};
use stepper_protocol::client::connect_stream;
use stepper_protocol::methods::{DaemonInfo, Empty};

const RUNS: usize = 20;
/// Warm turns are short and the machine noisy: more of them steady the median.
const WARM_RUNS: usize = 100;

fn p(v: &mut [Duration], q: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 * q) as usize).min(v.len() - 1)]
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The first turn of a fresh daemon step by step, next to the same steps once it is warm:
/// spawn to initialized, session/create, session/subscribe, submit to `TurnFinished`. What a
/// cold step costs over its warm self is the once-per-daemon work on the first turn's path.
fn first_turn_steps(rt: &tokio::runtime::Runtime) -> [[Vec<Duration>; 4]; 2] {
    let mut steps: [[Vec<Duration>; 4]; 2] = Default::default();
    for _ in 0..RUNS {
        let env = TestEnv::new();
        let socket = env.places().socket;
        let t = Instant::now();
        let mut child = env
            .stepperd()
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        rt.block_on(async {
            let deadline = Instant::now() + Duration::from_secs(20);
            while connect_stream(&socket).await.is_err() {
                assert!(Instant::now() < deadline, "the daemon did not start");
                tokio::task::yield_now().await;
            }
            for (round, start) in [(0, Some(t)), (1, None)] {
                env.fake.push(stepper_e2e::Reply::text(&["hello"]));
                let t = start.unwrap_or_else(Instant::now);
                let client = env.client().await;
                steps[round][0].push(t.elapsed());
                let t = Instant::now();
                let session = env.create_session(&client, None).await;
                steps[round][1].push(t.elapsed());
                let t = Instant::now();
                let mut stream = client.subscribe_events(&session, 0).await.unwrap();
                steps[round][2].push(t.elapsed());
                let t = Instant::now();
                stepper_e2e::submit(&client, &session, "hi").await;
                stepper_e2e::events::until_turn_finished(&mut stream).await;
                steps[round][3].push(t.elapsed());
            }
        });
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        assert!(child.wait().unwrap().success());
    }
    steps
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let stepperd = bin_dir().join("stepperd");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();

    let mut version = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let ok = Command::new(&stepperd)
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(ok.success());
        version.push(t.elapsed());
    }

    let mut cold = Vec::new();
    let mut idle_rss = Vec::new();
    let mut peak_rss = Vec::new();
    for _ in 0..RUNS {
        let env = TestEnv::new();
        let socket = env.places().socket;
        let t = Instant::now();
        let mut child = env
            .stepperd()
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        rt.block_on(async {
            let deadline = Instant::now() + Duration::from_secs(20);
            while connect_stream(&socket).await.is_err() {
                assert!(Instant::now() < deadline, "the daemon did not start");
                tokio::task::yield_now().await;
            }
        });
        cold.push(t.elapsed());
        rt.block_on(async {
            let client = env.client().await;
            client.call::<DaemonInfo>(Empty {}).await.unwrap();
        });
        idle_rss.push(rss_kib(child.id(), "VmRSS:"));
        peak_rss.push(rss_kib(child.id(), "VmHWM:"));
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        assert!(child.wait().unwrap().success());
    }
    idle_rss.sort();
    peak_rss.sort();

    // The first turn of a fresh install: `stepper ask` finds no daemon, starts it, and runs
    // the turn against the fake server. The login shell stands for a user's whose rc files
    // take 200 ms (a version manager, a slow prompt): the issue measured ~200 ms for the read.
    let stepper = bin_dir().join("stepper");
    let mut stepper_version = Vec::new();
    for _ in 0..WARM_RUNS {
        let t = Instant::now();
        assert!(
            Command::new(&stepper)
                .arg("--version")
                .stdout(Stdio::null())
                .status()
                .unwrap()
                .success()
        );
        stepper_version.push(t.elapsed());
    }
    let first_turn = |login_env: bool| {
        let mut times = Vec::new();
        for _ in 0..RUNS {
            let env = TestEnv::new();
            env.fake.push(stepper_e2e::Reply::text(&["hello"]));
            let mut ask = env.stepper();
            if login_env {
                let shell = env.home.path().join("slow-login-shell");
                std::fs::write(&shell, "#!/bin/sh\nsleep 0.2\nexec /bin/sh -c \"$4\"\n").unwrap();
                std::fs::set_permissions(&shell, std::fs::Permissions::from_mode(0o755)).unwrap();
                ask.env_remove("STEPPER_LOGIN_ENV").env("SHELL", &shell);
            }
            let t = Instant::now();
            let out = ask.args(["ask", "hi"]).output().unwrap();
            times.push(t.elapsed());
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        times
    };
    let mut cold_on = first_turn(true);
    let mut cold_off = first_turn(false);
    // A warm turn as a user has it: the daemon (started by the first ask) logs at its default
    // level; the tests' debug log is measured beside it.
    let warm_turns = |debug_log: bool, project: Project| {
        let env = TestEnv::new();
        if project != Project::Empty {
            files(env.project.path());
            env.trust_project();
        }
        if project == Project::Git {
            git_repository(env.project.path());
        }
        let mut times = Vec::new();
        for run in 0..=WARM_RUNS {
            env.fake.push(stepper_e2e::Reply::text(&["hello"]));
            let mut ask = env.stepper();
            ask.env_remove("STEPPER_LOGIN_ENV");
            if !debug_log {
                ask.env_remove("STEPPER_LOG");
            }
            let t = Instant::now();
            assert!(ask.args(["ask", "hi"]).output().unwrap().status.success());
            if run > 0 {
                times.push(t.elapsed());
            }
        }
        times
    };
    let mut warm = warm_turns(false, Project::Empty);
    let mut warm_debug = warm_turns(true, Project::Empty);
    // A project of 200 files: each ask's new session walks them for its checkpoint baseline
    // (while the model is called). As a git repository the turn also reads git's branch,
    // status and last commits for the model's `<environment_context>` (before it).
    let mut warm_files = warm_turns(false, Project::Files);
    let mut warm_git = warm_turns(false, Project::Git);

    // Memory over many one-shot asks: each leaves a session the daemon lets go of once
    // nothing uses it.
    let many_env = TestEnv::new();
    const MANY: usize = 200;
    let mut rss_during = Vec::new();
    for run in 0..MANY {
        many_env.fake.push(stepper_e2e::Reply::text(&["hello"]));
        let mut ask = many_env.stepper();
        ask.env_remove("STEPPER_LOG");
        assert!(ask.args(["ask", "hi"]).output().unwrap().status.success());
        if run == 0 || run == MANY - 1 {
            rss_during.push(rss_kib(many_env.daemon_pid().unwrap() as u32, "VmRSS:"));
        }
    }
    let settled = rt.block_on(async {
        let client = many_env.client().await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let info = client.call::<DaemonInfo>(Empty {}).await.unwrap();
            if info.live_sessions == 0 {
                break;
            }
            assert!(Instant::now() < deadline, "sessions stayed in memory");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        rss_kib(many_env.daemon_pid().unwrap() as u32, "VmRSS:")
    });
    let sv50 = p(&mut stepper_version, 0.5);
    println!("first turn against the fake server, {RUNS} runs ({WARM_RUNS} warm):");
    println!("  stepper --version ....................... p50 {sv50:>8.2?}");
    for (name, times) in [
        ("cold (daemon started), login env read ..", &mut cold_on),
        ("cold (daemon started), login env off ...", &mut cold_off),
        ("warm (daemon running) ..................", &mut warm),
        ("warm, daemon logging at debug ..........", &mut warm_debug),
        ("warm, trusted project of 200 files .....", &mut warm_files),
        ("warm, the same as a git repository .....", &mut warm_git),
    ] {
        let p50 = p(times, 0.5);
        println!(
            "  {name} p50 {p50:>8.2?}  p90 {:>8.2?}  ({:.1}x --version)",
            p(times, 0.9),
            p50.as_secs_f64() / sv50.as_secs_f64()
        );
    }
    let [mut cold_steps, mut warm_steps] = first_turn_steps(&rt);
    println!("the first turn of a fresh daemon by step, p50 (the same steps warm):");
    for (i, name) in [
        "spawn to initialized .",
        "session/create .......",
        "session/subscribe ....",
        "submit to TurnFinished",
    ]
    .iter()
    .enumerate()
    {
        let (c, w) = (p(&mut cold_steps[i], 0.5), p(&mut warm_steps[i], 0.5));
        println!(
            "  {name} cold {c:>8.2?}  warm {w:>8.2?}  (+{:.2?})",
            c.saturating_sub(w)
        );
    }
    let (v50, c50) = (p(&mut version, 0.5), p(&mut cold, 0.5));
    println!("daemon cold start, {RUNS} runs, fresh data dir each:");
    println!(
        "  stepperd --version (spawn to exit) .... p50 {:>8.2?}  p90 {:>8.2?}",
        v50,
        p(&mut version, 0.9)
    );
    println!(
        "  spawn to first accepted connection .... p50 {:>8.2?}  p90 {:>8.2?}  ({:.1}x --version)",
        c50,
        p(&mut cold, 0.9),
        c50.as_secs_f64() / v50.as_secs_f64()
    );
    println!(
        "idle memory after one client: RSS p50 {:.1} MiB (max {:.1}), peak RSS p50 {:.1} MiB",
        idle_rss[RUNS / 2] as f64 / 1024.0,
        idle_rss[RUNS - 1] as f64 / 1024.0,
        peak_rss[RUNS / 2] as f64 / 1024.0
    );
    println!(
        "daemon RSS over {MANY} asks: {:.1} MiB after the first, {:.1} MiB after the last, \
         {:.1} MiB once their sessions left memory",
        rss_during[0] as f64 / 1024.0,
        rss_during[1] as f64 / 1024.0,
        settled as f64 / 1024.0
    );
}

/// What the warm turns run in.
#[derive(Clone, Copy, PartialEq)]
enum Project {
    Empty,
    /// [`files`].
    Files,
    /// [`files`] in a [`git_repository`].
    Git,
}

/// 200 files in 20 folders.
fn files(dir: &std::path::Path) {
    for d in 0..20 {
        let sub = dir.join(format!("src{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..10 {
            std::fs::write(sub.join(format!("f{f}.rs")), format!("fn f{f}() {{}}\n")).unwrap();
        }
    }
}

/// The folder's files in a repository, one commit, one file changed since: git's status has
/// something to walk and to say.
fn git_repository(dir: &std::path::Path) {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "a")
            .env("GIT_AUTHOR_EMAIL", "a@example.com")
            .env("GIT_COMMITTER_NAME", "a")
            .env("GIT_COMMITTER_EMAIL", "a@example.com")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "start"]);
    std::fs::write(dir.join("src0/f0.rs"), "fn changed() {}\n").unwrap();
}
