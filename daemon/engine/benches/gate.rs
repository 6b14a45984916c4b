//! The gate's decision time for shell lines — typical ones, 60 KB ones, and adversarial ones
//! (deep nesting, a pathological parse) — next to the bare tree-sitter parse of the same
//! line (the floor any grammar-based check pays). Lines are judged in a real project folder
//! with this machine's PATH, so path checks and program lookups are paid as in a session.
//!
//! Targets (issue 20): under 1 ms for a typical line, under 20 ms for a 60 KB line.
//!
//! `cargo bench -p stepper-engine --bench gate`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use stepper_engine::config::{PermissionMode, Permissions};
use stepper_engine::gate::{Policy, Verdict};
use stepper_engine::tool::{CommandEnv, GateRequest};

const TYPICAL: &[&str] = &[
    "git status --short",
    "cargo test -p stepper-engine -- --nocapture 2>&1",
    "grep -rn 'fn main' src | head -20",
    "rg -n 'fn main' --type rust",
    "ls -la src && wc -l src/*.rs",
    "find . -name '*.rs' -not -path './target/*' | sort | head -50",
    "git log --oneline -10 -- src && git diff --stat",
];

/// `n` typical commands joined with `&&`.
fn long_line(bytes: usize) -> String {
    let mut line = String::new();
    let mut i = 0;
    while line.len() < bytes {
        if !line.is_empty() {
            line.push_str(" && ");
        }
        line.push_str(TYPICAL[i % TYPICAL.len()]);
        i += 1;
    }
    line
}

fn nested(open: &str, close: &str, bytes: usize) -> String {
    let n = bytes / (open.len() + close.len());
    format!("{}ls{}", open.repeat(n), close.repeat(n))
}

fn best<F: FnMut()>(runs: usize, mut f: F) -> Duration {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let project = tempfile::tempdir().unwrap();
    let root = project.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    for i in 0..40 {
        std::fs::write(root.join(format!("src/m{i}.rs")), "fn main() {}\n").unwrap();
    }
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    let p = Permissions {
        mode: Some(PermissionMode::Default),
        allow: vec!["Bash(cargo test:*)".into(), "Bash(npm run build:*)".into()],
        deny: vec!["Bash(curl:*)".into(), "Bash(git push:*)".into()],
        ask: vec!["Bash(git commit:*)".into()],
    };
    let (policy, _) = Policy::from_settings(Some(&p), &root, None);
    let env: stepper_protocol::session::Env = [
        (
            "PATH".to_string(),
            std::env::var("PATH").unwrap_or_default(),
        ),
        ("HOME".to_string(), "/nonexistent-home".to_string()),
    ]
    .into();
    let env = CommandEnv(Arc::new(env));
    let request = |line: &str| GateRequest::Bash {
        command: line.to_string(),
        cwd: root.clone(),
        env: env.clone(),
    };
    let parse_only = |line: &str| {
        let mut parser = tree_sitter::Parser::new();
        parser
            .set_language(&tree_sitter_bash::LANGUAGE.into())
            .unwrap();
        std::hint::black_box(parser.parse(line, None));
    };
    let report = |what: &str, line: &str, runs: usize, target: Duration| {
        let r = request(line);
        let verdict = policy.decide(&r);
        let decide = best(runs, || {
            std::hint::black_box(policy.decide(&r));
        });
        let parse = best(runs, || parse_only(line));
        let shown = match &verdict {
            Verdict::Allow => "allow",
            Verdict::Ask(_) => "ask",
            Verdict::Deny(_) => "deny",
        };
        if std::env::var_os("GATE_BENCH_WHY").is_some() {
            println!("    {verdict:?}");
        }
        println!(
            "  {what:<34} {:>7} B  {shown:<5}  decide {decide:>10.2?}  parse {parse:>10.2?}  decide/parse {:>5.2}  target {target:?}: {}",
            line.len(),
            decide.as_secs_f64() / parse.as_secs_f64(),
            if decide <= target { "met" } else { "MISSED" }
        );
    };
    println!("gate decision for a shell line, best of N runs:");
    for line in TYPICAL {
        report(line, line, 500, Duration::from_millis(1));
    }
    report(
        "60 KB of typical commands",
        &long_line(60_000),
        30,
        Duration::from_millis(20),
    );
    for (open, close) in [("(", ")"), ("$(", ")"), ("{ ", "; }")] {
        report(
            &format!("60 KB nested {open}…{close}"),
            &nested(open, close, 60_000),
            10,
            Duration::from_millis(20),
        );
    }
    let deep = format!("{}ls src{}", "( ".repeat(200), " )".repeat(200));
    report(
        "60 KB of 200-deep subshells",
        &repeat_to(&deep, " && ", 60_000),
        10,
        Duration::from_millis(20),
    );
    report(
        "60 KB of quoting tricks",
        &repeat_to(
            "find . -name 'x' -de''lete >/dev/null {-o,x} \"$HOME\"",
            " ; ",
            60_000,
        ),
        10,
        Duration::from_millis(20),
    );
    report(
        "60 KB in one quoted word",
        &format!("echo \"{}\"", "a".repeat(60_000)),
        10,
        Duration::from_millis(20),
    );
    report(
        "60 KB of `a=(`",
        &"a=(".repeat(20_000),
        10,
        Duration::from_millis(20),
    );
    // rg's ignore files: the gate walks the folders rg walks. A larger project, next to rg
    // itself searching it (when installed).
    for d in 0..1_000 {
        let dir = root.join(format!("big/d{}/e{d}", d % 30));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..10 {
            std::fs::write(dir.join(format!("f{f}.rs")), "fn x() {}\n").unwrap();
        }
    }
    let line = "rg -n 'fn main'";
    report(
        "rg, 1,030 more folders",
        line,
        30,
        Duration::from_millis(20),
    );
    let decide = best(30, || {
        std::hint::black_box(policy.decide(&request(line)));
    });
    let rg = best(10, || {
        let _ = std::process::Command::new("rg")
            .args(["-n", "fn main"])
            .current_dir(&root)
            .output();
    });
    println!(
        "  rg itself on that project (spawn included) {rg:>10.2?}  gate/rg {:>5.2}",
        decide.as_secs_f64() / rg.as_secs_f64()
    );
}

fn repeat_to(piece: &str, sep: &str, bytes: usize) -> String {
    let mut line = String::from(piece);
    while line.len() < bytes {
        line.push_str(sep);
        line.push_str(piece);
    }
    line
}
