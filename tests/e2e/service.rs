//! The daemon as a login service: install and uninstall, the units systemd would load, and a
//! start by socket activation the way systemd does it.

use std::process::{Command, Stdio};
use std::time::Duration;

use stepper_e2e::{TestEnv, bin_dir, needs, wait_until};

const SYSTEMD: &str = "apt-get install systemd";

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

    if needs::program("systemd-analyze", "verifying the units", SYSTEMD) {
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
    }

    let out = run(&["daemon", "uninstall"]);
    assert!(out.status.success());
    assert!(!units.join("stepperd.socket").exists() && !units.join("stepperd.service").exists());
    let status = String::from_utf8_lossy(&run(&["daemon", "status"]).stdout).into_owned();
    assert!(status.contains("not installed"), "{status}");
}

#[test]
fn a_socket_activated_daemon_serves_clients() {
    if !needs::program("systemd-socket-activate", "socket activation", SYSTEMD) {
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
    // The log is written in the background: wait for the line.
    stepper_e2e::wait_until("the log line", std::time::Duration::from_secs(10), || {
        env.daemon_log().contains("activated=true")
    });

    let logs = env.run(&["daemon", "logs", "-n", "50"]);
    assert!(String::from_utf8_lossy(&logs.stdout).contains("stepperd ready"));

    assert!(env.run(&["daemon", "stop"]).status.success());
    assert!(child.wait().unwrap().success(), "a clean exit");
    assert!(
        socket.exists(),
        "the socket belongs to the service manager, which removes it"
    );
}

/// A daemon left running by an older install (here: a stepperd binary replaced on disk) is
/// restarted by the next client when idle, and left alone while a turn runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgraded_binary_restarts_an_idle_daemon_but_not_a_busy_one() {
    let env = TestEnv::new();
    let installed = env.home.path().join("bin-stepperd");
    let install = || {
        // A new file, as a package manager writes it (the running one keeps its inode).
        let _ = std::fs::remove_file(&installed);
        std::fs::copy(bin_dir().join("stepperd"), &installed).unwrap();
    };
    install();
    let stepper = |args: &[&str]| {
        env.stepper()
            .env("STEPPERD", &installed)
            .args(args)
            .output()
            .unwrap()
    };
    assert!(stepper(&["daemon", "start"]).status.success());
    let first = env.daemon_pid().unwrap();

    let out = stepper(&["ask", "hi"]);
    assert!(out.status.success());
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("restarting"),
        "same build: left alone"
    );
    assert_eq!(env.daemon_pid(), Some(first));

    // Upgrade while a turn runs: the daemon is busy and stays.
    let gate = stepper_e2e::Gate::new();
    env.fake.push(stepper_e2e::Reply::held(&["busy"], &gate));
    let busy = env
        .stepper()
        .env("STEPPERD", &installed)
        .args(["ask", "long"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    env.running_session(5).await;
    install();
    let out = stepper(&["sessions"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        stderr.contains("rebuilt or upgraded") && stderr.contains("restart --force"),
        "{stderr}"
    );
    assert_eq!(env.daemon_pid(), Some(first));
    gate.open();
    let _ = busy.wait_with_output().unwrap();

    // Idle now: the next client restarts it onto the new build.
    let out = stepper(&["sessions"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("restarting it"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let second = env.daemon_pid().unwrap();
    assert_ne!(second, first);
    let out = stepper(&["sessions"]);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.daemon_pid(), Some(second));
}

/// A daemon without the key in its environment (as at login) gets it from the login shell.
#[test]
fn the_login_shells_environment_fills_what_a_session_lacks() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let shell = env.home.path().join("login-shell");
    std::fs::write(
        &shell,
        format!(
            "#!/bin/sh\necho 'a banner from .bashrc'\nexport ANTHROPIC_API_KEY={}\nexec /bin/sh -c \"$4\"\n",
            stepper_e2e::fake_llm::FAKE_KEY
        ),
    )
    .unwrap();
    std::fs::set_permissions(&shell, std::fs::Permissions::from_mode(0o755)).unwrap();
    let start = env
        .stepper()
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("STEPPER_LOGIN_ENV")
        .env("SHELL", &shell)
        .args(["daemon", "start"])
        .output()
        .unwrap();
    assert!(start.status.success());
    let out = env
        .stepper()
        .env_remove("ANTHROPIC_API_KEY")
        .args(["ask", "hi"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        env.daemon_log()
    );
    // The log is written in the background: wait for the line.
    stepper_e2e::wait_until("the log line", std::time::Duration::from_secs(10), || {
        env.daemon_log()
            .contains("resolved the login shell's environment")
    });
}

#[test]
fn a_client_that_sends_its_environment_never_waits_for_the_login_shell() {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    // A login shell that hangs (a slow .bashrc) until the test opens the gate.
    let gate = env.home.path().join("gate");
    nix::unistd::mkfifo(&gate, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let shell = env.home.path().join("login-shell");
    std::fs::write(
        &shell,
        format!(
            "#!/bin/sh\nread line < {}\nexec /bin/sh -c \"$4\"\n",
            gate.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&shell, std::fs::Permissions::from_mode(0o755)).unwrap();
    let start = env
        .stepper()
        .env_remove("STEPPER_LOGIN_ENV")
        .env("STEPPER_LOGIN_ENV_TIMEOUT_MS", "600000")
        .env("SHELL", &shell)
        .args(["daemon", "start"])
        .output()
        .unwrap();
    assert!(start.status.success());

    // The client's environment has what the turn needs: the turn runs now, the shell still
    // hanging.
    let mut ask = env
        .stepper()
        .args(["ask", "hi"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = None;
    wait_until(
        "the first turn, without the login shell",
        Duration::from_secs(30),
        || {
            status = ask.try_wait().unwrap();
            status.is_some()
        },
    );
    assert!(status.unwrap().success(), "{}", env.daemon_log());
    assert!(
        !env.daemon_log()
            .contains("resolved the login shell's environment"),
        "the shell was still hanging"
    );

    // Open the gate: the read completes in the background.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&gate)
        .unwrap()
        .write_all(b"go\n")
        .unwrap();
    wait_until("the log line", Duration::from_secs(10), || {
        env.daemon_log()
            .contains("resolved the login shell's environment")
    });
}
