//! Checkpoint cost for a turn that changes 3 files, in projects of 1k, 10k and 100k files,
//! next to a bare stat walk of the same project (the floor: the checkpoint walks for stats,
//! and reads only what changed); the one-time baseline; and the rewind of that turn.
//!
//! `cargo bench -p stepperd --bench checkpoint`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use stepper_protocol::session::Env;
use stepper_store::{NewSession, Store, now_ms};
use stepperd::hub::checkpoint::{Checkpointer, restore};

fn make_project(root: &Path, files: usize) {
    for i in 0..files {
        let dir = root.join(format!("src/m{}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        std::fs::write(
            dir.join(format!("f{i}.rs")),
            format!("// file {i}\nfn f{i}() -> u32 {{ {i} }}\n").repeat(8),
        )
        .unwrap();
    }
}

fn stat_walk(root: &Path) -> usize {
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .build()
        .flatten()
        .filter(|e| e.metadata().is_ok())
        .count()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("checkpoint of a turn changing 3 files (best of 5):");
    for files in [1_000, 10_000, 100_000] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        make_project(&root, files);
        let data = tempfile::tempdir().unwrap();
        rt.block_on(async {
            let store = Store::open(&data.path().join("bench.db")).await.unwrap();
            let new = NewSession { id: "s".into(), title: None, cwd: root.display().to_string(), model: "m/m".into(), env: Env::new(), created_at: now_ms(), mode: None, sandbox: None, instructions: None };
            store.create_session(&new).await.unwrap();
            let cp = Checkpointer::new(&root);
            let t = Instant::now();
            cp.sync(&store).await.unwrap();
            let baseline = t.elapsed();
            let mut turn_best = Duration::MAX;
            let mut walk_best = Duration::MAX;
            let mut rewind_best = Duration::MAX;
            for turn in 1..=5u32 {
                cp.sync(&store).await.unwrap();
                for k in 0..3 {
                    let f = root.join(format!("src/m{k}/f{}.rs", k * 100));
                    std::fs::write(&f, format!("// changed in turn {turn}\n")).unwrap();
                }
                let t = Instant::now();
                let n = cp.record(&store, "s", turn).await.unwrap();
                turn_best = turn_best.min(t.elapsed());
                assert_eq!(n, 3);
                let t = Instant::now();
                std::hint::black_box(stat_walk(&root));
                walk_best = walk_best.min(t.elapsed());
                let t = Instant::now();
                let restored = restore(&root, &store, "s", turn).await.unwrap();
                rewind_best = rewind_best.min(t.elapsed());
                assert_eq!(restored, 3);
                cp.forget().await;
                cp.sync(&store).await.unwrap();
            }
            println!(
                "  {files:>7} files: checkpoint {turn_best:>9.2?}  (stat walk alone {walk_best:>9.2?}, {:.2}x)  rewind {rewind_best:>8.2?}  one-time baseline {baseline:>9.2?}",
                turn_best.as_secs_f64() / walk_best.as_secs_f64()
            );
        });
    }
}
