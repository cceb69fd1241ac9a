//! Shared helpers of the example binaries in `src/bin/`: experiment
//! plumbing that is not part of any library crate's API.
//!
//! | module | holds |
//! |---|---|
//! | [`report`] | [`report::CommonArgs`] (`--out`, `--quick`, a `clap::Args`), Markdown tables, JSON output |
//! | [`copy_study`] | the Copy-as-Decode experiments over `zapspec_copy`: coverage and bounds, the perturbation study, edit corpora (JSONL, git history), the regeneration / prompt-lookup baselines, caller-side timing |
//! | [`edits`] | edit corpora of the `copy_*` experiments: [`edits::CorpusArgs`] (JSONL files, `--git` history with size filters) and one loader ([`edits::load`]) |
//! | [`finite_law`] | exact laws of a finite token language on a real model: the token tree walked by masks, its rows scored a subtree at a time, a table-backed model |
//! | [`fvo_study`] | study code moved out of `zapspec-phi`: the learned Φ tier and its trainer ([`fvo_study::learned`]) |
//! | [`fvo`] | helpers of the `fvo_*` experiments: progress bar, empirical-vs-exact [`fvo::Comparison`] |
//! | [`llg`] | llguidance over a zapspec vocabulary (the baseline engine) |
//! | [`smollm2`] | the real model: SmolLM2-135M-Instruct GGUF, its tokenizer and chat template, with a clear error when it is not fetched |
//! | [`toys`] | experiment data: the finite JSON schemas A–E and the byte-LM corpus |
//! | [`host`], [`kbnf_ir`], [`maskstats`] | MaskBench and pipeline helpers |

pub mod copy_study;
pub mod edits;
pub mod finite_law;
pub mod fvo;
pub mod fvo_study;
pub mod host;
pub mod kbnf_ir;
pub mod llg;
pub mod maskstats;
pub mod report;
pub mod schema_tasks;
pub mod smollm2;
pub mod toys;
