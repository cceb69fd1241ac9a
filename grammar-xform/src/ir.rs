//! The grammar IR: a context-free grammar over bytes.
//!
//! A [`Grammar`] is a list of [`Rule`]s `A → X₁ … Xₙ` whose symbols are
//! nonterminals ([`NtId`]) or [`Terminal`]s. Terminals are matched against
//! *bytes* (UTF-8 for text): a byte literal, one character from a Unicode
//! class, or a regular expression. Quantifiers (`* + ? {m,n}`) and groups of
//! surface syntax (GBNF) are desugared into fresh nonterminals by the parser,
//! so every consumer (transforms, the Earley engine, reference recognizers)
//! sees plain BNF.
//!
//! `Display` prints a grammar in GBNF, which the parser reads back
//! (regex terminals use the `/.../` extension).

use std::fmt;

/// A nonterminal's index in its [`Grammar`].
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct NtId(pub u32);

impl NtId {
    /// The id as a `usize` index (into per-nonterminal tables).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A set of Unicode scalar values as sorted, disjoint, non-adjacent
/// inclusive ranges. Negation is resolved at construction.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CharClass {
    ranges: Vec<(char, char)>,
}

impl CharClass {
    /// The class of the given (possibly overlapping, unsorted) ranges;
    /// `negated` takes the complement over all Unicode scalar values.
    pub fn new(ranges: impl IntoIterator<Item = (char, char)>, negated: bool) -> Self {
        let mut r: Vec<(u32, u32)> = ranges
            .into_iter()
            .map(|(a, b)| {
                if a <= b {
                    (a as u32, b as u32)
                } else {
                    (b as u32, a as u32)
                }
            })
            .collect();
        r.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(r.len());
        for (a, b) in r {
            match merged.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        if negated {
            let mut comp = Vec::new();
            let mut next = 0u32;
            for (a, b) in merged {
                if a > next {
                    comp.push((next, a - 1));
                }
                next = b + 1;
            }
            if next <= 0x10FFFF {
                comp.push((next, 0x10FFFF));
            }
            merged = comp;
        }
        // Drop the surrogate gap, which no `char` can be in.
        let mut ranges = Vec::with_capacity(merged.len());
        for (a, b) in merged {
            let pieces = [(a, b.min(0xD7FF)), (a.max(0xE000), b)];
            for (x, y) in pieces {
                if x <= y {
                    if let (Some(x), Some(y)) = (char::from_u32(x), char::from_u32(y)) {
                        ranges.push((x, y));
                    }
                }
            }
        }
        CharClass { ranges }
    }

    /// The class of one character.
    pub fn single(c: char) -> Self {
        CharClass {
            ranges: vec![(c, c)],
        }
    }

    /// Sorted, disjoint inclusive ranges.
    pub fn ranges(&self) -> &[(char, char)] {
        &self.ranges
    }

    /// Whether `c` is in the class (binary search, O(log ranges)).
    pub fn contains(&self, c: char) -> bool {
        self.ranges
            .binary_search_by(|&(a, b)| {
                if c < a {
                    std::cmp::Ordering::Greater
                } else if c > b {
                    std::cmp::Ordering::Less
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
    }

    /// Whether the class has no character.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

/// A terminal symbol, matched against bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Terminal {
    /// Exactly these bytes (non-empty).
    Literal(Vec<u8>),
    /// One character of the class, as its UTF-8 bytes.
    Class(CharClass),
    /// A byte string fully matched by this regex (`regex-syntax` dialect,
    /// Unicode mode, implicitly anchored at both ends).
    Regex(String),
    /// A byte string fully matched by *both* regexes (the intersection of
    /// two [`Terminal::Regex`] languages). What a regex cannot say
    /// compactly: a JSON string that matches a `pattern` *and* has at most
    /// `maxLength` characters is `And(pattern, "X{0,n}")`, where the
    /// product written out as one regex or as rules has `|pattern| · n`
    /// states. Engines build the product: the Earley engine lazily by
    /// arithmetic when the second regex is a counted repetition
    /// (`zapspec_earley`'s `bounded` module), [`crate::TerminalDfa`]
    /// eagerly.
    And(String, String),
    /// A byte string fully matched by the regex and equal to none of the
    /// listed strings: `L(regex) ∖ {s₁, …, sₙ}`, the strings sorted and
    /// distinct (build it with [`Terminal::except`]). What a regex says
    /// only at length: an object key that is none of the declared
    /// property names is, as a regex, a trie of the names with an exit
    /// class at every node; here it is the free-key regex and the names.
    /// Engines build the product of the regex's automaton with the names'
    /// byte trie (`zapspec_grammar::dense::except`), whose states are
    /// about the trie's nodes plus the regex's.
    Except(String, std::sync::Arc<[Vec<u8>]>),
    /// A byte string fully matched by the regex that contains none of the
    /// listed strings as a substring: `L(regex) ∖ Σ*(s₁|…|sₙ)Σ*`, the
    /// strings non-empty, sorted and distinct (build it with
    /// [`Terminal::avoid`]). What a regex cannot say at all (its syntax
    /// has no complement): the free text of a structural tag, which runs
    /// until a trigger and must never contain one or an excluded string,
    /// is `Avoid(ANY_TEXT_REGEX, triggers)` ([`crate::avoid::ANY_TEXT_REGEX`]).
    /// Engines build the product of the regex's automaton with the
    /// strings' Aho–Corasick automaton (`zapspec_grammar::dense::avoid`),
    /// whose states are about the strings' trie nodes times the regex's.
    Avoid(String, std::sync::Arc<[Vec<u8>]>),
}

impl Terminal {
    /// [`Terminal::Except`] with `names` sorted and deduplicated (so that
    /// equal languages written alike are one terminal); the plain
    /// [`Terminal::Regex`] when there is no name to take out.
    pub fn except(regex: String, names: impl IntoIterator<Item = Vec<u8>>) -> Terminal {
        let mut names: Vec<Vec<u8>> = names.into_iter().collect();
        names.sort_unstable();
        names.dedup();
        if names.is_empty() {
            Terminal::Regex(regex)
        } else {
            Terminal::Except(regex, names.into())
        }
    }

    /// [`Terminal::Avoid`] with the empty strings dropped and the others
    /// sorted and deduplicated; the plain [`Terminal::Regex`] when no
    /// string is left.
    pub fn avoid(regex: String, strings: impl IntoIterator<Item = Vec<u8>>) -> Terminal {
        let mut strings: Vec<Vec<u8>> = strings.into_iter().filter(|s| !s.is_empty()).collect();
        strings.sort_unstable();
        strings.dedup();
        if strings.is_empty() {
            Terminal::Regex(regex)
        } else {
            Terminal::Avoid(regex, strings.into())
        }
    }
}

/// A symbol on the right-hand side of a rule.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Symbol {
    /// A nonterminal.
    Nt(NtId),
    /// A terminal.
    T(Terminal),
}

/// One production `lhs → rhs` (an empty `rhs` is an ε-production).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rule {
    /// The nonterminal being defined.
    pub lhs: NtId,
    /// What it expands to (empty: ε).
    pub rhs: Vec<Symbol>,
}

/// A context-free grammar over bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grammar {
    names: Vec<String>,
    /// `names` inverted, so adding and looking up nonterminals is O(1).
    by_name: rustc_hash::FxHashMap<String, NtId>,
    /// Next numeric suffix to try per base name, so repeated fresh names
    /// (`item-star-1`, `item-star-2`, …) do not rescan from 1.
    next_suffix: rustc_hash::FxHashMap<String, usize>,
    /// Productions, grouped by nothing in particular; use
    /// [`Grammar::rules_of`] for the alternatives of one nonterminal.
    pub rules: Vec<Rule>,
    /// The start symbol.
    pub start: NtId,
    /// Parsed forms of regex terminals the producer already held as HIR
    /// ([`Grammar::regex_terminal`]).
    hirs: RegexHirs,
}

/// Regex terminal texts with the HIR they were printed from: a consumer
/// that compiles a terminal may take the HIR instead of parsing the text
/// (for the key regexes of a JSON Schema object, tens of kilobytes, the
/// parse is most of the cost of compiling the terminal). The text stays the
/// terminal's identity: two grammars compare equal whatever their tables
/// hold, the HIR being a function of the text, and a transform that builds
/// a new grammar may drop the table (consumers then parse).
#[derive(Clone, Debug, Default)]
struct RegexHirs(rustc_hash::FxHashMap<String, std::sync::Arc<regex_syntax::hir::Hir>>);

impl PartialEq for RegexHirs {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for RegexHirs {}

/// Sizes of a grammar, printed before and after each transform.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GrammarStats {
    /// Nonterminals that have at least one rule or are the start symbol.
    pub nonterminals: usize,
    /// Productions.
    pub rules: usize,
    /// Symbol occurrences over all right-hand sides.
    pub symbols: usize,
    /// Distinct terminals.
    pub terminals: usize,
    /// Productions with an empty right-hand side.
    pub epsilon_rules: usize,
}

impl Grammar {
    /// An empty grammar; add nonterminals and rules, then set `start`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a nonterminal named `name` (made unique with a numeric suffix if
    /// taken) and returns its id.
    pub fn add_nonterminal(&mut self, name: &str) -> NtId {
        let mut n = name.to_string();
        if self.by_name.contains_key(&n) {
            let k = self.next_suffix.entry(name.to_string()).or_insert(1);
            loop {
                n = format!("{name}-{k}");
                *k += 1;
                if !self.by_name.contains_key(&n) {
                    break;
                }
            }
        }
        let id = NtId(self.names.len() as u32);
        self.by_name.insert(n.clone(), id);
        self.names.push(n);
        id
    }

    /// The id of the nonterminal named `name`.
    pub fn nonterminal(&self, name: &str) -> Option<NtId> {
        self.by_name.get(name).copied()
    }

    /// The regex terminal of `hir` (its text: `hir` printed by
    /// `regex-syntax`, which reads back as the same language), remembered
    /// with the HIR so that consumers need not parse the text
    /// ([`Grammar::regex_hir`]).
    pub fn regex_terminal(&mut self, hir: regex_syntax::hir::Hir) -> Terminal {
        let text = hir.to_string();
        self.hirs
            .0
            .entry(text.clone())
            .or_insert_with(|| std::sync::Arc::new(hir));
        Terminal::Regex(text)
    }

    /// The HIR a regex terminal's text was printed from, when it was added
    /// by [`Grammar::regex_terminal`].
    pub fn regex_hir(&self, text: &str) -> Option<&regex_syntax::hir::Hir> {
        self.hirs.0.get(text).map(|h| &**h)
    }

    /// [`Grammar::regex_hir`], shared: for a consumer that keeps the HIR
    /// past the grammar (to compile the terminal later) without a deep
    /// copy.
    pub fn regex_hir_shared(&self, text: &str) -> Option<&std::sync::Arc<regex_syntax::hir::Hir>> {
        self.hirs.0.get(text)
    }

    /// Remembers `hir` as the HIR of the regex terminal `text` (which it
    /// must print as, [`Grammar::regex_terminal`]): for a caller that
    /// reuses terminals across grammars, [`Grammar::regex_hir_shared`] of
    /// another grammar.
    pub fn add_regex_hir(&mut self, text: String, hir: std::sync::Arc<regex_syntax::hir::Hir>) {
        self.hirs.0.entry(text).or_insert(hir);
    }

    /// Adds the production `lhs → rhs`.
    pub fn add_rule(&mut self, lhs: NtId, rhs: Vec<Symbol>) {
        self.rules.push(Rule { lhs, rhs });
    }

    /// The name of a nonterminal.
    pub fn name(&self, nt: NtId) -> &str {
        self.names
            .get(nt.index())
            .map(String::as_str)
            .unwrap_or("?")
    }

    /// Number of nonterminal ids (some may have no rules after transforms).
    pub fn num_nonterminals(&self) -> usize {
        self.names.len()
    }

    /// The alternatives of `nt`.
    pub fn rules_of(&self, nt: NtId) -> impl Iterator<Item = &Rule> {
        self.rules.iter().filter(move |r| r.lhs == nt)
    }

    /// Copies every rule of `other` into this grammar under fresh
    /// nonterminals (named after `other`'s, prefixed with `prefix`) and
    /// returns the copy of `other`'s start symbol. Regex terminals keep
    /// the HIR `other` holds for them. How a grammar is used inside a
    /// larger one: a JSON Schema's or a GBNF text's grammar as one part of
    /// a structural tag.
    pub fn embed(&mut self, other: &Grammar, prefix: &str) -> NtId {
        let map: Vec<NtId> = other
            .names
            .iter()
            .map(|n| self.add_nonterminal(&format!("{prefix}{n}")))
            .collect();
        let at = |id: NtId| map.get(id.index()).copied().unwrap_or_else(|| map[0]);
        for r in &other.rules {
            let rhs = r
                .rhs
                .iter()
                .map(|s| match s {
                    Symbol::Nt(n) => Symbol::Nt(at(*n)),
                    Symbol::T(t) => Symbol::T(t.clone()),
                })
                .collect();
            self.rules.push(Rule {
                lhs: at(r.lhs),
                rhs,
            });
        }
        for (text, hir) in &other.hirs.0 {
            self.hirs
                .0
                .entry(text.clone())
                .or_insert_with(|| hir.clone());
        }
        if map.is_empty() {
            // an empty grammar (no nonterminal): the empty language
            return self.add_nonterminal(&format!("{prefix}empty"));
        }
        at(other.start)
    }

    /// Sizes of the grammar.
    pub fn stats(&self) -> GrammarStats {
        let mut used = vec![false; self.names.len()];
        if let Some(u) = used.get_mut(self.start.index()) {
            *u = true;
        }
        let mut terms = std::collections::HashSet::new();
        let mut symbols = 0;
        for r in &self.rules {
            used[r.lhs.index()] = true;
            symbols += r.rhs.len();
            for s in &r.rhs {
                if let Symbol::T(t) = s {
                    terms.insert(t);
                }
            }
        }
        GrammarStats {
            nonterminals: used.iter().filter(|u| **u).count(),
            rules: self.rules.len(),
            symbols,
            terminals: terms.len(),
            epsilon_rules: self.rules.iter().filter(|r| r.rhs.is_empty()).count(),
        }
    }
}

impl fmt::Display for Terminal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Terminal::Literal(b) => {
                f.write_str("\"")?;
                for chunk in b.utf8_chunks() {
                    for c in chunk.valid().chars() {
                        write_escaped(f, c, '"')?;
                    }
                    for &x in chunk.invalid() {
                        write!(f, "\\x{x:02X}")?;
                    }
                }
                f.write_str("\"")
            }
            Terminal::Class(c) => {
                f.write_str("[")?;
                for &(a, b) in c.ranges() {
                    write_escaped(f, a, ']')?;
                    if b != a {
                        f.write_str("-")?;
                        write_escaped(f, b, ']')?;
                    }
                }
                f.write_str("]")
            }
            Terminal::Regex(r) => {
                f.write_str("/")?;
                for c in r.chars() {
                    if c == '/' {
                        f.write_str("\\/")?;
                    } else {
                        write!(f, "{c}")?;
                    }
                }
                f.write_str("/")
            }
            Terminal::And(a, b) => {
                let (a, b) = (Terminal::Regex(a.clone()), Terminal::Regex(b.clone()));
                write!(f, "({a} & {b})")
            }
            Terminal::Except(r, names) => {
                write!(f, "({}", Terminal::Regex(r.clone()))?;
                for n in names.iter() {
                    write!(f, " - {}", Terminal::Literal(n.clone()))?;
                }
                f.write_str(")")
            }
            Terminal::Avoid(r, strings) => {
                write!(f, "({}", Terminal::Regex(r.clone()))?;
                for n in strings.iter() {
                    write!(f, " ~ {}", Terminal::Literal(n.clone()))?;
                }
                f.write_str(")")
            }
        }
    }
}

fn write_escaped(f: &mut fmt::Formatter<'_>, c: char, quote: char) -> fmt::Result {
    match c {
        '\\' => f.write_str("\\\\"),
        '\n' => f.write_str("\\n"),
        '\r' => f.write_str("\\r"),
        '\t' => f.write_str("\\t"),
        '-' if quote == ']' => f.write_str("\\-"),
        '[' | '^' if quote == ']' => write!(f, "\\{c}"),
        c if c == quote => write!(f, "\\{c}"),
        c if (c as u32) < 0x20 || c as u32 == 0x7F => write!(f, "\\x{:02X}", c as u32),
        c if c.is_whitespace() && c != ' ' => write!(f, "\\u{:04X}", c as u32),
        c if (c as u32) > 0xFFFF && (c.is_control() || !c.is_alphanumeric()) => {
            write!(f, "\\U{:08X}", c as u32)
        }
        c => write!(f, "{c}"),
    }
}

impl fmt::Display for Grammar {
    /// GBNF: the start symbol's rules first, then the others in id order,
    /// one line per nonterminal with alternatives separated by `|`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut order: Vec<NtId> = vec![self.start];
        order.extend(
            (0..self.names.len() as u32)
                .map(NtId)
                .filter(|&n| n != self.start),
        );
        for nt in order {
            let alts: Vec<&Rule> = self.rules_of(nt).collect();
            if alts.is_empty() {
                continue;
            }
            write!(f, "{} ::=", self.name(nt))?;
            for (i, r) in alts.iter().enumerate() {
                if i > 0 {
                    f.write_str(" |")?;
                }
                if r.rhs.is_empty() {
                    f.write_str(" \"\"")?;
                }
                for s in &r.rhs {
                    match s {
                        Symbol::Nt(n) => write!(f, " {}", self.name(*n))?,
                        Symbol::T(t) => write!(f, " {t}")?,
                    }
                }
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn char_class_normalises() {
        let c = CharClass::new([('b', 'd'), ('a', 'a'), ('x', 'z'), ('c', 'f')], false);
        assert_eq!(c.ranges(), &[('a', 'f'), ('x', 'z')]);
        assert!(c.contains('e') && !c.contains('g'));
        let n = CharClass::new([('\0', '\u{10}')], true);
        assert!(!n.contains('\u{5}') && n.contains('a') && n.contains('\u{10FFFF}'));
        assert!(n
            .ranges()
            .iter()
            .all(|&(a, b)| !(a <= '\u{D7FF}' && b >= '\u{E000}')));
    }

    #[test]
    fn display_is_gbnf() {
        let mut g = Grammar::new();
        let s = g.add_nonterminal("root");
        let a = g.add_nonterminal("a");
        g.add_rule(
            s,
            vec![
                Symbol::Nt(a),
                Symbol::T(Terminal::Literal(b"x\"\n".to_vec())),
            ],
        );
        g.add_rule(a, vec![]);
        g.add_rule(
            a,
            vec![Symbol::T(Terminal::Class(CharClass::new(
                [('0', '9'), ('-', '-')],
                false,
            )))],
        );
        g.add_rule(a, vec![Symbol::T(Terminal::Regex("[a-z]+/x".into()))]);
        g.start = s;
        assert_eq!(
            g.to_string(),
            "root ::= a \"x\\\"\\n\"\na ::= \"\" | [\\-0-9] | /[a-z]+\\/x/\n"
        );
        assert_eq!(
            g.stats(),
            GrammarStats {
                nonterminals: 2,
                rules: 4,
                symbols: 4,
                terminals: 3,
                epsilon_rules: 1
            }
        );
        assert_eq!(g.add_nonterminal("a"), NtId(2));
        assert_eq!(g.name(NtId(2)), "a-1");
    }
}
