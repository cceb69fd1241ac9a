//! Our grammar IR ([`zapspec_grammar::Grammar`]) → KBNF text, the input
//! language of the `kbnf` crate (the baseline engine of the MaskBench
//! harness, `src/bin/maskbench/`).
//!
//! KBNF (see the `kbnf` crate docs): `name ::= alt | alt;`, string
//! terminals `"..."` with JavaScript escapes, regex terminals `#"..."`
//! (Rust `regex` dialect — the same as our `regex-syntax` terminals, after
//! string unescaping), grouping `( )` and option `?`. Mapping:
//!
//! | IR | KBNF |
//! |---|---|
//! | nonterminal `A` (id `i`) | `n{i}_{A sanitised}` (identifiers are `[A-Za-z_][A-Za-z0-9_]*`) |
//! | `Literal(bytes)` (UTF-8) | `"…"` escaped |
//! | `Class(ranges)` | `#"[\x{..}-\x{..}…]"` |
//! | `Regex(r)` | `#"r"` escaped |
//! | ε-production of `A` | `A ::= (alt | …)?;` |
//!
//! KBNF cannot express a nonterminal whose only production is ε, nor one
//! with no production: such nonterminals are removed first (an ε-only
//! symbol is deleted from right-hand sides; a rule that mentions an
//! unproductive symbol or an empty class is dropped), iterated to a fixed
//! point. KBNF also *ends eagerly*: the engine finishes as soon as the start
//! symbol is complete, which would forbid continuing after a complete
//! prefix such as `1` of `12`. [`to_kbnf`] therefore wraps the start symbol
//! as `start ::= root END;` where `END` is a sentinel character that stands
//! for the end of text; the harness gives the EOS token the sentinel's
//! bytes, so "EOS allowed" is exactly "the root symbol is complete".

use std::collections::HashSet;
use std::fmt::Write as _;

use zapspec_grammar::{Grammar, NtId, Symbol, Terminal};

/// The end-of-text sentinel (a Unicode noncharacter: never in JSON text).
pub const END_SENTINEL: char = '\u{10FFFF}';

/// Why a grammar cannot be written as KBNF.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KbnfConvertError {
    /// A literal terminal that is not valid UTF-8 (KBNF strings are text).
    #[error("literal terminal of nonterminal `{nonterminal}` is not UTF-8: {bytes:?}")]
    NonUtf8Literal {
        /// The nonterminal whose rule holds it.
        nonterminal: String,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// An intersection terminal (`Terminal::And`): KBNF has none (compile
    /// the schema with `JsonSchemaOptions::intersections` off).
    #[error("nonterminal `{nonterminal}` has an intersection terminal, which KBNF cannot express")]
    Intersection {
        /// The nonterminal whose rule holds it.
        nonterminal: String,
    },
    /// A regex-without-strings terminal (`Terminal::Except`) that is not
    /// the JSON Schema compiler's key terminal, whose regex
    /// (`zapspec_jsonschema::except_as_regex`) stands in for it.
    #[error("nonterminal `{nonterminal}` has a regex-without-strings terminal, which KBNF cannot express")]
    Exception {
        /// The nonterminal whose rule holds it.
        nonterminal: String,
    },
    /// A text-avoiding-strings terminal (`Terminal::Avoid`, a structural
    /// tag's free text): KBNF's regexes have no complement.
    #[error("nonterminal `{nonterminal}` has a text-avoiding-strings terminal, which KBNF cannot express")]
    Avoid {
        /// The nonterminal whose rule holds it.
        nonterminal: String,
    },
    /// The start symbol derives no string.
    #[error("the grammar's language is empty (start symbol `{start}` is unproductive)")]
    EmptyLanguage {
        /// The start symbol.
        start: String,
    },
}

/// Escapes text for the inside of a KBNF `"…"` or `#"…"` literal.
pub fn escape_kbnf(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7F => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A regex (Rust dialect) matching exactly one character of the class.
fn class_regex(ranges: &[(char, char)]) -> String {
    let mut r = String::from("[");
    for &(a, b) in ranges {
        let _ = write!(r, "\\x{{{:X}}}", a as u32);
        if b != a {
            let _ = write!(r, "-\\x{{{:X}}}", b as u32);
        }
    }
    r.push(']');
    r
}

fn sanitize(name: &str) -> String {
    name.chars()
        .take(24)
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The KBNF text of `g`, with start nonterminal `start` (KBNF's default)
/// deriving `root END_SENTINEL` when `sentinel` is true, or `root` alone.
pub fn to_kbnf(g: &Grammar, sentinel: bool) -> Result<String, KbnfConvertError> {
    let n = g.num_nonterminals();
    // Rules kept: drop rules with an empty class (a terminal of empty language).
    let mut rules: Vec<(NtId, Vec<Symbol>)> = g
        .rules
        .iter()
        .filter(|r| {
            !r.rhs
                .iter()
                .any(|s| matches!(s, Symbol::T(Terminal::Class(c)) if c.is_empty()))
        })
        .map(|r| (r.lhs, r.rhs.clone()))
        .collect();
    // Productive nonterminals (fixed point), then drop rules using others.
    let mut productive = vec![false; n];
    loop {
        let mut changed = false;
        for (lhs, rhs) in &rules {
            if !productive[lhs.index()]
                && rhs.iter().all(|s| match s {
                    Symbol::Nt(x) => productive.get(x.index()).copied().unwrap_or(false),
                    Symbol::T(_) => true,
                })
            {
                productive[lhs.index()] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    if !productive.get(g.start.index()).copied().unwrap_or(false) {
        return Err(KbnfConvertError::EmptyLanguage {
            start: g.name(g.start).to_string(),
        });
    }
    rules.retain(|(lhs, rhs)| {
        productive[lhs.index()]
            && rhs.iter().all(|s| match s {
                Symbol::Nt(x) => productive[x.index()],
                Symbol::T(_) => true,
            })
    });
    // Remove ε-only nonterminals (all of whose rules are empty), to a fixed point.
    let mut eps_only: HashSet<NtId> = HashSet::new();
    loop {
        let mut has_nonempty = vec![false; n];
        let mut has_rule = vec![false; n];
        for (lhs, rhs) in &rules {
            has_rule[lhs.index()] = true;
            if !rhs.is_empty() {
                has_nonempty[lhs.index()] = true;
            }
        }
        let new: Vec<NtId> = (0..n as u32)
            .map(NtId)
            .filter(|x| has_rule[x.index()] && !has_nonempty[x.index()] && !eps_only.contains(x))
            .collect();
        if new.is_empty() {
            break;
        }
        eps_only.extend(new.iter().copied());
        for (_, rhs) in rules.iter_mut() {
            rhs.retain(|s| !matches!(s, Symbol::Nt(x) if eps_only.contains(x)));
        }
    }
    let name = |x: NtId| format!("n{}_{}", x.0, sanitize(g.name(x)));
    let mut out = String::new();
    let root = if eps_only.contains(&g.start) {
        None
    } else {
        Some(name(g.start))
    };
    match (root.as_deref(), sentinel) {
        (Some(r), true) => {
            let _ = writeln!(out, "start ::= {r} \"{}\";", END_SENTINEL);
        }
        (Some(r), false) => {
            let _ = writeln!(out, "start ::= {r};");
        }
        (None, true) => {
            let _ = writeln!(out, "start ::= \"{}\";", END_SENTINEL);
        }
        (None, false) => {
            return Err(KbnfConvertError::EmptyLanguage {
                start: g.name(g.start).to_string(),
            })
        }
    }
    for id in 0..n as u32 {
        let nt = NtId(id);
        if eps_only.contains(&nt) {
            continue;
        }
        let alts: Vec<&Vec<Symbol>> = rules
            .iter()
            .filter(|(l, _)| *l == nt)
            .map(|(_, r)| r)
            .collect();
        if alts.is_empty() {
            continue;
        }
        let nullable = alts.iter().any(|r| r.is_empty());
        let mut body = String::new();
        let mut first = true;
        for rhs in alts.iter().filter(|r| !r.is_empty()) {
            if !first {
                body.push_str(" | ");
            }
            first = false;
            for (k, s) in rhs.iter().enumerate() {
                if k > 0 {
                    body.push(' ');
                }
                match s {
                    Symbol::Nt(x) => body.push_str(&name(*x)),
                    Symbol::T(Terminal::Literal(b)) => {
                        let text = std::str::from_utf8(b).map_err(|_| {
                            KbnfConvertError::NonUtf8Literal {
                                nonterminal: g.name(nt).to_string(),
                                bytes: b.clone(),
                            }
                        })?;
                        let _ = write!(body, "\"{}\"", escape_kbnf(text));
                    }
                    Symbol::T(Terminal::Class(c)) => {
                        let _ = write!(body, "#\"{}\"", escape_kbnf(&class_regex(c.ranges())));
                    }
                    Symbol::T(Terminal::Regex(r)) => {
                        let _ = write!(body, "#\"{}\"", escape_kbnf(r));
                    }
                    Symbol::T(Terminal::Except(r, names)) => {
                        let Some(re) = zapspec_jsonschema::except_as_regex(r, names) else {
                            return Err(KbnfConvertError::Exception {
                                nonterminal: g.name(nt).to_string(),
                            });
                        };
                        let _ = write!(body, "#\"{}\"", escape_kbnf(&re));
                    }
                    Symbol::T(Terminal::Avoid(..)) => {
                        return Err(KbnfConvertError::Avoid {
                            nonterminal: g.name(nt).to_string(),
                        })
                    }
                    Symbol::T(Terminal::And(..)) => {
                        return Err(KbnfConvertError::Intersection {
                            nonterminal: g.name(nt).to_string(),
                        })
                    }
                }
            }
        }
        if nullable {
            let _ = writeln!(out, "{} ::= ({body})?;", name(nt));
        } else {
            let _ = writeln!(out, "{} ::= {body};", name(nt));
        }
    }
    Ok(out)
}

/// A generic JSON grammar (RFC 8259 values, compact: no whitespace) in our
/// IR — the schema-agnostic baseline grammar of the harness's `kbnf-json`
/// engine.
pub fn generic_json_grammar() -> Grammar {
    use zapspec_grammar::CharClass;
    let lit = |s: &str| Symbol::T(Terminal::Literal(s.as_bytes().to_vec()));
    let mut g = Grammar::new();
    let value = g.add_nonterminal("value");
    let object = g.add_nonterminal("object");
    let members = g.add_nonterminal("members");
    let member = g.add_nonterminal("member");
    let array = g.add_nonterminal("array");
    let elements = g.add_nonterminal("elements");
    let string = Symbol::T(Terminal::Regex(
        r#""([^"\\\x00-\x1F]|\\(["\\/bfnrt]|u[0-9a-fA-F]{4}))*""#.into(),
    ));
    let number = Symbol::T(Terminal::Regex(
        r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?".into(),
    ));
    for rhs in [
        vec![Symbol::Nt(object)],
        vec![Symbol::Nt(array)],
        vec![string.clone()],
        vec![number],
    ] {
        g.add_rule(value, rhs);
    }
    for w in ["true", "false", "null"] {
        g.add_rule(value, vec![lit(w)]);
    }
    g.add_rule(object, vec![lit("{"), lit("}")]);
    g.add_rule(object, vec![lit("{"), Symbol::Nt(members), lit("}")]);
    g.add_rule(members, vec![Symbol::Nt(member)]);
    g.add_rule(
        members,
        vec![Symbol::Nt(members), lit(","), Symbol::Nt(member)],
    );
    g.add_rule(
        member,
        vec![
            string,
            Symbol::T(Terminal::Class(CharClass::single(':'))),
            Symbol::Nt(value),
        ],
    );
    g.add_rule(array, vec![lit("["), lit("]")]);
    g.add_rule(array, vec![lit("["), Symbol::Nt(elements), lit("]")]);
    g.add_rule(elements, vec![Symbol::Nt(value)]);
    g.add_rule(
        elements,
        vec![Symbol::Nt(elements), lit(","), Symbol::Nt(value)],
    );
    g.start = value;
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use kbnf::{AcceptTokenResult, EngineLike};
    use zapspec_grammar::CharClass;

    /// A byte-level kbnf vocabulary: token `b` is byte `b` (< 256), token
    /// 256 is the end sentinel.
    fn byte_vocab() -> kbnf::Vocabulary {
        let mut toks = ahash::AHashMap::default();
        let mut strs = ahash::AHashMap::default();
        for b in 0u32..256 {
            toks.insert(b, kbnf::Token(vec![b as u8].into_boxed_slice()));
            strs.insert(b, String::from_utf8_lossy(&[b as u8]).into_owned());
        }
        let mut end = [0u8; 4];
        let end = END_SENTINEL.encode_utf8(&mut end).as_bytes().to_vec();
        toks.insert(256, kbnf::Token(end.into_boxed_slice()));
        strs.insert(256, END_SENTINEL.to_string());
        kbnf::Vocabulary::new(toks, strs).expect("vocabulary")
    }

    /// Whether kbnf accepts `text` whole (then the end sentinel) under the
    /// converted grammar, feeding one byte per token.
    fn accepts(engine: &mut kbnf::Engine, text: &str) -> bool {
        engine.reset();
        for &b in text.as_bytes() {
            match engine.try_accept_new_token(b as u32) {
                Ok(AcceptTokenResult::Ongoing) => {}
                _ => return false,
            }
        }
        matches!(
            engine.try_accept_new_token(256),
            Ok(AcceptTokenResult::Finished)
        )
    }

    fn engine(g: &Grammar) -> kbnf::Engine {
        let text = to_kbnf(g, true).expect("converts");
        kbnf::Engine::new(&text, byte_vocab())
            .unwrap_or_else(|e| panic!("kbnf refuses:\n{text}\n{e}"))
    }

    #[test]
    fn literals_classes_regex_alternation_and_epsilon() {
        let mut g = Grammar::new();
        let s = g.add_nonterminal("root-start");
        let a = g.add_nonterminal("a.b");
        let e = g.add_nonterminal("only-eps");
        let dead = g.add_nonterminal("dead");
        let lit = |x: &str| Symbol::T(Terminal::Literal(x.as_bytes().to_vec()));
        // root ::= "q\"\\\n" a only-eps | [x-z0-9] /[a-c]+\.d/ ; a ::= "" | "é" a ; dead ::= dead
        g.add_rule(s, vec![lit("q\"\\\n"), Symbol::Nt(a), Symbol::Nt(e)]);
        g.add_rule(
            s,
            vec![
                Symbol::T(Terminal::Class(CharClass::new(
                    [('x', 'z'), ('0', '9')],
                    false,
                ))),
                Symbol::T(Terminal::Regex(r"[a-c]+\.d".into())),
            ],
        );
        g.add_rule(s, vec![Symbol::Nt(dead)]);
        g.add_rule(a, vec![]);
        g.add_rule(a, vec![lit("é"), Symbol::Nt(a)]);
        g.add_rule(e, vec![]);
        g.add_rule(dead, vec![Symbol::Nt(dead), lit("x")]);
        g.start = s;
        let text = to_kbnf(&g, true).unwrap();
        assert!(
            !text.contains("dead") && !text.contains("only_eps"),
            "{text}"
        );
        let mut k = engine(&g);
        for ok in ["q\"\\\n", "q\"\\\néé", "xab.d", "5c.d", "0abcabc.d"] {
            assert!(accepts(&mut k, ok), "should accept {ok:?}\n{text}");
        }
        for bad in ["", "q", "q\"\\\ne", "w.d", "xab.", "xabd", "5.d", "xab.dd"] {
            assert!(!accepts(&mut k, bad), "should refuse {bad:?}\n{text}");
        }
    }

    #[test]
    fn generic_json_grammar_through_kbnf() {
        let g = generic_json_grammar();
        let mut k = engine(&g);
        for ok in [
            r#"{"a":[1,2.5,-3e+2,true,null],"b\n\u00e9":{}}"#,
            "12",
            "\"x\"",
            "[]",
            "[[],{}]",
            "0",
        ] {
            assert!(accepts(&mut k, ok), "should accept {ok}");
        }
        for bad in [
            "{",
            "01",
            "[1,]",
            "{\"a\"}",
            "{\"a\":1,}",
            "tru",
            "\"\\x\"",
            "1.",
        ] {
            assert!(!accepts(&mut k, bad), "should refuse {bad}");
        }
    }

    #[test]
    fn escaping_and_errors() {
        assert_eq!(escape_kbnf("a\"b\\c\n\u{1}"), "a\\\"b\\\\c\\n\\x01");
        assert_eq!(
            class_regex(&[('a', 'c'), ('-', '-')]),
            "[\\x{61}-\\x{63}\\x{2D}]"
        );
        let mut g = Grammar::new();
        let s = g.add_nonterminal("s");
        g.add_rule(s, vec![Symbol::T(Terminal::Literal(vec![0xFF]))]);
        g.start = s;
        assert!(matches!(
            to_kbnf(&g, true),
            Err(KbnfConvertError::NonUtf8Literal { .. })
        ));
        let mut g = Grammar::new();
        let s = g.add_nonterminal("s");
        g.add_rule(s, vec![Symbol::Nt(s)]);
        g.start = s;
        assert!(matches!(
            to_kbnf(&g, true),
            Err(KbnfConvertError::EmptyLanguage { .. })
        ));
    }
}
