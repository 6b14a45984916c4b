//! The gate's decision time for long shell lines, next to the bare tree-sitter parse of the
//! same line (the floor any grammar-based check pays).
//!
//! `cargo bench -p stepper-engine --bench gate`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use stepper_engine::config::{PermissionMode, Permissions};
use stepper_engine::gate::Policy;
use stepper_engine::tool::GateRequest;

fn line(commands: usize) -> String {
    let pieces = [
        "git status --short",
        "cargo test -p stepper-engine -- --nocapture 2>&1",
        "grep -rn 'fn main' src | head -20",
        "npm run build --workspace web",
        "ls -la target/debug",
        "echo \"done: $HOME\"",
    ];
    (0..commands)
        .map(|i| pieces[i % pieces.len()])
        .collect::<Vec<_>>()
        .join(" && ")
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
    let p = Permissions {
        mode: Some(PermissionMode::Default),
        allow: vec!["Bash(cargo test:*)".into(), "Bash(npm run build:*)".into()],
        deny: vec!["Bash(curl:*)".into(), "Bash(git push:*)".into()],
        ask: vec!["Bash(git commit:*)".into()],
    };
    let (policy, _) = Policy::from_settings(Some(&p), Path::new("/project"), None);
    println!("gate decision for a shell line, best of 200:");
    for n in [1, 10, 100, 1000] {
        let l = line(n);
        let request = GateRequest::Bash { command: l.clone() };
        let decide = best(200, || {
            std::hint::black_box(policy.decide(&request));
        });
        let parse = best(200, || {
            let mut parser = tree_sitter::Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .unwrap();
            std::hint::black_box(parser.parse(&l, None));
        });
        println!(
            "  {n:>5} commands ({:>6} bytes): decide {decide:>10.2?}   parse only {parse:>10.2?}   decide/parse {:.2}",
            l.len(),
            decide.as_secs_f64() / parse.as_secs_f64()
        );
    }
}
