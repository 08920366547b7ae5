mod approval;
mod common;
mod compaction;
mod compaction_passes;
mod interrupt;
mod resume;
mod tool_loop;
mod turn;
