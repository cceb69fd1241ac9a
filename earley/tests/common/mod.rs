//! Helpers shared by this crate's integration tests.

use std::collections::{HashSet, VecDeque};

use zapspec_earley::ByteDfa;

const DEAD: u32 = ByteDfa::DEAD;

/// Equal languages and equal liveness, state pair by state pair.
pub fn equivalent(a: &ByteDfa, b: &ByteDfa) -> Result<usize, String> {
    equivalent_within(a, b, usize::MAX).map(|n| n.unwrap_or(usize::MAX))
}

/// [`equivalent`], walking at most `max_pairs` state pairs (`Ok(None)`:
/// no difference found before the bound).
pub fn equivalent_within(
    a: &ByteDfa,
    b: &ByteDfa,
    max_pairs: usize,
) -> Result<Option<usize>, String> {
    let mut seen = HashSet::new();
    let mut q = VecDeque::from([(a.start(), b.start(), Vec::<u8>::new())]);
    seen.insert((a.start(), b.start()));
    while let Some((x, y, path)) = q.pop_front() {
        if (x == DEAD) != (y == DEAD) {
            return Err(format!("liveness differs after {path:?}"));
        }
        if x == DEAD {
            continue;
        }
        if a.is_accepting(x) != b.is_accepting(y) {
            return Err(format!("acceptance differs after {path:?}"));
        }
        if a.can_continue(x) != b.can_continue(y) {
            return Err(format!("can_continue differs after {path:?}"));
        }
        for byte in 0..=255u8 {
            let (nx, ny) = (a.next(x, byte), b.next(y, byte));
            if seen.len() >= max_pairs {
                return Ok(None);
            }
            if seen.insert((nx, ny)) {
                let mut p = path.clone();
                p.push(byte);
                q.push_back((nx, ny, p));
            }
        }
    }
    Ok(Some(seen.len()))
}
