//! One server's life in the background: connect within the startup timeout, list its tools,
//! then follow list changes until it stops or the session ends. Invariants: the server's
//! status leaves `Starting` exactly once (to `Ready` or `Failed`), and a failure is reported
//! once.

use std::sync::Arc;
use std::time::Duration;

use super::{emit, filtered, seconds, stopped, Inner, Server, ServerEvent, Status};
use crate::client::{self, Handler};
use crate::tools::ToolInfo;

/// One server's life: connect, list, then follow list changes until it stops or the session
/// ends.
pub(super) async fn run_server(inner: Arc<Inner>, index: usize) {
    let Some(server) = inner.servers.get(index).cloned() else { return };
    let config = &server.config;
    let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
    let handler = Handler { tools_changed: tx };
    let var = inner.var.clone();
    let connect = client::connect(config, &inner.workspace, var.as_ref(), handler, &server.stderr);
    let deadline = config.startup_timeout;
    let connected = tokio::select! {
        r = tokio::time::timeout(deadline, async {
            let service = connect.await.map_err(|e| e.to_string())?;
            let tools = service.list_all_tools().await.map_err(|e| format!("listing its tools failed: {e}"))?;
            Ok::<_, String>((service, tools))
        }) => r,
        () = inner.shutdown.cancelled() => return,
    };
    let (service, tools) = match connected {
        Ok(Ok(pair)) => pair,
        Ok(Err(reason)) => return failed(&inner, &server, explain(&server, reason)),
        Err(_) => {
            let reason = format!("it did not finish starting within {}", seconds(deadline));
            return failed(&inner, &server, explain(&server, reason));
        }
    };
    let peer = service.peer().clone();
    set_live(&inner, &server, &tools, false);
    {
        server.lock().peer = Some(peer.clone());
    }
    server.set_status(Status::Ready);
    let stop = service.cancellation_token();
    let waiting = service.waiting();
    tokio::pin!(waiting);
    loop {
        tokio::select! {
            quit = &mut waiting => {
                let reason = match quit {
                    Ok(reason) => format!("it stopped ({reason:?})"),
                    Err(err) => format!("it stopped ({err})"),
                };
                if server.lock().status == Status::Ready {
                    stopped(&inner, &server, explain(&server, reason));
                }
                return;
            }
            Some(()) = changes.recv() => {
                if let Ok(tools) = peer.list_all_tools().await {
                    set_live(&inner, &server, &tools, true);
                }
            }
            () = inner.shutdown.cancelled() => {
                stop.cancel();
                let _ = tokio::time::timeout(Duration::from_secs(3), &mut waiting).await;
                return;
            }
        }
    }
}

/// Adds the last line the server wrote to stderr to `reason`.
fn explain(server: &Server, reason: String) -> String {
    match server.stderr.last() {
        Some(line) if !line.trim().is_empty() => format!("{reason}; it said: {}", line.trim()),
        _ => reason,
    }
}

fn failed(inner: &Inner, server: &Server, reason: String) {
    server.lock().reported = true;
    server.set_status(Status::Failed(reason.clone()));
    emit(inner, ServerEvent::Failed { server: server.config.name.clone(), reason });
}

fn set_live(inner: &Inner, server: &Server, tools: &[rmcp::model::Tool], announced: bool) {
    let all: Vec<ToolInfo> = tools.iter().map(ToolInfo::from_rmcp).collect();
    if let Some(cache) = &inner.cache {
        cache.store(&server.config.name, &server.config.fingerprint(), &all);
    }
    let list = filtered(&server.config, all);
    let count = list.len();
    let changed = {
        let mut state = server.lock();
        let changed = announced && state.offered.as_ref().is_some_and(|o| *o != list);
        if changed {
            state.offered = Some(list.clone());
            inner.bump();
        }
        state.live = Some(list);
        changed
    };
    if changed {
        emit(inner, ServerEvent::ToolsChanged { server: server.config.name.clone(), tools: count });
    }
}
