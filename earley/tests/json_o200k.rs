//! JSON over the real o200k vocabulary: random JSON documents, tokenized
//! with o200k, are accepted token by token; EOS is allowed only at the end;
//! the masks of the ablations agree. Also a JSON Schema grammar from
//! `zapspec_jsonschema`.

use std::sync::{Arc, OnceLock};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use zapspec_core::{Constraint, TokenSet, Vocabulary};
use zapspec_earley::{Engine, EngineConfig};
use zapspec_grammar::Grammar;
use zapspec_jsonschema::{compile_json_schema, JsonSchemaOptions};
use zapspec_vocab::TiktokenBpe;
use zapspec_vocab::TokenVocab;

/// RFC 8259 JSON (an object or array at top level), character level.
pub const JSON_GBNF: &str = r#"
root   ::= ws ( object | array ) ws
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( ws "," ws member )* )? ws "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* )? ws "]"
string ::= "\"" char* "\""
char   ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" hex hex hex hex )
hex    ::= [0-9a-fA-F]
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n\r]*
"#;

/// o200k (the engine keeps it as a `SharedVocab`; the tests also tokenize
/// with it).
fn o200k() -> &'static Arc<TokenVocab> {
    static V: OnceLock<Arc<TokenVocab>> = OnceLock::new();
    V.get_or_init(|| Arc::new(TokenVocab::tiktoken(TiktokenBpe::O200k).expect("o200k")))
}

fn engine() -> &'static Engine {
    static E: OnceLock<Engine> = OnceLock::new();
    E.get_or_init(|| Engine::new(o200k().clone()))
}

fn json_grammar() -> Grammar {
    Grammar::from_gbnf(JSON_GBNF).expect("json gbnf")
}

fn random_value(rng: &mut ChaCha8Rng, depth: usize) -> Value {
    let k = if depth >= 3 {
        rng.random_range(0..4)
    } else {
        rng.random_range(0..6)
    };
    match k {
        0 => Value::from(rng.random_range(-1000i64..100000)),
        1 => {
            let words = [
                "hello",
                "wörld",
                "a\"b",
                "tab\there",
                "line\nnext",
                "ünïcødé ✓",
                "",
                "x y z",
                "\\path",
                "日本語",
            ];
            Value::from(words[rng.random_range(0..words.len())].to_string())
        }
        2 => [
            Value::Bool(true),
            Value::Bool(false),
            Value::Null,
            json!(1.5e3),
            json!(-0.25),
        ][rng.random_range(0..5)]
        .clone(),
        3 => Value::from(format!("id-{}", rng.random_range(0..1000))),
        4 => Value::Array(
            (0..rng.random_range(0..4))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let mut m = serde_json::Map::new();
            for i in 0..rng.random_range(0..4) {
                m.insert(
                    format!("key{i}_{}", rng.random_range(0..50)),
                    random_value(rng, depth + 1),
                );
            }
            Value::Object(m)
        }
    }
}

fn run_doc(text: &str, ms: &mut [zapspec_earley::EarleyMatcher]) {
    let vocab = o200k().clone();
    let toks = vocab.encode(text).unwrap();
    let eos = vocab.eos();
    let mut mask = TokenSet::new(vocab.len());
    for (i, &t) in toks.iter().enumerate() {
        let mut first: Option<TokenSet> = None;
        for m in ms.iter_mut() {
            m.fill_mask(&mut mask);
            assert!(
                mask.contains(t),
                "token {i} {:?} of {text:?} not allowed",
                String::from_utf8_lossy(vocab.token_bytes(t))
            );
            assert!(
                !mask.contains(eos),
                "EOS allowed inside {text:?} at token {i}"
            );
            // Special tokens are never allowed.
            assert!(mask.iter().all(|x| !vocab.is_special(x)));
            match &first {
                None => first = Some(mask.clone()),
                Some(f) => assert_eq!(f, &mask, "configs disagree at token {i} of {text:?}"),
            }
            m.advance(t).unwrap();
        }
    }
    for m in ms.iter_mut() {
        m.fill_mask(&mut mask);
        assert!(
            mask.contains(eos) && m.is_accepting(),
            "EOS not allowed at the end of {text:?}"
        );
        m.advance(eos).unwrap();
        assert!(m.is_finished());
        assert!(m.mask().is_empty());
    }
}

#[test]
fn random_json_documents_over_o200k() {
    let g = json_grammar();
    let e = engine();
    let d = EngineConfig::default();
    let cfgs = [
        d,
        EngineConfig {
            pruning: false,
            ..d
        },
        EngineConfig {
            state_cache: false,
            fuse_terminals: false,
            ..d
        },
    ];
    let compiled: Vec<_> = cfgs.iter().map(|&c| e.compile(&g, c).unwrap()).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for k in 0..12 {
        let v = match random_value(&mut rng, 0) {
            v @ (Value::Object(_) | Value::Array(_)) => v,
            other => json!({ "v": other }),
        };
        let text = if k % 2 == 0 {
            serde_json::to_string(&v).unwrap()
        } else {
            serde_json::to_string_pretty(&v).unwrap()
        };
        let mut ms: Vec<_> = compiled.iter().map(|c| c.matcher()).collect();
        run_doc(&text, &mut ms);
    }
    // The pruned-state cache is shared across sequences: it must have hit.
    assert!(compiled[0].counters().state_cache_hits > 0);
}

#[test]
fn full_trie_walk_agrees_with_ci_cache() {
    // ci_cache off walks all of o200k per mask: a few steps only.
    let g = json_grammar();
    let e = engine();
    let d = EngineConfig::default();
    let a = e.compile(&g, d).unwrap();
    let b = e
        .compile(
            &g,
            EngineConfig {
                ci_cache: false,
                state_cache: false,
                ..d
            },
        )
        .unwrap();
    let text = r#"{"a": [1, "x\"y", true], "bb": {}}"#;
    let mut ms = [a.matcher(), b.matcher()];
    let vocab = o200k();
    for &t in vocab.encode(text).unwrap().iter().take(8) {
        let m0 = ms[0].mask();
        let m1 = ms[1].mask();
        assert_eq!(m0, m1);
        for m in ms.iter_mut() {
            m.advance(t).unwrap();
        }
    }
}

#[test]
fn json_schema_grammar_over_o200k() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 0},
            "tags": {"type": "array", "items": {"type": "string"}},
            "kind": {"enum": ["a", "bc"]}
        },
        "required": ["name", "age"],
        "additionalProperties": false
    });
    let g = compile_json_schema(&schema, &JsonSchemaOptions::default()).unwrap();
    let e = engine();
    let c = e.compile(&g, EngineConfig::default()).unwrap();
    let c2 = e
        .compile(
            &g,
            EngineConfig {
                pruning: false,
                state_cache: false,
                ..EngineConfig::default()
            },
        )
        .unwrap();
    for doc in [
        json!({"name": "Ann", "age": 31, "tags": ["x", "yz"], "kind": "bc"}),
        json!({"name": "B\"o\"b ✓", "age": 0}),
    ] {
        let text = serde_json::to_string(&doc).unwrap();
        run_doc(&text, &mut [c.matcher(), c2.matcher()]);
    }
    // A wrong key is not allowed.
    let mut m = c.matcher();
    let vocab = o200k();
    let toks = vocab.encode(r#"{"nam"#).unwrap();
    for &t in &toks {
        m.advance(t).unwrap();
    }
    let bad = vocab.encode("x").unwrap()[0];
    assert!(!m.mask().contains(bad));
    assert!(m.advance(bad).is_err());
    // Jump-forward: after `{"nam` the grammar forces `e":"` (the key, then
    // a string value); from the start it forces `{"name":"`.
    assert_eq!(m.forced_bytes(64), br#"e":""#.to_vec());
    assert_eq!(c.matcher().forced_bytes(64), br#"{"name":""#.to_vec());
}
