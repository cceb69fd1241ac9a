//! Timing of the two cost claims this crate can check on CPU:
//!
//! 1. App. H.4: the offline backward DP for `L_{30,15}` (496 DFA states)
//!    takes well under a millisecond (paper: 0.35–0.94 ms; target here:
//!    < 0.1 ms). Baseline in the same run: the closed-form table
//!    `Pr[Bin(n−t, p₁) ≤ K−c]` for every state.
//! 2. §6.5 / Table 11: OneStep-Cheap adds little to a decoding round.
//!    Baseline in the same run: a toy-LM round (one `prefill` of a γ = 4
//!    draft on the target, masked renormalisation and sampling at each
//!    position, rollback) without Φ; then the same round plus one
//!    OneStep-Cheap call per position. Measured for the Dyck `D_{3,16}`
//!    vocabulary (3 tokens) and for two 2,000-string token tries over a
//!    32,000-token vocabulary (a real-size vocabulary; `BigramLm` hashes
//!    every logit, so its "forward" costs O(|V|)): one with ~2,000 distinct
//!    first tokens (OneStep's worst case, O(|A_t|·|V|)), one schema-like
//!    with fan-out ≤ 8.
//!
//! `cargo bench -p zapspec-phi --bench phi` runs both; before the
//! criterion groups it prints a Markdown table of the overhead ratios
//! measured with plain `Instant` loops. This round is a stripped-down
//! stand-in (no draft model, one estimator call per position); the
//! measurement on the real speculative loop of `spec-verify`, with
//! realistic vocabularies and the before/after comparison, is the
//! `fvo_overhead` example binary.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::Criterion;
use zapspec_core::prob::{masked_log_softmax, sample_log, seeded_rng, SeededRng};
use zapspec_core::{Constraint, LanguageModel, LookAhead, TokenId};
use zapspec_phi::exact::budget::{self, closed_form_log_phi};
use zapspec_phi::{
    BernoulliLm, BudgetLanguage, OneStepCheap, PhiEstimator, RegularDp, RegularDpConfig,
};
use zapspec_testkit::toy::{splitmix64, BigramLm};
use zapspec_testkit::TokenTrie;
use zapspec_testkit::{DyckConstraint, DyckSpec, TrieConstraint};

const GAMMA: usize = 4;

/// One speculative-style round on the target: prefill the draft, at each
/// position renormalise on the mask (optionally reweighted by OneStep-Cheap)
/// and sample, then roll the model and constraint back.
fn round<C: LookAhead>(
    c: &mut C,
    lm: &mut BigramLm,
    draft: &[TokenId],
    rng: &mut SeededRng,
    phi: Option<&mut OneStepCheap>,
) -> usize {
    let base = lm.context().len();
    let rows = lm.prefill(draft).expect("prefill");
    let mut phi = phi;
    let mut picked = 0;
    let mut advanced = 0;
    for (i, &d) in draft.iter().enumerate() {
        let row: Vec<f32> = if i == 0 {
            lm_logits_before(lm, base)
        } else {
            rows.row(i - 1).to_vec()
        };
        let mask = c.mask();
        let mut lp = masked_log_softmax(&row, &mask).expect("mask");
        if let Some(p) = phi.as_deref_mut() {
            let lphi = p.log_phi(c, &mut ModelAt(lm, base + i), &row).expect("phi");
            for (a, b) in lp.iter_mut().zip(&lphi) {
                *a += b;
            }
        }
        picked += sample_log(rng, &lp).expect("sample");
        if c.advance(d).is_err() {
            break;
        }
        advanced += 1;
    }
    c.rollback(advanced).expect("rollback");
    lm.truncate(base);
    picked
}

/// The logits at the start of the round (cached by the caller's previous
/// round in a real loop; recomputed here, once per round).
fn lm_logits_before(lm: &BigramLm, base: usize) -> Vec<f32> {
    lm.logits_after(if base == 0 {
        None
    } else {
        Some(lm.context()[base - 1])
    })
}

/// A view of the model whose context is truncated to `len` (OneStep-Cheap
/// never runs the model; it only checks vocabulary sizes).
struct ModelAt<'a>(&'a mut BigramLm, usize);
impl LanguageModel for ModelAt<'_> {
    fn vocab_size(&self) -> usize {
        self.0.vocab_size()
    }
    fn context(&self) -> &[TokenId] {
        &self.0.context()[..self.1]
    }
    fn prefill(&mut self, t: &[TokenId]) -> Result<zapspec_core::Logits, zapspec_core::ModelError> {
        self.0.prefill(t)
    }
    fn next_logits(&mut self) -> Result<Vec<f32>, zapspec_core::ModelError> {
        self.0.next_logits()
    }
    fn truncate(&mut self, len: usize) {
        self.0.truncate(len)
    }
}

fn dyck_setup() -> (DyckConstraint, BigramLm, Vec<TokenId>) {
    let spec = DyckSpec {
        kinds: 1,
        max_depth: 3,
        max_len: 16,
    };
    let mut c = DyckConstraint::new(spec);
    let mut lm = BigramLm::new(spec.vocab_size(), 1);
    c.advance(0).expect("open");
    lm.prefill(&[0]).expect("prefill");
    (c, lm, vec![0, 1, 1, 0])
}

/// A 2,000-string trie whose strings branch at most 8 ways per position
/// (like the paper's flag-code schema E: 2,000 strings, a few thousand nodes).
fn schema_trie_setup() -> (TrieConstraint, BigramLm, Vec<TokenId>) {
    let v = 32_000usize;
    let seqs: Vec<Vec<TokenId>> = (0..2000u64)
        .map(|i| {
            // mixed-radix digits of i: 8·8·8·4 = 2048 ≥ 2000 distinct strings
            let d = [i % 8, (i / 8) % 8, (i / 64) % 8, (i / 512) % 4];
            d.iter()
                .enumerate()
                .map(|(j, &x)| (100 + 1000 * j as u64 + 17 * x) as TokenId)
                .collect()
        })
        .collect();
    let draft = seqs[0][..GAMMA].to_vec();
    let c = TrieConstraint::new(Arc::new(TokenTrie::new(&seqs)), v, (v - 1) as TokenId);
    (c, BigramLm::new(v, 3), draft)
}

/// A 2,000-string trie whose root has ~2,000 distinct first tokens (the
/// worst case for OneStep: |A_t| candidates × a |V|-bit mask each).
fn trie_setup() -> (TrieConstraint, BigramLm, Vec<TokenId>) {
    let v = 32_000usize;
    let seqs: Vec<Vec<TokenId>> = (0..2000u64)
        .map(|i| {
            let len = 4 + (splitmix64(i) % 5) as usize;
            (0..len)
                .map(|j| {
                    (splitmix64(i * 31 + j as u64 % 3 + (i % 50) * 7) % (v as u64 - 1)) as TokenId
                })
                .collect()
        })
        .collect();
    let draft = seqs[0][..GAMMA].to_vec();
    let c = TrieConstraint::new(Arc::new(TokenTrie::new(&seqs)), v, (v - 1) as TokenId);
    (c, BigramLm::new(v, 2), draft)
}

/// CPU time of this thread in seconds (Linux: utime + stime from
/// `/proc/thread-self/stat`, clock ticks of 10 ms), so figures depend less
/// on how loaded the shared machine is; NaN elsewhere.
fn thread_cpu_seconds() -> f64 {
    let parse = || -> Option<f64> {
        let s = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
        // Fields after the parenthesised command name; utime, stime are 14, 15.
        let rest = &s[s.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ut: f64 = f.get(11)?.parse().ok()?;
        let st: f64 = f.get(12)?.parse().ok()?;
        Some((ut + st) / 100.0)
    };
    parse().unwrap_or(f64::NAN)
}

/// (wall, CPU) seconds per iteration, after a warm-up of a tenth.
fn time_per_iter(mut f: impl FnMut(), iters: usize) -> (f64, f64) {
    for _ in 0..iters / 10 + 1 {
        f();
    }
    let c0 = thread_cpu_seconds();
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    let wall = t.elapsed().as_secs_f64() / iters as f64;
    (wall, (thread_cpu_seconds() - c0) / iters as f64)
}

fn report() {
    println!("Times per round in µs, wall / thread-CPU (CPU time has 10 ms tick resolution over the whole loop).");
    println!();
    println!(
        "| setting | round without Φ | round + OneStep-Cheap | overhead (wall) | overhead (CPU) |"
    );
    println!("|---|---|---|---|---|");
    let mut rng = seeded_rng(0);
    let mut one = OneStepCheap::new();
    let row = |name: &str, a: (f64, f64), b: (f64, f64)| {
        println!(
            "| {name} | {:.2} / {:.2} | {:.2} / {:.2} | {:+.1}% | {:+.1}% |",
            a.0 * 1e6,
            a.1 * 1e6,
            b.0 * 1e6,
            b.1 * 1e6,
            (b.0 / a.0 - 1.0) * 100.0,
            (b.1 / a.1 - 1.0) * 100.0
        )
    };
    let (mut c, mut lm, draft) = dyck_setup();
    let a = time_per_iter(
        || {
            let _ = black_box(round(&mut c, &mut lm, &draft, &mut rng, None));
        },
        500_000,
    );
    let b = time_per_iter(
        || {
            let _ = black_box(round(&mut c, &mut lm, &draft, &mut rng, Some(&mut one)));
        },
        500_000,
    );
    row("Dyck D_3,16, V=3, γ=4", a, b);
    let (mut c, mut lm, draft) = trie_setup();
    let a = time_per_iter(
        || {
            let _ = black_box(round(&mut c, &mut lm, &draft, &mut rng, None));
        },
        200,
    );
    let b = time_per_iter(
        || {
            let _ = black_box(round(&mut c, &mut lm, &draft, &mut rng, Some(&mut one)));
        },
        200,
    );
    row(
        "trie, 2,000 strings, root fan-out ~2,000, V=32,000, γ=4",
        a,
        b,
    );
    let (mut c, mut lm, draft) = schema_trie_setup();
    let a = time_per_iter(
        || {
            let _ = black_box(round(&mut c, &mut lm, &draft, &mut rng, None));
        },
        200,
    );
    let b = time_per_iter(
        || {
            let _ = black_box(round(&mut c, &mut lm, &draft, &mut rng, Some(&mut one)));
        },
        200,
    );
    row("trie, 2,000 strings, fan-out ≤ 8, V=32,000, γ=4", a, b);

    // Absolute cost of one OneStep-Cheap call at the round's first position,
    // and γ such calls relative to the paper's 35 ms verification pass
    // (Table 11's cost model).
    println!();
    println!("| setting | OneStep-Cheap per call, wall / CPU (µs) | |A_t| | γ=4 calls vs a 35 ms verify pass (CPU) |");
    println!("|---|---|---|---|");
    fn per_call<C: LookAhead>(name: &str, c: &mut C, lm: &mut BigramLm, iters: usize) {
        let base = lm.context().len();
        let row = lm_logits_before(lm, base);
        let n = c.mask().count();
        let mut one = OneStepCheap::new();
        let t = time_per_iter(
            || {
                let _ = black_box(one.log_phi(c, &mut ModelAt(lm, base), &row).expect("phi"));
            },
            iters,
        );
        println!(
            "| {name} | {:.2} / {:.2} | {n} | {:.3}% |",
            t.0 * 1e6,
            t.1 * 1e6,
            4.0 * t.1 / 35e-3 * 100.0
        );
    }
    let (mut c, mut lm, _) = dyck_setup();
    per_call("Dyck D_3,16, V=3", &mut c, &mut lm, 1_000_000);
    let (mut c, mut lm, _) = trie_setup();
    per_call("trie, root fan-out ~2,000, V=32,000", &mut c, &mut lm, 300);
    let (mut c, mut lm, _) = schema_trie_setup();
    per_call("trie, fan-out ≤ 8, V=32,000", &mut c, &mut lm, 3_000);

    let lang = BudgetLanguage::new(30, 15).expect("lang");
    let dfa = lang.dfa();
    let lm = BernoulliLm::new(0.7, 30).expect("lm");
    let dp = time_per_iter(
        || {
            let _ = black_box(RegularDp::solve(&dfa, &lm, &[], RegularDpConfig::default()));
        },
        20_000,
    );
    let build = time_per_iter(
        || {
            let _ = black_box(lang.dfa());
        },
        20_000,
    );
    let cf = time_per_iter(
        || {
            let mut s = 0.0;
            for t in 0..=30 {
                for c in 0..=15 {
                    s += closed_form_log_phi(lang, 0.7, t, c);
                }
            }
            black_box(s);
        },
        3_000,
    );
    println!();
    println!("| L_30,15 exact Φ | wall (µs) | CPU (µs) |");
    println!("|---|---|---|");
    println!(
        "| backward DP over the DFA (RegularDp, DFA prebuilt) | {:.1} | {:.1} |",
        dp.0 * 1e6,
        dp.1 * 1e6
    );
    println!(
        "| building the 496-state DFA | {:.1} | {:.1} |",
        build.0 * 1e6,
        build.1 * 1e6
    );
    println!(
        "| closed-form binomial CDF table (baseline) | {:.1} | {:.1} |",
        cf.0 * 1e6,
        cf.1 * 1e6
    );
    println!();
}

fn main() {
    report();
    let mut c = Criterion::default().configure_from_args();
    let lang = BudgetLanguage::new(30, 15).expect("lang");
    let dfa = lang.dfa();
    let blm = BernoulliLm::new(0.7, 30).expect("lm");
    c.bench_function("budget_dp_L30_15", |b| {
        b.iter(|| {
            RegularDp::solve(black_box(&dfa), &blm, &[], RegularDpConfig::default()).expect("dp")
        })
    });
    c.bench_function("budget_dfa_build_and_dp_L30_15", |b| {
        b.iter(|| budget::solve(black_box(lang), 0.7).expect("dp"))
    });
    let (mut dc, mut dlm, ddraft) = dyck_setup();
    let mut rng = seeded_rng(1);
    let mut one = OneStepCheap::new();
    c.bench_function("dyck_round_no_phi", |b| {
        b.iter(|| round(&mut dc, &mut dlm, &ddraft, &mut rng, None))
    });
    c.bench_function("dyck_round_onestep_cheap", |b| {
        b.iter(|| round(&mut dc, &mut dlm, &ddraft, &mut rng, Some(&mut one)))
    });
    let (mut tc, mut tlm, tdraft) = trie_setup();
    c.bench_function("trie32k_round_no_phi", |b| {
        b.iter(|| round(&mut tc, &mut tlm, &tdraft, &mut rng, None))
    });
    c.bench_function("trie32k_round_onestep_cheap", |b| {
        b.iter(|| round(&mut tc, &mut tlm, &tdraft, &mut rng, Some(&mut one)))
    });
    let (mut sc, mut slm, sdraft) = schema_trie_setup();
    c.bench_function("schema_trie32k_round_no_phi", |b| {
        b.iter(|| round(&mut sc, &mut slm, &sdraft, &mut rng, None))
    });
    c.bench_function("schema_trie32k_round_onestep_cheap", |b| {
        b.iter(|| round(&mut sc, &mut slm, &sdraft, &mut rng, Some(&mut one)))
    });
    c.final_summary();
}
