//! `LlgConstraint` keeps zapspec's `Constraint` protocol over llguidance:
//! along a valid instance, its masks are llguidance's own (a separate
//! `LlgMatcher` fed the same tokens), a refused token leaves the state
//! unchanged, EOS is allowed exactly at the end, rollback (EOS included)
//! restores earlier masks, and a fork is independent.

use llguidance::api::TopLevelGrammar;
use llguidance::ParserFactory;
use serde_json::json;
use zapspec_core::{Constraint, TokenId, TokenSet, Vocabulary};
use zapspec_vocab::TokenVocab;

use examples::llg::{compact_schema, tok_env, LlgConstraint, LlgMatcher};

#[test]
fn llg_constraint_keeps_the_protocol() {
    let vocab = TokenVocab::bytes();
    let env = tok_env(&vocab);
    let mut factory = ParserFactory::new_simple(&env).unwrap();
    factory.quiet();
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 3}},
        "required": ["a"],
        "additionalProperties": false
    });
    let grammar = || TopLevelGrammar::from_json_schema(compact_schema(&schema));
    let mut c = LlgConstraint::new(&factory, grammar(), &vocab).unwrap();
    let mut raw = LlgMatcher::new(&factory, grammar()).unwrap();
    let eos = vocab.eos();
    let text = br#"{"a":12,"b":"xy"}"#;
    let n = vocab.len();
    let mut masks: Vec<TokenSet> = Vec::new();
    for (i, &b) in text.iter().enumerate() {
        let t = TokenId::from(b);
        let mut got = TokenSet::new(n);
        c.fill_mask(&mut got);
        let mut want = TokenSet::new(n);
        raw.fill_mask(&mut want).unwrap();
        assert_eq!(got, want, "mask before byte {i}");
        assert!(got.contains(t), "byte {i} allowed");
        assert!(!got.contains(eos), "no EOS before the end (byte {i})");
        // a refused token changes nothing
        let bad = (0..256u32).find(|&x| !got.contains(x)).unwrap();
        assert!(c.advance(bad).is_err());
        assert_eq!(c.num_tokens(), i);
        let mut again = TokenSet::new(n);
        c.fill_mask(&mut again);
        assert_eq!(again, got, "state unchanged after a refused token");
        masks.push(got);
        c.advance(t).unwrap();
        raw.advance(t, eos).unwrap();
    }
    assert!(c.is_accepting());
    let mut end = TokenSet::new(n);
    c.fill_mask(&mut end);
    assert!(end.contains(eos));
    let fork = c.fork();
    c.advance(eos).unwrap();
    assert!(c.is_finished() && c.advance(TokenId::from(b' ')).is_err());
    assert!(!fork.is_finished(), "the fork is independent");
    // roll back EOS and four bytes: the masks come back
    c.rollback(5).unwrap();
    assert!(!c.is_finished());
    assert_eq!(c.num_tokens(), text.len() - 4);
    let mut m = TokenSet::new(n);
    c.fill_mask(&mut m);
    assert_eq!(m, masks[text.len() - 4]);
    for &b in &text[text.len() - 4..] {
        c.advance(TokenId::from(b)).unwrap();
    }
    assert!(c.is_accepting());
    assert!(c.rollback(100).is_err());
}
