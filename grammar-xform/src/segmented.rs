//! Append-only arrays that grow without moving what they hold, read without
//! a lock.
//!
//! Element `i` lives in segment `k = ⌊log₂(i / 64 + 1)⌋`, which holds
//! `64 · 2^k` elements and is allocated on its first use; 27 segments cover
//! every `u32` index. A reader that was handed index `i` by the thread that
//! allocated `i`'s segment (through a `Release`/`Acquire` pair, such as a
//! state id stored in an atomic transition) finds the segment in place.
//! Used for the rows and flags of lazy terminal automata ([`crate::lazy`])
//! and the per-state slots of the Earley engine's context-independent
//! cache, whose number of states is not known when they
//! are created.
//!
//! Cost: an index computation (a leading-zero count) and one atomic load
//! per access; an empty array is 27 pointers.

use std::sync::OnceLock;

/// Elements of segment 0.
const BASE: usize = 64;
/// Segments: enough for every `u32` index.
const SEGMENTS: usize = 27;

/// The segment of element `i` and its offset there.
#[inline]
fn locate(i: usize) -> (usize, usize) {
    let q = i / BASE + 1;
    let k = (usize::BITS - 1 - q.leading_zeros()) as usize;
    (k, i - BASE * ((1 << k) - 1))
}

/// An array of rows of `stride` elements `T` whose segments are
/// allocated on demand (module docs; a row never straddles two segments).
pub struct Segmented<T> {
    segs: [OnceLock<Box<[T]>>; SEGMENTS],
    stride: usize,
}

impl<T> Default for Segmented<T> {
    fn default() -> Self {
        Self::with_stride(1)
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Segmented<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segmented")
            .field("allocated", &self.allocated())
            .finish()
    }
}

impl<T> Segmented<T> {
    /// An empty array of rows of `stride` elements.
    pub fn with_stride(stride: usize) -> Self {
        Segmented {
            segs: std::array::from_fn(|_| OnceLock::new()),
            stride: stride.max(1),
        }
    }

    /// Row `i`, when its segment is allocated.
    #[inline]
    pub fn row(&self, i: usize) -> Option<&[T]> {
        let (k, off) = locate(i);
        let st = self.stride;
        self.segs
            .get(k)?
            .get()
            .and_then(|s| s.get(off * st..(off + 1) * st))
    }

    /// Row `i`, allocating its segment (each element from `init`) when it
    /// is not yet.
    pub fn row_or_init(&self, i: usize, init: impl Fn() -> T) -> &[T] {
        let (k, off) = locate(i);
        let st = self.stride;
        let seg = self.segs[k].get_or_init(|| (0..(BASE << k) * st).map(|_| init()).collect());
        &seg[off * st..(off + 1) * st]
    }

    /// Element `i` (of an array of stride 1), when its segment is allocated.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&T> {
        self.row(i).and_then(|r| r.first())
    }

    /// Element `i` (stride 1), allocating its segment when it is not yet.
    pub fn get_or_init(&self, i: usize, init: impl Fn() -> T) -> &T {
        &self.row_or_init(i, init)[0]
    }

    /// Elements in allocated segments.
    pub fn allocated(&self) -> usize {
        self.segs
            .iter()
            .filter_map(OnceLock::get)
            .map(|s| s.len())
            .sum()
    }

    /// Every element of the allocated segments, in index order (elements
    /// of segments never allocated are not there to visit: a slot array
    /// allocates the segment of whatever index is used first).
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.segs
            .iter()
            .filter_map(OnceLock::get)
            .flat_map(|s| s.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_tile_the_indices() {
        let mut expect = (0usize, 0usize);
        for i in 0..100_000usize {
            let (k, off) = locate(i);
            assert_eq!((k, off), expect, "index {i}");
            expect = if off + 1 == BASE << k {
                (k + 1, 0)
            } else {
                (k, off + 1)
            };
        }
        let (k, _) = locate(u32::MAX as usize);
        assert!(k < SEGMENTS);
    }

    #[test]
    fn rows_stay_in_one_segment() {
        let a: Segmented<u8> = Segmented::with_stride(5);
        for i in 0..500 {
            let r = a.row_or_init(i, || 0);
            assert_eq!(r.len(), 5);
        }
        assert_eq!(a.row(499).map(<[u8]>::len), Some(5));
        assert_eq!(a.allocated(), 5 * 64 * (1 + 2 + 4 + 8));
    }

    #[test]
    fn grows_without_moving() {
        let a: Segmented<u32> = Segmented::default();
        assert!(a.get(0).is_none());
        let p = a.get_or_init(3, || 7) as *const u32;
        for i in 0..1000 {
            a.get_or_init(i, || 7);
        }
        assert_eq!(p, a.get(3).unwrap() as *const u32);
        assert_eq!(a.iter().count(), a.allocated());
        assert!(a.allocated() >= 1000);
        // a segment allocated before the ones below it is still visited
        let b: Segmented<u32> = Segmented::default();
        b.get_or_init(200, || 1);
        assert_eq!(b.iter().count(), 256);
        assert!(b.get(0).is_none() && b.get(200) == Some(&1));
    }
}
