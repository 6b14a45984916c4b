//! What the reaper costs per command: `bash -c true` and `bash -c 'ls …'` run as the bash
//! tool runs them (its output through pipes, read to the end) directly, and under
//! `stepperd-reap` (a child subreaper that waits, then checks nothing is left beneath it; the
//! daemon's own `stepperd reap` beside it, its fallback) — and, where the kernel can
//! sandbox, the sandboxed chain with and without the reaper in front. Interleaved in one run,
//! so the machine's noise falls on every variant alike.
//!
//! `cargo bench -p stepper-e2e --bench reaper`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use stepper_e2e::bin_dir;

const RUNS: usize = 300;

fn percentile(v: &mut [Duration], q: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 * q) as usize).min(v.len() - 1)]
}

/// Wall time of one run, and the CPU time (user + system) its processes took.
fn time(cmd: &mut Command) -> (Duration, Duration) {
    let cpu = || {
        let usage =
            nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
        let tv = |t: nix::sys::time::TimeVal| {
            Duration::from_secs(u64::try_from(t.tv_sec()).unwrap())
                + Duration::from_micros(u64::try_from(t.tv_usec()).unwrap())
        };
        tv(usage.user_time()) + tv(usage.system_time())
    };
    let before = cpu();
    let t = Instant::now();
    let out = cmd.output().unwrap();
    let took = t.elapsed();
    assert!(out.status.success(), "{cmd:?} failed: {out:?}");
    (took, cpu().saturating_sub(before))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `prefix… bash -c line` in `root`.
fn command(prefix: &[String], line: &str, root: &Path) -> Command {
    let mut c = match prefix.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg("bash");
            c
        }
        None => Command::new("bash"),
    };
    c.args(["-c", line]).current_dir(root);
    c
}

fn main() {
    let project = tempfile::tempdir().unwrap();
    for i in 0..20 {
        std::fs::write(project.path().join(format!("file{i}.rs")), "fn main() {}\n").unwrap();
    }
    let root = project.path().display().to_string();
    let stepperd = bin_dir().join("stepperd").display().to_string();
    let pid = std::process::id().to_string();
    // The small binary the daemon uses, and the daemon's own (its fallback).
    let reap: Vec<String> = vec![
        bin_dir().join("stepperd-reap").display().to_string(),
        pid.clone(),
        "--".into(),
    ];
    let reap_big: Vec<String> = vec![stepperd.clone(), "reap".into(), pid, "--".into()];
    let sandbox: Vec<String> = [
        &stepperd,
        "sandbox",
        "--write",
        &root,
        "--write",
        "/tmp",
        "--write",
        "/dev/null",
        "--",
    ]
    .map(String::from)
    .to_vec();
    let can_sandbox = Command::new(&stepperd)
        .args(["sandbox", "--probe"])
        .output()
        .is_ok_and(|o| o.status.success());
    // Each variant, and the one it is compared with (the same chain without the reaper).
    let mut variants: Vec<(&str, Vec<String>, Option<usize>)> = vec![
        ("direct", vec![], None),
        ("stepperd-reap", reap.clone(), Some(0)),
        ("stepperd reap", reap_big, Some(0)),
    ];
    if can_sandbox {
        variants.push(("sandboxed", sandbox.clone(), None));
        variants.push(("reap+sandboxed", [reap, sandbox].concat(), Some(3)));
    } else {
        println!("(no sandbox here: only the unsandboxed variants)");
    }
    for (name, line) in [("true", "true"), ("ls", "ls -la")] {
        // Warm the page cache for every binary first.
        for _ in 0..10 {
            for (_, prefix, _) in &variants {
                time(&mut command(prefix, line, project.path()));
            }
        }
        let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(RUNS); variants.len()];
        let mut cpu = vec![Duration::ZERO; variants.len()];
        for _ in 0..RUNS {
            for (i, (_, prefix, _)) in variants.iter().enumerate() {
                let (wall, used) = time(&mut command(prefix, line, project.path()));
                times[i].push(wall);
                cpu[i] += used;
            }
        }
        let p50: Vec<Duration> = times.iter_mut().map(|t| percentile(t, 0.5)).collect();
        let p90: Vec<Duration> = times.iter_mut().map(|t| percentile(t, 0.9)).collect();
        let cpu: Vec<Duration> = cpu
            .iter()
            .map(|c| *c / u32::try_from(RUNS).unwrap())
            .collect();
        for (i, (variant, _, baseline)) in variants.iter().enumerate() {
            // Wall time (which a loaded machine inflates with waiting) and CPU time (which it
            // does not), next to the same chain without the reaper.
            let against = match baseline {
                Some(b) => format!(
                    " | +{:.3} ms wall ({:.2}x), +{:.3} ms CPU",
                    ms(p50[i]) - ms(p50[*b]),
                    ms(p50[i]) / ms(p50[*b]),
                    ms(cpu[i]) - ms(cpu[*b]),
                ),
                None => String::new(),
            };
            println!(
                "{name:>4} {variant:>14}: p50 {:>7.3} ms p90 {:>7.3} ms, CPU {:>6.3} ms{against}",
                ms(p50[i]),
                ms(p90[i]),
                ms(cpu[i]),
            );
        }
    }
}
