//! Lazy compilation of terminals (`IndexConfig::deferred_terminals`): a
//! terminal's automaton is built by the first mask or step that reaches
//! it, never at compile time. Counted here: after compiling nothing is
//! built; the first mask builds only the terminals a parse can start with;
//! each branch taken builds its own. Masks equal those of an index that
//! builds every terminal up front, along random walks; a build that fails
//! at first use is reported by the matcher as an error, never a panic.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zapspec_core::{Constraint, TokenId, Vocabulary};
use zapspec_earley::{EarleyError, Engine, EngineConfig, IndexConfig, VocabIndex};
use zapspec_grammar::{Grammar, Limit, NtId, RegexLimits, Symbol, Terminal};
use zapspec_vocab::TokenVocab;

fn vocab() -> Arc<TokenVocab> {
    let mut toks: Vec<Vec<u8>> = Vec::new();
    for c in b'a'..=b'p' {
        toks.push(vec![c]);
    }
    for s in ["0", "1", "12", "x", "yx", "0x", "a0", "zz", "z", ""] {
        toks.push(s.as_bytes().to_vec());
    }
    // the empty token (the last) is EOS
    let eos = toks.len() as TokenId - 1;
    Arc::new(TokenVocab::from_tokens("deferred", toks, &[], eos).unwrap())
}

/// `root ::= "a" R₀ | "b" R₁ | … | "p" R₁₅`, every `Rₖ` a different regex
/// terminal: 32 terminals, of which a parse reaches one letter and one
/// regex.
fn branches() -> Grammar {
    let mut g = Grammar::new();
    let root = g.add_nonterminal("root");
    for (k, c) in (b'a'..=b'p').enumerate() {
        let re = format!("[0-9]{{1,{}}}x|z{{{}}}", k + 1, k % 3 + 1);
        g.add_rule(
            root,
            vec![
                Symbol::T(Terminal::Literal(vec![c])),
                Symbol::T(Terminal::Regex(re)),
            ],
        );
    }
    g.start = NtId(0);
    g
}

/// Fusion off, so the 32 terminals stay terminals (fused, the whole
/// grammar is one regex).
fn unfused() -> EngineConfig {
    EngineConfig {
        fuse_terminals: false,
        ..EngineConfig::default()
    }
}

#[test]
fn a_terminal_no_parse_reaches_is_never_built() {
    let engine = Engine::new(vocab());
    let cg = engine.compile(&branches(), unfused()).unwrap();
    // compiling builds at most the terminals of the initial set (pruning
    // reads their start states), never the regexes behind the letters
    assert!(cg.terminals_built().0 <= 16, "{:?}", cg.terminals_built());
    // the 16 regexes are deferred; the letters are literals, whose
    // automata are written down at once (`IndexConfig::direct_literals`)
    assert_eq!(engine.index().cache_stats().deferred, 16);
    let mut m = cg.matcher();
    let mask = m.mask();
    assert_eq!(mask.count(), 17, "the 16 letters and \"a0\"");
    // the first mask reached the 16 letters and, through the token "a0"
    // (a letter and the start of R₀), R₀; no other regex
    assert_eq!(cg.terminals_built(), (17, 32));
    let c = engine.index().vocab().token_bytes(2 as TokenId).to_vec();
    assert_eq!(c, b"c");
    m.advance(2).unwrap();
    let _ = m.mask();
    assert_eq!(
        cg.terminals_built(),
        (18, 32),
        "the branch taken builds its regex"
    );
    for t in [17 /* "1" */, 19 /* "x" */] {
        m.advance(t).unwrap();
        let _ = m.mask();
    }
    assert_eq!(cg.terminals_built(), (18, 32));
    assert!(m.is_accepting());
}

#[test]
fn deferred_masks_equal_masks_built_up_front() {
    let v = vocab();
    let lazy = Engine::new(v.clone())
        .compile(&branches(), unfused())
        .unwrap();
    let eager_index = VocabIndex::with_config(
        v.clone(),
        IndexConfig {
            deferred_terminals: false,
            ..IndexConfig::default()
        },
    )
    .unwrap();
    let eager = Engine::with_index(eager_index)
        .compile(&branches(), unfused())
        .unwrap();
    assert_eq!(eager.terminals_built(), (32, 32));
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for _ in 0..200 {
        let (mut a, mut b) = (lazy.matcher(), eager.matcher());
        for _ in 0..6 {
            let (ma, mb) = (a.mask(), b.mask());
            assert_eq!(ma, mb);
            let allowed: Vec<TokenId> = ma.iter().filter(|&t| t != v.eos()).collect();
            if allowed.is_empty() {
                break;
            }
            let t = allowed[rng.random_range(0..allowed.len())];
            a.advance(t).unwrap();
            b.advance(t).unwrap();
        }
    }
}

#[test]
fn a_deferred_build_that_fails_is_an_error_at_first_use() {
    // An NFA bound so small that the estimate admits one-byte literals for
    // deferral, but no NFA fits it.
    let cfg = EngineConfig {
        regex_limits: RegexLimits {
            nfa_bytes: 128,
            ..RegexLimits::default()
        },
        ..unfused()
    };
    // two one-byte literals, both deferred under this bound
    let mut g = Grammar::new();
    let root = g.add_nonterminal("root");
    g.add_rule(root, vec![Symbol::T(Terminal::Literal(b"a".to_vec()))]);
    g.add_rule(root, vec![Symbol::T(Terminal::Literal(b"b".to_vec()))]);
    let cfg = EngineConfig {
        pruning: false,
        ..cfg
    };
    // literals through the NFA path, as a regex's would be
    let index = VocabIndex::with_config(
        vocab(),
        IndexConfig {
            direct_literals: false,
            ..IndexConfig::default()
        },
    )
    .unwrap();
    let cg = Engine::with_index(index).compile(&g, cfg).unwrap();
    assert_eq!(cg.terminals_built(), (0, 2));
    let mut m = cg.matcher();
    match m.try_mask() {
        Err(EarleyError::LimitExceeded {
            limit: Limit::NfaBytes,
            terminal: Some(_),
            ..
        }) => {}
        other => panic!("expected an NFA limit error, got {other:?}"),
    }
    // the same limit built up front is a compile error
    let eager_index = VocabIndex::with_config(
        vocab(),
        IndexConfig {
            deferred_terminals: false,
            direct_literals: false,
            ..IndexConfig::default()
        },
    )
    .unwrap();
    assert!(matches!(
        Engine::with_index(eager_index).compile(&g, cfg),
        Err(EarleyError::LimitExceeded {
            limit: Limit::NfaBytes,
            ..
        })
    ));
}
