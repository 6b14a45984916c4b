//! OS problems only: spawning children in their own process group (a Job Object on Windows),
//! killing whole trees, the child registry that survives a daemon crash (pid + start time),
//! the daemon's lineage (a child subreaper: what a command starts stays beneath it, and a
//! socket's peer can be told to descend from it) with the reaper every command runs under,
//! the login shell's environment, how much memory a process tree holds, and the OS sandbox
//! for commands. Knows nothing of sessions or tools.
//!
//! It depends on no other stepper crate, and a test keeps it that way.

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
