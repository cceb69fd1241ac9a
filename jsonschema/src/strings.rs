//! JSON strings as regex terminals: free strings, length bounds, `pattern`,
//! `format`, and object keys that exclude the declared property names.
//!
//! ## Two encodings
//!
//! * **Free strings** (no `pattern`/`format`/`enum`): any JSON string, every
//!   escape of RFC 8259 §7 allowed (`\/`, `\u00e9`, surrogate pairs). With
//!   `minLength`/`maxLength` the unit counted is one *decoded* character:
//!   a raw character, a short escape, a `\uXXXX` escape of a non-surrogate,
//!   or a surrogate pair `\uD8xx\uDCxx` (one character).
//! * **Constrained strings** (`pattern`, `format`, additional-property keys):
//!   the *canonical* encoding serde_json writes — only `"` `\` and the
//!   C0 controls are escaped, with the short forms `\" \\ \b \f \n \r \t`
//!   and `\u00xx` (lowercase hex) for the other controls. Encoding is then
//!   a bijection per character, so a regex `R` over the decoded content is
//!   translated *exactly* by substituting each character class with the
//!   alternation of its members' encodings ([`encode_hir`]): the terminal's
//!   language is the set of canonical encodings of `L(R)`.
//!
//! ## `pattern` semantics
//!
//! JSON Schema patterns are ECMA-262 regexes, *searched* (not anchored) in
//! the string. [`translate_pattern`] rewrites ECMA-only syntax for
//! `regex-syntax` (`\d` = `[0-9]`, `\w` = `[A-Za-z0-9_]`, ECMA `\s`, `.`
//! excludes the four ECMA line terminators, a literal `[` inside a class,
//! `{` that starts no quantifier), then turns the search into a full match
//! by padding unanchored ends with `.*` per top-level alternative. Patterns
//! with look-arounds other than a leading `^`/trailing `$` of a top-level
//! alternative (e.g. `\b`, `(?=…)`), and backreferences, are refused.

use regex_syntax::hir::{
    Capture, Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look, Repetition,
};

use super::error::PatternError;
use super::{RegexDialect, RegexDot};

/// The regex of one character of a free JSON string (any escape allowed).
pub(crate) const FREE_UNIT: &str = r#"(?:[^"\\\x00-\x1F]|\\(?:["\\/bfnrt]|u(?:[0-9a-cA-CeEfF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}|[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})))"#;

/// The regex of a free JSON string with between `min` and `max` characters.
pub(crate) fn free_string_regex(min: u64, max: Option<u64>) -> String {
    let q = match (min, max) {
        (0, None) => "*".to_string(),
        (1, None) => "+".to_string(),
        (m, None) => format!("{{{m},}}"),
        (m, Some(n)) if m == n => format!("{{{m}}}"),
        (m, Some(n)) => format!("{{{m},{n}}}"),
    };
    format!("\"{FREE_UNIT}{q}\"")
}

/// serde_json's encoding of one character inside a string literal.
pub(crate) fn canonical_escape(c: char) -> Option<String> {
    Some(match c {
        '"' => "\\\"".into(),
        '\\' => "\\\\".into(),
        '\u{8}' => "\\b".into(),
        '\u{c}' => "\\f".into(),
        '\n' => "\\n".into(),
        '\r' => "\\r".into(),
        '\t' => "\\t".into(),
        c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32),
        _ => return None,
    })
}

/// The characters that are escaped in canonical encoding.
fn special_class() -> ClassUnicode {
    ClassUnicode::new([
        ClassUnicodeRange::new('\0', '\u{1F}'),
        ClassUnicodeRange::new('"', '"'),
        ClassUnicodeRange::new('\\', '\\'),
    ])
}

/// The canonical encodings of the characters of `c`, as a HIR.
/// [`encode_class`] as regex text, memoised by the class's ranges: an
/// automaton written state by state repeats a few classes on thousands of
/// edges (a key region of two patterns with length bounds).
#[derive(Default)]
pub(crate) struct ClassTexts(std::collections::HashMap<Vec<(char, char)>, String>);

impl ClassTexts {
    pub(crate) fn text(&mut self, c: &ClassUnicode) -> String {
        let key: Vec<(char, char)> = c.iter().map(|r| (r.start(), r.end())).collect();
        self.0
            .entry(key)
            .or_insert_with(|| encode_class(c).to_string())
            .clone()
    }
}

pub(crate) fn encode_class(c: &ClassUnicode) -> Hir {
    let specials = special_class();
    let mut safe = c.clone();
    safe.difference(&specials);
    let mut sp = c.clone();
    sp.intersect(&specials);
    let mut alts = Vec::new();
    if safe.iter().next().is_some() {
        alts.push(Hir::class(Class::Unicode(safe)));
    }
    if let Some(esc) = escapes_hir(&sp) {
        alts.push(esc);
    }
    if alts.is_empty() {
        Hir::fail()
    } else {
        Hir::alternation(alts)
    }
}

/// The canonical escapes of the special characters in `sp` as one factored
/// HIR, `\\(?:[short]|u00(?:0[d]|1[d]))` (`short` the letters of the
/// two-character escapes, `d` the last hex digits of the `\\u00XX` ones):
/// a few dozen characters of regex whatever the subset, where listing the
/// escapes one by one wrote up to 32 alternatives. `None` when `sp` is
/// empty.
fn escapes_hir(sp: &ClassUnicode) -> Option<Hir> {
    let mut short: Vec<u8> = Vec::new();
    let mut hex: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    for r in sp.iter() {
        for u in r.start() as u32..=r.end() as u32 {
            let Some(e) = char::from_u32(u).and_then(canonical_escape) else {
                continue;
            };
            let e = e.into_bytes();
            match e.as_slice() {
                [b'\\', c] => short.push(*c),
                [b'\\', b'u', b'0', b'0', hi, lo] => hex[usize::from(*hi == b'1')].push(*lo),
                _ => {}
            }
        }
    }
    let bytes = |v: &[u8]| -> Hir {
        Hir::class(Class::Unicode(ClassUnicode::new(
            v.iter()
                .map(|&b| ClassUnicodeRange::new(b as char, b as char)),
        )))
    };
    let mut arms = Vec::new();
    if !short.is_empty() {
        arms.push(bytes(&short));
    }
    let mut hex_arms = Vec::new();
    for (hi, lo) in [b'0', b'1'].into_iter().zip(&hex) {
        if !lo.is_empty() {
            hex_arms.push(Hir::concat(vec![Hir::literal([hi]), bytes(lo)]));
        }
    }
    if !hex_arms.is_empty() {
        arms.push(Hir::concat(vec![
            Hir::literal(*b"u00"),
            Hir::alternation(hex_arms),
        ]));
    }
    if arms.is_empty() {
        return None;
    }
    Some(Hir::concat(vec![
        Hir::literal(*b"\\"),
        Hir::alternation(arms),
    ]))
}

/// Canonical encoding of a string's content (no quotes).
pub(crate) fn encode_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match canonical_escape(c) {
            Some(e) => out.push_str(&e),
            None => out.push(c),
        }
    }
    out
}

/// Translates a HIR over decoded characters into the HIR of their
/// canonical JSON encodings (see the module docs). Look-arounds must have
/// been removed.
pub(crate) fn encode_hir(h: &Hir) -> Result<Hir, PatternError> {
    Ok(match h.kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(l) => {
            let s = std::str::from_utf8(&l.0).map_err(|_| PatternError::NonUtf8Literal)?;
            Hir::literal(encode_str(s).into_bytes())
        }
        HirKind::Class(Class::Unicode(c)) => encode_class(c),
        HirKind::Class(Class::Bytes(_)) => return Err(PatternError::ByteClass),
        HirKind::Look(_) => return Err(PatternError::LookInside),
        HirKind::Repetition(r) => {
            let mut sub = encode_hir(&r.sub)?;
            if matches!(sub.kind(), HirKind::Repetition(_)) {
                // `Hir`'s printer writes `(?:a+)?` as `a+?`, which reads
                // back as a lazy `+`: keep a group around nested repetitions.
                sub = Hir::capture(Capture {
                    index: 1,
                    name: None,
                    sub: Box::new(sub),
                });
            }
            Hir::repetition(Repetition {
                min: r.min,
                max: r.max,
                greedy: true,
                sub: Box::new(sub),
            })
        }
        HirKind::Capture(c) => encode_hir(&c.sub)?,
        HirKind::Concat(v) => Hir::concat(v.iter().map(encode_hir).collect::<Result<_, _>>()?),
        HirKind::Alternation(v) => {
            Hir::alternation(v.iter().map(encode_hir).collect::<Result<_, _>>()?)
        }
    })
}

/// ECMA-262 white space and line terminators (the members of `\s`).
const ECMA_WS: &str = r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

/// Rewrites an ECMA-262 pattern into `regex-syntax` syntax (see the
/// module docs), read as JSON Schema's `pattern` is
/// ([`RegexDialect::AnnexB`]).
pub(crate) fn ecma_to_regex_syntax(p: &str) -> Result<String, PatternError> {
    ecma_to_regex_syntax_in(p, RegexDialect::AnnexB)
}

/// [`ecma_to_regex_syntax`] in `dialect`.
pub(crate) fn ecma_to_regex_syntax_in(
    p: &str,
    dialect: RegexDialect,
) -> Result<String, PatternError> {
    ecma_to_regex_syntax_dot(p, dialect, RegexDot::Ecma)
}

/// [`ecma_to_regex_syntax_in`] with `.` read as `dot` says.
pub(crate) fn ecma_to_regex_syntax_dot(
    p: &str,
    dialect: RegexDialect,
    dot: RegexDot,
) -> Result<String, PatternError> {
    let dot = match dot {
        RegexDot::Ecma => r"[^\n\r\x{2028}\x{2029}]",
        RegexDot::NotNewline => r"[^\n]",
        RegexDot::Any => r"(?s:.)",
    };
    let strict = dialect == RegexDialect::Strict;
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len() + 16);
    // open groups (outside classes)
    let mut groups = 0usize;
    let mut in_class = false;
    let mut class_start = false;
    let mut in_quant = false;
    // after a quantifier: 1 (a lazy `?` may follow), 2 (after that `?`)
    let mut quantified = 0u8;
    // inside a class: 1 after a single character (a range may start), 2
    // after a range's `-`, 0 otherwise (at the start, after a range or a
    // class escape)
    let mut class_atom = 0u8;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let first_in_class = class_start;
        class_start = false;
        if in_class {
            let next = chars.get(i + 1).copied();
            let set_escape = c == '\\' && matches!(next, Some('d' | 'w' | 's' | 'D' | 'W' | 'S'));
            class_atom = match (c, class_atom) {
                _ if set_escape => 0,
                (']', _) if !first_in_class => 0,
                ('-', 1) if next != Some(']') => 2,
                (_, 2) => 0,
                _ => 1,
            };
        }
        let prev = std::mem::take(&mut quantified);
        match c {
            '*' | '+' if !in_class => {
                if prev > 0 {
                    return Err(PatternError::NothingToRepeat);
                }
                quantified = 1;
                out.push(c);
            }
            '?' if !in_class => {
                quantified = match prev {
                    0 => 1,
                    1 => 2,
                    _ => return Err(PatternError::NothingToRepeat),
                };
                out.push(c);
            }
            '\\' => {
                let Some(&e) = chars.get(i + 1) else {
                    return Err(PatternError::TrailingBackslash);
                };
                i += 2;
                match e {
                    'd' => out.push_str(if in_class { "0-9" } else { "[0-9]" }),
                    'w' => out.push_str(if in_class {
                        "A-Za-z0-9_"
                    } else {
                        "[A-Za-z0-9_]"
                    }),
                    's' => {
                        if in_class {
                            out.push_str(ECMA_WS)
                        } else {
                            out.push_str(&format!("[{ECMA_WS}]"))
                        }
                    }
                    'D' | 'W' | 'S' if in_class => {
                        return Err(PatternError::NegatedClassEscapeInClass(e))
                    }
                    'D' => out.push_str("[^0-9]"),
                    'W' => out.push_str("[^A-Za-z0-9_]"),
                    'S' => out.push_str(&format!("[^{ECMA_WS}]")),
                    'b' if in_class => out.push_str(r"\x08"),
                    'b' | 'B' => return Err(PatternError::WordBoundary),
                    '1'..='9' | 'k' => return Err(PatternError::Backreference),
                    'c' => {
                        let Some(&l) = chars.get(i).filter(|l| l.is_ascii_alphabetic()) else {
                            return Err(PatternError::BadControlEscape);
                        };
                        out.push_str(&format!(r"\x{{{:X}}}", (l as u32) % 32));
                        i += 1;
                    }
                    'u' if chars.get(i) == Some(&'{') => {
                        // \u{...} (ECMA `u` flag form) is regex-syntax's \x{...}
                        let Some(len) = chars[i..].iter().position(|&c| c == '}') else {
                            return Err(PatternError::UnknownEscape('u'));
                        };
                        out.push_str("\\x");
                        out.extend(&chars[i..=i + len]);
                        i += len + 1;
                    }
                    '0' => out.push_str(r"\x00"),
                    // XGrammar's reading: C's bell and escape
                    'a' if strict => out.push_str(r"\x07"),
                    'e' if strict => out.push_str(r"\x1B"),
                    'v' => out.push_str(r"\x0B"),
                    'f' | 'n' | 'r' | 't' | 'u' | 'x' => {
                        out.push('\\');
                        out.push(e);
                    }
                    e if e.is_ascii_alphanumeric() => return Err(PatternError::UnknownEscape(e)),
                    e => {
                        // identity escape of punctuation; escape it for regex-syntax
                        out.push_str(&regex_syntax::escape(&e.to_string()));
                    }
                }
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                class_start = true;
                out.push('[');
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                    class_start = true;
                }
                if chars.get(i + 1) == Some(&']') {
                    // ECMA `[]` matches nothing, `[^]` anything.
                    let negated = out.ends_with('^');
                    if strict && !negated {
                        return Err(PatternError::EmptyClass);
                    }
                    out.truncate(out.len() - if negated { 2 } else { 1 });
                    out.push_str(if negated {
                        r"[\x{0}-\x{10FFFF}]"
                    } else {
                        r"[^\x{0}-\x{10FFFF}]"
                    });
                    in_class = false;
                    i += 2;
                    continue;
                }
            }
            '[' => out.push_str(r"\["),
            ']' if in_class && !first_in_class => {
                in_class = false;
                out.push(']');
            }
            ']' if !in_class => out.push_str(r"\]"),
            '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
            }
            // `[--x]`: the range `-`..`x` in both dialects.
            '-' if in_class && first_in_class && chars.get(i + 1) == Some(&'-') => {
                out.push_str(r"\-")
            }
            // `a--`: the range `a`..`-` (ECMA), whose `-` end regex-syntax
            // needs escaped (its `--` is set difference)
            '-' if in_class && class_atom == 2 && chars.get(i + 1) == Some(&'-') => {
                out.push_str(r"-\-");
                class_atom = 0;
                i += 2;
                continue;
            }
            // elsewhere (after a range or a class escape) refused, not guessed
            '-' if in_class && chars.get(i + 1) == Some(&'-') => {
                return Err(PatternError::HyphenRunInClass)
            }
            '.' if !in_class => out.push_str(dot),
            // XGrammar's reading: the regex is matched whole, and an anchor
            // is an empty match wherever it stands (`^$|^https://…` is the
            // empty string or the URL; `(a|$)` is `a` or nothing)
            '^' | '$' if strict && !in_class => {
                quantified = prev;
            }
            '(' if !in_class && chars.get(i + 1) == Some(&'?') => {
                let next: String = chars[i + 2..chars.len().min(i + 4)].iter().collect();
                if next.starts_with('=') || next.starts_with('!') || next == "<=" || next == "<!" {
                    return Err(PatternError::LookAroundGroup);
                }
                // ECMA-262 groups: `(?:…)`, `(?<name>…)` and (ES2025) the
                // modifier groups `(?ims-ims:…)`, which regex-syntax reads
                // alike. An inline flag setting `(?i)` is no ECMA-262
                // syntax: XGrammar's dialect refuses it, as XGrammar does;
                // JSON Schema `pattern`s keep it with the meaning Python's
                // `re` and Rust's `regex` give it (real schemas use it, 19
                // of MaskBench's), as llguidance does
                if strict && !next.starts_with(':') && !next.starts_with('<') {
                    let flags = chars[i + 2..]
                        .iter()
                        .take_while(|c| matches!(c, 'i' | 'm' | 's' | '-'))
                        .count();
                    if flags == 0 || chars.get(i + 2 + flags) != Some(&':') {
                        return Err(PatternError::GroupModifier);
                    }
                }
                groups += 1;
                out.push('(');
            }
            '(' if !in_class => {
                groups += 1;
                out.push('(');
            }
            ')' if !in_class => {
                if groups == 0 {
                    return Err(PatternError::UnmatchedParen { offset: i });
                }
                groups -= 1;
                // a quantifier may follow a group
                out.push(')');
            }
            '{' if !in_class => {
                // a quantifier `{n}`, `{n,}`, `{n,m}` or a literal brace
                let rest: String = chars[i..].iter().take(24).collect();
                let is_quant = rest
                    .find('}')
                    .map(|j| {
                        let inner = &rest[1..j];
                        let mut parts = inner.splitn(2, ',');
                        let a = parts.next().unwrap_or("");
                        let b = parts.next();
                        !a.is_empty()
                            && a.bytes().all(|x| x.is_ascii_digit())
                            && b.is_none_or(|b| b.bytes().all(|x| x.is_ascii_digit()))
                    })
                    .unwrap_or(false);
                if is_quant && i > 0 {
                    if prev > 0 {
                        return Err(PatternError::NothingToRepeat);
                    }
                    in_quant = true;
                    out.push('{');
                } else if strict && is_quant {
                    return Err(PatternError::NothingToRepeat);
                } else if strict {
                    return Err(PatternError::InvalidRepetition { offset: i });
                } else {
                    out.push_str(r"\{");
                }
            }
            '}' if !in_class => {
                if in_quant {
                    in_quant = false;
                    quantified = 1;
                    out.push('}');
                } else {
                    out.push_str(r"\}");
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    if in_class {
        return Err(PatternError::UnterminatedClass);
    }
    if groups > 0 {
        return Err(PatternError::UnclosedGroup);
    }
    Ok(out)
}

/// Parses a regex (regex-syntax dialect) over decoded characters.
pub(crate) fn parse_hir(re: &str) -> Result<Hir, PatternError> {
    regex_syntax::ParserBuilder::new()
        .unicode(true)
        .utf8(true)
        .build()
        .parse(re)
        .map_err(|e| {
            PatternError::Parse(
                e.to_string()
                    .lines()
                    .last()
                    .unwrap_or("parse error")
                    .trim()
                    .to_string(),
            )
        })
}

fn any_star() -> Hir {
    Hir::repetition(Repetition {
        min: 0,
        max: None,
        greedy: true,
        sub: Box::new(Hir::class(Class::Unicode(ClassUnicode::new([
            ClassUnicodeRange::new('\0', '\u{10FFFF}'),
        ])))),
    })
}

/// Most top-level alternatives [`search_to_full_match`] distributes a
/// pattern into.
const MAX_ANCHOR_ALTERNATIVES: usize = 256;

/// The pattern as a union of concatenations (lists of items) in which no
/// item is an alternation or concatenation containing an anchor: groups
/// and alternations that contain `^`/`$` are distributed over (so that
/// `^(?:$|a$)`, which `regex-syntax` makes of `^$|^a$`, becomes
/// `^$ | ^a$`).
fn anchor_alternatives(h: &Hir) -> Result<Vec<Vec<Hir>>, PatternError> {
    let has_look = |h: &Hir| !h.properties().look_set().is_empty();
    if !has_look(h) {
        return Ok(vec![vec![h.clone()]]);
    }
    match h.kind() {
        HirKind::Look(_) => Ok(vec![vec![h.clone()]]),
        HirKind::Capture(c) => anchor_alternatives(&c.sub),
        HirKind::Alternation(v) => {
            let mut out = Vec::new();
            for x in v {
                out.extend(anchor_alternatives(x)?);
                if out.len() > MAX_ANCHOR_ALTERNATIVES {
                    return Err(PatternError::TooManyAnchorAlternatives);
                }
            }
            Ok(out)
        }
        HirKind::Concat(items) => {
            let mut acc: Vec<Vec<Hir>> = vec![vec![]];
            for it in items {
                let alts = anchor_alternatives(it)?;
                if acc.len() * alts.len() > MAX_ANCHOR_ALTERNATIVES {
                    return Err(PatternError::TooManyAnchorAlternatives);
                }
                let mut next = Vec::with_capacity(acc.len() * alts.len());
                for a in &acc {
                    for b in &alts {
                        let mut c = a.clone();
                        c.extend(b.iter().cloned());
                        next.push(c);
                    }
                }
                acc = next;
            }
            Ok(acc)
        }
        _ => Err(PatternError::AnchorInRepetition),
    }
}

/// The search semantics of a pattern as a full-match HIR over decoded
/// characters: the pattern is split into top-level alternatives
/// ([`anchor_alternatives`]); each is padded with `.*` (any character) on
/// each end that is not anchored by a leading `^` / trailing `$`. Anchors
/// elsewhere, and other look-arounds, are refused.
pub(crate) fn search_to_full_match(h: &Hir) -> Result<Hir, PatternError> {
    if h.properties().look_set().is_empty() {
        return Ok(Hir::concat(vec![any_star(), h.clone(), any_star()]));
    }
    // Alternatives grouped by their anchoring (left, right), each group
    // written `.*(?:a|b|…).*` with one pair of `.*` (unions distribute
    // over concatenation): with a `.*` pair per alternative, a DFA tracks
    // which alternatives have already matched — up to 2^k subsets for k
    // unanchored words (`^list|date|time|…|number$`: 17,925 states; one
    // group: 61).
    let mut groups: [Vec<Hir>; 4] = Default::default();
    for mut items in anchor_alternatives(h)? {
        let is = |x: &Hir, l: Look| matches!(x.kind(), HirKind::Look(k) if *k == l);
        let mut left = false;
        while items.first().is_some_and(|x| is(x, Look::Start)) {
            items.remove(0);
            left = true;
        }
        let mut right = false;
        while items.last().is_some_and(|x| is(x, Look::End)) {
            items.pop();
            right = true;
        }
        if items.iter().any(|x| !x.properties().look_set().is_empty()) {
            return Err(PatternError::AnchorInMiddle);
        }
        groups[usize::from(left) * 2 + usize::from(right)].push(Hir::concat(items));
    }
    let mut alts = Vec::new();
    for (k, group) in groups.into_iter().enumerate() {
        if group.is_empty() {
            continue;
        }
        let (left, right) = (k >= 2, k % 2 == 1);
        let mut v = Vec::new();
        if !left {
            v.push(any_star());
        }
        v.push(Hir::alternation(group));
        if !right {
            v.push(any_star());
        }
        alts.push(Hir::concat(v));
    }
    Ok(Hir::alternation(alts))
}

/// Length of the strings of a HIR in characters: (min, max or unbounded).
pub(crate) fn char_len_range(h: &Hir) -> (u64, Option<u64>) {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => (0, Some(0)),
        HirKind::Literal(l) => {
            let n = String::from_utf8_lossy(&l.0).chars().count() as u64;
            (n, Some(n))
        }
        HirKind::Class(_) => (1, Some(1)),
        HirKind::Repetition(r) => {
            let (a, b) = char_len_range(&r.sub);
            let max = match (r.max, b) {
                (Some(0), _) => Some(0),
                (Some(m), Some(b)) => Some(b.saturating_mul(m as u64)),
                (_, Some(0)) => Some(0),
                _ => None,
            };
            (a.saturating_mul(r.min as u64), max)
        }
        HirKind::Capture(c) => char_len_range(&c.sub),
        HirKind::Concat(v) => v
            .iter()
            .map(char_len_range)
            .fold((0, Some(0)), |(a, b), (c, d)| {
                (
                    a.saturating_add(c),
                    b.zip(d).map(|(b, d)| b.saturating_add(d)),
                )
            }),
        HirKind::Alternation(v) => {
            let rs: Vec<_> = v.iter().map(char_len_range).collect();
            let min = rs.iter().map(|r| r.0).min().unwrap_or(0);
            let max = rs
                .iter()
                .map(|r| r.1)
                .try_fold(0u64, |acc, m| m.map(|m| acc.max(m)));
            (min, max)
        }
    }
}

/// Intersects a full-match HIR with the length bounds `[min, max]` where
/// that is exact and easy: when the bounds are implied (the HIR is
/// returned), when they contradict (`Ok(None)`), or when the HIR is a
/// repetition of one character class (the bounds move into the
/// repetition). Otherwise an error.
pub(crate) fn with_length(h: Hir, min: u64, max: Option<u64>) -> Result<Option<Hir>, PatternError> {
    let (a, b) = char_len_range(&h);
    let within = a >= min
        && match (b, max) {
            (_, None) => true,
            (Some(b), Some(m)) => b <= m,
            (None, Some(_)) => false,
        };
    if within {
        return Ok(Some(h));
    }
    if max.is_some_and(|m| m < a || m < min) || b.is_some_and(|b| b < min) {
        return Ok(None);
    }
    let mut core = &h;
    while let HirKind::Capture(c) = core.kind() {
        core = &c.sub;
    }
    let (sub, rmin, rmax) = match core.kind() {
        HirKind::Repetition(r) if matches!(r.sub.kind(), HirKind::Class(_)) => {
            (r.sub.as_ref().clone(), r.min as u64, r.max.map(u64::from))
        }
        HirKind::Class(_) => (core.clone(), 1, Some(1)),
        _ => return Err(PatternError::LengthNotImplied),
    };
    let lo = rmin.max(min);
    let hi = match (rmax, max) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    };
    if hi.is_some_and(|hi| hi < lo) {
        return Ok(None);
    }
    let to32 = |x: u64| u32::try_from(x).map_err(|_| PatternError::LengthTooLarge);
    Ok(Some(Hir::repetition(Repetition {
        min: to32(lo)?,
        max: hi.map(to32).transpose()?,
        greedy: true,
        sub: Box::new(sub),
    })))
}

/// The regex (over the canonical encoding, with quotes) of a constrained
/// string whose decoded content fully matches `full` (a HIR over decoded
/// characters).
#[cfg(test)]
pub(crate) fn constrained_string_regex(full: &Hir) -> Result<String, PatternError> {
    Ok(constrained_string_hir(full)?.to_string())
}

/// [`constrained_string_regex`] as a HIR (for
/// [`zapspec_grammar::Grammar::regex_terminal`]).
pub(crate) fn constrained_string_hir(full: &Hir) -> Result<Hir, PatternError> {
    let quote = || Hir::literal(*b"\"");
    Ok(Hir::concat(vec![quote(), encode_hir(full)?, quote()]))
}

/// Translates a JSON Schema `pattern` into a full-match HIR over decoded
/// characters.
pub(crate) fn translate_pattern(p: &str) -> Result<Hir, PatternError> {
    let re = ecma_to_regex_syntax(p)?;
    let h = parse_hir(&re)?;
    search_to_full_match(&h)
}

/// Regex of canonical JSON string literals (with quotes) whose content is
/// none of `names` (the declared property names). With the trie of the
/// names, a string is not a name iff it *leaves* the trie at some node `v`:
/// it is `v`'s prefix and either ends there (when `v` is no name) or
/// continues with a character that is no child of `v`, then anything.
/// Names of at most [`NESTED_EXCLUSION_DEPTH`] characters get the nested
/// form, `ends | exits rest*` with `ends` and `exits` alternations along
/// the trie ([`trie_alternation`]: each node's character written once);
/// longer ones, and tries whose prefixes are short on average
/// ([`NESTED_MIN_MEAN_PREFIX`]), the flat form, `(?:p(v₁)c(v₁)|…)rest* |
/// (?:p(u₁)|…)`, which writes each node's whole prefix `p(v)` (quadratic in
/// a name's length, but of constant nesting depth, and cheaper to compile
/// for short names).
///
/// Returned as a HIR, which [`zapspec_grammar::Grammar::regex_terminal`]
/// turns into a terminal without the engine re-parsing its text (tens of
/// kilobytes for an object of many long names).
pub(crate) fn key_regex_excluding(names: &[&str]) -> Hir {
    key_regex_excluding_with(names, None)
}

/// [`key_regex_excluding`] in the nested form (`Some(true)`), the flat one
/// (`Some(false)`), or the one it picks (`None`).
fn key_regex_excluding_with(names: &[&str], nested: Option<bool>) -> Hir {
    let mut nodes = vec![NameNode::default()];
    for n in names {
        let mut cur = 0;
        for c in n.chars() {
            let next = nodes.len();
            let e = *nodes[cur].kids.entry(c).or_insert(next);
            if e == next {
                let mut prefix = nodes[cur].prefix.clone();
                prefix.push(c);
                nodes.push(NameNode {
                    prefix,
                    ..NameNode::default()
                });
            }
            cur = e;
        }
        nodes[cur].end = true;
    }
    let Exclusion {
        ascii_raw,
        generic,
        generic_enc,
        rest,
    } = Exclusion::get();
    // Per trie node: whether a key may end there (no name does), its exit
    // through a raw ASCII character, its exit through the other
    // characters when a child is one of them (else the node shares one
    // continuation through `generic` with the other such nodes).
    struct Local {
        may_end: bool,
        exits: Vec<Hir>,
        shared: bool,
    }
    let local: Vec<Local> = nodes
        .iter()
        .map(|node| {
            let kids = ClassUnicode::new(node.kids.keys().map(|&c| ClassUnicodeRange::new(c, c)));
            let mut exits = Vec::new();
            let mut a = ascii_raw.clone();
            a.difference(&kids);
            if a.iter().next().is_some() {
                exits.push(Hir::class(Class::Unicode(a)));
            }
            let raw = |c: char| (' '..='\u{7F}').contains(&c) && c != '"' && c != '\\';
            let shared = node.kids.keys().all(|&c| raw(c));
            if !shared {
                let mut other = generic.clone();
                other.difference(&kids);
                if other.iter().next().is_some() {
                    exits.push(encode_class(&other));
                }
            }
            Local {
                may_end: !node.end,
                exits,
                shared,
            }
        })
        .collect();
    let depth = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    // The flat form writes each node's prefix (its alternation of prefixes
    // compiles to a trie of literals); the nested form writes each
    // character once but as nested alternations, which cost more per
    // node. Nested pays when prefixes are long on average.
    let prefix_chars: usize = nodes.iter().map(|n| n.prefix.len()).sum();
    let nested = nested.unwrap_or(
        depth <= NESTED_EXCLUSION_DEPTH && prefix_chars > NESTED_MIN_MEAN_PREFIX * nodes.len(),
    );
    // (ends, exits, shared) as alternations: nested along the trie when the
    // names are short enough for the regex's nesting, else flat.
    let (ends, exits, shared) = if nested {
        let ends = trie_alternation(&nodes, 0, &|v| {
            if local[v].may_end {
                vec![Hir::empty()]
            } else {
                vec![]
            }
        });
        let exits = trie_alternation(&nodes, 0, &|v| local[v].exits.clone());
        let shared = trie_alternation(&nodes, 0, &|v| {
            if local[v].shared {
                vec![Hir::empty()]
            } else {
                vec![]
            }
        });
        (ends, exits, shared)
    } else {
        let (mut ends, mut exits, mut shared) = (Vec::new(), Vec::new(), Vec::new());
        for (node, l) in nodes.iter().zip(&local) {
            let p = Hir::literal(encode_str(&node.prefix).into_bytes());
            if l.may_end {
                ends.push(p.clone());
            }
            for x in &l.exits {
                exits.push(Hir::concat(vec![p.clone(), x.clone()]));
            }
            if l.shared {
                shared.push(p);
            }
        }
        let alt = |v: Vec<Hir>| (!v.is_empty()).then(|| Hir::alternation(v));
        (alt(ends), alt(exits), alt(shared))
    };
    let mut exits: Vec<Hir> = exits.into_iter().collect();
    if let Some(shared) = shared {
        exits.push(Hir::concat(vec![shared, generic_enc.clone()]));
    }
    let rest = rest.clone();
    let mut alts: Vec<Hir> = ends.into_iter().collect();
    if !exits.is_empty() {
        alts.push(Hir::concat(vec![Hir::alternation(exits), rest]));
    }
    let quote = || Hir::literal(*b"\"");
    Hir::concat(vec![quote(), Hir::alternation(alts), quote()])
}

/// The regex of any JSON string literal in canonical encoding, quotes
/// included (the language [`key_regex_excluding`] takes names out of): its
/// printed text and its HIR, built and printed once per process.
pub(crate) fn any_key() -> &'static (String, std::sync::Arc<Hir>) {
    static ANY: std::sync::OnceLock<(String, std::sync::Arc<Hir>)> = std::sync::OnceLock::new();
    ANY.get_or_init(|| {
        let quote = || Hir::literal(*b"\"");
        let hir = Hir::concat(vec![quote(), Exclusion::get().rest.clone(), quote()]);
        (hir.to_string(), std::sync::Arc::new(hir))
    })
}

/// The parts of every [`key_regex_excluding`] regex that do not depend on
/// the names, built once per process (their encodings take most of the
/// time of a small name set's regex otherwise).
struct Exclusion {
    /// ASCII characters written raw in a JSON string.
    ascii_raw: ClassUnicode,
    /// Every other character (non-ASCII, or escaped).
    generic: ClassUnicode,
    /// The encodings of `generic`'s characters ([`encode_class`]).
    generic_enc: Hir,
    /// Any string content: the encodings of any characters, repeated.
    rest: Hir,
}

impl Exclusion {
    fn get() -> &'static Exclusion {
        static E: std::sync::OnceLock<Exclusion> = std::sync::OnceLock::new();
        E.get_or_init(|| {
            let any = ClassUnicode::new([ClassUnicodeRange::new('\0', '\u{10FFFF}')]);
            // ASCII characters written raw, and everything else (non-ASCII
            // or escaped). Names are mostly ASCII, so the exits of most trie
            // nodes through "everything else" share one continuation —
            // which keeps the DFA at about one state per trie node.
            let mut ascii_raw = ClassUnicode::new([ClassUnicodeRange::new(' ', '\u{7F}')]);
            ascii_raw.difference(&special_class());
            let mut generic = any.clone();
            generic.difference(&ascii_raw);
            Exclusion {
                generic_enc: encode_class(&generic),
                rest: Hir::repetition(Repetition {
                    min: 0,
                    max: None,
                    greedy: true,
                    sub: Box::new(encode_class(&any)),
                }),
                ascii_raw,
                generic,
            }
        })
    }
}

/// Names at most this long (in characters) get [`key_regex_excluding`]'s
/// nested form: its regex nests about two groups per character, within
/// `regex-syntax`'s limit of 250 (the text is still parsed by consumers
/// that are not handed the HIR).
const NESTED_EXCLUSION_DEPTH: usize = 48;

/// [`key_regex_excluding`] takes the nested form only when the trie's
/// prefixes average more than this many bytes.
const NESTED_MIN_MEAN_PREFIX: usize = 10;

/// A node of the trie of [`key_regex_excluding`]'s names.
#[derive(Default)]
struct NameNode {
    /// A name ends here.
    end: bool,
    kids: std::collections::BTreeMap<char, usize>,
    /// The characters from the root.
    prefix: String,
}

/// The alternation, over the trie below `v`, of `here(u)` after the
/// encoding of the path from `v` to `u`: `here(v) | c₁ T(v₁) | c₂ T(v₂) …`,
/// each path written once (the flat form writes every node's whole
/// prefix). `None` when nothing below `v` contributes. Recursion depth: the
/// longest name (at most [`NESTED_EXCLUSION_DEPTH`]).
fn trie_alternation(nodes: &[NameNode], v: usize, here: &dyn Fn(usize) -> Vec<Hir>) -> Option<Hir> {
    let mut alts = here(v);
    for (&c, &k) in &nodes[v].kids {
        if let Some(sub) = trie_alternation(nodes, k, here) {
            let enc = Hir::literal(encode_str(&c.to_string()).into_bytes());
            alts.push(Hir::concat(vec![enc, sub]));
        }
    }
    (!alts.is_empty()).then(|| Hir::alternation(alts))
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// The nested and the flat exclusion regexes are both exactly the
        /// keys that are no name (brute force), escapes and non-ASCII
        /// characters included.
        #[test]
        fn key_exclusion_forms_equal_brute_force(
            names in proptest::collection::vec("[ab\"\\\n\u{1}é]{0,4}", 0..6),
            keys in proptest::collection::vec("[abc\"\\\n\u{1}éz]{0,5}", 1..24),
        ) {
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let nested = dfa(&key_regex_excluding_with(&refs, Some(true)).to_string());
            let flat = dfa(&key_regex_excluding_with(&refs, Some(false)).to_string());
            // the terminal the compiler writes, and the regex it stands for
            let encoded: Vec<Vec<u8>> =
                names.iter().map(|n| format!("\"{}\"", encode_str(n)).into_bytes()).collect();
            let any = any_key().0.clone();
            let except = TerminalDfa::compile(&Terminal::except(any.clone(), encoded.clone())).unwrap();
            let stands = dfa(&crate::except_as_regex(&any, &encoded).unwrap());
            let mut all = keys.clone();
            all.extend(names.iter().cloned());
            for k in &all {
                let enc = format!("\"{}\"", encode_str(k));
                let want = !names.contains(k);
                proptest::prop_assert_eq!(nested.matches(enc.as_bytes()), want, "nested, key {:?}", k);
                proptest::prop_assert_eq!(flat.matches(enc.as_bytes()), want, "flat, key {:?}", k);
                proptest::prop_assert_eq!(except.matches(enc.as_bytes()), want, "except, key {:?}", k);
                proptest::prop_assert_eq!(stands.matches(enc.as_bytes()), want, "except's regex, key {:?}", k);
            }
            proptest::prop_assert!(!except.matches(b"\"\\u0061\""), "only canonical encodings");
        }
    }
    use zapspec_grammar::dfa::TerminalDfa;
    use zapspec_grammar::Terminal;

    fn dfa(re: &str) -> TerminalDfa {
        TerminalDfa::regex(re).unwrap_or_else(|e| panic!("{re}: {e}"))
    }

    fn pat(p: &str) -> TerminalDfa {
        dfa(&constrained_string_regex(&translate_pattern(p).unwrap()).unwrap())
    }

    fn js(s: &str) -> Vec<u8> {
        serde_json::to_string(s).unwrap().into_bytes()
    }

    #[test]
    fn free_strings_count_decoded_chars() {
        let d = dfa(&free_string_regex(2, Some(3)));
        for (s, ok) in [
            (r#""ab""#, true),
            (r#""a""#, false),
            (r#""\u00e9\n""#, true),
            (r#""\ud83d\ude00x""#, true),
            (r#""\ud83d\ude00""#, false),
            (r#""\ud83dxx""#, false),
            (r#""abcd""#, false),
            ("\"é😀\"", true),
            ("\"a\nb\"", false),
        ] {
            assert_eq!(d.matches(s.as_bytes()), ok, "{s}");
        }
    }

    #[test]
    fn patterns_are_searched_and_encoded() {
        let d = pat("^[a-z]+$");
        assert!(d.matches(&js("abc")) && !d.matches(&js("ab1")) && !d.matches(&js("")));
        let d = pat("b");
        assert!(d.matches(&js("abc")) && d.matches(&js("b")) && !d.matches(&js("ac")));
        assert!(
            d.matches(&js("a\"b\n")),
            "padding covers escaped characters"
        );
        let d = pat("^\"\\d\\\\$");
        assert!(d.matches(&js("\"5\\")) && !d.matches(&js("\"x\\")));
        let d = pat("^$|^a(b|c)$");
        assert!(
            d.matches(&js(""))
                && d.matches(&js("ac"))
                && !d.matches(&js("xac"))
                && !d.matches(&js("a"))
        );
        let d = pat("^a|b$");
        assert!(d.matches(&js("ax")) && d.matches(&js("xb")) && !d.matches(&js("xa")));
        let d = pat("^a.c$");
        assert!(d.matches(&js("abc")) && !d.matches(&js("a\nc")));
        let d = pat("^[\\w-]{2}$");
        assert!(d.matches(&js("a-")) && !d.matches(&js("é-")));
        let d = pat("^a(b+)?c$");
        assert!(d.matches(&js("ac")) && d.matches(&js("abbc")) && !d.matches(&js("abc?")));
        let d = pat("^x{2}\\{y}$");
        assert!(d.matches(&js("xx{y}")));
        assert!(translate_pattern("\\bfoo").is_err());
        assert!(translate_pattern("(?=a)").is_err());
        assert!(translate_pattern("(a)\\1").is_err());
        assert!(translate_pattern("a(^b)").is_err());
    }

    #[test]
    fn length_meets_pattern() {
        let h = translate_pattern("^[a-z]+$").unwrap();
        let h = with_length(h, 2, Some(3)).unwrap().unwrap();
        let d = dfa(&constrained_string_regex(&h).unwrap());
        assert!(d.matches(&js("ab")) && !d.matches(&js("a")) && !d.matches(&js("abcd")));
        let h = translate_pattern("^[0-9]{4}$").unwrap();
        assert!(with_length(h.clone(), 0, Some(10)).unwrap().is_some());
        assert!(with_length(h, 5, None).unwrap().is_none());
        assert!(with_length(translate_pattern("^a+b$").unwrap(), 0, Some(3)).is_err());
    }

    #[test]
    fn keys_exclude_declared_names() {
        let d = dfa(&key_regex_excluding(&["a", "ab", "b\"c"]).to_string());
        for (k, ok) in [
            ("a", false),
            ("ab", false),
            ("b\"c", false),
            ("", true),
            ("abc", true),
            ("b", true),
            ("x\n", true),
            ("b\"", true),
        ] {
            assert_eq!(d.matches(&js(k)), ok, "{k:?}");
        }
        assert!(!d.matches(b"\"\\u0061\""), "only canonical encodings");
    }
}
