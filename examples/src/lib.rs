//! Shared helpers of the example binaries in `src/bin/`.

pub mod host;
pub mod kbnf_ir;
pub mod maskstats;
