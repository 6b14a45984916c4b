//! What one bash tool call costs the daemon itself: its own CPU time (user + system, from
//! `/proc/<daemon>/stat`) over turns that each run `true` through the bash tool, next to turns
//! whose one tool call reads a small file instead — the same model round trips, gate, commits
//! and checkpoint walk, but no process. The difference is the command's: spawning its reaper,
//! recording its group, and whatever the daemon does to be sure nothing of it is left.
//!
//! Measured with the machine's processes as they are, then with `EXTRA` idle processes more
//! (a daemon that looks at every process on the machine pays for each).
//!
//! `STEPPER_BENCH_BASELINE=DIR` runs the same turns against another build's `stepperd` (and
//! the `stepperd-reap` beside it) in `DIR` — main's, say, built in a `git worktree` — in the
//! same run, turn for turn interleaved with this build's, so the machine's noise falls on both.
//!
//! `cargo bench -p stepper-e2e --bench bash`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;
use stepper_e2e::fake_llm::tool_use_stream;
use stepper_e2e::{Reply, TestEnv, bin_dir};
use stepper_protocol::client::{DaemonClient, EventStream};
use stepper_protocol::{AppEvent, PermissionMode};

/// Turns of each kind per daemon and round.
const TURNS: usize = 200;
/// Idle processes added for the second round.
const EXTRA: usize = 1000;

/// CPU time (user + system) the process has used so far.
fn cpu_time(pid: i32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<u64> = rest
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // utime and stime are fields 14 and 15 of the line: 11 and 12 after the name.
    let ticks = fields[11] + fields[12];
    let per_second = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .unwrap()
        .unwrap() as u64;
    Duration::from_secs_f64(ticks as f64 / per_second as f64)
}

/// One daemon build, running in an environment of its own, with a session in `auto` mode.
struct Daemon {
    name: String,
    env: TestEnv,
    client: DaemonClient,
    session: String,
    stream: EventStream,
    pid: i32,
    /// CPU time of the bash turns and of the read turns.
    spent: [Duration; 2],
}

impl Daemon {
    async fn start(name: &str, bin: &Path) -> Daemon {
        let env = TestEnv::new();
        std::fs::write(env.project.path().join("small.txt"), "hello\n").unwrap();
        let out = env
            .stepper()
            .env("STEPPERD", bin.join("stepperd"))
            .args(["daemon", "start"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let client = env.client().await;
        let session = env
            .create_session(&client, Some(PermissionMode::Auto))
            .await;
        let stream = client.subscribe_events(&session, 0).await.unwrap();
        let pid = env.daemon_pid().unwrap();
        Daemon {
            name: name.into(),
            env,
            client,
            session,
            stream,
            pid,
            spent: [Duration::ZERO; 2],
        }
    }

    /// One turn whose model calls `tool` once, then answers; the daemon's CPU time for it.
    async fn turn(&mut self, tool: &str, args: serde_json::Value) -> Duration {
        self.env
            .fake
            .push(Reply::Sse(tool_use_stream(&[("t1", tool, args)])));
        self.env.fake.push(Reply::text(&["done"]));
        let before = cpu_time(self.pid);
        stepper_e2e::submit(&self.client, &self.session, "go").await;
        loop {
            let e = self.stream.next().await.unwrap().unwrap();
            if matches!(e.event, AppEvent::TurnFinished { .. }) {
                break;
            }
        }
        cpu_time(self.pid) - before
    }

    async fn round(&mut self) {
        let bash = self.turn("bash", json!({"command": "true"})).await;
        let read = self.turn("read", json!({"path": "small.txt"})).await;
        self.spent[0] += bash;
        self.spent[1] += read;
    }

    fn report(&mut self, turns: usize) {
        let per = |d: Duration| d.as_secs_f64() * 1e3 / turns as f64;
        let (bash, read) = (per(self.spent[0]), per(self.spent[1]));
        println!(
            "  {:>8}: a bash turn {bash:>6.3} ms, a read turn {read:>6.3} ms of daemon CPU: \
             the bash call {:>6.3} ms",
            self.name,
            bash - read
        );
        self.spent = [Duration::ZERO; 2];
    }
}

/// `n` idle processes, killed when dropped.
struct Idle(Vec<Child>);

impl Idle {
    fn start(n: usize) -> Idle {
        Idle(
            (0..n)
                .map(|_| {
                    Command::new("sleep")
                        .arg("3600")
                        .stdout(Stdio::null())
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for Idle {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut builds: Vec<(String, PathBuf)> = vec![("this".into(), bin_dir().to_path_buf())];
        if let Some(dir) = std::env::var_os("STEPPER_BENCH_BASELINE") {
            builds.push(("baseline".into(), PathBuf::from(dir)));
        }
        let mut daemons = Vec::new();
        for (name, dir) in &builds {
            daemons.push(Daemon::start(name, dir).await);
        }
        // Warm up: the first turns load settings, sessions, the page cache.
        for _ in 0..10 {
            for d in &mut daemons {
                d.round().await;
            }
        }
        for d in &mut daemons {
            d.spent = [Duration::ZERO; 2];
        }
        for extra in [0, EXTRA] {
            let _idle = Idle::start(extra);
            let processes = std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .is_some_and(|n| n.parse::<u32>().is_ok())
                })
                .count();
            println!("{TURNS} turns of each kind, {processes} processes on the machine:");
            for _ in 0..TURNS {
                for d in &mut daemons {
                    d.round().await;
                }
            }
            for d in &mut daemons {
                d.report(TURNS);
            }
        }
        for d in &daemons {
            let _ = d.env.stepper().args(["daemon", "stop"]).output();
        }
    });
}
