//! Calling a tool of a server: the arguments checked, a lazily started server started, the
//! wait for it bounded by its startup timeout, the call by its tool timeout.
//!
//! Invariant: [`Servers::call`] never fails: every problem is an error output the model reads,
//! worded so the model knows whether to retry, do without, or tell the user.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::Peer;
use rmcp::{RoleClient, ServiceError};
use serde_json::{Map, Value};
use tokio::time::error::Elapsed;
use tokio_util::sync::CancellationToken;

use super::{seconds, wait_started, CallOutput, Server, Servers, Status};
use crate::names;

impl Servers {
    /// Calls the tool an offered `name` stands for. Never fails: every problem is an error
    /// output the model reads. `cancel` interrupts it.
    pub async fn call(
        &self,
        name: &str,
        arguments: &Value,
        cancel: &CancellationToken,
    ) -> CallOutput {
        let Some((index, tool)) = self.inner.names.lock().ok().and_then(|n| n.get(name).cloned())
        else {
            return CallOutput::error(unavailable_name(name));
        };
        let Some(server) = self.inner.servers.get(index).cloned() else {
            return CallOutput::error(unavailable_name(name));
        };
        let args = match object_arguments(name, arguments) {
            Ok(args) => args,
            Err(message) => return CallOutput::error(message),
        };
        // Offered from its cache and not started yet: the first call starts it.
        if server.lock().status == Status::Idle
            && self.inner.reporter.lock().is_ok_and(|r| r.is_some())
        {
            self.start_one(index);
        }
        tokio::select! {
            () = wait_started(&server) => {}
            () = cancel.cancelled() => return CallOutput::error("interrupted".into()),
        }
        let peer = match ready_peer(&server) {
            Ok(peer) => peer,
            Err(message) => return CallOutput::error(message),
        };
        let params = CallToolRequestParams::new(tool.clone()).with_arguments(args);
        let timeout = server.config.tool_timeout;
        let outcome = tokio::select! {
            r = tokio::time::timeout(timeout, peer.call_tool(params)) => r,
            () = cancel.cancelled() => return CallOutput::error("interrupted".into()),
        };
        self.output(&server, &peer, &tool, outcome)
    }

    /// What the model reads of the call's `outcome`: the result as text, or an error that says
    /// whether to retry, do without or tell the user. A transport that closed during the call
    /// marks the server stopped.
    fn output(
        &self,
        server: &Server,
        peer: &Peer<RoleClient>,
        tool: &str,
        outcome: Result<Result<CallToolResult, ServiceError>, Elapsed>,
    ) -> CallOutput {
        let server_name = server.config.name.clone();
        let timeout = server.config.tool_timeout;
        match outcome {
            Ok(Ok(result)) => {
                let (text, is_error) = crate::content::to_text(&result);
                CallOutput { text, is_error }
            }
            Ok(Err(rmcp::ServiceError::McpError(e)))
                if e.code.0 == crate::stdio::OVERSIZED_CODE =>
            {
                CallOutput::error(format!(
                    "the MCP tool `{tool}` of server `{server_name}` returned a result larger \
                     than {} MiB, the limit for one MCP message, so it was discarded; ask the \
                     tool for less (a narrower query, a smaller page) or tell the user",
                    crate::stdio::MAX_LINE / (1024 * 1024)
                ))
            }
            Ok(Err(rmcp::ServiceError::McpError(e))) => CallOutput::error(format!(
                "the MCP server `{server_name}` answered the call of `{tool}` with an error: {}",
                e.message
            )),
            Ok(Err(err)) => {
                let reason = format!("it stopped answering during a call of `{tool}` ({err})");
                if peer.is_transport_closed() {
                    self.stopped(server, reason.clone());
                }
                CallOutput::error(format!(
                    "the MCP server `{server_name}` failed: {reason}; its tools may be \
                     unavailable for the rest of this session"
                ))
            }
            Err(_) => CallOutput::error(format!(
                "the MCP tool `{tool}` of server `{server_name}` did not answer within {} and \
                 was cancelled; try a smaller request or tell the user",
                seconds(timeout)
            )),
        }
    }
}

/// The call's arguments as a JSON object: an object, nothing (an empty one), or an object
/// sent as a JSON string; anything else is the error the model reads.
fn object_arguments(name: &str, arguments: &Value) -> Result<Map<String, Value>, String> {
    let args = match arguments {
        Value::Object(map) => map.clone(),
        Value::Null => serde_json::Map::new(),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            _ => return Err(format!(
                "the arguments of {name} are not a JSON object; send an object that matches the tool's schema"
            )),
        },
        _ => return Err(format!(
            "the arguments of {name} are not a JSON object; send an object that matches the tool's schema"
        )),
    };
    Ok(args)
}

/// The running server's peer, or why the server cannot take the call (it failed, did not
/// finish starting within its startup timeout, or is not running).
fn ready_peer(server: &Server) -> Result<Peer<RoleClient>, String> {
    let server_name = server.config.name.clone();
    let state = server.lock();
    match (&state.status, &state.peer) {
        (Status::Ready, Some(peer)) => Ok(peer.clone()),
        (Status::Failed(reason), _) => Err(not_available(&server_name, reason)),
        (Status::Starting, _) => Err(not_available(
            &server_name,
            &format!(
                "it did not finish starting within {}",
                seconds(server.config.startup_timeout)
            ),
        )),
        _ => Err(not_available(&server_name, "it is not running")),
    }
}

fn not_available(server: &str, reason: &str) -> String {
    format!(
        "the MCP server `{server}` is not available: {reason}. Its tools cannot be used in this \
         session; do without them or tell the user"
    )
}

fn unavailable_name(name: &str) -> String {
    let server = name.strip_prefix(names::PREFIX).and_then(|rest| rest.split("__").next());
    match server.filter(|s| !s.is_empty()) {
        Some(server) => format!(
            "the tool {name:?} is not available: the MCP server `{server}` is not available in \
             this session (not configured, not running, or it no longer offers that tool). \
             Use only the tools you were given"
        ),
        None => format!(
            "the tool {name:?} is not available in this session. Use only the tools you were given"
        ),
    }
}
