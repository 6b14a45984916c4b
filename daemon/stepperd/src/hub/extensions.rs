//! Commands and skills by folder, read once and again only when one of their files or
//! folders changes (a stat of each, never a read), and the `skill` tool that gives the model
//! a skill's instructions when it asks for them.
//!
//! It also expands `/name args` at a turn's start (`invoke`, then `render` for `` !`cmd` `` and
//! `@file`, through the bash and read tools and so through the gate). The model is offered the
//! skills and the commands alike (`Extensions::model_invocable`), and a command the user types
//! reaches the model framed as Claude Code frames it (`Invoked::framed`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use stepper_engine::ToolSpec;
use stepper_engine::config::extensions::{self, Extensions, Skill};
use stepper_engine::tool::{Tool, ToolCx, ToolError, ToolOutput, ToolResult};

type Key = (PathBuf, Option<PathBuf>);
type Fingerprint = Vec<(PathBuf, u64, u128)>;

pub struct ExtensionsCache {
    config_dir: PathBuf,
    entries: Mutex<HashMap<Key, (Fingerprint, Arc<Extensions>)>>,
}

impl ExtensionsCache {
    pub fn new(config_dir: PathBuf) -> ExtensionsCache {
        ExtensionsCache {
            config_dir,
            entries: Mutex::default(),
        }
    }

    /// The commands and skills of a session in `cwd` (with `home` for `~/.claude`).
    pub async fn get(&self, cwd: &Path, home: Option<&Path>) -> Arc<Extensions> {
        let key: Key = (cwd.to_path_buf(), home.map(Path::to_path_buf));
        let config = self.config_dir.clone();
        let (k, c) = (key.clone(), config.clone());
        let print =
            tokio::task::spawn_blocking(move || extensions::fingerprint(&k.0, &c, k.1.as_deref()))
                .await
                .unwrap_or_default();
        if let Some((seen, ext)) = self
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            && *seen == print
        {
            return Arc::clone(ext);
        }
        let k = key.clone();
        let loaded =
            tokio::task::spawn_blocking(move || extensions::load(&k.0, &config, k.1.as_deref()))
                .await
                .unwrap_or_default();
        let loaded = Arc::new(loaded);
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, (print, Arc::clone(&loaded)));
        loaded
    }
}

/// `skill {name, arguments?}`: a skill's instructions, its folder named so the model can
/// read the files it bundles.
pub struct SkillTool {
    pub skills: Vec<Skill>,
    /// The session's id, for `${CLAUDE_SESSION_ID}` in a skill's text.
    pub session: String,
}

impl SkillTool {
    /// [`SkillTool::listing`] within about 1% of a `window` of tokens (~4 bytes a token).
    pub fn listing_for(&self, window: u64) -> String {
        self.listing((window as usize / 25).max(2000))
    }

    /// The listing for the system prompt: the skills the model may use, within `budget`
    /// bytes (the rest are named as left out).
    pub fn listing(&self, budget: usize) -> String {
        let mut text = String::from(
            "# Skills\n\nA skill holds instructions for a kind of task. When a task matches one \
             below, call the `skill` tool with its name before doing the task.\n\n",
        );
        let mut left_out = 0;
        for skill in &self.skills {
            let line = format!("- {}: {}\n", skill.name, skill.description);
            if text.len() + line.len() > budget {
                left_out += 1;
                continue;
            }
            text.push_str(&line);
        }
        if left_out > 0 {
            text.push_str(&format!(
                "({left_out} more skills are not listed: the list is full)\n"
            ));
        }
        text
    }
}

impl Tool for SkillTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "skill".into(),
            description: "Load a skill's instructions by name (the skills are listed in the \
                          system prompt). Follow them for the task at hand."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "the skill's name"},
                    "arguments": {"type": "string", "description": "what the skill is for this time, if it takes arguments"}
                },
                "required": ["name"]
            }),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, input: Value, _cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let name = input
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::InvalidArguments("give the skill's name".into()))?;
            let Some(skill) = self.skills.iter().find(|s| s.name == name) else {
                let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
                return Err(ToolError::InvalidArguments(format!(
                    "there is no skill {name:?}; the skills are: {}",
                    names.join(", ")
                )));
            };
            let arguments = input.get("arguments").and_then(Value::as_str).unwrap_or("");
            let dir = skill.dir.display().to_string();
            let body = extensions::substitute(
                &skill.body,
                arguments,
                &skill.arguments,
                &[
                    ("CLAUDE_SKILL_DIR", &dir),
                    ("CLAUDE_SESSION_ID", &self.session),
                ],
            );
            Ok(ToolOutput::text(format!(
                "Base directory for this skill: {}\n\n{}",
                skill.dir.display(),
                body.trim()
            )))
        })
    }
}

/// A custom command or a skill the user typed (`/review src/lib.rs`), its arguments in place.
pub struct Invoked {
    pub name: String,
    /// The arguments as typed.
    pub arguments: String,
    pub body: String,
    pub allowed_tools: Vec<String>,
    pub model: Option<String>,
    /// The project's (not the user's own): it runs programs and allows tools only in a
    /// folder the user trusts.
    pub project: bool,
}

impl Invoked {
    /// What the model gets: the invocation framed as Claude Code frames it (its models are
    /// told that a `<command-name>` block means the command is loaded), then `rendered`,
    /// the body with its `` !`cmd` `` and `@file` done.
    pub fn framed(&self, rendered: &str) -> String {
        format!(
            "<command-message>{name}</command-message>\n<command-name>/{name}</command-name>\n\
             <command-args>{}</command-args>\n\n{}",
            self.arguments,
            rendered.trim_end(),
            name = self.name,
        )
    }
}

/// What `text` invokes, if its first word is `/name` of a command or a user-invocable skill.
/// `session` is the session's id, for `${CLAUDE_SESSION_ID}`.
pub fn invoke(ext: &Extensions, text: &str, session: &str) -> Option<Invoked> {
    let text = text.trim_start();
    let rest = text.strip_prefix('/')?;
    let (name, arguments) = match rest.split_once(char::is_whitespace) {
        Some((name, args)) => (name, args.trim()),
        None => (rest.trim_end(), ""),
    };
    if let Some(command) = ext.command(name) {
        return Some(Invoked {
            name: name.to_string(),
            arguments: arguments.to_string(),
            body: extensions::substitute(
                &command.body,
                arguments,
                &command.arguments,
                &[("CLAUDE_SESSION_ID", session)],
            ),
            allowed_tools: command.allowed_tools.clone(),
            model: command.model.clone(),
            project: command.scope == "project",
        });
    }
    let skill = ext.skill(name).filter(|s| s.user_invocable)?;
    Some(Invoked {
        name: name.to_string(),
        arguments: arguments.to_string(),
        body: format!(
            "Base directory for this skill: {}\n\n{}",
            skill.dir.display(),
            extensions::substitute(
                &skill.body,
                arguments,
                &skill.arguments,
                &[
                    ("CLAUDE_SKILL_DIR", &skill.dir.display().to_string()),
                    ("CLAUDE_SESSION_ID", session),
                ],
            )
        ),
        allowed_tools: skill.allowed_tools.clone(),
        model: skill.model.clone(),
        project: skill.scope == "project",
    })
}

/// A command's body as the model gets it: each `` !`cmd` `` replaced by what the command
/// printed (run by the bash tool, so through the gate; not run at all unless `run`: a
/// project's command in a folder the user has not trusted), each `@path` by the file (read
/// by the read tool, so through the gate too). A `` !`cmd` `` that fails (exits non-zero,
/// is denied) fails the whole, as in Claude Code: `Err` says which and what it printed, and
/// the model is not called.
pub async fn render(
    body: &str,
    tools: &[Arc<dyn Tool>],
    cx: &ToolCx,
    run: bool,
) -> Result<String, String> {
    let tool = |name: &str| tools.iter().find(|t| t.spec().name == name).cloned();
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(i) = rest.find("!`") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(end) = after.find('`') else {
            out.push_str(&rest[i..]);
            rest = "";
            break;
        };
        let command = &after[..end];
        let ran = match tool("bash") {
            Some(_) if !run => format!(
                "(`{command}` did not run: this folder is not trusted — `stepper trust` lets \
                 its commands run programs)"
            ),
            Some(bash) => match bash.call(json!({"command": command}), cx).await {
                Ok(output) if output.details.exit_code.is_none_or(|code| code == 0) => {
                    output.content
                }
                Ok(output) => {
                    return Err(format!(
                        "the command's !`{command}` failed (exit {}), so the command was not \
                         sent to the model:\n{}",
                        output.details.exit_code.unwrap_or(-1),
                        output.content.trim_end()
                    ));
                }
                Err(e) => {
                    return Err(format!(
                        "the command's !`{command}` did not run, so the command was not sent to \
                         the model: {e}"
                    ));
                }
            },
            None => format!("(`{command}` did not run: no bash tool)"),
        };
        out.push_str(ran.trim_end());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(include_files(&out, tool("read"), cx).await)
}

async fn include_files(text: &str, read: Option<Arc<dyn Tool>>, cx: &ToolCx) -> String {
    let Some(read) = read else {
        return text.to_string();
    };
    let mut out = String::with_capacity(text.len());
    for word in text.split_inclusive(char::is_whitespace) {
        let bare = word.trim_end();
        let path = bare
            .strip_prefix('@')
            .map(|p| p.trim_end_matches([',', '.', ';', ':', ')']))
            .filter(|p| !p.is_empty() && cx.resolve(p).is_file());
        let Some(path) = path else {
            out.push_str(word);
            continue;
        };
        match read.call(json!({"path": path}), cx).await {
            Ok(file) => {
                out.push_str(&format!(
                    "<file path=\"{path}\">\n{}\n</file>",
                    file.content.trim_end()
                ));
                out.push_str(&word[bare.len()..]);
            }
            Err(e) => out.push_str(&format!(
                "{bare} (not included: {e}){}",
                &word[bare.len()..]
            )),
        }
    }
    out
}
