//! `spec-verify` — not implemented yet (issue 4). This crate is an empty placeholder in
//! the workspace layout of `ARCHITECTURE.md`; it exports nothing.
