//! The `codewhale` binary; everything is in the library (`src/lib.rs`).

fn main() -> std::process::ExitCode {
    codewhale_tui::main()
}
