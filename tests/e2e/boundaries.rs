//! The crate boundaries of DESIGN.md section 2, checked over `cargo metadata`.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

const DAEMON_CRATES: [&str; 7] = [
    "stepperd",
    "stepper-engine",
    "stepper-providers",
    "stepper-tools",
    "stepper-mcp",
    "stepper-store",
    "stepper-process",
];

struct Graph {
    /// Package name -> its normal (non-dev, non-build) dependencies as declared.
    declared: HashMap<String, Vec<Value>>,
    /// Package name -> names reachable through normal dependencies, as built alone.
    reachable: HashMap<String, BTreeSet<String>>,
}

/// The platform whose graph is checked: the host's, which a build has already fetched, so the
/// test needs no download (`--offline`). CI checks the Windows graph too, after fetching it:
/// `STEPPER_BOUNDARY_PLATFORM=x86_64-pc-windows-gnu`.
fn platform() -> String {
    if let Some(p) = std::env::var("STEPPER_BOUNDARY_PLATFORM")
        .ok()
        .filter(|p| !p.is_empty())
    {
        return p;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = std::process::Command::new(rustc)
        .arg("-vV")
        .output()
        .expect("rustc -vV");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_string()
}

fn graph() -> Graph {
    let platform = platform();
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &platform])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata --offline failed (a build fetches what it needs; \
         `cargo fetch` brings the rest): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: HashMap<String, String> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap().to_string(),
                p["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let members: BTreeSet<String> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| names[m.as_str().unwrap()].clone())
        .collect();
    let declared = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| members.contains(p["name"].as_str().unwrap()))
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .cloned()
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect();
    // `cargo tree -p` resolves features as a build of that package alone would, so one
    // member's features (the daemon enabling protocol's `server`) do not leak into another's.
    let reachable = members
        .iter()
        .map(|name| (name.clone(), tree(name, &platform)))
        .collect();
    Graph {
        declared,
        reachable,
    }
}

fn tree(package: &str, platform: &str) -> BTreeSet<String> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "-p",
            package,
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
            "--target",
            platform,
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

fn declared_names(g: &Graph, package: &str) -> BTreeSet<String> {
    g.declared[package]
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn clients_never_reach_daemon_code() {
    let g = graph();
    for client in ["stepper-cli", "stepper-tui"] {
        let reach = &g.reachable[client];
        for forbidden in DAEMON_CRATES.iter().chain(&["sqlx", "reqwest"]) {
            assert!(
                !reach.contains(*forbidden),
                "{client} depends on {forbidden}"
            );
        }
    }
}

#[test]
fn the_tui_knows_no_socket() {
    let g = graph();
    let allowed: BTreeSet<&str> = [
        "stepper-protocol",
        "ratatui",
        "crossterm",
        "tokio",
        "tokio-util",
        "futures",
        "pulldown-cmark",
        "syntect",
        "unicode-width",
        "unicode-segmentation",
    ]
    .into_iter()
    .collect();
    for dep in &g.declared["stepper-tui"] {
        let name = dep["name"].as_str().unwrap();
        assert!(allowed.contains(name), "stepper-tui depends on {name}");
        if name == "stepper-protocol" {
            assert!(
                dep["features"].as_array().unwrap().is_empty(),
                "the TUI uses protocol types only"
            );
        }
    }
    for forbidden in ["clap", "jsonrpsee", "interprocess", "sqlx", "reqwest"] {
        assert!(
            !g.reachable["stepper-tui"].contains(forbidden),
            "stepper-tui reaches {forbidden}"
        );
    }
}

#[test]
fn protocol_defaults_are_types_only() {
    let g = graph();
    let required: BTreeSet<String> = g.declared["stepper-protocol"]
        .iter()
        .filter(|d| !d["optional"].as_bool().unwrap())
        .map(|d| d["name"].as_str().unwrap().to_string())
        .collect();
    let allowed: BTreeSet<String> = ["serde", "serde_json", "schemars"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert!(
        required.is_subset(&allowed),
        "non-optional protocol deps: {required:?}"
    );
}

#[test]
fn http_sql_and_process_stay_in_their_crates() {
    let g = graph();
    for (package, _) in g.declared.iter() {
        let deps = declared_names(&g, package);
        if deps.contains("reqwest") {
            assert!(
                ["stepper-providers", "stepper-tools", "stepper-mcp"].contains(&package.as_str()),
                "{package} uses reqwest"
            );
        }
        if deps.contains("axum") {
            assert!(
                ["stepperd", "stepper-e2e"].contains(&package.as_str()),
                "{package} uses axum"
            );
        }
        if deps.contains("sqlx") {
            assert_eq!(package, "stepper-store", "{package} uses sqlx");
        }
    }
    let engine = &g.reachable["stepper-engine"];
    for forbidden in ["reqwest", "hyper", "sqlx", "axum"] {
        assert!(
            !engine.contains(forbidden),
            "the engine's traits must stay HTTP- and SQL-free: {forbidden}"
        );
    }
    let process = declared_names(&g, "stepper-process");
    assert!(
        process.iter().all(|d| !d.starts_with("stepper")),
        "process depends on {process:?}"
    );
}

/// Every Rust file beside a test target's root is one of its modules (`mod name;`) or a
/// target of its own: a test file nobody declares compiles into nothing and never runs.
#[test]
fn every_test_file_is_in_a_test_binary() {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--no-deps",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let targets: Vec<(String, std::path::PathBuf)> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().clone())
        .map(|t| {
            let kinds = t["kind"].to_string();
            (
                kinds,
                std::path::PathBuf::from(t["src_path"].as_str().unwrap()),
            )
        })
        .collect();
    let roots: BTreeSet<&std::path::Path> = targets.iter().map(|(_, p)| p.as_path()).collect();
    let mut lost = Vec::new();
    let mut checked = 0;
    for (kinds, root) in &targets {
        if !kinds.contains("test") && !kinds.contains("bench") {
            continue;
        }
        // A root named main.rs, mod.rs or lib.rs owns its folder; another (tests/e2e/all.rs)
        // the files beside it too.
        let dir = root.parent().unwrap();
        let text = std::fs::read_to_string(root).unwrap();
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "rs") || roots.contains(path.as_path()) {
                continue;
            }
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            checked += 1;
            let declared = text.lines().any(|l| {
                let l = l.trim_start().trim_start_matches("pub ");
                l == format!("mod {stem};") || l.starts_with(&format!("#[path = \"{stem}.rs\"]"))
            });
            if !declared {
                lost.push(path.display().to_string());
            }
        }
    }
    assert!(
        checked > 40,
        "only {checked} test files found: is the walk right?"
    );
    assert!(lost.is_empty(), "test files no binary compiles: {lost:?}");
}
