//! `stepper ask` through `--host` to a loopback sshd next to a local `stepper ask`, both on a
//! warm daemon answering from a fake LLM: what the SSH hop adds to a one-shot call. Then the
//! same remote ask with the control master (one SSH connection reused across calls, the
//! default) and without it (`STEPPER_SSH_CONTROL=off`: a handshake per call), and a bare
//! `ssh box true` both ways for the connection's own cost. Runs are interleaved, so the
//! machine's noise falls on every column alike.
//!
//! `cargo bench -p stepper-e2e --bench remote` (needs sshd: apt-get install openssh-server)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use stepper_e2e::sshd::Sshd;
use stepper_e2e::{Reply, TestEnv};

const RUNS: usize = 30;

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn p90(v: &mut [Duration]) -> Duration {
    v.sort();
    v[(v.len() * 9 / 10).min(v.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn timed(mut cmd: Command) -> Duration {
    let t = Instant::now();
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "{:?} failed: {}",
        cmd,
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn main() {
    if !Sshd::available() {
        eprintln!("remote bench: no sshd here (apt-get install openssh-server)");
        return;
    }
    let here = TestEnv::new();
    let there = TestEnv::new();
    let sshd = Sshd::start(&there);
    let dir = there.project.path().display().to_string();

    let local_ask = || {
        here.fake.push(Reply::text(&["ok"]));
        let mut cmd = here.stepper();
        cmd.args(["ask", "hi"]);
        cmd
    };
    let remote_ask = |control: bool| {
        there.fake.push(Reply::text(&["ok"]));
        let mut cmd = here.stepper();
        cmd.envs(sshd.client_envs());
        if !control {
            cmd.env("STEPPER_SSH_CONTROL", "off");
        }
        cmd.args(["--host", "box", "--remote-dir", &dir, "ask", "hi"]);
        cmd
    };
    let bare_ssh = |control: bool| {
        let mut cmd = Command::new("ssh");
        cmd.arg("-F").arg(&sshd.ssh_config);
        if control {
            cmd.arg("-o").arg(format!(
                "ControlPath={}/stepper/ssh-%C",
                sshd.runtime_dir().display()
            ));
        }
        cmd.args(["box", "true"]);
        cmd
    };

    // Warm: both daemons started, the control master up.
    timed(local_ask());
    timed(remote_ask(true));

    let mut cols: [Vec<Duration>; 5] = Default::default();
    for _ in 0..RUNS {
        cols[0].push(timed(local_ask()));
        cols[1].push(timed(remote_ask(true)));
        cols[2].push(timed(remote_ask(false)));
        cols[3].push(timed(bare_ssh(true)));
        cols[4].push(timed(bare_ssh(false)));
    }
    let names = [
        "local ask (warm daemon)",
        "--host ask, control master reused",
        "--host ask, no control master",
        "ssh box true, control master",
        "ssh box true, new connection",
    ];
    let medians: Vec<Duration> = cols.iter_mut().map(|c| median(c)).collect();
    println!("{RUNS} runs each, interleaved; median (p90), and the ratio to a local ask:");
    for (i, name) in names.iter().enumerate() {
        println!(
            "  {name:<36} {:>7.1} ms ({:>6.1} ms)  {:>5.2}x",
            ms(medians[i]),
            ms(p90(&mut cols[i])),
            medians[i].as_secs_f64() / medians[0].as_secs_f64()
        );
    }
    let share = |remote: Duration| 100.0 * (1.0 - medians[0].as_secs_f64() / remote.as_secs_f64());
    println!(
        "the SSH hop's share of a --host ask: {:.0}% with the control master, {:.0}% without",
        share(medians[1]),
        share(medians[2])
    );
    println!(
        "the control master saves {:.1} ms per call ({:.2}x faster)",
        ms(medians[2].saturating_sub(medians[1])),
        medians[2].as_secs_f64() / medians[1].as_secs_f64()
    );
}
