//! Owning the terminal: raw mode, the alternate screen, bracketed paste and keyboard
//! enhancement; giving it back — for good, to an external editor (Ctrl+G), or while suspended
//! (Ctrl+Z).
//!
//! Every frame is drawn as one synchronized update ([`draw`]).
//!
//! Keyboard enhancement (the kitty protocol's "disambiguate escape codes") is turned on only
//! when the terminal says it supports it; then Shift+Enter arrives as itself instead of as a
//! plain Enter. Invariant: whatever happens — a normal quit, an error, a panic — the terminal
//! is restored (enhancement popped, raw mode off, alternate screen left, cursor shown).
//! [`TerminalGuard`] restores on drop and [`install_panic_hook`] restores before the panic
//! message is printed, so the message is readable. Restoring twice is harmless.

use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, DisableMouseCapture, EnableBracketedPaste,
    EnableFocusChange, EnableMouseCapture, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, supports_keyboard_enhancement, BeginSynchronizedUpdate,
    Clear, ClearType, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen,
};
use crossterm::{cursor, execute, queue};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

/// The terminal type the UI draws on.
pub type Tui = Terminal<CrosstermBackend<Stdout>>;

/// Whether the terminal answered that it supports keyboard enhancement (asked once).
static SUPPORTED: OnceLock<bool> = OnceLock::new();
/// Whether enhancement flags are pushed now (so restoring pops them).
static PUSHED: AtomicBool = AtomicBool::new(false);

/// Restores the terminal when dropped.
#[derive(Debug)]
pub struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Enters raw mode and the alternate screen; the guard restores them. The flag says whether
/// Shift+Enter is reported (keyboard enhancement is on).
pub fn enter() -> io::Result<(Tui, TerminalGuard, bool)> {
    take_over()?;
    // From here on, any failure must still restore.
    let guard = TerminalGuard;
    let terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    Ok((terminal, guard, PUSHED.load(Ordering::Relaxed)))
}

fn take_over() -> io::Result<()> {
    enable_raw_mode()?;
    // Focus reports tell a turn that ends while the user looks elsewhere to call them back.
    execute!(io::stdout(), EnterAlternateScreen, EnableBracketedPaste, EnableFocusChange)?;
    let supported = *SUPPORTED.get_or_init(|| supports_keyboard_enhancement().unwrap_or(false));
    if supported {
        execute!(
            io::stdout(),
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
        PUSHED.store(true, Ordering::Relaxed);
    }
    Ok(())
}

/// Gives the terminal back: pop enhancement, leave the alternate screen, disable raw mode,
/// show the cursor. Errors are ignored: there is nothing better to do with them while leaving.
pub fn restore() {
    if PUSHED.swap(false, Ordering::Relaxed) {
        let _ = execute!(io::stdout(), PopKeyboardEnhancementFlags);
    }
    let _ = execute!(
        io::stdout(),
        DisableMouseCapture,
        DisableBracketedPaste,
        DisableFocusChange,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = disable_raw_mode();
}

/// Draws one frame inside a synchronized update (DEC private mode 2026): a terminal that
/// supports it shows the frame whole once it ends, so a frame never tears; one that does not
/// ignores the unknown mode, as the standard says of private modes, and draws as before.
pub fn draw(terminal: &mut Tui, render: impl FnOnce(&mut ratatui::Frame<'_>)) -> io::Result<()> {
    queue!(terminal.backend_mut(), BeginSynchronizedUpdate)?;
    let drawn = terminal.draw(render).map(|_| ());
    // Ended even when the draw failed, so the terminal never stays frozen.
    let ended = execute!(terminal.backend_mut(), EndSynchronizedUpdate);
    drawn.and(ended)
}

/// Runs `work` with the terminal given back (an external editor), then takes it over again
/// and clears the screen for a full redraw.
pub fn handed_over<T>(terminal: &mut Tui, work: impl FnOnce() -> T) -> io::Result<T> {
    restore();
    let result = work();
    take_over()?;
    redraw_all(terminal)?;
    Ok(result)
}

/// Clears the screen and makes the next draw repaint everything. (Not `Terminal::clear`: it
/// asks the terminal for the cursor position, and the answer can be lost to the input reader
/// of the event stream that was just dropped.)
fn redraw_all(terminal: &mut Tui) -> io::Result<()> {
    execute!(io::stdout(), Clear(ClearType::All))?;
    // Both buffers empty: the next frame differs from "what is on screen" everywhere it draws.
    terminal.swap_buffers();
    terminal.swap_buffers();
    Ok(())
}

/// Ctrl+Z: gives the terminal back and stops the process as the shell's job control expects;
/// on `fg` (SIGCONT) takes the terminal over again and clears the screen for a full redraw.
/// Returns `false`, changing nothing, when no shell can resume the process (it was not started
/// as a job of a shell with job control): the kernel would discard the stop signal.
#[cfg(unix)]
pub async fn suspend(terminal: &mut Tui) -> io::Result<bool> {
    use rustix::process::{getpgid, getpgrp, getpid, getppid, getsid, kill_process, Signal};
    use tokio::signal::unix::{signal, SignalKind};
    // Not orphaned: the parent (the shell) is in another process group of our session.
    let resumable = getppid().is_some_and(|parent| {
        getpgid(Some(parent)).is_ok_and(|g| g != getpgrp())
            && getsid(Some(parent)).ok() == getsid(None).ok()
    });
    if !resumable {
        return Ok(false);
    }
    // Listening before stopping: the process may stop a moment after the signal is sent (it
    // can be taken by another thread), and must not take the terminal back before `fg`.
    let mut resumed = signal(SignalKind::from_raw(Signal::CONT.as_raw()))?;
    restore();
    kill_process(getpid(), Signal::TSTP)?;
    resumed.recv().await;
    take_over()?;
    redraw_all(terminal)?;
    Ok(true)
}

/// SIGTERM and SIGHUP, as one stream: the UI saves and leaves on either.
#[derive(Debug)]
pub struct Signals {
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    pub fn new() -> io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals { term: signal(SignalKind::terminate())?, hup: signal(SignalKind::hangup())? })
    }

    /// Waits for the next one.
    pub async fn next(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.hup.recv() => {}
        }
    }
}

/// Turns mouse capture on (the wheel scrolls the transcript) or off (the terminal's own
/// selection works; most terminals then send the wheel as ↑/↓).
pub fn set_mouse_capture(on: bool) -> io::Result<()> {
    if on {
        execute!(io::stdout(), EnableMouseCapture)
    } else {
        execute!(io::stdout(), DisableMouseCapture)
    }
}

/// Puts `text` on the system clipboard through the terminal (OSC 52), which works over ssh
/// and in tmux with `set-clipboard on`.
pub fn copy(text: &str) -> io::Result<()> {
    execute!(io::stdout(), crossterm::clipboard::CopyToClipboard::to_clipboard_from(text))
}

/// Makes a panic restore the terminal before the default hook prints the message.
pub fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}
