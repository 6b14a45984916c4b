//! What the sandbox costs per command: `bash -c true` and `bash -c 'ls …'` run directly, through
//! `stepperd sandbox` with Landlock and seccomp alone (the fallback), and through `stepperd
//! sandbox --bwrap` (bubblewrap's namespaces, Landlock and seccomp inside), interleaved in one
//! run so the machine's noise falls on all alike. The policy is the one a session in
//! `workspace-write` gets: the project (a git repository) and the temp folders writable, what
//! git and stepper run from read-only, the credential folders under HOME and stepper's own
//! folders hidden. A last column runs bubblewrap alone, with the same namespaces around bash
//! and no helper, to tell bubblewrap's share from the helper's.
//!
//! Wall time, so a busy machine inflates every column (a namespace's setup waits on the other
//! CPUs); `perf stat -r 100 -e task-clock …` gives the CPU time of one variant.
//!
//! `cargo bench -p stepper-e2e --bench sandbox`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
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
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let took = t.elapsed();
    assert!(status.success(), "{cmd:?} failed");
    took
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The helper's arguments for a `workspace-write` session in `project`, as the daemon builds
/// them (the daemon's own folders under `stepper_home`).
fn policy(project: &Path, stepper_home: &Path) -> Vec<OsString> {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()));
    let mut args: Vec<OsString> = Vec::new();
    let mut flag = |name: &str, path: &Path| {
        args.push(name.into());
        args.push(path.into());
    };
    for root in [project, Path::new("/tmp"), Path::new("/var/tmp")] {
        flag("--write", root);
    }
    for protected in [
        ".stepper",
        ".claude",
        ".git/config",
        ".git/hooks",
        ".git/info",
    ] {
        flag("--read-only", &project.join(protected));
    }
    for secret in [
        ".ssh",
        ".aws",
        ".gnupg",
        ".config/gcloud",
        ".kube",
        ".docker/config.json",
        ".netrc",
        ".git-credentials",
        ".config/gh",
        ".azure",
        ".claude/.credentials.json",
        ".codex/auth.json",
    ] {
        flag("--hide", &home.join(secret));
    }
    flag("--hide", stepper_home);
    args
}

fn main() {
    let project = tempfile::tempdir().unwrap();
    let stepper_home = tempfile::tempdir().unwrap();
    for i in 0..20 {
        std::fs::write(project.path().join(format!("file{i}.rs")), "fn main() {}\n").unwrap();
    }
    for dir in [".stepper", ".claude", ".git/hooks", ".git/info"] {
        std::fs::create_dir_all(project.path().join(dir)).unwrap();
    }
    std::fs::write(project.path().join(".git/config"), "[core]\n").unwrap();
    let root = project.path();
    let stepperd = bin_dir().join("stepperd");
    let probe = |extra: &[&str]| {
        Command::new(&stepperd)
            .args(["sandbox", "--probe"])
            .args(extra)
            .output()
            .unwrap()
    };
    let landlock = probe(&[]);
    if !landlock.status.success() {
        println!(
            "skipped: no sandbox here ({})",
            String::from_utf8_lossy(&landlock.stderr).trim()
        );
        return;
    }
    println!(
        "landlock: {}",
        String::from_utf8_lossy(&landlock.stdout).trim()
    );
    let bwrap = probe(&["--bwrap"]);
    let with_bwrap = bwrap.status.success();
    if with_bwrap {
        println!(
            "bwrap:    {}",
            String::from_utf8_lossy(&bwrap.stdout).trim()
        );
    } else {
        println!(
            "bwrap:    unusable here, left out ({})",
            String::from_utf8_lossy(&bwrap.stderr).trim()
        );
    }
    let policy = policy(root, stepper_home.path());
    println!("median (p90) per command, ms; + is the median over no sandbox");
    for (name, line) in [("true", "true"), ("ls", "ls -la")] {
        let plain = || {
            let mut c = Command::new("bash");
            c.args(["-c", line]).current_dir(root);
            c
        };
        let helper = |extra: &[&str]| {
            let mut c = Command::new(&stepperd);
            c.arg("sandbox")
                .args(&policy)
                .args(extra)
                .args(["--", "bash", "-c", line])
                .current_dir(root);
            c
        };
        // bubblewrap's part alone: its namespaces and the writable roots, no helper inside.
        let bare = || {
            let mut c = Command::new("/usr/bin/bwrap");
            c.args([
                "--unshare-user",
                "--unshare-pid",
                "--unshare-ipc",
                "--new-session",
                "--die-with-parent",
                "--cap-drop",
                "ALL",
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--bind",
                "/tmp",
                "/tmp",
                "--",
                "bash",
                "-c",
                line,
            ])
            .current_dir(root);
            c
        };
        type Make<'a> = Box<dyn Fn() -> Command + 'a>;
        let mut variants: Vec<(&str, Make)> = vec![
            ("none", Box::new(plain)),
            ("landlock", Box::new(move || helper(&[]))),
        ];
        if with_bwrap {
            variants.push(("bwrap", Box::new(move || helper(&["--bwrap"]))));
            variants.push(("bwrap alone", Box::new(bare)));
        }
        // Warm the page cache for every binary first.
        for _ in 0..10 {
            for (_, make) in &variants {
                time(&mut make());
            }
        }
        let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(RUNS); variants.len()];
        for _ in 0..RUNS {
            for (i, (_, make)) in variants.iter().enumerate() {
                times[i].push(time(&mut make()));
            }
        }
        let medians: Vec<Duration> = times.iter_mut().map(|t| percentile(t, 0.5)).collect();
        let mut row = format!("{name:>5}:");
        for (i, (label, _)) in variants.iter().enumerate() {
            let p90 = percentile(&mut times[i], 0.9);
            row.push_str(&format!(
                " | {label} {:.3} ({:.3})",
                ms(medians[i]),
                ms(p90)
            ));
            if i > 0 {
                row.push_str(&format!(" +{:.3}", ms(medians[i]) - ms(medians[0])));
            }
        }
        println!("{row}");
        let ratio = |i: usize, of: usize| medians[i].as_secs_f64() / medians[of].as_secs_f64();
        if with_bwrap {
            println!(
                "{:>5}  bwrap is {:.2}x no sandbox and {:.2}x landlock alone; landlock alone is {:.2}x no sandbox",
                "",
                ratio(2, 0),
                ratio(2, 1),
                ratio(1, 0)
            );
        } else {
            println!(
                "{:>5}  landlock alone is {:.2}x no sandbox",
                "",
                ratio(1, 0)
            );
        }
    }
}
