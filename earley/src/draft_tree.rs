//! Masks for a tree of drafted tokens (tree speculative decoding, as in
//! SpecInfer / Medusa / EAGLE): in one call, the mask at the root and after
//! every node's root-to-node path (the role of XGrammar's
//! `TraverseDraftTree`).
//!
//! The walk needs only [`Constraint`](zapspec_core::Constraint)'s advance
//! and rollback, so it lives in `zapspec_core::draft_tree` (where the
//! speculative verifier uses it for every matcher); this module re-exports
//! it. For [`EarleyMatcher`](crate::EarleyMatcher) a rollback pops chart
//! snapshots (O(1) each), and sibling nodes that reach equal parser states
//! share their mask through the pruned-state cache. `tests/batch_tree.rs`
//! checks it on Earley matchers against fresh matchers advanced along each
//! node's path.

pub use zapspec_core::draft_tree::{
    draft_tree_masks, DraftTree, DraftTreeError, DraftTreeMasks, NodeMask,
};
