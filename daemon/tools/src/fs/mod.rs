//! File tools: read, write, edit, multi_edit, ls, and apply_patch (offered to the model
//! families trained on it). Each resolves its path (symlinks followed)
//! before it asks the gate, so the permission check and the file system see the same file, and
//! every change is shown to the gate as a unified diff before anything is written.
//!
//! A change goes through `file` (gate, then one atomic write). Edits match `old_string` exactly
//! (`replace`); only when that fails does `near_miss` take the one place it fits once trailing
//! whitespace or a uniform indentation shift is forgiven, re-indenting `new_string`, never choosing
//! between two. `patch` applies a whole multi-file patch in memory and writes all of it or, if a
//! write fails, puts back what it wrote.

mod diff;
mod edit;
mod file;
mod ls;
mod near_miss;
mod patch;
mod path;
mod read;
mod replace;
mod write;

use std::sync::Arc;

use stepper_engine::tool::{Tool, ToolError};

pub use edit::{EditTool, MultiEditTool};
pub use ls::LsTool;
pub use patch::ApplyPatch;
pub use read::ReadTool;
pub use write::WriteTool;

/// The file tools, ready to register.
pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadTool),
        Arc::new(WriteTool),
        Arc::new(EditTool),
        Arc::new(MultiEditTool),
        Arc::new(LsTool),
    ]
}

/// Runs blocking file work off the runtime. The caller awaits the task, so it always has an
/// owner; a long loop inside `f` watches the call's cancellation token itself.
async fn blocking<T, F>(f: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::Failed(format!("the file task stopped unexpectedly: {e}")))?
}

#[cfg(test)]
pub(crate) mod testing {
    //! A gate that records what it was asked and answers as told, for the tools' tests.

    use std::path::Path;
    use std::sync::{Arc, Mutex};

    use futures::future::BoxFuture;
    use stepper_engine::tool::{Decision, Gate, GateRequest, ToolCx};

    /// How a [`RecordingGate`] answers a request; it may also act on the world first, as a
    /// user could while a question waits.
    type Answer = Box<dyn Fn(&GateRequest) -> Decision + Send + Sync>;

    pub(crate) struct RecordingGate {
        requests: Mutex<Vec<GateRequest>>,
        answer: Answer,
    }

    impl RecordingGate {
        pub(crate) fn requests(&self) -> Vec<GateRequest> {
            self.requests.lock().unwrap().clone()
        }
    }

    impl Gate for RecordingGate {
        fn check<'a>(&'a self, request: &'a GateRequest) -> BoxFuture<'a, Decision> {
            self.requests.lock().unwrap().push(request.clone());
            let decision = (self.answer)(request);
            Box::pin(async move { decision })
        }
    }

    /// A context rooted at `dir` whose gate records every request and answers `decision`.
    pub(crate) fn cx(dir: &Path, decision: Decision) -> (ToolCx, Arc<RecordingGate>) {
        answering(dir, move |_| decision.clone())
    }

    /// A context rooted at `dir` whose gate records every request and answers with `answer`.
    pub(crate) fn answering(
        dir: &Path,
        answer: impl Fn(&GateRequest) -> Decision + Send + Sync + 'static,
    ) -> (ToolCx, Arc<RecordingGate>) {
        let gate = Arc::new(RecordingGate {
            requests: Mutex::new(Vec::new()),
            answer: Box::new(answer),
        });
        let mut cx = ToolCx::permissive(dir);
        cx.gate = gate.clone();
        (cx, gate)
    }

    /// A context rooted at `dir` that allows everything and records what it was asked.
    pub(crate) fn allow(dir: &Path) -> (ToolCx, Arc<RecordingGate>) {
        cx(dir, Decision::Allow)
    }

    /// A context rooted at `dir` that refuses everything.
    pub(crate) fn deny(dir: &Path) -> (ToolCx, Arc<RecordingGate>) {
        cx(dir, Decision::Deny("the user said no".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_have_distinct_names_and_object_schemas() {
        let tools = tools();
        let mut names: Vec<String> = tools.iter().map(|t| t.spec().name).collect();
        assert_eq!(names, ["read", "write", "edit", "multi_edit", "ls"]);
        names.dedup();
        assert_eq!(names.len(), 5);
        for tool in &tools {
            let spec = tool.spec();
            assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
            assert!(spec.input_schema["required"].is_array(), "{}", spec.name);
            assert!(
                spec.description.len() > 100,
                "{} needs a real description",
                spec.name
            );
        }
        let read_only: Vec<bool> = tools.iter().map(|t| t.read_only()).collect();
        assert_eq!(read_only, [true, false, false, false, true]);
    }
}
