//! The daemon as a login service: install and uninstall, the units systemd would load, and a
//! start by socket activation the way systemd does it.

use std::process::{Command, Stdio};
use std::time::Duration;

use stepper_e2e::{TestEnv, bin_dir, wait_until};

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn install_writes_units_systemd_accepts_and_uninstall_removes_them() {
    let env = TestEnv::new();
    let config = env.home.path().join("xdg-config");
    let run = |args: &[&str]| {
        env.stepper()
            .env("XDG_CONFIG_HOME", &config)
            .env("STEPPER_NO_SERVICE_MANAGER", "1")
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["daemon", "install"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let units = config.join("systemd/user");
    let socket = std::fs::read_to_string(units.join("stepperd.socket")).unwrap();
    let service = std::fs::read_to_string(units.join("stepperd.service")).unwrap();
    assert!(
        socket.contains("ListenStream=%t/stepper/stepperd.sock")
            && socket.contains("SocketMode=0600")
    );
    let stepperd = bin_dir().join("stepperd").canonicalize().unwrap();
    assert!(
        service.contains(&format!("ExecStart={}", stepperd.display())),
        "{service}"
    );
    let status = String::from_utf8_lossy(&run(&["daemon", "status"]).stdout).into_owned();
    assert!(
        status.contains("installed as a systemd (user) service"),
        "{status}"
    );

    if have("systemd-analyze") {
        let verify = Command::new("systemd-analyze")
            .arg("verify")
            .arg(units.join("stepperd.socket"))
            .arg(units.join("stepperd.service"))
            .output()
            .unwrap();
        assert!(
            verify.status.success(),
            "systemd-analyze verify: {}",
            String::from_utf8_lossy(&verify.stderr)
        );
    } else {
        eprintln!("systemd-analyze not installed: units not verified");
    }

    let out = run(&["daemon", "uninstall"]);
    assert!(out.status.success());
    assert!(!units.join("stepperd.socket").exists() && !units.join("stepperd.service").exists());
    let status = String::from_utf8_lossy(&run(&["daemon", "status"]).stdout).into_owned();
    assert!(status.contains("not installed"), "{status}");
}

#[test]
fn a_socket_activated_daemon_serves_clients() {
    if !have("systemd-socket-activate") {
        eprintln!("skipped: systemd-socket-activate is not installed");
        return;
    }
    let env = TestEnv::new();
    let socket = env.places().socket;
    // Listen on the socket and exec the daemon with it as fd 3 (LISTEN_FDS/LISTEN_PID), as
    // systemd's socket units do.
    let mut activate = Command::new("systemd-socket-activate");
    activate.arg("-l").arg(&socket);
    for (k, _) in env.envs() {
        activate.arg("-E").arg(k);
    }
    let mut child = activate
        .arg(bin_dir().join("stepperd"))
        .env_clear()
        .envs(env.envs())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(
        "the socket to be listening",
        Duration::from_secs(10),
        || socket.exists(),
    );

    // The first connection starts the daemon; it does not bind or start another.
    let out = env.run(&["ask", "hello"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = env.run(&["daemon", "status", "--json"]);
    let info: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(
        info["pid"],
        child.id(),
        "the activated process is the daemon"
    );
    assert!(
        env.daemon_log().contains("activated=true"),
        "{}",
        env.daemon_log()
    );

    let logs = env.run(&["daemon", "logs", "-n", "50"]);
    assert!(String::from_utf8_lossy(&logs.stdout).contains("stepperd ready"));

    assert!(env.run(&["daemon", "stop"]).status.success());
    assert!(child.wait().unwrap().success(), "a clean exit");
    assert!(
        socket.exists(),
        "the socket belongs to the service manager, which removes it"
    );
}
