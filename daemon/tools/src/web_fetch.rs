//! The web_fetch tool: one http(s) URL fetched and turned into text the model can read — HTML
//! as Markdown, text as it is, binaries refused. Redirects are followed by hand so that a hop to
//! another host passes the permission gate just as the first URL did.

use std::future::Future;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use reqwest::{StatusCode, Url};
use serde::Deserialize;
use serde_json::json;
use stepper_engine::tool::{
    GateRequest, Tool, ToolCx, ToolError, ToolOutput, ToolResult, ToolSpec, parse_args,
};

/// Redirects followed before giving up (a loop ends here too).
const MAX_REDIRECTS: usize = 5;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Network time for the whole fetch, every hop together. Time spent waiting for permission
/// does not count: a person answering a prompt must not make the fetch time out.
const TOTAL_TIMEOUT: Duration = Duration::from_secs(30);
/// Body bytes read; the rest is never downloaded.
const MAX_BODY: usize = 10 * 1024 * 1024;
/// Body bytes read from an error response, for its snippet.
const MAX_ERROR_BODY: usize = 64 * 1024;
const ERROR_SNIPPET_CHARS: usize = 300;
/// Characters of the result given to the model.
const MAX_OUTPUT_CHARS: usize = 100_000;
const USER_AGENT: &str = concat!(
    "stepper/",
    env!("CARGO_PKG_VERSION"),
    " (web_fetch tool of the stepper coding agent)"
);
/// Markdown first: some sites serve it to agents that ask, and it needs no conversion.
const ACCEPT_TYPES: &str = "text/markdown, text/html;q=0.9, text/plain;q=0.8, */*;q=0.5";
/// Elements whose text is noise to a reader of the page.
const NOISE_TAGS: &[&str] = &[
    "script", "style", "noscript", "template", "iframe", "object", "embed", "svg", "canvas", "nav",
    "footer", "form", "button",
];

/// The tool, holding one HTTP client (and so one connection pool) for all its calls.
pub struct WebFetch {
    client: reqwest::Client,
}

impl WebFetch {
    /// Fails only when the TLS backend cannot be set up.
    pub fn new() -> Result<WebFetch, reqwest::Error> {
        let client = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            // Followed by hand in `fetch`, so that each new host is gated.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT)
            // A backstop: `Budget` enforces the limit across hops.
            .timeout(TOTAL_TIMEOUT)
            .build()?;
        Ok(WebFetch { client })
    }
}

#[derive(Deserialize)]
struct Args {
    url: String,
    /// What the model is looking for; echoed back so it remembers why it fetched.
    #[serde(default)]
    prompt: Option<String>,
}

impl Tool for WebFetch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "web_fetch".into(),
            description: "Fetch an http:// or https:// URL and return its content as text: HTML \
                converted to Markdown; plain text, Markdown and JSON as they are. Images, PDFs \
                and other binary files are refused. Redirects are followed (at most 5). The URL \
                must be complete, with its scheme: it is not rewritten or upgraded. At most 10 MiB \
                is read and 100000 characters returned; the fetch gives up after 30 s. Say in \
                `prompt` what you are looking for: it is repeated at the top of the result."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "url": { "type": "string", "description": "The absolute http:// or https:// URL to fetch." },
                    "prompt": { "type": "string", "description": "What you want to find on the page." }
                },
                "required": ["url"],
                "additionalProperties": false
            }),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: serde_json::Value, cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(self.run(args, cx))
    }
}

impl WebFetch {
    async fn run(&self, args: serde_json::Value, cx: &ToolCx) -> ToolResult {
        let args: Args = parse_args(args)?;
        let url = parse_url(&args.url)?;
        ask(cx, &url).await?;
        let page = self.fetch(url.clone(), cx).await?;
        let prompt = args
            .prompt
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty());
        Ok(ToolOutput::text(render(&url, page, prompt, cx).await?))
    }

    /// GET `url`, following redirects; the page, or an error for a failed status or a binary.
    async fn fetch(&self, mut url: Url, cx: &ToolCx) -> Result<Page, ToolError> {
        let mut budget = Budget {
            left: TOTAL_TIMEOUT,
        };
        let mut allowed_hosts: Vec<String> = url.host_str().map(String::from).into_iter().collect();
        let mut hops: Vec<Url> = Vec::new();
        loop {
            let request = self
                .client
                .get(url.clone())
                .header(ACCEPT, ACCEPT_TYPES)
                .send();
            let mut response = budget
                .run(cx, request)
                .await?
                .map_err(|e| request_failed(&url, e))?;
            let status = response.status();

            if status.is_redirection()
                && let Some(location) = response.headers().get(LOCATION)
            {
                let next = redirect_target(&url, location)?;
                if hops.len() == MAX_REDIRECTS {
                    hops.push(url);
                    return Err(ToolError::Failed(format!(
                        "stopped after {MAX_REDIRECTS} redirects: {} → {next}",
                        hops.iter().map(Url::as_str).collect::<Vec<_>>().join(" → ")
                    )));
                }
                if let Some(host) = next.host_str()
                    && !allowed_hosts.iter().any(|h| h == host)
                {
                    ask(cx, &next).await?;
                    allowed_hosts.push(host.to_string());
                }
                hops.push(std::mem::replace(&mut url, next));
                continue;
            }

            let content_type = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.split(';').next().unwrap_or(v).trim().to_ascii_lowercase())
                .filter(|v| !v.is_empty());
            if status.is_client_error() || status.is_server_error() {
                let (body, _) = read_body(&mut response, MAX_ERROR_BODY, &mut budget, cx).await?;
                let kind = content_type
                    .as_deref()
                    .map_or_else(|| Kind::sniff(&body), Kind::of);
                let snippet = snippet(&body, kind).await;
                let snippet = if snippet.is_empty() {
                    String::new()
                } else {
                    format!(": {snippet}")
                };
                return Err(ToolError::Failed(format!(
                    "HTTP {status} from {url}{snippet}"
                )));
            }
            if !status.is_success() {
                return Err(ToolError::Failed(format!(
                    "HTTP {status} from {url}: not a page web_fetch can show"
                )));
            }
            let declared = content_type.as_deref().map(Kind::of);
            if declared == Some(Kind::Binary) {
                return Err(binary(
                    &url,
                    content_type.as_deref(),
                    response.content_length(),
                ));
            }
            let (body, cut) = read_body(&mut response, MAX_BODY, &mut budget, cx).await?;
            let kind = declared.unwrap_or_else(|| Kind::sniff(&body));
            if kind == Kind::Binary {
                let size = (!cut).then_some(body.len() as u64);
                return Err(binary(&url, content_type.as_deref(), size));
            }
            return Ok(Page {
                url,
                status,
                content_type,
                kind,
                body,
                cut,
            });
        }
    }
}

/// A fetched text page.
struct Page {
    /// Where it was found, after redirects.
    url: Url,
    status: StatusCode,
    content_type: Option<String>,
    kind: Kind,
    body: Vec<u8>,
    /// Whether the body went on past `MAX_BODY`.
    cut: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Binary,
}

impl Kind {
    /// From a lowercase media type without parameters.
    fn of(media_type: &str) -> Kind {
        match media_type {
            "text/html" | "application/xhtml+xml" => Kind::Html,
            t if t.starts_with("text/") => Kind::Text,
            "application/json"
            | "application/xml"
            | "application/javascript"
            | "application/x-javascript"
            | "application/ecmascript"
            | "application/yaml"
            | "application/x-yaml"
            | "application/toml"
            | "application/x-sh"
            | "application/sql"
            | "application/graphql" => Kind::Text,
            t if t.starts_with("image/") => Kind::Binary,
            t if t.ends_with("+json") || t.ends_with("+xml") => Kind::Text,
            _ => Kind::Binary,
        }
    }

    /// For a body sent without a content type: text if it looks like UTF-8 without NULs.
    fn sniff(body: &[u8]) -> Kind {
        let head = &body[..body.len().min(8192)];
        let utf8 = match std::str::from_utf8(head) {
            Ok(_) => true,
            // Only cut short at the end of `head`, in the middle of a character.
            Err(e) => e.error_len().is_none(),
        };
        if !utf8 || head.contains(&0) {
            return Kind::Binary;
        }
        let start = String::from_utf8_lossy(&head[..head.len().min(512)])
            .trim_start()
            .to_ascii_lowercase();
        if start.starts_with("<!doctype html") || start.starts_with("<html") {
            Kind::Html
        } else {
            Kind::Text
        }
    }
}

/// The tool's answer: a header saying what was fetched and why, then the content, capped.
async fn render(
    asked: &Url,
    page: Page,
    prompt: Option<&str>,
    cx: &ToolCx,
) -> Result<String, ToolError> {
    let text = String::from_utf8_lossy(&page.body).into_owned();
    let mut content = match page.kind {
        Kind::Html => {
            let markdown = html_to_markdown(text).await?;
            if cx.cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            markdown
        }
        Kind::Text | Kind::Binary => text,
    };

    let mut out = format!(
        "URL: {} ({}, {}, {} bytes)\n",
        page.url,
        page.status,
        page.content_type.as_deref().unwrap_or("no content type"),
        page.body.len()
    );
    if page.url != *asked {
        out.push_str(&format!("Redirected from: {asked}\n"));
    }
    if let Some(prompt) = prompt {
        out.push_str(&format!("Looking for: {prompt}\n"));
    }
    out.push('\n');

    let mut notes = Vec::new();
    if page.cut {
        notes.push(format!(
            "[cut: the body is larger than {} MiB; only its first {} MiB were read]",
            MAX_BODY / (1024 * 1024),
            MAX_BODY / (1024 * 1024)
        ));
    }
    if let Some((end, _)) = content.char_indices().nth(MAX_OUTPUT_CHARS) {
        let rest = content[end..].chars().count();
        content.truncate(end);
        notes.push(format!(
            "[cut: {rest} more characters not shown; only the first {MAX_OUTPUT_CHARS} are]"
        ));
    }
    if content.trim().is_empty() {
        content = "(the page has no text)".into();
    }
    out.push_str(&content);
    for note in notes {
        out.push_str("\n\n");
        out.push_str(&note);
    }
    Ok(out)
}

/// `raw` as an absolute http(s) URL, or why not.
fn parse_url(raw: &str) -> Result<Url, ToolError> {
    let raw = raw.trim();
    let url = Url::parse(raw).map_err(|e| {
        ToolError::InvalidArguments(format!(
            "`{raw}` is not an absolute URL ({e}); give the whole URL, starting with http:// or https://"
        ))
    })?;
    match url.scheme() {
        "http" | "https" if url.host_str().is_some() => Ok(url),
        "http" | "https" => Err(ToolError::InvalidArguments(format!("`{raw}` has no host"))),
        scheme => Err(ToolError::InvalidArguments(format!(
            "web_fetch fetches only http:// and https:// URLs, not `{scheme}:` ones ({raw}); \
             use the read tool for local files"
        ))),
    }
}

/// Ask the gate whether `url` may be fetched.
async fn ask(cx: &ToolCx, url: &Url) -> Result<(), ToolError> {
    tokio::select! {
        biased;
        () = cx.cancel.cancelled() => Err(ToolError::Cancelled),
        decision = cx.gate(GateRequest::WebFetch { url: url.to_string() }) => decision,
    }
}

/// Where a redirect from `from` leads, if it is somewhere web_fetch may go.
fn redirect_target(from: &Url, location: &reqwest::header::HeaderValue) -> Result<Url, ToolError> {
    let location = location.to_str().map_err(|_| {
        ToolError::Failed(format!(
            "{from} redirected with a Location header that is not text"
        ))
    })?;
    let next = from.join(location).map_err(|e| {
        ToolError::Failed(format!(
            "{from} redirected to `{location}`, which is not a URL ({e})"
        ))
    })?;
    match next.scheme() {
        "http" | "https" => Ok(next),
        _ => Err(ToolError::Failed(format!(
            "{from} redirected to {next}, which is not http or https; not followed"
        ))),
    }
}

/// Network time left for the fetch, spent only while waiting on the network.
struct Budget {
    left: Duration,
}

impl Budget {
    /// `work`, unless the budget runs out or the call is cancelled first.
    async fn run<F: Future>(&mut self, cx: &ToolCx, work: F) -> Result<F::Output, ToolError> {
        let started = Instant::now();
        let out = tokio::select! {
            biased;
            () = cx.cancel.cancelled() => return Err(ToolError::Cancelled),
            () = tokio::time::sleep(self.left) => return Err(ToolError::TimedOut(TOTAL_TIMEOUT)),
            out = work => out,
        };
        self.left = self.left.saturating_sub(started.elapsed());
        Ok(out)
    }
}

/// The body, up to `cap` bytes, and whether it went on past them.
async fn read_body(
    response: &mut reqwest::Response,
    cap: usize,
    budget: &mut Budget,
    cx: &ToolCx,
) -> Result<(Vec<u8>, bool), ToolError> {
    let url = response.url().clone();
    let mut body = Vec::new();
    while let Some(chunk) = budget
        .run(cx, response.chunk())
        .await?
        .map_err(|e| request_failed(&url, e))?
    {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

fn request_failed(url: &Url, error: reqwest::Error) -> ToolError {
    if error.is_timeout() {
        return ToolError::TimedOut(TOTAL_TIMEOUT);
    }
    // reqwest's own message is terse ("error sending request"); the causes say why.
    let error = error.without_url();
    let mut why = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        why.push_str(": ");
        why.push_str(&cause.to_string());
        source = cause.source();
    }
    ToolError::Failed(format!("could not fetch {url}: {why}"))
}

fn binary(url: &Url, content_type: Option<&str>, size: Option<u64>) -> ToolError {
    let what = content_type.unwrap_or("binary data without a content type");
    let size = size.map_or_else(|| "of unknown size".to_string(), |n| format!("{n} bytes"));
    ToolError::Failed(format!(
        "{url} is {what}, {size}: web_fetch returns only text (HTML, Markdown, plain text, JSON)"
    ))
}

/// The start of an error page, on one line.
async fn snippet(body: &[u8], kind: Kind) -> String {
    let text = String::from_utf8_lossy(body).into_owned();
    let text = match kind {
        Kind::Html => html_to_markdown(text.clone()).await.unwrap_or(text),
        Kind::Text => text,
        Kind::Binary => return String::new(),
    };
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(ERROR_SNIPPET_CHARS) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line,
    }
}

/// HTML as Markdown, without scripts, styles and navigation. Off the async threads, as a 10 MiB
/// page takes most of a second; joined even on cancel, so no conversion outlives its call.
async fn html_to_markdown(html: String) -> Result<String, ToolError> {
    tokio::task::spawn_blocking(move || {
        htmd::HtmlToMarkdown::builder()
            .skip_tags(NOISE_TAGS.to_vec())
            .build()
            .convert(&html)
    })
    .await
    .map_err(|e| ToolError::Failed(format!("converting the page to Markdown failed: {e}")))?
    .map_err(|e| ToolError::Failed(format!("converting the page to Markdown failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use axum::Router;
    use axum::extract::Path;
    use axum::http::{HeaderMap, StatusCode as Code};
    use axum::response::{Html, IntoResponse, Redirect};
    use axum::routing::get;
    use stepper_engine::tool::{Decision, Gate};

    const PAGE: &str = r#"<!doctype html>
<html><head><title>Stepper docs</title>
<style>body { color: red }</style>
<script>var hidden = "SCRIPT-CONTENT";</script></head>
<body>
<nav><a href="/">Home</a> NAV-CONTENT</nav>
<h1>Getting started</h1>
<p>Read the <a href="https://example.com/guide">guide</a> first.</p>
<h2>Steps</h2>
<ul><li>install it</li><li>run it</li></ul>
<script>document.write("SCRIPT-CONTENT")</script>
</body></html>"#;
    const TEXT: &str = "plain text\n  indented line\n";

    /// A fake web server on 127.0.0.1 that counts the requests it gets.
    struct Server {
        addr: SocketAddr,
        hits: Arc<AtomicUsize>,
    }

    impl Server {
        async fn start() -> Server {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let hits = Arc::new(AtomicUsize::new(0));
            let port = addr.port();
            let counter = hits.clone();
            let app = Router::new()
                .route("/page", get(|| async { Html(PAGE) }))
                .route("/text", get(|| async { TEXT }))
                .route(
                    "/json",
                    get(|| async { axum::Json(json!({"name": "stepper", "tools": [1, 2]})) }),
                )
                .route(
                    "/image",
                    get(|| async {
                        (
                            [(CONTENT_TYPE, "image/png")],
                            vec![0x89, b'P', b'N', b'G', 0, 0, 0, 13],
                        )
                    }),
                )
                .route(
                    "/missing",
                    get(|| async {
                        (
                            Code::NOT_FOUND,
                            Html("<h1>Nothing here</h1><p>Try the docs page.</p>"),
                        )
                    }),
                )
                // /hop/n redirects n times, the last time to /text.
                .route(
                    "/hop/{n}",
                    get(|Path(n): Path<u32>| async move {
                        if n <= 1 {
                            Redirect::temporary("/text").into_response()
                        } else {
                            let mut headers = HeaderMap::new();
                            headers.insert(LOCATION, format!("/hop/{}", n - 1).parse().unwrap());
                            (Code::MOVED_PERMANENTLY, headers).into_response()
                        }
                    }),
                )
                .route("/loop", get(|| async { Redirect::to("/loop") }))
                .route(
                    "/elsewhere",
                    get(move || async move {
                        Redirect::temporary(&format!("http://localhost:{port}/text"))
                    }),
                )
                .route(
                    "/huge",
                    get(|| async { "0123456789\n".repeat(MAX_BODY / 11 + 100_000) }),
                )
                .route(
                    "/slow",
                    get(|| async {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        "too late"
                    }),
                )
                .layer(axum::middleware::from_fn(
                    move |request: axum::extract::Request, next: axum::middleware::Next| {
                        counter.fetch_add(1, Ordering::SeqCst);
                        next.run(request)
                    },
                ));
            // Ends with the test's runtime.
            tokio::spawn(async move { axum::serve(listener, app).await });
            Server { addr, hits }
        }

        fn url(&self, path: &str) -> String {
            format!("http://{}{path}", self.addr)
        }

        fn hits(&self) -> usize {
            self.hits.load(Ordering::SeqCst)
        }
    }

    /// Records every URL it is asked about; denies those on `deny_host`.
    #[derive(Default)]
    struct Recording {
        asked: Mutex<Vec<String>>,
        deny_host: Option<String>,
    }

    impl Gate for Recording {
        fn check<'a>(&'a self, request: &'a GateRequest) -> BoxFuture<'a, Decision> {
            Box::pin(async move {
                let GateRequest::WebFetch { url } = request else {
                    return Decision::Deny(format!("unexpected request {request:?}"));
                };
                self.asked.lock().unwrap().push(url.clone());
                let host = Url::parse(url).unwrap().host_str().unwrap().to_string();
                if self.deny_host.as_deref() == Some(host.as_str()) {
                    Decision::Deny(format!("a deny rule for {host}"))
                } else {
                    Decision::Allow
                }
            })
        }
    }

    async fn fetch(args: serde_json::Value) -> ToolResult {
        let dir = tempfile::tempdir().unwrap();
        WebFetch::new()
            .unwrap()
            .call(args, &ToolCx::permissive(dir.path()))
            .await
    }

    fn failed(result: ToolResult) -> String {
        match result {
            Err(ToolError::Failed(message)) => message,
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn html_becomes_markdown_without_scripts() {
        let server = Server::start().await;
        let out = fetch(json!({"url": server.url("/page"), "prompt": "how to start"}))
            .await
            .unwrap()
            .content;
        let mut lines = out.lines();
        let header = lines.next().unwrap();
        assert!(
            header.starts_with(&format!(
                "URL: {} (200 OK, text/html, ",
                server.url("/page")
            )) && header.ends_with(&format!("{} bytes)", PAGE.len())),
            "{out}"
        );
        assert_eq!(lines.next(), Some("Looking for: how to start"), "{out}");
        assert!(out.contains("# Getting started"), "{out}");
        assert!(out.contains("## Steps"), "{out}");
        assert!(out.contains("[guide](https://example.com/guide)"), "{out}");
        assert!(
            out.lines()
                .any(|l| l.starts_with('*') && l.ends_with("install it")),
            "{out}"
        );
        for noise in ["SCRIPT-CONTENT", "color: red", "NAV-CONTENT"] {
            assert!(!out.contains(noise), "{noise} in {out}");
        }
    }

    #[tokio::test]
    async fn text_and_json_come_as_they_are() {
        let server = Server::start().await;
        let out = fetch(json!({"url": server.url("/text")}))
            .await
            .unwrap()
            .content;
        assert_eq!(
            out,
            format!(
                "URL: {} (200 OK, text/plain, {} bytes)\n\n{TEXT}",
                server.url("/text"),
                TEXT.len()
            )
        );
        let out = fetch(json!({"url": server.url("/json"), "prompt": " "}))
            .await
            .unwrap()
            .content;
        assert!(out.contains("application/json"), "{out}");
        assert!(
            !out.contains("Looking for"),
            "a blank prompt is left out: {out}"
        );
        assert!(
            out.ends_with(r#"{"name":"stepper","tools":[1,2]}"#),
            "{out}"
        );
    }

    #[tokio::test]
    async fn binaries_are_refused_with_what_and_how_big() {
        let server = Server::start().await;
        let message = failed(fetch(json!({"url": server.url("/image")})).await);
        assert!(
            message.contains("image/png") && message.contains("8 bytes"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn an_http_error_names_the_status_and_shows_the_page() {
        let server = Server::start().await;
        let message = failed(fetch(json!({"url": server.url("/missing")})).await);
        assert!(message.starts_with("HTTP 404 Not Found from "), "{message}");
        assert!(
            message.contains("Nothing here") && message.contains("Try the docs page."),
            "{message}"
        );
    }

    #[tokio::test]
    async fn a_chain_of_five_redirects_is_followed() {
        let server = Server::start().await;
        let dir = tempfile::tempdir().unwrap();
        let mut cx = ToolCx::permissive(dir.path());
        let gate = Arc::new(Recording::default());
        cx.gate = gate.clone();
        let out = WebFetch::new()
            .unwrap()
            .call(json!({"url": server.url("/hop/5")}), &cx)
            .await
            .unwrap()
            .content;
        assert!(
            out.starts_with(&format!("URL: {} (200 OK", server.url("/text"))),
            "{out}"
        );
        assert!(
            out.contains(&format!("Redirected from: {}", server.url("/hop/5"))),
            "{out}"
        );
        assert!(out.contains("plain text"), "{out}");
        assert_eq!(server.hits(), 6);
        assert_eq!(
            *gate.asked.lock().unwrap(),
            vec![server.url("/hop/5")],
            "the same host is asked about once"
        );
    }

    #[tokio::test]
    async fn a_redirect_loop_stops_after_five() {
        let server = Server::start().await;
        let message = failed(fetch(json!({"url": server.url("/loop")})).await);
        assert!(message.contains("stopped after 5 redirects"), "{message}");
        assert_eq!(server.hits(), 6, "the first request and five redirects");
    }

    #[tokio::test]
    async fn a_redirect_to_another_host_asks_again() {
        let server = Server::start().await;
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = format!("http://localhost:{}/text", server.addr.port());
        let tool = WebFetch::new().unwrap();

        let mut cx = ToolCx::permissive(dir.path());
        let gate = Arc::new(Recording::default());
        cx.gate = gate.clone();
        let out = tool
            .call(json!({"url": server.url("/elsewhere")}), &cx)
            .await
            .unwrap()
            .content;
        assert!(
            out.starts_with(&format!("URL: {elsewhere} (200 OK")),
            "{out}"
        );
        assert_eq!(
            *gate.asked.lock().unwrap(),
            vec![server.url("/elsewhere"), elsewhere.clone()]
        );
        assert_eq!(server.hits(), 2);

        let gate = Arc::new(Recording {
            deny_host: Some("localhost".into()),
            ..Default::default()
        });
        cx.gate = gate.clone();
        let result = tool
            .call(json!({"url": server.url("/elsewhere")}), &cx)
            .await;
        assert!(matches!(result, Err(ToolError::Denied(_))), "{result:?}");
        assert_eq!(
            *gate.asked.lock().unwrap(),
            vec![server.url("/elsewhere"), elsewhere]
        );
        assert_eq!(
            server.hits(),
            3,
            "the denied host is never asked for the page"
        );
    }

    #[tokio::test]
    async fn an_oversized_body_is_cut_with_a_notice() {
        let server = Server::start().await;
        let out = fetch(json!({"url": server.url("/huge")}))
            .await
            .unwrap()
            .content;
        assert!(
            out.lines()
                .next()
                .unwrap()
                .ends_with(&format!("{MAX_BODY} bytes)")),
            "{}",
            &out[..200]
        );
        assert!(out.contains("0123456789\n0123456789\n"));
        assert!(out.contains("only its first 10 MiB were read"));
        assert!(out.contains(&format!(
            "more characters not shown; only the first {MAX_OUTPUT_CHARS} are"
        )));
        assert!(out.chars().count() < MAX_OUTPUT_CHARS + 1_000);
    }

    #[tokio::test]
    async fn only_complete_http_urls_are_fetched() {
        for url in [
            "file:///etc/passwd",
            "ftp://example.com/x",
            "javascript:alert(1)",
            "example.com/page",
            "/relative/path",
            "http://",
        ] {
            let result = fetch(json!({"url": url})).await;
            assert!(
                matches!(&result, Err(ToolError::InvalidArguments(m)) if m.contains(url)),
                "{url}: {result:?}"
            );
        }
        assert!(matches!(
            fetch(json!({"address": "https://example.com"})).await,
            Err(ToolError::InvalidArguments(_))
        ));
    }

    #[tokio::test]
    async fn a_denied_url_is_never_requested() {
        let server = Server::start().await;
        let dir = tempfile::tempdir().unwrap();
        let mut cx = ToolCx::permissive(dir.path());
        let gate = Arc::new(Recording {
            deny_host: Some("127.0.0.1".into()),
            ..Default::default()
        });
        cx.gate = gate.clone();
        let result = WebFetch::new()
            .unwrap()
            .call(json!({"url": server.url("/page")}), &cx)
            .await;
        assert!(matches!(result, Err(ToolError::Denied(_))), "{result:?}");
        assert_eq!(*gate.asked.lock().unwrap(), vec![server.url("/page")]);
        assert_eq!(server.hits(), 0);
    }

    #[tokio::test]
    async fn cancel_stops_a_slow_fetch() {
        let server = Server::start().await;
        let dir = tempfile::tempdir().unwrap();
        let cx = ToolCx::permissive(dir.path());
        let tool = WebFetch::new().unwrap();
        let cancel = cx.cancel.clone();
        let waiter = async {
            let deadline = Instant::now() + Duration::from_secs(10);
            while server.hits() == 0 {
                assert!(Instant::now() < deadline, "the request was not made");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            cancel.cancel();
        };
        let (result, ()) =
            tokio::join!(tool.call(json!({"url": server.url("/slow")}), &cx), waiter);
        assert_eq!(result, Err(ToolError::Cancelled));
    }
}
