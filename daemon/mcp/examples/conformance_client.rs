//! The client the official MCP conformance suite drives (`@modelcontextprotocol/conformance
//! client --command …`): stepper's MCP client (`stepper-mcp`), connected to the scenario's
//! server (the last argument), doing what `MCP_CONFORMANCE_SCENARIO` asks. An elicitation is
//! accepted with nothing entered, so the schema's defaults apply as stepper applies them. A
//! server that asks for authorization is signed in to as `stepper mcp login` does, the
//! "browser" following the authorization server's redirect back to the client's listener,
//! and again when a call needs a wider scope. The scenario's client (its context) is the
//! server's `oauth` setting: a pre-registered client, or a machine client with a secret or a
//! private key (written to a file of this run's, as `oauth.privateKeyFile` names one).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use stepper_engine::tool::{Decision, ElicitAnswer, Elicitation, Gate, GateRequest};
use stepper_mcp::{McpServer, ServerSpec, Transport};

/// The user who accepts every form as it comes.
struct Accepting;

impl Gate for Accepting {
    fn check<'a>(&'a self, _: &'a GateRequest) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::Allow })
    }

    fn elicit<'a>(&'a self, request: &'a Elicitation) -> BoxFuture<'a, ElicitAnswer> {
        eprintln!("elicitation from {}: {}", request.server, request.message);
        Box::pin(async { ElicitAnswer::Accept(Default::default()) })
    }
}

/// A folder of this run's own for the tokens.
fn tempfile_dir() -> Result<std::path::PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("stepper-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    Ok(dir)
}

/// The client the scenario registered beforehand (`auth/pre-registration`, the
/// `client-credentials-*` ones), as a server's `oauth` settings name one; its private key
/// goes to a file in `dir`.
fn client(
    context: &serde_json::Value,
    dir: &std::path::Path,
) -> Result<Option<stepper_mcp::OAuthClient>, String> {
    let Some(client_id) = context["client_id"].as_str() else {
        return Ok(None);
    };
    let private_key_file = match context["private_key_pem"].as_str() {
        Some(pem) => {
            let path = dir.join("client-key.pem");
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create(true).truncate(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(&path).map_err(|e| e.to_string())?;
            std::io::Write::write_all(&mut file, pem.as_bytes()).map_err(|e| e.to_string())?;
            Some(path)
        }
        None => None,
    };
    Ok(Some(stepper_mcp::OAuthClient {
        client_id: client_id.to_string(),
        client_secret: context["client_secret"]
            .as_str()
            .map(|s| stepper_mcp::Secret::new(s.to_string())),
        callback_port: None,
        grant: None,
        private_key_file,
    }))
}

/// Sign in: the authorization URL is fetched without following its redirect, and the
/// redirect (to the client's listener, with the code) is followed by hand.
async fn sign_in(
    url: String,
    tokens: stepper_mcp::oauth::TokenFile,
    client: Option<stepper_mcp::OAuthClient>,
) -> Result<(), String> {
    let login = stepper_mcp::oauth::begin_login(&url, &tokens, client.as_ref())
        .await
        .map_err(|e| e.to_string())?;
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let answer = browser
        .get(&login.url)
        .send()
        .await
        .map_err(|e| format!("the authorization URL: {e}"))?;
    let back = answer
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .ok_or_else(|| format!("the authorization server answered {}", answer.status()))?
        .to_string();
    browser
        .get(&back)
        .send()
        .await
        .map_err(|e| format!("the way back: {e}"))?;
    login
        .finish(Duration::from_secs(20))
        .await
        .map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1).filter(|a| !a.is_empty()) else {
        eprintln!("usage: conformance_client URL (with MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&url, &scenario)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("{scenario}: {why}");
            ExitCode::FAILURE
        }
    }
}

async fn run(url: &str, scenario: &str) -> Result<(), String> {
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let dir = tempfile_dir()?;
    let context: serde_json::Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let oauth = client(&context, &dir)?;
    let spec = ServerSpec {
        name: "conformance".into(),
        transport: Transport::Http {
            url: url.into(),
            headers: Default::default(),
            sse: false,
            oauth: oauth.clone(),
        },
        sampling: false,
    };
    let tokens = stepper_mcp::oauth::TokenFile::new(dir.join("tokens.json"));
    let timeout = Duration::from_secs(20);
    let env = Default::default();
    let server = match McpServer::connect_signed(&spec, &env, &cwd, timeout, Some(&tokens)).await {
        Ok(server) => server,
        Err(e) if e.message.starts_with(stepper_mcp::server::NEEDS_LOGIN) => {
            sign_in(url.to_string(), tokens.clone(), oauth.clone()).await?;
            McpServer::connect_signed(&spec, &env, &cwd, timeout, Some(&tokens))
                .await
                .map_err(|e| e.to_string())?
        }
        Err(e) => return Err(e.to_string()),
    };
    let tools: Vec<String> = server.tools().iter().map(|t| t.name.to_string()).collect();
    println!(
        "connected ({}); tools: {}",
        server.protocol_version,
        tools.join(", ")
    );
    let (tool, args) = match scenario {
        "initialize" => return Ok(()),
        "tools_call" => ("add_numbers", serde_json::json!({"a": 2, "b": 3})),
        _ => match tools.first() {
            Some(first) => (first.as_str(), serde_json::json!({})),
            None => return Ok(()),
        },
    };
    let gate: Arc<dyn Gate> = Arc::new(Accepting);
    let again: stepper_mcp::server::SignIn = {
        let (url, tokens) = (url.to_string(), tokens.clone());
        Arc::new(move || Box::pin(sign_in(url.clone(), tokens.clone(), oauth.clone())))
    };
    let result = server
        .call(
            tool,
            args,
            Duration::from_secs(20),
            stepper_mcp::CallWith {
                gate: Some(gate),
                sign_in: Some(again),
                ..Default::default()
            },
        )
        .await?;
    println!(
        "{tool}: {}",
        serde_json::to_string(&result).unwrap_or_default()
    );
    Ok(())
}
