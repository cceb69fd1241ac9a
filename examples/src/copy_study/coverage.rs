//! Copy coverage and the closed-form speed-up bound (paper Fig. 4).
//!
//! Three measurements over (before, after) pairs:
//!
//! - **Line-level oracle cover** ([`line_cover`]): the program
//!   [`oracle_program`]`(before, after)` is tokenized *op by op* (each copy
//!   op's source lines and each gen op's text are tokenized separately, as a
//!   decoder would see them at span boundaries); the cover `f` is the fraction
//!   of those output tokens that lie in copy ops. The denominator is the sum
//!   of the per-op token counts, which can differ by a few tokens from
//!   tokenizing `after` in one piece (merges across op boundaries). Cost: the
//!   oracle diff (see [`zapspec_copy::oracle`]) plus one tokenizer pass
//!   over `after`'s bytes.
//! - **Token-level greedy cover at minimum span `m`** ([`token_cover`],
//!   [`TokenMatcher`]): `before` and `after` are tokenized whole; left to
//!   right over the output tokens, the longest run of output tokens starting
//!   at the current position that occurs contiguously in the input tokens is
//!   taken as a copy span if its length is `≥ m`, else one token is generated.
//!   The longest-match lengths ("matching statistics") for *every* output
//!   position are computed once with a suffix automaton of the reversed input
//!   (`O(|in| + |out|)` automaton steps, each a hash-map lookup, so expected
//!   linear time and `O(|in|)` memory); the greedy walk for one `m` is then
//!   `O(|out|)`, so all of `m ∈ {1, 2, 4, 8, 16, 32}` cost one automaton
//!   build plus six linear walks.
//! - **The bound** ([`bound`], [`histogram_bound`]): `1/((1 − f) + f/s)` as
//!   in the caption of Fig. 4(b) ("Theoretical end-to-end speedup ceiling
//!   1/((1 − f) + f/s(m))", line 70 of the paper text), and a version
//!   weighted by the copy-span histogram with a kernel table `s(N)`
//!   ([`KernelSpeedups`]).
//!
//! ## Our reading of the composition
//!
//! The abstract (line 81 of the paper text) says the coverage is "composed
//! with the empirical kernel over each corpus's span histogram". We read it
//! as: decoding one token autoregressively costs a constant `t` (so
//! `decode_time(len) = len · t`), a copy span of `len` tokens costs
//! `decode_time(len) / s(len)` (one parallel prefill), and generated tokens
//! cost `t` each. Over a set of pairs with `T` output tokens in total,
//!
//! ```text
//! bound = T / (G + Σ_spans len / s(len))
//! ```
//!
//! where `G` is the number of generated tokens. When every span has the same
//! length `N` this is exactly `1/((1 − f) + f/s(N))`; [`bound`] with
//! `s = s(m)` is the "floor" reading of Fig. 4(b) (every span is at least
//! `m` long, so with a non-decreasing `s` the histogram bound is at least the
//! floor).
//!
//! `s(N)` between table points is interpolated linearly in `(ln N, ln s)`
//! (a power law between neighbouring points); outside the table it is
//! clamped to the nearest end point (so a 3-token span gets `s(8)`, an
//! optimistic reading for spans shorter than the smallest measured `N`).

use std::collections::{BTreeMap, HashMap};

use zapspec_copy::{oracle_program, CanonicalTokens, LineIndex, Op, Tokenizer};
use zapspec_core::{TokenId, Vocabulary};

/// The minimum span lengths of the paper's Fig. 4(a).
pub const MIN_SPANS: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// Coverage of one or more pairs: output token counts and the histogram of
/// copy-span lengths in tokens. [`Cover::merge`] adds pairs together (the
/// fraction of a merged cover is token-weighted).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cover {
    /// Output tokens in total (copied + generated).
    pub output_tokens: usize,
    /// Output tokens inside copy spans.
    pub copied_tokens: usize,
    /// Number of pairs merged into this cover.
    pub pairs: usize,
    /// Copy-span length in tokens → number of spans (spans of 0 tokens are
    /// not recorded).
    pub spans: BTreeMap<usize, usize>,
}

impl Cover {
    /// Generated (non-copied) output tokens.
    pub fn generated_tokens(&self) -> usize {
        self.output_tokens.saturating_sub(self.copied_tokens)
    }

    /// The cover `f` = copied / output tokens, in `[0, 1]`; 0 when there are
    /// no output tokens.
    pub fn fraction(&self) -> f64 {
        if self.output_tokens == 0 {
            0.0
        } else {
            self.copied_tokens as f64 / self.output_tokens as f64
        }
    }

    /// Adds another cover's counts and histogram to this one.
    pub fn merge(&mut self, other: &Cover) {
        self.output_tokens += other.output_tokens;
        self.copied_tokens += other.copied_tokens;
        self.pairs += other.pairs;
        for (&len, &n) in &other.spans {
            *self.spans.entry(len).or_insert(0) += n;
        }
    }

    /// Counts `len` output tokens as one copy span.
    fn add_copy(&mut self, len: usize) {
        if len > 0 {
            self.output_tokens += len;
            self.copied_tokens += len;
            *self.spans.entry(len).or_insert(0) += 1;
        }
    }

    /// The span histogram in log2 bins: bin `k` counts spans with
    /// `2^k ≤ len < 2^(k+1)`. Returns `(k, count)` for non-empty bins
    /// (length-0 entries, which [`Cover`]'s own methods never record, are
    /// skipped).
    pub fn log2_histogram(&self) -> Vec<(u32, usize)> {
        let mut bins: BTreeMap<u32, usize> = BTreeMap::new();
        for (&len, &n) in &self.spans {
            if let Some(k) = len.checked_ilog2() {
                *bins.entry(k).or_insert(0) += n;
            }
        }
        bins.into_iter().collect()
    }
}

/// Line-level oracle cover of one pair (see the module docs). `O` of the
/// oracle diff plus tokenizing `after` once, op by op.
pub fn line_cover<T: Tokenizer + ?Sized>(before: &str, after: &str, tok: &T) -> Cover {
    let program = oracle_program(before, after);
    let index = LineIndex::new(before);
    let mut cover = Cover {
        pairs: 1,
        ..Cover::default()
    };
    for op in &program.ops {
        match op {
            Op::Copy { start, end } => {
                let text = index.span(*start, *end).unwrap_or("");
                cover.add_copy(tok.tokenize(text).len());
            }
            Op::Gen { text } => cover.output_tokens += tok.tokenize(text).len(),
        }
    }
    cover
}

/// Span-wise vs whole-output tokenization of `D′` (`zapspec_copy`'s
/// canonical-tokenization note): Copy-as-Decode appends each op's text
/// (a copy's lines, a gen op's text) tokenized on its own, while a model
/// that wrote `D′` would see `tok(D′)`. Summed over pairs with
/// [`SpanTokenization::merge`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpanTokenization {
    /// Pairs measured.
    pub pairs: usize,
    /// Pairs whose span-wise tokens differ from `tok(D′)`.
    pub pairs_differing: usize,
    /// Boundaries between consecutive non-empty op texts.
    pub boundaries: usize,
    /// Of which fall inside a token of `tok(D′)` (a merge across the
    /// boundary, so span-wise tokens must differ there).
    pub boundaries_crossed: usize,
    /// Tokens of `tok(D′)`.
    pub whole_tokens: usize,
    /// Tokens span by span.
    pub span_tokens: usize,
    /// Canonical mode ([`CanonicalTokens`], window 8): tokens rolled back
    /// at op boundaries and re-tokenized with the next op's text (the
    /// extra tokens canonical mode prefills, at most).
    pub canonical_rolled_back: usize,
    /// Op boundaries where canonical mode rolled anything back.
    pub canonical_rollbacks: usize,
    /// Pairs whose canonical tokens equal `tok(D′)` (all of them, unless
    /// the tokenizer is not prefix-stable; see [`zapspec_copy::boundary`]).
    pub canonical_exact: usize,
}

impl SpanTokenization {
    /// Adds another measurement's counts.
    pub fn merge(&mut self, o: &SpanTokenization) {
        self.pairs += o.pairs;
        self.pairs_differing += o.pairs_differing;
        self.boundaries += o.boundaries;
        self.boundaries_crossed += o.boundaries_crossed;
        self.whole_tokens += o.whole_tokens;
        self.span_tokens += o.span_tokens;
        self.canonical_rolled_back += o.canonical_rolled_back;
        self.canonical_rollbacks += o.canonical_rollbacks;
        self.canonical_exact += o.canonical_exact;
    }
}

/// Measures [`SpanTokenization`] for one pair with the oracle program's
/// spans; `vocab` gives token lengths (the vocabulary of `tok`).
/// `O(|D′|)` plus one tokenizer pass over `D′` and one per op.
pub fn span_tokenization<T: Tokenizer + ?Sized, V: Vocabulary + ?Sized>(
    before: &str,
    after: &str,
    tok: &T,
    vocab: &V,
) -> SpanTokenization {
    let program = oracle_program(before, after);
    let index = LineIndex::new(before);
    let mut spans: Vec<&str> = Vec::new();
    for op in &program.ops {
        let text = match op {
            Op::Copy { start, end } => index.span(*start, *end).unwrap_or(""),
            Op::Gen { text } => text.as_str(),
        };
        if !text.is_empty() {
            spans.push(text);
        }
    }
    let whole = tok.tokenize(after);
    let mut span_ids: Vec<TokenId> = Vec::new();
    let mut canon = CanonicalTokens::new(8);
    let (mut rolled, mut rollbacks) = (0usize, 0usize);
    for s in &spans {
        span_ids.extend(tok.tokenize(s));
        let a = canon.append(s, tok, vocab);
        rolled += a.rolled_back;
        rollbacks += usize::from(a.rolled_back > 0);
    }
    // Byte offsets where tokens of tok(D′) end.
    let mut ends = std::collections::HashSet::new();
    let mut off = 0usize;
    for &t in &whole {
        off += vocab.token_bytes(t).len();
        ends.insert(off);
    }
    let mut at = 0usize;
    let mut crossed = 0usize;
    for s in spans.iter().take(spans.len().saturating_sub(1)) {
        at += s.len();
        if !ends.contains(&at) {
            crossed += 1;
        }
    }
    SpanTokenization {
        pairs: 1,
        pairs_differing: usize::from(whole != span_ids),
        boundaries: spans.len().saturating_sub(1),
        boundaries_crossed: crossed,
        whole_tokens: whole.len(),
        span_tokens: span_ids.len(),
        canonical_rolled_back: rolled,
        canonical_rollbacks: rollbacks,
        canonical_exact: usize::from(canon.tokens() == &whole[..]),
    }
}

/// Token-level greedy cover of one pair at minimum span `m` (see the module
/// docs; `m = 0` is read as 1). To evaluate several `m`, build one
/// [`TokenMatcher`] instead.
pub fn token_cover<T: Tokenizer + ?Sized>(before: &str, after: &str, tok: &T, m: usize) -> Cover {
    TokenMatcher::new(&tok.tokenize(before), &tok.tokenize(after)).greedy(m)
}

/// The longest input match starting at every output position, ready for
/// greedy covers at any minimum span.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TokenMatcher {
    /// `longest[i]`: the length of the longest prefix of `output[i..]` that
    /// occurs contiguously in the input.
    pub longest: Vec<usize>,
}

impl TokenMatcher {
    /// Matching statistics of `output` against `input` with a suffix
    /// automaton of the reversed input: expected `O(|input| + |output|)`.
    pub fn new(input: &[TokenId], output: &[TokenId]) -> Self {
        let sam = SuffixAutomaton::new(input.iter().rev().copied());
        // Scanning the reversed output, the longest suffix of
        // rev(output)[..=j] occurring in rev(input) is the longest substring
        // of `output` starting at `n - 1 - j` occurring in `input`.
        let n = output.len();
        let mut longest = vec![0; n];
        let (mut state, mut len) = (0usize, 0usize);
        for (j, &t) in output.iter().rev().enumerate() {
            loop {
                if let Some(&next) = sam.states[state].next.get(&t) {
                    state = next;
                    len += 1;
                    break;
                }
                if state == 0 {
                    len = 0;
                    break;
                }
                state = sam.states[state].link;
                len = sam.states[state].len;
            }
            longest[n - 1 - j] = len;
        }
        TokenMatcher { longest }
    }

    /// The greedy cover at minimum span `m` (`m = 0` is read as 1): `O(|output|)`.
    pub fn greedy(&self, m: usize) -> Cover {
        let m = m.max(1);
        let n = self.longest.len();
        let mut cover = Cover {
            pairs: 1,
            ..Cover::default()
        };
        let mut i = 0;
        while i < n {
            let l = self.longest[i];
            if l >= m {
                cover.add_copy(l);
                i += l;
            } else {
                cover.output_tokens += 1;
                i += 1;
            }
        }
        cover
    }
}

#[derive(Clone, Debug, Default)]
struct SamState {
    len: usize,
    link: usize,
    next: HashMap<TokenId, usize>,
}

/// A suffix automaton over token ids (state 0 is the root; its `link` is
/// unused).
struct SuffixAutomaton {
    states: Vec<SamState>,
}

impl SuffixAutomaton {
    fn new(text: impl Iterator<Item = TokenId>) -> Self {
        let mut states = vec![SamState::default()];
        let mut last = 0usize;
        for c in text {
            let cur = states.len();
            states.push(SamState {
                len: states[last].len + 1,
                link: 0,
                next: HashMap::new(),
            });
            let mut p = Some(last);
            while let Some(pi) = p {
                if states[pi].next.contains_key(&c) {
                    break;
                }
                states[pi].next.insert(c, cur);
                p = if pi == 0 { None } else { Some(states[pi].link) };
            }
            if let Some(pi) = p {
                let q = states[pi].next[&c];
                if states[pi].len + 1 == states[q].len {
                    states[cur].link = q;
                } else {
                    let clone = states.len();
                    let cloned = SamState {
                        len: states[pi].len + 1,
                        link: states[q].link,
                        next: states[q].next.clone(),
                    };
                    states.push(cloned);
                    let mut pp = Some(pi);
                    while let Some(x) = pp {
                        if states[x].next.get(&c) != Some(&q) {
                            break;
                        }
                        states[x].next.insert(c, clone);
                        pp = if x == 0 { None } else { Some(states[x].link) };
                    }
                    states[q].link = clone;
                    states[cur].link = clone;
                }
            }
            last = cur;
        }
        SuffixAutomaton { states }
    }
}

/// Bad input to the bound computations.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BoundError {
    /// The cover fraction is not in `[0, 1]`.
    #[error("cover fraction {0} is not in [0, 1]")]
    Fraction(f64),
    /// A speed-up is not a finite positive number.
    #[error("speed-up {0} is not finite and positive")]
    Speedup(f64),
    /// A kernel table point has a span length of 0.
    #[error("kernel table point with N = 0")]
    ZeroLength,
    /// The kernel table has no points.
    #[error("empty kernel speed-up table")]
    EmptyTable,
}

/// `1/((1 − f) + f/s)` (Fig. 4(b)): the end-to-end speed-up when a fraction
/// `f` of output tokens is copied `s` times faster than decoding. `O(1)`.
pub fn bound(f: f64, s: f64) -> Result<f64, BoundError> {
    if !(0.0..=1.0).contains(&f) {
        return Err(BoundError::Fraction(f));
    }
    if !(s.is_finite() && s > 0.0) {
        return Err(BoundError::Speedup(s));
    }
    Ok(1.0 / ((1.0 - f) + f / s))
}

/// A kernel speed-up table `s(N)` (parallel prefill of `N` tokens vs `N`
/// decode steps), read between points in `(ln N, ln s)` and clamped outside
/// (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct KernelSpeedups {
    points: Vec<(usize, f64)>,
}

impl KernelSpeedups {
    /// A table from `(N, s(N))` points in any order; a repeated `N` keeps the
    /// last value. Errors on an empty table, `N = 0`, or a speed-up that is
    /// not finite and positive. `O(k log k)` for `k` points.
    pub fn new(points: impl IntoIterator<Item = (usize, f64)>) -> Result<Self, BoundError> {
        let mut map = BTreeMap::new();
        for (n, s) in points {
            if n == 0 {
                return Err(BoundError::ZeroLength);
            }
            if !(s.is_finite() && s > 0.0) {
                return Err(BoundError::Speedup(s));
            }
            map.insert(n, s);
        }
        if map.is_empty() {
            return Err(BoundError::EmptyTable);
        }
        Ok(KernelSpeedups {
            points: map.into_iter().collect(),
        })
    }

    /// The table points, sorted by `N`.
    pub fn points(&self) -> &[(usize, f64)] {
        &self.points
    }

    /// `s(len)`: log-log interpolation between points, clamped outside.
    /// `O(log k)`.
    pub fn speedup(&self, len: usize) -> f64 {
        let pts = &self.points;
        let i = pts.partition_point(|&(n, _)| n < len);
        if i == 0 {
            return pts[0].1;
        }
        if i == pts.len() {
            return pts[pts.len() - 1].1;
        }
        let (n1, s1) = pts[i];
        if n1 == len {
            return s1;
        }
        let (n0, s0) = pts[i - 1];
        let t = ((len as f64).ln() - (n0 as f64).ln()) / ((n1 as f64).ln() - (n0 as f64).ln());
        (s0.ln() + t * (s1.ln() - s0.ln())).exp()
    }
}

/// The histogram-weighted bound `T / (G + Σ_spans len / s(len))` of a cover
/// (see the module docs for the reading); 1 when the cover has no output
/// tokens. `O(#distinct span lengths · log k)`.
pub fn histogram_bound(cover: &Cover, kernel: &KernelSpeedups) -> f64 {
    if cover.output_tokens == 0 {
        return 1.0;
    }
    let copy_time: f64 = cover
        .spans
        .iter()
        .map(|(&len, &n)| n as f64 * len as f64 / kernel.speedup(len))
        .sum();
    let time = cover.generated_tokens() as f64 + copy_time;
    cover.output_tokens as f64 / time
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bytes(s: &str) -> Vec<TokenId> {
        s.bytes().map(TokenId::from).collect()
    }

    fn words(s: &str) -> Vec<TokenId> {
        s.split_inclusive(' ')
            .map(|w| {
                w.bytes()
                    .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32))
            })
            .collect()
    }

    #[test]
    fn line_cover_by_hand() {
        // Line 2 replaced: copy 1, gen "X\n", copy 3. Byte tokens:
        // "a\n" 2 + "c\n" 2 copied, "X\n" 2 generated.
        let c = line_cover("a\nb\nc\n", "a\nX\nc\n", &bytes);
        assert_eq!(c.output_tokens, 6);
        assert_eq!(c.copied_tokens, 4);
        assert_eq!(c.spans, BTreeMap::from([(2, 2)]));
        assert!((c.fraction() - 4.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn token_cover_by_hand() {
        // input "abcdxyz", output "abcQxyzab": longest matches at 0 = 3
        // ("abc"), at 3 = 0 ("Q"), at 4 = 3 ("xyz"), at 7 = 2 ("ab").
        let m = TokenMatcher::new(&bytes("abcdxyz"), &bytes("abcQxyzab"));
        assert_eq!(m.longest, vec![3, 2, 1, 0, 3, 2, 1, 2, 1]);
        let c1 = m.greedy(1);
        assert_eq!((c1.output_tokens, c1.copied_tokens), (9, 8));
        assert_eq!(c1.spans, BTreeMap::from([(2, 1), (3, 2)]));
        let c3 = m.greedy(3);
        assert_eq!(c3.copied_tokens, 6);
        let c4 = m.greedy(4);
        assert_eq!(c4.copied_tokens, 0);
        assert_eq!(c4.fraction(), 0.0);
        assert_eq!(token_cover("abcdxyz", "abcQxyzab", &bytes, 2), m.greedy(2));
    }

    #[test]
    fn words_tokenizer() {
        let c = token_cover(
            "the cat sat on the mat ",
            "the cat ran on the mat ",
            &words,
            2,
        );
        // "the cat " (2) copied, "ran " generated, "on the mat " (3) copied.
        assert_eq!((c.output_tokens, c.copied_tokens), (6, 5));
    }

    #[test]
    fn bound_by_hand() {
        assert_eq!(bound(0.0, 10.0), Ok(1.0));
        assert_eq!(bound(1.0, 10.0), Ok(10.0));
        // f = 0.5, s = 4: 1/(0.5 + 0.125) = 1.6.
        assert!((bound(0.5, 4.0).unwrap() - 1.6).abs() < 1e-12);
        assert!(matches!(bound(1.5, 2.0), Err(BoundError::Fraction(_))));
        assert!(matches!(bound(0.5, 0.0), Err(BoundError::Speedup(_))));
        assert!(matches!(bound(0.5, f64::NAN), Err(BoundError::Speedup(_))));
    }

    #[test]
    fn kernel_table_reading() {
        let k = KernelSpeedups::new([(32, 16.0), (8, 4.0)]).unwrap();
        assert_eq!(k.speedup(1), 4.0);
        assert_eq!(k.speedup(8), 4.0);
        // Power law s = N / 2 between the points: s(16) = 8.
        assert!((k.speedup(16) - 8.0).abs() < 1e-9);
        assert_eq!(k.speedup(1000), 16.0);
        assert!(KernelSpeedups::new([]).is_err());
        assert!(KernelSpeedups::new([(0, 1.0)]).is_err());
        assert!(KernelSpeedups::new([(8, -1.0)]).is_err());
    }

    #[test]
    fn histogram_bound_by_hand() {
        let k = KernelSpeedups::new([(8, 4.0), (32, 16.0)]).unwrap();
        // 10 generated tokens, one 8-token span (time 2), one 32-token span
        // (time 2): 50 / 14.
        let c = Cover {
            output_tokens: 50,
            copied_tokens: 40,
            pairs: 1,
            spans: BTreeMap::from([(8, 1), (32, 1)]),
        };
        assert!((histogram_bound(&c, &k) - 50.0 / 14.0).abs() < 1e-12);
        // All spans of one length: equals the scalar bound.
        let c = Cover {
            output_tokens: 40,
            copied_tokens: 32,
            pairs: 1,
            spans: BTreeMap::from([(8, 4)]),
        };
        assert!((histogram_bound(&c, &k) - bound(0.8, 4.0).unwrap()).abs() < 1e-12);
        assert_eq!(histogram_bound(&Cover::default(), &k), 1.0);
    }

    #[test]
    fn log2_bins() {
        let c = Cover {
            spans: BTreeMap::from([(0, 5), (1, 2), (3, 1), (2, 1), (9, 4)]),
            ..Cover::default()
        };
        assert_eq!(c.log2_histogram(), vec![(0, 2), (1, 2), (3, 4)]);
    }

    proptest! {
        #[test]
        fn cover_properties(
            before in "[abc\n]{0,60}",
            after in "[abcd\n]{0,60}",
        ) {
            let lc = line_cover(&before, &after, &bytes);
            prop_assert!((0.0..=1.0).contains(&lc.fraction()));
            prop_assert_eq!(lc.output_tokens, after.len());
            let m = TokenMatcher::new(&bytes(&before), &bytes(&after));
            let c1 = m.greedy(1);
            prop_assert!((0.0..=1.0).contains(&c1.fraction()));
            for &k in &MIN_SPANS[1..] {
                let c = m.greedy(k);
                prop_assert!((0.0..=1.0).contains(&c.fraction()));
                prop_assert!(c1.copied_tokens >= c.copied_tokens);
                prop_assert_eq!(c.output_tokens, after.len());
            }
            // Matching statistics agree with a naive search.
            let (bi, ai) = (bytes(&before), bytes(&after));
            for (i, &l) in m.longest.iter().enumerate() {
                let occurs = |len: usize| bi.windows(len).any(|w| *w == ai[i..i + len]);
                prop_assert!(l == 0 || occurs(l));
                prop_assert!(i + l == ai.len() || !occurs(l + 1));
            }
        }

        #[test]
        fn self_cover_is_one(d in "[abc\n]{1,60}") {
            prop_assert_eq!(line_cover(&d, &d, &bytes).fraction(), 1.0);
            for &k in &MIN_SPANS {
                let c = token_cover(&d, &d, &bytes, k);
                if d.len() >= k {
                    prop_assert_eq!(c.fraction(), 1.0);
                }
            }
            prop_assert_eq!(token_cover(&d, &d, &bytes, 1).fraction(), 1.0);
        }
    }
}
