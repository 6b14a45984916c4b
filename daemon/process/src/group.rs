//! Children in their own process group, so that everything they start can be stopped with
//! them: a cancelled or timed-out command never leaves a grandchild behind.
//!
//! On Unix a child leads a new process group and the whole group is signalled. On Windows
//! the child is put in a Job Object that kills every process in it when its handle closes:
//! when the group is killed here, and when the daemon dies (the OS closes its handles).
//!
//! What leaves the group (`setsid cmd &`) is out of reach of its signal. A child that holds
//! its processes itself — the reaper ([`crate::reaper`]), a PID namespace — has killed them
//! by the time it ends, so nothing is looked for. Any other child's are found by the token
//! they inherit, which takes a look at every process on the machine (`/proc`, Linux).
//!
//! *A command's end looks at nothing but the command*: a group's token is searched for in every
//! process's `/proc/<pid>/stat` and `environ` only where nothing else holds the group (the login
//! shell, the CLI back-ends, systems without a reaper). Under the reaper or in bubblewrap's
//! namespace that search found nothing, yet a bash call cost the daemon 4.1 ms of CPU on a machine
//! of 94 processes and 39 ms on one of 1092; now 1.4 and 1.0 ms, most of it the call's events and
//! the gate (`cargo bench -p stepper-e2e --bench bash`: a turn running `true` next to one reading a
//! file). The spawn itself was already glibc's `posix_spawn` (a `clone3` with `CLONE_VM |
//! CLONE_VFORK`): nothing sets `pre_exec`, a uid or a group, and the program is a path (the
//! reaper's, the helper's), so std never falls back to `fork`.

use std::io;
use std::time::Duration;

/// A spawned child leading its own process group; the group is killed when this is dropped
/// before the child was reaped.
pub struct GroupChild {
    child: tokio::process::Child,
    pid: Option<u32>,
    /// What every process of the group inherits in `STEPPER_GROUP`.
    token: String,
    /// The child holds every process it starts (the reaper, a PID namespace): what is left
    /// once it ended is nothing to look for.
    holds_its_processes: bool,
    reaped: bool,
    /// The job holding the child's tree (Windows); dropping it kills the tree.
    #[cfg(windows)]
    job: Option<win32job::Job>,
}

/// Spawn `command` as the leader of a new process group. A command built with
/// [`crate::reaper::command`] runs under the reaper, which holds what it starts; any other
/// is followed by its token once it ends.
pub fn spawn(command: tokio::process::Command) -> io::Result<GroupChild> {
    let held = crate::reaper::runs(&command);
    spawn_group(command, held)
}

/// [`spawn`] for a command that holds every process it starts itself, as a PID namespace
/// does (bubblewrap's ends with the command, and everything in it with it): once it ends,
/// nothing of it is looked for outside its group.
pub fn spawn_contained(command: tokio::process::Command) -> io::Result<GroupChild> {
    spawn_group(command, true)
}

fn spawn_group(mut command: tokio::process::Command, held: bool) -> io::Result<GroupChild> {
    #[cfg(unix)]
    command.process_group(0);
    command.kill_on_drop(true);
    // Whatever the group starts inherits the token, so a daemon that finds the group's
    // leader gone after a crash can still tell its processes from anyone else's.
    let token = crate::registry::new_token();
    command.env(crate::registry::GROUP_VAR, &token);
    let child = crate::lineage::spawn(&mut command)?;
    let pid = child.id();
    if let Some(pid) = pid {
        crate::registry::record(pid, &token);
    }
    Ok(GroupChild {
        #[cfg(windows)]
        job: job_for(&child),
        child,
        pid,
        token,
        holds_its_processes: held,
        reaped: false,
    })
}

/// A job that kills `child`'s tree when it closes. What the child started before it was
/// assigned is not in it (it is assigned at once, before it can have started much).
#[cfg(windows)]
fn job_for(child: &tokio::process::Child) -> Option<win32job::Job> {
    let handle = child.raw_handle()? as isize;
    let mut info = win32job::ExtendedLimitInfo::new();
    info.limit_kill_on_job_close();
    let job = win32job::Job::create_with_limit_info(&info).ok()?;
    job.assign_process(handle).ok()?;
    Some(job)
}

impl GroupChild {
    /// The child's standard streams, to read while it runs.
    pub fn child_mut(&mut self) -> &mut tokio::process::Child {
        &mut self.child
    }

    /// Wait for the child (not its group) to exit.
    pub async fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        let status = self.child.wait().await?;
        self.reaped = true;
        // What the child left running in its group goes with it.
        self.signal_group(Signal::Kill);
        Ok(status)
    }

    /// Stop the whole group: SIGTERM, then SIGKILL after `grace` if the child still runs.
    pub async fn terminate(&mut self, grace: Duration) {
        self.signal_group(Signal::Term);
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            self.signal_group(Signal::Kill);
            let _ = self.child.wait().await;
        }
        self.reaped = true;
        self.signal_group(Signal::Kill);
    }

    fn signal_group(&mut self, signal: Signal) {
        #[cfg(unix)]
        if let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok()) {
            use nix::sys::signal::{Signal as S, killpg};
            let s = match signal {
                Signal::Term => S::SIGTERM,
                Signal::Kill => S::SIGKILL,
            };
            // ESRCH: the group is already gone, which is the point.
            let _ = killpg(nix::unistd::Pid::from_raw(pid), s);
        }
        if let (Signal::Kill, true, Some(pid)) = (signal, self.reaped, self.pid) {
            self.forget_if_gone(pid);
        }
        // Closing the job kills its whole tree.
        #[cfg(windows)]
        if let Signal::Kill = signal {
            self.job.take();
        }
        #[cfg(not(any(unix, windows)))]
        let _ = signal;
    }
}

impl GroupChild {
    /// The group (led by `pid`) is over: forget it once nothing of it is left. Processes that
    /// left the group still carry its token; the entry stays while any survives, so a sweep
    /// (or the next daemon) finishes what a kill started. A child that holds its processes
    /// left none: a killed reaper's go to the daemon, which kills what it did not spawn
    /// ([`crate::lineage`]).
    fn forget_if_gone(&self, pid: u32) {
        if self.holds_its_processes || crate::registry::kill_carriers(&self.token) == 0 {
            crate::registry::forget(pid);
        }
    }
}

#[derive(Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        if !self.reaped {
            self.signal_group(Signal::Kill);
            // kill_on_drop reaps the leader; its group was just killed, and what left it.
            if let Some(pid) = self.pid {
                self.forget_if_gone(pid);
            }
        }
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;

    async fn gone(marker: &str) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !crate::testing::processes_with(marker).is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "a process survived its group"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    #[cfg(target_os = "linux")]
    async fn what_left_the_group_with_setsid_goes_too() {
        let marker = format!("{}.{}", std::process::id(), 4343);
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("sleeper.pid");
        // The leader ends once the sleeper is in a session of its own (it wrote its pid).
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args([
            "-c",
            &format!(
                "setsid sh -c 'echo $$ > {p}; exec sleep 301{marker}' </dev/null >/dev/null 2>&1 & \
                 while [ ! -s {p} ]; do :; done",
                p = pidfile.display()
            ),
        ]);
        let mut child = spawn(cmd).unwrap();
        child.wait().await.unwrap();
        gone(&marker).await;
    }

    #[tokio::test]
    async fn terminate_takes_the_grandchildren_too() {
        let marker = format!("{}.{}", std::process::id(), 4242);
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", &format!("sleep 60{marker} & sleep 60{marker} & wait")]);
        // `sleep 60<pid>.4242` is a valid (long) duration and a unique command line.
        let mut child = spawn(cmd).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while crate::testing::processes_with(&marker).len() < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "children did not start"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        child.terminate(Duration::from_secs(2)).await;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !crate::testing::processes_with(&marker).is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "a grandchild survived"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
