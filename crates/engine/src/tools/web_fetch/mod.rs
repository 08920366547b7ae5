//! `web_fetch{url, max_chars?}` (docs/tools.md, *`web_fetch`*): an `http`/`https` GET whose
//! page comes back as text the model can read — HTML as Markdown ([`markdown`]), other text as
//! it is — bounded and redacted like every tool result.
//!
//! Invariants:
//! - **The address asked about is the address reached.** A URL's host is resolved once
//!   ([`target`]); every address it resolves to is judged ([`address::is_private`]); the
//!   connection goes to those very addresses (the client's resolver is overridden for the
//!   host, and no proxy is used, which would resolve the name again). A redirect is a new URL:
//!   resolved, judged and pinned the same way before it is followed, at most
//!   [`MAX_REDIRECTS`] times; one the approval of the call does not cover (another host the
//!   policy would ask about, a private address) is not followed, and the model reads where
//!   it led, to fetch it with a call of its own (which then asks).
//! - **Bounded.** At most [`MAX_BODY_BYTES`] of the body are read, whatever the server sends
//!   or says it will send; the text returned is cut to `max_chars` (default
//!   [`DEFAULT_MAX_CHARS`]) with a marker saying how much more there was. A silent server
//!   ends the call after [`TIMEOUT`].
//! - A failure (a bad URL, a name that does not resolve, a refused connection, a status of 400
//!   or more) is an error result the model reads, never a crash. Redaction is the journal's:
//!   the result is appended like any other.

mod address;
mod markdown;

use std::net::SocketAddr;
use std::time::Duration;

use codewhale_provider::ToolSpec;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::ToolOutput;
use crate::config::ToolsConfig;

pub use address::is_private;

/// The tool's name.
pub const TOOL: &str = "web_fetch";

/// The most of a body that is read.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// Characters returned when the call does not say.
pub const DEFAULT_MAX_CHARS: usize = 20_000;

/// The most characters a call may ask for.
pub const MAX_CHARS: usize = 100_000;

/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 5;

/// The longest a fetch may take, redirects included.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// How long connecting to one address may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Deserialize)]
struct Args {
    url: String,
    #[serde(default)]
    max_chars: Option<u64>,
}

/// A URL resolved and judged: what the approval is asked about, and where the request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub url: url::Url,
    /// The host as grants and `[tools] web_fetch_allow` name it (lowercase, IPv6 in brackets).
    pub host: String,
    pub port: u16,
    /// Every address the host resolved to, each judged; the request goes to these only.
    pub addrs: Vec<SocketAddr>,
    /// An address is private and the host is not listed in `web_fetch_allow`: asks in every
    /// mode.
    pub private: bool,
    /// Listed in `web_fetch_allow`: runs without asking.
    pub allowed: bool,
}

impl Target {
    /// The host with its port when that is not the scheme's own, as the user reads it.
    pub fn shown(&self) -> String {
        match self.url.port() {
            Some(port) => format!("{}:{port}", self.host),
            None => self.host.clone(),
        }
    }

    /// The assessment the approval policy decides on.
    pub fn assessment(&self) -> super::Assessment {
        super::Assessment {
            effect: Some(crate::approval::Effect::Fetch),
            leaves_workspace: false,
            protected: false,
            protection: None,
            command: None,
            mcp: None,
            fetch: Some((self.host.clone(), self.private, self.allowed)),
        }
    }
}

/// The URL of a call's arguments, resolved and judged; an error the model reads when the
/// arguments, the URL or the name are unusable.
pub async fn target_of(input: &Value, tools: &ToolsConfig) -> Result<Target, String> {
    let args = args(input)?;
    target(&args.url, tools).await
}

fn args(input: &Value) -> Result<Args, String> {
    let value = match input {
        Value::String(s) => serde_json::from_str(s).map_err(|e| {
            format!("the arguments of {TOOL} are not a JSON object: {e}; send an object")
        })?,
        other => other.clone(),
    };
    serde_json::from_value(value)
        .map_err(|e| format!("invalid arguments for {TOOL}: {e}; send {{\"url\": \"https://…\"}}"))
}

/// `raw` parsed, its host resolved once and every address judged.
pub async fn target(raw: &str, tools: &ToolsConfig) -> Result<Target, String> {
    let url = url::Url::parse(raw.trim())
        .map_err(|e| format!("{raw:?} is not a URL ({e}); send a full http or https URL"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "{raw:?} is a {} URL; {TOOL} fetches only http and https URLs",
            url.scheme()
        ));
    }
    let host = url.host().ok_or_else(|| format!("{raw:?} names no host; send a full URL"))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let shown_host = host.to_string();
    let addrs: Vec<SocketAddr> = match host {
        url::Host::Ipv4(ip) => vec![SocketAddr::new(ip.into(), port)],
        url::Host::Ipv6(ip) => vec![SocketAddr::new(ip.into(), port)],
        url::Host::Domain(name) => {
            let found = tokio::time::timeout(
                CONNECT_TIMEOUT,
                tokio::net::lookup_host((name.to_owned(), port)),
            )
            .await
            .map_err(|_| format!("looking up {name} took longer than 10 s; try again later"))?
            .map_err(|e| format!("cannot look up {name}: {e}; check the URL"))?;
            let mut addrs: Vec<SocketAddr> = found.collect();
            addrs.dedup();
            addrs
        }
    };
    if addrs.is_empty() {
        return Err(format!("{shown_host} has no address; check the URL"));
    }
    let allowed = tools.allows_fetch(&shown_host, port);
    let private = !allowed && addrs.iter().any(|a| is_private(a.ip()));
    Ok(Target { url, host: shown_host, port, addrs, private, allowed })
}

/// The tool's schema.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: TOOL.to_owned(),
        description: "Fetch a web page or file over http(s) and read it as text: HTML comes \
                      back as Markdown. Use it for documentation, issues and release notes the \
                      user points to or you need. Redirects are followed; long pages are cut \
                      at max_chars."
            .to_owned(),
        input_schema: json!({"type": "object", "properties": {
            "url": {"type": "string", "description": "The full http or https URL."},
            "max_chars": {"type": "integer", "minimum": 200, "maximum": MAX_CHARS, "description": "Most characters to return (default 20000)."}
        }, "required": ["url"], "additionalProperties": false}),
    }
}

/// Runs a call whose first URL was resolved and cleared as `first`. `may_follow` says whether
/// a redirect's target is covered without a new question. Never fails: every problem is an
/// error output.
pub async fn run(
    input: &Value,
    first: Target,
    may_follow: &(dyn Fn(&Target) -> bool + Send + Sync),
    tools: &ToolsConfig,
    cancel: &CancellationToken,
) -> ToolOutput {
    let max_chars = match args(input) {
        Ok(a) => a.max_chars.map_or(DEFAULT_MAX_CHARS, |n| {
            usize::try_from(n).unwrap_or(MAX_CHARS).clamp(200, MAX_CHARS)
        }),
        Err(message) => return ToolOutput::error(message),
    };
    let work = fetch(first, max_chars, may_follow, tools);
    tokio::select! {
        out = tokio::time::timeout(TIMEOUT, work) => out.unwrap_or_else(|_| {
            ToolOutput::error(format!(
                "the server did not finish within {} s; try again later or another URL",
                TIMEOUT.as_secs()
            ))
        }),
        () = cancel.cancelled() => ToolOutput::error("interrupted by the user; nothing was fetched"),
    }
}

async fn fetch(
    first: Target,
    max_chars: usize,
    may_follow: &(dyn Fn(&Target) -> bool + Send + Sync),
    tools: &ToolsConfig,
) -> ToolOutput {
    let mut target = first;
    let mut hops: Vec<String> = Vec::new();
    loop {
        let response = match get(&target).await {
            Ok(r) => r,
            Err(message) => return ToolOutput::error(message),
        };
        let status = response.status();
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let (true, Some(location)) = (status.is_redirection(), location) {
            if hops.len() >= MAX_REDIRECTS {
                return ToolOutput::error(format!(
                    "{} redirected more than {MAX_REDIRECTS} times (last to {location}); fetch \
                     the final URL directly if you know it",
                    hops.first().map_or(target.url.as_str(), String::as_str)
                ));
            }
            let next_url = match target.url.join(&location) {
                Ok(u) => u,
                Err(e) => {
                    return ToolOutput::error(format!(
                        "{} redirected to {location:?}, which is not a URL ({e})",
                        target.url
                    ))
                }
            };
            let next = match self::target(next_url.as_str(), tools).await {
                Ok(t) => t,
                Err(e) => {
                    return ToolOutput::error(format!(
                        "{} redirected to {next_url}: {e}",
                        target.url
                    ))
                }
            };
            if !may_follow(&next) {
                let why = if next.private {
                    format!("{} is a private address (this machine or its network)", next.shown())
                } else {
                    format!("{} is another host", next.shown())
                };
                return ToolOutput::error(format!(
                    "{} redirected to {next_url}, which was not followed: {why}, which needs \
                     its own approval. Call {TOOL} with that URL if you need it.",
                    target.url
                ));
            }
            hops.push(target.url.to_string());
            target = next;
            continue;
        }
        return read(response, &target, &hops, max_chars).await;
    }
}

/// One GET of `target`, connected to its checked addresses only.
async fn get(target: &Target) -> Result<reqwest::Response, String> {
    codewhale_provider::install_crypto();
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("codewhale/", env!("CARGO_PKG_VERSION"), " (web_fetch)"));
    if let Some(url::Host::Domain(name)) = target.url.host() {
        builder = builder.resolve_to_addrs(name, &target.addrs);
    }
    let client = builder.build().map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    client
        .get(target.url.clone())
        .header(
            reqwest::header::ACCEPT,
            "text/html, text/markdown, text/plain;q=0.9, application/json;q=0.9, */*;q=0.5",
        )
        .send()
        .await
        .map_err(|e| format!("cannot fetch {}: {}", target.url, describe(&e)))
}

/// A request error in one clause, its causes included.
fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

/// Reads at most [`MAX_BODY_BYTES`] of the body and makes the result.
async fn read(
    response: reqwest::Response,
    target: &Target,
    hops: &[String],
    max_chars: usize,
) -> ToolOutput {
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let (body, cut) = match read_body(response).await {
        Ok(read) => read,
        Err(e) => {
            return ToolOutput::error(format!(
                "the body of {} could not be read: {}",
                target.url,
                describe(&e)
            ))
        }
    };
    let kind = Kind::of(&content_type, &body);
    let text = match kind {
        Kind::Html => markdown::to_markdown(String::from_utf8_lossy(&body).into_owned()).await,
        Kind::Text => String::from_utf8_lossy(&body).into_owned(),
        Kind::Binary => String::new(),
    };
    let mut out = head(target, status, &content_type, hops);
    out.push('\n');
    if cut {
        out.push_str(&format!(
            "[only the first {} KiB of the body were read]\n",
            MAX_BODY_BYTES / 1024
        ));
    }
    out.push('\n');
    if kind == Kind::Binary {
        out.push_str(&format!(
            "[the body is not text ({} bytes of {}); {TOOL} returns text only]",
            body.len(),
            if content_type.is_empty() { "an unknown type" } else { &content_type }
        ));
    } else {
        out.push_str(&cut_chars(&text, max_chars));
    }
    let is_error = status.is_client_error() || status.is_server_error();
    ToolOutput {
        bytes: out.len() as u64,
        content: out,
        is_error,
        refused: Vec::new(),
        files: Vec::new(),
        exit_code: None,
        timed_out: false,
        git_refused: false,
        guard: None,
    }
}

/// The body, at most [`MAX_BODY_BYTES`] of it, and whether it was cut there.
async fn read_body(mut response: reqwest::Response) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body: Vec<u8> = Vec::new();
    let mut cut = false;
    while let Some(chunk) = response.chunk().await? {
        let room = MAX_BODY_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, cut))
}

/// The result's first line: the URL, the status, the content type and where a redirect
/// started.
fn head(
    target: &Target,
    status: reqwest::StatusCode,
    content_type: &str,
    hops: &[String],
) -> String {
    let mut head = format!("{} · {status}", target.url);
    if !content_type.is_empty() {
        head.push_str(&format!(" · {content_type}"));
    }
    if let Some(first) = hops.first() {
        head.push_str(&format!(" (redirected from {first})"));
    }
    head
}

/// What a body is, for what the model gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Binary,
}

impl Kind {
    fn of(content_type: &str, body: &[u8]) -> Kind {
        let mime = content_type.split(';').next().unwrap_or("").trim();
        if mime == "text/html" || mime == "application/xhtml+xml" {
            return Kind::Html;
        }
        let textual = mime.starts_with("text/")
            || mime.ends_with("json")
            || mime.ends_with("xml")
            || mime.ends_with("javascript")
            || mime.ends_with("yaml")
            || mime.ends_with("toml");
        if textual {
            return Kind::Text;
        }
        // No type, or a generic one: judged by the bytes.
        let sample = &body[..body.len().min(1024)];
        let start = String::from_utf8_lossy(sample).trim_start().to_ascii_lowercase();
        if start.starts_with("<!doctype html") || start.starts_with("<html") {
            Kind::Html
        } else if mime.is_empty() || mime == "application/octet-stream" {
            // A sample cut inside a character is still text; a byte no UTF-8 allows is not.
            let invalid = std::str::from_utf8(sample).is_err_and(|e| e.error_len().is_some());
            if sample.contains(&0) || invalid {
                Kind::Binary
            } else {
                Kind::Text
            }
        } else {
            Kind::Binary
        }
    }
}

/// `text` cut to its first `max` characters, with the marker saying how much more there was.
fn cut_chars(text: &str, max: usize) -> String {
    let hint = format!("call again with a larger max_chars (at most {MAX_CHARS}) if you need more");
    let budget = codewhale_journal::cut::char_budget(text, max);
    codewhale_journal::cut::head(text, budget, codewhale_journal::cut::Whole::Hint(&hint))
        .unwrap_or_else(|| text.to_owned())
}

#[cfg(test)]
mod tests;
