//! How a turn runs: the layers of `.stepper/stepper.md` and the subagents a model may start.
//!
//! `stepper.md` without front matter is the prompt of one agent. Each YAML front matter block
//! (a `---` line at the top or after a blank line, followed by YAML `key:` lines and a
//! closing `---`) starts a layer, and the Markdown after it, up to the next block, is that layer's
//! instructions. Prose before the first block is shared by every layer. The project's file
//! (at the repository root, else the session's folder) wins over the user's
//! `<config>/stepper.md`.
//!
//! Subagent definitions come from `.stepper/agents/*.md`, `.claude/agents/*.md` (the
//! project's), `<config>/agents/*.md` and `~/.claude/agents/*.md` (the user's), in Claude
//! Code's format: `name`, `description`, `tools`, `disallowedTools`, `model`, `skills`; the
//! body is the prompt.
//!
//! `tools` and `disallowed-tools` name tools in any dialect (`Write`, `MultiEdit`, `shell`)
//! and capabilities (`edit`, `execute`, `network`, `read`: see [`crate::capability`]); they
//! are resolved here, into the internal tools they cover.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::extensions::{FrontMatter, Problem, field_line, front_matter, markdown_files, read};
use super::problem::closest;
use crate::capability::{self, Capability, List};
use crate::model::ModelRef;

/// Workers a parallel layer runs at once unless it says otherwise.
pub const DEFAULT_PARALLEL_MAX: usize = 4;

/// The fields a layer's front matter may have.
pub const FIELDS: &[&str] = &[
    "name",
    "description",
    "model",
    "tools",
    "disallowed-tools",
    "deny",
    "skills",
    "parallel",
    "isolation",
    "parallel-max",
    "max-steps",
    "dispatch",
    "base-instructions",
];

/// Tools the orchestrator adds; a layer may name them in `tools:` too.
pub const ORCHESTRATOR_TOOLS: &[&str] = &["assign_tasks", "dispatch"];

/// One layer of a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    pub name: String,
    pub description: Option<String>,
    /// `provider/model-id`; the session's model when absent.
    pub model: Option<String>,
    /// The tools it may use (stepper's names); every tool when absent.
    pub tools: Option<Vec<String>>,
    /// Tools taken away (after `tools`).
    pub disallowed: Vec<String>,
    /// The skills it is offered; every skill when absent.
    pub skills: Option<Vec<String>>,
    /// Fan the previous layer's task list out to workers.
    pub parallel: bool,
    pub parallel_max: usize,
    pub max_steps: Option<u32>,
    /// Offer the `dispatch` tool.
    pub dispatch: bool,
    /// Where its workers (and the subagents it dispatches) work; the settings'
    /// `workerIsolation` when absent.
    pub isolation: Option<Isolation>,
    /// Give it the base instructions of its model's family (`base-instructions: false`:
    /// only its own prompt).
    pub base: bool,
    /// Its instructions (the Markdown after its front matter).
    pub instructions: String,
    /// The line of its opening `---`.
    pub line: usize,
    /// The line of each field of its front matter.
    pub lines: BTreeMap<String, usize>,
}

impl Layer {
    /// A layer that is the whole turn: every tool, the session's model.
    pub fn plain(name: &str) -> Layer {
        Layer {
            name: name.to_string(),
            description: None,
            model: None,
            tools: None,
            disallowed: Vec::new(),
            skills: None,
            parallel: false,
            parallel_max: DEFAULT_PARALLEL_MAX,
            max_steps: None,
            dispatch: false,
            isolation: None,
            base: true,
            instructions: String::new(),
            line: 1,
            lines: BTreeMap::new(),
        }
    }

    /// Whether the layer may use `tool`.
    pub fn allows(&self, tool: &str) -> bool {
        permits(self.tools.as_deref(), &self.disallowed, tool)
    }
}

/// Where a worker or subagent works (`isolation:` in a layer or an agent file, as Claude
/// Code's agent files have it).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// In the session's folder, beside the others.
    None,
    /// In a git worktree of its own, merged back when all are done.
    Worktree,
}

impl Isolation {
    pub fn parse(text: &str) -> Result<Isolation, String> {
        match text {
            "worktree" => Ok(Isolation::Worktree),
            "none" | "" => Ok(Isolation::None),
            other => Err(format!(
                "`isolation: {other}` — write `isolation: worktree` (each worker in its own git \
                 worktree) or `none`"
            )),
        }
    }
}

/// `isolation:`, when the front matter has it.
fn isolation(
    fm: &FrontMatter,
    line: usize,
    problem: &mut dyn FnMut(usize, String),
) -> Option<Isolation> {
    let text = fm.field("isolation")?;
    Isolation::parse(&text).map_err(|e| problem(line, e)).ok()
}

/// Whether `tool` passes an allow list (`None`: every tool) and a deny list.
pub fn permits(tools: Option<&[String]>, disallowed: &[String], tool: &str) -> bool {
    tools.is_none_or(|tools| tools.iter().any(|t| t == tool))
        && !disallowed.iter().any(|t| t == tool)
}

/// Whether the skill `name` is in a `skills:` list (`None`: every skill).
pub fn offers(skills: Option<&[String]>, name: &str) -> bool {
    skills.is_none_or(|skills| skills.iter().any(|s| s == name))
}

/// What `stepper.md` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layers {
    /// The file read; none when there is no `stepper.md`.
    pub path: Option<PathBuf>,
    /// The prose before the first layer (the whole file without front matter): it goes to
    /// every layer, as part of the instructions.
    pub preamble: String,
    /// The layers in order; empty when the file has no front matter (one plain layer).
    pub layers: Vec<Layer>,
}

impl Layers {
    /// Whether a turn is more than one agent loop.
    pub fn is_layered(&self) -> bool {
        !self.layers.is_empty()
    }
}

/// The `stepper.md` that applies to `cwd`: the project's (at the repository root, else in
/// `cwd`), else the user's.
pub fn locate(cwd: &Path, config_dir: &Path) -> Option<PathBuf> {
    let root = super::repository::repository_root(cwd);
    [
        root.join(".stepper").join("stepper.md"),
        cwd.join(".stepper").join("stepper.md"),
        config_dir.join("stepper.md"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// Read and check the `stepper.md` of `cwd`. `known_tools` are the tool names a layer may
/// list (MCP tools, `mcp__…`, are taken on trust).
pub fn load(cwd: &Path, config_dir: &Path, known_tools: &[&str]) -> (Layers, Vec<Problem>) {
    let Some(path) = locate(cwd, config_dir) else {
        return (Layers::default(), Vec::new());
    };
    let mut problems = Vec::new();
    let Some(text) = read(&path, &mut problems) else {
        return (
            Layers {
                path: Some(path),
                ..Layers::default()
            },
            problems,
        );
    };
    parse(&path, &text, known_tools)
}

/// Parse `text` (the contents of `path`) into layers.
pub fn parse(path: &Path, text: &str, known_tools: &[&str]) -> (Layers, Vec<Problem>) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let starts = block_starts(text);
    let mut problems = Vec::new();
    let mut problem = |line: usize, message: String| {
        problems.push(Problem {
            path: path.to_path_buf(),
            line,
            message,
        });
    };
    let preamble_end = starts.first().map_or(text.len(), |(offset, _)| *offset);
    let mut layers = Layers {
        path: Some(path.to_path_buf()),
        preamble: text[..preamble_end].trim().to_string(),
        layers: Vec::new(),
    };
    for (i, &(offset, line)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(text.len(), |(o, _)| *o);
        let segment = &text[offset..end];
        let fm = match front_matter(segment) {
            Ok(fm) => fm,
            Err((at, why)) => {
                problem(line + at - 1, why);
                continue;
            }
        };
        let field_line = |key: &str| field_line(segment, line, key);
        for key in fm.fields.keys() {
            if !FIELDS.contains(&key.as_str()) {
                let hint = closest(key, FIELDS)
                    .map(|k| format!(" — did you mean `{k}`?"))
                    .unwrap_or_else(|| format!(" — a layer's fields are {}", FIELDS.join(", ")));
                problem(
                    field_line(key),
                    format!("unknown field `{key}` in a layer{hint}"),
                );
            }
        }
        let index = layers.layers.len() + 1;
        let mut layer = Layer::plain(&fm.field("name").unwrap_or_else(|| format!("layer-{index}")));
        layer.line = line;
        layer.lines = fm
            .fields
            .keys()
            .map(|k| (k.clone(), field_line(k)))
            .collect();
        layer.description = fm.field("description");
        layer.instructions = fm.body.trim().to_string();
        if let Some(model) = fm.field("model") {
            match ModelRef::parse(&model) {
                Ok(_) => layer.model = Some(model),
                Err(e) => problem(field_line("model"), e.to_string()),
            }
        }
        let tools = |key: &str, problem: &mut dyn FnMut(usize, String)| {
            fm.fields.get(key).map(|_| {
                let names: Vec<String> = fm.list(key).iter().map(|t| tool_name(t)).collect();
                for name in &names {
                    if !known(name, known_tools) {
                        problem(
                            field_line(key),
                            format!(
                                "unknown tool `{name}` in `{key}` — {}",
                                unknown_tool_hint(name, known_tools)
                            ),
                        );
                    }
                }
                let list = if key == "tools" {
                    List::Allow
                } else {
                    List::Deny
                };
                capability::expand(&names, list)
            })
        };
        layer.tools = tools("tools", &mut problem);
        layer.disallowed = tools("disallowed-tools", &mut problem).unwrap_or_default();
        layer
            .disallowed
            .extend(tools("deny", &mut problem).unwrap_or_default());
        layer.skills = fm.fields.get("skills").map(|_| fm.list("skills"));
        layer.parallel = flag(&fm, "parallel", field_line("parallel"), &mut problem);
        layer.dispatch = flag(&fm, "dispatch", field_line("dispatch"), &mut problem);
        layer.isolation = isolation(&fm, field_line("isolation"), &mut problem);
        layer.base = base_instructions(&fm, field_line("base-instructions"), &mut problem);
        if let Some(n) = count(
            &fm,
            "parallel-max",
            field_line("parallel-max"),
            &mut problem,
        ) {
            layer.parallel_max = n as usize;
        }
        layer.max_steps = count(&fm, "max-steps", field_line("max-steps"), &mut problem);
        if layer.parallel && layers.layers.is_empty() {
            problem(
                line,
                format!(
                    "layer `{}` is parallel but is the first layer: a parallel layer runs the \
                     tasks the layer before it assigns — put a planning layer first, or drop \
                     `parallel: true`",
                    layer.name
                ),
            );
        }
        if layers.layers.iter().any(|l| l.name == layer.name) {
            problem(
                line,
                format!(
                    "two layers are named `{}` — each layer keeps its own context under its \
                     name: rename one",
                    layer.name
                ),
            );
        }
        layers.layers.push(layer);
    }
    (layers, problems)
}

fn known(name: &str, known_tools: &[&str]) -> bool {
    name.starts_with("mcp__")
        || known_tools.contains(&name)
        || ORCHESTRATOR_TOOLS.contains(&name)
        || Capability::parse(name).is_some()
}

/// What to say of a name that is neither a tool nor a capability.
fn unknown_tool_hint(name: &str, known_tools: &[&str]) -> String {
    let capabilities = Capability::ALL.map(Capability::name);
    let all: Vec<&str> = known_tools.iter().chain(&capabilities).copied().collect();
    closest(name, &all)
        .map(|k| format!("did you mean `{k}`?"))
        .unwrap_or_else(|| {
            format!(
                "the tools are {}; the capabilities {}",
                known_tools.join(", "),
                capabilities.join(", ")
            )
        })
}

fn flag(fm: &FrontMatter, key: &str, line: usize, problem: &mut dyn FnMut(usize, String)) -> bool {
    match fm.field(key).as_deref() {
        None | Some("false" | "no") => false,
        Some("true" | "yes") => true,
        Some(other) => {
            problem(
                line,
                format!("`{key}: {other}` — write `{key}: true` or `false`"),
            );
            false
        }
    }
}

/// `base-instructions`: on unless it says `false`.
fn base_instructions(
    fm: &FrontMatter,
    line: usize,
    problem: &mut dyn FnMut(usize, String),
) -> bool {
    fm.field("base-instructions").is_none() || flag(fm, "base-instructions", line, problem)
}

fn count(
    fm: &FrontMatter,
    key: &str,
    line: usize,
    problem: &mut dyn FnMut(usize, String),
) -> Option<u32> {
    let value = fm.field(key)?;
    match value.parse::<u32>() {
        Ok(n) if n >= 1 => Some(n),
        _ => {
            problem(
                line,
                format!("`{key}: {value}` — write a whole number of at least 1"),
            );
            None
        }
    }
}

/// Byte offsets and line numbers of the `---` lines that open a layer: at the top or after
/// a blank line, followed by a `key:` line (or the closing `---`), outside code fences and
/// HTML comments — a `---` rule in prose stays prose.
fn block_starts(text: &str) -> Vec<(usize, usize)> {
    let lines: Vec<(usize, &str)> = text
        .split_inclusive('\n')
        .scan(0, |offset, line| {
            let at = *offset;
            *offset += line.len();
            Some((at, line))
        })
        .collect();
    let mut starts = Vec::new();
    let mut fence = false;
    let mut comment = false;
    let mut after_blank = true;
    let mut i = 0;
    while i < lines.len() {
        let (offset, line) = lines[i];
        let trimmed = line.trim_end();
        if comment {
            comment = !trimmed.contains("-->");
            i += 1;
            continue;
        }
        if trimmed.trim_start().starts_with("```") || trimmed.trim_start().starts_with("~~~") {
            fence = !fence;
        } else if !fence && trimmed.contains("<!--") {
            let rest = &trimmed[trimmed.find("<!--").map_or(0, |p| p + 4)..];
            comment = !rest.contains("-->");
        } else if !fence && trimmed == "---" && after_blank && opens_block(&lines[i + 1..]) {
            starts.push((offset, i + 1));
            // Skip to the closing `---`: the block's lines are not prose.
            i += 1;
            while i < lines.len() && lines[i].1.trim_end() != "---" {
                i += 1;
            }
            after_blank = false;
            i += 1;
            continue;
        }
        after_blank = trimmed.trim().is_empty();
        i += 1;
    }
    starts
}

fn opens_block(rest: &[(usize, &str)]) -> bool {
    let Some((_, next)) = rest.iter().find(|(_, l)| !l.trim().is_empty()) else {
        return false;
    };
    let next = next.trim_end();
    if next == "---" {
        return true;
    }
    next.split_once(':').is_some_and(|(key, _)| {
        !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

/// A tool name as stepper spells it: Claude Code's names (`Read`, `Bash(git:*)`,
/// `WebFetch`, `Task`) are taken too.
pub fn tool_name(name: &str) -> String {
    let name = name.trim();
    let name = name.split_once('(').map_or(name, |(n, _)| n).trim();
    match name {
        "Bash" => "bash",
        "Read" => "read",
        "Write" => "write",
        "Edit" => "edit",
        "MultiEdit" => "multi_edit",
        "Glob" => "glob",
        "Grep" => "grep",
        "LS" => "ls",
        "WebFetch" => "web_fetch",
        "WebSearch" => "web_search",
        "TodoWrite" => "todo_write",
        "Skill" => "skill",
        "Task" | "Agent" => "dispatch",
        "NotebookRead" => "read",
        "ListMcpResourcesTool" => "list_mcp_resources",
        "ReadMcpResourceTool" => "read_mcp_resource",
        // Codex's names.
        "shell" => "bash",
        "update_plan" => "todo_write",
        other => other,
    }
    .to_string()
}

/// Claude Code's tools that stepper has no counterpart for, with why: an agent file naming
/// one runs without it, and is told so.
const CLAUDE_CODE_ONLY: &[(&str, &str)] = &[
    ("NotebookEdit", "stepper has no notebook editor"),
    (
        "BashOutput",
        "stepper's bash does not run commands in the background",
    ),
    (
        "TaskOutput",
        "stepper's bash does not run commands in the background",
    ),
    (
        "KillShell",
        "stepper's bash does not run commands in the background",
    ),
    (
        "KillBash",
        "stepper's bash does not run commands in the background",
    ),
    (
        "TaskStop",
        "stepper's bash does not run commands in the background",
    ),
    (
        "ExitPlanMode",
        "plan mode is the session's, set by the user",
    ),
    (
        "EnterPlanMode",
        "plan mode is the session's, set by the user",
    ),
    ("AskUserQuestion", "a subagent does not ask the user"),
    ("SlashCommand", "commands are the user's to run"),
    ("LSP", "stepper has no language-server tool"),
];

/// Why stepper has no counterpart of Claude Code's tool `name`, when it is one of those.
fn claude_code_only(name: &str) -> Option<&'static str> {
    let name = name.trim();
    let name = name.split_once('(').map_or(name, |(n, _)| n).trim();
    CLAUDE_CODE_ONLY
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, why)| *why)
}

/// A named subagent the `dispatch` tool can start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDef {
    pub name: String,
    pub description: String,
    /// `provider/model-id`; the dispatching layer's model when absent.
    pub model: Option<String>,
    /// Its tools (stepper's names); the dispatching layer's when absent.
    pub tools: Option<Vec<String>>,
    /// Tools taken away (`disallowedTools`), besides the dispatching layer's.
    pub disallowed: Vec<String>,
    /// The skills it is offered (of the dispatching layer's); theirs when absent.
    pub skills: Option<Vec<String>>,
    pub instructions: String,
    /// Whether it gets the base instructions too (`base-instructions: false`: only its own).
    pub base: bool,
    /// Where it works; the dispatching layer's, else the settings', when absent.
    pub isolation: Option<Isolation>,
    pub path: PathBuf,
    /// The line of each field of its front matter.
    pub lines: BTreeMap<String, usize>,
}

/// Claude Code's model aliases in agent files.
fn agent_model(model: &str) -> Option<String> {
    match model {
        "inherit" | "" => None,
        other => Some(crate::catalogue::alias(other).unwrap_or(other).to_string()),
    }
}

/// The subagent definitions for a session in `cwd`; the first of a name wins.
pub fn agents(
    cwd: &Path,
    config_dir: &Path,
    home: Option<&Path>,
    known_tools: &[&str],
) -> (Vec<AgentDef>, Vec<Problem>) {
    let mut defs: Vec<AgentDef> = Vec::new();
    let mut problems = Vec::new();
    let mut roots = vec![
        cwd.join(".stepper").join("agents"),
        cwd.join(".claude").join("agents"),
        config_dir.join("agents"),
    ];
    if let Some(home) = home {
        roots.push(home.join(".claude").join("agents"));
    }
    for root in roots {
        let mut files = Vec::new();
        markdown_files(&root, &root, 0, &mut files);
        files.sort();
        for (path, file_name) in files {
            let Some(text) = read(&path, &mut problems) else {
                continue;
            };
            let fm = match front_matter(&text) {
                Ok(fm) => fm,
                Err((line, message)) => {
                    problems.push(Problem {
                        path,
                        line,
                        message,
                    });
                    continue;
                }
            };
            let name = fm.field("name").unwrap_or(file_name);
            if defs.iter().any(|d| d.name == name) {
                continue;
            }
            let lines: BTreeMap<String, usize> = fm
                .fields
                .keys()
                .map(|k| (k.clone(), field_line(&text, 1, k)))
                .collect();
            let at = |key: &str| lines.get(key).copied().unwrap_or(1);
            let model = fm.field("model").and_then(|m| agent_model(&m));
            if let Some(m) = &model
                && let Err(e) = ModelRef::parse(m)
            {
                problems.push(Problem {
                    path,
                    line: at("model"),
                    message: e.to_string(),
                });
                continue;
            }
            // `tools` and Claude Code's `disallowedTools` (or a layer's spelling of it). An
            // empty list is none at all, as Claude Code reads it: every tool.
            let mut list = |key: &str, side: List| {
                let named = fm.list(key);
                (!named.is_empty()).then(|| {
                    let mut names = Vec::new();
                    for written in &named {
                        let t = tool_name(written);
                        // No recursion: a subagent never dispatches.
                        if t == "dispatch" {
                            continue;
                        }
                        let why = if let Some(why) = claude_code_only(&t) {
                            format!(
                                "`{t}` in `{key}` is a Claude Code tool stepper does not have \
                                 ({why}) — the agent runs without it"
                            )
                        } else if known(&t, known_tools) {
                            names.push(t);
                            continue;
                        } else {
                            format!(
                                "unknown tool `{t}` in `{key}` — it is left out ({})",
                                unknown_tool_hint(&t, known_tools)
                            )
                        };
                        problems.push(Problem {
                            path: path.clone(),
                            line: at(key),
                            message: why,
                        });
                    }
                    capability::expand(&names, side)
                })
            };
            let tools = list("tools", List::Allow);
            let mut disallowed = list("disallowedTools", List::Deny).unwrap_or_default();
            for t in list("disallowed-tools", List::Deny).unwrap_or_default() {
                if !disallowed.contains(&t) {
                    disallowed.push(t);
                }
            }
            problems.extend(fm.unused_hooks(&text, &path, "agent"));
            if tools.as_ref().is_some_and(Vec::is_empty) {
                problems.push(Problem {
                    path: path.clone(),
                    line: at("tools"),
                    message: format!(
                        "agent `{name}` is left with no tools: none of `tools` ({}) is one \
                         stepper gives a subagent — name stepper's (read, grep, glob, bash, \
                         edit, …) or leave `tools` out to give it the dispatching agent's",
                        fm.list("tools").join(", ")
                    ),
                });
            }
            defs.push(AgentDef {
                description: fm.field("description").unwrap_or_default(),
                name,
                model,
                tools,
                disallowed,
                skills: fm.fields.get("skills").map(|_| fm.list("skills")),
                instructions: fm.body.trim().to_string(),
                base: base_instructions(&fm, at("base-instructions"), &mut |line, message| {
                    problems.push(Problem {
                        path: path.clone(),
                        line,
                        message,
                    })
                }),
                isolation: isolation(&fm, 1, &mut |line, message| {
                    problems.push(Problem {
                        path: path.clone(),
                        line,
                        message,
                    })
                }),
                path,
                lines,
            });
        }
    }
    (defs, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: &[&str] = &["bash", "read", "grep", "glob", "edit", "write"];

    fn parsed(text: &str) -> (Layers, Vec<String>) {
        let (layers, problems) = parse(Path::new("stepper.md"), text, TOOLS);
        (layers, problems.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn no_front_matter_is_one_plain_layer() {
        let (layers, problems) = parsed("# Project\n\nBuild with make.\n\n---\n\nMore prose.\n");
        assert!(problems.is_empty(), "{problems:?}");
        assert!(!layers.is_layered());
        assert!(layers.preamble.contains("More prose."));
    }

    #[test]
    fn blocks_start_layers_and_bodies_are_instructions() {
        let text = "Shared words.\n\n---\nname: plan\nmodel: anthropic/claude-opus-4-1\ntools: [read, Grep]\nmax-steps: 5\n---\nWrite a plan.\n\n---\nname: code\nparallel: true\nparallel-max: 2\ndisallowed-tools: [bash]\n---\nDo one task.\n\n```\n---\nname: fenced\n---\n```\n";
        let (layers, problems) = parsed(text);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(layers.preamble, "Shared words.");
        let [plan, code] = &layers.layers[..] else {
            panic!("{layers:?}")
        };
        assert_eq!(plan.name, "plan");
        assert_eq!(plan.line, 3);
        assert_eq!(plan.model.as_deref(), Some("anthropic/claude-opus-4-1"));
        assert_eq!(plan.tools, Some(vec!["read".into(), "grep".into()]));
        assert_eq!(plan.max_steps, Some(5));
        assert_eq!(plan.instructions, "Write a plan.");
        assert!(plan.allows("read") && !plan.allows("bash"));
        assert!(code.parallel);
        assert_eq!(code.parallel_max, 2);
        assert!(!code.allows("bash") && code.allows("edit"));
        assert!(code.instructions.contains("name: fenced"));
    }

    #[test]
    fn the_scaffolds_commented_example_is_not_a_layer() {
        let (layers, problems) = parsed(super::super::templates::STEPPER_MD);
        assert!(problems.is_empty(), "{problems:?}");
        assert!(!layers.is_layered());
    }

    #[test]
    fn problems_point_at_their_line() {
        let text = "---\nname: a\nparallel: true\nmodle: x\ntools: [read, frob]\n---\nA.\n\n---\nname: a\nmodel: bad model\nparallel-max: 0\ndispatch: maybe\n---\nB.\n";
        let (_, problems) = parsed(text);
        let joined = problems.join("\n");
        assert!(
            joined.contains("stepper.md:1: layer `a` is parallel but is the first"),
            "{joined}"
        );
        assert!(
            joined
                .contains("stepper.md:4: unknown field `modle` in a layer — did you mean `model`?"),
            "{joined}"
        );
        assert!(
            joined.contains("stepper.md:5: unknown tool `frob`"),
            "{joined}"
        );
        assert!(
            joined.contains("stepper.md:9: two layers are named `a`"),
            "{joined}"
        );
        assert!(
            joined.contains("stepper.md:11: \"bad model\" is not a model reference"),
            "{joined}"
        );
        assert!(
            joined.contains("stepper.md:12: `parallel-max: 0`"),
            "{joined}"
        );
        assert!(
            joined.contains("stepper.md:13: `dispatch: maybe`"),
            "{joined}"
        );
    }

    #[test]
    fn capabilities_in_tool_lists_cover_their_tools_in_every_dialect() {
        let text = "---\nname: look\ndisallowed-tools: [edit, network]\n---\nA.\n\n---\nname: run\ntools: [read, Edit, execute, exectue]\ndeny: [MultiEdit]\n---\nB.\n\n---\nname: codex\ntools: [shell, apply_patch, Read]\n---\nC.\n";
        let all = [
            TOOLS,
            &["multi_edit", "apply_patch", "web_fetch", "web_search"],
        ]
        .concat();
        let (layers, problems) = parse(Path::new("stepper.md"), text, &all);
        let problems: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            problems,
            ["stepper.md:9: unknown tool `exectue` in `tools` — did you mean `execute`?"]
        );
        let [look, run, codex] = &layers.layers[..] else {
            panic!("{layers:?}")
        };
        // A deny list takes the whole capability, in any dialect's names.
        for tool in ["edit", "write", "multi_edit", "apply_patch", "web_fetch"] {
            assert!(!look.allows(tool), "{tool}");
        }
        assert!(look.allows("bash") && look.allows("read"));
        // An allow list grants the tool `edit` or `read` names; `execute` is bash.
        assert_eq!(
            run.tools.as_deref(),
            Some(
                &[
                    "read".into(),
                    "edit".into(),
                    "bash".into(),
                    "exectue".into()
                ][..]
            )
        );
        assert!(!run.allows("write") && !run.allows("grep") && !run.allows("multi_edit"));
        assert_eq!(
            codex.tools,
            Some(vec!["bash".into(), "apply_patch".into(), "read".into()])
        );
        assert_eq!(look.lines.get("disallowed-tools"), Some(&3));
        assert_eq!(run.lines.get("tools"), Some(&9));
    }

    #[test]
    fn agents_take_disallowed_tools_skills_and_their_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(".stepper").join("agents");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("safe.md"),
            "---\nname: safe\ndescription: Looks\ndisallowedTools: Write, Edit\nskills: [beta]\nmodel: x/y\n---\nLook.\n",
        )
        .unwrap();
        let (defs, problems) = agents(tmp.path(), &tmp.path().join("cfg"), None, TOOLS);
        assert!(problems.is_empty(), "{problems:?}");
        let [def] = &defs[..] else { panic!("{defs:?}") };
        assert_eq!(def.tools, None);
        assert_eq!(
            def.disallowed,
            ["write", "edit", "multi_edit", "apply_patch"]
        );
        assert_eq!(def.skills, Some(vec!["beta".into()]));
        assert_eq!(def.lines.get("skills"), Some(&5));
        assert_eq!(def.lines.get("model"), Some(&6));
    }

    #[test]
    fn yaml_in_a_layer_reads_fully_and_its_errors_are_at_the_files_line() {
        let text = "Shared.\n\n---\nname: plan\ndescription: >\n  Plans the work\n  first.\ntools:\n  - read\n  - grep\n---\nP.\n\n---\nname: code\ntools: [read,\n  grep\n---\nC.\n";
        let (layers, problems) = parsed(text);
        let [plan] = &layers.layers[..] else {
            panic!("{layers:?}")
        };
        assert_eq!(plan.description.as_deref(), Some("Plans the work first."));
        assert_eq!(plan.tools, Some(vec!["read".into(), "grep".into()]));
        assert_eq!(plan.lines.get("tools"), Some(&8));
        let [problem] = &problems[..] else {
            panic!("{problems:?}")
        };
        assert!(
            problem.starts_with("stepper.md:16: the front matter is not valid YAML"),
            "{problem}"
        );
    }

    #[test]
    fn an_unclosed_block_is_a_problem_not_a_panic() {
        let (_, problems) = parsed("---\nname: a\nmodel: x/y\n");
        assert_eq!(problems.len(), 1, "{problems:?}");
    }

    #[test]
    fn agents_in_claude_codes_format() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(".claude").join("agents");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("reviewer.md"),
            "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep, Task, Frob\nmodel: haiku\nisolation: worktree\n---\nReview it.\n",
        )
        .unwrap();
        let (defs, problems) = agents(tmp.path(), &tmp.path().join("cfg"), None, TOOLS);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let [def] = &defs[..] else { panic!("{defs:?}") };
        assert_eq!(def.name, "reviewer");
        assert_eq!(def.model.as_deref(), Some("anthropic/claude-haiku-4-5"));
        assert_eq!(def.tools, Some(vec!["read".into(), "grep".into()]));
        assert_eq!(def.instructions, "Review it.");
        assert_eq!(def.isolation, Some(Isolation::Worktree));
    }

    #[test]
    fn agents_with_full_yaml_load_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(".claude").join("agents");
        std::fs::create_dir_all(&dir).unwrap();
        // Folded description, a block list of tools and a nested hooks map, as Claude Code
        // writes agents: none of it drops the agent.
        std::fs::write(
            dir.join("guard.md"),
            "---\nname: guard\ndescription: >-\n  Guards the main branch.\n  Use before any edit.\ntools:\n  - Read\n  - Grep\nhooks:\n  PreToolUse:\n    - matcher: Edit\n      hooks:\n        - type: command\n          command: ./no-main.sh\nmodel: sonnet\n---\nGuard it.\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("broken.md"),
            "---\nname: broken\ndescription: \"never closed\ntools: Read\n---\nX.\n",
        )
        .unwrap();
        let (defs, problems) = agents(tmp.path(), &tmp.path().join("cfg"), None, TOOLS);
        let [def] = &defs[..] else { panic!("{defs:?}") };
        assert_eq!(def.name, "guard");
        assert_eq!(
            def.description,
            "Guards the main branch. Use before any edit."
        );
        assert_eq!(def.tools, Some(vec!["read".into(), "grep".into()]));
        assert_eq!(def.model.as_deref(), Some("anthropic/claude-sonnet-4-5"));
        assert_eq!(def.lines.get("model"), Some(&15));
        let [broken, hooks] = &problems[..] else {
            panic!("{problems:?}")
        };
        assert!(broken.path.ends_with("broken.md"));
        assert_eq!(broken.line, 3, "{broken}");
        // Its hooks are not run, and that is said at their line.
        assert!(hooks.path.ends_with("guard.md"));
        assert_eq!(hooks.line, 9);
        assert!(
            hooks
                .message
                .starts_with("`hooks` in an agent's front matter are not run by stepper"),
            "{hooks}"
        );
    }

    #[test]
    fn claude_codes_tool_names_map_or_are_dropped_with_a_problem() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(".claude").join("agents");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("searcher.md"),
            "---\nname: searcher\ndescription: Searches\ntools: WebSearch, NotebookEdit, Read, LS, BashOutput\n---\nS.\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("notes.md"),
            "---\nname: notes\ndescription: Edits notebooks\n\ntools: [NotebookEdit, Task]\n---\nN.\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("all.md"),
            "---\nname: all\ndescription: Everything\ntools:\n---\nA.\n",
        )
        .unwrap();
        let known = [TOOLS, &["ls", "web_search"]].concat();
        let (defs, problems) = agents(tmp.path(), &tmp.path().join("cfg"), None, &known);
        let tools = |name: &str| defs.iter().find(|d| d.name == name).unwrap().tools.clone();
        assert_eq!(
            tools("searcher"),
            Some(vec!["web_search".into(), "read".into(), "ls".into()])
        );
        // All its tools dropped: it says so, and the agent still loads, with none.
        assert_eq!(tools("notes"), Some(vec![]));
        // `tools:` with nothing is no list at all: every tool, as Claude Code reads it.
        assert_eq!(tools("all"), None);
        let problems: Vec<String> = problems
            .iter()
            .map(|p| {
                format!(
                    "{}:{}: {}",
                    p.path.file_name().unwrap().to_string_lossy(),
                    p.line,
                    p.message
                )
            })
            .collect();
        assert_eq!(
            problems,
            [
                "notes.md:5: `NotebookEdit` in `tools` is a Claude Code tool stepper does not \
                 have (stepper has no notebook editor) — the agent runs without it",
                "notes.md:5: agent `notes` is left with no tools: none of `tools` \
                 (NotebookEdit, Task) is one stepper gives a subagent — name stepper's (read, \
                 grep, glob, bash, edit, …) or leave `tools` out to give it the dispatching \
                 agent's",
                "searcher.md:4: `NotebookEdit` in `tools` is a Claude Code tool stepper does \
                 not have (stepper has no notebook editor) — the agent runs without it",
                "searcher.md:4: `BashOutput` in `tools` is a Claude Code tool stepper does not \
                 have (stepper's bash does not run commands in the background) — the agent \
                 runs without it",
            ]
        );
    }

    #[test]
    fn isolation_is_a_worktree_or_none_and_anything_else_is_a_problem() {
        let text = "---\nname: plan\n---\nP.\n\n---\nname: work\nparallel: true\nisolation: worktree\n---\nW.\n\n---\nname: last\nisolation: worktrees\n---\nL.\n";
        let (layers, problems) = parsed(text);
        assert_eq!(layers.layers[0].isolation, None);
        assert_eq!(layers.layers[1].isolation, Some(Isolation::Worktree));
        assert_eq!(layers.layers[2].isolation, None);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0]
                .starts_with("stepper.md:15: `isolation: worktrees` — write `isolation: worktree`"),
            "{problems:?}"
        );
    }
}
