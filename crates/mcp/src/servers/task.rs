//! One server's life in the background: connect within the startup timeout, list its tools,
//! then follow list changes until it stops or the session ends. Invariants: the server's
//! status leaves `Starting` exactly once (to `Ready` or `Failed`), and a failure is reported
//! once; when the task ends, so does every process left in a stdio server's group.

use std::sync::Arc;
use std::time::Duration;

use super::{emit, filtered, seconds, stopped, Inner, Server, ServerEvent, Status};
use crate::client::{self, Handler};
use crate::tools::ToolInfo;

/// How often a running stdio server is checked for having exited.
const LEADER_CHECK: Duration = Duration::from_millis(250);

/// One server's life: connect, list, then follow list changes until it stops or the session
/// ends.
pub(super) async fn run_server(inner: Arc<Inner>, index: usize) {
    let group = std::sync::Mutex::new(None);
    serve(inner, index, &group).await;
    // However the server's life ended (it exited, it failed to start, the session closed),
    // end what is left of its process group.
    let group = group.lock().ok().and_then(|g| *g);
    if let Some(group) = group {
        group.end().await;
    }
}

async fn serve(inner: Arc<Inner>, index: usize, group: &std::sync::Mutex<Option<client::Group>>) {
    let Some(server) = inner.servers.get(index).cloned() else { return };
    let config = &server.config;
    let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
    let handler = Handler { tools_changed: tx };
    let var = inner.var.clone();
    let connect =
        client::connect(config, &inner.workspace, var.as_ref(), handler, &server.stderr, group);
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
    // A server that exited while a child still holds its stdout is only noticed this way.
    let mut watch = tokio::time::interval(LEADER_CHECK);
    watch.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = watch.tick() => {
                let leader_gone = group.lock().ok().and_then(|g| *g).filter(|g| g.leader_exited());
                if let Some(group) = leader_gone {
                    // Its children go with it; then the pipe closes and `waiting` ends.
                    group.end().await;
                }
            }
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
