//! Spiffy (lossless speculative decoding of a diffusion LM with calibrated,
//! pruned draft graphs) on a shipped byte-level masked diffusion LM
//! (`models/diffusion-bytes` by default, `--model` for another).
//!
//! Prompts are the first bytes of valid JSON instances of MaskBench schema
//! files that the model did not train on (the `train` binary's held-out
//! split); the held-out files are split again, by file name, into a
//! calibration part and a disjoint evaluation part. Reported: the paper's
//! Table 1 rows (baseline 1 token/step, + dynamic unmasking τ, + Spiffy
//! with a `D = 10` graph pruned to `D* = 3`), NFEs, wall-clock token rate,
//! acceptance per call, outputs differing from vanilla; the `D*` sweep
//! (Fig. 5), a temperature sweep (Fig. 6), the overhead profile (Table 3),
//! calibration costs, the cross-domain calibration of App. D.3 (Rust source
//! text vs JSON), and the prefix-cache (inexact, App. A.2) mismatch count.
//!
//! ```text
//! cargo run --release -p examples --bin spiffy -- --out examples/results/spiffy/tiny
//! cargo run --profile release-fast -p examples --bin spiffy -- \
//!     --model models/diffusion-bytes-3m --name spiffy_3m \
//!     --prompt-len 32 --gen-len 256 --block-len 32 --calib 8 --eval 8 \
//!     --temps 0,1 --tau-low 0 --out examples/results/spiffy/3m
//! ```
//!
//! The decoding cache is the exact one for the model's attention: the dual
//! cache for bidirectional models, the prefix cache for blockwise-causal
//! ones (`--cache` overrides).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use serde_json::json;

use examples::report::{write_json, MarkdownTable};
use zapspec_backend::{DiffusionAttention, DiffusionCache, DiffusionLm};
use zapspec_core::TokenId;
use zapspec_spiffy::calibrate::{
    calibrate, record_trajectory, select_subgraph_brute_force, CalibrationConfig, TimestepRecord,
};
use zapspec_spiffy::{
    generate, generate_spiffy, DecodeConfig, DecodeOutput, DraftGraph, SpiffyConfig, SpiffyStats,
    Unmasking,
};

#[derive(Debug, Parser)]
#[command(about = "Spiffy on a byte-level diffusion LM: NFE, token rate, acceptance, losslessness")]
struct Args {
    /// Directory for `<name>.md`, `<name>.json`, the calibrated graphs and plots.
    #[arg(long, default_value = "target/experiments")]
    out: PathBuf,
    /// File stem of the outputs (`<name>.md`, `<name>_dstar.png`, ...).
    #[arg(long, default_value = "spiffy")]
    name: String,
    /// Decoding cache of the main tables (default: dual for bidirectional
    /// models, prefix for blockwise-causal ones — the exact settings).
    #[arg(long, value_enum)]
    cache: Option<CacheArg>,
    /// A previous report (`<name>.json`) whose Table 1 is shown beside
    /// this one (e.g. the tiny model's `examples/results/spiffy/tiny/spiffy.json`).
    #[arg(long)]
    compare: Option<PathBuf>,
    /// Seed of the sampled runs (temperature sweep) and of the prompt order.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Diffusion model checkpoint directory (default: the shipped one).
    #[arg(long)]
    model: Option<PathBuf>,
    /// MaskBench directory (JSON schema files with test instances).
    #[arg(long, default_value = "../shared/data/maskbench")]
    data: PathBuf,
    /// Calibration prompts.
    #[arg(long, default_value_t = 16)]
    calib: usize,
    /// Evaluation prompts.
    #[arg(long, default_value_t = 16)]
    eval: usize,
    /// Prompt length in bytes (a separator token, then JSON bytes).
    #[arg(long, default_value_t = 16)]
    prompt_len: usize,
    /// Generation length W.
    #[arg(long, default_value_t = 48)]
    gen_len: usize,
    /// Block length L.
    #[arg(long, default_value_t = 16)]
    block_len: usize,
    /// Threshold τ of dynamic unmasking.
    #[arg(long, default_value_t = 0.9)]
    tau: f64,
    /// A second, lower threshold (a setting where dynamic unmasking fires
    /// on this small model); 0 skips it.
    #[arg(long, default_value_t = 0.5)]
    tau_low: f64,
    /// Calibrated graph size D.
    #[arg(long, default_value_t = 10)]
    graph_size: usize,
    /// Pruned draft budget D*.
    #[arg(long, default_value_t = 3)]
    dstar: usize,
    /// Calibration look-ahead 𝓛.
    #[arg(long, default_value_t = 6)]
    lookahead: usize,
    /// Temperatures of the sweep (comma separated).
    #[arg(long, default_value = "0,0.5,1")]
    temps: String,
    /// Timing repeats of each setting and prompt (the minimum is kept;
    /// the recorded results use 2).
    #[arg(long, default_value_t = 1)]
    repeats: usize,
}

const SEP: TokenId = 256;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum CacheArg {
    None,
    Prefix,
    Dual,
}

/// A list of prompts (token sequences).
type Prompts = Vec<Vec<TokenId>>;

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// One prompt per held-out file: (calibration part, evaluation part).
fn load_prompts(dir: &Path, len: usize) -> Result<(Prompts, Prompts)> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    let (mut cal, mut ev) = (Vec::new(), Vec::new());
    for p in names {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let h = fnv(&name);
        if h % 10_000 >= 1000 {
            continue; // the model trained on it
        }
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let inst = v
            .get("tests")
            .and_then(|t| t.as_array())
            .into_iter()
            .flatten()
            .filter(|t| t.get("valid").and_then(|x| x.as_bool()) == Some(true))
            .filter_map(|t| t.get("data").and_then(|d| serde_json::to_string(d).ok()))
            .find(|s| s.len() + 1 >= len);
        let Some(s) = inst else { continue };
        let mut prompt = vec![SEP];
        prompt.extend(s.bytes().take(len - 1).map(TokenId::from));
        if (h / 10_000) & 1 == 0 {
            cal.push(prompt);
        } else {
            ev.push(prompt);
        }
    }
    Ok((cal, ev))
}

/// Prompts from Rust source text of this workspace (the cross-domain
/// calibration set): `len` bytes starting at non-blank lines.
fn code_prompts(root: &Path, len: usize, n: usize) -> Vec<Vec<TokenId>> {
    let mut out = Vec::new();
    let dirs = [
        "dllm-draftgraph/src",
        "core/src",
        "earley/src",
        "spec-verify/src",
    ];
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(root.join(d)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for f in files {
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            for (k, line) in text.lines().enumerate() {
                if k % 40 != 7 || line.trim().len() < 8 || !line.is_ascii() {
                    continue;
                }
                let start = text.find(line).unwrap_or(0);
                let bytes: Vec<TokenId> = text.as_bytes()[start..]
                    .iter()
                    .take(len - 1)
                    .map(|&b| TokenId::from(b))
                    .collect();
                if bytes.len() == len - 1 {
                    let mut p = vec![SEP];
                    p.extend(bytes);
                    out.push(p);
                }
                if out.len() >= n {
                    return out;
                }
            }
        }
    }
    out
}

/// A fresh model with the cache scheme (caches never leak between runs).
fn fresh(base: &DiffusionLm, cache: DiffusionCache) -> DiffusionLm {
    base.clone().with_cache(cache)
}

#[derive(Debug, Clone, Default)]
struct Run {
    outputs: Vec<Vec<TokenId>>,
    nfe: usize,
    steps: usize,
    wall: Duration,
    stats: SpiffyStats,
}

impl Run {
    fn tokens(&self) -> usize {
        self.outputs.iter().map(Vec::len).sum()
    }
    fn tps(&self) -> f64 {
        self.tokens() as f64 / self.wall.as_secs_f64().max(1e-9)
    }
    /// Generated tokens that differ from `reference`'s at the same place.
    fn tokens_differing(&self, reference: &Run) -> usize {
        self.outputs
            .iter()
            .zip(&reference.outputs)
            .map(|(a, b)| a.iter().zip(b).filter(|(x, y)| x != y).count())
            .sum()
    }
    fn mismatches(&self, reference: &Run) -> usize {
        self.outputs
            .iter()
            .zip(&reference.outputs)
            .filter(|(a, b)| a != b)
            .count()
    }
}

/// A decoding setting to time.
#[derive(Clone, Copy)]
enum Setting<'a> {
    Vanilla(DecodeConfig),
    Spiffy(&'a DraftGraph, SpiffyConfig),
}

/// Runs every setting on every prompt, interleaved (prompt by prompt, each
/// setting in turn, `repeats` times) so that load on the machine hits all
/// settings alike; per prompt and setting the fastest repeat is kept.
fn run_many(
    base: &DiffusionLm,
    cache: DiffusionCache,
    prompts: &[Vec<TokenId>],
    settings: &[Setting],
    repeats: usize,
) -> Result<Vec<Run>> {
    let mut runs = vec![Run::default(); settings.len()];
    let mut all_stats: Vec<Vec<SpiffyStats>> = vec![Vec::new(); settings.len()];
    for p in prompts {
        let mut best: Vec<Option<(Duration, DecodeOutput, SpiffyStats)>> =
            vec![None; settings.len()];
        for _ in 0..repeats.max(1) {
            for (k, s) in settings.iter().enumerate() {
                let mut m = fresh(base, cache);
                let t = Instant::now();
                let (out, stats) = match s {
                    Setting::Vanilla(cfg) => {
                        let out = generate(&mut m, p, cfg)?;
                        let stats = SpiffyStats {
                            calls: out.nfe,
                            steps: out.steps,
                            ..SpiffyStats::default()
                        };
                        (out, stats)
                    }
                    Setting::Spiffy(g, cfg) => {
                        let o = generate_spiffy(&mut m, p, g, cfg)?;
                        (o.output, o.stats)
                    }
                };
                let dt = t.elapsed();
                if best[k].as_ref().is_none_or(|b| dt < b.0) {
                    best[k] = Some((dt, out, stats));
                }
            }
        }
        for (k, b) in best.into_iter().enumerate() {
            let (dt, out, stats) = b.context("no run")?;
            runs[k].wall += dt;
            runs[k].nfe += out.nfe;
            runs[k].steps += out.steps;
            runs[k].outputs.push(out.tokens);
            all_stats[k].push(stats);
        }
    }
    for (r, st) in runs.iter_mut().zip(&all_stats) {
        r.stats = SpiffyStats::merged(st);
    }
    Ok(runs)
}

/// Records calibration trajectories with a progress bar.
fn record(
    base: &DiffusionLm,
    cache: DiffusionCache,
    prompts: &[Vec<TokenId>],
    cfg: &DecodeConfig,
    lookahead: usize,
    label: &str,
) -> Result<(Vec<TimestepRecord>, Duration)> {
    let pb = ProgressBar::new(prompts.len() as u64);
    pb.set_style(
        ProgressStyle::with_template("{msg:>24} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_message(format!("trajectories ({label})"));
    let t = Instant::now();
    let mut records = Vec::new();
    for p in prompts {
        let mut m = fresh(base, cache);
        records.extend(record_trajectory(&mut m, p, cfg, lookahead)?.records);
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok((records, t.elapsed()))
}

/// The backend-side work of one Spiffy call that `DiffusionLm::denoise`
/// does around the forward, replayed with the same public calls for the
/// call shapes of a `W`-token generation (a cached call of every block
/// after its first, `drafts` draft blocks): mean milliseconds per call of
/// (draft sequence: true tokens + drafts concatenated, position ids:
/// positions vector, its tensor and the rope-table gathers, attention mask: `AttnMask::spiffy_over`
/// and the additive f32 tensor).
fn replay_backend_costs(
    block_causal: bool,
    cache: DiffusionCache,
    prompt_len: usize,
    gen_len: usize,
    block_len: usize,
    drafts: usize,
    head_dim: usize,
) -> Result<(f64, f64, f64)> {
    use zapspec_backend::AttnMask;
    let dev = zapspec_backend::Device::Cpu;
    let n = prompt_len + gen_len;
    let (mut t_seq, mut t_pos, mut t_mask, mut calls) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO, 0u32);
    let seq: Vec<TokenId> = (0..n).map(|i| (i % 200) as TokenId).collect();
    // A rope table of the model's shape (cos and sin are gathered alike).
    let rope = candle_core::Tensor::zeros((n, head_dim / 2), candle_core::DType::F32, &dev)?;
    for _ in 0..20 {
        let mut start = prompt_len;
        while start < n {
            let end = (start + block_len).min(n);
            let l = end - start;
            // (true range, past keys, the true rows' mask)
            let (range, past, true_mask) = match (block_causal, cache) {
                (true, DiffusionCache::None) => {
                    (0..end, 0, AttnMask::block_causal(0, 0, end, block_len))
                }
                (true, _) => (
                    start..end,
                    start,
                    AttnMask::block_causal(start, start, l, block_len),
                ),
                (false, DiffusionCache::Dual) => (start..end, n - l, AttnMask::full(l, n - l + l)),
                (false, DiffusionCache::Prefix) => (start..n, start, AttnMask::full(n - start, n)),
                (false, DiffusionCache::None) => (0..n, 0, AttnMask::full(n, n)),
            };
            let local = start - range.start..end - range.start;
            let t = Instant::now();
            let mut tokens: Vec<TokenId> = seq[range.clone()].to_vec();
            for _ in 0..drafts {
                tokens.extend_from_slice(&seq[start..end]);
            }
            std::hint::black_box(&tokens);
            t_seq += t.elapsed();
            let t = Instant::now();
            let mut positions: Vec<usize> = range.clone().collect();
            for _ in 0..drafts {
                positions.extend(start..end);
            }
            let pos: Vec<u32> = positions.iter().map(|&p| p as u32).collect();
            let len = pos.len();
            let pos = candle_core::Tensor::from_vec(pos, len, &dev)?;
            std::hint::black_box(rope.index_select(&pos, 0)?);
            std::hint::black_box(rope.index_select(&pos, 0)?);
            t_pos += t.elapsed();
            let t = Instant::now();
            let m = AttnMask::spiffy_over(true_mask, past, local, drafts);
            if !m.is_full() {
                std::hint::black_box(m.to_tensor(zapspec_backend::DType::F32, &dev)?);
            }
            t_mask += t.elapsed();
            calls += 1;
            start = end;
        }
    }
    let per = |d: Duration| ms(d) / f64::from(calls.max(1));
    Ok((per(t_seq), per(t_pos), per(t_mask)))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

fn plot_sweep(
    path: &Path,
    title: &str,
    xlabel: &str,
    xs: &[f64],
    nfe_red: &[f64],
    tps_up: &[f64],
) -> Result<()> {
    let root = BitMapBackend::new(path, (800, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let ymax = nfe_red.iter().chain(tps_up).copied().fold(1.0f64, f64::max) * 1.15;
    let xmin = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let xmax = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(xmin..xmax.max(xmin + 1e-9), 0.0..ymax)?;
    chart
        .configure_mesh()
        .x_desc(xlabel)
        .y_desc("× vs baseline (1 token/step)")
        .draw()?;
    let nfe: Vec<(f64, f64)> = xs.iter().copied().zip(nfe_red.iter().copied()).collect();
    let tps: Vec<(f64, f64)> = xs.iter().copied().zip(tps_up.iter().copied()).collect();
    chart
        .draw_series(LineSeries::new(nfe.clone(), BLUE))?
        .label("NFE reduction")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    chart.draw_series(
        nfe.iter()
            .map(|&(x, y)| Circle::new((x, y), 4, BLUE.filled())),
    )?;
    chart
        .draw_series(LineSeries::new(tps.clone(), RED))?
        .label("token-rate speed-up")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    chart.draw_series(
        tps.iter()
            .map(|&(x, y)| Circle::new((x, y), 4, RED.filled())),
    )?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

#[allow(clippy::too_many_lines)]
fn main() -> Result<()> {
    let a = Args::parse();
    let started = Instant::now();
    if a.prompt_len < 2 || a.block_len == 0 || a.gen_len == 0 {
        bail!("--prompt-len must be at least 2, --block-len and --gen-len at least 1");
    }
    let dir = a
        .model
        .clone()
        .unwrap_or_else(|| zapspec_backend::shipped_models_dir().join("diffusion-bytes"));
    let device = zapspec_backend::Device::Cpu;
    let base = zapspec_backend::load_diffusion(&dir, &device)
        .with_context(|| format!("loading {}", dir.display()))?;
    let (mut calib, mut eval) = load_prompts(&a.data, a.prompt_len)?;
    // A seeded shuffle of each part, then the first N.
    let shuffle = |v: &mut Vec<Vec<TokenId>>, salt: u64| {
        let mut keyed: Vec<(u64, Vec<TokenId>)> = v
            .drain(..)
            .enumerate()
            .map(|(i, p)| (fnv(&format!("{}:{salt}:{i}", a.seed)), p))
            .collect();
        keyed.sort_by_key(|k| k.0);
        v.extend(keyed.into_iter().map(|k| k.1));
    };
    shuffle(&mut calib, 1);
    shuffle(&mut eval, 2);
    calib.truncate(a.calib);
    eval.truncate(a.eval);
    if calib.is_empty() || eval.is_empty() {
        bail!(
            "no prompts of {} bytes in {}",
            a.prompt_len,
            a.data.display()
        );
    }
    let w = a.gen_len;
    let static1 = DecodeConfig {
        gen_len: w,
        block_len: a.block_len,
        unmasking: Unmasking::Static { per_step: 1 },
        temperature: 0.0,
        seed: a.seed,
    };
    let dynamic = DecodeConfig {
        unmasking: Unmasking::Threshold { tau: a.tau },
        ..static1
    };
    let cal_cfg = CalibrationConfig {
        lookahead: a.lookahead,
        budget: a.graph_size,
        timing: true,
        ..CalibrationConfig::default()
    };
    let block_causal = base.attention() == DiffusionAttention::BlockCausal;
    let cache = match a.cache {
        Some(CacheArg::None) => DiffusionCache::None,
        Some(CacheArg::Prefix) => DiffusionCache::Prefix,
        Some(CacheArg::Dual) => DiffusionCache::Dual,
        None if block_causal => DiffusionCache::Prefix,
        None => DiffusionCache::Dual,
    };
    let cache_name = match cache {
        DiffusionCache::None => "no",
        DiffusionCache::Prefix => "prefix",
        DiffusionCache::Dual => "dual",
    };
    let mcfg = base.model().config().clone();
    let manifest: Option<serde_json::Value> = std::fs::read_to_string(dir.join("manifest.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let model_desc = format!(
        "{} layers × {} hidden, {} heads, context {}, {} parameters, {} attention",
        mcfg.num_hidden_layers,
        mcfg.hidden_size,
        mcfg.num_attention_heads,
        mcfg.max_position_embeddings,
        mcfg.num_params(),
        if block_causal {
            "blockwise-causal"
        } else {
            "bidirectional"
        }
    );
    eprintln!(
        "model {} | {} calibration / {} evaluation prompts | W={} L={} τ={}",
        dir.display(),
        calib.len(),
        eval.len(),
        w,
        a.block_len,
        a.tau
    );

    // ---- Calibration (Algorithm 2), one graph per unmasking rule.
    let (rec_dyn, rec_dyn_time) = record(&base, cache, &calib, &dynamic, a.lookahead, "τ")?;
    let cal_dyn = calibrate(&rec_dyn, &cal_cfg)?;
    let (rec_st, rec_st_time) = record(&base, cache, &calib, &static1, a.lookahead, "S=1")?;
    let cal_st = calibrate(&rec_st, &cal_cfg)?;
    std::fs::create_dir_all(&a.out)?;
    std::fs::write(
        a.out.join(format!("{}_graph.json", a.name)),
        cal_dyn.graph.to_json()?,
    )?;
    std::fs::write(
        a.out.join(format!("{}_graph_static.json", a.name)),
        cal_st.graph.to_json()?,
    )?;
    // The paper's exhaustive search on the same candidates, when affordable.
    let n_cand = cal_dyn.candidates.len();
    let combos = binomial(n_cand, a.graph_size.min(n_cand));
    let brute = if combos <= 3e7 {
        let t = Instant::now();
        let s = select_subgraph_brute_force(&cal_dyn.candidates, a.graph_size, 2);
        Some((t.elapsed(), s.score == cal_dyn.selection.score))
    } else {
        None
    };

    // ---- Table 1: baseline, + dynamic unmasking, + Spiffy.
    let sp = |decode: DecodeConfig, d: usize| SpiffyConfig {
        decode,
        draft_budget: d,
        record_chains: false,
        // the overhead table (Table 3) reads the wall-time fields
        timing: true,
    };
    let r = a.repeats;
    let t1 = run_many(
        &base,
        cache,
        &eval,
        &[
            Setting::Vanilla(static1),
            Setting::Vanilla(dynamic),
            Setting::Spiffy(&cal_dyn.graph, sp(dynamic, a.dstar)),
            Setting::Spiffy(&cal_st.graph, sp(static1, a.dstar)),
        ],
        r,
    )?;
    let [base_run, dyn_run, sp_dyn, sp_st]: [Run; 4] = t1
        .try_into()
        .map_err(|_| anyhow::anyhow!("four runs expected"))?;
    // The lower threshold: its own calibrated graph.
    let low = DecodeConfig {
        unmasking: Unmasking::Threshold { tau: a.tau_low },
        ..static1
    };
    let low_runs = if a.tau_low > 0.0 {
        let (rec_low, _) = record(&base, cache, &calib, &low, a.lookahead, "τ low")?;
        let cal_low = calibrate(&rec_low, &cal_cfg)?;
        let mut runs = run_many(
            &base,
            cache,
            &eval,
            &[
                Setting::Vanilla(low),
                Setting::Spiffy(&cal_low.graph, sp(low, a.dstar)),
            ],
            r,
        )?;
        let s = runs.pop().context("two runs")?;
        let v = runs.pop().context("two runs")?;
        Some((v, s))
    } else {
        None
    };
    // Top-1 confidence of the unmasked token per step (static, greedy):
    // how often would τ fire?
    let mut confs: Vec<f64> = Vec::new();
    for p in &eval {
        let mut m = fresh(&base, cache);
        zapspec_spiffy::decode::generate_with(&mut m, p, &static1, |_, _, marg, _| {
            for n in 0..marg.len() {
                if let Some((_, lp)) = marg.top1(n) {
                    confs.push(lp.exp());
                }
            }
        })?;
    }
    let share =
        |t: f64| confs.iter().filter(|&&c| c > t).count() as f64 / confs.len().max(1) as f64;
    // Ten equal-width bins of the top-1 probability.
    let mut hist = [0usize; 10];
    for &c in &confs {
        hist[((c * 10.0) as usize).min(9)] += 1;
    }
    let confidence = json!({
        "masked_positions_scored": confs.len(),
        "histogram_tenths": hist,
        "mean_top1": confs.iter().sum::<f64>() / confs.len().max(1) as f64,
        "share_above_0.9": share(0.9),
        "share_above_0.7": share(0.7),
        "share_above_0.5": share(0.5),
    });
    let row = |name: &str, run: &Run, reference: Option<&Run>| {
        json!({
            "setting": name,
            "nfe": run.nfe,
            "steps": run.steps,
            "tokens": run.tokens(),
            "wall_s": run.wall.as_secs_f64(),
            "tokens_per_s": run.tps(),
            "nfe_reduction": base_run.nfe as f64 / run.nfe.max(1) as f64,
            "tps_speedup": run.tps() / base_run.tps(),
            "accepted_per_call": run.stats.acceptance_per_call(),
            "accepted_hist": run.stats.accepted_hist,
            "mismatches_vs_vanilla": reference.map(|x| run.mismatches(x)),
        })
    };
    let table1 = vec![
        row("baseline (1 token/step)", &base_run, None),
        row(&format!("+ dynamic unmasking τ={}", a.tau), &dyn_run, None),
        row(
            &format!("+ dynamic + Spiffy (D={}, D*={})", a.graph_size, a.dstar),
            &sp_dyn,
            Some(&dyn_run),
        ),
        row(
            &format!("1 token/step + Spiffy (D={}, D*={})", a.graph_size, a.dstar),
            &sp_st,
            Some(&base_run),
        ),
    ];
    let mut table1 = table1;
    if let Some((v, s)) = &low_runs {
        table1.push(row(
            &format!("+ dynamic unmasking τ={}", a.tau_low),
            v,
            None,
        ));
        table1.push(row(
            &format!(
                "+ dynamic τ={} + Spiffy (D={}, D*={})",
                a.tau_low, a.graph_size, a.dstar
            ),
            s,
            Some(v),
        ));
    }

    // ---- Fig. 5: the D* sweep (dynamic unmasking).
    let mut sweep = Vec::new();
    let mut settings = vec![Setting::Vanilla(static1)];
    settings.extend((0..=a.graph_size).map(|d| Setting::Spiffy(&cal_dyn.graph, sp(dynamic, d))));
    let mut sweep_runs = run_many(&base, cache, &eval, &settings, r)?.into_iter();
    // This sweep's own baseline, timed interleaved with it.
    let sweep_base = sweep_runs.next().context("baseline run")?;
    for (d, run) in sweep_runs.enumerate() {
        let mean_call = run.stats.time_model.as_secs_f64() / run.stats.calls.max(1) as f64;
        sweep.push(json!({
            "dstar": d,
            "nfe": run.nfe,
            "nfe_reduction": sweep_base.nfe as f64 / run.nfe.max(1) as f64,
            "tps": run.tps(),
            "tps_speedup": run.tps() / sweep_base.tps(),
            "accepted_per_call": run.stats.acceptance_per_call(),
            "mean_model_call_ms": mean_call * 1e3,
            "mismatches": run.mismatches(&dyn_run),
        }));
    }

    // ---- Fig. 6: temperature sweep (graph calibrated at T = 0).
    let temps: Vec<f64> = a
        .temps
        .split(',')
        .filter_map(|s| s.trim().parse::<f64>().ok())
        .collect();
    let mut temp_rows = Vec::new();
    for &t in &temps {
        let st = DecodeConfig {
            temperature: t,
            ..static1
        };
        let dy = DecodeConfig {
            temperature: t,
            ..dynamic
        };
        let runs = run_many(
            &base,
            cache,
            &eval,
            &[
                Setting::Vanilla(st),
                Setting::Vanilla(dy),
                Setting::Spiffy(&cal_dyn.graph, sp(dy, a.dstar)),
            ],
            r,
        )?;
        let (b, v, s) = (&runs[0], &runs[1], &runs[2]);
        temp_rows.push(json!({
            "temperature": t,
            "baseline_nfe": b.nfe,
            "dynamic_nfe": v.nfe,
            "spiffy_nfe": s.nfe,
            "dynamic_nfe_reduction": b.nfe as f64 / v.nfe.max(1) as f64,
            "spiffy_nfe_reduction": b.nfe as f64 / s.nfe.max(1) as f64,
            "spiffy_over_dynamic_nfe": v.nfe as f64 / s.nfe.max(1) as f64,
            "dynamic_tps_speedup": v.tps() / b.tps(),
            "spiffy_tps_speedup": s.tps() / b.tps(),
            "accepted_per_call": s.stats.acceptance_per_call(),
            "mismatches": s.mismatches(v),
        }));
    }

    // ---- App. D.3: calibration domain (Rust source text vs JSON).
    let root = zapspec_backend::shipped_models_dir()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let code = code_prompts(&root, a.prompt_len, a.calib);
    let mut domain = Vec::new();
    if !code.is_empty() {
        let (rec_code, _) = record(&base, cache, &code, &dynamic, a.lookahead, "code")?;
        let cal_code = calibrate(&rec_code, &cal_cfg)?;
        let code_eval: Vec<Vec<TokenId>> = code_prompts(&root, a.prompt_len, a.calib + a.eval)
            .into_iter()
            .skip(code.len())
            .collect();
        for (eval_name, prompts) in [("JSON", &eval), ("Rust source", &code_eval)] {
            if prompts.is_empty() {
                continue;
            }
            let runs = run_many(
                &base,
                cache,
                prompts,
                &[
                    Setting::Vanilla(dynamic),
                    Setting::Spiffy(&cal_dyn.graph, sp(dynamic, a.dstar)),
                    Setting::Spiffy(&cal_code.graph, sp(dynamic, a.dstar)),
                ],
                1,
            )?;
            let v = &runs[0];
            for (cal_name, s) in [("JSON", &runs[1]), ("Rust source", &runs[2])] {
                domain.push(json!({
                    "calibrated_on": cal_name,
                    "evaluated_on": eval_name,
                    "prompts": prompts.len(),
                    "dynamic_nfe": v.nfe,
                    "spiffy_nfe": s.nfe,
                    "spiffy_over_dynamic_nfe": v.nfe as f64 / s.nfe.max(1) as f64,
                    "accepted_per_call": s.stats.acceptance_per_call(),
                    "mismatches": s.mismatches(v),
                }));
            }
        }
    }

    // ---- App. A.2: inexact settings (bidirectional + prefix cache only,
    // and no cache) and the exact blockwise-causal reading of the model.
    let mut exactness = Vec::new();
    let exact_settings: Vec<(&str, DiffusionLm, DiffusionCache)> = if block_causal {
        vec![
            (
                "blockwise-causal, prefix cache",
                base.clone(),
                DiffusionCache::Prefix,
            ),
            (
                "blockwise-causal, no cache",
                base.clone(),
                DiffusionCache::None,
            ),
        ]
    } else {
        vec![
            (
                "bidirectional, dual cache",
                base.clone(),
                DiffusionCache::Dual,
            ),
            (
                "bidirectional, prefix cache",
                base.clone(),
                DiffusionCache::Prefix,
            ),
            (
                "bidirectional, no cache",
                base.clone(),
                DiffusionCache::None,
            ),
            (
                "bidirectional weights read blockwise-causally, prefix cache",
                base.clone()
                    .with_attention(DiffusionAttention::BlockCausal, a.block_len),
                DiffusionCache::Prefix,
            ),
        ]
    };
    for (name, model, cache) in exact_settings {
        let runs = run_many(
            &model,
            cache,
            &eval,
            &[
                Setting::Vanilla(dynamic),
                Setting::Spiffy(&cal_dyn.graph, sp(dynamic, a.dstar)),
            ],
            1,
        )?;
        let (v, s) = (&runs[0], &runs[1]);
        exactness.push(json!({
            "setting": name,
            "dynamic_nfe": v.nfe,
            "spiffy_nfe": s.nfe,
            "mismatches": s.mismatches(v),
            "tokens_differing": s.tokens_differing(v),
            "tokens": v.tokens(),
            "prompts": eval.len(),
        }));
    }

    // ---- Table 3: overheads as % of a vanilla model call.
    let vanilla_call = sweep
        .first()
        .and_then(|x| x["mean_model_call_ms"].as_f64())
        .unwrap_or(f64::NAN);
    let st = &sp_dyn.stats;
    let per_call = |d: Duration| ms(d) / st.calls.max(1) as f64;
    let pct = |x: f64| 100.0 * x / vanilla_call;
    let dstar_call = sweep
        .get(a.dstar)
        .and_then(|x| x["mean_model_call_ms"].as_f64())
        .unwrap_or(f64::NAN);
    let head_dim = mcfg.hidden_size / mcfg.num_attention_heads.max(1);
    let replay = |d: usize| {
        replay_backend_costs(
            block_causal,
            cache,
            a.prompt_len,
            w,
            a.block_len,
            d,
            head_dim,
        )
    };
    let (seq0, pos0, mask0) = replay(0)?;
    let (seq_d, pos_d, mask_d) = replay(a.dstar)?;
    let growth: Vec<serde_json::Value> = sweep
        .iter()
        .map(|x| {
            json!({
                "dstar": x["dstar"],
                "model_call_ms": x["mean_model_call_ms"],
                "vs_dstar0": x["mean_model_call_ms"].as_f64().unwrap_or(f64::NAN) / vanilla_call,
            })
        })
        .collect();
    let overhead = json!({
        "vanilla_model_call_ms": vanilla_call,
        "backend_draft_sequence_pct": [pct(seq0), pct(seq_d)],
        "backend_position_ids_pct": [pct(pos0), pct(pos_d)],
        "backend_mask_pct": [pct(mask0), pct(mask_d)],
        "model_call_growth": growth,
        "model_pct": pct(dstar_call),
        "drafting_pct": pct(per_call(st.time_drafting)),
        "pruning_pct": pct(per_call(st.time_pruning)),
        "draft_construction_pct": pct(per_call(st.time_draft_construction)),
        "acceptance_pct": pct(per_call(st.time_acceptance)),
        "unmasking_pct": pct(per_call(st.time_unmasking)),
    });

    // ---- Report.
    let calib_json = json!({
        "prompts": calib.len(),
        "records": rec_dyn.len(),
        "trajectory_recording_s": rec_dyn_time.as_secs_f64(),
        "trajectory_recording_static_s": rec_st_time.as_secs_f64(),
        "candidate_nodes": n_cand,
        "candidate_edges": cal_dyn.candidates.edges().count(),
        "build_ms": ms(cal_dyn.build_time),
        "search_ms": ms(cal_dyn.search_time),
        "search_explored": cal_dyn.selection.explored,
        "selection_score": cal_dyn.selection.score,
        "brute_force_s": brute.map(|b| b.0.as_secs_f64()),
        "brute_force_combinations": combos,
        "brute_force_agrees": brute.map(|b| b.1),
        "graph": serde_json::to_value(&cal_dyn.graph)?,
        "graph_static": serde_json::to_value(&cal_st.graph)?,
    });
    let report = json!({
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "model": dir.display().to_string(),
        "settings": {
            "gen_len": w, "block_len": a.block_len, "prompt_len": a.prompt_len, "tau": a.tau,
            "graph_size": a.graph_size, "dstar": a.dstar, "lookahead": a.lookahead,
            "eval_prompts": eval.len(), "seed": a.seed, "cpu": examples::host::cpu_name(), "cache": cache_name, "device": "cpu",
            "model_description": model_desc, "model_manifest_heldout": manifest.as_ref().map(|m| m["heldout"].clone()),
            "repeats": a.repeats,
        },
        "calibration": calib_json,
        "top1_confidence": confidence,
        "table1": table1,
        "dstar_sweep": sweep,
        "temperature_sweep": temp_rows,
        "calibration_domain": domain,
        "exactness": exactness,
        "overhead": overhead,
        "wall_s": started.elapsed().as_secs_f64(),
    });
    write_json(&a.out, &a.name, &report)?;

    let f2 = |x: &serde_json::Value| x.as_f64().map_or("n/a".into(), |v| format!("{v:.2}"));
    let mut md = String::new();
    md.push_str(&format!("# Spiffy on `{}`\n\n", dir.display()));
    md.push_str(&format!(
        "Command: `{}`. Model: byte-level masked diffusion LM, {model_desc}{}; CPU, f32, {} \
         KV cache. Prompts: {} bytes (separator + JSON) of \
         valid instances of held-out MaskBench schema files; {} calibration and {} disjoint \
         evaluation prompts; W = {w}, L = {}, greedy unless stated. Settings of a table are \
         timed interleaved, prompt by prompt; per prompt the fastest of {} repeats counts. \
         CPU: {}. Total run {:.0} s.\n\n",
        report["command"].as_str().unwrap_or(""),
        manifest
            .as_ref()
            .and_then(|m| {
                Some(format!(
                    " (held-out bound {:.3} bits/byte vs unigram {:.3})",
                    m["heldout"]["bits_per_byte"].as_f64()?,
                    m["heldout"]["unigram_bits_per_byte"].as_f64()?
                ))
            })
            .unwrap_or_default(),
        cache_name,
        a.prompt_len,
        calib.len(),
        eval.len(),
        a.block_len,
        a.repeats,
        examples::host::cpu_name(),
        started.elapsed().as_secs_f64()
    ));
    md.push_str("## Table 1: NFE and token rate (× vs baseline)\n\n");
    let mut t = MarkdownTable::new(&[
        "setting",
        "NFE",
        "NFE reduction",
        "tokens/s",
        "TPS speed-up",
        "accepted/call",
        "outputs ≠ vanilla",
    ]);
    for x in &report["table1"].as_array().cloned().unwrap_or_default() {
        t.row(&[
            x["setting"].as_str().unwrap_or("").to_string(),
            x["nfe"].to_string(),
            format!("{}×", f2(&x["nfe_reduction"])),
            format!("{:.0}", x["tokens_per_s"].as_f64().unwrap_or(0.0)),
            format!("{}×", f2(&x["tps_speedup"])),
            f2(&x["accepted_per_call"]),
            x["mismatches_vs_vanilla"]
                .as_u64()
                .map_or("—".into(), |m| format!("{m}/{}", eval.len())),
        ]);
    }
    md.push_str(&t.render());
    md.push_str(
        "\nToken rates are wall-clock on a 2-core machine shared with other jobs (a few percent \
         of noise between otherwise equal runs).\n",
    );
    md.push_str(&format!(
        "\nSpiffy's gain over dynamic unmasking alone: **{:.2}× in NFE** ({} → {}), {:.2}× in token rate.\n\n",
        dyn_run.nfe as f64 / sp_dyn.nfe.max(1) as f64,
        dyn_run.nfe,
        sp_dyn.nfe,
        sp_dyn.tps() / dyn_run.tps()
    ));
    if let Some((v, s)) = &low_runs {
        md.push_str(&format!(
            "With τ = {} (where dynamic unmasking fires on this model): Spiffy's gain over dynamic \
             unmasking alone is **{:.2}× in NFE** ({} → {}).\n\n",
            a.tau_low,
            v.nfe as f64 / s.nfe.max(1) as f64,
            v.nfe,
            s.nfe
        ));
    }
    md.push_str(&format!(
        "Top-1 confidence of masked positions during greedy 1-token/step decoding ({} scored): \
         mean {:.3}; share above 0.9: {:.3}, above 0.7: {:.3}, above 0.5: {:.3}.\n\n",
        confs.len(),
        confidence["mean_top1"].as_f64().unwrap_or(0.0),
        share(0.9),
        share(0.7),
        share(0.5)
    ));
    let mut t = MarkdownTable::new(&["top-1 p", "share of scored positions"]);
    for (k, &c) in hist.iter().enumerate() {
        t.row(&[
            format!("{:.1}–{:.1}", k as f64 / 10.0, (k + 1) as f64 / 10.0),
            format!("{:.3}", c as f64 / confs.len().max(1) as f64),
        ]);
    }
    md.push_str(&t.render());
    if let Some(prev) = a
        .compare
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    {
        md.push_str(&format!(
            "\nFor comparison, Table 1 of `{}` (model `{}`, W = {}, L = {}):\n\n",
            a.compare
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            prev["model"].as_str().unwrap_or("?"),
            prev["settings"]["gen_len"],
            prev["settings"]["block_len"]
        ));
        let mut t = MarkdownTable::new(&[
            "setting",
            "NFE",
            "NFE reduction",
            "accepted/call",
            "outputs ≠ vanilla",
        ]);
        for x in prev["table1"].as_array().cloned().unwrap_or_default() {
            t.row(&[
                x["setting"].as_str().unwrap_or("").to_string(),
                x["nfe"].to_string(),
                format!("{}×", f2(&x["nfe_reduction"])),
                f2(&x["accepted_per_call"]),
                x["mismatches_vs_vanilla"].to_string(),
            ]);
        }
        md.push_str(&t.render());
    }
    md.push_str("\n## Calibration (Algorithm 2)\n\n");
    md.push_str(&format!(
        "Trajectory recording: {:.2} s for {} prompts ({} timesteps, τ rule; {:.2} s for S = 1). \
         All-possibilities graph: {} nodes, {} subset edges, built in {:.3} ms. Exact subgraph \
         search for D = {}: **{:.3} ms** ({} branch-and-bound nodes){}.\n\n",
        rec_dyn_time.as_secs_f64(),
        calib.len(),
        rec_dyn.len(),
        rec_st_time.as_secs_f64(),
        n_cand,
        cal_dyn.candidates.edges().count(),
        ms(cal_dyn.build_time),
        a.graph_size,
        ms(cal_dyn.search_time),
        cal_dyn.selection.explored,
        match brute {
            Some((d, agree)) => format!(
                "; the paper's brute force over the same {combos:.0} subsets takes {:.2} s and {} its optimum",
                d.as_secs_f64(),
                if agree { "agrees with" } else { "DISAGREES with" }
            ),
            None => format!("; brute force skipped ({combos:.2e} subsets)"),
        }
    ));
    md.push_str(&format!(
        "Calibrated graph (τ rule; the shareable file is `{}_graph.json`):\n\n",
        a.name
    ));
    let mut t = MarkdownTable::new(&["node", "formula {(i,j)}", "level", "count", "children"]);
    for (i, n) in cal_dyn.graph.nodes().enumerate() {
        let kids: Vec<String> = cal_dyn.graph.children(i).map(|c| c.to_string()).collect();
        t.row(&[
            i.to_string(),
            n.formula.to_string(),
            n.level.to_string(),
            n.count.to_string(),
            kids.join(" "),
        ]);
    }
    md.push_str(&t.render());
    md.push_str(&format!(
        "\n## Fig. 5: draft budget D* (τ rule), `{}_dstar.png`\n\n",
        a.name
    ));
    let mut t = MarkdownTable::new(&[
        "D*",
        "NFE",
        "NFE reduction",
        "TPS speed-up",
        "accepted/call",
        "model call (ms)",
        "outputs ≠ vanilla",
    ]);
    for x in &report["dstar_sweep"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        t.row(&[
            x["dstar"].to_string(),
            x["nfe"].to_string(),
            format!("{}×", f2(&x["nfe_reduction"])),
            format!("{}×", f2(&x["tps_speedup"])),
            f2(&x["accepted_per_call"]),
            format!("{:.3}", x["mean_model_call_ms"].as_f64().unwrap_or(0.0)),
            x["mismatches"].to_string(),
        ]);
    }
    md.push_str(&t.render());
    md.push_str(&format!(
        "\n## Fig. 6: temperature (graph calibrated greedy), `{}_temperature.png`\n\n",
        a.name
    ));
    let mut t = MarkdownTable::new(&[
        "T",
        "baseline NFE",
        "dynamic NFE",
        "Spiffy NFE",
        "Spiffy/dynamic NFE",
        "Spiffy TPS speed-up",
        "accepted/call",
        "outputs ≠ vanilla",
    ]);
    for x in &temp_rows {
        t.row(&[
            f2(&x["temperature"]),
            x["baseline_nfe"].to_string(),
            x["dynamic_nfe"].to_string(),
            x["spiffy_nfe"].to_string(),
            format!("{}×", f2(&x["spiffy_over_dynamic_nfe"])),
            format!("{}×", f2(&x["spiffy_tps_speedup"])),
            f2(&x["accepted_per_call"]),
            x["mismatches"].to_string(),
        ]);
    }
    md.push_str(&t.render());
    md.push_str("\n## App. D.3: calibration domain (τ rule, D* as above)\n\n");
    let mut t = MarkdownTable::new(&[
        "calibrated on",
        "evaluated on",
        "prompts",
        "dynamic NFE",
        "Spiffy NFE",
        "Spiffy/dynamic",
        "accepted/call",
        "outputs ≠ vanilla",
    ]);
    for x in &domain {
        t.row(&[
            x["calibrated_on"].as_str().unwrap_or("").to_string(),
            x["evaluated_on"].as_str().unwrap_or("").to_string(),
            x["prompts"].to_string(),
            x["dynamic_nfe"].to_string(),
            x["spiffy_nfe"].to_string(),
            format!("{}×", f2(&x["spiffy_over_dynamic_nfe"])),
            f2(&x["accepted_per_call"]),
            x["mismatches"].to_string(),
        ]);
    }
    md.push_str(&t.render());
    md.push_str("\n## App. A.2: exactness by attention and cache (τ rule, D* as above)\n\n");
    let mut t = MarkdownTable::new(&[
        "setting",
        "dynamic NFE",
        "Spiffy NFE",
        "outputs ≠ vanilla",
        "tokens ≠ vanilla",
    ]);
    for x in &exactness {
        t.row(&[
            x["setting"].as_str().unwrap_or("").to_string(),
            x["dynamic_nfe"].to_string(),
            x["spiffy_nfe"].to_string(),
            format!("{}/{}", x["mismatches"], x["prompts"]),
            format!("{}/{}", x["tokens_differing"], x["tokens"]),
        ]);
    }
    md.push_str(&t.render());
    md.push_str(&format!(
        "\nExact by construction: the dual cache (prefix and suffix keys/values frozen, so a \
         draft row sees exactly what a separate call on that state sees) and blockwise-causal \
         attention (earlier blocks never attend to the current one). Approximate: bidirectional \
         attention with a prefix cache or none — the true suffix blocks are recomputed in the \
         call and attend to the true block, which is a step *behind* the draft, so from the \
         second layer on a draft row sees the old block through them (App. A.2). Each vanilla \
         row is the vanilla decoding in that same setting; the counts above are what the leak \
         costs on this {}-layer model (an observation for these prompts, not a bound).\n",
        mcfg.num_hidden_layers
    ));
    md.push_str(&format!(
        "\n## Table 3: overheads as % of a vanilla model call ({:.3} ms), D* = {}\n\n",
        vanilla_call, a.dstar
    ));
    let mut t = MarkdownTable::new(&["stage", "D* = 0", &format!("D* = {}", a.dstar)]);
    let host = [
        ("drafting (anchor ranks, current formula)", "drafting_pct"),
        ("draft pruning (Eqs. 12–14)", "pruning_pct"),
        (
            "draft sequence construction (filling formulas)",
            "draft_construction_pct",
        ),
        ("draft acceptance", "acceptance_pct"),
        ("unmasking (Next; vanilla does it too)", "unmasking_pct"),
    ];
    let backend = [
        (
            "… in it: draft sequence (true tokens + drafts, backend)",
            "backend_draft_sequence_pct",
        ),
        (
            "… in it: position ids (vector, tensor, rope gathers)",
            "backend_position_ids_pct",
        ),
        (
            "… in it: attention mask (Fig. 3 mask, additive tensor)",
            "backend_mask_pct",
        ),
    ];
    t.row(&[
        "model call (incl. the three rows below)".to_string(),
        "100.00".to_string(),
        f2(&overhead["model_pct"]),
    ]);
    for (name, key) in backend {
        t.row(&[
            name.to_string(),
            f2(&overhead[key][0]),
            f2(&overhead[key][1]),
        ]);
    }
    for (name, key) in host {
        t.row(&[name.to_string(), "0.00".to_string(), f2(&overhead[key])]);
    }
    md.push_str(&t.render());
    md.push_str("\nModel call growth with D* (mean ms per call, τ rule, from the sweep):\n\n");
    let mut t = MarkdownTable::new(&["D*", "model call (ms)", "× D* = 0"]);
    for g in overhead["model_call_growth"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        t.row(&[
            g["dstar"].to_string(),
            format!("{:.3}", g["model_call_ms"].as_f64().unwrap_or(f64::NAN)),
            format!("{}×", f2(&g["vs_dstar0"])),
        ]);
    }
    md.push_str(&t.render());
    md.push_str(&format!(
        "\nThe three backend rows are replayed outside the forward with the backend's own \
         public calls (`AttnMask::spiffy_over`, `to_tensor`, a rope-table gather) for the call \
         shapes of this generation ({} cache, {} drafts of {} tokens), because \
         `DiffusionLm::denoise` does them inside the timed call. Host-side Spiffy work \
         (drafting, pruning, draft construction, acceptance) is the paper's overhead; the model \
         row decides the token rate here: a {}-parameter model on a CPU is compute-bound, so a \
         call's cost grows with its rows (each draft adds {} rows), unlike an 8B model on a GPU, \
         where extra rows are nearly free and the paper's NFE savings become token-rate \
         savings.\n",
        cache_name,
        a.dstar,
        a.block_len,
        mcfg.num_params(),
        a.block_len
    ));
    std::fs::write(a.out.join(format!("{}.md", a.name)), &md)?;

    // ---- Plots.
    let xs: Vec<f64> = (0..=a.graph_size).map(|d| d as f64).collect();
    let get = |rows: &[serde_json::Value], k: &str| -> Vec<f64> {
        rows.iter().map(|x| x[k].as_f64().unwrap_or(0.0)).collect()
    };
    let sweep_rows = report["dstar_sweep"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if let Err(e) = examples::host::register_font() {
        println!("{md}");
        eprintln!("no plots: {e}");
        return Ok(());
    }
    plot_sweep(
        &a.out.join(format!("{}_dstar.png", a.name)),
        "Spiffy: draft budget D* (τ rule)",
        "D*",
        &xs,
        &get(&sweep_rows, "nfe_reduction"),
        &get(&sweep_rows, "tps_speedup"),
    )?;
    if temps.len() > 1 {
        plot_sweep(
            &a.out.join(format!("{}_temperature.png", a.name)),
            "Spiffy: temperature (τ rule, graph calibrated greedy)",
            "temperature",
            &temps,
            &get(&temp_rows, "spiffy_nfe_reduction"),
            &get(&temp_rows, "spiffy_tps_speedup"),
        )?;
    }
    println!("{md}");
    eprintln!("wrote {}", a.out.join(format!("{}.md", a.name)).display());
    Ok(())
}
