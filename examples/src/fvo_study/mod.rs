//! Study code of the future-validity experiments that is not part of
//! `zapspec-phi`'s API: [`learned`], the learned Φ tier of §5.3 (a
//! hand-written two-layer MLP, its Adam trainer, trie features and the
//! leave-one-schema-out protocol). The sample statistics the `fvo_*`
//! binaries compare laws with are in `zapspec_testkit::stats` (tests of
//! other crates use them too).

pub mod learned;
