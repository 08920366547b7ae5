mod composer_pty;
mod exec;
mod journal_check;
mod pty;
mod screen_pty;
mod sessions;
mod trust;
mod tui_pty;
