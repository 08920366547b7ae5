mod approval;
mod common;
mod interrupt;
mod resume;
mod tool_loop;
mod turn;
