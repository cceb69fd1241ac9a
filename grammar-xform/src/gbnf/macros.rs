//! XGrammar's grammar macros: `Regex(…)`, `Substring(…)` and
//! `TagDispatch(…)`, read where a rule name is followed directly by `(`.
//!
//! | macro | meaning | lowered to |
//! |---|---|---|
//! | `Regex("p", json_string=false, flags="")` | text matched whole by the regex `p` | one regex terminal, read by the caller's [`RegexReader`]; `json_string`: intersected with "no `"`, `\`, or control character" |
//! | `Substring("c₁", …, "cₙ")` | every concatenation `cᵢ…cⱼ` of consecutive chunks, and the empty string | `S ::= "" \| T₁ \| … \| Tₙ`, `Tᵢ ::= cᵢ \| cᵢ Tᵢ₊₁` (2n rules) |
//! | `TagDispatch(("tag", rule), …, loop_after_dispatch=true, excludes=())` | free text until a tag, then `rule`, then free text again (or, without the loop, the end) | `D ::= F \| F tag rule D` with `F` text containing no tag and no excluded string ([`crate::avoid::avoiding`]) |
//!
//! Arguments are string literals, decimal integers, `true` / `false`, rule
//! names and parenthesised tuples of these (a trailing comma allowed, no
//! named arguments inside). The token-level macros (`Token`,
//! `ExcludeToken`, `TokenTagDispatch`) name token ids, which a grammar over
//! bytes cannot: they are refused with a syntax error that says so.
//!
//! Choices where XGrammar's documentation is silent, listed: `(?i)` at the
//! very start of a `Regex` pattern is read as the `i` flag (XGrammar reads
//! it there); `i` folds case as Unicode does, XGrammar folds ASCII only;
//! a `Regex` pattern is read when the grammar is parsed (XGrammar reads it
//! when the grammar is first compiled), so a bad pattern is an error of
//! `parse_gbnf`, with its position.

use super::{PSym, Parser, Ref};
use crate::avoid::avoiding;
use crate::error::{GrammarError, Pos};
use crate::ir::{Grammar, Symbol, Terminal};

/// The names read as macros when a `(` follows them directly.
pub(super) const MACROS: &[&str] = &[
    "Regex",
    "Substring",
    "TagDispatch",
    "Token",
    "ExcludeToken",
    "TokenTagDispatch",
];

/// A `Regex(…)` call as the parser read it, for a [`RegexReader`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegexMacro<'a> {
    /// The pattern (a leading `(?i)` already taken off and read as the
    /// `i` flag).
    pub pattern: &'a str,
    /// The `i` flag: letters match in either case.
    pub case_insensitive: bool,
    /// What `.` matches: every character (no `flags` argument, or the `s`
    /// flag), or every character but `\n` (`flags` without `s`).
    pub dot_matches_newline: bool,
}

/// Reads a `Regex(…)` macro's pattern into a `regex-syntax` pattern, or
/// says why not. [`super::parse_gbnf`] reads it as `regex-syntax` itself
/// does ([`regex_syntax_reader`]); XGrammar's reading (ECMA-262, as its
/// `Grammar.from_regex`) lives with the JSON Schema compiler, which hands
/// it in through [`super::parse_gbnf_with`].
pub type RegexReader<'r> = &'r dyn Fn(&RegexMacro<'_>) -> Result<String, String>;

/// The pattern as `regex-syntax` reads it, with the macro's flags.
pub fn regex_syntax_reader(m: &RegexMacro<'_>) -> Result<String, String> {
    let mut flags = String::new();
    if m.case_insensitive {
        flags.push('i');
    }
    if m.dot_matches_newline {
        flags.push('s');
    }
    Ok(if flags.is_empty() {
        m.pattern.to_string()
    } else {
        format!("(?{flags}:{})", m.pattern)
    })
}

/// What a JSON string's body may hold unescaped: the second half of a
/// `Regex(…, json_string=true)` terminal.
const JSON_STRING_BODY: &str = r#"[^"\\\x00-\x1F]*"#;

/// One macro argument.
#[derive(Clone, Debug)]
enum Value {
    Str(Vec<u8>),
    Int,
    Bool(bool),
    Rule(String),
    Tuple(Vec<(Value, Pos)>),
}

impl Value {
    fn text(&self) -> Option<Result<&str, ()>> {
        match self {
            Value::Str(b) => Some(std::str::from_utf8(b).map_err(|_| ())),
            _ => None,
        }
    }
}

struct Args {
    positional: Vec<(Value, Pos)>,
    named: Vec<(String, Value, Pos)>,
}

impl Parser<'_> {
    /// Reads the macro call `name(…)` (the parser stands on the `(`; `at`
    /// is where the name began) and returns the symbol it stands for.
    pub(super) fn macro_call(
        &mut self,
        name: &str,
        at: Pos,
        parent: &str,
        regex: RegexReader<'_>,
    ) -> Result<PSym, GrammarError> {
        let open = self.here();
        let args = self.macro_args()?;
        match name {
            "Regex" => self.regex_macro(args, open, at, regex),
            "Substring" => self.substring_macro(args, open, parent),
            "TagDispatch" => self.tag_dispatch_macro(args, open, parent),
            _ => Err(Self::err_at(
                at,
                format!(
                    "the token-level macro {name}(…): zapspec's grammars are over bytes and name no token ids"
                ),
            )),
        }
    }

    fn macro_args(&mut self) -> Result<Args, GrammarError> {
        self.bump(); // `(`
        let mut args = Args {
            positional: Vec::new(),
            named: Vec::new(),
        };
        self.skip_ws();
        if self.peek() == Some(')') {
            self.bump();
            return Ok(args);
        }
        loop {
            self.skip_ws();
            let at = self.here();
            // `name = value`?
            let rest = &self.src[self.pos..];
            let n = rest
                .find(|c: char| !super::is_word(c))
                .unwrap_or(rest.len());
            let named = n > 0 && rest[n..].trim_start().starts_with('=');
            if named {
                let key = self.word().to_string();
                self.skip_ws();
                self.bump(); // `=`
                self.skip_ws();
                let v = self.macro_value()?;
                args.named.push((key, v, at));
            } else {
                let v = self.macro_value()?;
                args.positional.push((v, at));
            }
            self.skip_ws();
            match self.peek() {
                Some(',') => {
                    self.bump();
                }
                Some(')') => {
                    self.bump();
                    return Ok(args);
                }
                _ => return Err(self.err("Expect , or ) in macro arguments")),
            }
        }
    }

    fn macro_value(&mut self) -> Result<Value, GrammarError> {
        self.skip_ws();
        match self.peek() {
            Some('"') => Ok(Value::Str(self.string()?)),
            Some('(') => {
                let open = self.here();
                self.bump();
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    if self.peek() == Some(')') {
                        self.bump();
                        return Ok(Value::Tuple(items));
                    }
                    let at = self.here();
                    items.push((self.macro_value()?, at));
                    self.skip_ws();
                    match self.peek() {
                        Some(',') => {
                            self.bump();
                        }
                        Some(')') => {}
                        None => {
                            return Err(Self::err_at(open, format!("unclosed `(` opened at {open}")))
                        }
                        _ => return Err(self.err("Expect , or ) in tuple")),
                    }
                }
            }
            Some(c) if super::is_word(c) => {
                let w = self.word();
                Ok(match w {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    _ if w.bytes().all(|b| b.is_ascii_digit()) => Value::Int,
                    _ => Value::Rule(w.to_string()),
                })
            }
            Some(c) => Err(self.err(format!(
                "a macro argument is a string, an integer, true or false, a rule name or a tuple, not `{}`",
                c.escape_debug()
            ))),
            None => Err(self.err("unterminated macro call")),
        }
    }

    fn regex_macro(
        &mut self,
        args: Args,
        open: Pos,
        at: Pos,
        regex: RegexReader<'_>,
    ) -> Result<PSym, GrammarError> {
        let pattern = match args.positional.as_slice() {
            [(v, p)] => match v.text() {
                Some(Ok(s)) => s.to_string(),
                Some(Err(())) => return Err(Self::err_at(*p, "Regex pattern must be UTF-8")),
                None => return Err(Self::err_at(*p, "Regex pattern must be a string literal")),
            },
            _ => {
                return Err(Self::err_at(
                    open,
                    "Regex expects exactly one string argument",
                ))
            }
        };
        let (mut json_string, mut flags) = (false, None::<String>);
        for (key, v, p) in &args.named {
            match (key.as_str(), v) {
                ("json_string", Value::Bool(b)) => json_string = *b,
                ("json_string", _) => {
                    return Err(Self::err_at(*p, "json_string must be a boolean"))
                }
                ("flags", v) => match v.text() {
                    Some(Ok(s)) => flags = Some(s.to_string()),
                    _ => return Err(Self::err_at(*p, "flags must be a string")),
                },
                (k, _) => {
                    return Err(Self::err_at(
                        *p,
                        format!("Regex does not support the named argument {k}"),
                    ))
                }
            }
        }
        let (mut ci, mut dot_all) = (false, flags.is_none());
        for c in flags.as_deref().unwrap_or("").chars() {
            match c {
                'i' => ci = true,
                's' => dot_all = true,
                'u' => {}
                c => {
                    return Err(Self::err_at(
                        open,
                        format!("regular-expression flag '{c}' is not supported"),
                    ))
                }
            }
        }
        let body = match pattern.strip_prefix("(?i)") {
            Some(rest) => {
                ci = true;
                rest
            }
            None => pattern.as_str(),
        };
        let m = RegexMacro {
            pattern: body,
            case_insensitive: ci,
            dot_matches_newline: dot_all,
        };
        let bad = |reason: String| GrammarError::Regex {
            regex: pattern.clone(),
            line: at.line,
            column: at.column,
            offset: 0,
            reason,
        };
        let re = regex(&m).map_err(bad)?;
        // read now, so that a bad pattern is an error with its place
        regex_syntax::ParserBuilder::new()
            .build()
            .parse(&re)
            .map_err(|e| bad(e.to_string()))?;
        Ok(PSym::T(if json_string {
            Terminal::And(re, JSON_STRING_BODY.to_string())
        } else {
            Terminal::Regex(re)
        }))
    }

    fn substring_macro(
        &mut self,
        args: Args,
        open: Pos,
        parent: &str,
    ) -> Result<PSym, GrammarError> {
        if !args.named.is_empty() {
            return Err(Self::err_at(
                open,
                "Substring() does not accept named arguments",
            ));
        }
        let mut chunks = Vec::with_capacity(args.positional.len());
        for (v, p) in args.positional {
            match v {
                Value::Str(b) => chunks.push(b),
                _ => return Err(Self::err_at(p, "Substring() arguments must be strings")),
            }
        }
        let lit = |b: &Vec<u8>| -> Vec<PSym> {
            if b.is_empty() {
                Vec::new()
            } else {
                vec![PSym::T(Terminal::Literal(b.clone()))]
            }
        };
        // Tᵢ ::= cᵢ | cᵢ Tᵢ₊₁, built from the last chunk back
        let mut starts: Vec<PSym> = Vec::with_capacity(chunks.len());
        let mut next: Option<PSym> = None;
        for c in chunks.iter().rev() {
            let mut alts = vec![lit(c)];
            if let Some(n) = next.take() {
                let mut longer = lit(c);
                longer.push(n);
                alts.push(longer);
            }
            let t = self.new_fresh(format!("{parent}-substring"), alts);
            starts.push(t.clone());
            next = Some(t);
        }
        let mut alts = vec![Vec::new()];
        alts.extend(starts.into_iter().rev().map(|t| vec![t]));
        Ok(self.new_fresh(format!("{parent}-substring"), alts))
    }

    fn tag_dispatch_macro(
        &mut self,
        args: Args,
        open: Pos,
        parent: &str,
    ) -> Result<PSym, GrammarError> {
        let mut tags: Vec<(String, usize)> = Vec::new();
        for (v, p) in &args.positional {
            let Value::Tuple(items) = v else {
                return Err(Self::err_at(
                    open,
                    "Each tag dispatch element must be a tuple",
                ));
            };
            let [(tag, _), (rule, rp)] = items.as_slice() else {
                return Err(Self::err_at(
                    *p,
                    "Each tag dispatch element must be a (tag, rule) pair",
                ));
            };
            let tag = match tag.text() {
                Some(Ok(s)) if !s.is_empty() => s.to_string(),
                _ => return Err(Self::err_at(open, "Tag must be a non-empty string literal")),
            };
            let Value::Rule(rule) = rule else {
                return Err(Self::err_at(
                    *rp,
                    "The rule of a tag dispatch element must be a rule name",
                ));
            };
            let id = self.user(rule);
            if self.first_use[id].is_none() {
                // XGrammar names the macro's place for a rule it lacks
                self.first_use[id] = Some(open);
            }
            tags.push((tag, id));
        }
        let (mut looped, mut excludes) = (true, Vec::<String>::new());
        for (key, v, p) in &args.named {
            match (key.as_str(), v) {
                ("loop_after_dispatch", Value::Bool(b)) => looped = *b,
                ("loop_after_dispatch", _) => {
                    return Err(Self::err_at(*p, "loop_after_dispatch must be a boolean"))
                }
                ("excludes", v) => {
                    let items: Vec<&Value> = match v {
                        Value::Tuple(items) => items.iter().map(|(v, _)| v).collect(),
                        v => vec![v],
                    };
                    for v in items {
                        match v.text() {
                            Some(Ok(s)) if !s.is_empty() => excludes.push(s.to_string()),
                            _ => {
                                return Err(Self::err_at(
                                    *p,
                                    "excludes must be a tuple of non-empty strings",
                                ))
                            }
                        }
                    }
                }
                (k, _) => {
                    return Err(Self::err_at(
                        open,
                        format!("Unknown named argument for TagDispatch: {k}"),
                    ))
                }
            }
        }
        for e in &excludes {
            if tags.iter().any(|(t, _)| t.starts_with(e.as_str())) {
                return Err(Self::err_at(
                    open,
                    format!("Exclude string must not be a prefix of trigger string: {e}"),
                ));
            }
        }
        // F: text with no tag and no excluded string (one avoid terminal),
        // written into a scratch grammar and imported as fresh nonterminals
        let mut avoid: Vec<&str> = tags.iter().map(|(t, _)| t.as_str()).collect();
        avoid.extend(excludes.iter().map(String::as_str));
        let mut tmp = Grammar::new();
        let f0 = avoiding(&mut tmp, "text", &avoid);
        let base = self.fresh.len();
        for _ in 0..tmp.num_nonterminals() {
            self.fresh.push((format!("{parent}-text"), Vec::new()));
        }
        let conv = |s: &Symbol| match s {
            Symbol::T(t) => PSym::T(t.clone()),
            Symbol::Nt(n) => PSym::Nt(Ref::Fresh(base + n.index())),
        };
        for r in &tmp.rules {
            let rhs = r.rhs.iter().map(conv).collect();
            self.fresh[base + r.lhs.index()].1.push(rhs);
        }
        let free = PSym::Nt(Ref::Fresh(base + f0.index()));
        // D ::= F | F tag rule D   (without the loop: D ::= F | F tag rule)
        let d = self.fresh.len();
        self.fresh.push((format!("{parent}-dispatch"), Vec::new()));
        let mut alts = vec![vec![free.clone()]];
        for (tag, rule) in tags {
            let mut alt = vec![
                free.clone(),
                PSym::T(Terminal::Literal(tag.into_bytes())),
                PSym::Nt(Ref::User(rule)),
            ];
            if looped {
                alt.push(PSym::Nt(Ref::Fresh(d)));
            }
            alts.push(alt);
        }
        self.fresh[d].1 = alts;
        Ok(PSym::Nt(Ref::Fresh(d)))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::JSON_STRING_BODY;
    use crate::gbnf::parse_gbnf;
    use crate::ir::{Grammar, Symbol, Terminal};
    use crate::testutil::{all_strings, brute_force_language};

    const LEN: usize = 6;

    fn lang(src: &str) -> BTreeSet<Vec<u8>> {
        brute_force_language(&Grammar::from_gbnf(src).expect(src), LEN)
    }

    fn quote(s: &str) -> String {
        format!("{s:?}")
    }

    /// The substrings of a chunk list made of whole chunks, by definition.
    fn substrings(chunks: &[&str]) -> BTreeSet<Vec<u8>> {
        let mut out: BTreeSet<Vec<u8>> = [Vec::new()].into();
        for i in 0..chunks.len() {
            for j in i + 1..=chunks.len() {
                let w = chunks[i..j].concat().into_bytes();
                if w.len() <= LEN {
                    out.insert(w);
                }
            }
        }
        out
    }

    /// TagDispatch's language by its definition: free text (no tag, no
    /// excluded string) and the end, or free text, a tag, its rule's
    /// text and (looping) the rest again.
    fn dispatches(s: &[u8], tags: &[(&str, &str)], excludes: &[&str], looped: bool) -> bool {
        let avoid: Vec<&[u8]> = tags
            .iter()
            .map(|(t, _)| t.as_bytes())
            .chain(excludes.iter().map(|e| e.as_bytes()))
            .collect();
        let free = |w: &[u8]| !avoid.iter().any(|a| w.windows(a.len()).any(|x| x == *a));
        if free(s) {
            return true;
        }
        (0..=s.len()).any(|i| {
            free(&s[..i])
                && tags.iter().any(|(t, body)| {
                    let (t, body) = (t.as_bytes(), body.as_bytes());
                    let rest = &s[i..];
                    rest.starts_with(t) && rest[t.len()..].starts_with(body) && {
                        let after = &rest[t.len() + body.len()..];
                        if looped {
                            dispatches(after, tags, excludes, looped)
                        } else {
                            after.is_empty()
                        }
                    }
                })
        })
    }

    fn word() -> impl Strategy<Value = String> {
        "[abc]{1,3}"
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn substring_is_every_run_of_whole_chunks(chunks in prop::collection::vec("[abc]{0,2}", 0..5)) {
            let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
            let args: Vec<String> = refs.iter().map(|c| quote(c)).collect();
            let src = format!("root ::= Substring({})", args.join(", "));
            prop_assert_eq!(lang(&src), substrings(&refs));
        }

        #[test]
        fn tag_dispatch_is_its_definition(
            tags in prop::collection::vec((word(), "[abc]{0,2}"), 0..3),
            excludes in prop::collection::vec(word(), 0..2),
            looped in any::<bool>(),
        ) {
            // XGrammar refuses an excluded string that begins a tag
            prop_assume!(!excludes.iter().any(|e| tags.iter().any(|(t, _)| t.starts_with(e.as_str()))));
            let mut src = String::from("root ::= TagDispatch(");
            for (i, (t, _)) in tags.iter().enumerate() {
                src.push_str(&format!("({}, r{i}), ", quote(t)));
            }
            let ex: Vec<String> = excludes.iter().map(|e| quote(e)).collect();
            src.push_str(&format!("loop_after_dispatch={looped}, excludes=({}))\n", ex.join(", ")));
            for (i, (_, body)) in tags.iter().enumerate() {
                src.push_str(&format!("r{i} ::= {}\n", quote(body)));
            }
            let pairs: Vec<(&str, &str)> = tags.iter().map(|(t, b)| (t.as_str(), b.as_str())).collect();
            let exs: Vec<&str> = excludes.iter().map(String::as_str).collect();
            let want: BTreeSet<Vec<u8>> = all_strings(LEN)
                .into_iter()
                .filter(|w| dispatches(w, &pairs, &exs, looped))
                .collect();
            prop_assert_eq!(lang(&src), want, "{}", src);
        }
    }

    #[test]
    fn regex_macro_reads_flags_and_json_strings() {
        let l = lang(r#"root ::= "x" Regex("a[bc]*") "x""#);
        assert!(l.contains(b"xabcx".as_slice()) && l.contains(b"xax".as_slice()));
        assert!(!l.contains(b"xx".as_slice()) && !l.contains(b"xbx".as_slice()));
        // without `flags`, `.` is any character; with flags and no `s`, not `\n`
        let any = Grammar::from_gbnf(r#"root ::= Regex("a.")"#).unwrap();
        let nl = Grammar::from_gbnf(r#"root ::= Regex("a.", flags="i")"#).unwrap();
        assert!(any.to_string().contains("(?s:"), "{any}");
        assert!(nl.to_string().contains("(?i:"), "{nl}");
        assert!(!nl.to_string().contains("(?is:"), "{nl}");
        // a leading (?i) is the `i` flag
        let ci = Grammar::from_gbnf(r#"root ::= Regex("(?i)ab")"#).unwrap();
        assert!(ci.to_string().contains("(?is:ab)"), "{ci}");
        // json_string: no quote, backslash or control character
        let js = Grammar::from_gbnf(r#"root ::= Regex("[abc\"]+", json_string=true)"#).unwrap();
        assert!(
            matches!(&js.rules[0].rhs[0], Symbol::T(Terminal::And(_, b)) if b == JSON_STRING_BODY)
        );
        assert!(lang(r#"root ::= Regex("[abc]+", json_string=true)"#).contains(b"ab".as_slice()));
    }

    #[test]
    fn macro_errors_name_the_place_and_the_reason() {
        for (src, want) in [
            (
                "root ::= Regex()",
                "Regex expects exactly one string argument",
            ),
            (
                "root ::= Regex(abc)",
                "Regex pattern must be a string literal",
            ),
            (
                r#"root ::= Regex("a", "b")"#,
                "Regex expects exactly one string argument",
            ),
            (
                r#"root ::= Regex("a", foo=true)"#,
                "Regex does not support the named argument foo",
            ),
            (
                r#"root ::= Regex("a", json_string=1)"#,
                "json_string must be a boolean",
            ),
            (
                r#"root ::= Regex("a", flags=true)"#,
                "flags must be a string",
            ),
            (
                r#"root ::= Regex("a", flags="m")"#,
                "regular-expression flag 'm' is not supported",
            ),
            (r#"root ::= Regex("a(")"#, "bad regex"),
            (
                r#"root ::= Substring("a", foo=true)"#,
                "Substring() does not accept named arguments",
            ),
            (
                r#"root ::= Substring("a", 1)"#,
                "Substring() arguments must be strings",
            ),
            (
                "root ::= TagDispatch((\"\", r))\nr ::= \"a\"",
                "Tag must be a non-empty string literal",
            ),
            (
                "root ::= TagDispatch((\"t\", nowhere))",
                "undefined nonterminal `nowhere`",
            ),
            (
                "root ::= TagDispatch(\"t\", r)\nr ::= \"a\"",
                "Each tag dispatch element must be a tuple",
            ),
            (
                "root ::= TagDispatch((\"t\" r))\nr ::= \"a\"",
                "Expect , or ) in tuple",
            ),
            (
                "root ::= TagDispatch((\"t\", r), stop_eos=false)\nr ::= \"a\"",
                "Unknown named argument for TagDispatch: stop_eos",
            ),
            (
                "root ::= TagDispatch((\"tag1\", r), excludes=(\"tag\"))\nr ::= \"a\"",
                "Exclude string must not be a prefix of trigger string: tag",
            ),
            ("root ::= Token(5)", "token-level macro Token"),
            (
                "root ::= TokenTagDispatch((5, r))\nr ::= \"a\"",
                "token-level macro TokenTagDispatch",
            ),
            ("root ::= TagDispatch((\"t\", r)", "Expect , or )"),
            ("root ::= r\nr[lazy] ::= \"a\"", "rule attributes"),
        ] {
            let e = parse_gbnf(src).expect_err(src).to_string();
            assert!(e.contains(want), "{src}: {e}");
        }
        let e = parse_gbnf("root ::= TagDispatch((\"t\" r))\nr ::= \"a\"").unwrap_err();
        assert_eq!(e.pos().map(|p| (p.line, p.column)), Some((1, 27)));
    }

    #[test]
    fn a_rule_named_like_a_macro_is_still_a_rule_without_the_parenthesis() {
        let g = Grammar::from_gbnf("root ::= Regex (\"a\")\nRegex ::= \"b\"").unwrap();
        assert_eq!(brute_force_language(&g, 3), [b"ba".to_vec()].into());
    }
}
