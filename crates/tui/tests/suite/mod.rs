mod exec;
mod journal_check;
mod sessions;
mod trust;
mod tui_pty;
