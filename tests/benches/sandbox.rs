//! What the sandbox costs per command: `bash -c true` and `bash -c 'ls …'` run through
//! `stepperd sandbox` (Landlock + seccomp, then exec) next to the same lines run directly,
//! interleaved in one run so the machine's noise falls on both alike. The bash tool runs
//! every line as `bash -c LINE`, so these are the two a user feels.
//!
//! `cargo bench -p stepper-e2e --bench sandbox`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use stepper_e2e::bin_dir;

const RUNS: usize = 300;

fn percentile(v: &mut [Duration], q: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 * q) as usize).min(v.len() - 1)]
}

fn time(cmd: &mut Command) -> Duration {
    let t = Instant::now();
    let status = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let took = t.elapsed();
    assert!(status.success(), "{cmd:?} failed");
    took
}

fn main() {
    let project = tempfile::tempdir().unwrap();
    for i in 0..20 {
        std::fs::write(project.path().join(format!("file{i}.rs")), "fn main() {}\n").unwrap();
    }
    let root = project.path().display().to_string();
    let stepperd = bin_dir().join("stepperd");
    let probe = Command::new(&stepperd)
        .args(["sandbox", "--probe"])
        .output()
        .unwrap();
    if !probe.status.success() {
        println!(
            "skipped: no sandbox here ({})",
            String::from_utf8_lossy(&probe.stderr).trim()
        );
        return;
    }
    println!("sandbox: {}", String::from_utf8_lossy(&probe.stdout).trim());
    for (name, line) in [("true", "true"), ("ls", "ls -la")] {
        let plain = || {
            let mut c = Command::new("bash");
            c.args(["-c", line]).current_dir(&root);
            c
        };
        let sandboxed = || {
            let mut c = Command::new(&stepperd);
            c.args([
                "sandbox",
                "--write",
                &root,
                "--write",
                "/tmp",
                "--write",
                "/dev/null",
                "--",
                "bash",
                "-c",
                line,
            ])
            .current_dir(&root);
            c
        };
        // Warm the page cache for both binaries first.
        for _ in 0..10 {
            time(&mut plain());
            time(&mut sandboxed());
        }
        let (mut a, mut b) = (Vec::with_capacity(RUNS), Vec::with_capacity(RUNS));
        for _ in 0..RUNS {
            a.push(time(&mut plain()));
            b.push(time(&mut sandboxed()));
        }
        let (a50, b50) = (percentile(&mut a, 0.5), percentile(&mut b, 0.5));
        let (a90, b90) = (percentile(&mut a, 0.9), percentile(&mut b, 0.9));
        println!(
            "{name:>5}: unsandboxed p50 {:>7.3} ms p90 {:>7.3} ms | sandboxed p50 {:>7.3} ms p90 {:>7.3} ms | \
             ratio p50 {:.2}x, cost +{:.3} ms",
            a50.as_secs_f64() * 1e3,
            a90.as_secs_f64() * 1e3,
            b50.as_secs_f64() * 1e3,
            b90.as_secs_f64() * 1e3,
            b50.as_secs_f64() / a50.as_secs_f64(),
            (b50.as_secs_f64() - a50.as_secs_f64()) * 1e3,
        );
    }
}
