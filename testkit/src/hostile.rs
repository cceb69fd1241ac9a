//! Timing helpers of the hostile-input tests: a timed run that prints its
//! wall time and the process's peak resident memory, and fails past a
//! generous bound (CI machines are shared and noisy, so the bound is a
//! guard against hangs, not a benchmark).
//!
//! This is the crate's one timing API, meant for tests: [`timed_within`]
//! (and [`timed`], its 10 s form) reads the wall clock
//! ([`std::time::Instant`]) around the caller's closure; nothing else in
//! the crate reads a clock, so the toy models and matchers stay
//! deterministic.

use std::time::{Duration, Instant};

/// The process's peak resident set size in KiB (`VmHWM` of
/// `/proc/self/status`); `None` where that file does not exist.
pub fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `f`, prints `hostile NAME: T s, peak RSS K KiB`, and panics when
/// it took longer than `bound`.
pub fn timed_within<T>(name: &str, bound: Duration, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    let dt = t.elapsed();
    println!(
        "hostile {name}: {:.3} s, peak RSS {} KiB",
        dt.as_secs_f64(),
        peak_rss_kib().map_or("?".into(), |k| k.to_string())
    );
    assert!(dt < bound, "{name} took {dt:?} (bound {bound:?})");
    out
}

/// [`timed_within`] with the hostile tests' common bound of 10 s.
pub fn timed<T>(name: &str, f: impl FnOnce() -> T) -> T {
    timed_within(name, Duration::from_secs(10), f)
}
