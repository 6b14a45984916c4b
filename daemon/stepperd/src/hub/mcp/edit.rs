//! The MCP settings a user edits from a client: `mcp/add` and `mcp/remove` write a server
//! into (or out of) the user's `setting.json` or the project's `.mcp.json`; `mcp/approve`
//! records the user's word on a project's servers in its git-ignored
//! `.stepper/setting.local.json`. A file with comments, or not JSON, is left as it is and
//! the error says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use stepper_mcp::parse_servers;
use stepper_protocol::methods::McpScope;
use stepper_protocol::session::Env;

use super::{McpError, mcp_json};

/// `mcp/add`: the server written to the user's `setting.json` or the project's `.mcp.json`.
pub fn add(
    config_dir: &Path,
    cwd: &Path,
    name: &str,
    scope: McpScope,
    server: &serde_json::Value,
) -> Result<PathBuf, McpError> {
    let one: BTreeMap<_, _> = [(name.to_string(), server.clone())].into_iter().collect();
    let (_, problems) = parse_servers(&one, &Env::new());
    if let Some(problem) = problems.into_iter().next() {
        return Err(McpError::BadEntry(problem));
    }
    let path = match scope {
        McpScope::User => config_dir.join("setting.json"),
        McpScope::Project => mcp_json(cwd)
            .ok()
            .flatten()
            .map(|(p, _)| p)
            .unwrap_or_else(|| cwd.join(".mcp.json")),
        McpScope::Local => return Err(McpError::LocalScope),
    };
    edit_servers(&path, |servers| {
        servers.insert(name.to_string(), server.clone());
        true
    })?;
    Ok(path)
}

/// `mcp/remove`: the server taken out of every file of `scope` (or any) that names it.
pub fn remove(
    config_dir: &Path,
    cwd: &Path,
    name: &str,
    scope: Option<McpScope>,
) -> Result<Vec<PathBuf>, McpError> {
    let mut files = Vec::new();
    if scope.is_none_or(|s| s == McpScope::User) {
        files.push(config_dir.join("setting.json"));
    }
    if scope.is_none_or(|s| s == McpScope::Project) {
        if let Ok(Some((path, _))) = mcp_json(cwd) {
            files.push(path);
        }
        files.push(cwd.join(".stepper").join("setting.json"));
    }
    if scope.is_none_or(|s| s == McpScope::Local) {
        files.push(cwd.join(".stepper").join("setting.local.json"));
    }
    let mut removed = Vec::new();
    for path in files.into_iter().filter(|p| p.is_file()) {
        if edit_servers(&path, |servers| servers.remove(name).is_some())? {
            removed.push(path);
        }
    }
    Ok(removed)
}

/// `mcp/approve`: the user's word on a project's servers, in its git-ignored
/// `.stepper/setting.local.json` (made, with a `.gitignore` for it, when missing).
pub fn approve(
    cwd: &Path,
    names: &[String],
    decision: stepper_protocol::methods::McpApproval,
) -> Result<PathBuf, McpError> {
    use stepper_protocol::methods::McpApproval;
    let dir = cwd.join(".stepper");
    let path = dir.join("setting.local.json");
    if !dir.join(".gitignore").exists() {
        std::fs::create_dir_all(&dir)
            .map_err(|e| McpError::Io(format!("cannot create {}: {e}", dir.display())))?;
        std::fs::write(
            dir.join(".gitignore"),
            stepper_engine::config::templates::GITIGNORE,
        )
        .map_err(|e| {
            McpError::Io(format!(
                "cannot write {}: {e}",
                dir.join(".gitignore").display()
            ))
        })?;
    }
    edit_json(&path, |doc| {
        let mut add = |key: &str, other: &str| {
            let mut list: Vec<String> = doc
                .get(key)
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default();
            for n in names {
                if !list.contains(n) {
                    list.push(n.clone());
                }
            }
            doc.insert(key.into(), list.into());
            // A server named in the other list leaves it.
            if let Some(serde_json::Value::Array(others)) = doc.get_mut(other) {
                others.retain(|v| !v.as_str().is_some_and(|s| names.iter().any(|n| n == s)));
            }
        };
        match decision {
            McpApproval::Allow => add("enabledMcpjsonServers", "disabledMcpjsonServers"),
            McpApproval::Deny => add("disabledMcpjsonServers", "enabledMcpjsonServers"),
            McpApproval::AllowAll => {
                doc.insert("enableAllProjectMcpServers".into(), true.into());
            }
        }
        true
    })?;
    Ok(path)
}

/// Change the `mcpServers` of the JSON file at `path` (made when missing), written whole
/// through a temporary file; `change` says whether it changed anything. A file with
/// comments is not rewritten (they would be lost): the error says what to change by hand.
fn edit_servers(
    path: &Path,
    change: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>) -> bool,
) -> Result<bool, McpError> {
    edit_json(path, |obj| {
        let servers = obj
            .entry("mcpServers")
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
        match servers.as_object_mut() {
            Some(servers) => change(servers),
            None => false,
        }
    })
}

/// Change the JSON object in the file at `path` (made when missing), written whole through a
/// temporary file; `change` says whether it changed anything. A file with comments is not
/// rewritten (they would be lost): the error says to change it by hand.
fn edit_json(
    path: &Path,
    change: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>) -> bool,
) -> Result<bool, McpError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "{}".to_string(),
        Err(e) => return Err(McpError::Io(format!("cannot read {}: {e}", path.display()))),
    };
    let plain = stepper_engine::config::jsonc::strip(&text);
    let mut doc: serde_json::Value = serde_json::from_str(&plain).map_err(|e| {
        McpError::File(format!(
            "{}:{}:{}: {e} — fix the file first",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    if serde_json::from_str::<serde_json::Value>(&text).is_err() {
        return Err(McpError::File(format!(
            "{} has comments, which rewriting it would lose — change its \"mcpServers\" by hand",
            path.display()
        )));
    }
    let Some(obj) = doc.as_object_mut() else {
        return Err(McpError::File(format!(
            "{} is not a JSON object",
            path.display()
        )));
    };
    if obj.get("mcpServers").is_some_and(|v| !v.is_object()) {
        return Err(McpError::File(format!(
            "{}: `mcpServers` is not an object",
            path.display()
        )));
    }
    if !change(obj) {
        return Ok(false);
    }
    let mut out = serde_json::to_string_pretty(&doc).map_err(|e| McpError::Io(e.to_string()))?;
    out.push('\n');
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| McpError::Io(format!("cannot create {}: {e}", dir.display())))?;
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, out)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| McpError::Io(format!("cannot write {}: {e}", path.display())))?;
    Ok(true)
}
