//! Grammar-forced tokens (`SpecConfig::forced_tokens`, `zapspec_verify::forced`)
//! leave the output unchanged — token for token under greedy decoding, for
//! every drafter and verifier, linear and tree; in law under sampling
//! (Leviathan samples μ^proj, FVO-Spec with exact Φ samples μ*, χ² against
//! the exact laws) — while the target is called less on a language with
//! long forced stretches.

use std::sync::Arc;

use proptest::prelude::*;
use zapspec_core::prob::seeded_rng;
use zapspec_core::{Constraint, LanguageModel, TokenId};
use zapspec_phi::{NoModel, PhiEstimator};
use zapspec_testkit::stats::{chi_square, noise_floor, tv_counts};
use zapspec_testkit::toy::{hashed_logits, ClosureLm};
use zapspec_testkit::{DyckConstraint, DyckSpec, TokenTrie, TrieConstraint};
use zapspec_verify::{
    CopyDraft, Drafter, ForcedTokens, Generation, MemoLm, Mode, NoDraft, PrefixTree, PromptLookup,
    RoundStats, SpecConfig, SpeculativeDecoder, TreeConfig, TreeLookup, TreePhi, VerifierKind,
};

/// Six letters and EOS (= 6).
const VOCAB: usize = 7;

/// A finite language with long forced stretches (after `0`, after `1 5`,
/// after `2 0`, …), choices in between, and EOS forced at the ends.
fn trie() -> TrieConstraint {
    let seqs: Vec<Vec<TokenId>> = vec![
        vec![0, 1, 2, 3, 4, 5, 1, 2],
        vec![0, 1, 2, 3, 4, 5, 1, 3],
        vec![0, 1, 2, 3, 4, 5, 1, 3, 4, 4, 4, 4],
        vec![1, 5, 5, 5, 5, 0],
        vec![1, 5, 5, 5, 5, 2, 3, 4, 5, 0],
        vec![2],
        vec![2, 0, 0, 0, 0, 0, 1],
        vec![3, 2, 1, 0, 2, 1, 0],
        vec![3, 2, 4],
    ];
    TrieConstraint::new(Arc::new(TokenTrie::new(seqs)), VOCAB, 6)
}

const DYCK: DyckSpec = DyckSpec {
    kinds: 2,
    max_depth: 3,
    max_len: 10,
};

/// Logits hash the whole context; EOS penalised.
fn lm(seed: u64, v: usize) -> ClosureLm<impl Fn(&[TokenId]) -> Vec<f32> + Clone> {
    ClosureLm::new(v, move |ctx: &[TokenId]| {
        let mut out = hashed_logits(seed, ctx, v, 2.0);
        out[v - 1] -= 1.0;
        out
    })
}

/// A prompt that repeats pieces of the members, so lookups propose often.
const PROMPT: [TokenId; 17] = [0, 1, 2, 3, 4, 5, 1, 3, 4, 4, 1, 5, 5, 5, 5, 2, 3];

/// [`PROMPT`] in a vocabulary of `v` tokens (EOS last, never prompted).
fn prompt(v: usize) -> Vec<TokenId> {
    PROMPT.iter().map(|&t| t % (v as TokenId - 1)).collect()
}

fn cfg(verifier: VerifierKind, mode: Mode, tree: bool, forced: bool, gamma: usize) -> SpecConfig {
    SpecConfig {
        gamma,
        mode,
        verifier,
        tree: tree.then_some(TreeConfig {
            max_width: 3,
            max_nodes: 12,
        }),
        forced_tokens: if forced {
            ForcedTokens::default()
        } else {
            ForcedTokens::off()
        },
        ..SpecConfig::default()
    }
}

/// `n` generations of `c` after [`PROMPT`] under target `lm(seed)`.
#[allow(clippy::too_many_arguments)]
fn generate<C, D, F>(
    c: &C,
    seed: u64,
    drafter: D,
    phi: F,
    cfg: SpecConfig,
    rng_seed: u64,
    n: usize,
) -> Vec<Generation>
where
    C: Constraint,
    D: Drafter,
    F: PhiEstimator<C, NoModel>,
{
    let v = c.vocab_size();
    let mut dec = SpeculativeDecoder::new(MemoLm::new(lm(seed, v)), drafter, phi, cfg)
        .unwrap()
        .with_prompt(&prompt(v));
    let mut rng = seeded_rng(rng_seed);
    (0..n).map(|_| dec.generate(c, &mut rng).unwrap()).collect()
}

fn tree_under<C: Constraint>(c: &C, seed: u64) -> PrefixTree<C> {
    let mut m = lm(seed, c.vocab_size());
    m.prefill(&prompt(c.vocab_size())).unwrap();
    PrefixTree::enumerate(c, &mut m, 100_000).unwrap()
}

/// Greedy output with forcing on equals forcing off, for one drafter under
/// every verifier, linear and tree; returns the summed counters with
/// forcing on and off.
fn greedy_on_off<C, D>(c: &C, seed: u64, drafter: D, gamma: usize, what: &str) -> [RoundStats; 2]
where
    C: Constraint,
    D: Drafter + Clone,
{
    let tree = tree_under(c, seed);
    let mut stats = [RoundStats::default(); 2];
    for verifier in [
        VerifierKind::Leviathan,
        VerifierKind::FvoSpec,
        VerifierKind::Equality,
    ] {
        for tree_mode in [false, true] {
            let run = |forced| {
                let cfg = cfg(verifier, Mode::Greedy, tree_mode, forced, gamma);
                generate(c, seed, drafter.clone(), tree.exact_phi(), cfg, 5, 1).remove(0)
            };
            let (on, off) = (run(true), run(false));
            assert_eq!(
                on.tokens, off.tokens,
                "{what}, {verifier:?}, tree {tree_mode}, seed {seed}, gamma {gamma}"
            );
            assert_eq!(on.stop, off.stop, "{what}, {verifier:?}, tree {tree_mode}");
            assert_eq!(off.stats.forced, 0);
            stats[0].merge(&on.stats);
            stats[1].merge(&off.stats);
        }
    }
    stats
}

/// Every drafter under every verifier, linear and tree, on the trie and
/// on a Dyck language (closes forced at the depth bound and the length
/// bound).
fn greedy_all(seed: u64, gamma: usize) -> [RoundStats; 2] {
    let mut total = [RoundStats::default(); 2];
    let mut add = |s: [RoundStats; 2]| {
        total[0].merge(&s[0]);
        total[1].merge(&s[1]);
    };
    let t = trie();
    add(greedy_on_off(&t, seed, NoDraft, gamma, "NoDraft"));
    add(greedy_on_off(
        &t,
        seed,
        PromptLookup::default(),
        gamma,
        "PromptLookup",
    ));
    add(greedy_on_off(
        &t,
        seed,
        TreeLookup::default(),
        gamma,
        "TreeLookup",
    ));
    add(greedy_on_off(
        &t,
        seed,
        CopyDraft::new(prompt(VOCAB)),
        gamma,
        "CopyDraft",
    ));
    add(greedy_on_off(
        &t,
        seed,
        lm(seed + 1, VOCAB),
        gamma,
        "draft model",
    ));
    let d = DyckConstraint::new(DYCK);
    let v = DYCK.vocab_size();
    add(greedy_on_off(&d, seed, NoDraft, gamma, "Dyck NoDraft"));
    add(greedy_on_off(
        &d,
        seed,
        TreeLookup::default(),
        gamma,
        "Dyck TreeLookup",
    ));
    add(greedy_on_off(
        &d,
        seed,
        lm(seed + 1, v),
        gamma,
        "Dyck draft model",
    ));
    total
}

#[test]
fn greedy_output_is_the_same_with_forcing_on_and_off() {
    let [on, off] = greedy_all(3, 3);
    assert!(on.forced > 0, "nothing was forced: {on:?}");
    assert_eq!(off.forced, 0);
    assert!(
        on.target_calls < off.target_calls,
        "forcing must save target calls: on {on:?}, off {off:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// The same over random target models and block lengths (the
    /// equality is asserted inside; whether a random model's greedy path
    /// meets a forced stretch at all depends on the model, so no count is
    /// asserted here).
    #[test]
    fn greedy_output_does_not_depend_on_forcing(seed in 0u64..1_000_000, gamma in 1usize..6) {
        let [_, off] = greedy_all(seed, gamma);
        prop_assert_eq!(off.forced, 0);
    }
}

/// Plain constrained decoding (no drafter, greedy) on the trie: every
/// forced token saves one target call, and the count is exact.
#[test]
fn forced_tokens_save_one_target_call_each_without_a_drafter() {
    let c = trie();
    let tree = tree_under(&c, 11);
    for tree_mode in [false, true] {
        let run = |forced| {
            let cfg = cfg(VerifierKind::Leviathan, Mode::Greedy, tree_mode, forced, 4);
            generate(&c, 11, NoDraft, tree.exact_phi(), cfg, 0, 1).remove(0)
        };
        let (on, off) = (run(true), run(false));
        assert_eq!(on.tokens, off.tokens);
        assert!(on.stats.forced >= 3, "{:?} {:?}", on.tokens, on.stats);
        // off: one call per token (+EOS) and one for the prompt's first row;
        // on: the forced ones are fed with the next round's forward
        assert_eq!(
            on.stats.target_calls + on.stats.forced,
            off.stats.target_calls,
            "tree {tree_mode}: on {:?} off {:?}",
            on.stats,
            off.stats
        );
        assert_eq!(on.stats.emitted, off.stats.emitted);
    }
}

/// The length limit: forcing stops at `max_tokens`; the output is that of
/// forcing off, and so is the stop reason below the limit. An output of
/// exactly `max_tokens` tokens that is also complete stops with
/// `MaxTokens` with forcing on (as plain constrained decoding does) and
/// with either reason with forcing off (whether the round that reached the
/// limit also verified EOS depends on the drafter).
#[test]
fn forcing_respects_the_length_limit() {
    let c = trie();
    let tree = tree_under(&c, 2);
    for max_tokens in 1..14 {
        for tree_mode in [false, true] {
            for lookup in [false, true] {
                let run = |forced| {
                    let cfg = SpecConfig {
                        max_tokens,
                        ..cfg(VerifierKind::Leviathan, Mode::Greedy, tree_mode, forced, 2)
                    };
                    if lookup {
                        generate(&c, 2, PromptLookup::default(), tree.exact_phi(), cfg, 0, 3)
                    } else {
                        generate(&c, 2, NoDraft, tree.exact_phi(), cfg, 0, 3)
                    }
                };
                let (on, off) = (run(true), run(false));
                for (a, b) in on.iter().zip(&off) {
                    let what = format!("max {max_tokens}, tree {tree_mode}, lookup {lookup}");
                    assert_eq!(a.tokens, b.tokens, "{what}");
                    assert!(a.tokens.len() <= max_tokens, "{what}");
                    if a.tokens.len() < max_tokens || !lookup {
                        assert_eq!(a.stop, b.stop, "{what}");
                    } else {
                        assert!(
                            a.stop == b.stop || b.stop.is_complete(),
                            "{what}: {:?} vs {:?}",
                            a.stop,
                            b.stop
                        );
                    }
                }
            }
        }
    }
}

/// Forcing never exceeds `ForcedTokens::max_len` per round.
#[test]
fn forcing_takes_at_most_max_len_per_round() {
    let c = trie();
    let v = c.vocab_size();
    let cfg = SpecConfig {
        forced_tokens: ForcedTokens {
            enabled: true,
            max_len: 2,
        },
        ..cfg(VerifierKind::Leviathan, Mode::Greedy, false, true, 2)
    };
    let mut dec =
        SpeculativeDecoder::new(MemoLm::new(lm(4, v)), NoDraft, zapspec_phi::Uniform, cfg).unwrap();
    let mut rng = seeded_rng(0);
    let mut state = dec.start(&c).unwrap();
    let mut forced = 0;
    while !dec.is_done(&state) {
        let before = state.committed.len();
        let r = dec.round(&mut state, &mut rng).unwrap();
        assert!(r.forced.len() <= 2);
        assert_eq!(
            &state.committed[before..before + r.forced.len()],
            &r.forced[..]
        );
        forced += r.forced.len();
    }
    assert!(forced > 0);
    assert_eq!(dec.stats().forced, forced);
}

/// Counts per member of `tree` of the outputs.
fn counts<C: Constraint>(tree: &PrefixTree<C>, gens: &[Generation]) -> Vec<usize> {
    let idx = tree.member_index();
    let mut out = vec![0usize; tree.num_members()];
    for g in gens {
        out[*idx.get(&g.tokens).expect("output outside the language")] += 1;
    }
    out
}

fn assert_law(counts: &[usize], log_law: &[f64], what: &str) {
    let law: Vec<f64> = log_law.iter().map(|l| l.exp()).collect();
    let n: usize = counts.iter().sum();
    let chi = chi_square(counts, &law);
    assert!(
        chi.p_value > 1e-4,
        "{what}: chi-square p = {} ({counts:?} vs {law:?})",
        chi.p_value
    );
    let tv = tv_counts(counts, &law);
    let (floor, sd) = noise_floor(&mut seeded_rng(99), &law, n, 40);
    assert!(tv <= floor + 5.0 * sd, "{what}: TV {tv} vs {floor} ± {sd}");
}

/// Sampled: with forcing on, Leviathan still samples μ^proj and FVO-Spec
/// with exact Φ still samples μ* (they differ on this language, so the test
/// tells them apart), under a draft model, prompt lookup and no drafter,
/// linear and tree.
#[test]
fn sampled_laws_are_unchanged_by_forcing() {
    let c = trie();
    let seed = 21;
    let tree = tree_under(&c, seed);
    let (star, proj) = (tree.log_mu_star(), tree.log_mu_proj());
    let tv: f64 = star
        .iter()
        .zip(&proj)
        .map(|(a, b)| (a.exp() - b.exp()).abs())
        .sum::<f64>()
        / 2.0;
    assert!(tv > 0.05, "μ* and μ^proj too close ({tv})");
    let n = 6000;
    let mut forced = 0;
    for (verifier, law, name) in [
        (VerifierKind::Leviathan, &proj, "μ^proj"),
        (VerifierKind::FvoSpec, &star, "μ*"),
    ] {
        for tree_mode in [false, true] {
            let cfg = || cfg(verifier, Mode::Sampled, tree_mode, true, 3);
            let what = |d: &str| format!("{d}, {verifier:?}, tree {tree_mode} → {name}");
            let g = generate(&c, seed, lm(seed + 1, VOCAB), tree.exact_phi(), cfg(), 1, n);
            forced += g.iter().map(|g| g.stats.forced).sum::<usize>();
            assert_law(&counts(&tree, &g), law, &what("draft model"));
            let g = generate(
                &c,
                seed,
                PromptLookup::default(),
                tree.exact_phi(),
                cfg(),
                2,
                n,
            );
            assert_law(&counts(&tree, &g), law, &what("prompt lookup"));
            let g = generate(&c, seed, NoDraft, tree.exact_phi(), cfg(), 3, n);
            forced += g.iter().map(|g| g.stats.forced).sum::<usize>();
            assert_law(&counts(&tree, &g), law, &what("no drafter"));
        }
    }
    assert!(forced > n, "forcing must have happened ({forced})");
}
