//! Lark grammars (the dialect of llguidance and XGrammar's
//! `Grammar.from_lark`), read into the grammar IR.
//!
//! What is read:
//! * Rules `name: …` and terminals `NAME: …` (a terminal's name starts with
//!   an upper-case letter after an optional `_`), the `?`, `!` and `_`
//!   prefixes (which change Lark's tree, not the language), aliases
//!   (`-> name`), continuation lines that begin with `|`, and `//` and `#`
//!   comments. `start` is the start symbol.
//! * Expressions: sequences, `|`, `( … )`, `[ … ]` (optional), `?`, `*`, `+`,
//!   `~ n`, `~ n..m`, `{n}`, `{n,m}`, `{n,}`, `{,m}`, strings (`"…"` with JSON's escapes, `"…"i` folding
//!   ASCII letters), character ranges (`"a".."z"`), regexes (`/…/` with the
//!   flags `i` and `s`; `u` changes nothing here),
//!   `@name` (a named grammar the caller supplies) and
//!   `%json { schema }`, a JSON Schema's grammar (the caller compiles it:
//!   this crate knows no JSON Schema).
//! * `%import common.NAME`, `%import common (A, B)`, `%import common.A -> B`
//!   for Lark's `common` terminals; `%ignore X` (a terminal, a string or a
//!   regex): any number of `X` between two items of a rule and after the
//!   whole text, and before it too under `%grammar_options
//!   {"allow_initial_skip": true}`.
//!
//! Semantics: Lark's lexer picks one tokenisation; the grammar here is the
//! context-free language of the rules, with terminals as sub-grammars (so
//! `start: "'foo'" /a+/ | STRING /b+/` with `STRING: /'[^']*'/` accepts
//! `'foo'bb`, as XGrammar does). A terminal that names a rule is an error,
//! as in Lark, and so is a cycle of terminals. Refused with a clear error,
//! as XGrammar refuses them: priorities (`NAME.2:`), templates,
//! parametric grammars, `&`, complements, the regex flags `m`, `x`, `l`,
//! `%declare`, `%override`, imports from other files. Refused because the
//! IR has no counterpart (XGrammar's extensions): rule attributes
//! (`name[lazy]`, `[suffix=…]`, `[max_tokens=…]`, captures, temperatures),
//! special tokens (`<…>`, `<[id]>`), `%regex {…}` and nested `%lark {…}`.
//!
//! Errors are [`GrammarError::Syntax`] with the Lark text's line and column
//! (1-based), reading `Lark error at line L, column C: …`.

use std::collections::{BTreeMap, HashMap};

use crate::error::GrammarError;
use crate::ir::{Grammar, NtId};

/// Lark's `common.lark` terminals, as GBNF right-hand sides.
const COMMON: &[(&str, &str)] = &[
    ("DIGIT", "[0-9]"),
    ("HEXDIGIT", "[a-fA-F0-9]"),
    ("INT", "/[0-9]+/"),
    ("SIGNED_INT", "/[+-]?[0-9]+/"),
    ("DECIMAL", r"/[0-9]+\.[0-9]*|\.[0-9]+/"),
    ("_EXP", "/[eE][+-]?[0-9]+/"),
    (
        "FLOAT",
        r"/[0-9]+[eE][+-]?[0-9]+|([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?/",
    ),
    (
        "SIGNED_FLOAT",
        r"/[+-]?([0-9]+[eE][+-]?[0-9]+|([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)/",
    ),
    (
        "NUMBER",
        r"/[0-9]+[eE][+-]?[0-9]+|([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+/",
    ),
    (
        "SIGNED_NUMBER",
        r"/[+-]?([0-9]+[eE][+-]?[0-9]+|([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+)/",
    ),
    ("ESCAPED_STRING", r#"/"([^"\\\n]|\\[^\n])*"/"#),
    ("LCASE_LETTER", "[a-z]"),
    ("UCASE_LETTER", "[A-Z]"),
    ("LETTER", "[a-zA-Z]"),
    ("WORD", "/[a-zA-Z]+/"),
    ("CNAME", "/[_a-zA-Z][_a-zA-Z0-9]*/"),
    ("WS_INLINE", r"/[ \t]+/"),
    ("WS", r"/[ \t\f\r\n]+/"),
    ("CR", r#""\r""#),
    ("LF", r#""\n""#),
    ("NEWLINE", r"/(\r?\n)+/"),
    ("SH_COMMENT", r"/#[^\n]*/"),
    ("CPP_COMMENT", r"/\/\/[^\n]*/"),
    ("C_COMMENT", r"/\/\*([^*]|\*+[^*\/])*\*+\//"),
    ("SQL_COMMENT", r"/--[^\n]*/"),
];

/// A grammar the Lark text refers to and the caller supplies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Embed<'a> {
    /// `%json { … }`: the schema's JSON text.
    Json(&'a str),
    /// `@name`: a named grammar (XGrammar's `named_grammars`).
    Named(&'a str),
}

/// A Lark grammar as IR; `resolve` supplies the grammar of each `%json`
/// schema and `@name` reference, or says why not.
pub fn from_lark(
    src: &str,
    resolve: &mut dyn FnMut(Embed<'_>) -> Result<Grammar, String>,
) -> Result<Grammar, GrammarError> {
    let toks = lex(src)?;
    let mut p = Parser {
        toks,
        i: 0,
        out: String::new(),
        defs: BTreeMap::new(),
        refs: Vec::new(),
        cur: String::new(),
        imports: HashMap::new(),
        ignores: Vec::new(),
        jsons: Vec::new(),
        initial_skip: false,
    };
    p.program()?;
    p.finish(resolve)
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Name(String),
    Str(String, bool),
    Regex(String, String),
    Num(u32),
    Directive(String),
    Json(String),
    Named(String),
    /// `{n}`, `{n,m}`, `{n,}`, `{,m}`: the text between the braces.
    Rep(String),
    Punct(&'static str),
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
    column: usize,
    /// The first token of its line.
    line_start: bool,
}

fn err(line: usize, column: usize, reason: impl Into<String>) -> GrammarError {
    GrammarError::Syntax {
        line,
        column,
        reason: format!(
            "Lark error at line {line}, column {column}: {}",
            reason.into()
        ),
    }
}

fn lex(src: &str) -> Result<Vec<Token>, GrammarError> {
    let chars: Vec<char> = src.chars().collect();
    let (mut i, mut line, mut col) = (0usize, 1usize, 1usize);
    let mut out: Vec<Token> = Vec::new();
    let mut line_start = true;
    let advance = |i: &mut usize, line: &mut usize, col: &mut usize, n: usize| {
        for _ in 0..n {
            if chars.get(*i) == Some(&'\n') {
                *line += 1;
                *col = 1;
            } else {
                *col += 1;
            }
            *i += 1;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line_start = true;
            advance(&mut i, &mut line, &mut col, 1);
            continue;
        }
        if c.is_whitespace() {
            advance(&mut i, &mut line, &mut col, 1);
            continue;
        }
        if c == '#' || (c == '/' && chars.get(i + 1) == Some(&'/')) {
            while i < chars.len() && chars[i] != '\n' {
                advance(&mut i, &mut line, &mut col, 1);
            }
            continue;
        }
        let (l0, c0) = (line, col);
        let start = i;
        let tok =
            match c {
                '"' => {
                    let mut s = String::new();
                    let mut k = i + 1;
                    loop {
                        match chars.get(k) {
                            None | Some('\n') => {
                                return Err(err(l0, c0, "unterminated string literal"))
                            }
                            Some('"') => break,
                            Some('\\') => {
                                s.push('\\');
                                s.push(
                                    *chars.get(k + 1).ok_or_else(|| {
                                        err(l0, c0, "unterminated string literal")
                                    })?,
                                );
                                k += 2;
                            }
                            Some(&ch) => {
                                s.push(ch);
                                k += 1;
                            }
                        }
                    }
                    k += 1;
                    let fold = chars.get(k) == Some(&'i');
                    if fold {
                        k += 1;
                    }
                    advance(&mut i, &mut line, &mut col, k - start);
                    Tok::Str(s, fold)
                }
                '/' => {
                    let mut s = String::new();
                    let mut k = i + 1;
                    let mut in_class = false;
                    loop {
                        match chars.get(k) {
                            None | Some('\n') => {
                                return Err(err(l0, c0, "unterminated regular expression"))
                            }
                            Some('/') if !in_class => break,
                            Some('\\') => {
                                s.push('\\');
                                s.push(*chars.get(k + 1).ok_or_else(|| {
                                    err(l0, c0, "unterminated regular expression")
                                })?);
                                k += 2;
                                continue;
                            }
                            Some(&ch) => {
                                if ch == '[' {
                                    in_class = true;
                                } else if ch == ']' {
                                    in_class = false;
                                }
                                s.push(ch);
                            }
                        }
                        k += 1;
                    }
                    k += 1;
                    let mut flags = String::new();
                    while let Some(&f) = chars.get(k).filter(|f| "imsuxl".contains(**f)) {
                        flags.push(f);
                        k += 1;
                    }
                    advance(&mut i, &mut line, &mut col, k - start);
                    Tok::Regex(s, flags)
                }
                '%' => {
                    let mut k = i + 1;
                    while chars
                        .get(k)
                        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
                    {
                        k += 1;
                    }
                    let name: String = chars[i + 1..k].iter().collect();
                    if name == "json" || name == "grammar_options" {
                        // a JSON object follows
                        while chars.get(k).is_some_and(|c| c.is_whitespace()) {
                            k += 1;
                        }
                        if !matches!(chars.get(k), Some('{' | '[')) {
                            return Err(err(
                                l0,
                                c0,
                                format!("failed to parse JSON value after %{name}"),
                            ));
                        }
                        let (mut depth, mut in_str, j0) = (0usize, false, k);
                        while let Some(&ch) = chars.get(k) {
                            k += 1;
                            match ch {
                                '\\' if in_str => k += 1,
                                '"' => in_str = !in_str,
                                '{' | '[' if !in_str => depth += 1,
                                '}' | ']' if !in_str => {
                                    depth -= 1;
                                    if depth == 0 {
                                        break;
                                    }
                                }
                                _ => {}
                            }
                        }
                        if depth != 0 {
                            return Err(err(
                                l0,
                                c0,
                                format!("failed to parse JSON value after %{name}"),
                            ));
                        }
                        let text: String = chars[j0..k].iter().collect();
                        advance(&mut i, &mut line, &mut col, k - start);
                        if name == "json" {
                            Tok::Json(text)
                        } else {
                            Tok::Directive(format!("grammar_options {text}"))
                        }
                    } else {
                        advance(&mut i, &mut line, &mut col, k - start);
                        Tok::Directive(name)
                    }
                }
                '@' => {
                    let mut k = i + 1;
                    while chars
                        .get(k)
                        .is_some_and(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
                    {
                        k += 1;
                    }
                    let s: String = chars[i + 1..k].iter().collect();
                    advance(&mut i, &mut line, &mut col, k - start);
                    Tok::Named(s)
                }
                c if c.is_ascii_digit() => {
                    let mut k = i;
                    while chars.get(k).is_some_and(char::is_ascii_digit) {
                        k += 1;
                    }
                    let s: String = chars[i..k].iter().collect();
                    advance(&mut i, &mut line, &mut col, k - start);
                    Tok::Num(
                        s.parse()
                            .map_err(|_| err(l0, c0, format!("number {s} too large")))?,
                    )
                }
                c if c.is_alphabetic() || c == '_' || ((c == '?' || c == '!') && line_start) => {
                    let mut k = i + 1;
                    while chars.get(k).is_some_and(|c| {
                        c.is_alphanumeric()
                            || *c == '_'
                            || (*c == '-' && chars.get(k + 1).is_some_and(|d| d.is_alphanumeric()))
                    }) {
                        k += 1;
                    }
                    let s: String = chars[i..k].iter().collect();
                    advance(&mut i, &mut line, &mut col, k - start);
                    Tok::Name(s)
                }
                _ => {
                    let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
                    let p: &'static str = match two.as_str() {
                        "::" => return Err(err(l0, c0, "parametric grammar is not supported")),
                        "->" => "->",
                        ".." => "..",
                        _ => match c {
                            ':' => ":",
                            '|' => "|",
                            '(' => "(",
                            ')' => ")",
                            '[' => "[",
                            ']' => "]",
                            '?' => "?",
                            '*' => "*",
                            '+' => "+",
                            '~' => "~",
                            ',' => ",",
                            '.' => ".",
                            '<' => {
                                let rest: String =
                                    chars[i..].iter().take_while(|c| **c != '\n').collect();
                                let what = if !rest.contains('>') {
                                    "unterminated special token"
                                } else {
                                    "special tokens (`<…>`) are not supported"
                                };
                                return Err(err(l0, c0, what));
                            }
                            '&' => return Err(err(l0, c0, "intersection '&' is not supported")),
                            '-' => return Err(err(l0, c0, "unexpected '-' character")),
                            '!' => return Err(err(l0, c0, "unexpected '!' character")),
                            '{' => {
                                let inner: String =
                                    chars[i + 1..].iter().take_while(|c| **c != '}').collect();
                                let closed = chars[i + 1..].contains(&'}');
                                if !closed
                                    || !inner.chars().all(|c| {
                                        c.is_ascii_digit() || c == ',' || c == '-' || c == ' '
                                    })
                                    || inner.trim().is_empty()
                                {
                                    return Err(err(l0, c0, "Lark templates are not supported"));
                                }
                                advance(&mut i, &mut line, &mut col, inner.chars().count() + 2);
                                out.push(Token {
                                    tok: Tok::Rep(inner),
                                    line: l0,
                                    column: c0,
                                    line_start,
                                });
                                line_start = false;
                                continue;
                            }
                            c => return Err(err(l0, c0, format!("unexpected character '{c}'"))),
                        },
                    };
                    advance(&mut i, &mut line, &mut col, p.len());
                    Tok::Punct(p)
                }
            };
        out.push(Token {
            tok,
            line: l0,
            column: c0,
            line_start,
        });
        line_start = false;
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Token>,
    i: usize,
    out: String,
    /// Defined names: whether a terminal, and where.
    defs: BTreeMap<String, (bool, usize, usize)>,
    /// Names referred to, where, and from which definition.
    refs: Vec<(String, usize, usize, String)>,
    /// The definition being read.
    cur: String,
    /// `%import common.X [-> Y]`: Y → X.
    imports: HashMap<String, String>,
    /// `%ignore` items, as GBNF primaries.
    ignores: Vec<String>,
    /// `%json` schemas and `@name` references (their placeholders are
    /// `__lark-embed-K`).
    jsons: Vec<(bool, String)>,
    initial_skip: bool,
}

fn is_terminal(name: &str) -> bool {
    name.trim_start_matches('_')
        .chars()
        .next()
        .is_some_and(|c| c.is_uppercase())
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.i)
    }

    fn here(&self) -> (usize, usize) {
        self.peek()
            .map(|t| (t.line, t.column))
            .or_else(|| self.toks.last().map(|t| (t.line, t.column + 1)))
            .unwrap_or((1, 1))
    }

    fn fail<T>(&self, reason: impl Into<String>) -> Result<T, GrammarError> {
        let (l, c) = self.here();
        Err(err(l, c, reason))
    }

    fn punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Punct(q), .. }) if *q == p)
    }

    /// Whether the token at `i` starts a definition (`name:` or
    /// `NAME.2:` first on its line) or a directive.
    fn starts_statement(&self, i: usize) -> bool {
        let Some(t) = self.toks.get(i) else {
            return true;
        };
        if !t.line_start {
            return false;
        }
        match &t.tok {
            Tok::Directive(_) => true,
            Tok::Name(_) => {
                let next = self.toks.get(i + 1).map(|t| &t.tok);
                matches!(next, Some(Tok::Punct(":" | "." | "[")))
            }
            _ => false,
        }
    }

    fn program(&mut self) -> Result<(), GrammarError> {
        while let Some(t) = self.peek().cloned() {
            match t.tok {
                Tok::Directive(d) => {
                    self.i += 1;
                    self.directive(&d, t.line, t.column)?;
                }
                Tok::Name(raw) => {
                    self.i += 1;
                    let name = raw.trim_start_matches(['?', '!']).to_string();
                    if self.punct(".") {
                        // a terminal's priority
                        self.i += 1;
                        if !matches!(self.peek().map(|t| &t.tok), Some(Tok::Num(_))) {
                            return self.fail("priorities are not supported");
                        }
                        self.i += 1;
                    }
                    if self.punct("[") {
                        return self.fail("rule attributes (`name[…]`) are not supported");
                    }
                    if !self.punct(":") {
                        return self.fail("expected ':' after rule name");
                    }
                    self.i += 1;
                    let terminal = is_terminal(&name);
                    self.cur = name.clone();
                    if self
                        .defs
                        .insert(name.clone(), (terminal, t.line, t.column))
                        .is_some()
                    {
                        return Err(err(
                            t.line,
                            t.column,
                            format!("duplicate rule or terminal '{name}'"),
                        ));
                    }
                    let body = self.expansions(terminal)?;
                    if !self.starts_statement(self.i) {
                        return self.fail("unexpected token after the rule");
                    }
                    self.out.push_str(&format!("{name} ::= {body}\n"));
                }
                _ => return self.fail("expected a rule, a terminal or a directive"),
            }
        }
        Ok(())
    }

    fn directive(&mut self, d: &str, line: usize, column: usize) -> Result<(), GrammarError> {
        if let Some(opts) = d.strip_prefix("grammar_options ") {
            let v: serde_json::Value = serde_json::from_str(opts)
                .map_err(|e| err(line, column, format!("bad %grammar_options: {e}")))?;
            let Some(o) = v.as_object() else {
                return Err(err(
                    line,
                    column,
                    "%grammar_options value must be an object",
                ));
            };
            for (k, v) in o {
                match (k.as_str(), v.as_bool()) {
                    ("allow_initial_skip", Some(b)) => self.initial_skip = b,
                    ("allow_initial_skip", None) => {
                        return Err(err(line, column, "allow_initial_skip must be a boolean"))
                    }
                    ("no_forcing" | "allow_invalid_utf8", Some(false)) => {}
                    ("no_forcing" | "allow_invalid_utf8", _) => {
                        return Err(err(
                            line,
                            column,
                            format!("%grammar_options option '{k}' is not supported"),
                        ))
                    }
                    _ => {
                        return Err(err(
                            line,
                            column,
                            format!("unknown %grammar_options option '{k}'"),
                        ))
                    }
                }
            }
            return Ok(());
        }
        match d {
            "ignore" => {
                let item = self.atom(true)?;
                self.ignores.push(item);
                Ok(())
            }
            "import" => {
                let Some(Tok::Name(mut path)) = self.peek().map(|t| t.tok.clone()) else {
                    return self.fail("expected a module after %import");
                };
                self.i += 1;
                // `common.NAME`: the lexer reads `.` apart
                while self.punct(".") {
                    self.i += 1;
                    match self.peek().map(|t| t.tok.clone()) {
                        Some(Tok::Name(n)) => {
                            self.i += 1;
                            path = format!("{path}.{n}");
                        }
                        _ => return self.fail("expected a name after `.`"),
                    }
                }
                let names: Vec<(String, String)> = if let Some(n) = path.strip_prefix("common.") {
                    let alias = if self.punct("->") {
                        self.i += 1;
                        match self.peek().map(|t| t.tok.clone()) {
                            Some(Tok::Name(a)) => {
                                self.i += 1;
                                a
                            }
                            _ => return self.fail("expected a name after `->`"),
                        }
                    } else {
                        n.to_string()
                    };
                    vec![(n.to_string(), alias)]
                } else if path == "common" && self.punct("(") {
                    self.i += 1;
                    let mut v = Vec::new();
                    loop {
                        match self.peek().map(|t| t.tok.clone()) {
                            Some(Tok::Name(n)) => {
                                self.i += 1;
                                v.push((n.clone(), n));
                            }
                            Some(Tok::Punct(",")) => self.i += 1,
                            Some(Tok::Punct(")")) => {
                                self.i += 1;
                                break;
                            }
                            _ => return self.fail("expected `)` closing the import list"),
                        }
                    }
                    v
                } else {
                    return Err(err(
                        line,
                        column,
                        format!("only Lark's `common` terminals can be imported, not `{path}`"),
                    ));
                };
                for (n, alias) in names {
                    if !COMMON.iter().any(|(c, _)| *c == n) {
                        return Err(err(
                            line,
                            column,
                            format!("unknown common import `common.{n}`"),
                        ));
                    }
                    self.defs.insert(alias.clone(), (true, line, column));
                    self.imports.insert(alias, n);
                }
                Ok(())
            }
            d => Err(err(
                line,
                column,
                format!("directive %{d} is not supported"),
            )),
        }
    }

    /// Alternatives, up to a `)`, `]` or the next statement.
    fn expansions(&mut self, terminal: bool) -> Result<String, GrammarError> {
        let mut alts = vec![self.sequence(terminal)?];
        while self.punct("|") {
            self.i += 1;
            alts.push(self.sequence(terminal)?);
        }
        Ok(alts.join(" | "))
    }

    fn sequence(&mut self, terminal: bool) -> Result<String, GrammarError> {
        let mut items: Vec<String> = Vec::new();
        loop {
            if self.starts_statement(self.i)
                || self.punct("|")
                || self.punct(")")
                || self.punct("]")
            {
                break;
            }
            if self.punct("->") {
                // an alias names Lark's tree node
                self.i += 1;
                if !matches!(self.peek().map(|t| &t.tok), Some(Tok::Name(_))) {
                    return self.fail("expected alias name after '->'");
                }
                self.i += 1;
                continue;
            }
            let atom = self.atom(terminal)?;
            let q = self.quantifier()?;
            items.push(format!("{atom}{q}"));
        }
        if items.is_empty() {
            return Ok("\"\"".to_string());
        }
        if !terminal && !self.ignores.is_empty() {
            // filled in by `finish` (ignores may be declared later)
            return Ok(items.join(" __lark-ignore "));
        }
        Ok(items.join(" "))
    }

    fn quantifier(&mut self) -> Result<String, GrammarError> {
        let Some(t) = self.peek().cloned() else {
            return Ok(String::new());
        };
        Ok(match t.tok {
            Tok::Punct(p @ ("?" | "*" | "+")) => {
                self.i += 1;
                p.to_string()
            }
            Tok::Rep(inner) => {
                self.i += 1;
                let count = |p: &str| -> Result<Option<u32>, GrammarError> {
                    let p = p.trim();
                    if p.is_empty() {
                        return Ok(None);
                    }
                    p.parse::<u32>().map(Some).map_err(|_| {
                        err(
                            t.line,
                            t.column,
                            format!("invalid repetition count {{{inner}}}"),
                        )
                    })
                };
                let (a, b) = match inner.split_once(',') {
                    None => {
                        let n = count(&inner)?.unwrap_or(0);
                        (n, Some(n))
                    }
                    Some((a, b)) => (count(a)?.unwrap_or(0), count(b)?),
                };
                match b {
                    Some(b) if b < a => {
                        return Err(err(
                            t.line,
                            t.column,
                            format!(
                            "repetition end must be greater than or equal to its start {{{inner}}}"
                        ),
                        ))
                    }
                    Some(b) => format!("{{{a},{b}}}"),
                    None => format!("{{{a},}}"),
                }
            }
            Tok::Punct("~") => {
                self.i += 1;
                let Some(Tok::Num(a)) = self.peek().map(|t| t.tok.clone()) else {
                    return self.fail("complement '~' is not supported");
                };
                self.i += 1;
                if self.punct("..") {
                    self.i += 1;
                    let Some(Tok::Num(b)) = self.peek().map(|t| t.tok.clone()) else {
                        return self.fail("expected a count after `..`");
                    };
                    self.i += 1;
                    if b < a {
                        return self.fail(format!("repetition end must be greater than or equal to its start (~ {a}..{b})"));
                    }
                    format!("{{{a},{b}}}")
                } else {
                    format!("{{{a}}}")
                }
            }
            _ => String::new(),
        })
    }

    /// One primary, as a GBNF primary.
    fn atom(&mut self, terminal: bool) -> Result<String, GrammarError> {
        let Some(t) = self.peek().cloned() else {
            return self.fail("unexpected end of grammar");
        };
        self.i += 1;
        Ok(match t.tok {
            Tok::Punct("(") => {
                let inner = self.expansions(terminal)?;
                if !self.punct(")") {
                    return self.fail("expected ')' after group");
                }
                self.i += 1;
                format!("( {inner} )")
            }
            Tok::Punct("[") => {
                let inner = self.expansions(terminal)?;
                if !self.punct("]") {
                    return self.fail("expected ']' after optional group");
                }
                self.i += 1;
                format!("( {inner} )?")
            }
            Tok::Str(s, fold) => {
                let text = unescape(&s).map_err(|m| err(t.line, t.column, m))?;
                if self.punct("..") {
                    self.i += 1;
                    let Some(Tok::Str(e, _)) = self.peek().map(|t| t.tok.clone()) else {
                        return self.fail("expected a string after `..`");
                    };
                    self.i += 1;
                    let end = unescape(&e).map_err(|m| err(t.line, t.column, m))?;
                    let (mut a, mut b) = (text.chars(), end.chars());
                    if fold
                        || matches!(
                            self.toks.get(self.i - 1).map(|t| &t.tok),
                            Some(Tok::Str(_, true))
                        )
                    {
                        return Err(err(
                            t.line,
                            t.column,
                            "flags are not allowed on character ranges",
                        ));
                    }
                    match (a.next(), a.next(), b.next(), b.next()) {
                        (Some(x), None, Some(y), None) if x <= y => {
                            format!("[{}-{}]", class_char(x), class_char(y))
                        }
                        (Some(_), None, Some(_), None) => {
                            return Err(err(t.line, t.column, "range start must not exceed end"))
                        }
                        _ => {
                            return Err(err(
                                t.line,
                                t.column,
                                "range endpoints must be one character",
                            ))
                        }
                    }
                } else if text.is_empty() {
                    "\"\"".to_string()
                } else if fold && !text.is_ascii() {
                    return Err(err(
                        t.line,
                        t.column,
                        "case-insensitive string literals currently support ASCII characters only",
                    ));
                } else if fold {
                    let parts: Vec<String> = text
                        .chars()
                        .map(|c| {
                            if c.is_ascii_alphabetic() {
                                format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
                            } else {
                                crate::gbnf::quote_literal(&c.to_string())
                            }
                        })
                        .collect();
                    format!("( {} )", parts.join(" "))
                } else {
                    crate::gbnf::quote_literal(&text)
                }
            }
            Tok::Regex(r, flags) => {
                let mut prefix = String::new();
                for f in flags.chars() {
                    match f {
                        'i' | 's' => prefix.push(f),
                        'u' => {}
                        f => {
                            return Err(err(
                                t.line,
                                t.column,
                                format!("regular-expression flag '{f}' is not supported"),
                            ))
                        }
                    }
                }
                let body = if prefix.is_empty() {
                    r
                } else {
                    format!("(?{prefix}:{r})")
                };
                if regex_syntax::Parser::new()
                    .parse(&body.replace("\\/", "/"))
                    .is_err()
                {
                    return Err(err(
                        t.line,
                        t.column,
                        format!("failed to compile regular expression /{body}/"),
                    ));
                }
                format!("/{body}/")
            }
            Tok::Name(n) => {
                if terminal && !is_terminal(&n) {
                    return Err(err(
                        t.line,
                        t.column,
                        format!("terminal '{}' cannot reference rule '{n}'", self.cur),
                    ));
                }
                self.refs
                    .push((n.clone(), t.line, t.column, self.cur.clone()));
                n
            }
            Tok::Json(_) if terminal => {
                return Err(err(t.line, t.column, "%json cannot be used in terminals"))
            }
            Tok::Json(schema) => {
                self.jsons.push((true, schema));
                format!("__lark-embed-{}", self.jsons.len() - 1)
            }
            Tok::Named(name) if name.is_empty() => {
                return Err(err(t.line, t.column, "empty grammar reference"))
            }
            Tok::Named(name) => {
                self.jsons.push((false, name));
                format!("__lark-embed-{}", self.jsons.len() - 1)
            }
            Tok::Directive(d) if d == "if" => {
                return Err(err(
                    t.line,
                    t.column,
                    "parametric %if conditions are not supported",
                ))
            }
            Tok::Directive(d) => {
                return Err(err(
                    t.line,
                    t.column,
                    format!("%{d} is not supported inside a rule"),
                ))
            }
            _ => {
                return Err(err(
                    t.line,
                    t.column,
                    "expected a string, a regex, a name or a group",
                ))
            }
        })
    }

    fn finish(
        mut self,
        resolve: &mut dyn FnMut(Embed<'_>) -> Result<Grammar, String>,
    ) -> Result<Grammar, GrammarError> {
        for (n, l, c, _) in &self.refs {
            if !self.defs.contains_key(n) {
                return Err(err(*l, *c, format!("unknown name '{n}'")));
            }
        }
        // terminals may not refer to themselves (Lark's terminals are regular)
        let mut edges: HashMap<&str, Vec<&str>> = HashMap::new();
        for (n, _, _, from) in &self.refs {
            if is_terminal(from) && is_terminal(n) {
                edges.entry(from.as_str()).or_default().push(n.as_str());
            }
        }
        fn cyclic<'a>(
            n: &'a str,
            edges: &HashMap<&'a str, Vec<&'a str>>,
            state: &mut HashMap<&'a str, u8>,
        ) -> bool {
            match state.get(n) {
                Some(1) => return true,
                Some(2) => return false,
                _ => {}
            }
            state.insert(n, 1);
            let found = edges
                .get(n)
                .is_some_and(|v| v.iter().any(|m| cyclic(m, edges, state)));
            state.insert(n, 2);
            found
        }
        let mut state = HashMap::new();
        for from in edges.keys() {
            if cyclic(from, &edges, &mut state) {
                let (l, c) = self.defs.get(*from).map(|d| (d.1, d.2)).unwrap_or((1, 1));
                return Err(err(
                    l,
                    c,
                    format!("circular reference in terminal '{from}'"),
                ));
            }
        }
        if !self.defs.contains_key("start") {
            return Err(err(1, 1, "no start rule"));
        }
        for (alias, name) in &self.imports {
            let body = COMMON
                .iter()
                .find(|(c, _)| c == name)
                .map(|(_, b)| *b)
                .unwrap_or("\"\"");
            self.out.push_str(&format!("{alias} ::= {body}\n"));
        }
        let ign = if self.ignores.is_empty() {
            String::new()
        } else {
            self.out.push_str(&format!(
                "__lark-ignore ::= ( {} )*\n",
                self.ignores.join(" | ")
            ));
            " __lark-ignore".to_string()
        };
        let lead = if self.initial_skip && !ign.is_empty() {
            "__lark-ignore "
        } else {
            ""
        };
        for k in 0..self.jsons.len() {
            self.out.push_str(&format!("__lark-embed-{k} ::= \"\"\n"));
        }
        let text = format!("__lark-start ::= {lead}start{ign}\n{}", self.out);
        let mut g = Grammar::from_gbnf(&text).map_err(|e| match e {
            GrammarError::Syntax { reason, .. } => err(1, 1, format!("internal: {reason}")),
            e => e,
        })?;
        for (k, (is_json, text)) in self.jsons.iter().enumerate() {
            let sub = if *is_json {
                resolve(Embed::Json(text))
                    .map_err(|m| err(1, 1, format!("failed to compile inline JSON schema: {m}")))?
            } else {
                resolve(Embed::Named(text)).map_err(|m| err(1, 1, m))?
            };
            let at = g
                .nonterminal(&format!("__lark-embed-{k}"))
                .ok_or_else(|| err(1, 1, "internal: embed placeholder"))?;
            let root = g.embed(&sub, &format!("embed{k}-"));
            replace_rules(&mut g, at, root);
        }
        g.start = g.nonterminal("__lark-start").unwrap_or(g.start);
        Ok(g)
    }
}

/// `at ::= root` in place of `at`'s rules.
fn replace_rules(g: &mut Grammar, at: NtId, root: NtId) {
    g.rules.retain(|r| r.lhs != at);
    g.add_rule(at, vec![crate::ir::Symbol::Nt(root)]);
}

/// A Lark string's text (JSON's escapes).
fn unescape(s: &str) -> Result<String, String> {
    serde_json::from_str::<String>(&format!("\"{s}\""))
        .map_err(|e| format!("invalid string literal: {e}"))
}

fn class_char(c: char) -> String {
    match c {
        ']' | '[' | '^' | '-' | '\\' => format!("\\{c}"),
        c if (c as u32) < 0x20 || c as u32 == 0x7f => format!("\\u{:04x}", c as u32),
        c => c.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Recognizer;

    fn lang(src: &str) -> Recognizer {
        let g =
            from_lark(src, &mut |_| Err("no embeds here".into())).unwrap_or_else(|e| panic!("{e}"));
        Recognizer::new(&g).unwrap()
    }

    fn check(src: &str, yes: &[&str], no: &[&str]) {
        let r = lang(src);
        for s in yes {
            assert!(r.recognizes(s.as_bytes()), "{src:?} should accept {s:?}");
        }
        for s in no {
            assert!(!r.recognizes(s.as_bytes()), "{src:?} should refuse {s:?}");
        }
    }

    #[test]
    fn rules_terminals_operators() {
        check(
            r#"start: "a" "b" | "c" ("d" | "e")"#,
            &["ab", "cd", "ce"],
            &["", "a", "ade"],
        );
        check(r#"start: ("a" | "b") ["c"]"#, &["a", "bc"], &["", "c"]);
        check(r#"start: | "a""#, &["", "a"], &["aa"]);
        check("start:", &[""], &["a"]);
        check(
            "?item: \"a\"\n!suffix: \"b\"\nstart: item suffix",
            &["ab"],
            &["a"],
        );
        check(
            "start: \"a\" -> first\n     | \"b\" -> second",
            &["a", "b"],
            &["first"],
        );
        check(
            "start: value\nvalue: \"x\" | \"(\" value \")\" | \"[\" values? \"]\"\nvalues: value (\",\" value)*",
            &["x", "((x))", "[x,(x),[x]]"],
            &["()", "[x,]"],
        );
        check(
            "start: SIGNED\nSIGNED: SIGN? DIGIT+\nSIGN: \"+\" | \"-\"\nDIGIT: \"0\"..\"9\"",
            &["+7", "123"],
            &["+", "1a"],
        );
        check(
            r#"start: "a"~3 "b"~1..2"#,
            &["aaab", "aaabb"],
            &["aab", "aaabbb"],
        );
        check(
            r#"start: "a"{2} "b"{,1} "c"{1,}"#,
            &["aac", "aabccc"],
            &["ac", "aabbc"],
        );
        check(
            "start: item // c\nitem: \"ok\" # rule comment",
            &["ok"],
            &["ok#"],
        );
        check(r#"start: "Ab-C9"i"#, &["ab-c9", "AB-C9"], &["ab_c9"]);
        check(r"start: /a.b/", &["acb"], &["a\nb"]);
        check(r"start: /a.b/s", &["a\nb"], &["ab"]);
        check(r"start: /a\/b/ /[0-9]{2,4}/", &["a/b12"], &["a/b1"]);
        check(
            "start: foo-bar FOO-BAR\nfoo-bar: \"a\"\nFOO-BAR: \"b\"",
            &["ab"],
            &["a"],
        );
        check("start: \"\\n\" \"\\u03bb\"", &["\nλ"], &["n"]);
    }

    #[test]
    fn imports_and_ignore() {
        check(
            "%import common.SIGNED_NUMBER\nstart: SIGNED_NUMBER",
            &["-12", "+.5", "1e3"],
            &["+", "x"],
        );
        check(
            "%ignore WS_INLINE\nstart: NAME \"=\" NUMBER\n%import common (CNAME, WS_INLINE)\n%import common.INT -> NUMBER\nNAME: CNAME",
            &["x=1", "name = 42", "_x\t=\t0"],
            &["1x=2", "x=-1", " x=1"],
        );
        check(
            "%import common.WS\n%ignore WS\nstart: \"a\" DIGIT \"c\"..\"d\"\nDIGIT: \"0\"..\"9\"",
            &["a1c", "a 1 d", "a\n1\n c  "],
            &[" a1c", "a 1 e"],
        );
        check(
            "%grammar_options {\"allow_initial_skip\": true}\n%import common.WS\n%ignore WS\nstart: \"a\" \"b\"",
            &[" a b"],
            &["a c"],
        );
        check(
            "%import common.C_COMMENT\nstart: C_COMMENT",
            &["/**/", "/* ** x **/"],
            &["/* open"],
        );
        check(
            "%import common.ESCAPED_STRING\nstart: ESCAPED_STRING",
            &["\"a\\\"b\""],
            &["\"x"],
        );
    }

    #[test]
    fn errors_have_positions() {
        let e = |s: &str| {
            from_lark(s, &mut |_| Err(String::new()))
                .unwrap_err()
                .to_string()
        };
        assert!(e("start \"a\"").contains("expected ':' after rule name"));
        assert!(e("start: A\nA: b\nb: \"x\"").contains("terminal 'A' cannot reference rule 'b'"));
        assert!(e("start: x").contains("unknown name 'x'"));
        assert!(e("start: FOO\nFOO: BAR\nBAR: FOO").contains("circular reference in terminal"));
        assert!(e("start: \"a\"{3,2}").contains("repetition end must be greater"));
        assert!(e("start: <x>").contains("special tokens"));
        let m = e("start: \"a\"\nstart: \"b\"");
        assert!(m.contains("Lark error at line 2, column 1"), "{m}");
    }

    #[test]
    fn json_is_embedded() {
        let mut json = |e: Embed<'_>| {
            assert_eq!(e, Embed::Json(r#"{"type":"integer"}"#));
            Grammar::from_gbnf("root ::= /-?[0-9]+/").map_err(|e| e.to_string())
        };
        let g = from_lark("start: \"n=\" %json {\"type\":\"integer\"}", &mut json).unwrap();
        let r = Recognizer::new(&g).unwrap();
        assert!(r.recognizes(b"n=-12") && !r.recognizes(b"n=x"));
    }
}
