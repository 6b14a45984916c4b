//! The bash tool: a command line run in the session's folder and environment, in its own
//! process group under the reaper (and the session's OS sandbox, when it has one), its output
//! streamed as it comes and capped, the whole tree killed when the line ends, on timeout or
//! on cancel. A sandboxed command that
//! failed on a refusal can run again outside the sandbox, only through an approval.

use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;
use stepper_engine::tool::{
    CommandEnv, CommandSandbox, GateRequest, Tool, ToolCx, ToolDetails, ToolError, ToolOutput,
    ToolResult, ToolSpec, parse_args,
};
use tokio::io::AsyncReadExt;

/// The default and the longest time a command may run.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// Output kept for the model: the start and the end, the middle cut with a notice.
const KEEP_HEAD: usize = 15_000;
const KEEP_TAIL: usize = 15_000;
/// Time a terminated command gets to exit before it is killed.
const TERM_GRACE: Duration = Duration::from_secs(2);

pub struct Bash;

#[derive(Deserialize)]
struct Args {
    command: String,
    /// Milliseconds.
    #[serde(default)]
    timeout: Option<u64>,
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
}

impl Tool for Bash {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bash".into(),
            description: "Run a bash command line in the project folder and return its output \
                (stdout and stderr interleaved) and exit code. Use it for builds, tests, git and \
                other programs; prefer the read, edit, glob and grep tools for files. Commands \
                time out after 2 minutes unless `timeout` (ms, at most 600000) says otherwise. \
                Output over 30000 characters is cut in the middle."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "command": { "type": "string", "description": "The command line to run." },
                    "timeout": { "type": "integer", "minimum": 1, "maximum": 600000, "description": "Milliseconds before the command is killed." },
                    "description": { "type": "string", "description": "What the command does, in 5-10 words, for the user." }
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        }
    }

    fn call<'a>(&'a self, args: serde_json::Value, cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(run(args, cx))
    }
}

async fn run(args: serde_json::Value, cx: &ToolCx) -> ToolResult {
    let args: Args = parse_args(args)?;
    if args.command.trim().is_empty() {
        return Err(ToolError::InvalidArguments("the command is empty".into()));
    }
    let timeout = args
        .timeout
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_TIMEOUT)
        .min(MAX_TIMEOUT);
    cx.gate(GateRequest::Bash {
        command: args.command.clone(),
        cwd: cx.cwd.clone(),
        env: CommandEnv(std::sync::Arc::new(cx.env.clone())),
    })
    .await?;

    let Some(sandbox) = cx.sandbox.as_deref() else {
        return execute(&args.command, timeout, cx, None)
            .await
            .map(Ran::into_output);
    };
    let first = execute(&args.command, timeout, cx, Some(sandbox)).await?;
    if first.code.is_some()
        && first.code == sandbox.helper_failed
        && let Some(why) = first
            .text
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix(stepper_process::sandbox::HELPER_PREFIX))
    {
        return Err(ToolError::Failed(format!(
            "the sandbox could not be applied, so the command did not run: {why}"
        )));
    }
    let refused: Vec<&str> = first
        .text
        .lines()
        .filter(|l| stepper_process::sandbox::looks_refused(l))
        .take(3)
        .collect();
    if first.code == Some(0) || refused.is_empty() {
        return Ok(first.into_output());
    }
    // It may have failed because the sandbox refused it: running it outside is the user's
    // call, asked every time.
    let again = cx
        .gate(GateRequest::Unsandboxed {
            command: args.command.clone(),
            cwd: cx.cwd.clone(),
            env: CommandEnv(std::sync::Arc::new(cx.env.clone())),
            failure: refused.join("\n"),
        })
        .await;
    match again {
        Ok(()) => {
            cx.output
                .delta("\n[running it again outside the sandbox, as approved]\n");
            let mut second = execute(&args.command, timeout, cx, None).await?;
            second.text = format!(
                "[the sandbox refused it; this is its run outside the sandbox, approved by the user]\n{}",
                second.text
            );
            Ok(second.into_output())
        }
        Err(ToolError::Denied(why)) => {
            let mut out = first.into_output();
            out.content.push_str(&format!(
                "\n[the sandbox refused something this command needed; running it outside the \
                 sandbox was not approved ({why})]"
            ));
            Ok(out)
        }
        Err(e) => Err(e),
    }
}

/// A command that ran to its end: its exit code (`None`: killed by a signal) and output.
struct Ran {
    code: Option<i32>,
    text: String,
}

impl Ran {
    fn into_output(self) -> ToolOutput {
        let mut content = self.text;
        match self.code {
            Some(0) => {}
            Some(c) => content.push_str(&format!("\n[exit code {c}]")),
            None => content.push_str("\n[killed by a signal]"),
        }
        if content.trim().is_empty() {
            content = "(no output)".into();
        }
        ToolOutput {
            media: Vec::new(),
            content,
            details: ToolDetails {
                exit_code: self.code,
                ..Default::default()
            },
        }
    }
}

/// Run `line` with bash, in the sandbox when one is given, streaming its output.
async fn execute(
    line: &str,
    timeout: Duration,
    cx: &ToolCx,
    sandbox: Option<&CommandSandbox>,
) -> Result<Ran, ToolError> {
    // Under the reaper (when the daemon installed one), so that nothing the line starts
    // outlives it, however it detaches — unless the sandbox holds its processes itself
    // (bubblewrap's PID namespace ends with the command, taking everything in it).
    let contained = sandbox.is_some_and(|s| s.holds_processes);
    let mut command = match sandbox {
        Some(s) if s.holds_processes => {
            let mut c = tokio::process::Command::new(&s.program);
            c.args(&s.prefix).arg("bash");
            c
        }
        Some(s) => {
            let mut c = stepper_process::reaper::command(&s.program);
            c.args(&s.prefix).arg("bash");
            c
        }
        None => stepper_process::reaper::command("bash"),
    };
    command
        .arg("-c")
        .arg(line)
        .current_dir(&cx.cwd)
        .env_clear()
        .envs(&cx.env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let spawned = if contained {
        stepper_process::group::spawn_contained(command)
    } else {
        stepper_process::group::spawn(command)
    };
    let mut child = spawned.map_err(|e| ToolError::Failed(format!("cannot start bash: {e}")))?;
    let (Some(mut stdout), Some(mut stderr)) = (
        child.child_mut().stdout.take(),
        child.child_mut().stderr.take(),
    ) else {
        return Err(ToolError::Failed(
            "bash started without its output pipes".into(),
        ));
    };

    let started = Instant::now();
    let mut output = Capped::default();
    let (mut out_buf, mut err_buf) = ([0u8; 8192], [0u8; 8192]);
    let (mut out_open, mut err_open) = (true, true);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let ended = loop {
        if !out_open && !err_open {
            break Ended::Closed;
        }
        tokio::select! {
            () = cx.cancel.cancelled() => break Ended::Cancelled,
            () = &mut deadline => break Ended::TimedOut,
            n = stdout.read(&mut out_buf), if out_open => match n {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => output.push(&out_buf[..n], cx),
            },
            n = stderr.read(&mut err_buf), if err_open => match n {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => output.push(&err_buf[..n], cx),
            },
        }
    };
    let status = match ended {
        Ended::Closed => tokio::select! {
            () = cx.cancel.cancelled() => None,
            () = tokio::time::sleep_until(tokio::time::Instant::from_std(started + timeout)) => None,
            s = child.wait() => s.ok(),
        },
        Ended::Cancelled | Ended::TimedOut => None,
    };
    let Some(status) = status else {
        child.terminate(TERM_GRACE).await;
        if cx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        return Err(ToolError::Failed(format!(
            "timed out after {}s; the command and everything it started were killed. Output so far:\n{}",
            timeout.as_secs(),
            output.text()
        )));
    };
    Ok(Ran {
        code: status.code(),
        text: output.text(),
    })
}

enum Ended {
    Closed,
    Cancelled,
    TimedOut,
}

/// The output, streamed to clients as it comes, kept for the model as head + tail.
#[derive(Default)]
struct Capped {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    cut: usize,
}

impl Capped {
    fn push(&mut self, bytes: &[u8], cx: &ToolCx) {
        cx.output.delta(&String::from_utf8_lossy(bytes));
        let room = KEEP_HEAD.saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        self.tail.extend(rest);
        while self.tail.len() > KEEP_TAIL {
            self.tail.pop_front();
            self.cut += 1;
        }
    }

    fn text(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.head).into_owned();
        if self.cut > 0 {
            s.push_str(&format!("\n… [{} bytes of output cut] …\n", self.cut));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        s.push_str(&String::from_utf8_lossy(&tail));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use stepper_engine::tool::{Decision, Gate, OutputSink};

    #[derive(Default)]
    struct Collect(Mutex<String>);
    impl OutputSink for Collect {
        fn delta(&self, text: &str) {
            self.0.lock().unwrap().push_str(text);
        }
    }

    struct DenyAll;
    impl Gate for DenyAll {
        fn check<'a>(&'a self, _: &'a GateRequest) -> BoxFuture<'a, Decision> {
            Box::pin(async { Decision::Deny("a deny rule".into()) })
        }
    }

    fn cx(dir: &std::path::Path) -> ToolCx {
        ToolCx::permissive(dir)
    }

    #[tokio::test]
    async fn output_exit_code_cwd_and_env() {
        let dir = tempfile::tempdir().unwrap();
        let mut cx = cx(dir.path());
        cx.env
            .insert("STEPPER_TEST_VAR".into(), "from-session".into());
        let sink = Arc::new(Collect::default());
        cx.output = sink.clone();
        let out = Bash
            .call(
                json!({"command": "pwd; echo $STEPPER_TEST_VAR; echo err >&2; exit 3"}),
                &cx,
            )
            .await
            .unwrap();
        assert!(
            out.content
                .contains(&dir.path().canonicalize().unwrap().display().to_string())
                || out.content.contains(&dir.path().display().to_string())
        );
        assert!(out.content.contains("from-session") && out.content.contains("err"));
        assert!(out.content.ends_with("[exit code 3]"), "{}", out.content);
        assert_eq!(out.details.exit_code, Some(3));
        assert!(
            sink.0.lock().unwrap().contains("from-session"),
            "output streamed as it came"
        );
    }

    #[tokio::test]
    async fn long_output_is_cut_in_the_middle() {
        let dir = tempfile::tempdir().unwrap();
        let out = Bash
            .call(json!({"command": "seq 1 100000"}), &cx(dir.path()))
            .await
            .unwrap();
        assert!(out.content.starts_with("1\n2\n"));
        assert!(out.content.trim_end().ends_with("100000"));
        assert!(out.content.contains("bytes of output cut"));
        assert!(out.content.len() < KEEP_HEAD + KEEP_TAIL + 200);
    }

    #[tokio::test]
    async fn a_timeout_kills_the_tree_and_keeps_the_output() {
        let dir = tempfile::tempdir().unwrap();
        let marker = format!("{}.{}", std::process::id(), 777);
        let cmd = format!("echo started; sleep 60{marker} & sleep 60{marker}");
        let err = Bash
            .call(json!({"command": cmd, "timeout": 300}), &cx(dir.path()))
            .await
            .unwrap_err();
        match err {
            ToolError::Failed(m) => {
                assert!(m.contains("timed out") && m.contains("started"), "{m}")
            }
            other => panic!("{other:?}"),
        }
        gone(&marker, "no process survives a timeout").await;
    }

    #[tokio::test]
    async fn cancel_leaves_no_process_behind() {
        let dir = tempfile::tempdir().unwrap();
        let cx = cx(dir.path());
        let marker = format!("{}.{}", std::process::id(), 888);
        let cmd = format!("sleep 60{marker} & sleep 60{marker}");
        let cancel = cx.cancel.clone();
        let waiter = async {
            let deadline = Instant::now() + Duration::from_secs(10);
            while stepper_process::testing::processes_with(&marker).len() < 2 {
                assert!(Instant::now() < deadline, "the command did not start");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            cancel.cancel();
        };
        let (result, ()) = tokio::join!(Bash.call(json!({"command": cmd}), &cx), waiter);
        assert_eq!(result.unwrap_err(), ToolError::Cancelled);
        gone(&marker, "no process survives a cancel").await;
    }

    #[tokio::test]
    async fn the_gate_is_asked_first() {
        let dir = tempfile::tempdir().unwrap();
        let mut cx = cx(dir.path());
        cx.gate = Arc::new(DenyAll);
        let err = Bash
            .call(json!({"command": "touch made"}), &cx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::Denied(_)));
        assert!(!dir.path().join("made").exists());
        assert!(matches!(
            Bash.call(json!({"command": " "}), &cx).await,
            Err(ToolError::InvalidArguments(_))
        ));
        assert!(matches!(
            Bash.call(json!({"cmd": "ls"}), &cx).await,
            Err(ToolError::InvalidArguments(_))
        ));
    }

    /// Wait (with a deadline) until the killed processes have finished exiting.
    async fn gone(marker: &str, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !stepper_process::testing::processes_with(marker).is_empty() {
            assert!(Instant::now() < deadline, "{what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
