//! An ECMA-262 regex written as plain GBNF: no `/regex/` terminals, so
//! that grammar text made from a regex is read by llama.cpp and XGrammar
//! too.
//!
//! The layout is XGrammar's regex-to-EBNF converter's: each character a
//! quoted literal of its own (`"a" "b"`), classes kept as written (ranges
//! and members in their order), groups as `( … )` with spaces inside,
//! quantifiers appended (`"a"{1,3}`, `( "a" | "b" )?`; a lazy `?` dropped,
//! it does not change the language), an empty alternative as `""`, anchors
//! (`^`, `$`) dropped (they may only stand where they match the ends), and
//! characters escaped as C does (`\n`, `\e`, `\x1f`, `\u6211`,
//! `\U0001f601`). The meaning is zapspec's reading of the regex in the
//! given [`RegexDialect`] (the one [`ecma_regex_to_regex_syntax_in`]
//! rewrites for the engine): `.` excludes the four ECMA-262 line
//! terminators and `\s` is ECMA-262's white space and line terminators,
//! written out as classes. A regex that reading refuses is refused here
//! with the same message.
//!
//! When to use it: to hand a regex to a consumer of GBNF text. The engine
//! itself compiles a regex as one regex terminal (a DFA), which is faster
//! than this per-character grammar.
//!
//! [`ecma_regex_to_regex_syntax_in`]: crate::ecma_regex_to_regex_syntax_in

use crate::RegexDialect;

/// `pattern`'s language as the right-hand side of a GBNF rule (see the
/// module docs), or the message of the reading's refusal.
///
/// ```
/// use zapspec_jsonschema::{ecma_regex_to_gbnf, RegexDialect};
///
/// let g = ecma_regex_to_gbnf(r"^(a|b)?[a-z]+\d{2,}$", RegexDialect::Strict).unwrap();
/// assert_eq!(g, r#"( "a" | "b" )? [a-z]+ [0-9]{2,}"#);
/// ```
pub fn ecma_regex_to_gbnf(pattern: &str, dialect: RegexDialect) -> Result<String, String> {
    let translated = crate::ecma_regex_to_regex_syntax_in(pattern, dialect)?;
    regex_syntax::Parser::new()
        .parse(&translated)
        .map_err(|e| e.to_string())?;
    let mut p = Printer {
        chars: pattern.chars().collect(),
        i: 0,
        strict: dialect == RegexDialect::Strict,
    };
    let out = p.alternation()?;
    if p.i < p.chars.len() {
        return Err(format!("Unmatched ')' at {}", p.i));
    }
    Ok(out)
}

/// ECMA-262 `\s`: white space and line terminators, as GBNF class members.
const ECMA_WS: &str = r"\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff";

/// ECMA-262 `.`: any character but a line terminator.
const ECMA_DOT: &str = r"[^\n\r\u2028\u2029]";

struct Printer {
    chars: Vec<char>,
    i: usize,
    strict: bool,
}

impl Printer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    /// Alternatives up to a `)` or the end.
    fn alternation(&mut self) -> Result<String, String> {
        let mut alts = vec![self.sequence()?];
        while self.peek() == Some('|') {
            self.i += 1;
            alts.push(self.sequence()?);
        }
        if alts.len() == 1 {
            return Ok(alts.pop().unwrap_or_default());
        }
        Ok(alts
            .into_iter()
            .map(|a| if a.is_empty() { "\"\"".to_string() } else { a })
            .collect::<Vec<_>>()
            .join(" | "))
    }

    /// Items up to a `|`, a `)` or the end, space-separated.
    fn sequence(&mut self) -> Result<String, String> {
        let mut items: Vec<String> = Vec::new();
        while let Some(c) = self.peek() {
            let atom = match c {
                '|' | ')' => break,
                '^' | '$' => {
                    self.i += 1;
                    continue;
                }
                '(' => self.group()?,
                '[' => self.class()?,
                '.' => {
                    self.i += 1;
                    ECMA_DOT.to_string()
                }
                '\\' => self.escape_atom()?,
                c => {
                    self.i += 1;
                    quoted(c)
                }
            };
            items.push(atom + &self.quantifier());
        }
        Ok(items.join(" "))
    }

    fn group(&mut self) -> Result<String, String> {
        self.i += 1; // `(`
        if self.peek() == Some('?') {
            match (self.chars.get(self.i + 1), self.chars.get(self.i + 2)) {
                (Some(':'), _) => self.i += 2,
                (Some('<'), Some(c)) if *c != '=' && *c != '!' => {
                    // a named group `(?<name>…)`
                    while self.peek().is_some_and(|c| c != '>') {
                        self.i += 1;
                    }
                    self.i += 1;
                }
                _ => return Err("unsupported group modifier".into()),
            }
        }
        let inner = self.alternation()?;
        if self.peek() != Some(')') {
            return Err("The parenthesis is not closed.".into());
        }
        self.i += 1;
        Ok(if inner.is_empty() {
            "( )".to_string()
        } else {
            format!("( {inner} )")
        })
    }

    /// A quantifier after an atom, as written (a lazy `?` dropped); a `{`
    /// that starts none (literal text, in Annex B) is left for the caller.
    fn quantifier(&mut self) -> String {
        let q = match self.peek() {
            Some(c @ ('*' | '+' | '?')) => {
                self.i += 1;
                c.to_string()
            }
            Some('{') => {
                let digits = |p: &Printer, mut k: usize| {
                    let s = k;
                    while p.chars.get(k).is_some_and(char::is_ascii_digit) {
                        k += 1;
                    }
                    (k, k > s)
                };
                let (k, min) = digits(self, self.i + 1);
                let k = match self.chars.get(k) {
                    Some(',') => digits(self, k + 1).0,
                    _ => k,
                };
                if !min || self.chars.get(k) != Some(&'}') {
                    return String::new();
                }
                let q: String = self.chars[self.i..=k].iter().collect();
                self.i = k + 1;
                q
            }
            _ => return String::new(),
        };
        if self.peek() == Some('?') {
            self.i += 1;
        }
        q
    }

    /// A `\` escape outside a class.
    fn escape_atom(&mut self) -> Result<String, String> {
        let e = self
            .chars
            .get(self.i + 1)
            .copied()
            .ok_or("trailing backslash")?;
        let class = match e {
            'd' => Some("[0-9]".to_string()),
            'D' => Some("[^0-9]".to_string()),
            'w' => Some("[a-zA-Z0-9_]".to_string()),
            'W' => Some("[^a-zA-Z0-9_]".to_string()),
            's' => Some(format!("[{ECMA_WS}]")),
            'S' => Some(format!("[^{ECMA_WS}]")),
            _ => None,
        };
        if let Some(c) = class {
            self.i += 2;
            return Ok(c);
        }
        let c = self.escaped_char(false)?;
        Ok(quoted(c))
    }

    /// The character of the escape at `self.i` (a `\`), consumed.
    fn escaped_char(&mut self, in_class: bool) -> Result<char, String> {
        self.i += 1;
        let e = self.peek().ok_or("trailing backslash")?;
        self.i += 1;
        let hex = |p: &mut Printer, n: usize| -> Result<char, String> {
            let s: String = p.chars[p.i..(p.i + n).min(p.chars.len())].iter().collect();
            p.i += n;
            u32::from_str_radix(&s, 16)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(|| format!("bad hex escape {s:?}"))
        };
        Ok(match e {
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'f' => '\u{c}',
            'v' => '\u{b}',
            '0' => '\0',
            'b' if in_class => '\u{8}',
            'a' if self.strict => '\u{7}',
            'e' if self.strict => '\u{1b}',
            'c' => {
                let l = self.peek().ok_or("bad control escape")?;
                self.i += 1;
                char::from_u32(l as u32 % 32).ok_or("bad control escape")?
            }
            'x' => hex(self, 2)?,
            'u' if self.peek() == Some('{') => {
                self.i += 1;
                let start = self.i;
                while self.peek().is_some_and(|c| c != '}') {
                    self.i += 1;
                }
                let s: String = self.chars[start..self.i].iter().collect();
                self.i += 1;
                u32::from_str_radix(&s, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| format!("bad \\u{{{s}}} escape"))?
            }
            'u' => hex(self, 4)?,
            c => c,
        })
    }

    /// A class `[…]`, its members in their order.
    fn class(&mut self) -> Result<String, String> {
        self.i += 1; // `[`
        let mut out = String::from("[");
        if self.peek() == Some('^') {
            out.push('^');
            self.i += 1;
        }
        if self.peek() == Some(']') {
            // `[]` (nothing) or `[^]` (anything), where the dialect allows it
            self.i += 1;
            return Ok(if out.ends_with('^') {
                r"[\0-\U0010ffff]".to_string()
            } else {
                r"[^\0-\U0010ffff]".to_string()
            });
        }
        // members: a set escape's text, or a character and whether it was
        // written escaped
        enum Member {
            Set(&'static str),
            Char(char, bool),
        }
        let mut members: Vec<Member> = Vec::new();
        loop {
            match self.peek().ok_or("unterminated character class")? {
                ']' => {
                    self.i += 1;
                    break;
                }
                '\\' => {
                    let set = match self.chars.get(self.i + 1) {
                        Some('d') => Some("0-9"),
                        Some('w') => Some("a-zA-Z0-9_"),
                        Some('s') => Some(ECMA_WS),
                        _ => None,
                    };
                    if let Some(s) = set {
                        self.i += 2;
                        members.push(Member::Set(s));
                    } else {
                        members.push(Member::Char(self.escaped_char(true)?, true));
                    }
                }
                c => {
                    self.i += 1;
                    members.push(Member::Char(c, false));
                }
            }
        }
        // ranges: a character, a bare `-`, a character (not at the end)
        let n = members.len();
        let mut k = 0;
        while k < n {
            let range = match (&members[k], members.get(k + 1), members.get(k + 2)) {
                (
                    Member::Char(a, ea),
                    Some(Member::Char('-', false)),
                    Some(Member::Char(b, eb)),
                ) => Some(((*a, *ea), (*b, *eb))),
                _ => None,
            };
            if let Some(((a, ea), (b, eb))) = range {
                out.push_str(&class_char(a, ea));
                out.push('-');
                out.push_str(&class_char(b, eb));
                k += 3;
                continue;
            }
            match members[k] {
                Member::Set(s) => out.push_str(s),
                // a literal `-` bare at the ends, escaped inside
                Member::Char('-', false) if k == 0 || k + 1 == n => out.push('-'),
                Member::Char('-', _) => out.push_str(r"\-"),
                Member::Char(c, e) => out.push_str(&class_char(c, e)),
            }
            k += 1;
        }
        out.push(']');
        Ok(out)
    }
}

/// `c` as a GBNF string literal.
fn quoted(c: char) -> String {
    let mut s = String::from("\"");
    match c {
        '"' => s.push_str("\\\""),
        '\'' => s.push_str("\\'"),
        '?' => s.push_str("\\?"),
        c => s.push_str(&c_escape(c)),
    }
    s.push('"');
    s
}

/// `c` as a class member (a range's end); `escaped`: written `\c`, which
/// a `-` keeps.
fn class_char(c: char, escaped: bool) -> String {
    match c {
        ']' => r"\]".to_string(),
        '[' => r"\[".to_string(),
        '^' => r"\^".to_string(),
        '-' if escaped => r"\-".to_string(),
        c => c_escape(c),
    }
}

/// C's escapes for controls, `\uXXXX` / `\UXXXXXXXX` (lowercase) beyond
/// ASCII, the character itself otherwise (a backslash doubled).
fn c_escape(c: char) -> String {
    match c {
        '\\' => r"\\".to_string(),
        '\u{7}' => r"\a".to_string(),
        '\u{8}' => r"\b".to_string(),
        '\u{c}' => r"\f".to_string(),
        '\n' => r"\n".to_string(),
        '\r' => r"\r".to_string(),
        '\t' => r"\t".to_string(),
        '\u{b}' => r"\v".to_string(),
        '\0' => r"\0".to_string(),
        '\u{1b}' => r"\e".to_string(),
        c if (c as u32) < 0x20 || c as u32 == 0x7f => format!(r"\x{:02x}", c as u32),
        c if (c as u32) < 0x80 => c.to_string(),
        c if (c as u32) <= 0xffff => format!(r"\u{:04x}", c as u32),
        c => format!(r"\U{:08x}", c as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use zapspec_grammar::ir::{Grammar, Symbol, Terminal};
    use zapspec_grammar::Recognizer;

    fn gbnf(p: &str) -> String {
        ecma_regex_to_gbnf(p, RegexDialect::Strict).unwrap()
    }

    #[test]
    fn layout() {
        assert_eq!(gbnf("123"), r#""1" "2" "3""#);
        assert_eq!(gbnf("ww我😁"), r#""w" "w" "\u6211" "\U0001f601""#);
        assert_eq!(
            gbnf(r"\^\$\.\*\+\?\\\(\)\[\]\{\}\|\/"),
            r#""^" "$" "." "*" "+" "\?" "\\" "(" ")" "[" "]" "{" "}" "|" "/""#
        );
        assert_eq!(
            gbnf(r#"\"\'\a\f\n\r\t\v\0\e"#),
            r#""\"" "\'" "\a" "\f" "\n" "\r" "\t" "\v" "\0" "\e""#
        );
        assert_eq!(
            gbnf(r"\u{20BB7}\u0300\x1F\cJ"),
            r#""\U00020bb7" "\u0300" "\x1f" "\n""#
        );
        assert_eq!(gbnf(r"[\r\n\$\u0010-\u006F\]\--]+"), r"[\r\n$\x10-o\]\--]+");
        assert_eq!(gbnf(r"[-a-zA-Z+--]+"), r"[-a-zA-Z+--]+");
        assert_eq!(gbnf(r"^abc$"), r#""a" "b" "c""#);
        assert_eq!(
            gbnf(r"abc|de(f|g)"),
            r#""a" "b" "c" | "d" "e" ( "f" | "g" )"#
        );
        assert_eq!(
            gbnf(r"(a|b)?[a-z]+(abc)*"),
            r#"( "a" | "b" )? [a-z]+ ( "a" "b" "c" )*"#
        );
        assert_eq!(gbnf("(?:abc)"), r#"( "a" "b" "c" )"#);
        assert_eq!(gbnf("(?<name>abc)"), r#"( "a" "b" "c" )"#);
        assert_eq!(gbnf("a()b"), r#""a" ( ) "b""#);
        assert_eq!(gbnf("(a|)"), r#"( "a" | "" )"#);
        assert_eq!(gbnf("a||b"), r#""a" | "" | "b""#);
        assert_eq!(gbnf("(a|$)"), r#"( "a" | "" )"#);
        assert_eq!(gbnf("a{1,3}?"), r#""a"{1,3}"#);
        assert_eq!(gbnf("a+?"), r#""a"+"#);
        assert_eq!(gbnf(r"\d\w\W"), r"[0-9] [a-zA-Z0-9_] [^a-zA-Z0-9_]");
    }

    #[test]
    fn refusals_are_the_readings() {
        for p in [
            "a++",
            "a{1,3}?{1,3}",
            "[]",
            "abc)",
            "abc((a)",
            "(?=a)",
            "(?i)abc",
            r"\b",
        ] {
            assert!(ecma_regex_to_gbnf(p, RegexDialect::Strict).is_err(), "{p}");
        }
        let e = ecma_regex_to_gbnf("a???", RegexDialect::Strict).unwrap_err();
        assert!(
            e.contains("Two consecutive repetition modifiers are not allowed."),
            "{e}"
        );
    }

    fn language_of(rhs: &str) -> Recognizer {
        let g = Grammar::from_gbnf(&format!("root ::= {rhs}\n"))
            .unwrap_or_else(|e| panic!("{rhs}: {e}"));
        Recognizer::new(&g).unwrap()
    }

    fn regex_language(p: &str) -> Recognizer {
        let t = crate::ecma_regex_to_regex_syntax_in(p, RegexDialect::Strict).unwrap();
        let mut g = Grammar::new();
        let r = g.add_nonterminal("root");
        g.add_rule(r, vec![Symbol::T(Terminal::Regex(t))]);
        g.start = r;
        Recognizer::new(&g).unwrap()
    }

    fn atom() -> impl Strategy<Value = String> {
        prop_oneof![prop::sample::select(vec![
            "a", "b", "-", ".", r"\d", r"\s", r"\-", r"\n", "[ab]", "[^a]", "[a-c-]", "[-b]",
            r"[\da]", r"\u0061", "^", "$"
        ])
        .prop_map(str::to_string),]
    }

    fn regex() -> impl Strategy<Value = String> {
        atom().prop_recursive(3, 12, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 1..3).prop_map(|v| v.concat()),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}|{b}")),
                inner.clone().prop_map(|a| format!("({a})")),
                inner.clone().prop_map(|a| format!("(?:{a})*")),
                inner.clone().prop_map(|a| format!("({a})?")),
                inner.clone().prop_map(|a| format!("({a}){{1,2}}")),
                inner.prop_map(|a| format!("({a})+?")),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// The GBNF's language is the regex terminal's (zapspec's reading),
        /// on every string of up to 3 characters over the atoms' alphabet.
        #[test]
        fn same_language_as_the_regex_terminal(p in regex()) {
            let (g, r) = (language_of(&gbnf(&p)), regex_language(&p));
            let alphabet = ["a", "b", "c", "-", "1", " ", "\n", "\u{a0}"];
            let mut strings = vec![String::new()];
            for _ in 0..3 {
                let mut next = Vec::new();
                for s in &strings {
                    for c in alphabet {
                        next.push(format!("{s}{c}"));
                    }
                }
                strings.extend(next.clone());
                strings.dedup();
                if strings.len() > 600 { break; }
            }
            for s in strings {
                prop_assert_eq!(g.recognizes(s.as_bytes()), r.recognizes(s.as_bytes()), "{} on {:?}: {}", p, s, gbnf(&p));
            }
        }
    }
}
