//! Objects and arrays as BNF.
//!
//! **Objects.** The declared members (`properties` in order, then required
//! names `properties` lacks) are visited left to right by states `S(i, c)`
//! — at declared member `i` with `c` members written so far — each either
//! writing member `i` (preceded by `,` when `c > 0`) or, if optional,
//! skipping it. After the last declared member, `S(n, c)` may end (when
//! `c ≥ minProperties`) or write an additional member (key: any canonical
//! string but a declared name; value: the `additionalProperties` schema).
//! `c` is counted exactly up to the largest of `minProperties`,
//! `maxProperties` and 1, and saturates when there is no maximum, so the
//! grammar has `O(n · cap)` nonterminals and commas are exact.
//!
//! **Arrays.** States `T(j)` after `j` items: end with `]` if
//! `j ≥ minItems`, or write item `j` (schema `prefixItems[j]`, or `items`
//! past the prefix) if `j < maxItems`. Past the prefix and `minItems`,
//! with no `maxItems`, the state loops. With `contains: C` (at least
//! `minContains`, default 1, items valid under `C`) the states also count
//! the items written as `item ∧ C`, up to `minContains` (`T(j, c)`), and
//! `]` needs `c = minContains`; an item may be written either way (the
//! grammar is ambiguous there, its language exact). `maxContains` would
//! need the items *not* valid under `C` and is refused.

use rustc_hash::FxHashMap as HashMap;

use super::emit::{lit, not_pattern_hirs, re, string_hir, Emitter, FormatNotes};
use super::error::{push_ptr, Sat, SchemaError, Unsat};
use super::keys::{KeyAutomaton, KeyBranch, KeyFilter, KeyPattern, RegionGrammar};
use super::normalize::Normalizer;
use super::schema::{pattern_properties, Simple, Sub, TypeSet};
use super::strings::{encode_str, key_regex_excluding, ClassTexts};
use super::PropertyOrder;
use zapspec_grammar::ir::{NtId, Symbol, Terminal};

/// Largest `minContains` compiled (the array states are multiplied by it
/// plus one).
const MAX_MIN_CONTAINS: u64 = 64;

/// Most states of an object written in any order ([`PropertyOrder::Any`]):
/// `2^n` sets of declared members times the counted members.
const MAX_ANY_ORDER_STATES: u64 = 1 << 16;

/// An object written in any order: its members' symbols and counts.
struct AnyOrder<'m, 'a> {
    members: &'m [Member<'a>],
    member_syms: &'m [Vec<Symbol>],
    extra: Option<&'m [Symbol]>,
    /// `minProperties` where it exceeds the required members, else 0.
    min: u64,
    /// `maxProperties` where it constrains.
    max: Option<u64>,
    /// Where the member count saturates without `maxProperties`.
    cap: u64,
}

/// One declared member: name, value schema, required.
struct Member<'a> {
    name: String,
    schema: Sub<'a>,
    required: bool,
}

/// The members of an object schema as the grammar lays them out.
pub(crate) struct Layout<'a> {
    /// Declared members in grammar order: (name, schema, required).
    pub members: Vec<(String, Sub<'a>, bool)>,
    /// Names that additional keys must differ from.
    pub names: Vec<String>,
    /// The `additionalProperties` schema (`true` when absent).
    pub additional: Sub<'a>,
    /// `patternProperties`: compiled patterns and their schemas.
    pub patterns: Vec<(KeyPattern, Sub<'a>)>,
    /// `propertyNames` (`None`: every key allowed).
    pub filter: Option<KeyFilter>,
}

impl<'a> Layout<'a> {
    /// The schema the value of an *undeclared* key must satisfy: the
    /// conjunction of the schemas of the patterns it matches, or
    /// `additionalProperties` when it matches none.
    pub fn extra_schema(&self, key: &str) -> Sub<'a> {
        let matched: Vec<Sub<'a>> = self
            .patterns
            .iter()
            .filter(|(p, _)| p.matches(key))
            .map(|(_, v)| v.clone())
            .collect();
        if matched.is_empty() {
            self.additional.clone()
        } else {
            Sub::all(matched)
        }
    }
}

/// Parses `propertyNames: P` of a simple schema into a [`KeyFilter`]
/// (`None` when it allows every key).
///
/// Keys are strings, so `P` is normalised like any schema (`$ref`,
/// `allOf`, `anyOf`, `oneOf`, `not`, `if` …, into a union of simple
/// schemas) and only what each simple schema says about strings is kept:
/// a branch whose `type` excludes strings allows no key; otherwise its
/// `pattern`s and `format`, `not: {pattern}`, `not: {enum|const}`,
/// `enum`/`const` (string members), `minLength`/`maxLength` form one
/// [`KeyBranch`], exactly as they constrain a string value. Keywords of
/// other types hold for every string and are dropped. A construct the
/// normaliser or the string compiler refuses inside `P` is refused as
/// [`SchemaError::Unsupported`] on `propertyNames` (the reason names the
/// inner keyword and its pointer).
pub(crate) fn key_filter<'a>(
    s: &Simple<'a>,
    norm: &mut Normalizer<'a>,
    notes: &mut FormatNotes,
) -> Result<Option<KeyFilter>, SchemaError> {
    let Some(p) = &s.object.property_names else {
        return Ok(None);
    };
    let pptr = push_ptr(&s.ptr, "propertyNames");
    let wrap = |e: SchemaError| match e {
        SchemaError::Unsupported {
            keyword,
            pointer,
            reason,
        } => SchemaError::Unsupported {
            keyword: "propertyNames".into(),
            pointer: pptr.clone(),
            reason: format!("`{keyword}` at `{pointer}`: {reason}"),
        },
        e => e,
    };
    // a branch of `P` that is contradictory is no contradiction of the
    // object (it allows fewer keys): keep the first one noted for the schema
    let saved = norm.first_unsat.clone();
    let branches = norm.branches(p, &pptr).map_err(wrap);
    norm.first_unsat = saved;
    let mut out = Vec::new();
    for b in &branches? {
        if !b.types().contains(TypeSet::STRING) {
            continue;
        }
        let m = &b.string;
        let min = m.min_length.unwrap_or(0);
        let max = m.max_length;
        if max.is_some_and(|x| x < min) {
            continue;
        }
        let only: Option<Vec<String>> = b.enum_values.as_ref().map(|a| {
            a.iter()
                .filter_map(|v| v.as_str())
                .map(str::to_string)
                .collect()
        });
        if only.as_ref().is_some_and(Vec::is_empty) {
            continue; // no string member
        }
        let excluded = m.not_in.clone();
        let to_pat = |(h, kw): (regex_syntax::hir::Hir, &str)| {
            KeyPattern::from_hir(kw, h)
                .map_err(|r| r.into_schema("propertyNames", &pptr, &format!("({kw}) ")))
        };
        let must = string_hir(m, &b.ptr, notes)
            .map_err(wrap)?
            .into_iter()
            .map(to_pat)
            .collect::<Result<Vec<_>, _>>()?;
        let must_not = not_pattern_hirs(m, &b.ptr)
            .map_err(wrap)?
            .into_iter()
            .map(|h| to_pat((h, "not")))
            .collect::<Result<Vec<_>, _>>()?;
        let branch = KeyBranch {
            must,
            must_not,
            excluded,
            only,
            min,
            max,
        };
        if branch.is_unconstrained() {
            return Ok(None);
        }
        out.push(branch);
    }
    Ok(Some(KeyFilter { branches: out }))
}

/// The layout of an object schema; [`Sat::No`] when a required member is
/// impossible. `norm` and `notes` serve `propertyNames`, whose schema is
/// normalised against the same document. `closed`: an absent
/// `additionalProperties` is `false` in an object that declares
/// `properties` or `patternProperties` ([`JsonSchemaOptions::closed_objects`],
/// a narrowing applied only where objects are emitted, never inside the
/// proofs and complements of `normalize`).
///
/// [`JsonSchemaOptions::closed_objects`]: super::JsonSchemaOptions::closed_objects
pub(crate) fn object_layout<'a>(
    s: &Simple<'a>,
    norm: &mut Normalizer<'a>,
    notes: &mut FormatNotes,
    closed: bool,
) -> Result<Sat<Layout<'a>>, SchemaError> {
    let ptr = &s.ptr;
    let o = &s.object;
    let no_props = Vec::new();
    let props = o.properties.as_ref().unwrap_or(&no_props);
    let required = &o.required;
    // strict mode closes the objects that declare their members; one that
    // declares none (`{"type": "object"}`, vLLM's `json_object`) stays open
    let declares = o.properties.is_some() || o.pattern_properties.is_some();
    let absent = if closed && declares {
        Sub::FALSE
    } else {
        Sub::TRUE
    };
    let additional = o.additional_properties.clone().unwrap_or(absent);
    let patterns = pattern_properties(o, ptr)?;
    let filter = key_filter(s, norm, notes)?;
    let name_ok = |k: &str| filter.as_ref().is_none_or(|f| f.accepts(k));
    let mut members = Vec::new();
    let mut names = Vec::new();
    for (k, v) in props {
        names.push(k.clone());
        let req = required.contains(k);
        if !name_ok(k) {
            // `propertyNames` forbids the key: the member never appears
            if req {
                return Ok(Sat::No(Unsat::NameRejected(k.clone())));
            }
            continue;
        }
        // a declared key must also satisfy every pattern it matches
        let mut parts = vec![v.clone()];
        parts.extend(
            patterns
                .iter()
                .filter(|(p, _)| p.matches(k))
                .map(|(_, s)| s.clone()),
        );
        let v = &if parts.len() == 1 {
            v.clone()
        } else {
            Sub::all(parts)
        };
        if v.is_false() {
            if req {
                return Ok(Sat::No(Unsat::RequiredFalse(k.clone())));
            }
            continue;
        }
        members.push((k.clone(), v.clone(), req));
    }
    let mut layout = Layout {
        members,
        names,
        additional,
        patterns,
        filter,
    };
    for r in required {
        if !props.iter().any(|(n, _)| n == r) {
            if layout.filter.as_ref().is_some_and(|f| !f.accepts(r)) {
                return Ok(Sat::No(Unsat::NameRejected(r.clone())));
            }
            let sch = layout.extra_schema(r);
            if sch.is_false() {
                return Ok(Sat::No(Unsat::RequiredNotAllowed(r.clone())));
            }
            layout.names.push(r.clone());
            layout.members.push((r.clone(), sch, true));
        }
    }
    Ok(Sat::Yes(layout))
}

/// How the keys of one region are written.
enum KeyPlan {
    /// One regex terminal (quoted canonical encodings).
    Regex(String),
    /// One regex terminal given as its HIR (added with
    /// [`zapspec_grammar::Grammar::regex_terminal`]).
    Hir(regex_syntax::hir::Hir),
    /// The keys that are none of the object's declared names (the
    /// emitter's [`Emitter::excluding_terminal`], built once per name set).
    Undeclared,
    /// A right-linear grammar of the region's automaton.
    Region(RegionGrammar),
    /// The keys both HIRs match ([`Terminal::And`]): no declared name, and
    /// the pattern (second, a counted repetition where the pattern is one).
    And(regex_syntax::hir::Hir, regex_syntax::hir::Hir),
}

/// The regions of undeclared keys (keys other than `names`, and allowed
/// by `filter`, the `propertyNames` of the object) with their value
/// schemas and schema pointers: one region for `additionalProperties`
/// without patterns, else the regions of `patternProperties` (see
/// [`super::keys`]). Regions whose schema is `false` are left out, so the
/// result is empty when no undeclared key is allowed. Without patterns and
/// filter the one region is a trie-complement regex; otherwise the
/// regions are read off the product automaton of the patterns, the names
/// and the filter.
fn extra_regions<'a>(
    ptr: &str,
    names: &[&str],
    additional: &Sub<'a>,
    patterns: &[(KeyPattern, Sub<'a>)],
    filter: Option<&KeyFilter>,
    intersections: bool,
) -> Result<Vec<(KeyPlan, Sub<'a>, String)>, SchemaError> {
    if filter.is_some_and(|f| f.branches.is_empty()) {
        return Ok(vec![]); // `propertyNames` allows no key
    }
    if patterns.is_empty() {
        if additional.is_false() {
            return Ok(vec![]);
        }
        if filter.is_none() {
            return Ok(vec![(
                KeyPlan::Undeclared,
                additional.clone(),
                push_ptr(ptr, "additionalProperties"),
            )]);
        }
    }
    let pats: Vec<&KeyPattern> = patterns.iter().map(|(p, _)| p).collect();
    let kw = if pats.is_empty() {
        "propertyNames"
    } else {
        "patternProperties"
    };
    let ka =
        KeyAutomaton::with_filter(&pats, names, filter).map_err(|r| r.into_schema(kw, ptr, ""))?;
    let pp_ptr = push_ptr(ptr, "patternProperties");
    // The keys no pattern matches need not exclude the declared names that
    // some pattern matches: their automaton (built only when that leaves
    // names out) has the trie of the other names alone, where the full
    // product copies a pattern's counter at every node of the names' trie.
    let unmatched: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !pats.iter().any(|p| p.matches(n)))
        .collect();
    let mut out = Vec::new();
    for set in ka.regions() {
        let bits: Vec<usize> = (0..pats.len()).filter(|i| set >> i & 1 == 1).collect();
        let (schema, sptr) = match bits.as_slice() {
            [] => (additional.clone(), push_ptr(ptr, "additionalProperties")),
            [i] => (patterns[*i].1.clone(), push_ptr(&pp_ptr, &pats[*i].source)),
            _ => (
                Sub::all(bits.iter().map(|&i| patterns[i].1.clone()).collect()),
                pp_ptr.clone(),
            ),
        };
        if schema.is_false() {
            continue;
        }
        let key = match bits.as_slice() {
            [i] if ka.region_is_pattern(set, *i) => KeyPlan::Hir(pats[*i].key_hir.clone()),
            // one pattern with a long bounded repetition, some names in
            // it: the pattern without the names (written out, the region
            // multiplies the count by the names' trie)
            [i] if intersections
                && pats.len() == 1
                && filter.is_none()
                && long_bounded(&pats[*i].key_hir) =>
            {
                KeyPlan::And(key_regex_excluding(names), pats[*i].key_hir.clone())
            }
            _ => {
                let r = if set == 0 && unmatched.len() < names.len() {
                    KeyAutomaton::with_filter(&pats, &unmatched, filter)
                        .map_err(|r| r.into_schema(kw, ptr, ""))?
                        .region(0)
                } else {
                    ka.region(set)
                };
                if r.states.is_empty() {
                    continue;
                }
                match r.to_regex() {
                    Some(re) => KeyPlan::Regex(re),
                    None => KeyPlan::Region(r),
                }
            }
        };
        out.push((key, schema, sptr));
    }
    Ok(out)
}

/// True when `h` holds a repetition bounded by at least
/// [`MIN_INTERSECTED_LENGTH`](crate::MIN_INTERSECTED_LENGTH).
fn long_bounded(h: &regex_syntax::hir::Hir) -> bool {
    use regex_syntax::hir::HirKind;
    match h.kind() {
        HirKind::Repetition(r) => {
            r.max
                .is_some_and(|n| u64::from(n) >= crate::MIN_INTERSECTED_LENGTH)
                || long_bounded(&r.sub)
        }
        HirKind::Capture(c) => long_bounded(&c.sub),
        HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().any(long_bounded),
        _ => false,
    }
}

impl<'a> Emitter<'a> {
    pub(crate) fn object(&mut self, nt: NtId, s: &Simple<'a>) -> Result<(), SchemaError> {
        let ptr = s.ptr.clone();
        if self.indent_cut(nt, &ptr)? {
            return Ok(());
        }
        let Layout {
            members,
            names,
            additional,
            patterns,
            filter,
        } = match object_layout(
            s,
            &mut self.norm,
            &mut self.format_notes,
            self.opts.closed_objects,
        )? {
            Sat::Yes(x) => x,
            Sat::No(reason) => {
                self.norm.note_unsat(&ptr, reason.to_string());
                return Ok(());
            }
        };
        let members: Vec<Member<'a>> = members
            .into_iter()
            .map(|(name, schema, required)| Member {
                name,
                schema,
                required,
            })
            .collect();
        let n_req = members.iter().filter(|m| m.required).count() as u64;
        let min_p = s.object.min_properties.unwrap_or(0);
        let max_p = s.object.max_properties;
        let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let extra_plan = extra_regions(
            &ptr,
            &name_refs,
            &additional,
            &patterns,
            filter.as_ref(),
            self.opts.intersections,
        )?;
        let allow_extra = !extra_plan.is_empty();
        // (the wordings are XGrammar's, which its tests match)
        if let Some(m) = max_p.filter(|&m| m < min_p) {
            self.norm.note_unsat(
                &ptr,
                format!("minProperties is greater than maxProperties: {min_p} > {m}"),
            );
            return Ok(());
        }
        if let Some(m) = max_p.filter(|&m| m < n_req) {
            self.norm.note_unsat(
                &ptr,
                format!(
                    "maxProperties is less than the number of required properties: {m} < {n_req}"
                ),
            );
            return Ok(());
        }
        let possible = members.len() as u64;
        if !allow_extra && min_p > possible {
            self.norm.note_unsat(
                &ptr,
                format!(
                    "minProperties is greater than the number of properties, but additional \
                     properties aren't allowed: {min_p} > {possible}"
                ),
            );
            return Ok(());
        }
        let min_eff = if min_p <= n_req { 0 } else { min_p };
        // maxProperties at least the number of possible members is no constraint
        let max_eff = max_p.filter(|&m| allow_extra || m < possible);
        let cap = 1.max(min_eff).max(max_eff.unwrap_or(0));
        if cap > self.opts.max_counted_items {
            return Err(SchemaError::TooLarge {
                pointer: ptr,
                reason: format!(
                    "minProperties/maxProperties above {}",
                    self.opts.max_counted_items
                ),
            });
        }
        // member symbol strings
        let mut member_syms: Vec<Vec<Symbol>> = Vec::new();
        for m in &members {
            let child = self.child(&m.schema, &ptr, "properties", &m.name)?;
            let key = format!("\"{}\"", encode_str(&m.name));
            member_syms.push(self.member(Symbol::T(Terminal::Literal(key.into_bytes())), child));
        }
        let mut extra_alts = Vec::new();
        for (key, schema, sptr) in extra_plan {
            let key = match key {
                KeyPlan::Regex(r) => re(r),
                KeyPlan::Hir(h) => Symbol::T(self.g.regex_terminal(h)),
                KeyPlan::Undeclared => Symbol::T(self.excluding_terminal(&name_refs)),
                KeyPlan::Region(r) => self.region_key(&r, &ptr)?,
                KeyPlan::And(a, b) => {
                    let (Terminal::Regex(a), Terminal::Regex(b)) =
                        (self.g.regex_terminal(a), self.g.regex_terminal(b))
                    else {
                        unreachable!("regex_terminal makes regex terminals")
                    };
                    Symbol::T(Terminal::And(a, b))
                }
            };
            let child = self.node(&schema, &sptr)?;
            extra_alts.push(self.member(key, child));
        }
        let extra_syms = match extra_alts.len() {
            0 => None,
            1 => extra_alts.into_iter().next(),
            _ => {
                let x = self.fresh(&format!("{}-extra", self.g.name(nt)), &ptr)?;
                for alt in extra_alts {
                    self.g.add_rule(x, alt);
                }
                Some(vec![Symbol::Nt(x)])
            }
        };
        let base = self.g.name(nt).to_string();
        let n = members.len();
        if self.opts.property_order == PropertyOrder::Any && n > 1 {
            let fits = n <= self.opts.max_any_order_properties.min(16)
                && (1u64 << n).saturating_mul(cap + 1) <= MAX_ANY_ORDER_STATES;
            if fits {
                let any = AnyOrder {
                    members: &members,
                    member_syms: &member_syms,
                    extra: extra_syms.as_deref(),
                    min: min_eff,
                    max: max_eff,
                    cap,
                };
                return self.any_order(nt, &any, &ptr);
            }
            self.narrowed.push((
                ptr.clone(),
                format!(
                    "PropertyOrder::Any: {n} declared properties (above \
                     max_any_order_properties = {}, or too many counted members); \
                     written in schema order",
                    self.opts.max_any_order_properties
                ),
            ));
        }
        let next = |c: u64| {
            if max_eff.is_some() {
                c + 1
            } else {
                (c + 1).min(cap)
            }
        };
        let mut states: HashMap<(usize, u64), NtId> = HashMap::default();
        let mut work: Vec<(usize, u64)> = vec![(0, 0)];
        let s0 = self.fresh(&format!("{base}-kv"), &ptr)?;
        states.insert((0, 0), s0);
        let ws = self.ws();
        let mut open = vec![lit("{")];
        open.extend(ws.clone());
        open.push(Symbol::Nt(s0));
        self.g.add_rule(nt, open);
        while let Some((i, c)) = work.pop() {
            let me = states[&(i, c)];
            let mut get = |this: &mut Self, key: (usize, u64)| -> Result<NtId, SchemaError> {
                if let Some(&x) = states.get(&key) {
                    return Ok(x);
                }
                let x = this.fresh(&format!("{base}-kv"), &ptr)?;
                states.insert(key, x);
                work.push(key);
                Ok(x)
            };
            let sep = |this: &mut Self, c: u64| this.lead(c);
            let can_add = max_eff.is_none_or(|m| c < m);
            if i < n {
                if can_add {
                    let to = get(self, (i + 1, next(c)))?;
                    let mut rhs = sep(self, c);
                    rhs.extend(member_syms[i].iter().cloned());
                    rhs.push(Symbol::Nt(to));
                    self.g.add_rule(me, rhs);
                }
                if !members[i].required {
                    let to = get(self, (i + 1, c))?;
                    self.g.add_rule(me, vec![Symbol::Nt(to)]);
                }
            } else {
                if c >= min_eff {
                    let close = self.close("}", c);
                    self.g.add_rule(me, vec![close]);
                }
                if let (Some(extra), true) = (&extra_syms, can_add) {
                    let to = get(self, (n, next(c)))?;
                    let mut rhs = sep(self, c);
                    rhs.extend(extra.iter().cloned());
                    rhs.push(Symbol::Nt(to));
                    self.g.add_rule(me, rhs);
                }
            }
        }
        Ok(())
    }

    /// The members of an object in any order ([`PropertyOrder::Any`]):
    /// states `(W, c)` — the set `W` of declared members written and `c`
    /// members written in all (counted as in schema order) — each may
    /// write a declared member outside `W` or an additional member (while
    /// below `maxProperties`), or end once every required member is in `W`
    /// and `c` reaches `minProperties`.
    fn any_order(&mut self, nt: NtId, o: &AnyOrder<'_, 'a>, ptr: &str) -> Result<(), SchemaError> {
        let base = self.g.name(nt).to_string();
        let required: u64 = o
            .members
            .iter()
            .enumerate()
            .filter(|(_, m)| m.required)
            .fold(0, |acc, (i, _)| acc | 1 << i);
        let next = |c: u64| {
            if o.max.is_some() {
                c + 1
            } else {
                (c + 1).min(o.cap)
            }
        };
        let mut states: HashMap<(u64, u64), NtId> = HashMap::default();
        let s0 = self.fresh(&format!("{base}-kv"), ptr)?;
        states.insert((0, 0), s0);
        let mut open = vec![lit("{")];
        open.extend(self.ws());
        open.push(Symbol::Nt(s0));
        self.g.add_rule(nt, open);
        let mut work = vec![(0u64, 0u64)];
        while let Some((set, c)) = work.pop() {
            let me = states[&(set, c)];
            if set & required == required && c >= o.min {
                let close = self.close("}", c);
                self.g.add_rule(me, vec![close]);
            }
            if o.max.is_some_and(|m| c >= m) {
                continue;
            }
            let mut moves: Vec<(Vec<Symbol>, u64)> = Vec::new();
            for (i, syms) in o.member_syms.iter().enumerate() {
                if set >> i & 1 == 0 {
                    moves.push((syms.clone(), set | 1 << i));
                }
            }
            if let Some(extra) = o.extra {
                moves.push((extra.to_vec(), set));
            }
            for (syms, to_set) in moves {
                let key = (to_set, next(c));
                let to = match states.get(&key) {
                    Some(&x) => x,
                    None => {
                        let x = self.fresh(&format!("{base}-kv"), ptr)?;
                        states.insert(key, x);
                        work.push(key);
                        x
                    }
                };
                let mut rhs = self.lead(c);
                rhs.extend(syms);
                rhs.push(Symbol::Nt(to));
                self.g.add_rule(me, rhs);
            }
        }
        Ok(())
    }

    /// A key nonterminal deriving the quoted canonical encodings of the
    /// keys of a region: one nonterminal per automaton state
    /// (right-linear), `None` for an empty region.
    pub(crate) fn region_key(
        &mut self,
        r: &RegionGrammar,
        ptr: &str,
    ) -> Result<Symbol, SchemaError> {
        let nts: Vec<NtId> = (0..r.states.len())
            .map(|_| self.fresh("key-state", ptr))
            .collect::<Result<_, _>>()?;
        let mut texts = ClassTexts::default();
        for (i, st) in r.states.iter().enumerate() {
            if st.accepting {
                self.g.add_rule(nts[i], vec![lit("\"")]);
            }
            for (t, cls) in &st.edges {
                self.g
                    .add_rule(nts[i], vec![re(texts.text(cls)), Symbol::Nt(nts[*t])]);
            }
        }
        let k = self.fresh("key", ptr)?;
        self.g.add_rule(k, vec![lit("\""), Symbol::Nt(nts[0])]);
        Ok(Symbol::Nt(k))
    }

    /// `key ws ":" ws value ws` (compact: `key ":" value`; with
    /// separators, `key key_separator value`).
    fn member(&mut self, key: Symbol, value: NtId) -> Vec<Symbol> {
        let ws = self.ws();
        let colon = self.separators().1;
        match (key, &ws) {
            (Symbol::T(Terminal::Literal(mut k)), None) => {
                k.extend_from_slice(colon.as_bytes());
                vec![Symbol::T(Terminal::Literal(k)), Symbol::Nt(value)]
            }
            (key, _) => {
                let mut v = vec![key];
                v.extend(ws.clone());
                v.push(lit(colon));
                v.extend(ws.clone());
                v.push(Symbol::Nt(value));
                v.extend(ws);
                v
            }
        }
    }

    pub(crate) fn array(&mut self, nt: NtId, s: &Simple<'a>) -> Result<(), SchemaError> {
        let ptr = s.ptr.clone();
        if self.indent_cut(nt, &ptr)? {
            return Ok(());
        }
        let a = &s.array;
        let prefix = a.prefix_items.clone().unwrap_or_default();
        let items = a.items.clone().unwrap_or(Sub::TRUE);
        let min = a.min_items.unwrap_or(0);
        // (the wordings are XGrammar's, which its tests match)
        if let Some(m) = a.max_items.filter(|&m| m < min) {
            self.norm.note_unsat(
                &ptr,
                format!("minItems is greater than maxItems: {min} > {m}"),
            );
            return Ok(());
        }
        let mut max = a.max_items;
        if items.is_false() {
            let p = prefix.len() as u64;
            if min > p {
                self.norm.note_unsat(
                    &ptr,
                    format!(
                        "minItems is greater than the number of prefixItems, but additional \
                         items are not allowed: {min} > {p}"
                    ),
                );
                return Ok(());
            }
            max = Some(max.map_or(p, |m| m.min(p)));
        }
        if let Some(i) = prefix.iter().position(Sub::is_false) {
            if min > i as u64 {
                self.norm.note_unsat(
                    &ptr,
                    format!(
                        "minItems {min} needs an item at prefixItems/{i}, whose schema is false"
                    ),
                );
                return Ok(());
            }
            max = Some(max.map_or(i as u64, |m| m.min(i as u64)));
        }
        // `contains`: items valid under it are counted up to `need`
        let contains = a.contains.clone();
        let need = match &contains {
            None => 0,
            Some(_) => {
                if a.max_contains.is_some() {
                    return Err(SchemaError::unsupported(
                        "maxContains",
                        &ptr,
                        "an upper bound on the items valid under `contains` (the others would need `not`)",
                    ));
                }
                a.min_contains.unwrap_or(1)
            }
        };
        if need > MAX_MIN_CONTAINS {
            return Err(SchemaError::TooLarge {
                pointer: ptr,
                reason: format!("minContains above {MAX_MIN_CONTAINS}"),
            });
        }
        if need > 0 && max.is_some_and(|m| m < need) {
            self.norm
                .note_unsat(&ptr, "maxItems < minContains (or items forbidden)");
            return Ok(());
        }
        if a.unique_items && max.is_none_or(|m| m > 1) {
            // arrays of at most one item are unique anyway
            if !prefix.is_empty() {
                return Err(SchemaError::unsupported(
                    "uniqueItems",
                    &ptr,
                    "uniqueItems with prefixItems (a tuple form) is not implemented",
                ));
            }
            if need > 0 {
                return Err(SchemaError::unsupported(
                    "uniqueItems",
                    &ptr,
                    "uniqueItems with contains is not implemented",
                ));
            }
            return self.unique_array(nt, &items, min, max, &ptr);
        }
        let k = (prefix.len() as u64).max(min);
        let states_needed = max.unwrap_or(k);
        if states_needed > self.opts.max_counted_items {
            return Err(SchemaError::TooLarge {
                pointer: ptr,
                reason: format!(
                    "minItems/maxItems/prefixItems above {}",
                    self.opts.max_counted_items
                ),
            });
        }
        let mut elem: Vec<NtId> = Vec::new();
        for (j, p) in prefix.iter().enumerate() {
            if (j as u64) < states_needed.max(1) {
                elem.push(self.child(p, &ptr, "prefixItems", &j.to_string())?);
            }
        }
        let item_nt = if !items.is_false() {
            Some(self.node(&items, &push_ptr(&ptr, "items"))?)
        } else {
            None
        };
        // the same positions' schemas conjoined with `contains`
        let (mut elem_c, mut item_c): (Vec<Option<NtId>>, Option<NtId>) = (Vec::new(), None);
        if let (Some(c), true) = (&contains, need > 0) {
            let cptr = push_ptr(&ptr, "contains");
            for (j, p) in prefix.iter().enumerate() {
                if (j as u64) < states_needed.max(1) {
                    elem_c.push(Some(
                        self.node(&Sub::all(vec![p.clone(), c.clone()]), &cptr)?,
                    ));
                }
            }
            if !items.is_false() {
                item_c = Some(self.node(&Sub::all(vec![items.clone(), c.clone()]), &cptr)?);
            }
        }
        let base = self.g.name(nt).to_string();
        let ws = self.ws();
        // with no maxItems the last state loops; it must come after the
        // first item so that the loop writes commas
        let last = match max {
            Some(m) => m,
            None => k.max(1),
        };
        // state (j, c): j items written, c of them counted as `contains`
        let width = need as usize + 1;
        let states: Vec<NtId> = (0..=last)
            .flat_map(|_| 0..width)
            .map(|_| self.fresh(&format!("{base}-items"), &ptr))
            .collect::<Result<_, _>>()?;
        let at = |j: u64, c: u64| states[j as usize * width + c as usize];
        let mut open = vec![lit("[")];
        open.extend(ws.clone());
        open.push(Symbol::Nt(at(0, 0)));
        self.g.add_rule(nt, open);
        for j in 0..=last {
            for c in 0..=need {
                let me = at(j, c);
                if j >= min && c == need {
                    let close = self.close("]", j);
                    self.g.add_rule(me, vec![close]);
                }
                let can_add = max.is_none_or(|m| j < m);
                if !can_add {
                    continue;
                }
                let next = if max.is_none() && j == last { j } else { j + 1 };
                let (plain, counted) = if (j as usize) < prefix.len() {
                    (
                        Some(elem[j as usize]),
                        elem_c.get(j as usize).copied().flatten(),
                    )
                } else {
                    (item_nt, item_c)
                };
                // an item written plainly keeps the count; one written as
                // `item ∧ contains` raises it (only while below `need`)
                let moves = [(plain, c), (counted.filter(|_| c < need), c + 1)];
                for (e, c2) in moves {
                    let Some(e) = e else { continue };
                    let mut rhs = self.lead(j);
                    rhs.push(Symbol::Nt(e));
                    rhs.extend(ws.clone());
                    rhs.push(Symbol::Nt(at(next, c2)));
                    self.g.add_rule(me, rhs);
                }
            }
        }
        Ok(())
    }
}
