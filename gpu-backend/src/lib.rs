//! `gpu-backend` — not implemented yet (issue 5). This crate is an empty placeholder in
//! the workspace layout of `ARCHITECTURE.md`; it exports nothing.
