//! The Earley engine's masks over structural tags equal a brute-force
//! check of every token's bytes, on random triggers, excluded strings and
//! vocabularies: free text until a trigger, then a tag, matched across
//! token boundaries. Two references per position: the language as
//! written in these tests (a direct simulation of the format's meaning
//! with `str::contains`, independent of the compiler), and the reference
//! recognizer over the compiled grammar (`zapspec_grammar::Recognizer`,
//! textbook Earley over bytes, independent of the engine).

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::json;
use zapspec_core::{Constraint, TokenSet, Vocabulary};
use zapspec_earley::{Engine, EngineConfig};
use zapspec_grammar::Recognizer;
use zapspec_structtag::{compile_structural_tag, StructTagError, StructTagOptions};
use zapspec_vocab::TokenVocab;

fn vocab(words: &[String]) -> Arc<TokenVocab> {
    let mut toks: Vec<Vec<u8>> = words.iter().map(|s| s.as_bytes().to_vec()).collect();
    toks.sort();
    toks.dedup();
    toks.push(Vec::new());
    let eos = toks.len() as u32 - 1;
    Arc::new(TokenVocab::from_tokens("random", toks, &[eos], eos).expect("valid vocabulary"))
}

/// A language by its meaning: `viable(p)` (some completion is in it) and
/// `member(p)`.
trait Oracle {
    fn viable(&self, p: &[u8]) -> bool;
    fn member(&self, p: &[u8]) -> bool;
}

fn contains_any(s: &[u8], needles: &[Vec<u8>]) -> bool {
    needles
        .iter()
        .any(|n| !n.is_empty() && s.windows(n.len()).any(|w| w == n.as_slice()))
}

/// `triggered_tags` whose tags are `trigger "=" x* ">"`: an NFA over the
/// format's states, simulated on sets.
struct Triggered {
    triggers: Vec<Vec<u8>>,
    avoid: Vec<Vec<u8>>,
    at_least_one: bool,
    stop_after_first: bool,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum St {
    /// Free text so far (since the last tag).
    Free(Vec<u8>),
    /// Before the first tag under `at_least_one`.
    First,
    /// Inside tag `i`'s begin (`trigger=`), `k` bytes matched.
    Begin(usize, usize),
    /// In a tag's body (`x*`), before `>`.
    Body,
    /// After the only tag (`stop_after_first`).
    Done,
}

impl Triggered {
    fn begin(&self, i: usize) -> Vec<u8> {
        let mut b = self.triggers[i].clone();
        b.push(b'=');
        b
    }

    fn after_tag(&self) -> St {
        if self.stop_after_first {
            St::Done
        } else {
            St::Free(Vec::new())
        }
    }

    fn step(&self, s: &St, c: u8, out: &mut Vec<St>) {
        match s {
            St::Free(_) | St::First => {
                if let St::Free(seg) = s {
                    let mut n = seg.clone();
                    n.push(c);
                    if !contains_any(&n, &self.avoid) {
                        out.push(St::Free(n));
                    }
                }
                for i in 0..self.triggers.len() {
                    if self.begin(i)[0] == c {
                        out.push(St::Begin(i, 1));
                    }
                }
            }
            St::Begin(i, k) => {
                let b = self.begin(*i);
                if *k < b.len() && b[*k] == c {
                    out.push(if k + 1 == b.len() {
                        St::Body
                    } else {
                        St::Begin(*i, k + 1)
                    });
                }
            }
            St::Body => {
                if c == b'x' {
                    out.push(St::Body);
                } else if c == b'>' {
                    out.push(self.after_tag());
                }
            }
            St::Done => {}
        }
    }

    fn run(&self, p: &[u8]) -> Vec<St> {
        let start = if self.at_least_one {
            St::First
        } else {
            St::Free(Vec::new())
        };
        let mut cur = vec![start];
        for &c in p {
            let mut next = Vec::new();
            for s in &cur {
                self.step(s, c, &mut next);
            }
            next.sort_by_key(|s| format!("{s:?}"));
            next.dedup();
            cur = next;
        }
        cur
    }
}

impl Oracle for Triggered {
    fn viable(&self, p: &[u8]) -> bool {
        !self.run(p).is_empty()
    }
    fn member(&self, p: &[u8]) -> bool {
        self.run(p)
            .iter()
            .any(|s| matches!(s, St::Free(_) | St::Done))
    }
}

/// `"<" T end "x"` with `T` avoiding `end` and the excludes, of at most
/// `max_chars` characters (the words are ASCII: bytes).
struct TagText {
    end: Vec<u8>,
    avoid: Vec<Vec<u8>>,
    max_chars: Option<usize>,
}

impl TagText {
    /// `p` split as `"<" T rest` with a good `T` and `rest` accepted by `ok`.
    fn split(&self, p: &[u8], ok: impl Fn(&[u8]) -> bool) -> bool {
        let Some(u) = p.strip_prefix(b"<") else {
            return false;
        };
        let mut tail = self.end.clone();
        tail.push(b'x');
        let most = self.max_chars.map_or(u.len(), |n| n.min(u.len()));
        (0..=most).any(|k| !contains_any(&u[..k], &self.avoid) && ok(&u[k..])) && !tail.is_empty()
    }
}

impl Oracle for TagText {
    fn viable(&self, p: &[u8]) -> bool {
        let mut tail = self.end.clone();
        tail.push(b'x');
        p.is_empty() || self.split(p, |r| tail.starts_with(r))
    }
    fn member(&self, p: &[u8]) -> bool {
        let mut tail = self.end.clone();
        tail.push(b'x');
        self.split(p, |r| r == tail.as_slice())
    }
}

/// Walks `steps` (indices into the allowed tokens) and at every position
/// compares the engine's mask, token by token, with the oracle's answer
/// and the reference recognizer's.
fn check_masks(
    tag: serde_json::Value,
    oracle: &dyn Oracle,
    words: &[String],
    steps: &[usize],
) -> Result<(), TestCaseError> {
    let g = match compile_structural_tag(&tag, &StructTagOptions::default()) {
        Ok(g) => g,
        // random triggers may be prefixes of each other, or hold an
        // excluded string: refused, with a pointer, never a panic
        Err(e @ StructTagError::Invalid { .. }) => {
            prop_assert!(e.pointer().starts_with("/format"));
            return Ok(());
        }
        Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
    };
    let reference = Recognizer::new(&g).expect("reference recognizer");
    let v = vocab(words);
    let engine = Engine::new(v.clone());
    let compiled = engine
        .compile(&g, EngineConfig::default())
        .expect("compiles");
    let mut m = compiled.matcher();
    let mut prefix: Vec<u8> = Vec::new();
    let mut mask = TokenSet::new(v.len());
    for &step in steps.iter().chain(std::iter::once(&0)) {
        m.fill_mask(&mut mask);
        let mut allowed = Vec::new();
        for t in 0..v.len() as u32 {
            let (want, by_grammar) = if t == v.eos() {
                (oracle.member(&prefix), reference.recognizes(&prefix))
            } else {
                let mut s = prefix.clone();
                s.extend_from_slice(v.token_bytes(t));
                (oracle.viable(&s), reference.is_viable_prefix(&s))
            };
            prop_assert_eq!(
                by_grammar,
                want,
                "the grammar's language, token {:?} after {:?}",
                String::from_utf8_lossy(v.token_bytes(t)),
                String::from_utf8_lossy(&prefix)
            );
            prop_assert_eq!(
                mask.contains(t),
                want,
                "token {:?} after {:?}",
                String::from_utf8_lossy(v.token_bytes(t)),
                String::from_utf8_lossy(&prefix)
            );
            if want && t != v.eos() {
                allowed.push(t);
            }
        }
        if allowed.is_empty() {
            break;
        }
        let t = allowed[step % allowed.len()];
        m.advance(t).expect("an allowed token advances");
        prefix.extend_from_slice(v.token_bytes(t));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn triggered_tags_masks_equal_brute_force(
        triggers in prop::collection::vec("[ab<]{1,3}", 1..3),
        excludes in prop::collection::vec("[ab>]{2,3}", 0..2),
        at_least_one in any::<bool>(),
        stop_after_first in any::<bool>(),
        words in prop::collection::vec("[ab<=>x]{1,3}", 4..24),
        steps in prop::collection::vec(0usize..64, 0..10),
    ) {
        let tags: Vec<_> = triggers
            .iter()
            .map(|t| json!({"begin": format!("{t}="), "content": {"type": "regex", "pattern": "x*"}, "end": ">"}))
            .collect();
        let tag = json!({"type": "structural_tag", "format": {"type": "triggered_tags",
            "triggers": triggers, "tags": tags, "excludes": excludes,
            "at_least_one": at_least_one, "stop_after_first": stop_after_first}});
        let bytes = |v: &[String]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        let oracle = Triggered {
            triggers: bytes(&triggers),
            avoid: [bytes(&triggers), bytes(&excludes)].concat(),
            at_least_one,
            stop_after_first,
        };
        check_masks(tag, &oracle, &words, &steps)?;
    }

    #[test]
    fn tag_with_free_text_masks_equal_brute_force(
        end in "[ab<>]{1,3}",
        excludes in prop::collection::vec("[abx]{2,3}", 0..2),
        words in prop::collection::vec("[ab<>x]{1,3}", 4..24),
        steps in prop::collection::vec(0usize..64, 0..10),
        max_chars in prop::option::of(0usize..5),
    ) {
        let mut text = json!({"type": "any_text", "excludes": excludes});
        if let Some(n) = max_chars {
            text["max_chars"] = json!(n);
        }
        let tag = json!({"type": "structural_tag", "format": {"type": "sequence", "elements": [
            {"type": "tag", "begin": "<", "content": text, "end": end},
            {"type": "const_string", "value": "x"}]}});
        let mut avoid: Vec<Vec<u8>> = excludes.iter().map(|s| s.as_bytes().to_vec()).collect();
        avoid.push(end.as_bytes().to_vec());
        let oracle = TagText { end: end.as_bytes().to_vec(), avoid, max_chars };
        check_masks(tag, &oracle, &words, &steps)?;
    }
}

/// A character budget compiles into the engine while its automaton fits
/// the default limits, and past them is a typed limit error, not a panic
/// or a stall.
#[test]
fn character_budgets_compile_or_meet_a_typed_limit() {
    let v = vocab(&["a".into(), "<".into(), "/".into(), "x>".into()]);
    let engine = Engine::new(v);
    let tag = |n: u64| {
        json!({"type": "structural_tag", "format": {"type": "tag", "begin": "<think>",
            "content": {"type": "any_text", "max_chars": n}, "end": "</think>"}})
    };
    for n in [0, 1, 100, 1000] {
        let g = compile_structural_tag(&tag(n), &StructTagOptions::default()).unwrap();
        engine
            .compile(&g, EngineConfig::default())
            .unwrap_or_else(|e| panic!("budget {n}: {e}"));
    }
    let g = compile_structural_tag(&tag(10_000_000), &StructTagOptions::default()).unwrap();
    let t = std::time::Instant::now();
    let e = engine.compile(&g, EngineConfig::default()).err();
    assert!(
        matches!(e, Some(zapspec_earley::EarleyError::LimitExceeded { .. })),
        "{e:?}"
    );
    // generous: a refusal is a bounded exploration, never the whole budget
    assert!(t.elapsed().as_secs() < 30, "{:?}", t.elapsed());
}
