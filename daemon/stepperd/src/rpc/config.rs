//! `models/list`, `config/schema`, `config/validate`, `project/init`.

use std::path::Path;

use jsonrpsee::RpcModule;
use stepper_engine::config::{Settings, layers, templates, validate};
use stepper_engine::model::DEFAULT_MODEL;
use stepper_protocol::methods::*;

use super::{Conn, RpcError, register};
use crate::daemon::Daemon;

pub(super) fn register_all(m: &mut RpcModule<Conn>) {
    register::<ModelsList, _, _>(m, |conn, p| async move {
        let daemon = &conn.daemon;
        let settings = daemon
            .hub
            .deps()
            .settings
            .get(p.cwd.as_deref().map(Path::new))
            .await?;
        Ok(models_list(daemon, &settings))
    });

    register::<ConfigSchema, _, _>(m, |_, _| async move {
        Ok(ConfigSchemaResponse {
            schema: Settings::schema(),
        })
    });

    register::<CommandsList, _, _>(m, |conn, p| async move {
        let ext = extensions_of(&conn, Path::new(&p.cwd)).await;
        // The daemon's own, answered for any client; then those a client runs itself.
        let mut commands: Vec<CommandInfo> = crate::hub::builtin::BUILTINS
            .iter()
            .map(|(name, args, description)| CommandInfo {
                name: (*name).into(),
                description: (*description).into(),
                argument_hint: (!args.is_empty()).then(|| (*args).into()),
                kind: CommandKind::Builtin,
                scope: None,
            })
            .collect();
        commands.extend(
            CLIENT_COMMANDS
                .iter()
                .map(|(name, description)| CommandInfo {
                    name: (*name).into(),
                    description: (*description).into(),
                    argument_hint: None,
                    kind: CommandKind::Client,
                    scope: None,
                }),
        );
        commands.extend(ext.commands.iter().map(|c| CommandInfo {
            name: c.name.clone(),
            description: c.description.clone(),
            argument_hint: c.argument_hint.clone(),
            kind: CommandKind::Command,
            scope: Some(CommandScope::parse(c.scope)),
        }));
        commands.extend(
            ext.skills
                .iter()
                .filter(|s| s.user_invocable)
                .map(|s| CommandInfo {
                    name: s.name.clone(),
                    description: s.description.clone(),
                    argument_hint: s.argument_hint.clone(),
                    kind: CommandKind::Skill,
                    scope: Some(CommandScope::parse(s.scope)),
                }),
        );
        // The prompts of the folder's running MCP servers.
        commands.extend(
            conn.daemon
                .hub
                .deps()
                .mcp
                .prompt_commands(Path::new(&p.cwd))
                .await,
        );
        // A built-in's name is taken: a file of the same name is listed after it and not run.
        let mut seen = std::collections::HashSet::new();
        commands.retain(|c| seen.insert(c.name.clone()));
        Ok(CommandsListResponse { commands })
    });

    register::<ConfigValidate, _, _>(m, |conn, p| async move {
        // stepper's files whether or not they exist (where one would go); Claude Code's when
        // there is one, since a user of stepper alone has none.
        let files: Vec<_> = conn
            .daemon
            .hub
            .deps()
            .settings
            .files(Path::new(&p.cwd))
            .into_iter()
            .filter(|f| !stepper_engine::config::claude::is_claude(f) || f.exists())
            .collect();
        let checked = files.clone();
        let problems = tokio::task::spawn_blocking(move || {
            checked
                .iter()
                .flat_map(|f| stepper_engine::config::check::validate_file(f))
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| RpcError::Internal(e.to_string()))?;
        // Commands and skills are checked with the settings.
        let ext = extensions_of(&conn, Path::new(&p.cwd)).await;
        // A file that loads despite its problem (hooks it runs without) is warned of.
        let broken = ext.problems.iter().map(|p| ConfigProblem {
            file: p.path.display().to_string(),
            line: u32::try_from(p.line).unwrap_or(u32::MAX),
            column: 1,
            severity: if ext.loaded(&p.path) {
                Severity::Warning
            } else {
                Severity::Error
            },
            message: p.message.clone(),
            hint: None,
        });
        // So are the layers of stepper.md and the subagent definitions.
        let names = crate::hub::tool_names(&conn.daemon.hub.deps().tools);
        let (cwd, config_dir) = (
            std::path::PathBuf::from(&p.cwd),
            conn.daemon.places.config_dir.clone(),
        );
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        // Claude Code's settings name no MCP servers: `.mcp.json` is checked below.
        let settings_files: Vec<_> = files
            .iter()
            .filter(|f| !stepper_engine::config::claude::is_claude(f))
            .cloned()
            .collect();
        // Settings that do not load are reported above; the models are then checked against
        // the conventional providers alone.
        let settings = conn
            .daemon
            .hub
            .deps()
            .settings
            .get(Some(&cwd))
            .await
            .unwrap_or_default();
        let providers = conn.daemon.hub.deps().providers.clone();
        let skills = ext.skills.clone();
        let (layer_file, layer_problems, agent_notes, references, mcp_problems) =
            tokio::task::spawn_blocking(move || {
                let known: Vec<&str> = names.iter().map(String::as_str).collect();
                let (layers, mut problems) = layers::load(&cwd, &config_dir, &known);
                let (agents, agent_problems) =
                    layers::agents(&cwd, &config_dir, home.as_deref(), &known);
                // A problem in an agent that still loads (a tool it runs without) is a
                // warning; one that kept its file from loading, an error.
                let (notes, dropped): (Vec<_>, Vec<_>) = agent_problems
                    .into_iter()
                    .partition(|p| agents.iter().any(|a| a.path == p.path));
                problems.extend(dropped);
                // What they name that is not there: skills, the skill tool, models.
                let references =
                    crate::hub::references::check(&layers, &agents, &skills, &providers, &settings);
                // And the MCP servers of the settings and of .mcp.json.
                let mcp = crate::hub::mcp::validate(&cwd, &settings_files);
                (layers.path, problems, notes, references, mcp)
            })
            .await
            .map_err(|e| RpcError::Internal(e.to_string()))?;
        let broken = broken.chain(
            mcp_problems
                .into_iter()
                .map(|(file, line, column, message)| ConfigProblem {
                    file: file.display().to_string(),
                    line: u32::try_from(line).unwrap_or(u32::MAX),
                    column: u32::try_from(column).unwrap_or(u32::MAX),
                    severity: Severity::Error,
                    message,
                    hint: None,
                }),
        );
        let broken = broken.chain(layer_problems.into_iter().map(|p| ConfigProblem {
            file: p.path.display().to_string(),
            line: u32::try_from(p.line).unwrap_or(u32::MAX),
            column: 1,
            severity: Severity::Error,
            message: p.message,
            hint: None,
        }));
        let broken = broken.chain(agent_notes.into_iter().map(|p| ConfigProblem {
            file: p.path.display().to_string(),
            line: u32::try_from(p.line).unwrap_or(u32::MAX),
            column: 1,
            severity: Severity::Warning,
            message: p.message,
            hint: None,
        }));
        let mut files = files;
        files.extend(layer_file);
        files.extend(crate::hub::mcp::mcp_json_path(Path::new(&p.cwd)));
        Ok(ConfigValidateResponse {
            files: files.iter().map(|f| f.display().to_string()).collect(),
            problems: problems
                .into_iter()
                .chain(references)
                .map(|p| ConfigProblem {
                    file: p.file.display().to_string(),
                    line: u32::try_from(p.line).unwrap_or(u32::MAX),
                    column: u32::try_from(p.column).unwrap_or(u32::MAX),
                    severity: match p.severity {
                        validate::Severity::Error => Severity::Error,
                        validate::Severity::Warning => Severity::Warning,
                    },
                    message: p.message,
                    hint: p.hint,
                })
                .chain(broken)
                .collect(),
        })
    });

    register::<ProjectInit, _, _>(m, |_, p| async move {
        let dir = Path::new(&p.cwd).join(".stepper");
        let force = p.force;
        tokio::task::spawn_blocking(move || project_init(&dir, force))
            .await
            .map_err(|e| RpcError::Internal(e.to_string()))?
            .map_err(|e| RpcError::InvalidParams(format!("cannot write into {}: {e}", p.cwd)))
    });
}

/// Write the scaffold into `dir` (`.stepper`), leaving existing files unless `force`.
fn project_init(dir: &Path, force: bool) -> std::io::Result<ProjectInitResponse> {
    std::fs::create_dir_all(dir)?;
    let mut out = ProjectInitResponse {
        created: Vec::new(),
        skipped: Vec::new(),
    };
    for (name, contents) in [
        ("stepper.md", templates::STEPPER_MD),
        ("setting.json", templates::SETTING_JSON),
        (".gitignore", templates::GITIGNORE),
    ] {
        let path = dir.join(name);
        if path.exists() && !force {
            out.skipped.push(path.display().to_string());
            continue;
        }
        std::fs::write(&path, contents)?;
        out.created.push(path.display().to_string());
    }
    Ok(out)
}

fn models_list(daemon: &Daemon, settings: &Settings) -> ModelsListResponse {
    let providers = &daemon.hub.deps().providers;
    let models = providers
        .catalogue(settings)
        .into_iter()
        .map(|(model, configured)| {
            let info = providers.model_info(&model, settings);
            ModelEntry {
                id: model.to_string(),
                provider: model.provider,
                context_window: info.context_window(),
                max_output: info.max_output(),
                input_price: info.input_price,
                output_price: info.output_price,
                cache_read_price: info.cache_read_price,
                cache_write_price: info.cache_write_price,
                configured,
                images: info.images,
                pdf: info.pdf,
            }
        })
        .collect();
    ModelsListResponse {
        default: settings
            .model
            .clone()
            .unwrap_or_else(|| DEFAULT_MODEL.into()),
        models,
    }
}

/// The custom commands and skills of a folder (with the daemon's home for `~/.claude`).
async fn extensions_of(
    conn: &Conn,
    cwd: &Path,
) -> std::sync::Arc<stepper_engine::config::extensions::Extensions> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    conn.daemon
        .hub
        .deps()
        .extensions
        .get(cwd, home.as_deref())
        .await
}

/// The commands a client runs itself (the TUI's), as `commands/list` names them.
const CLIENT_COMMANDS: &[(&str, &str)] = &[
    ("mode", "permission mode: default, accept-edits, plan, auto"),
    ("memory", "the instructions turns get, and their files"),
    ("cost", "tokens and cost of this session so far"),
    ("fork", "continue in a copy of this session: /fork [TURN]"),
    (
        "init",
        "scaffold .stepper/stepper.md and .stepper/setting.json",
    ),
    (
        "rewind",
        "undo turns: /rewind N [--files-only|--conversation-only]",
    ),
    ("continue", "resume an interrupted turn"),
];
