//! Owning the terminal: raw mode, the alternate screen, bracketed paste; and giving it back.
//!
//! Invariant: whatever happens — a normal quit, an error, a panic — the terminal is restored
//! (raw mode off, alternate screen left, cursor shown). [`TerminalGuard`] restores on drop and
//! [`install_panic_hook`] restores before the panic message is printed, so the message is
//! readable. Restoring twice is harmless.

use std::io::{self, Stdout};

use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use crossterm::{cursor, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

/// The terminal type the UI draws on.
pub type Tui = Terminal<CrosstermBackend<Stdout>>;

/// Restores the terminal when dropped.
#[derive(Debug)]
pub struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Enters raw mode and the alternate screen. The guard restores them.
pub fn enter() -> io::Result<(Tui, TerminalGuard)> {
    enable_raw_mode()?;
    // From here on, any failure must still restore.
    let guard = TerminalGuard;
    execute!(io::stdout(), EnterAlternateScreen, EnableBracketedPaste)?;
    let terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    Ok((terminal, guard))
}

/// Gives the terminal back: leave the alternate screen, disable raw mode, show the cursor.
/// Errors are ignored: there is nothing better to do with them while leaving.
pub fn restore() {
    let _ = execute!(io::stdout(), DisableBracketedPaste, LeaveAlternateScreen, cursor::Show);
    let _ = disable_raw_mode();
}

/// Makes a panic restore the terminal before the default hook prints the message.
pub fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}
