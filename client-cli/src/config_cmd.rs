//! `stepper init` and `stepper config --schema | --validate`.

use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use stepper_protocol::methods::{
    ConfigSchema, ConfigValidate, CwdParams, Empty, ProjectInit, ProjectInitParams, Severity,
};

use crate::connect::{connect_or_start, places};

#[derive(Args)]
pub struct InitArgs {
    /// Overwrite the files if they exist.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
#[group(required = true, multiple = false)]
pub struct ConfigArgs {
    /// Print the JSON Schema of setting.json.
    #[arg(long)]
    schema: bool,
    /// Check the settings files that apply here: every problem, with file, line and column.
    #[arg(long)]
    validate: bool,
}

fn cwd() -> anyhow::Result<String> {
    Ok(crate::connect::working_dir()?.display().to_string())
}

pub async fn init(args: InitArgs) -> anyhow::Result<ExitCode> {
    let client = connect_or_start(&places()?, "stepper init").await?;
    let out = client
        .call::<ProjectInit>(ProjectInitParams {
            cwd: cwd()?,
            force: args.force,
        })
        .await?;
    for f in &out.created {
        println!("created {f}");
    }
    for f in &out.skipped {
        println!("kept    {f} (exists; --force overwrites)");
    }
    if !out.created.is_empty() {
        println!(
            "\nEdit .stepper/stepper.md to tell stepper about this project; the comments in\n.stepper/setting.json explain each setting."
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn config(args: ConfigArgs) -> anyhow::Result<ExitCode> {
    let client = connect_or_start(&places()?, "stepper config").await?;
    if args.schema {
        let out = client.call::<ConfigSchema>(Empty {}).await?;
        println!("{}", serde_json::to_string_pretty(&out.schema)?);
        return Ok(ExitCode::SUCCESS);
    }
    if !args.validate {
        bail!("say --schema or --validate");
    }
    let out = client
        .call::<ConfigValidate>(CwdParams { cwd: cwd()? })
        .await?;
    let errors = out
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .count();
    // Every file read, stepper's and Claude Code's, so a file that is not where it should be
    // shows by its absence.
    for file in out
        .files
        .iter()
        .filter(|f| std::path::Path::new(f).exists())
    {
        println!("read {file}");
    }
    for p in &out.problems {
        println!(
            "{}:{}:{}: {}: {}",
            p.file, p.line, p.column, p.severity, p.message
        );
        if let Some(hint) = &p.hint {
            println!("    hint: {hint}");
        }
    }
    let existing: Vec<_> = out
        .files
        .iter()
        .filter(|f| std::path::Path::new(f).exists())
        .collect();
    if out.problems.is_empty() {
        match existing.len() {
            0 => println!("no settings files here (stepper init creates .stepper/setting.json)"),
            n => println!("{n} settings file(s) checked: no problems"),
        }
    } else {
        println!(
            "{errors} error(s), {} warning(s)",
            out.problems.len() - errors
        );
    }
    Ok(if errors > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
