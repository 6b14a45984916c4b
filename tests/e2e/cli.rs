//! What the CLI says about itself and to a command it cannot run: help, version, usage
//! errors, and the daemon's absence, as normalized snapshots of the whole output.

use stepper_e2e::TestEnv;

#[test]
fn help_lists_the_commands_and_the_global_options() {
    let env = TestEnv::new();
    insta::assert_snapshot!(env.shown(&["--help"]));
}

#[test]
fn a_command_has_help_of_its_own() {
    let env = TestEnv::new();
    insta::assert_snapshot!("sessions_help", env.shown(&["sessions", "--help"]));
    insta::assert_snapshot!("daemon_help", env.shown(&["daemon", "--help"]));
}

#[test]
fn bad_usage_says_what_was_wrong_and_exits_2() {
    let env = TestEnv::new();
    insta::assert_snapshot!("unknown_flag", env.shown(&["--bogus"]));
    insta::assert_snapshot!("unknown_command", env.shown(&["sesions"]));
    insta::assert_snapshot!("bad_value", env.shown(&["ask", "--mode", "reckless", "hi"]));
    assert!(
        env.daemon_pid().is_none(),
        "no usage error starts the daemon"
    );
}

#[test]
fn daemon_commands_without_a_daemon() {
    let env = TestEnv::new();
    insta::assert_snapshot!("status_not_running", env.shown(&["daemon", "status"]));
    insta::assert_snapshot!("stop_not_running", env.shown(&["daemon", "stop"]));
    assert!(env.daemon_pid().is_none(), "neither starts it");
}

#[test]
fn daemon_status_of_a_running_daemon() {
    let env = TestEnv::new();
    env.start_daemon();
    insta::assert_snapshot!(env.shown(&["daemon", "status"]));
    insta::assert_snapshot!("stopped", env.shown(&["daemon", "stop"]));
}
