//! `enum` and `const`: each member that satisfies the sibling keywords is
//! one alternative, written as serde_json writes it (strings with
//! canonical escaping; in flexible mode objects and arrays are tokenised so
//! that whitespace may appear between their tokens), except numbers, also
//! inside arrays and objects: JSON Schema compares them by value, so a
//! number is a regex of the plain decimals with its value (`1`, `1.0`,
//! `1.00` for `1`; `-0` for `0`; no exponent forms). An `enum` of at
//! least [`ENUM_GROUP_MIN`] strings has its string members grouped: sorted
//! runs of members, each one regex terminal (the alternation of their
//! literals), which the engine builds lazily as a trie.
//!
//! Members are checked against the sibling keywords of scalar types
//! (`type`, numeric bounds, `minLength`/`maxLength`, `pattern`, `format`)
//! directly. Object or array members next to object/array keywords are
//! checked by the compiler's own grammar of those keywords (compiled at the
//! same pointer, references resolved against the same root) recognising
//! the member with its keys in the grammar's order; a sibling keyword the
//! compiler refuses refuses the schema. That grammar is recognised with
//! lazily built terminal automata (`Recognizer::new_lazy`): a member is a
//! few hundred bytes, and building every terminal's DFA in full (a long
//! `maxLength`, a `format`) cost more than all the checks; a lazy
//! automaton that reaches its state bound refuses the schema
//! (`SchemaError::LimitExceeded`).

use serde_json::Value;

use std::rc::Rc;

use super::canonical::canonical_at;
use super::emit::{bounds, lit, multiple_of, not_pattern_hirs, re, string_hir, Emitter};
use super::error::SchemaError;
use super::numbers::value_regex;
use super::schema::{Simple, Sub, TypeSet};
use super::Whitespace;
use zapspec_grammar::dfa::TerminalDfa;
use zapspec_grammar::ir::{NtId, Symbol};
use zapspec_grammar::Recognizer;
use zapspec_grammar::{Limit, RegexLimits};

/// Most enum-member checks inside one another ([`Emitter::compile_sub`]):
/// a recursive schema whose `enum` sits beside keywords that reach the
/// same `enum` again is refused at this depth.
const MAX_MEMBER_NESTING: usize = 4;

/// An `enum` with at least this many string members has them grouped into
/// regex terminals ([`Emitter::string_members`]); shorter ones keep one
/// literal rule per member (fused by the engine like any small grammar).
pub(crate) const ENUM_GROUP_MIN: usize = 64;

/// The most bytes of member texts in one grouped terminal: an NFA of a few
/// thousand states, well within the engine's bound for building a
/// terminal lazily, and a few dozen terminals for a 35,000-string `enum`.
const ENUM_GROUP_BYTES: usize = 8 << 10;

impl<'a> Emitter<'a> {
    pub(crate) fn enum_values(
        &mut self,
        nt: NtId,
        s: &Simple<'a>,
        types: TypeSet,
        values: &[Value],
    ) -> Result<(), SchemaError> {
        let mut any = false;
        // A long list of strings becomes a few regex terminals, each the
        // alternation of a sorted run of members (`string_members`),
        // instead of one literal rule per member.
        let grouped = values.iter().filter(|v| v.is_string()).count() >= ENUM_GROUP_MIN;
        let mut strings: Vec<String> = Vec::new();
        for v in values {
            if self.member_ok(s, types, v)? {
                if let (true, Value::String(_)) = (grouped, v) {
                    strings.push(v.to_string());
                    any = true;
                    continue;
                }
                // Drafts 3–4 with `integer` but not `number`: `2.0` is no
                // integer there, so only the integer spelling is a member.
                let lexical = self.norm.integer_lexical && !types.contains(TypeSet::NUMBER);
                if let (true, Value::Number(n)) = (lexical, v) {
                    match value_regex(n, true) {
                        Some(r) => self.g.add_rule(nt, vec![re(r)]),
                        None => continue,
                    }
                    any = true;
                    continue;
                }
                // numbers, also inside arrays and objects, by value
                let syms = self.literal_symbols(v);
                self.g.add_rule(nt, syms);
                any = true;
            }
        }
        self.string_members(nt, strings);
        if !any {
            self.norm
                .note_unsat(&s.ptr, "no enum/const value satisfies the sibling keywords");
        }
        Ok(())
    }

    /// The string members of a long `enum` (their JSON texts, quotes
    /// included): sorted, deduplicated and cut into runs of at most
    /// [`ENUM_GROUP_BYTES`] bytes, each one regex terminal, the alternation
    /// of its members' literals. The engine builds each run's automaton
    /// lazily (a trie of the run's members: a token is classified by the
    /// prefix it reads, not by a pass over every member), and sorted runs
    /// keep the members of one prefix in few terminals. Before, every
    /// member was a literal rule of its own: a 35,000-string `enum` gave
    /// the parser 35,000 items and terminals to classify per mask.
    fn string_members(&mut self, nt: NtId, mut texts: Vec<String>) {
        use regex_syntax::hir::Hir;
        texts.sort_unstable();
        texts.dedup();
        let mut run: Vec<Hir> = Vec::new();
        let mut bytes = 0usize;
        let flush = |run: &mut Vec<Hir>, g: &mut zapspec_grammar::Grammar| {
            if !run.is_empty() {
                let t = g.regex_terminal(Hir::alternation(std::mem::take(run)));
                g.add_rule(nt, vec![Symbol::T(t)]);
            }
        };
        for t in texts {
            if bytes + t.len() > ENUM_GROUP_BYTES && !run.is_empty() {
                flush(&mut run, &mut self.g);
                bytes = 0;
            }
            bytes += t.len();
            run.push(Hir::literal(t.into_bytes()));
        }
        flush(&mut run, &mut self.g);
    }

    fn member_ok(
        &mut self,
        s: &Simple<'a>,
        types: TypeSet,
        v: &Value,
    ) -> Result<bool, SchemaError> {
        let ptr = &s.ptr;
        Ok(match v {
            Value::Null | Value::Bool(_) => types.admits(v),
            Value::Number(n) => {
                types.admits(v)
                    && bounds(&s.number).contains(n.as_f64().unwrap_or(f64::NAN))
                    && multiple_of(&s.number, ptr)?.is_none_or(|m| m.contains(n))
            }
            Value::String(st) => {
                if !types.contains(TypeSet::STRING) {
                    return Ok(false);
                }
                let sk = &s.string;
                if sk.not_in.iter().any(|x| x == st) {
                    return Ok(false);
                }
                let len = st.chars().count() as u64;
                let min = sk.min_length.unwrap_or(0);
                if len < min || sk.max_length.is_some_and(|m| len > m) {
                    return Ok(false);
                }
                for (h, kw) in string_hir(sk, ptr, &mut self.format_notes)? {
                    if !hir_matches(&h, st, kw, ptr)? {
                        return Ok(false);
                    }
                }
                for h in not_pattern_hirs(sk, ptr)? {
                    if hir_matches(&h, st, "not", ptr)? {
                        return Ok(false);
                    }
                }
                true
            }
            Value::Array(_) | Value::Object(_) => {
                if !types.admits(v) {
                    return Ok(false);
                }
                if s.array != Default::default() || s.object != Default::default() {
                    return self.container_member_ok(s, v);
                }
                true
            }
        })
    }

    /// Whether the object or array `v` satisfies the keywords beside its
    /// `enum`/`const` (`s` without them): the compiler's own grammar of
    /// those keywords, at the same pointer of the same root, recognises `v`
    /// with its keys in the grammar's order ([`canonical_at`]). Exact
    /// wherever that grammar is exact; where the grammar is a documented
    /// sound subset, a member outside it is left out, never added. A
    /// sibling keyword the compiler refuses refuses the schema.
    fn container_member_ok(&mut self, s: &Simple<'a>, v: &Value) -> Result<bool, SchemaError> {
        let ptr = &s.ptr;
        // the keywords beside `enum`, without the complements and further
        // patterns that `not`/`allOf` added (about strings only)
        let mut sibling = s.clone();
        sibling.enum_values = None;
        sibling.string.not_in.clear();
        sibling.string.not_patterns.clear();
        sibling.string.patterns.truncate(1);
        let sub = Sub::Simple(Box::new(sibling));
        let key = self.keys.key(&sub);
        let rec = match self.member_checks.get(&key) {
            Some(r) => r.clone(),
            None => {
                if self.member_nesting >= MAX_MEMBER_NESTING {
                    return Err(SchemaError::unsupported(
                        "enum",
                        ptr,
                        format!(
                            "object/array members checked against sibling keywords nested more than {MAX_MEMBER_NESTING} deep (a recursive schema)"
                        ),
                    ));
                }
                let rec = match self.compile_sub(&sub, ptr) {
                    Ok((g, _)) => Some(Rc::new(Recognizer::new_lazy(&g).map_err(|e| {
                        SchemaError::unsupported(
                            "enum",
                            ptr,
                            format!("the sibling keywords' grammar: {e}"),
                        )
                    })?)),
                    Err(SchemaError::Unsatisfiable { .. }) => None,
                    Err(e) => return Err(e),
                };
                self.member_checks.insert(key, rec.clone());
                rec
            }
        };
        let Some(rec) = rec else { return Ok(false) };
        let cands = canonical_at(self.norm.root, &sub, ptr, v, self.opts)?;
        let ok = cands
            .iter()
            .any(|c| rec.recognizes(c.to_string().as_bytes()));
        if rec.overflowed() {
            return Err(SchemaError::LimitExceeded {
                limit: zapspec_grammar::Limit::DfaStates,
                max: zapspec_grammar::RegexLimits::default().dfa_states,
                pointer: ptr.to_string(),
                detail: "an enum member checked against the sibling keywords' grammar".into(),
            });
        }
        Ok(ok)
    }

    /// The tokens of a JSON value (one literal when compact), with the
    /// whitespace symbol between any two tokens when flexible. A number is
    /// a regex of the texts with its value ([`value_regex`]: `1`, `1.0`,
    /// `1.00` for `1`), as JSON Schema compares numbers by value.
    pub(crate) fn literal_symbols(&mut self, v: &Value) -> Vec<Symbol> {
        if let Whitespace::Indent { indent, .. } = &self.opts.whitespace {
            if matches!(v, Value::Array(_) | Value::Object(_)) {
                return self.indented_literal(v, indent);
            }
        }
        let ws = self.ws();
        if ws.is_none() && !matches!(v, Value::Array(_) | Value::Object(_)) {
            return vec![token_symbol(&Tok::of(v))];
        }
        let mut tokens: Vec<Tok> = Vec::new();
        enum Item<'v> {
            Val(&'v Value),
            Tok(String),
        }
        // explicit stack, so deep values cannot overflow the call stack
        let mut stack = vec![Item::Val(v)];
        while let Some(it) = stack.pop() {
            match it {
                Item::Tok(t) => tokens.push(Tok::Text(t)),
                Item::Val(Value::Array(a)) => {
                    let mut seq = vec![Item::Tok("[".into())];
                    for (i, x) in a.iter().enumerate() {
                        if i > 0 {
                            seq.push(Item::Tok(",".into()));
                        }
                        seq.push(Item::Val(x));
                    }
                    seq.push(Item::Tok("]".into()));
                    stack.extend(seq.into_iter().rev());
                }
                Item::Val(Value::Object(m)) => {
                    let mut seq = vec![Item::Tok("{".into())];
                    for (i, (k, x)) in m.iter().enumerate() {
                        if i > 0 {
                            seq.push(Item::Tok(",".into()));
                        }
                        seq.push(Item::Tok(Value::String(k.clone()).to_string()));
                        seq.push(Item::Tok(":".into()));
                        seq.push(Item::Val(x));
                    }
                    seq.push(Item::Tok("}".into()));
                    stack.extend(seq.into_iter().rev());
                }
                Item::Val(x) => tokens.push(Tok::of(x)),
            }
        }
        let Some(ws) = ws else {
            // compact (serde_json's text) or with fixed separators: runs of
            // text as one literal, numbers as regexes between them
            let (item, key) = self.separators();
            let mut out = Vec::new();
            let mut text = String::new();
            for t in &tokens {
                match t {
                    Tok::Text(t) => text.push_str(match t.as_str() {
                        "," => item,
                        ":" => key,
                        t => t,
                    }),
                    Tok::Number(_) => {
                        if !text.is_empty() {
                            out.push(lit(&std::mem::take(&mut text)));
                        }
                        out.push(token_symbol(t));
                    }
                }
            }
            if !text.is_empty() || out.is_empty() {
                out.push(lit(&text));
            }
            return out;
        };
        let mut out = Vec::with_capacity(tokens.len() * 2);
        for (i, t) in tokens.iter().enumerate() {
            if i > 0 {
                out.push(ws.clone());
            }
            out.push(token_symbol(t));
        }
        out
    }
}

impl<'a> Emitter<'a> {
    /// The container `v` laid out as [`Whitespace::Indent`] writes it at
    /// the depth of the value being emitted (`json.dumps(v, indent=…)`,
    /// shifted by that depth): runs of text as one literal, numbers as
    /// regexes of the texts with their value between them.
    fn indented_literal(&self, v: &Value, indent: &str) -> Vec<Symbol> {
        let (item, key) = self.separators();
        let nl = |d: usize| format!("\n{}", indent.repeat(d));
        enum Item<'v> {
            Val(&'v Value, usize),
            Text(String),
        }
        let mut out = Vec::new();
        let mut text = String::new();
        // explicit stack, so deep values cannot overflow the call stack
        let mut stack = vec![Item::Val(v, self.jdepth)];
        while let Some(it) = stack.pop() {
            match it {
                Item::Text(t) => text.push_str(&t),
                Item::Val(Value::Array(a), d) if !a.is_empty() => {
                    let mut seq = vec![Item::Text("[".into())];
                    for (i, x) in a.iter().enumerate() {
                        let sep = if i > 0 { item } else { "" };
                        seq.push(Item::Text(format!("{sep}{}", nl(d + 1))));
                        seq.push(Item::Val(x, d + 1));
                    }
                    seq.push(Item::Text(format!("{}]", nl(d))));
                    stack.extend(seq.into_iter().rev());
                }
                Item::Val(Value::Object(m), d) if !m.is_empty() => {
                    let mut seq = vec![Item::Text("{".into())];
                    for (i, (k, x)) in m.iter().enumerate() {
                        let sep = if i > 0 { item } else { "" };
                        let k = Value::String(k.clone());
                        seq.push(Item::Text(format!("{sep}{}{k}{key}", nl(d + 1))));
                        seq.push(Item::Val(x, d + 1));
                    }
                    seq.push(Item::Text(format!("{}}}", nl(d))));
                    stack.extend(seq.into_iter().rev());
                }
                Item::Val(Value::Number(n), _) => {
                    if !text.is_empty() {
                        out.push(lit(&std::mem::take(&mut text)));
                    }
                    out.push(token_symbol(&Tok::Number(n)));
                }
                // scalars, `[]` and `{}`
                Item::Val(x, _) => text.push_str(&x.to_string()),
            }
        }
        if !text.is_empty() || out.is_empty() {
            out.push(lit(&text));
        }
        out
    }
}

/// One token of a literal value: text, or a number (matched by value).
enum Tok<'v> {
    Text(String),
    Number(&'v serde_json::Number),
}

impl<'v> Tok<'v> {
    /// A scalar value's token.
    fn of(v: &'v Value) -> Tok<'v> {
        match v {
            Value::Number(n) => Tok::Number(n),
            v => Tok::Text(v.to_string()),
        }
    }
}

/// A token's symbol: a literal, or a number's regex of the texts with its
/// value (its own text where the value is beyond `u128`).
fn token_symbol(t: &Tok<'_>) -> Symbol {
    match t {
        Tok::Text(t) => lit(t),
        Tok::Number(n) => value_regex(n, false).map_or_else(|| lit(&n.to_string()), re),
    }
}

/// Whether `text` is a full match of the Unicode HIR `h` (a `pattern` or
/// `format` of keyword `kw`): a lazily built automaton, stepped over the
/// text's bytes only (no determinisation of the whole pattern, no printing
/// and re-parsing of the HIR).
fn hir_matches(
    h: &regex_syntax::hir::Hir,
    text: &str,
    kw: &str,
    ptr: &str,
) -> Result<bool, SchemaError> {
    let limits = RegexLimits::default();
    let d = TerminalDfa::lazy_hir(h, kw, &limits)
        .map_err(|e| SchemaError::unsupported(kw, ptr, e.to_string()))?;
    let hit = d.matches(text.as_bytes());
    if d.overflowed() {
        return Err(SchemaError::limit(
            Limit::DfaStates,
            limits.dfa_states,
            ptr,
            format!(
                "{kw}: the pattern's automaton exceeds {} states",
                limits.dfa_states
            ),
        ));
    }
    Ok(hit)
}
