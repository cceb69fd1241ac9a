//! Batch masks ([`zapspec_earley::fill_masks`]) and draft-tree masks
//! ([`zapspec_earley::draft_tree_masks`]) against the one-sequence path:
//! a batch filled in parallel on a shared compiled grammar equals a
//! sequential loop over matchers of a separate compilation, and the mask
//! at every node of a draft tree equals the mask of a fresh matcher
//! advanced along the node's root-to-node path.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zapspec_core::{Constraint, TokenId, TokenSet, Vocabulary};
use zapspec_earley::{
    draft_tree_masks, fill_masks, fill_masks_with, BatchConfig, CompiledGrammar, DraftTree,
    EarleyMatcher, Engine, EngineConfig, NodeMask,
};
use zapspec_grammar::Grammar;
use zapspec_vocab::TokenVocab;

const JSON: &str = r#"
root   ::= value
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( pair ( "," ws pair )* )? "}" ws
pair   ::= string ":" ws value
array  ::= "[" ws ( value ( "," ws value )* )? "]" ws
string ::= "\"" [a-c ]* "\"" ws
number ::= "-"? [0-9]+ ("." [0-9]+)? ws
ws     ::= " "?
"#;

/// Left-recursive arithmetic expressions.
const EXPR: &str = r#"
root   ::= expr
expr   ::= expr "+" term | expr "-" term | term
term   ::= term "*" factor | factor
factor ::= num | "(" expr ")"
num    ::= [0-9]+
"#;

/// Every printable ASCII byte, some multi-byte pieces of JSON and
/// expressions (tokens spanning terminals), then EOS.
fn vocab() -> Arc<TokenVocab> {
    let mut toks: Vec<Vec<u8>> = (0x20u8..0x7f).map(|b| vec![b]).collect();
    for s in [
        "{\"", "\":", "\",", "\"}", "true", "false", "null", "12", "3.", "ab", " \"", ", ", "[{",
        "}]", "],", "+(", ")*", "1+", "*2", "))", "((", "a\"", "-1",
    ] {
        toks.push(s.as_bytes().to_vec());
    }
    toks.push(Vec::new());
    let eos = (toks.len() - 1) as TokenId;
    Arc::new(TokenVocab::from_tokens("batch-test", toks, &[], eos).unwrap())
}

fn compile(engine: &Engine, gbnf: &str, cfg: EngineConfig) -> Arc<CompiledGrammar> {
    engine
        .compile(&Grammar::from_gbnf(gbnf).unwrap(), cfg)
        .unwrap()
}

/// Advances `m` by up to `steps` random allowed tokens (EOS rarely).
fn random_walk(m: &mut EarleyMatcher, steps: usize, rng: &mut ChaCha8Rng) -> Vec<TokenId> {
    let eos = m.eos();
    let mut path = Vec::new();
    for _ in 0..steps {
        let mask = m.mask();
        let allowed: Vec<TokenId> = mask.iter().filter(|&t| t != eos).collect();
        let t = if allowed.is_empty() || (mask.contains(eos) && rng.random_bool(0.1)) {
            if !mask.contains(eos) {
                break;
            }
            eos
        } else {
            allowed[rng.random_range(0..allowed.len())]
        };
        m.advance(t).unwrap();
        path.push(t);
        if t == eos {
            break;
        }
    }
    path
}

/// A batch of 48 matchers at different positions, masked on a 4-thread
/// pool (a cold grammar, then warm, then after one more token each),
/// equals a sequential loop over matchers of a separate compilation.
#[test]
fn batch_equals_sequential() {
    let vocab = vocab();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap();
    for (gi, gbnf) in [JSON, EXPR].into_iter().enumerate() {
        for cfg in [
            EngineConfig::default(),
            EngineConfig {
                state_cache: false,
                ..EngineConfig::default()
            },
        ] {
            for seed in 0..3u64 {
                let mut rng = ChaCha8Rng::seed_from_u64(seed * 10 + gi as u64);
                // separate engines: no shared context-independent entries either
                let shared = compile(&Engine::new(vocab.clone()), gbnf, cfg);
                let reference = compile(&Engine::new(vocab.clone()), gbnf, cfg);
                let mut batch: Vec<EarleyMatcher> = Vec::new();
                let mut seq: Vec<EarleyMatcher> = Vec::new();
                for _ in 0..48 {
                    let mut m = reference.matcher();
                    let steps = rng.random_range(0..24);
                    let path = random_walk(&mut m, steps, &mut rng);
                    let mut b = shared.matcher();
                    for &t in &path {
                        b.advance(t).unwrap();
                    }
                    batch.push(b);
                    seq.push(m);
                }
                // the default split, everything to the pool, one mask on
                // the caller then the pool, everything on the caller
                let handoffs = [
                    None,
                    Some(Duration::ZERO),
                    Some(Duration::from_nanos(1)),
                    Some(Duration::from_secs(3600)),
                ];
                for (round, handoff) in handoffs.into_iter().enumerate() {
                    let want: Vec<TokenSet> = seq.iter_mut().map(|m| m.mask()).collect();
                    let mut got = vec![TokenSet::new(vocab.len()); batch.len()];
                    match handoff {
                        None => pool.install(|| fill_masks(&mut batch, &mut got)).unwrap(),
                        Some(handoff_above) => {
                            let cfg = BatchConfig { handoff_above };
                            fill_masks_with(&mut batch, &mut got, &cfg).unwrap()
                        }
                    }
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(g, w, "grammar {gi} seed {seed} round {round} seq {i}");
                    }
                    if round % 2 == 1 {
                        // one more token on every unfinished sequence
                        for (b, m) in batch.iter_mut().zip(seq.iter_mut()) {
                            let path = random_walk(m, 1, &mut rng);
                            for &t in &path {
                                b.advance(t).unwrap();
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Builds a draft tree from raw picks: each node hangs under an earlier
/// node (or the root) and takes, mostly, a token its parent's state allows
/// (computed on a fresh matcher), otherwise any token.
fn build_tree(
    start: &EarleyMatcher,
    vocab: &TokenVocab,
    picks: &[(usize, usize, bool)],
) -> DraftTree {
    let mut tree = DraftTree::default();
    for &(p, t, any) in picks {
        let parent = match p % (tree.len() + 1) {
            0 => None,
            k => Some(k - 1),
        };
        let mut m = start.clone();
        let path = parent.and_then(|n| tree.path(n)).unwrap_or_default();
        let ok = path.iter().all(|&u| m.advance(u).is_ok());
        let allowed: Vec<TokenId> = if ok {
            m.mask().iter().collect()
        } else {
            Vec::new()
        };
        let token = if any || allowed.is_empty() {
            (t % vocab.len()) as TokenId
        } else {
            allowed[t % allowed.len()]
        };
        tree.push(parent, token).unwrap();
    }
    tree
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The mask at every node equals a fresh matcher's along the node's
    /// path; a node whose token is refused is `Rejected`, its descendants
    /// `Pruned` under it; the matcher is left where it started.
    #[test]
    fn draft_tree_masks_equal_path_replay(
        gi in 0usize..2,
        prefix_seed in 0u64..1000,
        prefix_len in 0usize..6,
        picks in prop::collection::vec((0usize..64, 0usize..1000, prop::bool::weighted(0.15)), 0..28),
    ) {
        let vocab = vocab();
        let engine = Engine::new(vocab.clone());
        let gbnf = [JSON, EXPR][gi];
        let cg = compile(&engine, gbnf, EngineConfig::default());
        let mut start = cg.matcher();
        let mut rng = ChaCha8Rng::seed_from_u64(prefix_seed);
        let prefix = random_walk(&mut start, prefix_len, &mut rng);
        let tree = build_tree(&start, &vocab, &picks);

        let mut m = start.clone();
        let before = (m.num_tokens(), m.mask());
        let out = draft_tree_masks(&mut m, &tree).unwrap();
        prop_assert_eq!((m.num_tokens(), m.mask()), before);

        // a separate compilation: nothing cached from the walk
        let fresh_cg = compile(&Engine::new(vocab.clone()), gbnf, EngineConfig::default());
        let replay_start = || {
            let mut f = fresh_cg.matcher();
            for &t in &prefix {
                f.advance(t).unwrap();
            }
            f
        };
        prop_assert_eq!(&out.root, &replay_start().mask());
        prop_assert_eq!(out.nodes.len(), tree.len());
        for (v, got) in out.nodes.iter().enumerate() {
            let path = tree.path(v).unwrap();
            let mut f = replay_start();
            // index (within the path) of the first refused token
            let refused = path.iter().position(|&t| f.advance(t).is_err());
            // node ids along the path, root first
            let mut ids = Vec::new();
            let mut at = Some(v);
            while let Some(i) = at {
                ids.push(i);
                at = tree.parents()[i];
            }
            ids.reverse();
            match (refused, got) {
                (None, NodeMask::Valid(mask)) => prop_assert_eq!(mask, &f.mask(), "node {}", v),
                (Some(k), NodeMask::Rejected(_)) => prop_assert_eq!(k, path.len() - 1, "node {}", v),
                (Some(k), NodeMask::Pruned { ancestor }) => {
                    prop_assert!(k < path.len() - 1);
                    prop_assert_eq!(*ancestor, ids[k], "node {}", v);
                }
                (r, g) => prop_assert!(false, "node {v}: replay refused at {r:?}, tree says {g:?}"),
            }
        }
    }
}

/// Guards against a vacuous property test: trees built like the property's
/// have both valid and rejected nodes, several levels deep.
#[test]
fn draft_trees_are_not_vacuous() {
    let vocab = vocab();
    let cg = compile(&Engine::new(vocab.clone()), JSON, EngineConfig::default());
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (mut valid, mut rejected, mut pruned, mut deep) = (0, 0, 0, 0);
    for _ in 0..20 {
        let picks: Vec<(usize, usize, bool)> = (0..24)
            .map(|_| {
                (
                    rng.random_range(0..64),
                    rng.random_range(0..1000),
                    rng.random_bool(0.15),
                )
            })
            .collect();
        let tree = build_tree(&cg.matcher(), &vocab, &picks);
        let out = draft_tree_masks(&mut cg.matcher(), &tree).unwrap();
        for (v, n) in out.nodes.iter().enumerate() {
            match n {
                NodeMask::Valid(_) => valid += 1,
                NodeMask::Rejected(_) => rejected += 1,
                NodeMask::Pruned { .. } => pruned += 1,
            }
            if n.is_valid() && tree.path(v).unwrap().len() >= 4 {
                deep += 1;
            }
        }
    }
    eprintln!("{valid} valid, {rejected} rejected, {pruned} pruned, {deep} valid at depth ≥ 4");
    assert!(valid >= 200 && rejected >= 20 && pruned >= 5 && deep >= 50);
}

/// A chain with EOS in the middle: EOS finishes the path (empty mask),
/// anything after it is refused as `Finished`, and the matcher is rolled
/// back past the EOS.
#[test]
fn eos_inside_a_draft_chain() {
    let vocab = vocab();
    let cg = compile(&Engine::new(vocab.clone()), EXPR, EngineConfig::default());
    let tok = |s: &str| -> TokenId {
        (0..vocab.len() as TokenId)
            .find(|&t| vocab.token_bytes(t) == s.as_bytes())
            .unwrap()
    };
    let eos = vocab.eos();
    let tree = DraftTree::chain(vec![tok("1"), eos, tok("2"), tok("+")]);
    let mut m = cg.matcher();
    let out = draft_tree_masks(&mut m, &tree).unwrap();
    assert!(out.nodes[0].mask().unwrap().contains(eos));
    assert_eq!(out.nodes[1], NodeMask::Valid(TokenSet::new(vocab.len())));
    assert_eq!(
        out.nodes[2],
        NodeMask::Rejected(zapspec_core::RejectReason::Finished)
    );
    assert_eq!(out.nodes[3], NodeMask::Pruned { ancestor: 2 });
    assert_eq!(m.num_tokens(), 0);
    assert!(!m.is_finished());
}

/// `EarleyMatcher::with_mask` lends the set `fill_mask` writes — on a
/// state-cache miss, on a hit (the second visit of every state), with the
/// cache off, and after EOS — along random walks of both grammars.
#[test]
fn lent_mask_equals_filled_mask() {
    let vocab = vocab();
    for (gi, gbnf) in [JSON, EXPR].into_iter().enumerate() {
        for cfg in [
            EngineConfig::default(),
            EngineConfig {
                state_cache: false,
                ..EngineConfig::default()
            },
        ] {
            let g = compile(&Engine::new(vocab.clone()), gbnf, cfg);
            let reference = compile(&Engine::new(vocab.clone()), gbnf, cfg);
            let mut scratch = TokenSet::new(vocab.len());
            let mut lent_eos = 0;
            for seed in 0..20u64 {
                let mut rng = ChaCha8Rng::seed_from_u64(seed * 7 + gi as u64);
                let mut walker = reference.matcher();
                let path = random_walk(&mut walker, 30, &mut rng);
                for pass in 0..2 {
                    let mut m = g.matcher();
                    let mut r = reference.matcher();
                    for k in 0..=path.len() {
                        let want = r.mask();
                        let got = m.with_mask(&mut scratch, |s| s.clone());
                        assert_eq!(
                            got, want,
                            "grammar {gi}, seed {seed}, pass {pass}, step {k}"
                        );
                        lent_eos += usize::from(got.contains(vocab.eos()));
                        if k < path.len() {
                            m.advance(path[k]).unwrap();
                            r.advance(path[k]).unwrap();
                        }
                    }
                }
            }
            assert!(lent_eos > 0, "no walk reached an accepting state");
        }
    }
}
