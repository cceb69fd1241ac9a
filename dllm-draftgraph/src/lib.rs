//! # zapspec-spiffy: Spiffy draft graphs for diffusion LLMs
//!
//! Lossless speculative decoding of masked diffusion language models with
//! calibrated, pruned **directed draft graphs** (Agrawal et al., "Spiffy",
//! `shared/papers/003_31c1e42d56fca963.txt`). The model drafts for itself:
//! the marginals of one denoising call name likely *future states* of the
//! block (draft blocks), and one call with the draft-block attention mask
//! of the paper's Fig. 3 scores the true block and every draft at once. A
//! draft equal to the next true state is accepted and its marginals let
//! decoding skip a call — recursively through the draft's children.
//!
//! Everything is generic over [`zapspec_core::DiffusionModel`]; the crate
//! knows nothing about tensors. One `denoise` call is one NFE.
//!
//! ## Entry points
//!
//! | module | paper | what |
//! |---|---|---|
//! | [`decode`] | §3.1, App. A `Next` | [`decode::generate`]: the block-wise baseline (static `S` or threshold `τ`, greedy or sampled), [`decode::next_state`] |
//! | [`marginals`] | Eqs. 8–11 | log-space marginals, token position rank `i`, vocabulary rank `j` |
//! | [`formula`] | §4.4.2 | [`formula::DraftFormula`] `{(i, j)}`, [`formula::Anchor`] fills formulas into draft blocks |
//! | [`graph`] | §4.4.1, Eqs. 4–7 | [`graph::DraftGraph`] (petgraph, serde JSON), [`graph::is_parent`] |
//! | [`pruning`] | Eqs. 12–14 | local / child / total GM scores, top-`D*` |
//! | [`verify`] | Alg. 1 | [`verify::generate_spiffy`], [`verify::SpiffyStats`] (Table 3 wall times, opt-in: [`verify::SpiffyConfig::timing`]) |
//! | [`mod@calibrate`] | Alg. 2, Eqs. 24–27 | trajectories, the all-possibilities graph, exact subgraph selection (wall times opt-in: [`calibrate::CalibrationConfig::timing`]) |
//!
//! The crate reads the system clock only behind those two opt-in switches.
//!
//! Typical use: [`calibrate::record_trajectory`] on a few prompts →
//! [`calibrate::calibrate`] (`D = 10`) → save [`graph::DraftGraph::to_json`]
//! → [`verify::generate_spiffy`] with `D* = 3`.
//!
//! ## Costs
//!
//! - Decoding: one `denoise` call (one NFE) per iteration, scoring the
//!   true block and `D*` draft blocks; each accepted draft saves a call.
//!   Host work per call is `O(L·V)` for the marginals plus `O(|G|·|q|·V)`
//!   to score and fill the graph's formulas (`|G| = D` nodes of `|q|`
//!   tokens) — a few percent of a model call (see the example's overhead
//!   table).
//! - Calibration: the vanilla runs (one per prompt), then building the
//!   candidate graph in `O(steps·𝓛·|q|)` and an exact branch-and-bound
//!   search for the best connected `D`-subset, milliseconds for `D = 10`
//!   where the paper's brute force took ~3 minutes (App. D.2).
//! - Model calls: with `D*` drafts a call scores `(1 + D*)·L` rows instead
//!   of `L`; on a GPU with a large model that is nearly free, on a small
//!   CPU model it is not (the call grows with its rows), so NFE savings
//!   and token-rate savings differ.
//!
//! Measured figures (NFE, token rate, acceptance, mismatches, the `D*`
//! and temperature sweeps, the overhead table, confidence distributions)
//! are in `examples/results/spiffy/`, made by
//! `examples/src/bin/spiffy.rs`; the command is at the top of each file.

//! ## Lossless
//!
//! [`verify::generate_spiffy`] makes every state with the same
//! [`decode::next_state`] from the same marginals and the same randomness
//! as [`decode::generate`]: the sampling stream of a step is keyed by
//! `(seed, block, step-in-block)`, not by the call that reached it. The
//! output is therefore token for token the vanilla output whenever the
//! model's draft marginals equal those of a separate call with the draft
//! written in (App. A.1) — blockwise-causal models, dual caches, and any
//! deterministic toy; with bidirectional attention and only a prefix cache
//! it is approximate (App. A.2) and the example binary counts mismatches.
//!
//! ## Where the paper is ambiguous, and the reading taken
//!
//! 1. **Which marginals drafts are written in** (§4.4.2, line 199: "the
//!    current block state `X_k(t)` with a set of additionally unmasked
//!    tokens"; Alg. 2 records `L = t' − t` from 0 (line 249), and App. D.4's
//!    "level 1 = (1,1),(2,1)"). Drafts are built *before* the call that
//!    verifies them, so from the previous call's marginals `p(·|A)`, where
//!    `A` (the *anchor*) is the last state the model scored and the
//!    current state is `Y = Next(A, p(·|A))`. A formula is written relative
//!    to `A` and includes the tokens of `Y \ A` (level `ℓ = 0`); so level-1
//!    formulas have two tokens under `S = 1`, as in App. D.4. Formulas not
//!    strictly containing `Y \ A` can never be accepted and are skipped
//!    before pruning.
//! 2. **Matching with dynamic unmasking** (Alg. 1, line 134, compares `t_m = t`,
//!    which presumes a fixed `S_t`). Drafts are matched by block content:
//!    the first acceptance of a call may be any sent draft equal to the
//!    new state, later ones must be children of the last accepted draft
//!    (so every accepted chain is a parent→child path). Equal content is
//!    all losslessness needs (App. A.1).
//! 3. **The parent relation under dynamic unmasking** (Eqs. 4–6 assume a
//!    known `S_{t_b}`). Calibrated graphs use Alg. 2's edges, every strict
//!    subset pair `p ⊂ q` (line 268); [`graph::is_parent`] checks Eqs. 4–6
//!    when `S` is static.
//! 4. **`count(q)` of a set kept at several levels** (Alg. 2 part 2,
//!    line 261: "count(node) := frequency of occurrence of node" among
//!    the sequences reaching level `k`, and line 270: "nodes = {q_kv} for v ∈ 1, 2, 3,
//!    k ∈ 1, …, 𝓛"; Eq. 27). By default the paper's per-level reading: a
//!    formula kept at level `k` is node `q_kv`, counted by how often it is
//!    level `k`'s state; kept at two levels it is two nodes, and Eq. 27 is
//!    maximised over those counts. The top in-edge sources of level `k`
//!    are nodes of level `k − 1` with that level's count; all subset edges
//!    are then added. [`calibrate::CalibrationConfig::merge_levels`] keeps
//!    the other reading: one node at the lowest level, counted as a
//!    cumulative state over all levels (fewer duplicate drafts, but a
//!    different objective, whose choice can be worse under the paper's).
//!    Pruning sends a formula kept at several levels once.
//! 5. **childScore of a node without children** (Eq. 13, line 222: an empty GM): the
//!    total score is then the local score.
//! 6. **Subgraph size** (Eq. 26, line 509, asks `|g| = D`): `min(D, #nodes reachable
//!    from the root levels)`, the largest feasible size.
//! 7. **Confidence for sampling** (§3.1, line 66: "per-token probabilities"): the
//!    untempered model probability of the chosen token (LLaDA/Fast-dLLM);
//!    position ranks for drafting use `max_v p_n(v)` (Eq. 8), also
//!    untempered. Temperature only changes which token is drawn.
//! 8. **Blocks** start at the end of the prompt (the last one may be
//!    shorter); a blockwise-causal backend needs prompts whose length is a
//!    multiple of its block.
//!
//! ## Not done
//!
//! - Position-id and attention-mask construction happen inside the model
//!   backend (`zapspec-backend`'s `DiffusionLm`), so [`verify::SpiffyStats`]
//!   counts them inside the model call; the example replays them apart.
//! - No draft for the first call of a block (there are no marginals of it
//!   yet); drafting across blocks is future work.

pub mod calibrate;
pub mod decode;
pub mod error;
pub mod formula;
pub mod graph;
pub mod marginals;
pub mod pruning;
pub mod verify;

pub use calibrate::{
    calibrate, record_trajectory, select_subgraph, Calibration, CalibrationConfig, Selection,
};
pub use decode::{generate, DecodeConfig, DecodeOutput, Unmasking};
pub use error::SpiffyError;
pub use formula::{Anchor, DraftFormula};
pub use graph::{DraftGraph, DraftNode};
pub use verify::{generate_spiffy, SpiffyConfig, SpiffyOutput, SpiffyStats};
