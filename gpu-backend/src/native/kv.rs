//! The native forward's KV cache: fixed-size pages of positions behind a
//! page table, so that
//!
//! - appending writes in place (no concatenation; a page is allocated
//!   every [`PAGE`] positions),
//! - rollback is [`NativeKv::truncate`] (drops whole pages past the end,
//!   keeps the rest),
//! - a fork is `clone()`: the page table is copied and the pages shared
//!   (`Arc`); the first write to a shared page copies that page only
//!   (copy-on-write), so a fork costs O(pages) plus one page per writer.
//!
//! Layout of a page: `[layer][k|v][kv_head]`, then the keys
//! dimension-major (`[head_dim][slot]`: a vector of slots per dimension,
//! so scores accumulate in SIMD lanes, [`zapspec_kernels::Kernels::attn_scores_t`])
//! and the values slot-major (`[slot][head_dim]`: a value row per slot,
//! what the weighted sum adds), f32.

use std::sync::Arc;

/// Positions per page.
pub const PAGE: usize = 64;

#[derive(Clone)]
struct Page(Vec<f32>);

/// A paged, copy-on-write KV cache of a native model.
#[derive(Clone)]
pub struct NativeKv {
    pages: Vec<Arc<Page>>,
    len: usize,
    layers: usize,
    heads: usize,
    head_dim: usize,
}

impl std::fmt::Debug for NativeKv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "NativeKv({} positions, {} pages)",
            self.len,
            self.pages.len()
        )
    }
}

impl NativeKv {
    /// An empty cache for `layers` layers of `heads` KV heads of `head_dim`.
    pub fn new(layers: usize, heads: usize, head_dim: usize) -> Self {
        NativeKv {
            pages: Vec::new(),
            len: 0,
            layers,
            heads,
            head_dim,
        }
    }

    /// Cached positions.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Keeps the first `len` positions.
    pub fn truncate(&mut self, len: usize) {
        if len < self.len {
            self.len = len;
            self.pages.truncate(len.div_ceil(PAGE));
        }
    }

    /// Heap bytes of the pages this cache holds (shared pages counted in
    /// full).
    pub fn bytes(&self) -> usize {
        self.pages.len() * self.page_len() * 4
    }

    fn page_len(&self) -> usize {
        self.layers * 2 * self.heads * PAGE * self.head_dim
    }

    /// Makes room for `len` positions (new slots are zero until written).
    pub(crate) fn grow(&mut self, len: usize) {
        let pl = self.page_len();
        while self.pages.len() < len.div_ceil(PAGE) {
            self.pages.push(Arc::new(Page(vec![0.0; pl])));
        }
        self.len = self.len.max(len);
    }

    /// The page of `slot` and the start of `head`'s keys (`kv = 0`) or
    /// values (`kv = 1`) of `layer` in it.
    #[inline]
    fn base(&self, layer: usize, kv: usize, head: usize, slot: usize) -> (usize, usize) {
        let off = ((layer * 2 + kv) * self.heads + head) * PAGE * self.head_dim;
        (slot / PAGE, off)
    }

    /// Copies the key (`kv = 0`) or value (`kv = 1`) of `head` at `slot`
    /// into `out` (`head_dim` values).
    pub(crate) fn read(&self, layer: usize, kv: usize, head: usize, slot: usize, out: &mut [f32]) {
        let (p, base) = self.base(layer, kv, head, slot);
        let page = &self.pages[p].0;
        let (hd, s) = (self.head_dim, slot % PAGE);
        if kv == 0 {
            for (c, o) in out[..hd].iter_mut().enumerate() {
                *o = page[base + c * PAGE + s];
            }
        } else {
            out[..hd].copy_from_slice(&page[base + s * hd..base + (s + 1) * hd]);
        }
    }

    /// The keys of `head` at the slots `start..end` (in one page, see
    /// [`NativeKv::page_runs`]), dimension-major: key `j`'s dimension `c`
    /// at `[c · PAGE + j]` ([`zapspec_kernels::Kernels::attn_scores_t`]
    /// with `ld = PAGE`, `m = end − start`).
    #[inline]
    pub(crate) fn keys_t(&self, layer: usize, head: usize, start: usize, end: usize) -> &[f32] {
        debug_assert!(start < end && start / PAGE == (end - 1) / PAGE);
        let (p, base) = self.base(layer, 0, head, start);
        &self.pages[p].0[base + start % PAGE..base + PAGE * self.head_dim]
    }

    /// The values of `head` at the slots `start..end` (in one page),
    /// contiguous (`(end − start) · head_dim` values, a row per slot).
    #[inline]
    pub(crate) fn values(&self, layer: usize, head: usize, start: usize, end: usize) -> &[f32] {
        debug_assert!(start < end && start / PAGE == (end - 1) / PAGE);
        let (p, base) = self.base(layer, 1, head, start);
        let hd = self.head_dim;
        &self.pages[p].0[base + (start % PAGE) * hd..base + (end - (start / PAGE) * PAGE) * hd]
    }

    /// `range` cut at page boundaries: the runs [`NativeKv::keys_t`] and
    /// [`NativeKv::values`] take.
    pub(crate) fn page_runs(range: std::ops::Range<usize>) -> impl Iterator<Item = (usize, usize)> {
        let mut a = range.start;
        std::iter::from_fn(move || {
            (a < range.end).then(|| {
                let b = ((a / PAGE + 1) * PAGE).min(range.end);
                let run = (a, b);
                a = b;
                run
            })
        })
    }

    /// Writes the key or value of `head` at `slot` (copying the page first
    /// if a fork shares it).
    pub(crate) fn set(&mut self, layer: usize, kv: usize, head: usize, slot: usize, x: &[f32]) {
        let (p, base) = self.base(layer, kv, head, slot);
        let (hd, s) = (self.head_dim, slot % PAGE);
        let page = &mut Arc::make_mut(&mut self.pages[p]).0;
        if kv == 0 {
            for (c, &v) in x[..hd].iter().enumerate() {
                page[base + c * PAGE + s] = v;
            }
        } else {
            page[base + s * hd..base + (s + 1) * hd].copy_from_slice(&x[..hd]);
        }
    }

    /// Moves the slots `base + keep[i]` to `base + i` (every layer, head,
    /// key and value) and truncates to `base + keep.len()`: committing an
    /// accepted branch of a scored draft tree without another forward.
    /// `keep` must be increasing (a root-to-node path is).
    pub(crate) fn compact(&mut self, base: usize, keep: &[usize]) {
        let mut tmp = vec![0f32; self.head_dim];
        for (i, &k) in keep.iter().enumerate() {
            let (from, to) = (base + k, base + i);
            if from == to || from >= self.len {
                continue;
            }
            for layer in 0..self.layers {
                for kv in 0..2 {
                    for h in 0..self.heads {
                        self.read(layer, kv, h, from, &mut tmp);
                        self.set(layer, kv, h, to, &tmp);
                    }
                }
            }
        }
        self.truncate(base + keep.len());
    }
}
