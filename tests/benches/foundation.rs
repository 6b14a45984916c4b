//! Foundation benchmarks, each next to a reference measured in the same run:
//!
//! - the RPC round trip (`daemon/info` over the socket) next to a raw ping-pong of the same
//!   size over a local socket, through the project's client library (jsonrpsee) and through
//!   a plain blocking WebSocket (`stepper_e2e::ws`), which tells the daemon's share from the
//!   client library's;
//! - events per second from a streaming turn through the daemon to 1 and to 8 socket
//!   subscribers, next to one subscriber, with the daemon's CPU time per event delivered;
//! - attaching to a session of 100 000 events: the replay of every event next to the replay
//!   a view asks for (`skipFinishedDeltas`), and the real `stepper attach` in tmux until it
//!   shows the session's last answer;
//! - `stepper ask` against the fake server with the daemon warm: wall time and peak RSS of the
//!   client process, next to `stepper --version` (the cost of starting the binary at all).
//!
//! `cargo bench -p stepper-e2e --bench foundation`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use interprocess::local_socket::tokio::{Listener, Stream, prelude::*};
use interprocess::local_socket::{GenericFilePath, ListenerOptions, ToFsName};
use stepper_e2e::{Reply, TestEnv, Tmux};
use stepper_protocol::AppEvent;
use stepper_protocol::methods::{DaemonInfo, Empty};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ROUND_TRIPS: usize = 5000;
const ASKS: usize = 20;
const STREAM_EVENTS: usize = 20_000;
const LONG_TURNS: usize = 10;
const LONG_DELTAS: usize = 10_000;

struct Stats {
    mean: Duration,
    p50: Duration,
    p99: Duration,
}

fn stats(mut v: Vec<Duration>) -> Stats {
    v.sort();
    let mean = v.iter().sum::<Duration>() / v.len() as u32;
    let pct = |p: f64| v[((v.len() as f64 * p) as usize).min(v.len() - 1)];
    Stats {
        mean,
        p50: pct(0.5),
        p99: pct(0.99),
    }
}

fn show(s: &Stats) -> String {
    format!(
        "mean {:>9.1?}  p50 {:>9.1?}  p99 {:>9.1?}",
        s.mean, s.p50, s.p99
    )
}

async fn rpc_round_trip(env: &TestEnv) -> (Stats, usize) {
    let client = env.client().await;
    let size = serde_json::to_string(&client.call::<DaemonInfo>(Empty {}).await.unwrap())
        .unwrap()
        .len();
    for _ in 0..200 {
        client.call::<DaemonInfo>(Empty {}).await.unwrap();
    }
    let mut times = Vec::with_capacity(ROUND_TRIPS);
    for _ in 0..ROUND_TRIPS {
        let t = Instant::now();
        client.call::<DaemonInfo>(Empty {}).await.unwrap();
        times.push(t.elapsed());
    }
    (stats(times), size)
}

/// `daemon/info` over a blocking WebSocket with hand-built JSON: no client library, no async
/// runtime on the client's side.
fn plain_round_trip(env: &TestEnv) -> Stats {
    let mut ws = stepper_e2e::ws::Ws::connect(env, "/");
    let init = serde_json::json!({
        "protocolVersion": {"major": 1, "minor": 1},
        "client": {"name": "bench", "kind": "other", "version": "0"}
    });
    ws.call(0, "initialize", init);
    for id in 1..=200 {
        ws.call(id, "daemon/info", serde_json::Value::Null);
    }
    let mut times = Vec::with_capacity(ROUND_TRIPS);
    for id in 0..ROUND_TRIPS as u64 {
        let t = Instant::now();
        ws.call(1000 + id, "daemon/info", serde_json::Value::Null);
        times.push(t.elapsed());
    }
    stats(times)
}

async fn raw_ping_pong(dir: &std::path::Path, size: usize) -> Stats {
    let path = dir.join("raw.sock");
    let name = path.as_path().to_fs_name::<GenericFilePath>().unwrap();
    let listener: Listener = ListenerOptions::new().name(name).create_tokio().unwrap();
    let server = tokio::spawn(async move {
        let mut conn = listener.accept().await.unwrap();
        let mut buf = vec![0u8; size];
        while conn.read_exact(&mut buf).await.is_ok() {
            if conn.write_all(&buf).await.is_err() {
                break;
            }
        }
    });
    let name = path.as_path().to_fs_name::<GenericFilePath>().unwrap();
    let mut conn = Stream::connect(name).await.unwrap();
    let msg = vec![b'x'; size];
    let mut buf = vec![0u8; size];
    for _ in 0..200 {
        conn.write_all(&msg).await.unwrap();
        conn.read_exact(&mut buf).await.unwrap();
    }
    let mut times = Vec::with_capacity(ROUND_TRIPS);
    for _ in 0..ROUND_TRIPS {
        let t = Instant::now();
        conn.write_all(&msg).await.unwrap();
        conn.read_exact(&mut buf).await.unwrap();
        times.push(t.elapsed());
    }
    drop(conn);
    server.await.unwrap();
    stats(times)
}

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

/// Events per second seen by every one of `subscribers` clients while a turn streams, and
/// the daemon's CPU time per event delivered (to all of them together).
async fn streamed(env: &TestEnv, subscribers: usize) -> (f64, Duration) {
    let deltas: Vec<String> = (0..STREAM_EVENTS).map(|i| format!("t{i} ")).collect();
    env.fake.push(Reply::text(
        &deltas.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let owner = env.client().await;
    let session = env.create_session(&owner, None).await;
    let mut readers = Vec::new();
    for _ in 0..subscribers {
        let client = env.client().await;
        let mut stream = client.subscribe_events(&session, 0).await.unwrap();
        readers.push(tokio::spawn(async move {
            let mut n = 0usize;
            loop {
                let e = stream.next().await.unwrap().unwrap();
                n += 1;
                if matches!(e.event, AppEvent::TurnFinished { .. }) {
                    return n;
                }
            }
        }));
    }
    let pid = env.daemon_pid().unwrap();
    let cpu = cpu_time(pid);
    let start = Instant::now();
    stepper_e2e::submit(&owner, &session, "go").await;
    let mut events = 0;
    for r in readers {
        events = r.await.unwrap();
    }
    let elapsed = start.elapsed();
    let cpu = cpu_time(pid) - cpu;
    (
        events as f64 / elapsed.as_secs_f64(),
        cpu / (events * subscribers) as u32,
    )
}

/// What `stepper ask` does, step by step, in this process (no process start): mean times of
/// connect + initialize, session/create, session/subscribe, and submit to `TurnFinished`.
async fn ask_steps(env: &TestEnv) -> [Duration; 4] {
    let mut sums = [Duration::ZERO; 4];
    for run in 0..=ASKS {
        env.fake.push(Reply::text(&["hello"]));
        let t = Instant::now();
        let client = env.client().await;
        let connected = t.elapsed();
        let t = Instant::now();
        let session = env.create_session(&client, None).await;
        let created = t.elapsed();
        let t = Instant::now();
        let mut stream = client.subscribe_events(&session, 0).await.unwrap();
        let subscribed = t.elapsed();
        let t = Instant::now();
        stepper_e2e::submit(&client, &session, "hello").await;
        loop {
            let e = stream.next().await.unwrap().unwrap();
            if matches!(e.event, AppEvent::TurnFinished { .. }) {
                break;
            }
        }
        let turn = t.elapsed();
        // The first run warms caches; it is not counted.
        if run > 0 {
            for (sum, d) in sums.iter_mut().zip([connected, created, subscribed, turn]) {
                *sum += d;
            }
        }
    }
    sums.map(|d| d / ASKS as u32)
}

/// A session of `turns` turns of `deltas` streamed pieces each; the last answer ends with
/// `marker`.
async fn long_session(env: &TestEnv, turns: usize, deltas: usize, marker: &str) -> String {
    let owner = env.client().await;
    let session = env.create_session(&owner, None).await;
    let mut stream = owner.subscribe_events(&session, 0).await.unwrap();
    let mut finished = 0;
    for turn in 0..turns {
        let mut pieces: Vec<String> = (0..deltas).map(|i| format!("t{i} ")).collect();
        if turn + 1 == turns {
            pieces.push(format!("\n\n{marker}"));
        }
        env.fake.push(Reply::text(
            &pieces.iter().map(String::as_str).collect::<Vec<_>>(),
        ));
        stepper_e2e::submit(&owner, &session, "go").await;
        while finished <= turn {
            let e = stream.next().await.unwrap().unwrap();
            finished += usize::from(matches!(e.event, AppEvent::TurnFinished { .. }));
        }
    }
    session
}

/// Time from subscribing to having received the session's last `TurnFinished`.
async fn replay(env: &TestEnv, session: &String, turns: usize, history: bool) -> (Duration, usize) {
    let client = env.client().await;
    let start = Instant::now();
    let mut stream = if history {
        client.subscribe_history(session, 0).await.unwrap()
    } else {
        client.subscribe_events(session, 0).await.unwrap()
    };
    let (mut finished, mut events) = (0, 0);
    while finished < turns {
        let e = stream.next().await.unwrap().unwrap();
        events += 1;
        finished += usize::from(matches!(e.event, AppEvent::TurnFinished { .. }));
    }
    (start.elapsed(), events)
}

/// The real `stepper attach` in a tmux pane: from Enter to the screen showing `marker`.
fn attach_until(env: &TestEnv, session: &str, marker: &str) -> Duration {
    let tmux = Tmux::new(env);
    let pane = tmux.shell();
    pane.wait_for("the shell's prompt", |s| s.contains('$'));
    pane.type_text(&format!("stepper attach {session}"));
    let start = Instant::now();
    pane.press("Enter");
    pane.wait_for_text(marker);
    let elapsed = start.elapsed();
    pane.press("C-d");
    elapsed
}

fn succeeded(out: std::process::Output) -> std::process::Output {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs in a child process of its own (`--measure-asks`), so that the peak RSS of its
/// children is that of `stepper` runs alone, not of the cargo build the harness ran.
fn measure_asks() {
    let bin = std::env::var("STEPPER_BENCH_BIN").unwrap();
    let run = |args: &[&str]| {
        let t = Instant::now();
        succeeded(
            std::process::Command::new(&bin)
                .args(args)
                .output()
                .unwrap(),
        );
        t.elapsed().as_nanos() as u64
    };
    run(&["ask", "warm up"]);
    let version: Vec<u64> = (0..ASKS).map(|_| run(&["--version"])).collect();
    let ask: Vec<u64> = (0..ASKS).map(|_| run(&["ask", "hello"])).collect();
    let usage =
        nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    let report = serde_json::json!({ "version": version, "ask": ask, "maxRssKb": usage.max_rss() });
    println!("{report}");
}

fn asks(env: &TestEnv) -> (Stats, Stats, u64) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--measure-asks")
        .env_clear()
        .envs(env.envs())
        .env("STEPPER_BENCH_BIN", stepper_e2e::bin_dir().join("stepper"))
        .current_dir(env.project.path())
        .output()
        .unwrap();
    let out = succeeded(out);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let durations = |k: &str| -> Vec<Duration> {
        report[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| Duration::from_nanos(n.as_u64().unwrap()))
            .collect()
    };
    (
        stats(durations("version")),
        stats(durations("ask")),
        report["maxRssKb"].as_u64().unwrap(),
    )
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if std::env::args().any(|a| a == "--measure-asks") {
        return measure_asks();
    }
    let env = TestEnv::new();
    env.start_daemon();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (rpc, size) = rpc_round_trip(&env).await;
        let raw = raw_ping_pong(env.home.path(), size).await;
        println!("round trip, {ROUND_TRIPS} sequential calls ({size}-byte response):");
        println!("  raw local socket ping-pong .. {}", show(&raw));
        println!(
            "  daemon/info over RPC ....... {}  ({:.1}x raw at p50)",
            show(&rpc),
            rpc.p50.as_secs_f64() / raw.p50.as_secs_f64()
        );
        let plain = tokio::task::block_in_place(|| plain_round_trip(&env));
        println!(
            "  daemon/info, plain WebSocket {}  ({:.1}x raw at p50: the daemon's share)",
            show(&plain),
            plain.p50.as_secs_f64() / raw.p50.as_secs_f64()
        );

        println!("turn of {STREAM_EVENTS} text deltas through the daemon to socket subscribers:");
        let (one, one_cpu) = streamed(&env, 1).await;
        println!(
            "  1 subscriber ....... {one:>9.0} events/s   daemon CPU {:>6.2?} per event delivered",
            one_cpu
        );
        let (eight, eight_cpu) = streamed(&env, 8).await;
        println!(
            "  8 subscribers ...... {eight:>9.0} events/s each ({:.2}x one)   daemon CPU {:>6.2?} per event delivered",
            eight / one,
            eight_cpu
        );

        let marker = "END-OF-THE-LONG-SESSION";
        let session = long_session(&env, LONG_TURNS, LONG_DELTAS, marker).await;
        let (full, full_events) = replay(&env, &session, LONG_TURNS, false).await;
        let (history, history_events) = replay(&env, &session, LONG_TURNS, true).await;
        println!(
            "attach to a session of {} events ({LONG_TURNS} turns):",
            full_events
        );
        println!("  replay of every event ........ {full:>9.1?}");
        println!(
            "  replay for a view ............ {history:>9.1?}  ({history_events} events; {:.3}x every event)",
            history.as_secs_f64() / full.as_secs_f64()
        );
        if Tmux::available() {
            let shown = attach_until(&env, &session, marker);
            println!("  stepper attach, Enter to the last answer on screen .. {shown:>9.1?}");
        }
    });
    let steps = rt.block_on(ask_steps(&env));
    let (version, ask, rss) = asks(&env);
    println!("stepper ask against the fake server, daemon warm, {ASKS} runs:");
    println!("  stepper --version .. {}", show(&version));
    println!(
        "  stepper ask ........ {}  ({:.1}x --version at p50)",
        show(&ask),
        ask.p50.as_secs_f64() / version.p50.as_secs_f64()
    );
    println!("  peak RSS of the client: {:.1} MiB", rss as f64 / 1024.0);
    println!(
        "  its steps in-process (mean): connect+initialize {:.1?} · session/create {:.1?} · \
         subscribe {:.1?} · submit to TurnFinished {:.1?}",
        steps[0], steps[1], steps[2], steps[3]
    );
}
