//! Daemon cold start to its first accepted connection (a fresh data dir each time: the store
//! is created and migrated), next to spawning `stepperd --version` (the cost of starting the
//! binary at all); and the daemon's memory when idle after serving a client.
//!
//! `cargo bench -p stepper-e2e --bench daemon`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use stepper_e2e::{TestEnv, bin_dir};
use stepper_protocol::client::connect_stream;
use stepper_protocol::methods::{DaemonInfo, Empty};

const RUNS: usize = 20;

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
}
