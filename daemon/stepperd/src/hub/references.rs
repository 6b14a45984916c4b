//! What layers and subagent definitions name that the session does not have: a skill that
//! does not exist (or only the user may run), a `skills:` list whose tools leave out the
//! `skill` tool (the agent would be offered none), a `model:` no provider knows. Each is said
//! at its file and line by `config --validate`, and as a notice at the start of a turn.

use std::path::Path;

use stepper_engine::ModelRef;
use stepper_engine::config::Settings;
use stepper_engine::config::extensions::Skill;
use stepper_engine::config::layers::{AgentDef, Layers, permits};
use stepper_engine::config::validate::{Problem, Severity, closest};
use stepper_providers::Providers;

/// One layer or agent, as far as this check goes.
struct Named<'a> {
    /// `layer `plan`` or `agent `reviewer``, for messages.
    who: String,
    path: &'a Path,
    line: &'a dyn Fn(&str) -> usize,
    model: Option<&'a str>,
    skills: Option<&'a [String]>,
    /// Whether its own lists let it use the `skill` tool.
    skill_tool: bool,
}

/// The problems of what `layers` and `agents` name, given the folder's `skills`, the
/// `providers` and the folder's `settings`.
pub(crate) fn check(
    layers: &Layers,
    agents: &[AgentDef],
    skills: &[Skill],
    providers: &Providers,
    settings: &Settings,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    if let Some(path) = &layers.path {
        for layer in &layers.layers {
            let line = |key: &str| layer.lines.get(key).copied().unwrap_or(layer.line);
            named(
                &Named {
                    who: format!("layer `{}`", layer.name),
                    path,
                    line: &line,
                    model: layer.model.as_deref(),
                    skills: layer.skills.as_deref(),
                    skill_tool: layer.allows("skill"),
                },
                skills,
                providers,
                settings,
                &mut problems,
            );
        }
    }
    for agent in agents {
        let line = |key: &str| agent.lines.get(key).copied().unwrap_or(1);
        named(
            &Named {
                who: format!("agent `{}`", agent.name),
                path: &agent.path,
                line: &line,
                model: agent.model.as_deref(),
                skills: agent.skills.as_deref(),
                skill_tool: permits(agent.tools.as_deref(), &agent.disallowed, "skill"),
            },
            skills,
            providers,
            settings,
            &mut problems,
        );
    }
    problems
}

/// The problems as a turn's notices say them.
pub(crate) fn notices(problems: &[Problem]) -> Vec<String> {
    problems
        .iter()
        .map(|p| {
            let hint = p
                .hint
                .as_deref()
                .map(|h| format!(" — {h}"))
                .unwrap_or_default();
            format!("{}:{}: {}{hint}", p.file.display(), p.line, p.message)
        })
        .collect()
}

fn named(
    n: &Named<'_>,
    skills: &[Skill],
    providers: &Providers,
    settings: &Settings,
    all: &mut Vec<Problem>,
) {
    let mut problems = Vec::new();
    let mut problem = |key: &str, severity, message: String, hint: String| {
        problems.push(Problem {
            file: n.path.to_path_buf(),
            line: (n.line)(key),
            column: 1,
            severity,
            message,
            hint: Some(hint),
        });
    };
    if let Some(listed) = n.skills {
        let offered: Vec<&str> = skills
            .iter()
            .filter(|s| !s.disable_model_invocation)
            .map(|s| s.name.as_str())
            .collect();
        for name in listed {
            match skills.iter().find(|s| s.name == *name) {
                Some(skill) if skill.disable_model_invocation => problem(
                    "skills",
                    Severity::Error,
                    format!(
                        "{} lists the skill `{name}`, which only you may run \
                         (`disable-model-invocation: true`), so it is not offered",
                        n.who
                    ),
                    format!("run it yourself as /{name}, or drop it from `skills`"),
                ),
                Some(_) => {}
                None => {
                    let hint = match closest(name, &offered) {
                        Some(near) => format!("did you mean `{near}`?"),
                        None if offered.is_empty() => "there are no skills here: a skill is a \
                             folder .stepper/skills/<name>/ or .claude/skills/<name>/ with a \
                             SKILL.md"
                            .to_string(),
                        None => format!("the skills are {}", offered.join(", ")),
                    };
                    problem(
                        "skills",
                        Severity::Error,
                        format!("{} lists an unknown skill `{name}`", n.who),
                        hint,
                    );
                }
            }
        }
        if !listed.is_empty() && !n.skill_tool {
            problem(
                "skills",
                Severity::Error,
                format!(
                    "{} lists skills, but its tools leave out `skill`, so it is offered none",
                    n.who
                ),
                "add `skill` to its `tools`, or drop `skills`".into(),
            );
        }
    }
    if let Some(model) = n.model
        && let Ok(model_ref) = ModelRef::parse(model)
        && let Some(unknown) = providers.unknown(&model_ref, settings)
    {
        // A provider nobody has fails the agent; a model stepper does not know may still be
        // one the provider has.
        let severity = if unknown.provider {
            Severity::Error
        } else {
            Severity::Warning
        };
        problem(
            "model",
            severity,
            format!("{}: {}", n.who, unknown.message),
            unknown.hint,
        );
    }
    problems.sort_by_key(|p| p.line);
    all.extend(problems);
}
