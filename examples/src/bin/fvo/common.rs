//! Shared helpers of the `fvo_*` experiment binaries (included with
//! `#[path]`; not a binary itself).
#![allow(dead_code)]

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use zapspec_core::prob::SeededRng;
use zapspec_verify::stats::{bootstrap_tv_ci, chi_square, g_test, noise_floor, tv_counts};

/// A progress bar on stderr (hidden when stderr is not a terminal).
pub fn progress(len: usize, msg: impl Into<String>) -> ProgressBar {
    let pb = ProgressBar::new(len as u64);
    pb.set_style(
        ProgressStyle::with_template("{msg:40} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_message(msg.into());
    pb.enable_steady_tick(Duration::from_millis(250));
    pb
}

/// An empirical law compared with an exact one.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub n: usize,
    pub tv: f64,
    pub ci_lo: f64,
    pub ci_hi: f64,
    /// Mean and sd of the TV of an exact iid sampler at the same N.
    pub noise_floor: f64,
    pub noise_floor_sd: f64,
    /// `tv − noise_floor`: what the sampler adds beyond sampling noise.
    pub excess: f64,
    /// Pearson χ² and likelihood-ratio G goodness-of-fit p-values (cells
    /// with expected count < 5 pooled).
    pub chi2_p: f64,
    pub g_p: f64,
}

pub fn compare(
    rng: &mut SeededRng,
    counts: &[usize],
    law: &[f64],
    bootstrap: usize,
    floor_reps: usize,
) -> Comparison {
    let n = counts.iter().sum();
    let (ci_lo, ci_hi) = bootstrap_tv_ci(rng, counts, law, bootstrap);
    let (noise_floor, noise_floor_sd) = noise_floor(rng, law, n, floor_reps);
    let tv = tv_counts(counts, law);
    Comparison {
        n,
        tv,
        ci_lo,
        ci_hi,
        noise_floor,
        noise_floor_sd,
        excess: tv - noise_floor,
        chi2_p: chi_square(counts, law).p_value,
        g_p: g_test(counts, law).p_value,
    }
}

pub fn exp(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| x.exp()).collect()
}

pub fn f4(x: f64) -> String {
    zapspec_verify::report::fmt_num(x)
}
