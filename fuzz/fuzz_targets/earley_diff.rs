//! Differential test of the Earley matcher against the reference
//! recognizer (`zapspec_grammar::reference`), driven by the input:
//!
//! - the first byte picks a grammar: a JSON-like grammar, a left-recursive
//!   expression grammar, or a small GBNF grammar read from the input's
//!   first line;
//! - the vocabulary is all 256 single bytes plus a few multi-byte tokens;
//! - the remaining bytes are a sequence of operations — advance (by a token
//!   the input picks among the allowed ones, or a rejected one), rollback,
//!   fork, mask — and every mask is compared with the brute-force mask of
//!   the recognizer (a token is allowed iff prefix ++ its bytes is a viable
//!   prefix; EOS iff the prefix is a sentence).

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};
use zapspec_core::{Constraint, TokenId, TokenSet, Vocabulary};
use zapspec_earley::{Engine, EngineConfig};
use zapspec_grammar::reference::Recognizer;
use zapspec_grammar::{parse_gbnf, Grammar};

/// A vocabulary of byte strings; the last token is EOS.
struct TokenVocab(Vec<Vec<u8>>);

impl Vocabulary for TokenVocab {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn token_bytes(&self, t: TokenId) -> &[u8] {
        &self.0[t as usize]
    }
    fn eos(&self) -> TokenId {
        self.0.len() as TokenId - 1
    }
    fn is_special(&self, t: TokenId) -> bool {
        t == self.eos()
    }
}

const JSON: &str = r#"root ::= value
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ( pair ( "," pair )* )? "}"
pair ::= string ":" value
array ::= "[" ( value ( "," value )* )? "]"
string ::= "\"" ( [^"\\] | "\\" ["\\/bfnrt] )* "\""
number ::= "-"? [0-9]+ ( "." [0-9]+ )?
"#;

const EXPR: &str = r#"expr ::= expr "+" term | expr "-" term | term
term ::= term "*" factor | factor
factor ::= "(" expr ")" | [0-9]+ | /[a-z][a-z0-9]*/
"#;

fn vocab() -> Arc<TokenVocab> {
    let mut toks: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    for t in ["true", "null", "\"a\"", "12", "+(", "*x", ",\"", "\":"] {
        toks.push(t.as_bytes().to_vec());
    }
    toks.push(Vec::new()); // EOS
    Arc::new(TokenVocab(toks))
}

fn brute_mask(rec: &Recognizer, vocab: &TokenVocab, prefix: &[u8]) -> TokenSet {
    let mut m = TokenSet::new(vocab.len());
    for t in 0..vocab.len() as TokenId {
        if vocab.is_special(t) {
            continue;
        }
        let mut p = prefix.to_vec();
        p.extend_from_slice(vocab.token_bytes(t));
        if rec.is_viable_prefix(&p) {
            m.insert(t);
        }
    }
    if rec.recognizes(prefix) {
        m.insert(vocab.eos());
    }
    m
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let (g, ops): (Grammar, &[u8]) = match pick % 3 {
        0 => (parse_gbnf(JSON).unwrap().grammar, rest),
        1 => (parse_gbnf(EXPR).unwrap().grammar, rest),
        _ => {
            let cut = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            let Ok(text) = std::str::from_utf8(&rest[..cut]) else {
                return;
            };
            if text.len() > 200 {
                return;
            }
            let Ok(p) = parse_gbnf(text) else { return };
            (p.grammar, rest.get(cut + 1..).unwrap_or(&[]))
        }
    };
    let Ok(rec) = Recognizer::new(&g) else { return };
    // One engine (vocabulary index: token trie, slices, shared terminal
    // cache) for the whole run, as a server keeps one per vocabulary.
    static ENGINE: OnceLock<(Arc<TokenVocab>, Engine)> = OnceLock::new();
    let (vocab, engine) = ENGINE.get_or_init(|| {
        let v = vocab();
        (v.clone(), Engine::new(v))
    });
    let vocab = vocab.clone();
    let config = if pick & 0x80 != 0 {
        EngineConfig::baseline()
    } else {
        EngineConfig::default()
    };
    let compiled = match engine.compile(&g, config) {
        Ok(c) => c,
        Err(_) => {
            // Refused: only for an empty language or a limit.
            return;
        }
    };
    if !rec.is_viable_prefix(b"") {
        return;
    }
    // Matchers (a fork stack), their byte prefixes and token lengths.
    let mut stack = vec![(compiled.matcher(), Vec::<u8>::new(), Vec::<usize>::new())];
    for chunk in ops.chunks(2).take(24) {
        let (op, arg) = (chunk[0], *chunk.get(1).unwrap_or(&0));
        let top = stack.len() - 1;
        let (m, prefix, lens) = &mut stack[top];
        match op % 8 {
            0..=3 => {
                // the mask agrees; advance by an allowed token
                let want = brute_mask(&rec, &vocab, prefix);
                let got = m.mask();
                assert_eq!(
                    got,
                    want,
                    "mask after {:?}\n{g}",
                    String::from_utf8_lossy(prefix)
                );
                let allowed: Vec<TokenId> = want.iter().filter(|&t| t != vocab.eos()).collect();
                if allowed.is_empty() {
                    continue;
                }
                let t = allowed[arg as usize % allowed.len()];
                m.advance(t).expect("an allowed token advances");
                prefix.extend_from_slice(vocab.token_bytes(t));
                lens.push(vocab.token_bytes(t).len());
            }
            4 => {
                // a byte the recognizer refuses is refused, state unchanged
                let mut p = prefix.clone();
                p.push(arg);
                if !rec.is_viable_prefix(&p) {
                    let n = m.num_tokens();
                    assert!(
                        m.advance(arg as TokenId).is_err(),
                        "accepted {arg:?} after {prefix:?}\n{g}"
                    );
                    assert_eq!(m.num_tokens(), n);
                }
            }
            5 => {
                // roll back k tokens
                let k = (arg as usize % 4).min(lens.len());
                m.rollback(k).expect("rollback within the history");
                for _ in 0..k {
                    let l = lens.pop().unwrap_or(0);
                    prefix.truncate(prefix.len() - l);
                }
            }
            6 => {
                if stack.len() < 4 {
                    let f = (
                        stack[top].0.fork(),
                        stack[top].1.clone(),
                        stack[top].2.clone(),
                    );
                    stack.push(f);
                }
            }
            _ => {
                if stack.len() > 1 {
                    stack.pop();
                }
            }
        }
    }
    for (m, prefix, _) in &mut stack {
        assert_eq!(m.mask(), brute_mask(&rec, &vocab, prefix));
    }
});
