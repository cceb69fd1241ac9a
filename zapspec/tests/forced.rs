//! Grammar-forced tokens through the facade (`Builder::forced_tokens`): a
//! JSON schema with fixed keys over the byte vocabulary forces every key
//! byte; greedy output is the same with forcing on and off, for every
//! drafter and verifier, linear and tree, and the target is called less.

use std::sync::Arc;

use zapspec::{
    Builder, Constraint, Drafter, EarleyMatcher, Generation, NoDraft, OneStepCheap, Prompt,
    PromptLookup, TokenVocab, Tokenizer,
};
use zapspec_testkit::bytelm::CharBigramLm;
use zapspec_verify::{TreeConfig, TreeLookup};

fn schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 12},
            "quantity": {"type": "integer", "minimum": 0, "maximum": 999},
            "available": {"type": "boolean"},
            "category": {"enum": ["hardware", "software", "service"]}
        },
        "required": ["name", "quantity", "available", "category"],
        "additionalProperties": false
    })
}

fn json() -> (Arc<TokenVocab>, EarleyMatcher) {
    let vocab = Arc::new(TokenVocab::bytes());
    let c = zapspec::json_schema(vocab.clone(), &schema()).unwrap();
    (vocab, c)
}

/// A character bigram fitted on a few records.
fn model() -> CharBigramLm {
    CharBigramLm::fit(
        &[
            r#"{"name":"bolt","quantity":12,"available":true,"category":"hardware"}"#,
            r#"{"name":"editor","quantity":3,"available":false,"category":"software"}"#,
            r#"{"name":"repair","quantity":1,"available":true,"category":"service"}"#,
        ],
        0.05,
        0.8,
    )
}

const PROMPT: &str = r#"{"name":"nut","quantity":40,"available":true,"category":"hardware"}"#;

fn run<D: Drafter>(drafter: D, fvo: bool, tree: bool, forced: bool, greedy: bool) -> Generation {
    let (vocab, c) = json();
    let b = Builder::new(model(), c)
        .drafter(drafter)
        .tokenizer(Tokenizer::new(vocab))
        .gamma(4)
        .max_tokens(160)
        .seed(9)
        .forced_tokens(forced);
    let b = if greedy { b.greedy() } else { b.sampled() };
    let b = if tree {
        b.tree(TreeConfig::default())
    } else {
        b.linear()
    };
    let out = if fvo {
        b.fvo_spec(OneStepCheap::new())
            .build()
            .unwrap()
            .generate(PROMPT)
    } else {
        b.build().unwrap().generate(PROMPT)
    };
    out.unwrap()
}

/// Every drafter × verifier × linear/tree: the same greedy output with
/// forcing on and off; forced tokens counted, fewer target calls.
#[test]
fn greedy_output_is_the_same_and_cheaper_with_forcing() {
    let mut calls = [0usize; 2];
    let mut forced = 0;
    for fvo in [false, true] {
        for tree in [false, true] {
            let mut check = |on: Generation, off: Generation, what: &str| {
                assert_eq!(on.tokens, off.tokens, "{what}, FVO {fvo}, tree {tree}");
                assert_eq!(on.text, off.text);
                assert_eq!(on.stop, off.stop);
                assert_eq!(off.stats.forced, 0);
                assert!(on.stats.forced > 0, "{what}: nothing forced in {}", on.text);
                assert!(
                    on.stats.target_calls <= off.stats.target_calls,
                    "{what}: on {:?} off {:?}",
                    on.stats,
                    off.stats
                );
                forced += on.stats.forced;
                calls[0] += on.stats.target_calls;
                calls[1] += off.stats.target_calls;
            };
            check(
                run(NoDraft, fvo, tree, true, true),
                run(NoDraft, fvo, tree, false, true),
                "NoDraft",
            );
            check(
                run(PromptLookup::default(), fvo, tree, true, true),
                run(PromptLookup::default(), fvo, tree, false, true),
                "PromptLookup",
            );
            check(
                run(TreeLookup::default(), fvo, tree, true, true),
                run(TreeLookup::default(), fvo, tree, false, true),
                "TreeLookup",
            );
        }
    }
    assert!(forced > 0);
    assert!(
        calls[0] < calls[1],
        "target calls on {} vs off {}",
        calls[0],
        calls[1]
    );
}

/// The rounds' reports, forced tokens first, replay the output; the
/// per-generation totals add up.
#[test]
fn round_reports_replay_the_output() {
    for tree in [false, true] {
        for greedy in [true, false] {
            let g = run(PromptLookup::default(), false, tree, true, greedy);
            let mut replay = Vec::new();
            let mut forced = 0;
            for r in &g.rounds {
                replay.extend_from_slice(&r.forced);
                replay.extend_from_slice(&r.drafted[..r.accepted]);
                replay.extend(r.extra);
                forced += r.forced.len();
            }
            let (_, c) = json();
            if replay.last() == Some(&c.eos()) {
                replay.pop();
            }
            replay.truncate(160);
            assert_eq!(replay, g.tokens, "tree {tree}, greedy {greedy}");
            assert_eq!(forced, g.stats.forced);
            assert!(forced > 0);
            // sampled or greedy, the output is a member of the schema
            if g.stop.is_complete() {
                let v: serde_json::Value = serde_json::from_str(&g.text).unwrap();
                assert!(
                    v["category"].is_string() && v["available"].is_boolean(),
                    "{}",
                    g.text
                );
            }
        }
    }
}

/// Target forwards per output token, with forcing on and off (plain
/// constrained decoding and prompt lookup, greedy, over many prompts):
/// printed with `--nocapture`, and forcing must be cheaper.
#[test]
fn target_forwards_per_token_with_and_without_forcing() {
    let prompts = [
        r#"{"name":"nut","quantity":40,"available":true,"category":"hardware"}"#,
        "",
        "catalogue entry: ",
        r#"{"name":"laptop stand","quantity":7,"available":false,"category":"service"}"#,
    ];
    for (name, lookup) in [("NoDraft", false), ("PromptLookup", true)] {
        let mut per = [(0usize, 0usize, 0usize); 2];
        for (k, forced) in [true, false].into_iter().enumerate() {
            for p in prompts {
                let (vocab, c) = json();
                let b = Builder::new(model(), c)
                    .tokenizer(Tokenizer::new(vocab))
                    .greedy()
                    .max_tokens(160)
                    .forced_tokens(forced);
                let g = if lookup {
                    b.drafter(PromptLookup::default())
                        .build()
                        .unwrap()
                        .generate(Prompt::from(p))
                } else {
                    b.build().unwrap().generate(Prompt::from(p))
                }
                .unwrap();
                per[k].0 += g.stats.target_calls;
                per[k].1 += g.stats.emitted;
                per[k].2 += g.stats.forced;
            }
        }
        let rate = |(c, e, _): (usize, usize, usize)| c as f64 / e as f64;
        println!(
            "{name}: forcing on {:.3} target calls/token ({} calls, {} tokens, {} forced); off {:.3} ({} calls, {} tokens)",
            rate(per[0]),
            per[0].0,
            per[0].1,
            per[0].2,
            rate(per[1]),
            per[1].0,
            per[1].1
        );
        assert_eq!(per[0].1, per[1].1, "same tokens emitted");
        assert!(per[0].0 < per[1].0);
    }
}
