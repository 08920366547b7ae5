//! Printing what a command says: [`outln!`], [`out!`], [`errln!`] and [`errout!`] stand for
//! `println!`, `print!`, `eprintln!` and `eprint!`. A closed pipe (`codewhale sessions | head`,
//! or `exec … 2>&1 | head -1` for stderr) ends the command quietly with status 141, as if
//! SIGPIPE had killed it, like other command-line tools; any other write error is said in one
//! line and exits 74 (EX_IOERR). Decided on the write's `io::ErrorKind`, never on a message.
//!
//! What is written is made inert first ([`crate::inert`]): every stderr line (they quote
//! commands, paths and the model's words), and stdout when it is a terminal (a pipe gets the
//! model's bytes as they are, for scripts).

use std::io::{self, Write};

/// Writes `args` to `to` (and a newline when `newline`), flushed.
pub fn write(mut to: impl Write, args: std::fmt::Arguments<'_>, newline: bool) {
    let written = to
        .write_fmt(args)
        .and_then(|()| if newline { to.write_all(b"\n") } else { Ok(()) })
        .and_then(|()| to.flush());
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => std::process::exit(141),
        Err(e) => {
            let _ = writeln!(io::stderr(), "codewhale: cannot write the output: {e}");
            std::process::exit(74)
        }
    }
}

/// Whether stdout is a terminal (asked once).
fn stdout_is_terminal() -> bool {
    use std::io::IsTerminal as _;
    static TERMINAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TERMINAL.get_or_init(|| io::stdout().is_terminal())
}

/// `text` as stdout may carry it: inert when stdout is a terminal, as it is otherwise.
pub fn for_stdout(text: &str) -> std::borrow::Cow<'_, str> {
    if stdout_is_terminal() {
        crate::inert::text(text)
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Writes `args` to stdout (inert when stdout is a terminal), as [`write`] does.
pub fn to_stdout(args: std::fmt::Arguments<'_>, newline: bool) {
    if stdout_is_terminal() {
        let text = args.to_string();
        write(io::stdout().lock(), format_args!("{}", crate::inert::text(&text)), newline);
    } else {
        write(io::stdout().lock(), args, newline);
    }
}

/// Writes `args` to stderr, inert, as [`write`] does.
pub fn to_stderr(args: std::fmt::Arguments<'_>, newline: bool) {
    let text = args.to_string();
    write(io::stderr().lock(), format_args!("{}", crate::inert::text(&text)), newline);
}

/// `println!`, with a closed pipe handled as the module says.
macro_rules! outln {
    () => { $crate::output::to_stdout(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::output::to_stdout(format_args!($($arg)*), true) };
}

/// `print!`, with a closed pipe handled as the module says.
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::to_stdout(format_args!($($arg)*), false) };
}

/// `eprintln!`, with a closed pipe handled as the module says.
macro_rules! errln {
    () => { $crate::output::to_stderr(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::output::to_stderr(format_args!($($arg)*), true) };
}

/// `eprint!`, with a closed pipe handled as the module says.
macro_rules! errout {
    ($($arg:tt)*) => { $crate::output::to_stderr(format_args!($($arg)*), false) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose reader is gone.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn written_text_arrives_with_its_newline() {
        let mut buf = Vec::new();
        write(&mut buf, format_args!("a {}", 1), true);
        write(&mut buf, format_args!("b"), false);
        assert_eq!(buf, b"a 1\nb");
        // The closed pipe itself ends the process; what it is told apart by is the kind.
        assert_eq!(Closed.write(b"x").unwrap_err().kind(), io::ErrorKind::BrokenPipe);
    }
}
