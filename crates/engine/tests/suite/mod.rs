mod approval;
mod common;
mod compaction;
mod interrupt;
mod resume;
mod tool_loop;
mod turn;
