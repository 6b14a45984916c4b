//! `stepper --host box …` against a real sshd on a loopback port: the "remote machine" is a
//! second stepper home with its own fake LLM; this side's home never gets a daemon.

use std::os::unix::fs::PermissionsExt;
use std::process::Output;

use stepper_e2e::output;
use stepper_e2e::sshd::Sshd;
use stepper_e2e::tmux::TIMEOUT;
use stepper_e2e::{Reply, TestEnv, Tmux, wait_until};

struct Remote {
    /// This machine.
    here: TestEnv,
    /// The other one, served by `sshd`.
    there: TestEnv,
    sshd: Sshd,
}

impl Remote {
    fn start() -> Option<Remote> {
        if !Sshd::available() {
            return None;
        }
        let there = TestEnv::new();
        let sshd = Sshd::start(&there);
        Some(Remote {
            here: TestEnv::without_keys(),
            there,
            sshd,
        })
    }

    fn stepper(&self, args: &[&str]) -> Output {
        self.stepper_with(&[], args)
    }

    fn stepper_with(&self, extra: &[(&str, &str)], args: &[&str]) -> Output {
        let mut cmd = self.here.stepper();
        cmd.envs(self.sshd.client_envs());
        cmd.envs(extra.iter().copied());
        cmd.args(["--host", "box"]).args(args);
        cmd.output().expect("running stepper --host")
    }

    fn there_dir(&self) -> String {
        self.there.project.path().display().to_string()
    }
}

#[test]
fn ask_sessions_and_attach_reach_a_daemon_on_another_machine() {
    let Some(r) = Remote::start() else { return };
    r.there.fake.push(Reply::text(&["hello from ", "the box"]));
    assert!(r.there.daemon_pid().is_none());

    // The remote daemon is started on the way; the answer is its fake LLM's.
    let out = r.stepper(&["--remote-dir", &r.there_dir(), "ask", "who are you?"]);
    let (stdout, stderr) = (output::stdout(&out), output::stderr(&out));
    assert!(
        out.status.success(),
        "stepper --host ask failed: {stderr}\nsshd: {}",
        r.sshd.log()
    );
    assert_eq!(stdout.trim(), "hello from the box");
    assert!(r.there.daemon_pid().is_some(), "the daemon there runs");
    assert!(
        r.here.daemon_pid().is_none() && !r.here.places().socket.exists(),
        "no daemon was started here"
    );
    assert_eq!(r.sshd.forwarded_sockets(), Vec::<String>::new());

    // The session is there, in the folder asked for (the host from STEPPER_HOST this time).
    let out = r
        .here
        .stepper()
        .envs(r.sshd.client_envs())
        .env("STEPPER_HOST", "box")
        .args(["sessions", "--json"])
        .output()
        .unwrap();
    let (stdout, stderr) = (output::stdout(&out), output::stderr(&out));
    assert!(out.status.success(), "{stderr}");
    let sessions: serde_json::Value = serde_json::from_str(&stdout).expect("sessions --json");
    let first = &sessions.as_array().expect("an array")[0];
    assert_eq!(first["cwd"], r.there_dir().as_str());
    let id = first["id"].as_str().unwrap().to_string();

    // The TUI, over the same forward.
    if Tmux::available() {
        let tmux = Tmux::new(&r.here);
        let pane = tmux.shell();
        let envs: Vec<String> = r
            .sshd
            .client_envs()
            .into_iter()
            .map(|(k, v)| format!("{k}={}", stepper_e2e::tmux::quote(&v)))
            .collect();
        pane.run(&format!(
            "env {} stepper --host box attach {id}; echo attach-exited-$?",
            envs.join(" ")
        ));
        pane.wait_for_text("hello from the box");
        pane.press("C-d");
        pane.wait_for_text("attach-exited-0");
        wait_until("the forwarded socket to close", TIMEOUT, || {
            r.sshd.forwarded_sockets().is_empty()
        });
    }
}

#[test]
fn a_missing_or_different_stepper_there_is_explained() {
    let Some(r) = Remote::start() else { return };
    let out = r.stepper_with(
        &[("STEPPER_REMOTE_COMMAND", "/nowhere/stepper")],
        &["sessions"],
    );
    let (_, stderr) = (output::stdout(&out), output::stderr(&out));
    assert!(!out.status.success());
    assert!(
        stderr.contains("install stepper there") && stderr.contains("STEPPER_REMOTE_COMMAND"),
        "{stderr}"
    );

    // A remote stepper of another version: reported with what to run where.
    let shim = r.there.home.path().join("old-stepper");
    let real = stepper_e2e::bin_dir().join("stepper");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\nif [ \"$1 $2\" = \"daemon status\" ]; then\n  \
             {real} \"$@\" | sed 's/\"version\": \"[^\"]*\"/\"version\": \"0.0.9\"/'\n  \
             exit 0\nfi\nexec {real} \"$@\"\n",
            real = real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Started first, so the shim's status is the one of a running daemon.
    assert!(r.stepper(&["sessions"]).status.success());
    let out = r.stepper_with(
        &[("STEPPER_REMOTE_COMMAND", shim.to_str().unwrap())],
        &["sessions"],
    );
    let (_, stderr) = (output::stdout(&out), output::stderr(&out));
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("the stepperd on box is 0.0.9")
            && stderr.contains("ssh box stepper daemon restart"),
        "{stderr}"
    );

    // Commands about this machine say so instead of acting on the wrong one.
    let out = r.stepper(&["daemon", "status"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        (output::stdout(&out), output::stderr(&out))
            .1
            .contains("ssh box stepper daemon")
    );
}
