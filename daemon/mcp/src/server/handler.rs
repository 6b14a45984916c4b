//! What the client answers and does with what a server sends on its own: roots, elicitation
//! and sampling (asked of the running call's gate), a changed tool list (listed again at
//! once), and progress (to the running call's output).

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[allow(deprecated)] // Root and ListRootsResult: see `Handler`.
use rmcp::model::{
    ClientCapabilities, ClientConfig, ErrorData, Implementation, ListRootsResult, NumberOrString,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, Root, Tool,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RequestContext, RoleClient, RunningService,
};
use stepper_engine::tool::{
    Decision, ElicitAnswer, Elicitation, Gate, GateRequest, OutputSink, Sampler, Sampling,
};

/// What the client answers and does with what a server sends on its own: the roots are the
/// session's folder (roots, deprecated in the 2026-07-28 revision, still serve servers of
/// 2025-11-25); elicitation and sampling (when offered) go to the latest running call; a
/// changed tool list is listed again at once (the next model call sees it); progress of a
/// running call goes to that call's output.
#[derive(Clone)]
pub(super) struct Handler {
    pub(super) root: PathBuf,
    pub(super) tools: Arc<Mutex<Vec<Tool>>>,
    /// Running calls' outputs, by progress token.
    pub(super) progress: Arc<Mutex<HashMap<String, Arc<dyn OutputSink>>>>,
    /// Who answers elicitation and sampling: the running calls, latest last.
    pub(super) callers: Callers,
    /// Changes the server announced, and the last one whose listing is done: a call that
    /// saw a change returns once its listing is in (the next model call sees the tools).
    pub(super) relist: Relist,
    /// Sampling is offered (`mcpSampling`).
    pub(super) sampling: bool,
    pub(super) name: String,
}

#[derive(Clone, Default)]
pub(super) struct Relist {
    pub(super) announced: Arc<std::sync::atomic::AtomicU64>,
    pub(super) listed: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Relist {
    /// Wait (briefly) until every change announced so far is listed.
    pub(super) async fn settled(&self) {
        let want = self.announced.load(std::sync::atomic::Ordering::SeqCst);
        let mut listed = self.listed.subscribe();
        let _ = tokio::time::timeout(Duration::from_secs(5), listed.wait_for(|n| *n >= want)).await;
    }
}

/// The running calls' gates and samplers, by call. A stdio server's request names no call,
/// so it goes to the latest (nearly always the only one).
pub(super) type Callers = Arc<Mutex<Vec<Caller>>>;

/// A running call, as its server's requests reach it.
#[derive(Clone)]
pub(super) struct Caller {
    pub(super) call: u64,
    pub(super) gate: Arc<dyn Gate>,
    pub(super) sampler: Option<Arc<dyn Sampler>>,
}

impl Handler {
    /// The latest running call's gate and sampler.
    pub(super) fn caller(&self) -> Option<Caller> {
        self.callers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last()
            .cloned()
    }

    /// Serve over `transport`, each `tools/list_changed` counted as it is read.
    pub(super) fn serve<T: rmcp::transport::Transport<RoleClient> + 'static>(
        self,
        transport: T,
        lifecycle: ClientLifecycleMode,
    ) -> impl Future<
        Output = Result<RunningService<RoleClient, Handler>, rmcp::service::ClientInitializeError>,
    > {
        let announced = Arc::clone(&self.relist.announced);
        self.serve_with_lifecycle(crate::watch::Watching::new(transport, announced), lifecycle)
    }
}

#[allow(deprecated)]
impl rmcp::ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.roots = Some(Default::default());
        if self.sampling {
            capabilities.sampling = Some(Default::default());
        }
        capabilities.elicitation = Some(
            rmcp::model::ElicitationCapability::new()
                .with_form(rmcp::model::FormElicitationCapability::new()),
        );
        ClientConfig::new(
            capabilities,
            Implementation::new("stepper", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    fn list_roots(
        &self,
        _: RequestContext<RoleClient>,
    ) -> impl Future<Output = Result<ListRootsResult, ErrorData>> + Send + '_ {
        let uri = file_uri(&self.root);
        let mut root = Root::new(uri);
        root.name = self
            .root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        std::future::ready(Ok(ListRootsResult::new(vec![root])))
    }

    fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> impl Future<Output = Result<rmcp::model::ElicitResult, ErrorData>> + Send + '_ {
        use rmcp::model::{ElicitResult, ElicitationAction};
        let gate = self.caller().map(|c| c.gate);
        let server = self.name.clone();
        async move {
            let Some(gate) = gate else {
                // No call of ours is running: nobody to ask.
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            };
            let rmcp::model::ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } = request
            else {
                // A URL to open: not offered.
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            };
            let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
            let asked = Elicitation {
                server,
                message,
                schema: schema.clone(),
            };
            Ok(match gate.elicit(&asked).await {
                ElicitAnswer::Accept(mut content) => {
                    with_defaults(&schema, &mut content);
                    let mut result = ElicitResult::new(ElicitationAction::Accept);
                    result.content = Some(serde_json::Value::Object(content));
                    result
                }
                ElicitAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
                ElicitAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
            })
        }
    }

    fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _: RequestContext<RoleClient>,
    ) -> impl Future<Output = Result<rmcp::model::CreateMessageResult, ErrorData>> + Send + '_ {
        let caller = self.caller();
        let (server, offered) = (self.name.clone(), self.sampling);
        async move {
            let refused = |why: &str| ErrorData::invalid_request(why.to_string(), None);
            if !offered {
                return Err(refused(
                    "stepper does not lend its model to MCP servers unless mcpSampling is on",
                ));
            }
            let Some(Caller {
                gate,
                sampler: Some(sampler),
                ..
            }) = caller
            else {
                return Err(refused("no call of this server is running to ask for"));
            };
            let messages: Vec<(stepper_engine::Role, String)> = params
                .messages
                .iter()
                .map(|m| {
                    let role = match m.role {
                        rmcp::model::Role::Assistant => stepper_engine::Role::Assistant,
                        rmcp::model::Role::User => stepper_engine::Role::User,
                    };
                    (
                        role,
                        sampling_text(&serde_json::to_value(&m.content).unwrap_or_default()),
                    )
                })
                .collect();
            let first = messages.first().map(|(_, t)| t.clone()).unwrap_or_default();
            let asked = GateRequest::Mcp {
                server: server.clone(),
                tool: "sampling/createMessage".into(),
                arguments: first.chars().take(2000).collect(),
                annotations: Some(format!(
                    "the server asks to use the session's model: {} messages, up to {} tokens",
                    messages.len(),
                    params.max_tokens
                )),
            };
            match gate.check(&asked).await {
                Decision::Allow => {}
                Decision::Deny(why) | Decision::DenyAndStop(why) => {
                    return Err(refused(&format!("declined: {why}")));
                }
                Decision::AllowChanged(_) => {
                    return Err(refused("declined: a hook would change the request"));
                }
            }
            let request = Sampling {
                server,
                messages,
                system: params.system_prompt.clone(),
                max_tokens: params.max_tokens,
            };
            let (text, model) = sampler
                .sample(&request)
                .await
                .map_err(|e| ErrorData::internal_error(e, None))?;
            let mut result = rmcp::model::CreateMessageResult::new(
                rmcp::model::SamplingMessage::assistant_text(text),
                model,
            );
            result.stop_reason = Some("endTurn".into());
            Ok(result)
        }
    }

    fn on_tool_list_changed(
        &self,
        context: rmcp::service::NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let tools = Arc::clone(&self.tools);
        let name = self.name.clone();
        let relist = self.relist.clone();
        // Counted already, as it was read (see `watch.rs`): this listing covers it.
        let change = relist.announced.load(std::sync::atomic::Ordering::SeqCst);
        tokio::spawn(async move {
            match context.peer.list_all_tools().await {
                Ok(listed) => *tools.lock().unwrap_or_else(|p| p.into_inner()) = listed,
                Err(e) => {
                    tracing::warn!(server = %name, "could not list changed tools: {e}");
                }
            }
            relist.listed.send_if_modified(|n| {
                let newer = *n < change;
                if newer {
                    *n = change;
                }
                newer
            });
        });
        std::future::ready(())
    }

    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let key = token_key(&params.progress_token);
        let sink = self
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        if let Some(sink) = sink {
            let amount = match params.total {
                Some(total) => format!("{}/{}", params.progress, total),
                None => params.progress.to_string(),
            };
            let line = match &params.message {
                Some(message) => format!("progress {amount}: {message}\n"),
                None => format!("progress {amount}\n"),
            };
            sink.delta(&line);
        }
        std::future::ready(())
    }
}

/// The text of a sampling message's content (one block or several).
fn sampling_text(content: &serde_json::Value) -> String {
    let blocks = match content {
        serde_json::Value::Array(blocks) => blocks.as_slice(),
        one => std::slice::from_ref(one),
    };
    blocks
        .iter()
        .map(|b| match b["type"].as_str() {
            Some("text") => b["text"].as_str().unwrap_or("").to_string(),
            Some(kind) => format!("[{kind}]"),
            None => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The fields left out of an accepted form take the schema's defaults (SEP-1034).
pub fn with_defaults(
    schema: &serde_json::Value,
    content: &mut serde_json::Map<String, serde_json::Value>,
) {
    let Some(properties) = schema["properties"].as_object() else {
        return;
    };
    for (name, property) in properties {
        if let Some(default) = property.get("default")
            && !content.contains_key(name)
        {
            content.insert(name.clone(), default.clone());
        }
    }
}

/// `file://` and the folder, with what a URI cannot hold as it is escaped.
pub(super) fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                uri.push(byte as char);
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

pub(super) fn token_key(token: &ProgressToken) -> String {
    match &token.0 {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_file_uris() {
        assert_eq!(
            file_uri(Path::new("/home/a b/ü")),
            "file:///home/a%20b/%C3%BC"
        );
    }
}
