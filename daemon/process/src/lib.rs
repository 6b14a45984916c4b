//! OS problems only: spawning children in their own process group (a Job Object on Windows),
//! killing whole trees, the child registry that survives a daemon crash (pid + start time),
//! the daemon's lineage (a child subreaper: what a command starts stays beneath it, and a
//! socket's peer can be told to descend from it) with the reaper every command runs under,
//! the login shell's environment, how much memory a process tree holds, and the OS sandbox
//! for commands. Knows nothing of sessions or tools.
//!
//! It depends on no other stepper crate, and a test keeps it that way.
//!
//! **Nothing a command starts outlives its call.** Every bash line, hook and MCP server runs under
//! the reaper (a bubblewrap-sandboxed line in its own PID namespace instead, which ends with it),
//! which kills what is left beneath it when its program ends; what a killed reaper leaves is
//! re-parented to the daemon, which kills every child it did not spawn (at each SIGCHLD, at each
//! turn's end, and all of them at stop). So every child the daemon starts goes through
//! `stepper_process` (`group::spawn` or `lineage::spawn`): one that does not is a stranger, and is
//! killed.

pub mod group;
pub mod guard;
mod helper_args;
pub mod lineage;
pub mod login_env;
pub mod memory;
pub mod reaper;
pub mod registry;
pub mod sandbox;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod tree;
