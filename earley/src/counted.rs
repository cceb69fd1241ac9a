//! Counted repetitions built by construction, as a counter times a small
//! automaton, instead of by determinising an `n`-fold NFA.
//!
//! A JSON string with `maxLength: n` is the regex `"X{0,n}"`, where `X` is
//! one string character (a UTF-8 sequence or an escape). `regex-automata`
//! compiles it by expanding `n` copies of `X` into an NFA and
//! determinising it: time and memory grow with `n` times the NFA of `X`
//! (hundreds of milliseconds of time-to-first-mask for `n` in the
//! thousands). But when
//!
//! 1. everything before the repetition is a literal `P`,
//! 2. `X` never matches the empty string and is *prefix-free* (no match of
//!    `X` is a proper prefix of another: a JSON character is complete the
//!    moment it ends), and
//! 3. no byte can both start an `X` and start the rest `S` of the regex,
//!
//! the DFA of `P X{m,n} S` is the product of a counter `k ∈ 0..=n` with the
//! DFA of `X`, laid out by arithmetic: the prefix chain, then per count
//! `k` one *boundary* state (between two `X`s: an `X` may start if `k < n`,
//! `S` may start if `k ≥ m`) and the non-accepting states of `X`'s DFA
//! (inside the `k+1`-th `X`; its accepting states are the boundary of
//! `k + 1`), then the states of `S`'s DFA. The table is not stored: a
//! transition is computed from the layout (`CountedTables`: a shift, a
//! mask and one lookup in `X`'s or `S`'s row), so building costs
//! `O((|X| + |S|) · classes)` whatever `n`; every state
//! is live when `S` matches something, so no pruning pass is needed.
//!
//! The layout also tells which states look alike to a token. A token of at
//! most `H` bytes completes at most `H` more `X`s, so two states in the same
//! state of `X` whose distances to `m` and to `n`, each capped at `H + 1`,
//! are equal accept, reject and split exactly the same tokens:
//! [`ByteDfa::ci_representative`](crate::ByteDfa::ci_representative)
//! maps a state to one representative of its class, and the
//! context-independent cache computes one entry per class (about `2H` per
//! state of `X`) instead of one per count.

use regex_syntax::hir::{Hir, HirKind};

use crate::terminal::{parse_regex, ByteDfa, CountedLayout, CountedTables, DEAD};

/// Repetitions with an upper bound below this are left to the general
/// construction (their NFA is small).
pub const MIN_COUNTED: u32 = 16;

/// True when `re` has the outer shape the counted construction takes (a
/// literal prefix, then a repetition with an upper bound of at least
/// [`MIN_COUNTED`]); whether its unit and tail qualify is decided when it
/// is built.
pub fn is_counted_regex(re: &str) -> bool {
    is_counted_regex_with(re, None)
}

/// [`is_counted_regex`] given the HIR `re` was printed from, when there is
/// one (`zapspec_grammar::Grammar::regex_hir`): the text is then only
/// screened, not parsed.
pub fn is_counted_regex_with(re: &str, hir: Option<&regex_syntax::hir::Hir>) -> bool {
    // A repetition with a finite upper bound of MIN_COUNTED or more is
    // written `{n}` or `{m,n}` with `n ≥ MIN_COUNTED`: without such a brace
    // the regex cannot have the shape, and the parse (most of a grammar's
    // regexes, every compile) is skipped.
    if !has_large_bound(re) {
        return false;
    }
    match hir {
        Some(h) => split(h).is_some(),
        None => parse_regex(re).is_ok_and(|h| split(&h).is_some()),
    }
}

/// True when `re` contains a `{…}` whose last number is at least
/// [`MIN_COUNTED`] (an over-approximation of "has a counted repetition with
/// a large upper bound": escaped braces and braces inside classes count
/// too, which only costs the parse this screens for).
fn has_large_bound(re: &str) -> bool {
    let b = re.as_bytes();
    let mut i = 0;
    while let Some(off) = b[i..].iter().position(|&c| c == b'{') {
        let mut j = i + off + 1;
        let mut last: u64 = 0;
        let mut digits = false;
        while j < b.len() && (b[j].is_ascii_digit() || b[j] == b',' || b[j] == b' ') {
            if b[j].is_ascii_digit() {
                last = if digits {
                    last.saturating_mul(10)
                        .saturating_add(u64::from(b[j] - b'0'))
                } else {
                    u64::from(b[j] - b'0')
                };
                digits = true;
            } else if b[j] == b',' {
                digits = false;
            }
            j += 1;
        }
        if j < b.len() && b[j] == b'}' && digits && last >= u64::from(MIN_COUNTED) {
            return true;
        }
        i = i + off + 1;
    }
    false
}

/// The regex's parts when it has the shape of the module docs:
/// `(prefix bytes, X, m, n, S)`.
/// Whether [`parts`] splits `hir` (a counted repetition the intersection
/// builds as a counter, `crate::intersect`).
pub(crate) fn splits(hir: &Hir) -> bool {
    split(hir).is_some_and(|(_, _, m, n, _)| m <= n)
}

fn split(hir: &Hir) -> Option<(Vec<u8>, Hir, u32, u32, Hir)> {
    let (parts, i) = counted_at(hir)?;
    let mut prefix = Vec::new();
    for p in &parts[..i] {
        if let HirKind::Literal(l) = p.kind() {
            prefix.extend_from_slice(&l.0);
        }
    }
    let HirKind::Repetition(r) = parts[i].kind() else {
        return None;
    };
    let n = r.max?;
    let rest = Hir::concat(parts[i + 1..].to_vec());
    Some((prefix, (*r.sub).clone(), r.min, n, rest))
}

/// True when `hir` has the shape of the module docs (a literal prefix, a
/// repetition bounded by at least [`MIN_COUNTED`]): [`build`] tries the
/// counted construction on it. Clones nothing.
pub(crate) fn has_counted_shape(hir: &Hir) -> bool {
    counted_at(hir).is_some()
}

/// The concatenated parts of `hir` and the index of its first repetition
/// bounded by at least [`MIN_COUNTED`], when only literals come before it.
fn counted_at(hir: &Hir) -> Option<(&[Hir], usize)> {
    let parts: &[Hir] = match hir.kind() {
        HirKind::Concat(hs) => hs,
        HirKind::Capture(c) => return counted_at(&c.sub),
        _ => std::slice::from_ref(hir),
    };
    let i = parts.iter().position(
        |h| matches!(h.kind(), HirKind::Repetition(r) if r.max.is_some_and(|n| n >= MIN_COUNTED)),
    )?;
    parts[..i]
        .iter()
        .all(|p| matches!(p.kind(), HirKind::Literal(_)))
        .then_some((parts, i))
}

/// A counted repetition `P X{m,n} S` taken apart, its unit `X` and tail
/// `S` compiled (module docs: `X` non-empty and prefix-free, `S` matching
/// something, no byte starting both).
pub(crate) struct Parts {
    /// The literal prefix `P`.
    pub(crate) prefix: Vec<u8>,
    /// `X`'s automaton.
    pub(crate) dx: ByteDfa,
    /// `S`'s automaton.
    pub(crate) ds: ByteDfa,
    /// The repetition's bounds.
    pub(crate) m: u32,
    pub(crate) n: u32,
}

/// [`Parts`] of `hir` when it has the shape and its unit and tail the
/// properties of the module docs; `None` otherwise. `build` compiles `X`
/// and `S`.
pub(crate) fn parts<E>(
    hir: &Hir,
    build: impl Fn(&Hir) -> Result<ByteDfa, E>,
) -> Option<Result<Parts, E>> {
    let (prefix, x, m, n, rest) = split(hir)?;
    if m > n {
        return None;
    }
    let dx = match build(&x) {
        Ok(d) => d,
        Err(e) => return Some(Err(e)),
    };
    let ds = match build(&rest) {
        Ok(d) => d,
        Err(e) => return Some(Err(e)),
    };
    let (x0, s0) = (dx.start(), ds.start());
    // X non-empty and prefix-free; S matches something.
    if x0 == DEAD || dx.is_accepting(x0) || s0 == DEAD {
        return None;
    }
    let xs = dx.num_states() as u32;
    if (1..xs).any(|q| dx.is_accepting(q) && dx.can_continue(q)) {
        return None;
    }
    // No byte starts both an X and S.
    if (0..=255u8).any(|b| dx.next(x0, b) != DEAD && ds.next(s0, b) != DEAD) {
        return None;
    }
    Some(Ok(Parts {
        prefix,
        dx,
        ds,
        m,
        n,
    }))
}

/// The product automaton of `hir` when it has the shape of the module
/// docs (`too_many` when it would have more than `max_states` states);
/// `None` otherwise, and for a count past the state id space (the caller
/// uses the general construction). `build` compiles the small parts;
/// `too_many` reports stored states over `max_states`.
pub(crate) fn build<E>(
    hir: &Hir,
    max_states: usize,
    build: impl Fn(&Hir) -> Result<ByteDfa, E>,
    too_many: impl Fn(u64) -> E,
) -> Option<Result<ByteDfa, E>> {
    let Parts {
        prefix,
        dx,
        ds,
        m,
        n,
    } = match parts(hir, build)? {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    let (x0, s0) = (dx.start(), ds.start());
    let xs = dx.num_states() as u32;
    // X's non-accepting states, numbered 1.. within a count.
    let mut inner = vec![0u32; xs as usize];
    let mut per = 1u32;
    for q in 1..xs {
        if !dx.is_accepting(q) {
            inner[q as usize] = per;
            per += 1;
        }
    }
    let plen = prefix.len() as u32;
    let base = 1 + plen;
    // The state bound counts the states that are stored: the prefix, one
    // count's block and `S` (the counter is computed from the layout, and
    // cache entries are numbered per distance to the bounds,
    // `ByteDfa::ci_slot`, not per count).
    let reachable = base as u64 + n as u64 * per as u64 + ds.num_states() as u64;
    let stored = base as u64 + per as u64 + ds.num_states() as u64;
    if stored > max_states as u64 + 1 {
        return Some(Err(too_many(stored - 1)));
    }
    // Ids leave room for a power-of-two stride per count
    // (`CountedTables`); a count they cannot number is left to the
    // general construction (whose NFA bound refuses such an expansion).
    let stride = per.next_power_of_two();
    let s_base = base as u64 + n as u64 * stride as u64 + 1;
    if s_base + ds.num_states() as u64 > u64::from(u32::MAX / 2) {
        return None;
    }
    let s_base = s_base as u32;
    // Joint byte classes: X's, S's, and each prefix byte alone.
    let mut key_of = rustc_hash::FxHashMap::default();
    let mut classes = [0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    for b in 0..=255u8 {
        let pb = if prefix.contains(&b) { b as u16 } else { 256 };
        let key = (dx.class(b), ds.class(b), pb);
        let next = key_of.len();
        let c = *key_of.entry(key).or_insert(next);
        if c == reps.len() {
            reps.push(b);
        }
        classes[b as usize] = u8::try_from(c).ok()?;
    }
    let ncls = reps.len();
    // offset within a count of X's state q (q accepting: the next count's
    // boundary, one stride on)
    let off = |q: u32| -> u32 {
        if q == DEAD {
            0
        } else if dx.is_accepting(q) {
            stride
        } else {
            inner[q as usize]
        }
    };
    let mut x_rows = vec![0u32; per as usize * ncls];
    for (c, &b) in reps.iter().enumerate() {
        x_rows[c] = off(dx.next(x0, b));
    }
    for q in 1..xs {
        if !dx.is_accepting(q) {
            let row = inner[q as usize] as usize * ncls;
            for (c, &b) in reps.iter().enumerate() {
                x_rows[row + c] = off(dx.next(q, b));
            }
        }
    }
    let ns = ds.num_states();
    let mut s_rows = vec![0u32; ns * ncls];
    let mut s_acc = vec![false; ns];
    let mut s_cont = vec![false; ns];
    for q in 1..ns as u32 {
        s_acc[q as usize] = ds.is_accepting(q);
        s_cont[q as usize] = ds.can_continue(q);
        for (c, &b) in reps.iter().enumerate() {
            s_rows[q as usize * ncls + c] = ds.next(q, b);
        }
    }
    let s_start = reps.iter().map(|&b| ds.next(s0, b)).collect();
    let tables = CountedTables {
        ncls,
        prefix_cls: prefix.iter().map(|&b| classes[b as usize]).collect(),
        base,
        shift: stride.trailing_zeros(),
        m,
        n,
        x_rows,
        s_start,
        s_start_accepting: ds.is_accepting(s0),
        s_start_continues: ds.can_continue(s0),
        s_base,
        s_rows,
        s_acc,
        s_cont,
        reachable: reachable as usize,
    };
    let start = if plen > 0 { 1 } else { base };
    let layout = CountedLayout {
        base,
        per: stride,
        m,
        n,
    };
    Some(Ok(ByteDfa::from_counted(
        classes, ncls, tables, start, layout,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The parse-based check with the brace screen removed.
    fn shape_by_parse(re: &str) -> bool {
        parse_regex(re).is_ok_and(|h| split(&h).is_some())
    }

    #[test]
    fn brace_screen_cases() {
        for (re, want) in [
            ("\"[a-z]{0,16}\"", true),
            ("\"[a-z]{0,15}\"", false),
            ("x{16}", true),
            ("x{16,}", false),
            ("x{2,1000}y", true),
            ("\\{16}", true), // screened in, refused by the parse
            ("abc", false),
        ] {
            assert_eq!(has_large_bound(re), want, "{re}");
        }
        assert!(!is_counted_regex("\\{16}"));
        assert!(is_counted_regex("\"[a-z]{0,16}\""));
    }

    proptest! {
        /// The screen never rejects a regex the parse accepts: random
        /// concatenations of literals, classes and counted repetitions.
        #[test]
        fn screen_is_sound(parts in proptest::collection::vec(
            (0usize..5, 0u32..40, 0u32..40), 1..5)) {
            let mut re = String::new();
            for (k, a, b) in parts {
                let (lo, hi) = (a.min(b), a.max(b));
                re.push_str(match k {
                    0 => "ab",
                    1 => "[0-9]",
                    2 => "(?:x|yz)",
                    3 => "\\{",
                    _ => "q",
                });
                match k % 3 {
                    0 => re.push_str(&format!("{{{lo},{hi}}}")),
                    1 => re.push_str(&format!("{{{hi}}}")),
                    _ => re.push_str(&format!("{{{lo},}}")),
                }
            }
            if shape_by_parse(&re) {
                prop_assert!(has_large_bound(&re), "{}", re);
            }
            prop_assert_eq!(is_counted_regex(&re), shape_by_parse(&re));
        }
    }
}
