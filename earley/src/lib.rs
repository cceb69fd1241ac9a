//! `earley` — not implemented yet (issue 3). This crate is an empty placeholder in
//! the workspace layout of `ARCHITECTURE.md`; it exports nothing.
