mod exec;
mod journal_check;
mod sessions;
mod tui_pty;
