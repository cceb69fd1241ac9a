//! Builds the bounded product of [`crate::bounded`]: a regex's automaton
//! times the skeleton of a counted repetition ([`crate::counted`]), its
//! pairs explored once, the count left to the layout.

use crate::bounded::{BoundedTables, MAX_MIN};
use crate::counted::Parts;
use crate::terminal::{ByteDfa, DEAD};

/// The product of `a` (any automaton: dense, lazy or counted) with the
/// counted repetition `b` (its [`Parts`]); `None` when the shape does not
/// fit the layout (`m` over [`MAX_MIN`], ids past the `u32` space), and
/// `Err(pairs)` when there would be more than `max_pairs` pairs.
pub(crate) fn build(a: &ByteDfa, b: &Parts, max_pairs: usize) -> Option<Result<ByteDfa, usize>> {
    if b.m > MAX_MIN {
        return None;
    }
    let sk = Skeleton::new(b);
    // Joint classes: A's, X's, S's and each prefix byte alone.
    let mut key_of = rustc_hash::FxHashMap::default();
    let mut classes = [0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    for x in 0..=255u8 {
        let pb = if b.prefix.contains(&x) { x as u16 } else { 256 };
        let key = (a.class(x), b.dx.class(x), b.ds.class(x), pb);
        let next = key_of.len();
        let c = *key_of.entry(key).or_insert(next);
        if c == reps.len() {
            reps.push(x);
        }
        classes[x as usize] = u8::try_from(c).ok()?;
    }
    let ncls = reps.len();
    // The pair graph, breadth first from the start pair.
    let start = (a.start(), sk.start());
    if start.0 == DEAD {
        let t = BoundedTables::new(ncls, b.m, b.n, Vec::new(), Vec::new(), true)?;
        return Some(Ok(ByteDfa::from_bounded(classes, ncls, t, DEAD)));
    }
    let mut ids = rustc_hash::FxHashMap::default();
    let mut pairs: Vec<(u32, u32)> = vec![start];
    ids.insert(start, 0u32);
    // per pair and class: (target pair + 1) << 1 | δ, 0 = dead
    let mut rows: Vec<u32> = Vec::new();
    let mut i = 0;
    while i < pairs.len() {
        let (p, c) = pairs[i];
        i += 1;
        for &x in &reps {
            let p2 = a.next(p, x);
            let (c2, delta) = sk.next(b, c, x);
            if p2 == DEAD || c2 == DEAD {
                rows.push(0);
                continue;
            }
            let next = pairs.len() as u32;
            let id = *ids.entry((p2, c2)).or_insert(next);
            if id == next {
                if pairs.len() >= max_pairs {
                    return Some(Err(pairs.len() + 1));
                }
                pairs.push((p2, c2));
            }
            rows.push(((id + 1) << 1) | u32::from(delta));
        }
    }
    let acc: Vec<bool> = pairs
        .iter()
        .map(|&(p, c)| a.is_accepting(p) && sk.is_accepting(b, c))
        .collect();
    let t = BoundedTables::new(ncls, b.m, b.n, rows, acc, reads_lead(&b.dx))?;
    let s0 = t.start();
    Some(Ok(ByteDfa::from_bounded(classes, ncls, t, s0)))
}

/// True when every string of `dx` reads a byte that is not a UTF-8
/// continuation byte (a search of `dx` over continuation bytes alone
/// for an accepting state).
fn reads_lead(dx: &ByteDfa) -> bool {
    let mut seen = rustc_hash::FxHashSet::default();
    let mut stack = vec![dx.start()];
    while let Some(q) = stack.pop() {
        for b in 0x80..=0xBFu8 {
            let q2 = dx.next(q, b);
            if q2 == DEAD {
                continue;
            }
            if dx.is_accepting(q2) {
                return false;
            }
            if seen.insert(q2) {
                stack.push(q2);
            }
        }
    }
    true
}

/// `P X* S` without the count: state 0 dead, `1..=|P|` the prefix (state
/// `j` has read `j − 1` bytes of it), then the boundary, then `X`'s states
/// other than its accepting ones (an `X` completed is the boundary again),
/// then `S`'s states.
struct Skeleton {
    plen: u32,
    boundary: u32,
    s_base: u32,
}

impl Skeleton {
    fn new(b: &Parts) -> Self {
        let plen = b.prefix.len() as u32;
        let boundary = plen + 1;
        let s_base = boundary + b.dx.num_states() as u32;
        Skeleton {
            plen,
            boundary,
            s_base,
        }
    }

    fn start(&self) -> u32 {
        if self.plen > 0 {
            1
        } else {
            self.boundary
        }
    }

    /// The next skeleton state and whether the step completed an `X`.
    fn next(&self, b: &Parts, c: u32, x: u8) -> (u32, bool) {
        let inner = |q: u32| -> (u32, bool) {
            if q == DEAD {
                (DEAD, false)
            } else if b.dx.is_accepting(q) {
                (self.boundary, true)
            } else {
                (self.boundary + q, false)
            }
        };
        let tail = |q: u32| if q == DEAD { DEAD } else { self.s_base + q };
        if c == DEAD {
            (DEAD, false)
        } else if c <= self.plen {
            if b.prefix[c as usize - 1] != x {
                (DEAD, false)
            } else if c == self.plen {
                (self.boundary, false)
            } else {
                (c + 1, false)
            }
        } else if c == self.boundary {
            match b.dx.next(b.dx.start(), x) {
                DEAD => (tail(b.ds.next(b.ds.start(), x)), false),
                q => inner(q),
            }
        } else if c < self.s_base {
            inner(b.dx.next(c - self.boundary, x))
        } else {
            (tail(b.ds.next(c - self.s_base, x)), false)
        }
    }

    /// Accepting, count aside: in an accepting state of `S`, or at the
    /// boundary when `S` matches the empty string.
    fn is_accepting(&self, b: &Parts, c: u32) -> bool {
        if c == self.boundary {
            b.ds.is_accepting(b.ds.start())
        } else if c > self.s_base {
            b.ds.is_accepting(c - self.s_base)
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::terminal::{parse_regex, ByteDfa, DEAD};
    use proptest::prelude::*;
    use zapspec_grammar::RegexLimits;

    /// A string's pieces: quotes, letters, an escape, a two-byte letter.
    const PIECES: &[&str] = &["\"", "a", "b", "@", ".", "\\", "n", "é"];

    /// Patterns (quoted, as the JSON Schema compiler writes them): gaps in
    /// the lengths (`(?:ab)*`), a minimum (`a{3}`), unbounded loops.
    const PATTERNS: &[&str] = &[
        r#""[ab]+@[ab]+(?:\.[ab]*)*""#,
        r#""(?:ab)*""#,
        r#""a(?:bbb)*(?:\\n)?""#,
        r#""(?:[^"\\]|\\n)*a{3}""#,
        r#""(?:a|é)*@""#,
        r#""""#,
        // words of Unicode classes, counted: the shape of real schemas'
        // `^(?:\S+\s+){0,99}\S+$`
        r#""(?:[^\s"\\]+\s+){0,3}[^\s"\\]+""#,
    ];

    /// The unit: one character, or an escape.
    const UNIT: &str = r#"(?:[^"\\]|\\["\\n])"#;

    fn and(a: &str, m: u32, n: u32) -> (ByteDfa, ByteDfa) {
        and_opts(a, m, n, true)
    }

    /// The bounded product (its regex side lazy or determinised) and the
    /// eager product of the two general automata.
    fn and_opts(a: &str, m: u32, n: u32, lazy: bool) -> (ByteDfa, ByteDfa) {
        let b = format!("\"{UNIT}{{{m},{n}}}\"");
        let (ha, hb) = (parse_regex(a).unwrap(), parse_regex(&b).unwrap());
        let limits = RegexLimits::default();
        let fast = ByteDfa::from_and_opts(&ha, &hb, "test", &limits, lazy).unwrap();
        let da = ByteDfa::from_regex_general(a, &limits).unwrap();
        let db = ByteDfa::from_regex_general(&b, &limits).unwrap();
        let slow = ByteDfa::product(&da, &db, 1 << 20).unwrap();
        (fast, slow)
    }

    #[test]
    fn counted_second_regex_takes_the_bounded_layout() {
        let (fast, _) = and(PATTERNS[0], 0, 40);
        assert!(fast.state_id_bound() > fast.num_states() / 2);
        // built by arithmetic: as many states as pairs times counts
        assert!(fast.num_states() > 40);
        // an unsatisfiable bound: `a{3}` needs three characters
        let (fast, slow) = and(PATTERNS[3], 0, 2);
        assert_eq!(slow.start(), DEAD);
        let _ = fast; // n = 2 is below the counted shape: general product
        let (fast, slow) = and(r#""a{20}""#, 21, 40);
        assert_eq!((fast.start(), slow.start()), (DEAD, DEAD));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Along random strings, the bounded product and the eager product
        /// of the two general automata agree on liveness and acceptance
        /// after every byte; and a state's context-independent
        /// representative reads every short continuation as it does.
        #[test]
        fn bounded_product_equals_eager_product(
            pat in 0..PATTERNS.len(),
            m in 0u32..8,
            extra in 16u32..90,
            walks in proptest::collection::vec(
                proptest::collection::vec(any::<u16>(), 0..160), 1..5),
            horizon in 1usize..6,
            lazy in any::<bool>(),
        ) {
            let n = (m + extra).max(16);
            let (fast, slow) = and_opts(PATTERNS[pat], m, n, lazy);
            prop_assert_eq!(fast.start() == DEAD, slow.start() == DEAD);
            for walk in &walks {
                // a random walk over the eager product's live bytes (a
                // dead byte now and then)
                let mut bytes = Vec::new();
                let mut s = slow.start();
                for &c in walk {
                    if s == DEAD {
                        break;
                    }
                    // the closing quote rarely: long strings reach the bounds
                    let mut live: Vec<u8> = (0..=255u8)
                        .filter(|&x| slow.next(s, x) != DEAD && (x != b'"' || c % 29 == 0))
                        .collect();
                    if live.is_empty() {
                        live = (0..=255u8).filter(|&x| slow.next(s, x) != DEAD).collect();
                    }
                    let x = if live.is_empty() || c % 17 == 0 {
                        PIECES[c as usize % PIECES.len()].as_bytes()[0]
                    } else {
                        live[c as usize % live.len()]
                    };
                    bytes.push(x);
                    s = slow.next(s, x);
                }
                let (mut f, mut s) = (fast.start(), slow.start());
                for (i, &x) in bytes.iter().enumerate() {
                    if f == DEAD {
                        break;
                    }
                    prop_assert_eq!(fast.is_accepting(f), slow.is_accepting(s));
                    prop_assert_eq!(fast.can_continue(f), slow.can_continue(s));
                    for y in 0..=255u8 {
                        prop_assert_eq!(fast.next(f, y) == DEAD, slow.next(s, y) == DEAD);
                    }
                    // the representative reads the next `horizon` bytes alike
                    let r = fast.ci_representative(f, horizon);
                    let (mut a, mut b) = (f, r);
                    for &y in bytes[i..].iter().take(horizon) {
                        a = fast.next(a, y);
                        b = fast.next(b, y);
                        prop_assert_eq!(a == DEAD, b == DEAD);
                        if a == DEAD {
                            break;
                        }
                        prop_assert_eq!(fast.is_accepting(a), fast.is_accepting(b));
                    }
                    f = fast.next(f, x);
                    s = slow.next(s, x);
                    prop_assert_eq!(f == DEAD, s == DEAD, "after {:?}", &bytes[..=i]);
                }
                if f != DEAD {
                    prop_assert_eq!(fast.is_accepting(f), slow.is_accepting(s));
                }
            }
        }
    }
}
