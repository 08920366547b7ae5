mod exec;
mod journal_check;
mod sessions;
