//! Hostile grammars for the Earley engine (issue 17): every compile ends
//! quickly in success or in `EarleyError::LimitExceeded` naming the limit,
//! the rule and the terminal — never an out-of-memory kill. The asserted
//! time bound is generous (noisy CI machines).

use std::sync::Arc;
use zapspec_core::Constraint;
use zapspec_earley::{EarleyError, Engine, EngineConfig};
use zapspec_grammar::{Grammar, Limit, RegexLimits};
use zapspec_testkit::hostile::timed;
use zapspec_vocab::TokenVocab;

fn compile(src: &str, cfg: EngineConfig) -> Result<(), EarleyError> {
    let g = Grammar::from_gbnf(src).unwrap();
    let vocab = Arc::new(TokenVocab::bytes());
    let c = Engine::new(vocab).compile(&g, cfg)?;
    let mut m = c.matcher();
    let _ = m.mask();
    Ok(())
}

fn assert_limit(r: Result<(), EarleyError>, want: &[Limit], rule: &str) {
    match r {
        Err(EarleyError::LimitExceeded { limit, place, .. }) => {
            assert!(want.contains(&limit), "{limit}");
            assert!(place.contains(&format!("rule `{rule}`")), "{place}");
        }
        other => panic!("expected a limit, got {other:?}"),
    }
}

#[test]
fn nested_counted_repetition() {
    let r = timed("a{1000}{1000}{1000}", || {
        compile(
            "root ::= \"x\" word\nword ::= /a{1000}{1000}{1000}/\n",
            EngineConfig::default(),
        )
    });
    assert_limit(r, &[Limit::NfaBytes], "word");
}

#[test]
fn exponential_dfa() {
    for cfg in [EngineConfig::default(), EngineConfig::baseline()] {
        let r = timed("(a|b)*a(a|b){25}", || {
            compile("root ::= item+\nitem ::= /(a|b)*a(a|b){25}/ \";\"\n", cfg)
        });
        assert_limit(r, &[Limit::DfaBytes, Limit::DfaStates], "item");
    }
}

#[test]
fn configurable_regex_limits() {
    let cfg = EngineConfig {
        regex_limits: RegexLimits {
            dfa_states: 10,
            ..RegexLimits::default()
        },
        ..EngineConfig::baseline()
    };
    let r = compile("root ::= w\nw ::= /[a-z]{20}/\n", cfg);
    assert_limit(r, &[Limit::DfaStates], "w");
    compile("root ::= w\nw ::= /[a-z]{20}/\n", EngineConfig::baseline()).unwrap();
}

#[test]
fn repetition_operator_chains() {
    for re in [
        format!(".{}", "+".repeat(300)),
        format!("(?:.{}.)", "|".repeat(400)),
        format!(".{}", "{2}".repeat(60)),
    ] {
        let src = format!("root ::= /{re}/\n");
        let r = timed(&format!("/{}…/", &re[..12]), || {
            Grammar::from_gbnf(&src).map(|g| {
                Engine::new(Arc::new(TokenVocab::bytes())).compile(&g, EngineConfig::default())
            })
        });
        if let Ok(Err(e)) = r {
            assert!(
                matches!(
                    e,
                    EarleyError::LimitExceeded { .. } | EarleyError::Terminal { .. }
                ),
                "{e:?}"
            );
        }
    }
}

#[test]
fn deep_nesting_input_to_a_json_grammar() {
    // 1,000 open brackets: masks stay correct. (Each step's work grows with
    // the depth — pruning walks the whole chart — so 5,000 takes seconds.)
    let g = Grammar::from_gbnf(
        "root ::= value\nvalue ::= \"[\" (value (\",\" value)*)? \"]\" | [0-9]+\n",
    )
    .unwrap();
    let vocab = Arc::new(TokenVocab::bytes());
    let c = Engine::new(vocab)
        .compile(&g, EngineConfig::default())
        .unwrap();
    let mut m = c.matcher();
    timed("1,000 nested brackets", || {
        for _ in 0..1000 {
            m.advance(b'[' as u32).unwrap();
        }
        assert!(m.mask().contains(b']' as u32));
    });
}
