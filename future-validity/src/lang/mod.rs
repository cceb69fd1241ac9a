//! The finite languages of the future-validity paper's experiments as
//! [`Constraint`](zapspec_core::Constraint)s: the bounded Dyck language
//! `D_{d,L}` ([`dyck`]) and finite token tries ([`trie`], the finite JSON
//! schemas of Table 7). The exact tier ([`crate::exact::dyck`],
//! [`crate::exact::trie`]) is written against them; `zapspec-testkit`
//! re-exports them as its reference matchers.

pub mod dyck;
pub mod trie;

pub use dyck::{DyckConstraint, DyckRefusal, DyckSpec};
pub use trie::{TokenTrie, TrieConstraint};
