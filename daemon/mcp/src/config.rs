//! `mcpServers` entries in the formats users have (Claude Code's `.mcp.json` and settings):
//! `command`, `args`, `env`, `cwd` for a stdio server; `type: "http" | "sse"` with `url`
//! and `headers` for a remote one, with `oauth` naming a client the server's owner registered
//! for it (`clientId`, `clientSecret`, `callbackPort`, as Claude Code spells them). `${VAR}` and
//! `${VAR:-default}` are expanded in every string from the session's environment.
//!
//! Why an entry is left out is a `String` problem (`name: what to fix`): the daemon says it
//! as a notice or as `mcp/list`'s `reason`, and types it where a method fails on it (a bad
//! entry given to `mcp/add`, a settings file's entry that `mcp/login` cannot use).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;
use stepper_protocol::session::Env;

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        /// The legacy HTTP+SSE transport rather than streamable HTTP.
        sse: bool,
        /// The client it signs in as, when its owner registered one beforehand.
        oauth: Option<OAuthClient>,
    },
}

/// A pre-registered OAuth client: used instead of registering one dynamically (RFC 7591).
/// Without a secret it is a public client (PKCE only); with one, a confidential client
/// that authenticates as the server's metadata says it can (`client_secret_basic` or
/// `client_secret_post`). A machine client (`grant: "client_credentials"`) signs in by
/// itself, with its secret or a private key (`private_key_jwt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthClient {
    pub client_id: String,
    pub client_secret: Option<Secret>,
    /// The port of the redirect URI registered with the client
    /// (`http://localhost:PORT/callback`); any free port without one.
    pub callback_port: Option<u16>,
    /// How it gets its tokens; `None`: as the authorization server's metadata allows
    /// (`client_credentials` when that is the only grant it names besides refreshing).
    pub grant: Option<Grant>,
    /// A PEM file of the client's P-256 private key (PKCS #8): it signs the ES256
    /// assertion of `private_key_jwt` (RFC 7523) instead of sending a secret.
    pub private_key_file: Option<PathBuf>,
}

/// An OAuth grant a pre-registered client uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// A user signs in in the browser (`stepper mcp login`).
    AuthorizationCode,
    /// The client signs in as itself, no user and no browser (OAuth 2.1 §4.2, SEP-1046).
    ClientCredentials,
}

impl OAuthClient {
    /// A client that authenticates itself: with a secret or a private key.
    pub fn has_credentials(&self) -> bool {
        self.client_secret.is_some() || self.private_key_file.is_some()
    }
}

/// A value that never reaches a log, an event or a listing: `Debug` shows only that it is set.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    /// The value itself, for the one request that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Transport {
    /// Its name in `mcp list`: `stdio`, `http` or `sse`.
    pub fn word(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { sse: false, .. } => "http",
            Transport::Http { sse: true, .. } => "sse",
        }
    }
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub transport: Transport,
    /// It may use the session's model (`mcpSampling`): offered at its start.
    pub sampling: bool,
}

impl ServerSpec {
    /// A key that changes when anything about how the server is started changes.
    pub fn key(&self) -> String {
        format!(
            "{}\u{0}{:?}\u{0}{}",
            self.name, self.transport, self.sampling
        )
    }
}

/// Every server of `servers`, or why one is left out (`name: what to fix`).
pub fn parse_servers(
    servers: &BTreeMap<String, Value>,
    env: &Env,
) -> (Vec<ServerSpec>, Vec<String>) {
    let mut specs = Vec::new();
    let mut problems = Vec::new();
    for (name, value) in servers {
        match parse_one(name, value, env) {
            Ok(spec) => specs.push(spec),
            Err(why) => problems.push(format!("MCP server {name:?}: {why}")),
        }
    }
    (specs, problems)
}

fn parse_one(name: &str, value: &Value, env: &Env) -> Result<ServerSpec, String> {
    if name.is_empty()
        || name.contains("__")
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(
            "a server's name is letters, digits, - and _ (no double underscore): rename it".into(),
        );
    }
    let obj = value
        .as_object()
        .ok_or("expected an object with command/args, or type and url")?;
    let text = |key: &str| -> Result<Option<String>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(expand(s, env))),
            Some(_) => Err(format!("`{key}` must be a string")),
        }
    };
    let map = |key: &str| -> Result<BTreeMap<String, String>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), expand(s, env))),
                    _ => Err(format!("`{key}.{k}` must be a string")),
                })
                .collect(),
            Some(_) => Err(format!("`{key}` must be an object of strings")),
        }
    };
    let kind = text("type")?;
    let transport = match (kind.as_deref(), text("url")?, text("command")?) {
        (Some("http" | "streamable-http") | None, Some(url), None) => Transport::Http {
            url,
            headers: map("headers")?,
            sse: false,
            oauth: oauth(obj.get("oauth"), env)?,
        },
        (Some("sse"), Some(url), None) => Transport::Http {
            url,
            headers: map("headers")?,
            sse: true,
            oauth: oauth(obj.get("oauth"), env)?,
        },
        (Some("stdio") | None, None, Some(command)) => {
            let args = match obj.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|a| {
                        a.as_str()
                            .map(|s| expand(s, env))
                            .ok_or("`args` must be strings")
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err("`args` must be a list of strings".into()),
            };
            Transport::Stdio {
                command,
                args,
                env: map("env")?,
                cwd: text("cwd")?.map(PathBuf::from),
            }
        }
        (_, Some(_), Some(_)) => return Err("give either `command` or `url`, not both".into()),
        (Some(other), _, _) => {
            return Err(format!(
                "`type: {other}` needs {} — the types are stdio, http and sse",
                if other == "stdio" {
                    "`command`"
                } else {
                    "`url`"
                }
            ));
        }
        (None, None, None) => return Err("give `command` (a stdio server) or `url`".into()),
    };
    Ok(ServerSpec {
        name: name.to_string(),
        transport,
        sampling: false,
    })
}

/// The `oauth` object of a remote server: `clientId` (needed), `clientSecret`, `callbackPort`,
/// and stepper's `grant` and `privateKeyFile` for a machine client. Claude Code's other keys
/// there (`authServerMetadataUrl`, `scopes`) are not used: discovery and the scopes the server
/// advertises apply.
fn oauth(value: Option<&Value>, env: &Env) -> Result<Option<OAuthClient>, String> {
    let obj = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(obj)) => obj,
        Some(_) => return Err("`oauth` must be an object such as {\"clientId\": \"...\"}".into()),
    };
    let text = |key: &str| -> Result<Option<String>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(expand(s, env)).filter(|s| !s.is_empty())),
            Some(_) => Err(format!("`oauth.{key}` must be a string")),
        }
    };
    let client_id = text("clientId")?;
    let client_secret = text("clientSecret")?.map(Secret::new);
    let callback_port = match obj.get("callbackPort") {
        None | Some(Value::Null) => None,
        Some(port) => Some(
            port.as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .filter(|p| *p > 0)
                .ok_or("`oauth.callbackPort` must be a port number, such as 8080")?,
        ),
    };
    let grant = match text("grant")?.as_deref() {
        None => None,
        Some("authorization_code") => Some(Grant::AuthorizationCode),
        Some("client_credentials") => Some(Grant::ClientCredentials),
        Some(other) => {
            return Err(format!(
                "`oauth.grant: {other}` is not a grant stepper uses — give \"authorization_code\" \
                 (a user signs in) or \"client_credentials\" (the client signs in as itself)"
            ));
        }
    };
    let private_key_file = match text("privateKeyFile")? {
        None => None,
        Some(path) => {
            let path = match path.strip_prefix("~/") {
                Some(rest) => PathBuf::from(env.get("HOME").map_or("~", String::as_str)).join(rest),
                None => PathBuf::from(path),
            };
            if !path.is_absolute() {
                return Err(format!(
                    "`oauth.privateKeyFile` must be an absolute path (or start with ~/), not {}",
                    path.display()
                ));
            }
            Some(path)
        }
    };
    match client_id {
        Some(client_id) => {
            let client = OAuthClient {
                client_id,
                client_secret,
                callback_port,
                grant,
                private_key_file,
            };
            if client.grant == Some(Grant::ClientCredentials) && !client.has_credentials() {
                return Err(
                    "`oauth.grant: client_credentials` needs `oauth.clientSecret` or \
                     `oauth.privateKeyFile` to sign in with: add one"
                        .into(),
                );
            }
            Ok(Some(client))
        }
        None if client_secret.is_some() || private_key_file.is_some() || grant.is_some() => Err(
            "`oauth.clientSecret`, `privateKeyFile` and `grant` need the `oauth.clientId` they \
             belong to: add it"
                .into(),
        ),
        None => Ok(None),
    }
}

/// `${VAR}` and `${VAR:-default}` from `env` (an unset variable is empty).
pub fn expand(text: &str, env: &Env) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[at..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match env.get(name).filter(|v| !v.is_empty()) {
            Some(value) => out.push_str(value),
            None => out.push_str(default.unwrap_or("")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_codes_formats_with_expansion() {
        let env: Env = [
            ("TOKEN".to_string(), "t0k".to_string()),
            ("HOME".into(), "/h".into()),
        ]
        .into_iter()
        .collect();
        let servers: BTreeMap<String, Value> = serde_json::from_value(json!({
            "fs": {"command": "npx", "args": ["-y", "server-filesystem", "${HOME}/src"], "env": {"K": "${TOKEN}"}},
            "remote": {"type": "http", "url": "${API:-https://mcp.example}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "old": {"type": "sse", "url": "http://localhost:1/sse"},
            "bad": {"type": "stdio"},
            "a__b": {"command": "x"},
            "both": {"command": "x", "url": "y"}
        }))
        .unwrap();
        let (specs, problems) = parse_servers(&servers, &env);
        let fs = specs.iter().find(|s| s.name == "fs").unwrap();
        assert_eq!(
            fs.transport,
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "server-filesystem".into(), "/h/src".into()],
                env: [("K".to_string(), "t0k".to_string())].into_iter().collect(),
                cwd: None,
            }
        );
        let remote = specs.iter().find(|s| s.name == "remote").unwrap();
        assert!(
            matches!(&remote.transport, Transport::Http { url, headers, sse: false, oauth: None }
            if url == "https://mcp.example/mcp" && headers["Authorization"] == "Bearer t0k")
        );
        assert!(
            specs.iter().any(
                |s| s.name == "old" && matches!(s.transport, Transport::Http { sse: true, .. })
            )
        );
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(
            problems
                .iter()
                .any(|p| p.contains("\"bad\"") && p.contains("`command`"))
        );
    }

    #[test]
    fn a_pre_registered_client_and_its_secret_never_printed() {
        let env: Env = [("SECRET".to_string(), "s3cr3t-value".to_string())]
            .into_iter()
            .collect();
        let servers: BTreeMap<String, Value> = serde_json::from_value(json!({
            "public": {"type": "http", "url": "https://a.example/mcp", "oauth": {"clientId": "app-1", "callbackPort": 8080}},
            "confidential": {"url": "https://b.example/mcp", "oauth": {"clientId": "app-2", "clientSecret": "${SECRET}"}},
            "dynamic": {"url": "https://c.example/mcp", "oauth": {}},
            "orphan": {"url": "https://d.example/mcp", "oauth": {"clientSecret": "x"}},
            "port": {"url": "https://e.example/mcp", "oauth": {"clientId": "a", "callbackPort": 70000}}
        }))
        .unwrap();
        let (specs, problems) = parse_servers(&servers, &env);
        let client = |name: &str| match &specs.iter().find(|s| s.name == name).unwrap().transport {
            Transport::Http { oauth, .. } => oauth.clone(),
            Transport::Stdio { .. } => panic!("{name} is remote"),
        };
        assert_eq!(
            client("public"),
            Some(OAuthClient {
                client_id: "app-1".into(),
                client_secret: None,
                callback_port: Some(8080),
                grant: None,
                private_key_file: None,
            })
        );
        let confidential = client("confidential").unwrap();
        assert_eq!(confidential.client_id, "app-2");
        assert_eq!(
            confidential.client_secret.as_ref().map(Secret::expose),
            Some("s3cr3t-value")
        );
        assert_eq!(client("dynamic"), None);
        // Every way a spec is printed or keyed leaves the secret out.
        let spec = specs.iter().find(|s| s.name == "confidential").unwrap();
        for shown in [format!("{spec:?}"), format!("{spec:#?}"), spec.key()] {
            assert!(shown.contains("app-2"), "{shown}");
            assert!(!shown.contains("s3cr3t"), "{shown}");
        }
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems
                .iter()
                .any(|p| p.contains("\"orphan\"") && p.contains("clientId"))
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("\"port\"") && p.contains("callbackPort"))
        );
    }

    #[test]
    fn a_machine_client_names_its_grant_and_key() {
        let env: Env = [("HOME".to_string(), "/h".to_string())]
            .into_iter()
            .collect();
        let servers: BTreeMap<String, Value> = serde_json::from_value(json!({
            "keyed": {"url": "https://a.example/mcp", "oauth": {"clientId": "robot",
                "grant": "client_credentials", "privateKeyFile": "~/keys/robot.pem"}},
            "secret": {"url": "https://b.example/mcp", "oauth": {"clientId": "robot",
                "clientSecret": "x", "grant": "client_credentials"}},
            "bare": {"url": "https://c.example/mcp", "oauth": {"clientId": "robot",
                "grant": "client_credentials"}},
            "typo": {"url": "https://d.example/mcp", "oauth": {"clientId": "robot",
                "grant": "password"}},
            "relative": {"url": "https://e.example/mcp", "oauth": {"clientId": "robot",
                "privateKeyFile": "robot.pem"}}
        }))
        .unwrap();
        let (specs, problems) = parse_servers(&servers, &env);
        let client = |name: &str| match &specs.iter().find(|s| s.name == name).unwrap().transport {
            Transport::Http { oauth, .. } => oauth.clone().unwrap(),
            Transport::Stdio { .. } => panic!("{name} is remote"),
        };
        let keyed = client("keyed");
        assert_eq!(keyed.grant, Some(Grant::ClientCredentials));
        assert_eq!(
            keyed.private_key_file,
            Some(PathBuf::from("/h/keys/robot.pem"))
        );
        assert!(client("secret").has_credentials());
        assert_eq!(problems.len(), 3, "{problems:?}");
        for (name, says) in [
            (
                "bare",
                "needs `oauth.clientSecret` or `oauth.privateKeyFile`",
            ),
            ("typo", "\"client_credentials\""),
            ("relative", "absolute path"),
        ] {
            assert!(
                problems
                    .iter()
                    .any(|p| p.contains(&format!("{name:?}")) && p.contains(says)),
                "{name}: {problems:?}"
            );
        }
    }

    #[test]
    fn expansion_edges() {
        let env = Env::new();
        assert_eq!(expand("a${X:-b}c${Y}d", &env), "abcd");
        assert_eq!(expand("open ${X", &env), "open ${X");
        assert_eq!(expand("é${X:-ü}", &env), "éü");
    }
}
