//! The stdio transport of a server started as a child process: rmcp's line-delimited JSON-RPC
//! over the child's stdin and stdout, with the child's output read through [`BoundedLines`].
//!
//! rmcp's own stdio transport drops a message over its 16 MiB limit without a word, so the
//! call it answered waited out its whole timeout. Here such a message becomes an error
//! response for that call at once (see the `lines` module), and the connection goes on.
//!
//! Invariants: the child is killed when the transport is dropped (its command has
//! `kill_on_drop`) and asked to stop when it is closed: stdin closed, up to
//! `CLOSE_GRACE` to exit, then SIGTERM, then SIGKILL — the MCP specification's stdio
//! shutdown, as rmcp's transport does it. The signals go to the server's whole process group
//! ([`codewhale_process`]), so what it started stops with it.

mod lines;
mod scan;

use std::time::Duration;

use codewhale_process::{signal_group, Signal};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use rmcp::RoleClient;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

pub use lines::{BoundedLines, MAX_LINE, OVERSIZED_CODE};

/// How long a closed server has to exit after each step of its shutdown.
const CLOSE_GRACE: Duration = Duration::from_secs(3);

/// A running stdio server (see the module documentation).
pub struct ChildTransport {
    child: Child,
    /// The server's process group (its pid, taken at spawn: the child forgets it once reaped).
    group: Option<u32>,
    io: AsyncRwTransport<RoleClient, BoundedLines<ChildStdout>, ChildStdin>,
}

impl std::fmt::Debug for ChildTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildTransport").field("pid", &self.child.id()).finish()
    }
}

impl ChildTransport {
    /// Spawns `command` in a process group of its own, with piped stdin and stdout (and
    /// stderr, returned for the log).
    pub fn spawn(mut command: Command) -> std::io::Result<(ChildTransport, Option<ChildStderr>)> {
        use std::process::Stdio;
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        command.process_group(0);
        let mut child = command.spawn()?;
        let group = child.id();
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the server's stdin or stdout is not a pipe"));
        };
        let stderr = child.stderr.take();
        // Lines are bounded by BoundedLines, which answers an oversized one; rmcp's own cut
        // would drop it silently, so it is set past ours.
        let io = AsyncRwTransport::new(BoundedLines::new(stdout), stdin)
            .with_max_line_length(MAX_LINE.saturating_add(2));
        Ok((ChildTransport { child, group, io }, stderr))
    }

    /// The server's process id (the leader of its process group).
    pub fn id(&self) -> Option<u32> {
        self.group
    }

    async fn shutdown(&mut self) -> std::io::Result<()> {
        self.io.close().await?;
        if tokio::time::timeout(CLOSE_GRACE, self.child.wait()).await.is_ok() {
            return Ok(());
        }
        if let Some(group) = self.group {
            signal_group(group, Signal::TERM);
            if tokio::time::timeout(CLOSE_GRACE, self.child.wait()).await.is_ok() {
                return Ok(());
            }
            signal_group(group, Signal::KILL);
        }
        self.child.kill().await
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.io.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.io.receive()
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.shutdown()
    }
}
