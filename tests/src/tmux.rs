//! Real terminals for the TUI tests: a tmux server of the test's own (its socket in a temp
//! folder, so a user's tmux is never touched and tests run in parallel), shells in it with
//! exactly the test's environment, keys typed into them and their screens read back.
//! Dropping it kills the server and with it every process in its panes.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::env::{TestEnv, bin_dir};

/// Columns and rows of every pane: wide enough that a status line is never cut.
pub const WIDTH: u16 = 120;
pub const HEIGHT: u16 = 40;

/// How long a pane may take to show what a test waits for.
pub const TIMEOUT: Duration = Duration::from_secs(20);

pub struct Tmux {
    /// Holds the server's socket; removed after the server is gone.
    _dir: tempfile::TempDir,
    socket: PathBuf,
    cwd: PathBuf,
    envs: Vec<(String, String)>,
}

/// One pane running a shell, addressed by its pane id (`%3`).
pub struct Pane<'a> {
    tmux: &'a Tmux,
    id: String,
}

impl Tmux {
    /// Whether tmux is installed; a test that needs it returns early when not (see `needs`).
    pub fn available() -> bool {
        crate::needs::program("tmux", "this TUI test", "apt-get install tmux")
    }

    /// A server whose shells run in `env`'s project folder with `env`'s environment and the
    /// binaries under test first on `PATH`, so a test types `stepper ...` as a user would.
    /// The server itself starts with the first shell.
    pub fn new(env: &TestEnv) -> Tmux {
        let dir = tempfile::Builder::new()
            .prefix("tmx")
            .tempdir_in("/tmp")
            .expect("temp dir for the tmux socket");
        let socket = dir.path().join("sock");
        let mut envs = env.envs();
        for (k, v) in &mut envs {
            if k == "PATH" {
                *v = format!("{}:{v}", bin_dir().display());
            }
        }
        Tmux {
            _dir: dir,
            socket,
            cwd: env.project.path().to_path_buf(),
            envs,
        }
    }

    /// Runs `tmux ARGS` on this server; panics with tmux's own words when it fails.
    pub fn tmux(&self, args: &[&str]) -> Output {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            // No user configuration: the same tmux for every test on every machine.
            .args(["-f", "/dev/null"])
            .args(args)
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run tmux ({e}): the TUI tests drive the real binaries in tmux; \
                     install it (apt-get install tmux)"
                )
            });
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// A new shell in a tmux session of its own, `WIDTH`×`HEIGHT`, with a prompt of `$ `.
    pub fn shell(&self) -> Pane<'_> {
        // `env -i`: the tmux server's environment (the test process's) must not leak in.
        // TERM=screen: what tmux emulates, and in every terminfo database.
        let mut command = String::from("exec env -i TERM=screen PS1='$ '");
        for (k, v) in &self.envs {
            command.push_str(&format!(" {k}={}", quote(v)));
        }
        command.push_str(" /bin/sh");
        let size = format!("{WIDTH}x{HEIGHT}");
        let (w, h) = (WIDTH.to_string(), HEIGHT.to_string());
        let cwd = self.cwd.display().to_string();
        let out = self.tmux(&[
            // Options first, in the same call, so they hold for the server this may start:
            // no wait after Esc (an Esc must reach the TUI as an Esc, at once), room for a
            // whole session in scrollback, and a pane that stays to be read when its shell
            // dies.
            "set-option",
            "-s",
            "escape-time",
            "0",
            ";",
            "set-option",
            "-g",
            "history-limit",
            "20000",
            ";",
            "set-option",
            "-g",
            "default-size",
            &size,
            ";",
            "set-option",
            "-g",
            "remain-on-exit",
            "on",
            ";",
            "new-session",
            "-d",
            "-x",
            &w,
            "-y",
            &h,
            "-c",
            &cwd,
            "-P",
            "-F",
            "#{pane_id}",
            &command,
        ]);
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(id.starts_with('%'), "tmux gave no pane id: {id:?}");
        let pane = Pane { tmux: self, id };
        pane.wait_for("the shell's prompt", |s| s.trim_end().ends_with('$'));
        pane
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // A failed test still ends every process it started in a pane — at once, with
        // SIGKILL: a TUI that took the server's SIGHUP late could otherwise see the test's
        // daemon go (the test's end kills it) and start another where nothing cleans up.
        let panes = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["list-panes", "-a", "-F", "#{pane_pid}"])
            .output();
        if let Ok(panes) = panes {
            let roots: Vec<u32> = String::from_utf8_lossy(&panes.stdout)
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect();
            for pid in descendants(&roots) {
                if let Ok(pid) = i32::try_from(pid) {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
        }
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// `roots` and every process below them, from `/proc`'s parent links.
fn descendants(roots: &[u32]) -> Vec<u32> {
    let links: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // After the command's name (in parentheses): state, then the parent.
            let rest = stat.get(stat.rfind(')')? + 2..)?;
            let ppid = rest.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut found = roots.to_vec();
    let mut next = 0;
    while let Some(&parent) = found.get(next) {
        for &(pid, ppid) in &links {
            if ppid == parent && !found.contains(&pid) {
                found.push(pid);
            }
        }
        next += 1;
    }
    found
}

impl Pane<'_> {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Types `text` as is (no key names are looked up).
    pub fn type_text(&self, text: &str) {
        self.tmux.tmux(&["send-keys", "-t", &self.id, "-l", text]);
    }

    /// Presses one key by its tmux name: `Enter`, `Escape`, `C-d`, `y`.
    pub fn press(&self, key: &str) {
        self.tmux.tmux(&["send-keys", "-t", &self.id, key]);
    }

    /// Types a command line into the shell and runs it.
    pub fn run(&self, line: &str) {
        self.type_text(line);
        self.press("Enter");
    }

    /// What the pane shows now, line ends trimmed.
    pub fn screen(&self) -> String {
        self.capture(&[])
    }

    /// Everything the pane has shown that is still kept: its scrollback, then its screen.
    pub fn history(&self) -> String {
        self.capture(&["-S", "-"])
    }

    fn capture(&self, extra: &[&str]) -> String {
        let mut args = vec!["capture-pane", "-p", "-J", "-t", &self.id];
        args.extend_from_slice(extra);
        let out = self.tmux.tmux(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines: Vec<&str> = text.lines().map(str::trim_end).collect();
        while lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        lines.join("\n")
    }

    /// Polls the screen until `check` holds, and returns that screen; panics after
    /// [`TIMEOUT`] with `what` and the last screen seen.
    pub fn wait_for(&self, what: &str, check: impl FnMut(&str) -> bool) -> String {
        self.wait_in(what, Pane::screen, check)
    }

    /// `wait_for` on the whole history (scrollback and screen).
    pub fn wait_for_history(&self, what: &str, check: impl FnMut(&str) -> bool) -> String {
        self.wait_in(what, Pane::history, check)
    }

    /// Waits until the screen shows `text`.
    pub fn wait_for_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?}"), |s| s.contains(text))
    }

    fn wait_in(
        &self,
        what: &str,
        read: impl Fn(&Self) -> String,
        mut check: impl FnMut(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let shown = read(self);
            if check(&shown) {
                return shown;
            }
            assert!(
                Instant::now() < deadline,
                "pane {} did not show {what} within {TIMEOUT:?}; it shows:\n{shown}",
                self.id
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `s` single-quoted for `sh`.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
