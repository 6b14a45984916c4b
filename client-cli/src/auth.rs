//! `stepper auth`: sign in with ChatGPT, store API keys for the daemon, see and forget them.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use stepper_protocol::client::{ConnectOptions, DaemonClient};
use stepper_protocol::methods::{
    AuthLogin, AuthLoginParams, AuthLogout, AuthLogoutParams, AuthStatus, AuthStatusResponse,
    AuthWaitLogin, AuthWaitLoginParams, Empty,
};

use crate::connect::{client_info, connect_or_start, places};

#[derive(Subcommand)]
pub enum AuthCommand {
    /// Sign in with ChatGPT (--codex), or store an API key for the daemon (--anthropic,
    /// --openai, --provider NAME). The key is read from stdin; a key in the environment of
    /// the client that starts a session still wins.
    Login(LoginArgs),
    /// Who is signed in and which keys are stored.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Forget the ChatGPT sign-in or a stored key.
    Logout(Which),
}

#[derive(Args)]
#[group(required = true, multiple = false)]
pub struct Which {
    /// ChatGPT sign-in (Codex models: codex/gpt-5-codex).
    #[arg(long)]
    codex: bool,
    #[arg(long)]
    anthropic: bool,
    #[arg(long)]
    openai: bool,
    /// Any provider named in setting.json.
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// A local OpenAI-compatible server (Ollama, LM Studio, llama.cpp, vLLM) at this base
    /// URL: probed, then stored as provider `local` (or --name), so `local/<model>` goes
    /// to it and new sessions start on it when no other provider is set up.
    #[arg(long, value_name = "URL")]
    local: Option<String>,
}

#[derive(Args)]
pub struct LoginArgs {
    #[command(flatten)]
    which: Which,
    /// With --local: the model new sessions start on (the server's first when absent).
    #[arg(long, requires = "local")]
    model: Option<String>,
    /// With --local: the provider name models go by (default: local).
    #[arg(long, requires = "local", value_name = "NAME")]
    name: Option<String>,
}

impl Which {
    fn name(&self) -> String {
        match (self.codex, self.anthropic, self.openai, &self.provider) {
            (true, ..) => "codex".into(),
            (_, true, ..) => "anthropic".into(),
            (_, _, true, _) => "openai".into(),
            (_, _, _, Some(p)) => p.clone(),
            _ if self.local.is_some() => "local".into(),
            _ => "codex".into(),
        }
    }
}

pub async fn run(command: AuthCommand) -> anyhow::Result<ExitCode> {
    let places = places()?;
    match command {
        AuthCommand::Status { json } => {
            let client = connect_or_start(&places, "stepper auth").await?;
            let status = client.call::<AuthStatus>(Empty {}).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                print_status(&status);
            }
            Ok(ExitCode::SUCCESS)
        }
        AuthCommand::Logout(which) => {
            let client = connect_or_start(&places, "stepper auth").await?;
            let provider = which.name();
            let out = client
                .call::<AuthLogout>(AuthLogoutParams {
                    provider: provider.clone(),
                })
                .await?;
            if out.removed {
                println!(
                    "forgot {}",
                    if provider == "codex" {
                        "the ChatGPT sign-in".into()
                    } else {
                        format!("the {provider} key")
                    }
                );
            } else {
                println!("nothing stored for {provider}");
            }
            Ok(ExitCode::SUCCESS)
        }
        AuthCommand::Login(args) if args.which.codex => login_codex(&places).await,
        AuthCommand::Login(LoginArgs {
            which: Which {
                local: Some(url), ..
            },
            model,
            name,
        }) => {
            let client = connect_or_start(&places, "stepper auth").await?;
            let provider = name.unwrap_or_else(|| "local".into());
            client
                .call::<AuthLogin>(AuthLoginParams {
                    provider: provider.clone(),
                    api_key: None,
                    base_url: Some(url),
                    model: model.clone(),
                })
                .await?;
            let status = client.call::<AuthStatus>(Empty {}).await?;
            let server = status.local_servers.iter().find(|s| s.name == provider);
            match server {
                Some(s) => println!(
                    "stored {} as provider {provider}{}",
                    s.base_url,
                    s.model
                        .as_deref()
                        .map(|m| format!(": new sessions can start on {provider}/{m}"))
                        .unwrap_or_default()
                ),
                None => println!("stored the server as provider {provider}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        AuthCommand::Login(LoginArgs { which, .. }) => {
            let provider = which.name();
            let key = read_key(&provider)?;
            let client = connect_or_start(&places, "stepper auth").await?;
            client
                .call::<AuthLogin>(AuthLoginParams {
                    provider: provider.clone(),
                    api_key: Some(key),
                    base_url: None,
                    model: None,
                })
                .await?;
            println!(
                "stored the {provider} key for the daemon (a key in your environment still wins)"
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn login_codex(places: &stepper_protocol::places::Places) -> anyhow::Result<ExitCode> {
    // Make sure a daemon runs, then wait long: the user is in the browser.
    drop(connect_or_start(places, "stepper auth").await?);
    let options = ConnectOptions {
        request_timeout: Duration::from_secs(11 * 60),
        ..Default::default()
    };
    let client =
        DaemonClient::connect_with(&places.socket, client_info("stepper auth"), options).await?;
    let (login_id, url) = begin_sign_in(&client).await?;
    println!("Sign in with ChatGPT by opening this page in a browser:\n\n  {url}\n");
    std::io::stdout().flush()?;
    if open_browser(&url) {
        println!("(opened in your browser)");
    }
    println!("Waiting for the browser… (Ctrl-C to give up)");
    let status = client
        .call::<AuthWaitLogin>(AuthWaitLoginParams { login_id })
        .await?;
    let who = status
        .codex
        .as_ref()
        .and_then(|c| c.email.clone())
        .unwrap_or_else(|| "your ChatGPT account".into());
    println!(
        "Signed in as {who}. Use a Codex model, e.g. stepper ask --model codex/gpt-5-codex \"...\""
    );
    Ok(ExitCode::SUCCESS)
}

/// Try the desktop's opener; false when there is none (an SSH session, a server).
pub(crate) fn open_browser(url: &str) -> bool {
    if std::env::var_os("STEPPER_NO_BROWSER").is_some() {
        return false;
    }
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    if cfg!(all(unix, not(target_os = "macos")))
        && std::env::var_os("DISPLAY").is_none()
        && std::env::var_os("WAYLAND_DISPLAY").is_none()
    {
        return false;
    }
    std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The key from stdin; at a terminal, asked for without echo.
fn read_key(provider: &str) -> anyhow::Result<String> {
    let stdin = std::io::stdin();
    let at_terminal = stdin.is_terminal();
    if at_terminal {
        eprint!("{provider} API key: ");
        std::io::stderr().flush()?;
        set_echo(false);
    }
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    if at_terminal {
        set_echo(true);
        eprintln!();
    }
    read.context("reading the key")?;
    let key = line.trim().to_string();
    if key.is_empty() {
        bail!(
            "no key given: type it at the prompt, or pipe it in (stepper auth login --{provider} < keyfile)"
        );
    }
    Ok(key)
}

fn set_echo(on: bool) {
    // `stty` on the controlling terminal: no unsafe termios code for one prompt.
    let _ = std::process::Command::new("stty")
        .arg(if on { "echo" } else { "-echo" })
        .stdin(std::process::Stdio::inherit())
        .status();
}

fn print_status(status: &AuthStatusResponse) {
    match &status.codex {
        Some(c) => println!(
            "ChatGPT: signed in as {}{}",
            c.email.as_deref().unwrap_or("(unknown email)"),
            c.plan
                .as_deref()
                .map(|p| format!(" ({p} plan)"))
                .unwrap_or_default()
        ),
        None => println!("ChatGPT: not signed in (stepper auth login --codex)"),
    }
    if status.stored_keys.is_empty() {
        println!("stored API keys: none");
    } else {
        println!("stored API keys: {}", status.stored_keys.join(", "));
    }
    for s in &status.local_servers {
        println!(
            "local server {}: {}{}",
            s.name,
            s.base_url,
            s.model
                .as_deref()
                .map(|m| format!(" (starts on {m})"))
                .unwrap_or_default()
        );
    }
}

/// Starts a ChatGPT sign-in in the daemon: its login id and the page to open.
pub(crate) async fn begin_sign_in(client: &DaemonClient) -> anyhow::Result<(String, String)> {
    let begun = client
        .call::<AuthLogin>(AuthLoginParams {
            provider: "codex".into(),
            api_key: None,
            base_url: None,
            model: None,
        })
        .await?;
    let (Some(url), Some(login_id)) = (begun.url, begun.login_id) else {
        bail!("the daemon did not start a sign-in");
    };
    Ok((login_id, url))
}
