//! `zapspec-spiffy` (Spiffy draft graphs) — not implemented yet (a later issue). This crate is an empty placeholder in
//! the workspace layout of `ARCHITECTURE.md`; it exports nothing.
