//! Printing what a command says: [`outln!`], [`out!`], [`errln!`] and [`errout!`] stand for
//! `println!`, `print!`, `eprintln!` and `eprint!`. A closed pipe (`codewhale sessions | head`,
//! or `exec … 2>&1 | head -1` for stderr) ends the command quietly with status 141, as if
//! SIGPIPE had killed it, like other command-line tools; any other write error is said in one
//! line and exits 74 (EX_IOERR). Decided on the write's `io::ErrorKind`, never on a message.

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

/// `println!`, with a closed pipe handled as the module says.
macro_rules! outln {
    () => { $crate::output::write(std::io::stdout().lock(), format_args!(""), true) };
    ($($arg:tt)*) => { $crate::output::write(std::io::stdout().lock(), format_args!($($arg)*), true) };
}

/// `print!`, with a closed pipe handled as the module says.
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write(std::io::stdout().lock(), format_args!($($arg)*), false) };
}

/// `eprintln!`, with a closed pipe handled as the module says.
macro_rules! errln {
    () => { $crate::output::write(std::io::stderr().lock(), format_args!(""), true) };
    ($($arg:tt)*) => { $crate::output::write(std::io::stderr().lock(), format_args!($($arg)*), true) };
}

/// `eprint!`, with a closed pipe handled as the module says.
macro_rules! errout {
    ($($arg:tt)*) => { $crate::output::write(std::io::stderr().lock(), format_args!($($arg)*), false) };
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
