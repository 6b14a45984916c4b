//! `stepper models`: the models stepper knows, with their windows and prices.

use std::process::ExitCode;

use clap::Args;
use stepper_protocol::methods::{ModelsList, ModelsListParams};

use crate::connect::{connect_or_start, places};

#[derive(Args)]
pub struct ModelsArgs {
    #[arg(long)]
    json: bool,
}

pub async fn run(args: ModelsArgs) -> anyhow::Result<ExitCode> {
    let client = connect_or_start(&places()?, "stepper models").await?;
    let cwd = crate::connect::working_dir()
        .ok()
        .map(|d| d.display().to_string());
    let list = client.call::<ModelsList>(ModelsListParams { cwd }).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("default: {}\n", list.default);
    println!(
        "{:<40} {:>9} {:>8} {:>16}",
        "MODEL", "CONTEXT", "OUTPUT", "$/M IN / OUT"
    );
    for m in &list.models {
        let price = match (m.input_price, m.output_price) {
            (Some(i), Some(o)) => format!("{i} / {o}"),
            _ => "-".into(),
        };
        println!(
            "{:<40} {:>9} {:>8} {:>16}",
            m.id, m.context_window, m.max_output, price
        );
    }
    Ok(ExitCode::SUCCESS)
}
