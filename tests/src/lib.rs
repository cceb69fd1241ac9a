//! Cross-crate test suites live in `tests/tests/`; this library holds their
//! shared helpers.
