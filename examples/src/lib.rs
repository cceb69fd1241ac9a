//! Shared helpers of the example binaries in `src/bin/`.
