//! Integration tests of the transaction log through its public API only:
//! one test binary (faster to build), one module per scenario.

mod common;
mod control;
mod describe;
mod fixtures;
mod fs_backend;
mod full;
mod fuzz;
mod group_commit;
mod poison;
mod recovery;
mod rollover;
mod torn_tail;
