//! `zapspec-copy` (Copy-as-Decode) — not implemented yet (a later issue). This crate is an empty placeholder in
//! the workspace layout of `ARCHITECTURE.md`; it exports nothing.
