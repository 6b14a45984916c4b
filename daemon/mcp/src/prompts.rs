//! A server's prompts as slash commands: `/mcp__<server>__<prompt> args`, the words given to
//! the prompt's arguments in the order it declares them (the last takes the rest), its
//! messages' text becoming the input the model gets.
//!
//! Why a prompt cannot be expanded is a `String`: it becomes the text of the failed turn.

use std::time::Duration;

use crate::pool::{Servers, State};

/// `Some` when `text` names an MCP prompt (`/mcp__server__prompt …`): the input it expands
/// to, or why it cannot.
pub async fn expand(servers: Option<&Servers>, text: &str) -> Option<Result<String, String>> {
    let rest = text.trim_start().strip_prefix("/mcp__")?;
    let (command, words) = match rest.split_once(char::is_whitespace) {
        Some((c, w)) => (c, w.trim()),
        None => (rest.trim_end(), ""),
    };
    let (server, prompt) = command.split_once("__")?;
    Some(run(servers, server, prompt, words).await)
}

async fn run(
    servers: Option<&Servers>,
    server: &str,
    prompt: &str,
    words: &str,
) -> Result<String, String> {
    let timeout = crate::call_timeout().min(Duration::from_secs(60));
    let slot = servers
        .and_then(|s| s.slots.iter().find(|slot| slot.name == server))
        .ok_or_else(|| {
            format!("there is no MCP server {server:?} here (see `stepper mcp list`)")
        })?;
    let running = match slot.state() {
        State::Ready(s) => s,
        _ => slot.server(crate::connect_timeout()).await?,
    };
    let prompts = running
        .prompts(timeout)
        .await
        .map_err(|e| format!("MCP server {server:?}: {e}"))?;
    let Some(found) = prompts.iter().find(|p| p.name == prompt) else {
        let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
        return Err(format!(
            "MCP server {server:?} has no prompt {prompt:?}; its prompts: {}",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        ));
    };
    let declared = found.arguments.clone().unwrap_or_default();
    let mut arguments = serde_json::Map::new();
    let mut rest = words;
    for (i, arg) in declared.iter().enumerate() {
        if rest.is_empty() {
            break;
        }
        let value = if i + 1 == declared.len() {
            std::mem::take(&mut rest).to_string()
        } else {
            let (word, after) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            rest = after.trim_start();
            word.to_string()
        };
        arguments.insert(arg.name.clone(), value.into());
    }
    let missing: Vec<&str> = declared
        .iter()
        .filter(|a| a.required == Some(true) && !arguments.contains_key(&a.name))
        .map(|a| a.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "/mcp__{server}__{prompt} needs {} — give them in order: /mcp__{server}__{prompt} {}",
            missing.join(", "),
            declared
                .iter()
                .map(|a| a.name.to_uppercase())
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    let messages = running
        .prompt(prompt, arguments, timeout)
        .await
        .map_err(|e| format!("MCP server {server:?}: {e}"))?;
    let texts: Vec<String> = messages
        .iter()
        .map(|m| {
            let content = &m["content"];
            match content["type"].as_str() {
                Some("text") => content["text"].as_str().unwrap_or("").to_string(),
                Some("resource") => content["resource"]["text"]
                    .as_str()
                    .map_or_else(|| content.to_string(), str::to_string),
                _ => content.to_string(),
            }
        })
        .collect();
    Ok(texts.join("\n\n"))
}
