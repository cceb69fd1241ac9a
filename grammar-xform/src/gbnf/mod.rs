//! A GBNF parser (llama.cpp's grammar format, as XGrammar and Formatron
//! read it), producing the plain-BNF [`Grammar`] IR.
//!
//! ```text
//! root   ::= object                     # comments run to the end of the line
//! object ::= "{" ( pair ( "," pair )* )? "}"
//! pair   ::= string ":" value
//! digit  ::= [0-9] | [^\x00-\x7F]       # classes, ranges, negation
//! num    ::= digit{1,3} ("." digit+)?   # * + ? {m} {m,} {m,n}
//! word   ::= /[a-z]+(-[a-z]+)*/         # extension: regex terminals
//! ```
//!
//! * Rule names are words of `[A-Za-z0-9_-]`. A rule runs until the next
//!   `name ::=` (so rules may span lines, with or without parentheses).
//!   Defining a name twice merges the alternatives (with a warning).
//! * String literals support `\n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH`, C's
//!   `\a \b \f \v \0` and `\e` (ESC, U+001B), as XGrammar's EBNF reads
//!   them, and a backslash before any ASCII punctuation. **Deviation:** in a *string*,
//!   `\xHH` is the raw byte `HH` (so literals that are not UTF-8 round-trip
//!   through [`Grammar`]'s `Display`); llama.cpp reads `\xHH` as the code
//!   point U+00HH. Both agree for ASCII. In classes `\xHH` is a code point.
//!   `""` is ε.
//! * Classes `[...]`, `[^...]` with ranges and the same escapes; an empty
//!   class is an error. `.` is any Unicode scalar value.
//! * `/regex/` is a regex terminal (`regex-syntax` dialect); `\/` is a
//!   slash, every other backslash sequence is passed to the regex verbatim.
//!   `/a/ - "x" - "y"` is the regex without those strings
//!   (`Terminal::Except`), as `Display` writes it.
//!   `/a/ ~ "x" ~ "y"` is the regex's strings that contain neither string
//!   (`Terminal::Avoid`), as `Display` writes it.
//!   `/a/ & /b/` is the intersection terminal (`Terminal::And`), as
//!   `Grammar`'s `Display` writes it.
//! * XGrammar's macros `Regex("…")`, `Substring("…", …)` and
//!   `TagDispatch(("tag", rule), …)` where a name is followed directly by
//!   `(` ([`macros`]; the token-level ones are refused).
//! * Groups and quantifiers are desugared into fresh nonterminals named
//!   after the rule being defined (`item-star`, `item-plus`, `item-opt`,
//!   `item-rep`, `item-group`); repetition is left-recursive
//!   (`item-star ::= "" | item-star X`), which suits Earley parsing.
//! * The start symbol is `root` if defined, else the first rule.
//!
//! The parser is iterative (no recursion on nesting), and nesting of
//! parentheses is limited to [`MAX_NESTING`] levels so that the grammars it
//! produces stay reasonable for every consumer.

use std::collections::HashMap;
use std::fmt;

use crate::error::{GrammarError, Pos};
use crate::ir::{CharClass, Grammar, NtId, Symbol, Terminal};

pub mod macros;
pub use macros::{regex_syntax_reader, RegexMacro, RegexReader};

/// Deepest allowed nesting of parentheses.
pub const MAX_NESTING: usize = 1000;
/// Largest allowed repetition bound in `{m,n}`.
pub const MAX_REPETITION: u32 = 10_000;

/// A non-fatal finding of the parser.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// Where the finding is (the defining occurrence of a rule).
    pub pos: Pos,
    /// What was found.
    pub kind: WarningKind,
}

/// The kind of a parser [`Warning`]; the field is the nonterminal's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WarningKind {
    /// A rule that the start symbol never reaches.
    UnusedNonterminal(String),
    /// A name defined by more than one `::=`; the alternatives were merged.
    DuplicateRule(String),
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            WarningKind::UnusedNonterminal(n) => {
                write!(
                    f,
                    "{}: nonterminal `{n}` is not reachable from the start symbol",
                    self.pos
                )
            }
            WarningKind::DuplicateRule(n) => {
                write!(
                    f,
                    "{}: `{n}` is defined again; its alternatives are merged",
                    self.pos
                )
            }
        }
    }
}

/// A parsed grammar plus the parser's warnings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedGrammar {
    /// The grammar.
    pub grammar: Grammar,
    /// Non-fatal findings, in source order.
    pub warnings: Vec<Warning>,
    /// How many of the grammar's nonterminals are rules the text defines:
    /// ids `0..named`, in the order of their first definition. The others
    /// are the nonterminals made for groups, repetitions and macros.
    pub named: usize,
}

/// `s` as a GBNF string literal: `"`, `\\`, `\n`, `\r`, `\t` escaped, other
/// controls as `\uXXXX`; [`Grammar::from_gbnf`] reads it back as `s`. For
/// producers of GBNF text (the Lark reader, the JSON value library).
pub fn quote_literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Parses GBNF text (see the module docs for the dialect); `Regex(…)`
/// macros are read by [`regex_syntax_reader`].
pub fn parse_gbnf(src: &str) -> Result<ParsedGrammar, GrammarError> {
    parse_gbnf_with(src, &regex_syntax_reader)
}

/// [`parse_gbnf`] with `Regex(…)` macros read by `regex` (XGrammar reads
/// them as ECMA-262 regexes; `zapspec_jsonschema` has that reader).
pub fn parse_gbnf_with(src: &str, regex: RegexReader<'_>) -> Result<ParsedGrammar, GrammarError> {
    Parser::new(src, regex).parse()
}

impl Grammar {
    /// Parses GBNF text, discarding warnings (see [`parse_gbnf`]).
    pub fn from_gbnf(src: &str) -> Result<Grammar, GrammarError> {
        parse_gbnf(src).map(|p| p.grammar)
    }
}

/// A nonterminal during parsing: a user name or a fresh (desugared) one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ref {
    User(usize),
    Fresh(usize),
}

#[derive(Clone, Debug)]
enum PSym {
    T(Terminal),
    Nt(Ref),
}

struct Frame {
    alts: Vec<Vec<PSym>>,
    cur: Vec<PSym>,
    /// Start index in `cur` of the last complete item (what a quantifier
    /// applies to).
    last: Option<usize>,
    open: Pos,
}

impl Frame {
    fn new(open: Pos) -> Frame {
        Frame {
            alts: Vec::new(),
            cur: Vec::new(),
            last: None,
            open,
        }
    }
    fn finish(mut self) -> Vec<Vec<PSym>> {
        self.alts.push(self.cur);
        self.alts
    }
}

struct Parser<'a> {
    src: &'a str,
    regex: RegexReader<'a>,
    pos: usize,
    line: usize,
    col: usize,
    names: Vec<String>,
    by_name: HashMap<String, usize>,
    defined_at: Vec<Option<Pos>>,
    first_use: Vec<Option<Pos>>,
    /// Fresh nonterminals: name hint and alternatives.
    fresh: Vec<(String, Vec<Vec<PSym>>)>,
    /// Rules of user nonterminals, in definition order.
    rules: Vec<(usize, Vec<Vec<PSym>>)>,
    warnings: Vec<Warning>,
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

impl<'a> Parser<'a> {
    fn new(src: &'a str, regex: RegexReader<'a>) -> Self {
        Parser {
            src,
            regex,
            pos: 0,
            line: 1,
            col: 1,
            names: Vec::new(),
            by_name: HashMap::new(),
            defined_at: Vec::new(),
            first_use: Vec::new(),
            fresh: Vec::new(),
            rules: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn here(&self) -> Pos {
        Pos {
            line: self.line,
            column: self.col,
        }
    }

    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn err_at(pos: Pos, reason: impl Into<String>) -> GrammarError {
        GrammarError::Syntax {
            line: pos.line,
            column: pos.column,
            reason: reason.into(),
        }
    }

    fn err(&self, reason: impl Into<String>) -> GrammarError {
        Self::err_at(self.here(), reason)
    }

    /// Skips whitespace (including newlines) and `#` comments.
    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                self.bump();
            } else if c == '#' {
                while let Some(c) = self.peek() {
                    if c == '\n' {
                        break;
                    }
                    self.bump();
                }
            } else {
                break;
            }
        }
    }

    fn word(&mut self) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(is_word) {
            self.bump();
        }
        &self.src[start..self.pos]
    }

    /// Whether the input at the current position is `name ::=`.
    fn at_rule_head(&self) -> bool {
        let rest = &self.src[self.pos..];
        let n = rest.find(|c: char| !is_word(c)).unwrap_or(rest.len());
        if n == 0 {
            return false;
        }
        let mut after = &rest[n..];
        // XGrammar's rule attributes (`name[lazy] ::=`), refused by `parse`
        if let Some(attr) = after.strip_prefix('[') {
            match attr.find(']') {
                Some(i) if !attr[..i].contains('\n') => after = &attr[i + 1..],
                _ => return false,
            }
        }
        // whitespace and comments may sit between name and `::=`
        loop {
            let t = after.trim_start();
            if let Some(c) = t.strip_prefix('#') {
                after = c.find('\n').map_or("", |i| &c[i..]);
            } else {
                after = t;
                break;
            }
        }
        after.starts_with("::=")
    }

    fn user(&mut self, name: &str) -> usize {
        if let Some(&i) = self.by_name.get(name) {
            return i;
        }
        self.names.push(name.to_string());
        self.defined_at.push(None);
        self.first_use.push(None);
        self.by_name.insert(name.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }

    fn new_fresh(&mut self, hint: String, alts: Vec<Vec<PSym>>) -> PSym {
        self.fresh.push((hint, alts));
        PSym::Nt(Ref::Fresh(self.fresh.len() - 1))
    }

    fn parse(mut self) -> Result<ParsedGrammar, GrammarError> {
        loop {
            self.skip_ws();
            let Some(c) = self.peek() else { break };
            let head = self.here();
            if !is_word(c) {
                return Err(self.err(format!(
                    "expected a rule name, found `{}`",
                    c.escape_debug()
                )));
            }
            let name = self.word();
            if self.peek() == Some('[') {
                return Err(self.err(format!(
                    "rule attributes (`{name}[lazy]`, `{name}[max_chars=…]`: XGrammar's extensions) are not read"
                )));
            }
            self.skip_ws();
            if !self.src[self.pos..].starts_with("::=") {
                return Err(self.err(format!("expected `::=` after rule name `{name}`")));
            }
            for _ in 0..3 {
                self.bump();
            }
            let id = self.user(name);
            match self.defined_at[id] {
                Some(_) => self.warnings.push(Warning {
                    pos: head,
                    kind: WarningKind::DuplicateRule(name.to_string()),
                }),
                None => self.defined_at[id] = Some(head),
            }
            let alts = self.alternation(name)?;
            self.rules.push((id, alts));
        }
        self.build()
    }

    /// Parses the right-hand side of the rule `parent` up to the next rule
    /// head or the end of input.
    fn alternation(&mut self, parent: &str) -> Result<Vec<Vec<PSym>>, GrammarError> {
        let mut frames: Vec<Frame> = vec![Frame::new(self.here())];
        loop {
            self.skip_ws();
            let at = self.here();
            let Some(c) = self.peek() else { break };
            if is_word(c) && self.at_rule_head() {
                break;
            }
            let top = frames.len() - 1;
            match c {
                '|' => {
                    self.bump();
                    let f = &mut frames[top];
                    f.alts.push(std::mem::take(&mut f.cur));
                    f.last = None;
                }
                '(' => {
                    if frames.len() > MAX_NESTING {
                        return Err(GrammarError::TooDeep {
                            line: at.line,
                            column: at.column,
                            limit: MAX_NESTING,
                        });
                    }
                    self.bump();
                    frames.push(Frame::new(at));
                }
                ')' => {
                    if frames.len() == 1 {
                        return Err(self.err("unmatched `)`"));
                    }
                    self.bump();
                    let Some(done) = frames.pop() else {
                        unreachable!()
                    };
                    let mut alts = done.finish();
                    let f = frames.last_mut().expect("outer frame");
                    let start = f.cur.len();
                    if alts.len() == 1 {
                        // a single sequence is spliced in; a following
                        // quantifier applies to all of it
                        f.cur.append(&mut alts[0]);
                    } else {
                        let s = self.new_fresh(format!("{parent}-group"), alts);
                        f.cur.push(s);
                    }
                    f.last = Some(start);
                }
                '*' | '+' | '?' | '{' => {
                    let (lo, hi, suffix) = self.quantifier()?;
                    let f = &mut frames[top];
                    let Some(start) = f.last else {
                        return Err(Self::err_at(
                            at,
                            format!("quantifier `{c}` has nothing to repeat"),
                        ));
                    };
                    let item: Vec<PSym> = f.cur.drain(start..).collect();
                    let s = self.repeat(parent, suffix, item, lo, hi);
                    let f = &mut frames[top];
                    f.cur.push(s);
                    f.last = Some(f.cur.len() - 1);
                }
                '"' => {
                    let bytes = self.string()?;
                    let f = &mut frames[top];
                    f.last = Some(f.cur.len());
                    if !bytes.is_empty() {
                        f.cur.push(PSym::T(Terminal::Literal(bytes)));
                    }
                }
                '[' => {
                    let cls = self.class()?;
                    let f = &mut frames[top];
                    f.last = Some(f.cur.len());
                    f.cur.push(PSym::T(Terminal::Class(cls)));
                }
                '.' => {
                    self.bump();
                    let f = &mut frames[top];
                    f.last = Some(f.cur.len());
                    f.cur
                        .push(PSym::T(Terminal::Class(CharClass::new([], true))));
                }
                '/' => {
                    let re = self.regex()?;
                    let f = &mut frames[top];
                    f.last = Some(f.cur.len());
                    f.cur.push(PSym::T(Terminal::Regex(re)));
                }
                '&' => {
                    // `/a/ & /b/`: the intersection terminal, as `Display` writes it
                    self.bump();
                    self.skip_ws();
                    if self.peek() != Some('/') {
                        return Err(self.err("`&` joins two regex terminals: `/a/ & /b/`"));
                    }
                    let b = self.regex()?;
                    let f = &mut frames[top];
                    let just_read = f.last.is_some() && f.last == f.cur.len().checked_sub(1);
                    match f.cur.last_mut() {
                        Some(PSym::T(t @ Terminal::Regex(_))) if just_read => {
                            let Terminal::Regex(a) =
                                std::mem::replace(t, Terminal::Literal(Vec::new()))
                            else {
                                unreachable!("matched a regex")
                            };
                            *t = Terminal::And(a, b);
                        }
                        _ => {
                            return Err(Self::err_at(
                                at,
                                "`&` joins two regex terminals: `/a/ & /b/`",
                            ))
                        }
                    }
                }
                op @ ('-' | '~') => {
                    // `/a/ - "x"`: the regex without one string
                    // (`Terminal::Except`); `/a/ ~ "x"`: its strings without
                    // `x` inside (`Terminal::Avoid`); as `Display` writes them
                    let usage = if op == '-' {
                        "`-` takes a string literal from a regex terminal: `/a/ - \"x\"`"
                    } else {
                        "`~` takes a string literal from a regex terminal: `/a/ ~ \"x\"`"
                    };
                    self.bump();
                    self.skip_ws();
                    if self.peek() != Some('"') {
                        return Err(self.err(usage));
                    }
                    let string = self.string()?;
                    let f = &mut frames[top];
                    let just_read = f.last.is_some() && f.last == f.cur.len().checked_sub(1);
                    let Some(PSym::T(t)) = f.cur.last_mut().filter(|_| just_read) else {
                        return Err(Self::err_at(at, usage));
                    };
                    let (re, mut strings) =
                        match (op, std::mem::replace(t, Terminal::Literal(Vec::new()))) {
                            (_, Terminal::Regex(re)) => (re, Vec::new()),
                            ('-', Terminal::Except(re, names)) => (re, names.to_vec()),
                            ('~', Terminal::Avoid(re, strings)) => (re, strings.to_vec()),
                            (_, other) => {
                                *t = other;
                                return Err(Self::err_at(at, usage));
                            }
                        };
                    strings.push(string);
                    *t = if op == '-' {
                        Terminal::except(re, strings)
                    } else {
                        Terminal::avoid(re, strings)
                    };
                }
                c if is_word(c) => {
                    let name = self.word();
                    if self.peek() == Some('(') && macros::MACROS.contains(&name) {
                        let s = self.macro_call(name, at, parent, self.regex)?;
                        let f = &mut frames[top];
                        f.last = Some(f.cur.len());
                        f.cur.push(s);
                        continue;
                    }
                    let id = self.user(name);
                    if self.first_use[id].is_none() {
                        self.first_use[id] = Some(at);
                    }
                    let f = &mut frames[top];
                    f.last = Some(f.cur.len());
                    f.cur.push(PSym::Nt(Ref::User(id)));
                }
                c => return Err(self.err(format!("unexpected character `{}`", c.escape_debug()))),
            }
        }
        if frames.len() > 1 {
            let open = frames[frames.len() - 1].open;
            return Err(self.err(format!("unclosed `(` opened at {open}")));
        }
        Ok(frames.pop().expect("top frame").finish())
    }

    /// Reads a quantifier: `(min, max, name suffix)`, `max = None` for ∞.
    fn quantifier(&mut self) -> Result<(u32, Option<u32>, &'static str), GrammarError> {
        let at = self.here();
        match self.bump() {
            Some('*') => return Ok((0, None, "star")),
            Some('+') => return Ok((1, None, "plus")),
            Some('?') => return Ok((0, Some(1), "opt")),
            _ => {}
        }
        // `{m}`, `{m,}`, `{m,n}`
        let number = |p: &mut Self| -> Result<Option<u32>, GrammarError> {
            p.skip_ws();
            let np = p.here();
            let start = p.pos;
            while p.peek().is_some_and(|c| c.is_ascii_digit()) {
                p.bump();
            }
            let digits = &p.src[start..p.pos];
            if digits.is_empty() {
                return Ok(None);
            }
            match digits.parse::<u32>() {
                Ok(v) if v <= MAX_REPETITION => Ok(Some(v)),
                _ => Err(Self::err_at(
                    np,
                    format!("repetition bound {digits} exceeds {MAX_REPETITION}"),
                )),
            }
        };
        let Some(lo) = number(self)? else {
            return Err(self.err("expected a number in repetition `{m,n}`"));
        };
        self.skip_ws();
        let hi = match self.peek() {
            Some('}') => Some(lo),
            Some(',') => {
                self.bump();
                number(self)?
            }
            _ => return Err(self.err("expected `,` or `}` in repetition")),
        };
        self.skip_ws();
        if self.peek() != Some('}') {
            return Err(self.err("expected `}` to close repetition"));
        }
        self.bump();
        if let Some(h) = hi {
            if h < lo {
                return Err(Self::err_at(
                    at,
                    format!("bad repetition bounds {{{lo},{h}}}: max < min"),
                ));
            }
        }
        Ok((lo, hi, "rep"))
    }

    /// Desugars `item{lo,hi}` into fresh nonterminals and returns the symbol
    /// that stands for it.
    fn repeat(
        &mut self,
        parent: &str,
        suffix: &str,
        item: Vec<PSym>,
        lo: u32,
        hi: Option<u32>,
    ) -> PSym {
        let name = format!("{parent}-{suffix}");
        let this = self.fresh.len();
        let me = PSym::Nt(Ref::Fresh(this));
        match (lo, hi) {
            (0, None) => {
                let mut rec = vec![me.clone()];
                rec.extend(item);
                self.new_fresh(name, vec![vec![], rec])
            }
            (1, None) => {
                let mut rec = vec![me.clone()];
                rec.extend(item.iter().cloned());
                self.new_fresh(name, vec![item, rec])
            }
            (0, Some(1)) => self.new_fresh(name, vec![vec![], item]),
            _ => {
                // item^lo followed by a tail: `item*` or up to hi-lo optional items
                let mut seq: Vec<PSym> = Vec::new();
                for _ in 0..lo {
                    seq.extend(item.iter().cloned());
                }
                match hi {
                    None => {
                        let tail = self.repeat(parent, "star", item, 0, None);
                        seq.push(tail);
                    }
                    Some(h) if h > lo => {
                        // U_1 ::= "" | item ;  U_k ::= "" | item U_{k-1}
                        let mut prev: Option<PSym> = None;
                        for _ in lo..h {
                            let mut alt = item.clone();
                            alt.extend(prev.take());
                            prev = Some(
                                self.new_fresh(format!("{parent}-{suffix}-opt"), vec![vec![], alt]),
                            );
                        }
                        seq.extend(prev);
                    }
                    Some(_) => {}
                }
                self.new_fresh(name, vec![seq])
            }
        }
    }

    fn hex(&mut self, n: usize, what: &str) -> Result<u32, GrammarError> {
        let at = self.here();
        let mut v = 0u32;
        for _ in 0..n {
            match self.peek().and_then(|c| c.to_digit(16)) {
                Some(d) => {
                    self.bump();
                    v = v * 16 + d;
                }
                None => {
                    return Err(Self::err_at(
                        at,
                        format!("expected {n} hex digits after `{what}`"),
                    ))
                }
            }
        }
        Ok(v)
    }

    /// An escape after the backslash (already consumed at `at`).
    /// Returns a raw byte for `\xHH` (strings) or a char.
    fn escape(&mut self, at: Pos, in_class: bool) -> Result<Esc, GrammarError> {
        let Some(c) = self.bump() else {
            return Err(Self::err_at(at, "unterminated escape"));
        };
        let scalar = |v: u32| -> Result<Esc, GrammarError> {
            char::from_u32(v).map(Esc::Char).ok_or_else(|| {
                Self::err_at(at, format!("\\u{{{v:X}}} is not a Unicode scalar value"))
            })
        };
        match c {
            'n' => Ok(Esc::Char('\n')),
            'r' => Ok(Esc::Char('\r')),
            't' => Ok(Esc::Char('\t')),
            'a' => Ok(Esc::Char('\u{7}')),
            'b' => Ok(Esc::Char('\u{8}')),
            'f' => Ok(Esc::Char('\u{c}')),
            'v' => Ok(Esc::Char('\u{b}')),
            'e' => Ok(Esc::Char('\u{1b}')),
            '0' => Ok(Esc::Char('\0')),
            'x' => {
                let v = self.hex(2, "\\x")?;
                if in_class || v < 0x80 {
                    scalar(v)
                } else {
                    Ok(Esc::Byte(v as u8))
                }
            }
            'u' => {
                let v = self.hex(4, "\\u")?;
                scalar(v)
            }
            'U' => {
                let v = self.hex(8, "\\U")?;
                scalar(v)
            }
            c if c.is_ascii_punctuation() || c == ' ' => Ok(Esc::Char(c)),
            c => Err(Self::err_at(
                at,
                format!("unknown escape `\\{}`", c.escape_debug()),
            )),
        }
    }

    fn string(&mut self) -> Result<Vec<u8>, GrammarError> {
        let open = self.here();
        self.bump();
        let mut out = Vec::new();
        loop {
            let at = self.here();
            match self.bump() {
                None => return Err(Self::err_at(open, "unterminated string literal")),
                Some('"') => return Ok(out),
                Some('\\') => match self.escape(at, false)? {
                    Esc::Byte(b) => out.push(b),
                    Esc::Char(c) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                },
                Some('\n') => {
                    return Err(Self::err_at(
                        open,
                        "unterminated string literal (newline inside)",
                    ))
                }
                Some(c) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            }
        }
    }

    fn class_char(&mut self, open: Pos) -> Result<char, GrammarError> {
        let at = self.here();
        match self.bump() {
            None | Some('\n') => Err(Self::err_at(open, "unterminated character class")),
            Some('\\') => match self.escape(at, true)? {
                Esc::Char(c) => Ok(c),
                Esc::Byte(_) => unreachable!("classes read \\x as a code point"),
            },
            Some(c) => Ok(c),
        }
    }

    fn class(&mut self) -> Result<CharClass, GrammarError> {
        let open = self.here();
        self.bump();
        let negated = if self.peek() == Some('^') {
            self.bump();
            true
        } else {
            false
        };
        let mut ranges = Vec::new();
        loop {
            match self.peek() {
                None | Some('\n') => {
                    return Err(Self::err_at(open, "unterminated character class"))
                }
                Some(']') => {
                    self.bump();
                    break;
                }
                _ => {}
            }
            let at = self.here();
            let a = self.class_char(open)?;
            let rest = &self.src[self.pos..];
            if rest.starts_with('-') && !rest.starts_with("-]") {
                self.bump();
                let b = self.class_char(open)?;
                if b < a {
                    return Err(Self::err_at(
                        at,
                        format!(
                            "bad class range `{}-{}`: end before start",
                            a.escape_debug(),
                            b.escape_debug()
                        ),
                    ));
                }
                ranges.push((a, b));
            } else {
                ranges.push((a, a));
            }
        }
        let cls = CharClass::new(ranges, negated);
        if cls.is_empty() {
            return Err(Self::err_at(
                open,
                "empty character class (it matches no character)",
            ));
        }
        Ok(cls)
    }

    fn regex(&mut self) -> Result<String, GrammarError> {
        let open = self.here();
        self.bump();
        let mut re = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => return Err(Self::err_at(open, "unterminated regex `/.../`")),
                Some('/') => break,
                Some('\\') => match self.bump() {
                    Some('/') => re.push('/'),
                    Some(c) => {
                        re.push('\\');
                        re.push(c);
                    }
                    None => return Err(Self::err_at(open, "unterminated regex `/.../`")),
                },
                Some(c) => re.push(c),
            }
        }
        if let Err(e) = regex_syntax::ParserBuilder::new()
            .unicode(true)
            .utf8(true)
            .build()
            .parse(&re)
        {
            let (offset, reason) = match &e {
                regex_syntax::Error::Parse(p) => (p.span().start.offset, p.kind().to_string()),
                regex_syntax::Error::Translate(t) => (t.span().start.offset, t.kind().to_string()),
                other => (0, other.to_string()),
            };
            let column = open.column + 1 + re.get(..offset).map_or(0, |s| s.chars().count());
            return Err(GrammarError::Regex {
                regex: re,
                line: open.line,
                column,
                offset,
                reason,
            });
        }
        Ok(re)
    }

    fn build(self) -> Result<ParsedGrammar, GrammarError> {
        if self.rules.is_empty() {
            return Err(GrammarError::Syntax {
                line: 1,
                column: 1,
                reason: "the grammar has no rules".into(),
            });
        }
        for (i, d) in self.defined_at.iter().enumerate() {
            if d.is_none() {
                let p = self.first_use[i].unwrap_or(Pos { line: 1, column: 1 });
                return Err(GrammarError::UndefinedNonterminal {
                    name: self.names[i].clone(),
                    line: p.line,
                    column: p.column,
                });
            }
        }
        let mut g = Grammar::new();
        // user names first so fresh names never steal them
        // in order of first definition, so that printing a parsed grammar
        // lists its rules in the source's order
        let mut user_ids: Vec<NtId> = vec![NtId(u32::MAX); self.names.len()];
        for (lhs, _) in &self.rules {
            if user_ids[*lhs] == NtId(u32::MAX) {
                user_ids[*lhs] = g.add_nonterminal(&self.names[*lhs]);
            }
        }
        let fresh_ids: Vec<NtId> = self
            .fresh
            .iter()
            .map(|(n, _)| g.add_nonterminal(n))
            .collect();
        let conv = |s: &PSym| match s {
            PSym::T(t) => Symbol::T(t.clone()),
            PSym::Nt(Ref::User(i)) => Symbol::Nt(user_ids[*i]),
            PSym::Nt(Ref::Fresh(i)) => Symbol::Nt(fresh_ids[*i]),
        };
        for (lhs, alts) in &self.rules {
            for alt in alts {
                g.add_rule(user_ids[*lhs], alt.iter().map(conv).collect());
            }
        }
        for (i, (_, alts)) in self.fresh.iter().enumerate() {
            for alt in alts {
                g.add_rule(fresh_ids[i], alt.iter().map(conv).collect());
            }
        }
        let first = user_ids[self.rules[0].0];
        g.start = self.by_name.get("root").map_or(first, |&i| user_ids[i]);

        // unused user nonterminals
        let reach = reachable(&g);
        let mut warnings = self.warnings;
        for (i, id) in user_ids.iter().enumerate() {
            if !reach[id.index()] {
                let pos = self.defined_at[i].unwrap_or(Pos { line: 1, column: 1 });
                warnings.push(Warning {
                    pos,
                    kind: WarningKind::UnusedNonterminal(self.names[i].clone()),
                });
            }
        }
        let named = user_ids.iter().filter(|&&id| id != NtId(u32::MAX)).count();
        Ok(ParsedGrammar {
            grammar: g,
            warnings,
            named,
        })
    }
}

enum Esc {
    Char(char),
    Byte(u8),
}

/// Nonterminals reachable from the start symbol (by index).
pub(crate) fn reachable(g: &Grammar) -> Vec<bool> {
    let n = g.num_nonterminals();
    let mut by_lhs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, r) in g.rules.iter().enumerate() {
        if r.lhs.index() < n {
            by_lhs[r.lhs.index()].push(i);
        }
    }
    let mut seen = vec![false; n];
    let mut stack = Vec::new();
    if g.start.index() < n {
        seen[g.start.index()] = true;
        stack.push(g.start.index());
    }
    while let Some(a) = stack.pop() {
        for &ri in &by_lhs[a] {
            for s in &g.rules[ri].rhs {
                if let Symbol::Nt(b) = s {
                    if b.index() < n && !seen[b.index()] {
                        seen[b.index()] = true;
                        stack.push(b.index());
                    }
                }
            }
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn syntax_err(src: &str) -> (usize, usize, String) {
        match parse_gbnf(src) {
            Err(GrammarError::Syntax {
                line,
                column,
                reason,
            }) => (line, column, reason),
            other => panic!("expected a syntax error for {src:?}, got {other:?}"),
        }
    }

    #[test]
    fn parses_and_desugars() {
        let p = parse_gbnf(
            "# a comment\nroot ::= item* \"!\"   # trailing\nitem ::= [a-z]+ | \"(\" item? \")\" | x{2,3}\nx ::= \"x\"\n",
        )
        .unwrap();
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert_eq!(
            p.grammar.to_string(),
            "root ::= root-star \"!\"\n\
             item ::= item-plus | \"(\" item-opt \")\" | item-rep\n\
             x ::= \"x\"\n\
             root-star ::= \"\" | root-star item\n\
             item-plus ::= [a-z] | item-plus [a-z]\n\
             item-opt ::= \"\" | item\n\
             item-rep-opt ::= \"\" | x\n\
             item-rep ::= x x item-rep-opt\n"
        );
    }

    #[test]
    fn named_rules_come_first_in_definition_order() {
        // `b` is used before it is defined, `a` is defined twice
        let p =
            parse_gbnf("root ::= b* a\na ::= \"x\"\nb ::= (\"y\" | a)?\na ::= \"z\"\n").unwrap();
        assert_eq!(p.named, 3);
        let names: Vec<&str> = (0..p.named)
            .map(|i| p.grammar.name(NtId(i as u32)))
            .collect();
        assert_eq!(names, ["root", "a", "b"]);
        assert!(p.grammar.to_string().lines().count() > p.named);
    }

    #[test]
    fn start_is_root_or_first() {
        let g = Grammar::from_gbnf("a ::= \"x\"\nroot ::= a").unwrap();
        assert_eq!(g.name(g.start), "root");
        let g = Grammar::from_gbnf("b ::= a\na ::= \"x\"").unwrap();
        assert_eq!(g.name(g.start), "b");
    }

    #[test]
    fn multi_line_rules_and_groups() {
        let g = Grammar::from_gbnf(
            "root ::= \"a\"\n  | \"b\" (\n \"c\"\n | \"d\" )\n   \"e\"\nother ::= root",
        )
        .unwrap();
        assert_eq!(
            g.to_string(),
            "root ::= \"a\" | \"b\" root-group \"e\"\nother ::= root\nroot-group ::= \"c\" | \"d\"\n"
        );
        // a single-sequence group is spliced, and a quantifier takes all of it
        let g = Grammar::from_gbnf("root ::= (\"a\" \"b\")* | ()").unwrap();
        assert_eq!(
            g.to_string(),
            "root ::= root-star | \"\"\nroot-star ::= \"\" | root-star \"a\" \"b\"\n"
        );
    }

    #[test]
    fn c_escapes() {
        let g = Grammar::from_gbnf(r#"root ::= "\a\b\f\v\e\0\?\'" [\a\e]"#).unwrap();
        assert_eq!(
            g.rules[0].rhs[0],
            Symbol::T(Terminal::Literal(b"\x07\x08\x0c\x0b\x1b\0?'".to_vec()))
        );
        assert_eq!(
            g.rules[0].rhs[1],
            Symbol::T(Terminal::Class(CharClass::new(
                [('\u{7}', '\u{7}'), ('\u{1b}', '\u{1b}')],
                false
            )))
        );
    }

    #[test]
    fn escapes_and_unicode() {
        let g = Grammar::from_gbnf(
            r#"root ::= "\n\r\t\\\"\x41\u00e9\U0001F600é" [\]\-\x00-\x1f^] [^"\\] . "" "\xff""#,
        )
        .unwrap();
        let rhs = &g.rules[0].rhs;
        assert_eq!(
            rhs[0],
            Symbol::T(Terminal::Literal("\n\r\t\\\"Aé😀é".as_bytes().to_vec()))
        );
        assert_eq!(
            rhs[1],
            Symbol::T(Terminal::Class(CharClass::new(
                [(']', ']'), ('-', '-'), ('\0', '\x1f'), ('^', '^')],
                false
            )))
        );
        assert_eq!(
            rhs[2],
            Symbol::T(Terminal::Class(CharClass::new(
                [('"', '"'), ('\\', '\\')],
                true
            )))
        );
        assert_eq!(rhs[3], Symbol::T(Terminal::Class(CharClass::new([], true))));
        assert_eq!(rhs[4], Symbol::T(Terminal::Literal(vec![0xFF])));
        assert_eq!(rhs.len(), 5);
    }

    #[test]
    fn regex_terminals() {
        let g = Grammar::from_gbnf(r"root ::= /[a-z]+\/\d/ /x/").unwrap();
        assert_eq!(
            g.rules[0].rhs[0],
            Symbol::T(Terminal::Regex(r"[a-z]+/\d".into()))
        );
        assert_eq!(g.to_string(), "root ::= /[a-z]+\\/\\d/ /x/\n");
        match parse_gbnf("root ::=\n  \"a\" /ab(c/") {
            Err(GrammarError::Regex {
                line,
                column,
                offset,
                ..
            }) => {
                assert_eq!((line, column, offset), (2, 10, 2));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn warnings() {
        let p = parse_gbnf("root ::= a\na ::= \"x\"\nb ::= \"y\"\na ::= \"z\"").unwrap();
        assert_eq!(
            p.warnings,
            vec![
                Warning {
                    pos: Pos { line: 4, column: 1 },
                    kind: WarningKind::DuplicateRule("a".into())
                },
                Warning {
                    pos: Pos { line: 3, column: 1 },
                    kind: WarningKind::UnusedNonterminal("b".into())
                },
            ]
        );
        assert_eq!(
            p.grammar
                .rules_of(p.grammar.nonterminal("a").unwrap())
                .count(),
            2
        );
        assert_eq!(
            p.warnings[1].to_string(),
            "3:1: nonterminal `b` is not reachable from the start symbol"
        );
    }

    #[test]
    fn error_positions() {
        assert_eq!(
            syntax_err("root ::= \"a\" @"),
            (1, 14, "unexpected character `@`".into())
        );
        assert_eq!(
            syntax_err("root ::= \"a\nb\""),
            (1, 10, "unterminated string literal (newline inside)".into())
        );
        assert_eq!(
            syntax_err("root ::= \"abc"),
            (1, 10, "unterminated string literal".into())
        );
        assert_eq!(
            syntax_err("root ::= [a-z"),
            (1, 10, "unterminated character class".into())
        );
        assert_eq!(
            syntax_err("root ::= [z-a]"),
            (1, 11, "bad class range `z-a`: end before start".into())
        );
        assert_eq!(
            syntax_err("root ::= []"),
            (
                1,
                10,
                "empty character class (it matches no character)".into()
            )
        );
        assert_eq!(
            syntax_err("root \"a\""),
            (1, 6, "expected `::=` after rule name `root`".into())
        );
        assert_eq!(
            syntax_err("root ::= \"a\"\n\nfoo ::= \"b\"\n\"c\" ::= x"),
            (4, 5, "unexpected character `:`".into())
        );
        assert_eq!(
            syntax_err("::= x"),
            (1, 1, "expected a rule name, found `:`".into())
        );
        assert_eq!(
            syntax_err("root ::= \"a\"{3,2}"),
            (1, 13, "bad repetition bounds {3,2}: max < min".into())
        );
        assert_eq!(
            syntax_err("root ::= \"a\"{,2}"),
            (1, 14, "expected a number in repetition `{m,n}`".into())
        );
        assert_eq!(
            syntax_err("root ::= \"a\"{99999999}"),
            (1, 14, "repetition bound 99999999 exceeds 10000".into())
        );
        assert_eq!(
            syntax_err("root ::= * \"a\""),
            (1, 10, "quantifier `*` has nothing to repeat".into())
        );
        assert_eq!(
            syntax_err("root ::= ( \"a\"\n"),
            (2, 1, "unclosed `(` opened at 1:10".into())
        );
        assert_eq!(
            syntax_err("root ::= \"a\" )"),
            (1, 14, "unmatched `)`".into())
        );
        assert_eq!(
            syntax_err("root ::= \"\\q\""),
            (1, 11, "unknown escape `\\q`".into())
        );
        assert_eq!(
            syntax_err("root ::= \"\\u12\""),
            (1, 13, "expected 4 hex digits after `\\u`".into())
        );
        assert_eq!(
            syntax_err("root ::= [\\uD800]"),
            (1, 11, "\\u{D800} is not a Unicode scalar value".into())
        );
        assert_eq!(
            syntax_err("  # only a comment\n"),
            (1, 1, "the grammar has no rules".into())
        );
        assert_eq!(
            parse_gbnf("root ::= a\n  b\nb ::= \"x\""),
            Err(GrammarError::UndefinedNonterminal {
                name: "a".into(),
                line: 1,
                column: 10
            })
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let n = 100_000;
        let src = format!("root ::= {}\"a\"{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(
            parse_gbnf(&src),
            Err(GrammarError::TooDeep {
                line: 1,
                column: 10 + MAX_NESTING,
                limit: MAX_NESTING
            })
        );
        let n = MAX_NESTING;
        let src = format!("root ::= {}\"a\" | \"b\"{}", "(".repeat(n), ")".repeat(n));
        let g = Grammar::from_gbnf(&src).unwrap();
        assert_eq!(
            g.to_string(),
            "root ::= root-group\nroot-group ::= \"a\" | \"b\"\n"
        );
    }

    #[test]
    fn million_alternatives() {
        let mut src = String::from("root ::= \"x\"");
        for _ in 0..1_000_000 {
            src.push_str(" | \"a\"");
        }
        let g = Grammar::from_gbnf(&src).unwrap();
        assert_eq!(g.rules.len(), 1_000_001);
    }
}

#[cfg(test)]
mod roundtrip {
    use crate::testutil::{all_strings, random_grammar};
    use crate::{remove_useless, Grammar, Recognizer};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// `parse_gbnf(g.to_string())` has the same language as `g` (for
        /// grammars whose every nonterminal has rules, which printing needs).
        #[test]
        fn display_then_parse_keeps_the_language(g in random_grammar()) {
            let Ok(g) = remove_useless(&g) else { return Ok(()) };
            let text = g.to_string();
            let back = Grammar::from_gbnf(&text).unwrap();
            // ids follow definition order, so the text is a fixpoint from
            // the second round on
            let again = Grammar::from_gbnf(&back.to_string()).unwrap();
            prop_assert_eq!(again.to_string(), back.to_string());
            let (r0, r1) = (Recognizer::new(&g).unwrap(), Recognizer::new(&back).unwrap());
            for w in all_strings(6) {
                prop_assert_eq!(r0.recognizes(&w), r1.recognizes(&w), "{}", text);
            }
        }
    }

    #[test]
    fn repetition_bounds_mean_what_they_say() {
        let g = Grammar::from_gbnf(
            "root ::= \"a\"{2,} \"b\"{0,2} (\"c\" \"d\"){3} \"e\"{1,1} \"f\"{0}",
        )
        .unwrap();
        let r = Recognizer::new(&g).unwrap();
        for a in 0..5 {
            for b in 0..4 {
                for c in 2..5 {
                    let w = format!("{}{}{}e", "a".repeat(a), "b".repeat(b), "cd".repeat(c));
                    assert_eq!(
                        r.recognizes(w.as_bytes()),
                        a >= 2 && b <= 2 && c == 3,
                        "{w}"
                    );
                }
            }
        }
        assert!(!r.recognizes(b"aacdcdcdef"));
    }

    #[test]
    fn unusual_terminals_round_trip() {
        use crate::ir::{CharClass, Symbol, Terminal};
        let mut g = Grammar::new();
        let s = g.add_nonterminal("root");
        let x = g.add_nonterminal("x-1");
        let lits: Vec<Vec<u8>> = vec![
            b"\x00\x01\x7f\xff\xc3".to_vec(),
            "tab\tnl\nquote\"bs\\ é 😀 \u{2028} \u{1F000}"
                .as_bytes()
                .to_vec(),
        ];
        for l in lits {
            g.add_rule(s, vec![Symbol::T(Terminal::Literal(l)), Symbol::Nt(x)]);
        }
        let cls = CharClass::new(
            [
                ('\0', ' '),
                ('-', '-'),
                ('[', '^'),
                ('\u{2028}', '\u{2029}'),
                ('\u{1F000}', '\u{10FFFF}'),
            ],
            false,
        );
        g.add_rule(x, vec![Symbol::T(Terminal::Class(cls))]);
        g.add_rule(
            x,
            vec![Symbol::T(Terminal::Class(CharClass::new(
                [('a', 'a')],
                true,
            )))],
        );
        g.add_rule(
            x,
            vec![Symbol::T(Terminal::Regex(r#"[^/"]+|a\d/b"#.into()))],
        );
        g.add_rule(
            x,
            vec![
                Symbol::T(Terminal::And(r"[a-z/]+".into(), r"(?s:.){0,5}".into())),
                Symbol::T(Terminal::Regex("b".into())),
            ],
        );
        g.add_rule(
            x,
            vec![Symbol::T(Terminal::except(
                r#""[a-z/]*""#.into(),
                [
                    b"\"a/b\"".to_vec(),
                    Vec::new(),
                    "\"é\\\"\n\"".as_bytes().to_vec(),
                ],
            ))],
        );
        g.add_rule(x, vec![]);
        g.start = s;
        let back = Grammar::from_gbnf(&g.to_string()).unwrap();
        assert_eq!(back, g, "{g}");
    }
}
