//! Key languages of `patternProperties`: which object keys fall into which
//! *region* (the set of patterns a key matches, and whether it is a
//! declared name), computed exactly by a product automaton.
//!
//! JSON Schema (2020-12 Core §10.3.2.2–10.3.2.3): a member whose key is
//! declared in `properties` must satisfy that schema *and* the schema of
//! every pattern of `patternProperties` that the key matches; a member
//! whose key is not declared but matches some patterns must satisfy all
//! their schemas; `additionalProperties` applies to the keys that are
//! neither declared nor matched. So the undeclared keys split into the
//! regions `R_T = ⋂_{i∈T} L_i ∩ ⋂_{i∉T} ¬L_i ∖ names` for the sets `T` of
//! patterns, each with the value schema `allOf(S_i, i ∈ T)` (or
//! `additionalProperties` for `T = ∅`).
//!
//! Regexes have no intersection or complement, so the regions are computed
//! on automata. Each pattern becomes a byte DFA ([`TerminalDfa`]) of the
//! canonical encodings of its keys (the same language as the key terminal
//! the grammar would use, see [`super::strings`]). The product runs over
//! *atoms* of the decoded character alphabet: the coarsest partition of
//! Unicode in which every character class and literal character of every
//! pattern, and every character of a declared name, is a union of atoms.
//! Characters of one atom are indistinguishable to every pattern (and to
//! the names), and the encoding is a per-character prefix code, so stepping
//! each pattern DFA over the encoding of one representative character per
//! atom is exact. Product states are tuples (pattern DFA states, position
//! in the trie of declared names); a state's region is read off the pattern
//! DFAs after the closing quote and the trie node.
//!
//! A region is then written into the grammar as that pattern's regex
//! terminal when it is exactly one pattern's language; else as one regex
//! written from its automaton ([`RegionGrammar::to_regex`]) when that is
//! acyclic up to self-loops and small; else as a right-linear grammar (one
//! nonterminal per state of the region's minimal automaton, one rule per
//! target with the canonical encodings of the characters leading there).
//! The product is minimised first (Hopcroft, `minimize`): it keeps
//! apart states that no suffix tells apart — an unanchored pattern's
//! automaton still tracks partial matches after it matched — and a
//! region's grammar can be a hundred times smaller than its product.
//!
//! The same product with a character counter instead of the names
//! ([`KeyAutomaton::with_length`]) intersects `pattern`/`format` with
//! `minLength`/`maxLength`, and with each other.

use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeSet;

use regex_automata::{Anchored, Input};
use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look};

use super::error::KeyError;
use super::strings::{constrained_string_hir, encode_str, translate_pattern, ClassTexts};
use zapspec_grammar::dfa::TerminalDfa;
use zapspec_grammar::limits::regex_nesting as nesting;
use zapspec_grammar::RegexLimits;

/// Most product states of one object's key automaton.
pub(crate) const MAX_KEY_STATES: usize = 20_000;

/// One pattern of `patternProperties`.
pub(crate) struct KeyPattern {
    /// The ECMA-262 pattern as written in the schema.
    pub source: String,
    /// Full-match HIR over decoded characters (search semantics applied).
    pub hir: Hir,
    /// The regex (HIR) of the quoted canonical encodings of the matching
    /// keys.
    pub key_hir: Hir,
    dfa: TerminalDfa,
}

impl KeyPattern {
    /// Compiles a pattern; `Err(reason)` when it cannot be translated
    /// exactly.
    pub fn new(source: &str) -> Result<KeyPattern, KeyError> {
        Self::from_hir(source, translate_pattern(source)?)
    }

    /// A pattern given as a full-match HIR over decoded characters
    /// (e.g. a `format`); `source` names it in messages.
    ///
    /// The automaton is built lazily ([`TerminalDfa::lazy_regex`]): the
    /// product constructions step it by one character of each atom, which
    /// reaches a small part of the full DFA of the encodings (escapes,
    /// every byte of a multi-byte class).
    pub fn from_hir(source: &str, hir: Hir) -> Result<KeyPattern, KeyError> {
        let key_hir = constrained_string_hir(&hir)?;
        let dfa = TerminalDfa::lazy_hir(&key_hir, source, &RegexLimits::default())?;
        Ok(KeyPattern {
            source: source.to_string(),
            hir,
            key_hir,
            dfa,
        })
    }

    /// Whether the key `name` (decoded) matches the pattern. Where the
    /// lazy automaton has refused a state for its bound (its answer may
    /// be a false "no"), the pattern's HIR decides, by `regex-automata`'s
    /// general engine.
    pub fn matches(&self, name: &str) -> bool {
        let hit = self
            .dfa
            .matches(format!("\"{}\"", encode_str(name)).as_bytes());
        if hit || !self.dfa.overflowed() {
            return hit;
        }
        let full = Hir::concat(vec![self.hir.clone(), Hir::look(Look::End)]);
        regex_automata::meta::Regex::builder()
            .build_from_hir(&full)
            .is_ok_and(|re| re.is_match(Input::new(name).anchored(Anchored::Yes)))
    }

    /// The pattern's automaton, if it refused a state for its bound.
    fn overflow(&self) -> Option<KeyError> {
        self.dfa.overflowed().then(|| KeyError::PatternStates {
            pattern: self.source.clone(),
            limit: RegexLimits::default().dfa_states,
        })
    }
}

/// A trie over characters of several lists of strings (list 0: the
/// declared names; further lists: the strings a [`KeyFilter`] branch
/// excludes or allows). A node knows which lists end there, so one trie
/// position decides membership in every list.
struct Trie {
    kids: Vec<HashMap<char, usize>>,
    /// The lists (sorted ids) that contain the string of this node.
    end: Vec<Vec<usize>>,
}

impl Trie {
    const OUT: usize = usize::MAX;

    fn new(lists: &[&[&str]]) -> Trie {
        let mut t = Trie {
            kids: vec![HashMap::default()],
            end: vec![Vec::new()],
        };
        for (id, list) in lists.iter().enumerate() {
            for n in list.iter() {
                let mut cur = 0;
                for c in n.chars() {
                    let next = t.kids.len();
                    let e = *t.kids[cur].entry(c).or_insert(next);
                    if e == next {
                        t.kids.push(HashMap::default());
                        t.end.push(Vec::new());
                    }
                    cur = e;
                }
                if t.end[cur].last() != Some(&id) {
                    t.end[cur].push(id);
                }
            }
        }
        t
    }

    fn step(&self, node: usize, c: char) -> usize {
        if node == Self::OUT {
            return Self::OUT;
        }
        self.kids[node].get(&c).copied().unwrap_or(Self::OUT)
    }

    /// Whether the string of `node` is in list `id`.
    fn has(&self, node: usize, id: usize) -> bool {
        node != Self::OUT && self.end[node].contains(&id)
    }
}

/// One branch of a [`KeyFilter`]: a conjunction of conditions on a
/// string (the string keywords of one simple schema of `propertyNames`).
pub(crate) struct KeyBranch {
    /// Patterns (`pattern`, `format`) the key must match.
    pub must: Vec<KeyPattern>,
    /// Patterns (`not: {pattern}`) the key must not match.
    pub must_not: Vec<KeyPattern>,
    /// Strings the key must not be (`not: {enum}`, `not: {const}`).
    pub excluded: Vec<String>,
    /// When set, the only strings the key may be (`enum`, `const`).
    pub only: Option<Vec<String>>,
    /// `minLength`, in characters.
    pub min: u64,
    /// `maxLength`, in characters.
    pub max: Option<u64>,
}

impl KeyBranch {
    /// Whether the branch says nothing (every string satisfies it).
    pub fn is_unconstrained(&self) -> bool {
        self.must.is_empty()
            && self.must_not.is_empty()
            && self.excluded.is_empty()
            && self.only.is_none()
            && self.min == 0
            && self.max.is_none()
    }

    /// Whether the (decoded) key satisfies the branch.
    pub fn accepts(&self, key: &str) -> bool {
        let n = key.chars().count() as u64;
        self.len().ok(n)
            && self
                .only
                .as_ref()
                .is_none_or(|o| o.iter().any(|x| x == key))
            && !self.excluded.iter().any(|x| x == key)
            && self.must.iter().all(|p| p.matches(key))
            && !self.must_not.iter().any(|p| p.matches(key))
    }

    fn len(&self) -> LenBound {
        LenBound {
            min: self.min,
            max: self.max,
        }
    }
}

/// A condition on object keys (`propertyNames`): a key is allowed when
/// some branch accepts it; no branch, no key.
pub(crate) struct KeyFilter {
    pub branches: Vec<KeyBranch>,
}

impl KeyFilter {
    /// Whether the (decoded) key is allowed.
    pub fn accepts(&self, key: &str) -> bool {
        self.branches.iter().any(|b| b.accepts(key))
    }
}

/// Collects the boundaries of the character classes and literal
/// characters of a HIR.
fn boundaries(h: &Hir, out: &mut BTreeSet<u32>) {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(l) => {
            for c in String::from_utf8_lossy(&l.0).chars() {
                out.insert(c as u32);
                out.insert(c as u32 + 1);
            }
        }
        HirKind::Class(Class::Unicode(c)) => {
            for r in c.iter() {
                out.insert(r.start() as u32);
                out.insert(r.end() as u32 + 1);
            }
        }
        HirKind::Class(Class::Bytes(c)) => {
            for r in c.iter() {
                out.insert(r.start() as u32);
                out.insert(r.end() as u32 + 1);
            }
        }
        HirKind::Repetition(r) => boundaries(&r.sub, out),
        HirKind::Capture(c) => boundaries(&c.sub, out),
        HirKind::Concat(v) | HirKind::Alternation(v) => {
            for x in v {
                boundaries(x, out)
            }
        }
    }
}

/// The product automaton of the key languages (see the module docs).
pub(crate) struct KeyAutomaton {
    /// Atoms: disjoint inclusive character ranges covering Unicode.
    atoms: Vec<(char, char)>,
    /// `trans[s][a]`: the state after atom `a` in state `s`.
    trans: Vec<Vec<u32>>,
    /// Bit `i` set: a key ending in this state matches pattern `i`.
    mask: Vec<u64>,
    /// A key ending in this state is in no region: a declared name, a
    /// string of a length outside the bounds given to
    /// [`KeyAutomaton::with_length`], or a key the `propertyNames` filter
    /// given to [`KeyAutomaton::with_filter`] rejects.
    name: Vec<bool>,
}

/// Length bounds `[min, max]` in characters, counted in the product state
/// up to `cap` (saturating).
#[derive(Clone, Copy)]
struct LenBound {
    min: u64,
    max: Option<u64>,
}

impl LenBound {
    fn cap(self) -> u64 {
        self.max.map_or(self.min, |m| m + 1)
    }
    fn ok(self, n: u64) -> bool {
        n >= self.min && self.max.is_none_or(|m| n <= m)
    }
}

impl KeyAutomaton {
    /// The product of the patterns (at most 64) and the trie of `names`.
    #[cfg(test)]
    pub fn new(pats: &[&KeyPattern], names: &[&str]) -> Result<KeyAutomaton, KeyError> {
        Self::build(pats, names, None, None)
    }

    /// [`KeyAutomaton::new`] with the components of a `propertyNames`
    /// filter in the product: a key the filter rejects is in no region
    /// (like a declared name).
    pub fn with_filter(
        pats: &[&KeyPattern],
        names: &[&str],
        filter: Option<&KeyFilter>,
    ) -> Result<KeyAutomaton, KeyError> {
        Self::build(pats, names, None, filter)
    }

    /// The product of the patterns, the trie of `excluded` strings and a
    /// character counter: a string whose length is outside `[min, max]`
    /// or that is in `excluded` counts as "declared" (in no region). Used
    /// for strings whose `pattern`/`format` meet length bounds they do not
    /// imply, or a `not: {enum: [strings]}`.
    ///
    /// Only the regions in which the first `must` patterns all match are
    /// exact: a state from which no such string is left (one of those
    /// patterns can no longer match, or the string is past `max`) is
    /// merged into one sink, in no region, so that the product never
    /// explores what the caller would throw away.
    pub fn with_length(
        pats: &[&KeyPattern],
        must: usize,
        excluded: &[&str],
        min: u64,
        max: Option<u64>,
    ) -> Result<KeyAutomaton, KeyError> {
        Self::build_pruned(pats, excluded, Some(LenBound { min, max }), None, must)
    }

    /// The product automaton. Its components: the DFAs of `pats` (whose
    /// acceptance gives the region mask) and of the filter's patterns, one
    /// trie of `names` and of the filter's listed strings, and one
    /// character counter saturating above every length bound involved
    /// (a bound `[min, max]` only asks whether the count is below `min`
    /// or above `max`, which the saturated count still tells).
    fn build(
        pats: &[&KeyPattern],
        names: &[&str],
        len: Option<LenBound>,
        filter: Option<&KeyFilter>,
    ) -> Result<KeyAutomaton, KeyError> {
        Self::build_pruned(pats, names, len, filter, 0)
    }

    /// [`Self::build`], with the states from which the first `must`
    /// patterns cannot all match any more, or past `len`'s maximum,
    /// merged into one sink ([`Self::with_length`]).
    fn build_pruned(
        pats: &[&KeyPattern],
        names: &[&str],
        len: Option<LenBound>,
        filter: Option<&KeyFilter>,
        must: usize,
    ) -> Result<KeyAutomaton, KeyError> {
        if pats.len() > 64 {
            return Err(KeyError::TooManyPatterns);
        }
        // every pattern DFA of the product: `pats` first, then per filter
        // branch its `must` and `must_not` patterns
        let mut all: Vec<&KeyPattern> = pats.to_vec();
        // per branch: (range of `must` in `all`, range of `must_not`)
        let mut ranges = Vec::new();
        // trie lists: 0 = names, then per branch `excluded` and `only`
        let mut lists: Vec<Vec<&str>> = vec![names.to_vec()];
        for br in filter.iter().flat_map(|f| &f.branches) {
            let m0 = all.len();
            all.extend(br.must.iter());
            let n0 = all.len();
            all.extend(br.must_not.iter());
            ranges.push((m0..n0, n0..all.len()));
            lists.push(br.excluded.iter().map(String::as_str).collect());
            lists.push(br.only.iter().flatten().map(String::as_str).collect());
        }
        let cap = len
            .iter()
            .copied()
            .chain(
                filter
                    .iter()
                    .flat_map(|f| f.branches.iter().map(KeyBranch::len)),
            )
            .map(LenBound::cap)
            .max()
            .unwrap_or(0);
        let mut bounds = BTreeSet::new();
        bounds.insert(0u32);
        bounds.insert(0xD800);
        bounds.insert(0xE000);
        bounds.insert(0x11_0000);
        for p in &all {
            boundaries(&p.hir, &mut bounds);
        }
        for n in lists.iter().flatten() {
            for c in n.chars() {
                bounds.insert(c as u32);
                bounds.insert(c as u32 + 1);
            }
        }
        let b: Vec<u32> = bounds.into_iter().filter(|&x| x <= 0x11_0000).collect();
        let mut atoms = Vec::new();
        for w in b.windows(2) {
            let (lo, hi) = (w[0], w[1] - 1);
            if (0xD800..0xE000).contains(&lo) {
                continue;
            }
            if let (Some(a), Some(z)) = (char::from_u32(lo), char::from_u32(hi)) {
                atoms.push((a, z));
            }
        }
        let reps: Vec<(char, Vec<u8>)> = atoms
            .iter()
            .map(|&(a, _)| (a, encode_str(&a.to_string()).into_bytes()))
            .collect();
        let list_refs: Vec<&[&str]> = lists.iter().map(Vec::as_slice).collect();
        let trie = Trie::new(&list_refs);
        // A product state is packed as `[q_1, …, q_k, node, n]` (pattern
        // DFA states, trie node, saturated length) in one flat arena; the
        // map from packed states to ids hashes a slice of it, and a
        // transition is looked up from a reused scratch row (no allocation
        // unless the state is new).
        let width = all.len() + 2;
        let mut arena: Vec<u32> = Vec::new();
        let mut ids: rustc_hash::FxHashMap<Box<[u32]>, u32> = Default::default();
        let mut scratch: Vec<u32> = all
            .iter()
            .map(|p| p.dfa.run(p.dfa.start(), b"\""))
            .collect();
        scratch.extend([0, 0]);
        ids.insert(scratch.clone().into_boxed_slice(), 0);
        arena.extend_from_slice(&scratch);
        let mut trans: Vec<Vec<u32>> = Vec::new();
        let mut cur: Vec<u32> = Vec::with_capacity(width);
        // Per pattern, its DFA's step over each atom's encoding, memoised
        // by (DFA state, atom): product states share pattern states (a
        // character counter multiplies them by its range), and a step over
        // a multi-byte encoding costs a lazy-DFA lookup per byte. The memo
        // is a dense table of at most MEMO_ENTRIES entries per pattern
        // (4 MiB); steps from states beyond it are not memoised.
        const MEMO_ENTRIES: usize = 1 << 20;
        const UNSET: u32 = u32::MAX;
        let na = reps.len();
        let mut memo: Vec<Vec<u32>> = vec![Vec::new(); all.len()];
        let mut i = 0;
        while i * width < arena.len() {
            cur.clear();
            cur.extend_from_slice(&arena[i * width..(i + 1) * width]);
            let (qs, tail) = cur.split_at(all.len());
            let node = if tail[0] == u32::MAX {
                Trie::OUT
            } else {
                tail[0] as usize
            };
            let n = u64::from(tail[1]);
            let n1 = (n + 1).min(cap);
            let mut row = Vec::with_capacity(reps.len());
            for (a, (c, enc)) in reps.iter().enumerate() {
                scratch.clear();
                for ((p, &q), m) in all.iter().zip(qs).zip(memo.iter_mut()) {
                    let k = q as usize * na + a;
                    if k >= MEMO_ENTRIES {
                        scratch.push(p.dfa.run(q, enc));
                        continue;
                    }
                    if m.len() <= k {
                        m.resize(((q as usize + 1) * na).min(MEMO_ENTRIES), UNSET);
                    }
                    if m[k] == UNSET {
                        m[k] = p.dfa.run(q, enc);
                    }
                    scratch.push(m[k]);
                }
                let next = trie.step(node, *c);
                scratch.push(if next == Trie::OUT {
                    u32::MAX
                } else {
                    next as u32
                });
                // n ≤ the number of states (< MAX_KEY_STATES): fits
                scratch.push(u32::try_from(n1).unwrap_or(u32::MAX));
                let hopeless = scratch[..must].contains(&TerminalDfa::DEAD)
                    || len.is_some_and(|l| l.max.is_some_and(|m| n1 > m));
                if hopeless {
                    // the sink: every pattern dead, out of the trie, the
                    // count saturated (a fixpoint of the step above)
                    scratch.clear();
                    scratch.resize(all.len(), TerminalDfa::DEAD);
                    scratch.extend([u32::MAX, u32::try_from(cap).unwrap_or(u32::MAX)]);
                }
                let id = match ids.get(scratch.as_slice()) {
                    Some(&id) => id,
                    None => {
                        let id = (arena.len() / width) as u32;
                        if id as usize >= MAX_KEY_STATES {
                            return Err(KeyError::TooManyStates {
                                limit: MAX_KEY_STATES,
                            });
                        }
                        ids.insert(scratch.clone().into_boxed_slice(), id);
                        arena.extend_from_slice(&scratch);
                        id
                    }
                };
                row.push(id);
            }
            trans.push(row);
            i += 1;
        }
        drop(ids);
        let states: Vec<(&[u32], usize, u64)> = arena
            .chunks_exact(width)
            .map(|st| {
                let (qs, tail) = st.split_at(all.len());
                let node = if tail[0] == u32::MAX {
                    Trie::OUT
                } else {
                    tail[0] as usize
                };
                (qs, node, u64::from(tail[1]))
            })
            .collect();
        // a pattern automaton that refused a state answered DEAD for it
        if let Some(e) = all.iter().find_map(|p| p.overflow()) {
            return Err(e);
        }
        // whether a key ending in the state matches each DFA of `all`
        let matched = |qs: &[u32]| -> Vec<bool> {
            all.iter()
                .zip(qs)
                .map(|(p, &q)| p.dfa.is_accepting(p.dfa.next(q, b'"')))
                .collect()
        };
        let mut mask = Vec::with_capacity(states.len());
        let mut name = Vec::with_capacity(states.len());
        for &(qs, node, n) in &states {
            let (node, n) = (&node, &n);
            let hit = matched(qs);
            mask.push(
                hit[..pats.len()]
                    .iter()
                    .enumerate()
                    .fold(0u64, |m, (i, &h)| if h { m | 1 << i } else { m }),
            );
            let filtered_out = filter.is_some_and(|f| {
                !f.branches
                    .iter()
                    .zip(&ranges)
                    .enumerate()
                    .any(|(j, (br, (mu, no)))| {
                        br.len().ok(*n)
                            && hit[mu.clone()].iter().all(|&h| h)
                            && !hit[no.clone()].iter().any(|&h| h)
                            && !trie.has(*node, 1 + 2 * j)
                            && (br.only.is_none() || trie.has(*node, 2 + 2 * j))
                    })
            });
            name.push(trie.has(*node, 0) || len.is_some_and(|l| !l.ok(*n)) || filtered_out);
        }
        Ok(KeyAutomaton {
            atoms,
            trans,
            mask,
            name,
        })
    }

    /// The distinct pattern sets of undeclared keys (non-empty regions).
    pub fn regions(&self) -> Vec<u64> {
        let mut r: BTreeSet<u64> = BTreeSet::new();
        for (s, &m) in self.mask.iter().enumerate() {
            if !self.name[s] {
                r.insert(m);
            }
        }
        r.into_iter().collect()
    }

    /// Whether the region `set` is exactly the language of pattern `i`
    /// (`L_i = R_set`: no declared name and no key of another region in
    /// `L_i`), so that the pattern's own regex can stand for it.
    pub fn region_is_pattern(&self, set: u64, i: usize) -> bool {
        let bit = 1u64 << i;
        (0..self.mask.len()).all(|s| {
            let in_pattern = self.mask[s] & bit != 0;
            let in_region = self.mask[s] == set && !self.name[s];
            in_pattern == in_region
        })
    }

    /// The region's automaton, trimmed to the live states reachable from
    /// the start: per state, whether it accepts and its transitions grouped
    /// by target as character classes. State 0 is the start; no states
    /// means an empty region.
    pub fn region(&self, set: u64) -> RegionGrammar {
        let n = self.mask.len();
        let acc: Vec<bool> = (0..n)
            .map(|s| self.mask[s] == set && !self.name[s])
            .collect();
        // live: can reach an accepting state (a backward search over the
        // reversed transitions, linear in the edges)
        let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (s, row) in self.trans.iter().enumerate() {
            for &t in row {
                let p = &mut preds[t as usize];
                if p.last() != Some(&(s as u32)) {
                    p.push(s as u32);
                }
            }
        }
        let mut live = acc.clone();
        let mut stack: Vec<usize> = (0..n).filter(|&s| acc[s]).collect();
        while let Some(t) = stack.pop() {
            for &s in &preds[t] {
                if !live[s as usize] {
                    live[s as usize] = true;
                    stack.push(s as usize);
                }
            }
        }
        let mut index = vec![usize::MAX; n];
        let mut order = Vec::new();
        // number live states reachable from the start, start first
        let mut stack = vec![0usize];
        if live[0] {
            index[0] = 0;
            order.push(0);
        } else {
            stack.clear();
        }
        while let Some(s) = stack.pop() {
            for &t in &self.trans[s] {
                let t = t as usize;
                if live[t] && index[t] == usize::MAX {
                    index[t] = order.len();
                    order.push(t);
                    stack.push(t);
                }
            }
        }
        // minimal: states no suffix tells apart merged (Moore's partition
        // refinement over the atoms; a dead target is its own class), so
        // a product that tracks what no longer matters (the partial
        // matches of an unanchored pattern after it matched) writes one
        // nonterminal per state of the minimal automaton
        let (class_of, reps) = minimize(&order, &index, &acc, &live, &self.trans);
        let states = reps
            .iter()
            .map(|&s| {
                let mut by_target: Vec<(usize, Vec<ClassUnicodeRange>)> = Vec::new();
                for (a, &t) in self.trans[s].iter().enumerate() {
                    let t = t as usize;
                    if !live[t] {
                        continue;
                    }
                    let tc = class_of[index[t]];
                    let r = ClassUnicodeRange::new(self.atoms[a].0, self.atoms[a].1);
                    match by_target.iter_mut().find(|(x, _)| *x == tc) {
                        Some((_, v)) => v.push(r),
                        None => by_target.push((tc, vec![r])),
                    }
                }
                RegionState {
                    accepting: acc[s],
                    edges: by_target
                        .into_iter()
                        .map(|(t, v)| (t, ClassUnicode::new(v)))
                        .collect(),
                }
            })
            .collect();
        RegionGrammar { states }
    }
}

/// Hopcroft's minimisation of a trimmed region automaton: `order` lists
/// its states (start first; `index` maps a product state to its place
/// there), accepting per `acc`, with transitions `trans` per atom (a target
/// not `live` goes to one added dead state). Returns each listed state's
/// class (classes numbered by first appearance, so the start's is 0) and
/// one product state per class. `O(n·atoms·log n)`: a chain of counted
/// states (a pattern under `maxLength`) costs no round per state.
fn minimize(
    order: &[usize],
    index: &[usize],
    acc: &[bool],
    live: &[bool],
    trans: &[Vec<u32>],
) -> (Vec<usize>, Vec<usize>) {
    let m = order.len();
    let na = order.first().map_or(0, |&s| trans[s].len());
    let sink = m;
    let n = m + 1;
    let target = |i: usize, a: usize| -> usize {
        if i == sink {
            return sink;
        }
        let t = trans[order[i]][a] as usize;
        if live[t] {
            index[t]
        } else {
            sink
        }
    };
    // predecessors per (atom, target), compressed rows
    let mut start = vec![0u32; na * n + 1];
    for i in 0..n {
        for a in 0..na {
            start[a * n + target(i, a) + 1] += 1;
        }
    }
    for k in 1..start.len() {
        start[k] += start[k - 1];
    }
    let mut fill = start.clone();
    let mut preds = vec![0u32; n * na];
    for i in 0..n {
        for a in 0..na {
            let k = a * n + target(i, a);
            preds[fill[k] as usize] = i as u32;
            fill[k] += 1;
        }
    }
    drop(fill);
    // blocks: members, each state's block and place in it
    let mut members: Vec<Vec<u32>> = vec![Vec::new(), Vec::new()];
    let mut block = vec![0usize; n];
    let mut place = vec![0usize; n];
    for i in 0..n {
        let b = usize::from(i < m && acc[order[i]]);
        block[i] = b;
        place[i] = members[b].len();
        members[b].push(i as u32);
    }
    members.retain(|v| !v.is_empty());
    if members.len() == 1 {
        block.fill(0);
    } else {
        for (b, v) in members.iter().enumerate() {
            for &i in v {
                block[i as usize] = b;
            }
        }
    }
    let mut waiting: Vec<usize> = (0..members.len()).collect();
    let mut in_waiting = vec![true; members.len()];
    let mut marked = vec![false; n];
    let mut hit: Vec<Vec<u32>> = Vec::new();
    let mut touched: Vec<usize> = Vec::new();
    while let Some(b) = waiting.pop() {
        in_waiting[b] = false;
        let splitter = members[b].clone();
        for a in 0..na {
            for &t in &splitter {
                let k = a * n + t as usize;
                for &p in &preds[start[k] as usize..start[k + 1] as usize] {
                    let p = p as usize;
                    if marked[p] {
                        continue;
                    }
                    marked[p] = true;
                    let y = block[p];
                    if hit.len() <= y {
                        hit.resize(y + 1, Vec::new());
                    }
                    if hit[y].is_empty() {
                        touched.push(y);
                    }
                    hit[y].push(p as u32);
                }
            }
            for y in touched.drain(..) {
                let xs = std::mem::take(&mut hit[y]);
                for &p in &xs {
                    marked[p as usize] = false;
                }
                if xs.len() == members[y].len() {
                    continue;
                }
                // split `y`: the states reaching the splitter leave
                let z = members.len();
                for &p in &xs {
                    let p = p as usize;
                    let at = place[p];
                    let last = members[y].pop().unwrap_or(p as u32);
                    if last as usize != p {
                        members[y][at] = last;
                        place[last as usize] = at;
                    }
                    block[p] = z;
                }
                for (j, &p) in xs.iter().enumerate() {
                    place[p as usize] = j;
                }
                members.push(xs);
                in_waiting.push(false);
                if in_waiting[y] || members[z].len() <= members[y].len() {
                    waiting.push(z);
                    in_waiting[z] = true;
                } else {
                    waiting.push(y);
                    in_waiting[y] = true;
                }
            }
        }
    }
    // the final numbering is by first appearance in `order`: start is 0
    let mut reps = Vec::new();
    let mut renum = vec![usize::MAX; members.len()];
    let class_of = (0..m)
        .map(|i| {
            let c = block[i];
            if renum[c] == usize::MAX {
                renum[c] = reps.len();
                reps.push(order[i]);
            }
            renum[c]
        })
        .collect();
    (class_of, reps)
}

/// One state of a region's automaton.
pub(crate) struct RegionState {
    pub accepting: bool,
    /// (target state, decoded characters leading there).
    pub edges: Vec<(usize, ClassUnicode)>,
}

/// A region as a trimmed automaton over decoded characters (empty `states`:
/// the region is empty). State 0 is the start.
pub(crate) struct RegionGrammar {
    pub states: Vec<RegionState>,
}

/// Memo of [`RegionGrammar::to_regex`]: the regex of each state, the
/// states on the current path (a repeat is a cycle), and the text budget.
struct Memo {
    memo: Vec<Option<String>>,
    on_path: Vec<bool>,
    budget: usize,
}

/// Longest regex [`RegionGrammar::to_regex`] writes.
const MAX_REGION_REGEX: usize = 16_000;
/// Deepest nesting of uncompressed states in [`RegionGrammar::to_regex`]
/// (each level opens about three groups; `regex-syntax` allows 250).
const MAX_REGION_DEPTH: usize = 40;
/// Largest automaton [`RegionGrammar::to_regex`] writes by state
/// elimination (its regex can grow exponentially with the states).
const MAX_ELIMINATED_STATES: usize = 24;
/// Deepest group nesting a state-eliminated regex may have (`regex-syntax`
/// refuses nesting beyond 250, counting repetitions and alternations too).
const MAX_ELIMINATED_NESTING: usize = 80;

impl RegionGrammar {
    /// The region as one regex of quoted canonical encodings, when its
    /// automaton is acyclic up to self-loops and the regex stays small and
    /// shallow; `None` otherwise (write the right-linear grammar).
    ///
    /// `L(s) = S*·(acc ? "\"" : ∅ | ⋃ C·L(t))` for a state with self-loop
    /// class `S`; a *uniform chain* `s₀ →C s₁ →C … →C s_m` whose states
    /// have no self-loop and the same other edges and acceptance `R` (what
    /// a counted repetition such as `[a-z]{1,255}` becomes) is written
    /// `C{0,m-1}·R | C{m}·L(s_m)` instead of `m` nested levels.
    pub fn to_regex(&self) -> Option<String> {
        if self.states.is_empty() {
            return None;
        }
        let mut texts = ClassTexts::default();
        let enc: Vec<Vec<(usize, String)>> = self
            .states
            .iter()
            .map(|st| st.edges.iter().map(|(t, c)| (*t, texts.text(c))).collect())
            .collect();
        let mut m = Memo {
            memo: vec![None; self.states.len()],
            on_path: vec![false; self.states.len()],
            // the memoised strings together (each at most MAX_REGION_REGEX)
            budget: 64 * MAX_REGION_REGEX,
        };
        let body = match self.regex_of(0, &enc, &mut m, 0) {
            Some(b) => b,
            // Cycles through several states: state elimination.
            None => self.eliminate(&enc)?,
        };
        (body.len() <= MAX_REGION_REGEX).then(|| format!("\"(?:{body})"))
    }

    /// The region's language (after the opening quote) by state
    /// elimination (Brzozowski–McCluskey): a generalised automaton with a
    /// fresh start and a final state, whose states are removed one at a
    /// time, fewest in × out edges first, relabelling `p → q` with
    /// `R(p,q) | R(p,k)·R(k,k)*·R(k,q)`. For automata of at most
    /// [`MAX_ELIMINATED_STATES`] states; `None` when a label outgrows
    /// [`MAX_REGION_REGEX`] or the result nests too deep for `regex-syntax`.
    fn eliminate(&self, enc: &[Vec<(usize, String)>]) -> Option<String> {
        let n = self.states.len();
        if n > MAX_ELIMINATED_STATES {
            return None;
        }
        let (start, fin) = (n, n + 1);
        // label[p][q]; "" is the empty string, absence the empty language
        let mut label: Vec<HashMap<usize, String>> = vec![HashMap::default(); n + 2];
        let add = |label: &mut Vec<HashMap<usize, String>>, p: usize, q: usize, r: String| {
            label[p]
                .entry(q)
                .and_modify(|x| *x = format!("{x}|{r}"))
                .or_insert(r);
        };
        add(&mut label, start, 0, String::new());
        for (p, st) in self.states.iter().enumerate() {
            if st.accepting {
                add(&mut label, p, fin, "\"".to_string());
            }
            for (q, c) in &enc[p] {
                add(&mut label, p, *q, format!("(?:{c})"));
            }
        }
        let group = |r: &str| {
            if r.is_empty() {
                String::new()
            } else {
                format!("(?:{r})")
            }
        };
        let mut alive: Vec<bool> = vec![true; n];
        for _ in 0..n {
            // the live state with the fewest in × out edges
            let k = (0..n).filter(|&k| alive[k]).min_by_key(|&k| {
                let ins = (0..n + 2)
                    .filter(|&p| p != k && label[p].contains_key(&k))
                    .count();
                let outs = label[k].keys().filter(|&&q| q != k).count();
                ins * outs
            })?;
            alive[k] = false;
            let loop_k = label[k].remove(&k).map(|r| format!("(?:{r})*"));
            let outs: Vec<(usize, String)> = label[k].drain().collect();
            for p in 0..n + 2 {
                let Some(into) = label[p].remove(&k) else {
                    continue;
                };
                for (q, out) in &outs {
                    let r = format!(
                        "{}{}{}",
                        group(&into),
                        loop_k.as_deref().unwrap_or(""),
                        group(out)
                    );
                    if r.len() > MAX_REGION_REGEX {
                        return None;
                    }
                    add(&mut label, p, *q, r);
                    if label[p][q].len() > MAX_REGION_REGEX {
                        return None;
                    }
                }
            }
        }
        let r = label[start].remove(&fin)?;
        (nesting(&r) <= MAX_ELIMINATED_NESTING).then_some(r)
    }

    /// Acceptance and the edges of `s` other than the self-loop and the
    /// chain edge `skip`, as comparable data.
    fn rest(&self, s: usize, skip: Option<usize>) -> (bool, Vec<(usize, &ClassUnicode)>) {
        let st = &self.states[s];
        let mut e: Vec<(usize, &ClassUnicode)> = st
            .edges
            .iter()
            .enumerate()
            .filter(|(i, (t, _))| *t != s && Some(*i) != skip)
            .map(|(_, (t, c))| (*t, c))
            .collect();
        e.sort_by_key(|x| x.0);
        (st.accepting, e)
    }

    fn self_loop(&self, s: usize) -> Option<usize> {
        self.states[s].edges.iter().position(|(t, _)| *t == s)
    }

    fn regex_of(
        &self,
        s: usize,
        enc: &[Vec<(usize, String)>],
        m: &mut Memo,
        depth: usize,
    ) -> Option<String> {
        if let Some(r) = &m.memo[s] {
            return Some(r.clone());
        }
        if m.on_path[s] || depth > MAX_REGION_DEPTH {
            return None; // a cycle through several states, or too deep
        }
        m.on_path[s] = true;
        let r = self.regex_uncached(s, enc, m, depth);
        m.on_path[s] = false;
        let r = r?;
        if r.len() > MAX_REGION_REGEX {
            return None;
        }
        m.budget = m.budget.checked_sub(r.len())?;
        m.memo[s] = Some(r.clone());
        Some(r)
    }

    /// The alternatives `"` (if accepting) and `C·L(t)` of `s`, except the
    /// self-loop and the edge `skip`.
    fn alternatives(
        &self,
        s: usize,
        skip: Option<usize>,
        enc: &[Vec<(usize, String)>],
        m: &mut Memo,
        depth: usize,
    ) -> Option<Vec<String>> {
        let mut alts = Vec::new();
        if self.states[s].accepting {
            alts.push("\"".to_string());
        }
        for (i, (t, c)) in enc[s].iter().enumerate() {
            if *t == s || Some(i) == skip {
                continue;
            }
            let sub = self.regex_of(*t, enc, m, depth + 1)?;
            alts.push(format!("(?:{c})(?:{sub})"));
        }
        Some(alts)
    }

    fn regex_uncached(
        &self,
        s: usize,
        enc: &[Vec<(usize, String)>],
        m: &mut Memo,
        depth: usize,
    ) -> Option<String> {
        let join = |alts: Vec<String>| match alts.len() {
            0 => "[^\\x00-\\x{10FFFF}]".to_string(), // matches nothing
            1 => alts.into_iter().next().unwrap_or_default(),
            _ => alts.join("|"),
        };
        if let Some(l) = self.self_loop(s) {
            let alts = self.alternatives(s, None, enc, m, depth)?;
            return Some(format!("(?:{})*(?:{})", enc[s][l].1, join(alts)));
        }
        // a uniform chain starting at s
        for (i, (t, c)) in self.states[s].edges.iter().enumerate() {
            let mut run = vec![s];
            let mut next = *t;
            let base = self.rest(s, Some(i));
            loop {
                if run.contains(&next) || self.self_loop(next).is_some() {
                    break;
                }
                let Some(j) = self.states[next].edges.iter().position(|(_, d)| d == c) else {
                    break;
                };
                if self.rest(next, Some(j)) != base {
                    break;
                }
                run.push(next);
                next = self.states[next].edges[j].0;
            }
            let len = run.len();
            if len < 3 {
                continue;
            }
            // run = s₀ … s_{len-1}, all with rest `base`; s_len = next
            let tail = self.regex_of(next, enc, m, depth + 1)?;
            let cls = &enc[s][i].1;
            let rest = self.alternatives(s, Some(i), enc, m, depth)?;
            let mut out = Vec::new();
            if !rest.is_empty() {
                let rest = join(rest);
                if rest == tail {
                    // `C{0,len-1}·R | C{len}·R` is `C{0,len}·R` (half the
                    // expanded automaton)
                    return Some(format!("(?:{cls}){{0,{len}}}(?:{rest})"));
                }
                out.push(format!("(?:{cls}){{0,{}}}(?:{rest})", len - 1));
            }
            out.push(format!("(?:{cls}){{{len}}}(?:{tail})"));
            return Some(join(out));
        }
        let alts = self.alternatives(s, None, enc, m, depth)?;
        Some(join(alts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pats(ps: &[&str]) -> Vec<KeyPattern> {
        ps.iter().map(|p| KeyPattern::new(p).unwrap()).collect()
    }

    fn refs(ps: &[KeyPattern]) -> Vec<&KeyPattern> {
        ps.iter().collect()
    }

    /// Membership of a decoded key in a region automaton, by simulation.
    fn in_region(r: &RegionGrammar, key: &str) -> bool {
        if r.states.is_empty() {
            return false;
        }
        let mut s = 0;
        for c in key.chars() {
            match r.states[s]
                .edges
                .iter()
                .find(|(_, cls)| cls.iter().any(|x| x.start() <= c && c <= x.end()))
            {
                Some(&(t, _)) => s = t,
                None => return false,
            }
        }
        r.states[s].accepting
    }

    /// `with_length`'s sink (states from which the first `must` patterns
    /// cannot all match, or past the maximum) leaves the region of those
    /// patterns as it is: against brute force over every key of up to six
    /// characters, and against the product built without the sink, which
    /// has more states.
    #[test]
    fn hopeless_states_sink_without_changing_the_region() {
        /// Patterns, how many must match, excluded strings, bounds.
        type Case<'s> = (&'s [&'s str], usize, &'s [&'s str], u64, Option<u64>);
        let cases: &[Case] = &[
            (&["^a", "b$", "^[ab]"], 2, &[], 2, Some(5)),
            (&["a.*b", "^[abc]+$"], 2, &["ab"], 0, Some(4)),
            (&["^a", "bb"], 1, &[], 3, None),
            (&["aaa", "bbb", "^b"], 2, &[], 0, Some(6)),
            (&["^c"], 0, &["c"], 1, Some(3)),
        ];
        let alphabet = ["a", "b", "c"];
        let mut keys = vec![String::new()];
        let mut frontier = vec![String::new()];
        for _ in 0..6 {
            let next: Vec<String> = frontier
                .iter()
                .flat_map(|k| alphabet.iter().map(move |c| format!("{k}{c}")))
                .collect();
            keys.extend(next.iter().cloned());
            frontier = next;
        }
        for &(ps, must, excluded, min, max) in cases {
            let p = pats(ps);
            let len = Some(LenBound { min, max });
            let pruned = KeyAutomaton::with_length(&refs(&p), must, excluded, min, max).unwrap();
            let full = KeyAutomaton::build(&refs(&p), excluded, len, None).unwrap();
            let set = if must == 0 {
                0
            } else {
                u64::MAX >> (64 - must)
            };
            let (rp, rf) = (pruned.region(set), full.region(set));
            for k in &keys {
                let n = k.chars().count() as u64;
                let want = p[..must].iter().all(|q| q.matches(k))
                    && !p[must..].iter().any(|q| q.matches(k))
                    && !excluded.contains(&k.as_str())
                    && n >= min
                    && max.is_none_or(|m| n <= m);
                assert_eq!(in_region(&rp, k), want, "{ps:?}: {k:?}");
                assert_eq!(in_region(&rf, k), want, "{ps:?} (no sink): {k:?}");
            }
            assert!(pruned.trans.len() <= full.trans.len(), "{ps:?}");
        }
        // the sink pays: a hundred-character bound over a prefix pattern
        let p = pats(&["^ab", "c"]);
        let pruned = KeyAutomaton::with_length(&refs(&p), 2, &[], 0, Some(100)).unwrap();
        let full = KeyAutomaton::build(
            &refs(&p),
            &[],
            Some(LenBound {
                min: 0,
                max: Some(100),
            }),
            None,
        )
        .unwrap();
        assert!(
            pruned.trans.len() * 3 < full.trans.len() * 2,
            "{} vs {}",
            pruned.trans.len(),
            full.trans.len()
        );
    }

    /// `to_regex` (chain compression included) has the language of the
    /// region automaton, or declines (multi-state cycles).
    #[test]
    fn region_regexes_match_their_automata() {
        let cases: &[(&[&str], &[&str])] = &[
            (&["^[0-9a-z_-]{1,40}$"], &["id", "createdAt", "x"]),
            (&["^(ab)+$"], &[]),
            (&["^a", "[0-9]{2,5}$"], &["a1"]),
            (&[".*"], &["basic"]),
            // MaskBench o71845: the complement has a cycle through two states
            (&["^[a-zA-Z0-9]([a-zA-Z0-9-]+[a-zA-Z0-9])?$"], &[]),
        ];
        let mut keys: Vec<String> = [
            "",
            "a",
            "ab",
            "abab",
            "aba",
            "id",
            "createdAt",
            "x",
            "a1",
            "a12",
            "12345",
            "123456",
            "basic",
            "b\"c",
            "é",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for k in ["a-b", "a--b", "a-", "-a", "ab-c-d", "a-b-", "9-x9"] {
            keys.push(k.to_string());
        }
        keys.push("z".repeat(40));
        keys.push("z".repeat(41));
        keys.push(format!("a{}", "9".repeat(39)));
        let mut declined = 0;
        for (ps, names) in cases {
            let ps = pats(ps);
            let ka = KeyAutomaton::new(&refs(&ps), names).unwrap();
            for set in ka.regions() {
                let g = ka.region(set);
                let Some(r) = g.to_regex() else {
                    assert!(
                        !ps[0].source.contains("{1,40}"),
                        "a counted chain is compressed: region {set}, {} states",
                        g.states.len()
                    );
                    declined += 1;
                    continue;
                };
                if ps[0].source.contains("{1,40}") {
                    assert!(r.contains("{0,"), "chain compression: {r}");
                }
                let d = TerminalDfa::regex(&r).unwrap_or_else(|e| panic!("{r}: {e}"));
                for k in &keys {
                    let text = format!("\"{}\"", encode_str(k));
                    assert_eq!(
                        d.matches(text.as_bytes()),
                        in_region(&g, k),
                        "{k:?} in region {set}: {r}"
                    );
                }
            }
        }
        assert_eq!(
            declined, 0,
            "multi-state cycles (the (ab)+ complement) are written by state elimination"
        );
    }

    /// Region automata are minimal: an unanchored pattern's product (whose
    /// lazy DFA keeps tracking partial matches after a match) collapses to
    /// the few states that tell suffixes apart, with the language of the
    /// brute-force definition (every key over a small alphabet, up to five
    /// characters).
    #[test]
    fn region_automata_are_minimal_and_exact() {
        let cases: &[(&str, &[&str], usize)] = &[
            // contains `date` or `time`, and is not `enum`
            ("date|time", &["enum"], 12),
            ("^list|date|time|enum|number$", &["enum"], 40),
            ("^[a-z]+$", &["date", "time"], 12),
        ];
        let alphabet = ['d', 'a', 't', 'e', 'i', 'm', 'n', 'x'];
        let mut keys = vec![String::new()];
        let mut frontier = vec![String::new()];
        for _ in 0..5 {
            let mut next = Vec::new();
            for k in &frontier {
                for c in alphabet {
                    next.push(format!("{k}{c}"));
                }
            }
            keys.extend(next.iter().cloned());
            frontier = next;
        }
        for &(pat, excluded, most) in cases {
            let ps = pats(&[pat]);
            let ka = KeyAutomaton::with_length(&refs(&ps), 1, excluded, 0, None).unwrap();
            let g = ka.region(1);
            assert!(
                g.states.len() <= most,
                "{pat} minus {excluded:?}: {} states",
                g.states.len()
            );
            // minimal: no two states share acceptance and every target
            let sig = |st: &RegionState| {
                let mut e: Vec<(usize, String)> = st
                    .edges
                    .iter()
                    .map(|(t, c)| (*t, format!("{c:?}")))
                    .collect();
                e.sort();
                (st.accepting, e)
            };
            let mut seen = std::collections::HashSet::new();
            for st in &g.states {
                assert!(seen.insert(sig(st)), "{pat}: two equivalent states remain");
            }
            for k in &keys {
                let want = ps[0].matches(k) && !excluded.contains(&k.as_str());
                assert_eq!(in_region(&g, k), want, "{pat} minus {excluded:?}: {k:?}");
            }
        }
    }

    /// A pattern whose alternatives are anchored differently is searched
    /// with one `.*` pair per anchoring, so the product does not track
    /// which alternatives already matched (17,929 states before, 149 now).
    #[test]
    fn mixed_anchor_search_products_stay_small() {
        let ps = pats(&["^list|date|time|string|enum|int|double|long|boolean|number$"]);
        let ka = KeyAutomaton::with_length(&refs(&ps), 1, &["enum"], 0, None).unwrap();
        assert!(ka.trans.len() < 400, "{} product states", ka.trans.len());
    }

    #[test]
    fn regions_partition_keys() {
        let ps = pats(&["^a", "b$", "^[0-9]{1,3}$"]);
        let names = ["ab", "x"];
        let k = KeyAutomaton::new(&refs(&ps), &names).unwrap();
        let regions = k.regions();
        let grammars: Vec<(u64, RegionGrammar)> =
            regions.iter().map(|&m| (m, k.region(m))).collect();
        for key in [
            "", "a", "ab", "b", "x", "xb", "12", "1234", "a\"b", "é", "ab\n", "axb", "007",
        ] {
            let want: u64 = ps
                .iter()
                .enumerate()
                .filter(|(_, p)| p.matches(key))
                .fold(0, |m, (i, _)| m | 1 << i);
            let hits: Vec<u64> = grammars
                .iter()
                .filter(|(_, g)| in_region(g, key))
                .map(|(m, _)| *m)
                .collect();
            if names.contains(&key) {
                assert!(hits.is_empty(), "{key:?} is declared: {hits:?}");
            } else {
                assert_eq!(hits, vec![want], "{key:?}");
            }
        }
        assert!(!k.region_is_pattern(1, 0), "the name `ab` matches ^a");
        let k1 = KeyAutomaton::new(&refs(&pats(&["^[a-z]+$"])), &["B"]).unwrap();
        assert!(k1.region_is_pattern(1, 0));
    }
}
