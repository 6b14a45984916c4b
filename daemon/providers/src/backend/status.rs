//! `backends/list`: each agent CLI stepper can drive — where it is, its version, what it
//! says of its login (`claude auth status`, `codex login status`) and the MCP servers it
//! has (`claude mcp list`, `codex mcp list --json`). Every command runs with the
//! environment a turn would give the CLI, each with a timeout; a failure is said in the
//! entry, never an error of the whole listing.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use stepper_engine::config::{BackendAuth, ProviderConfig};
use stepper_protocol::methods::{BackendMcpServer, BackendStatus, McpTransport};
use stepper_protocol::session::Env;

use super::{BackendSpec, Cli, locate, mcp_list, version};

/// How long a status command may take (`mcp list` checks every server's health).
const TIMEOUT: Duration = Duration::from_secs(30);

/// What a command printed, or why it could not run.
struct Ran {
    ok: bool,
    stdout: String,
    stderr: String,
}

async fn run(program: &Path, args: &[&str], env: &Env, cwd: &Path) -> Result<Ran, String> {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .env_clear()
        .envs(env.iter())
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    // Spawned as the daemon's own child: a stranger beneath it would be killed.
    let child = stepper_process::lineage::spawn(&mut command)
        .map_err(|e| format!("cannot run `{}`: {e}", args.join(" ")))?;
    let out = tokio::time::timeout(TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| {
            format!(
                "`{}` gave no answer in {}s",
                args.join(" "),
                TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| format!("cannot run `{}`: {e}", args.join(" ")))?;
    Ok(Ran {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// The status of `cli`, set up by `config` (its `command` and `auth`), for a session in `cwd`
/// with `env`.
pub async fn status(
    cli: Cli,
    config: Option<&ProviderConfig>,
    env: &Env,
    cwd: &Path,
) -> BackendStatus {
    let mut status = BackendStatus {
        name: cli.provider().into(),
        title: cli.title().into(),
        program: None,
        version: None,
        problem: None,
        logged_in: None,
        login: None,
        mcp_servers: Vec::new(),
        mcp_problem: None,
    };
    let command = config.and_then(|c| c.command.as_deref());
    let program = match locate(cli, command, env) {
        Ok(p) => p,
        Err(e) => {
            status.problem = Some(e.to_string());
            return status;
        }
    };
    status.program = Some(program.display().to_string());
    match version(cli, &program, env).await {
        Ok(v) => status.version = Some(v.to_string()),
        Err(e) => {
            status.problem = Some(e.to_string());
            return status;
        }
    }
    let spec = BackendSpec {
        cli,
        command: command.map(str::to_string),
        auth: config.and_then(|c| c.auth).unwrap_or(BackendAuth::Auto),
        model: None,
        login: Vec::new(),
        project_trusted: false,
    };
    let env = spec.environment(env);
    let (login, servers) = match cli {
        Cli::ClaudeCode => tokio::join!(
            run(&program, &["auth", "status"], &env, cwd),
            run(&program, &["mcp", "list"], &env, cwd),
        ),
        Cli::CodexCli => tokio::join!(
            run(&program, &["login", "status"], &env, cwd),
            run(&program, &["mcp", "list", "--json"], &env, cwd),
        ),
    };
    match login {
        Ok(ran) => {
            let (logged_in, how) = match cli {
                Cli::ClaudeCode => claude_login(&ran),
                Cli::CodexCli => codex_login(&ran),
            };
            status.logged_in = Some(logged_in);
            status.login = how;
        }
        Err(e) => status.login = Some(e),
    }
    match servers {
        Ok(ran) if ran.ok => {
            status.mcp_servers = match cli {
                Cli::ClaudeCode => mcp_list::parse(&ran.stdout),
                Cli::CodexCli => codex_servers(&ran.stdout),
            };
        }
        Ok(ran) => status.mcp_problem = Some(said(&ran)),
        Err(e) => status.mcp_problem = Some(e),
    }
    status
}

/// What a failed command said, warnings left out.
fn said(ran: &Ran) -> String {
    let text: Vec<&str> = ran
        .stderr
        .lines()
        .chain(ran.stdout.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("WARNING"))
        .collect();
    if text.is_empty() {
        "it failed without saying why".into()
    } else {
        text.join(" ")
    }
}

/// `claude auth status` prints JSON: `loggedIn`, `authMethod`, `apiKeySource`.
fn claude_login(ran: &Ran) -> (bool, Option<String>) {
    let Ok(v) = serde_json::from_str::<Value>(&ran.stdout) else {
        return (ran.ok, Some(said(ran)));
    };
    let logged_in = v["loggedIn"].as_bool().unwrap_or(ran.ok);
    let method = v["authMethod"].as_str().unwrap_or("unknown");
    let how = match (v["apiKeySource"].as_str(), v["email"].as_str()) {
        (Some(source), _) => format!("{method} from {source}"),
        (None, Some(email)) => format!("{method} as {email}"),
        _ => method.to_string(),
    };
    (logged_in, Some(how))
}

/// `codex login status` says it in words (on stderr, in 0.171), and exits 0 when logged in.
fn codex_login(ran: &Ran) -> (bool, Option<String>) {
    (ran.ok, Some(said(ran)))
}

/// `codex mcp list --json`: an array of servers, each with its transport.
fn codex_servers(stdout: &str) -> Vec<BackendMcpServer> {
    let Ok(Value::Array(servers)) = serde_json::from_str::<Value>(stdout.trim()) else {
        return Vec::new();
    };
    servers
        .iter()
        .filter_map(|s| {
            let name = s["name"].as_str()?.to_string();
            let transport = &s["transport"];
            let (kind, target) = match transport["type"].as_str() {
                Some("stdio") => {
                    let mut words = vec![transport["command"].as_str().unwrap_or("").to_string()];
                    words.extend(
                        transport["args"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .map(str::to_string),
                    );
                    ("stdio", words.join(" "))
                }
                Some(_) => ("http", transport["url"].as_str().unwrap_or("").to_string()),
                None => ("stdio", String::new()),
            };
            Some(BackendMcpServer {
                name,
                target,
                transport: McpTransport::parse(kind),
                status: s["enabled"]
                    .as_bool()
                    .map(|on| if on { "enabled" } else { "disabled" }.to_string()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(ok: bool, stdout: &str, stderr: &str) -> Ran {
        Ran {
            ok,
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn claude_auth_status_as_2_1_prints_it() {
        let out = r#"{"loggedIn": true, "authMethod": "api_key", "apiProvider": "firstParty",
            "apiKeySource": "ANTHROPIC_API_KEY"}"#;
        assert_eq!(
            claude_login(&ran(true, out, "")),
            (true, Some("api_key from ANTHROPIC_API_KEY".into()))
        );
        let out = r#"{"loggedIn": false, "authMethod": "none"}"#;
        assert_eq!(
            claude_login(&ran(false, out, "")),
            (false, Some("none".into()))
        );
    }

    #[test]
    fn codex_login_status_leaves_warnings_out() {
        let stderr =
            "WARNING: proceeding, even though we could not create PATH aliases\nNot logged in\n";
        assert_eq!(
            codex_login(&ran(false, "", stderr)),
            (false, Some("Not logged in".into()))
        );
    }

    #[test]
    fn codex_servers_as_0_171_lists_them() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/codex-mcp-list/0.171.0.json");
        let servers = codex_servers(&std::fs::read_to_string(path).unwrap());
        assert_eq!(servers.len(), 2, "{servers:?}");
        assert_eq!(servers[0].name, "docs");
        assert_eq!(servers[0].target, "python3 /tmp/cc/mini_mcp.py");
        assert_eq!(servers[1].transport.as_str(), "http");
        assert_eq!(servers[1].target, "http://127.0.0.1:9/mcp");
    }

    #[test]
    fn codex_servers_from_its_json() {
        let out = r#"[{"name":"docs","enabled":true,"transport":{"type":"stdio","command":"npx","args":["-y","docs-mcp"]}},
                      {"name":"remote","enabled":false,"transport":{"type":"streamable_http","url":"https://x/mcp"}}]"#;
        let servers = codex_servers(out);
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].target, "npx -y docs-mcp");
        assert_eq!(servers[1].transport.as_str(), "http");
        assert_eq!(servers[1].status.as_deref(), Some("disabled"));
        assert!(codex_servers("[]").is_empty());
    }
}
