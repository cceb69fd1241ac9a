//! Copy coverage, speed-up bounds and the perturbation study of
//! Copy-as-Decode (paper `002_*`, Fig. 4 and Fig. 6) on edit corpora.
//!
//! ```text
//! cargo run -p examples --bin copy_coverage -- --out /tmp/cc
//! cargo run -p examples --bin copy_coverage -- my_edits.jsonl --kernel kernel_study.json
//! ```
//!
//! Inputs: JSONL files of `{"before", "after", ...}` objects (default: the
//! three `../shared/data/edits` corpora) and a `kernel_study.json` written by
//! the `kernel_study` binary (its first study's `rows[].n` / `rows[].speedup`
//! give `s(N)`). Tokenizer: o200k. For each corpus and pooled it prints the
//! line-level oracle cover, the token-level greedy cover `f(m)` for
//! `m ∈ {1, 2, 4, 8, 16, 32}`, the histogram-weighted bounds
//! `T / (G + Σ len/s(len))` (and the floor `1/((1−f) + f/s(m))`), and the
//! exact-match rate of oracle programs under off-by-ε endpoint noise
//! (ε = 0..3). Writes `copy_coverage.json`, `copy_coverage.md` and
//! `copy_coverage.png` (line-level copy-span lengths in tokens, log2 bins)
//! to `--out`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use serde_json::json;
use zapspec_vocab::{TiktokenBpe, TokenVocab};

use examples::copy_study::{
    bound, histogram_bound, line_cover, perturbation_em, Cover, KernelSpeedups, TokenMatcher,
    MIN_SPANS,
};
use examples::edits::{load, CorpusArgs};
use examples::report::{write_json, MarkdownTable};

/// Command line.
#[derive(Parser, Debug)]
#[command(about = "Copy-as-Decode coverage, bounds and perturbation study (paper Fig. 4 / Fig. 6)")]
struct Args {
    /// The corpora: JSONL files and/or a git repository's history.
    #[command(flatten)]
    corpus: CorpusArgs,
    /// The tokenizer of every token count.
    #[arg(long, value_enum, default_value = "o200k")]
    tokenizer: TokenizerKind,
    /// A kernel_study.json (s(N) from its first study).
    #[arg(
        long,
        default_value = "models/kernel-study/qwen2.5-1.5b-shape-1layer/kernel_study.json"
    )]
    kernel: PathBuf,
    /// Seed of the perturbation RNG.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Perturbation trials per pair.
    #[arg(long, default_value_t = 5)]
    trials: usize,
    /// Output folder.
    #[arg(long, default_value = "target/experiments")]
    out: PathBuf,
}

/// The tokenizers `--tokenizer` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TokenizerKind {
    /// o200k_base (tiktoken).
    O200k,
    /// SmolLM2-135M-Instruct's GPT-2-style BPE, read from its GGUF file
    /// (`scripts/fetch-smollm2.sh`).
    Smollm2,
}

/// The perturbation noise levels.
const EPS: [usize; 4] = [0, 1, 2, 3];

/// Everything measured on one corpus (or pooled).
#[derive(Default, Clone)]
struct Corpus {
    name: String,
    pairs: Vec<(String, String)>,
    line: Cover,
    token: Vec<Cover>,
    /// EM per ε.
    em: Vec<f64>,
}

fn read_kernel(path: &Path) -> Result<(KernelSpeedups, String)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)?;
    let study = v
        .get("studies")
        .and_then(|s| s.get(0))
        .context("kernel file has no studies[0]")?;
    let rows = study
        .get("rows")
        .and_then(|r| r.as_array())
        .context("kernel study has no rows")?;
    let mut points = Vec::new();
    for r in rows {
        let n = r
            .get("n")
            .and_then(|x| x.as_u64())
            .context("row without n")?;
        let s = r
            .get("speedup")
            .and_then(|x| x.as_f64())
            .context("row without speedup")?;
        points.push((usize::try_from(n)?, s));
    }
    let desc = format!(
        "{} — {} (machine: {}, device: {})",
        study.get("model").and_then(|x| x.as_str()).unwrap_or("?"),
        path.display(),
        v.get("machine").and_then(|x| x.as_str()).unwrap_or("?"),
        v.get("device").and_then(|x| x.as_str()).unwrap_or("?"),
    );
    Ok((KernelSpeedups::new(points)?, desc))
}

fn pct(x: f64) -> String {
    if x.is_nan() {
        "n/a".into()
    } else {
        format!("{:.2}%", 100.0 * x)
    }
}

fn cover_json(c: &Cover, kernel: &KernelSpeedups) -> serde_json::Value {
    json!({
        "pairs": c.pairs,
        "output_tokens": c.output_tokens,
        "copied_tokens": c.copied_tokens,
        "f": c.fraction(),
        "histogram_bound": histogram_bound(c, kernel),
        "spans": c.spans.iter().map(|(l, n)| json!([l, n])).collect::<Vec<_>>(),
        "log2_bins": c.log2_histogram().iter().map(|(k, n)| json!([k, n])).collect::<Vec<_>>(),
    })
}

fn main() -> Result<()> {
    let a = Args::parse();
    let command = format!(
        "copy_coverage {}",
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    let (kernel, kernel_desc) = read_kernel(&a.kernel)?;
    let (vocab, tok_name) = match a.tokenizer {
        TokenizerKind::O200k => (
            TokenVocab::tiktoken(TiktokenBpe::O200k)?,
            "o200k_base".to_string(),
        ),
        TokenizerKind::Smollm2 => {
            let p = examples::smollm2::require_model()?;
            let (v, _) = TokenVocab::from_gguf(&p)?;
            (v, format!("SmolLM2-135M-Instruct ({})", p.display()))
        }
    };
    // Encoding ordinary text does not fail for these tokenizers; an error
    // would count as zero tokens.
    let tok = |s: &str| vocab.encode(s).unwrap_or_default();

    let loaded = load(&a.corpus, usize::MAX)?;
    let sources: Vec<String> = loaded
        .iter()
        .map(|c| format!("- `{}`: {}", c.name, c.note))
        .collect();
    let mut corpora: Vec<Corpus> = loaded
        .into_iter()
        .map(|c| Corpus {
            name: c.name,
            pairs: c.pairs,
            token: vec![Cover::default(); MIN_SPANS.len()],
            ..Corpus::default()
        })
        .collect();
    let total: usize = corpora.iter().map(|c| c.pairs.len()).sum();
    let bar = ProgressBar::new(total as u64);
    bar.set_style(ProgressStyle::with_template(
        "{bar:40} {pos}/{len} pairs {msg}",
    )?);
    for c in &mut corpora {
        bar.set_message(c.name.clone());
        for (before, after) in &c.pairs {
            c.line.merge(&line_cover(before, after, &tok));
            let m = TokenMatcher::new(&tok(before), &tok(after));
            for (i, &k) in MIN_SPANS.iter().enumerate() {
                c.token[i].merge(&m.greedy(k));
            }
            bar.inc(1);
        }
        c.em = EPS
            .iter()
            .map(|&e| perturbation_em(&c.pairs, e, a.trials, a.seed))
            .collect();
    }
    bar.finish_and_clear();

    let mut pooled = Corpus {
        name: "pooled".into(),
        token: vec![Cover::default(); MIN_SPANS.len()],
        em: vec![0.0; EPS.len()],
        ..Corpus::default()
    };
    for c in &corpora {
        pooled.line.merge(&c.line);
        for (p, t) in pooled.token.iter_mut().zip(&c.token) {
            p.merge(t);
        }
        for (p, e) in pooled.em.iter_mut().zip(&c.em) {
            *p += e * c.pairs.len() as f64 / total.max(1) as f64;
        }
    }
    if total == 0 {
        pooled.em = vec![f64::NAN; EPS.len()];
    }
    let mut all = corpora.clone();
    all.push(pooled);

    // Coverage.
    let mut head = vec![
        "corpus".to_string(),
        "pairs".into(),
        "output tokens".into(),
        "line f".into(),
    ];
    head.extend(MIN_SPANS.iter().map(|m| format!("f(m={m})")));
    let mut cov = MarkdownTable::new(&head);
    for c in &all {
        let mut row = vec![
            c.name.clone(),
            c.line.pairs.to_string(),
            c.line.output_tokens.to_string(),
            pct(c.line.fraction()),
        ];
        row.extend(c.token.iter().map(|t| pct(t.fraction())));
        cov.row(&row);
    }
    // Bounds.
    let mut head = vec!["corpus".to_string(), "line (hist)".into()];
    head.extend(MIN_SPANS.iter().map(|m| format!("m={m} hist / floor")));
    let mut bnd = MarkdownTable::new(&head);
    for c in &all {
        let mut row = vec![
            c.name.clone(),
            format!("{:.2}×", histogram_bound(&c.line, &kernel)),
        ];
        for (t, &m) in c.token.iter().zip(&MIN_SPANS) {
            let floor = bound(t.fraction(), kernel.speedup(m))
                .map(|b| format!("{b:.2}×"))
                .unwrap_or_else(|e| format!("({e})"));
            row.push(format!("{:.2}× / {floor}", histogram_bound(t, &kernel)));
        }
        bnd.row(&row);
    }
    // Perturbation.
    let mut head = vec!["corpus".to_string(), "pairs".into()];
    head.extend(EPS.iter().map(|e| format!("EM ε={e}")));
    let mut pert = MarkdownTable::new(&head);
    for c in &all {
        let mut row = vec![c.name.clone(), c.line.pairs.to_string()];
        row.extend(c.em.iter().map(|&e| pct(e)));
        pert.row(&row);
    }
    let mut ktab = MarkdownTable::new(&["N", "s(N)"]);
    for &(n, s) in kernel.points() {
        ktab.row(&[n.to_string(), format!("{s:.2}×")]);
    }

    let md = format!(
        "Command: `{command}`\n\nCorpora:\n\n{}\n\nTokenizer: {tok_name}. Kernel s(N): {kernel_desc}; log-log interpolated between points, clamped outside.\n\n{}\n### Coverage (fraction of gold-output tokens in copy spans)\n\nLine level: oracle program (Myers line diff), tokenized op by op. Token level: greedy longest-match cover at minimum span m.\n\n{}\n### Bounds\n\n`hist` = T / (G + Σ_spans len / s(len)) over the corpus's span histogram; `floor` = 1/((1 − f) + f/s(m)).\n\n{}\n### Perturbation (oracle programs, copy endpoints ± U[−ε, ε], clamped; {} trials per pair, seed {})\n\n{}",
        sources.join("\n"),
        ktab.render(),
        cov.render(),
        bnd.render(),
        a.trials,
        a.seed,
        pert.render()
    );
    println!("{md}");
    std::fs::create_dir_all(&a.out)?;
    std::fs::write(a.out.join("copy_coverage.md"), &md)?;
    let corpora_json: Vec<_> = all
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "line": cover_json(&c.line, &kernel),
                "token": MIN_SPANS.iter().zip(&c.token).map(|(m, t)| {
                    let mut v = cover_json(t, &kernel);
                    v["m"] = json!(m);
                    v["floor_bound"] = json!(bound(t.fraction(), kernel.speedup(*m)).ok());
                    v
                }).collect::<Vec<_>>(),
                "perturbation_em": EPS.iter().zip(&c.em).map(|(e, v)| json!({"eps": e, "em": v})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let path = write_json(
        &a.out,
        "copy_coverage",
        &json!({
            "command": command,
            "tokenizer": tok_name,
            "sources": sources,
            "kernel": kernel_desc,
            "kernel_points": kernel.points(),
            "seed": a.seed,
            "trials": a.trials,
            "corpora": corpora_json,
        }),
    )?;
    eprintln!("wrote {}", path.display());
    match examples::host::register_font() {
        Ok(()) => {
            let png = a.out.join("copy_coverage.png");
            plot(&png, &all)?;
            eprintln!("wrote {}", png.display());
        }
        Err(e) => eprintln!("no plot: {e}"),
    }
    Ok(())
}

/// Grouped bars: share of line-level copy spans per log2 length bin.
fn plot(path: &Path, all: &[Corpus]) -> Result<()> {
    let root = BitMapBackend::new(path, (1000, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let hists: Vec<Vec<(u32, usize)>> = all.iter().map(|c| c.line.log2_histogram()).collect();
    let kmax = hists
        .iter()
        .flat_map(|h| h.iter().map(|&(k, _)| k))
        .max()
        .unwrap_or(0);
    let colors = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];
    let width = 0.8 / all.len().max(1) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Line-level copy-span lengths (o200k tokens, log2 bins)",
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.2f64..(kmax as f64 + 1.0), 0f64..1f64)?;
    chart
        .configure_mesh()
        .x_desc("span length bin [2^k, 2^(k+1)) tokens")
        .y_desc("share of spans")
        .x_labels(kmax as usize + 2)
        .x_label_formatter(&|x| format!("2^{}", x.round() as i64))
        .draw()?;
    for (ci, (c, h)) in all.iter().zip(&hists).enumerate() {
        let n: usize = h.iter().map(|&(_, n)| n).sum();
        let color = colors[ci % colors.len()];
        let x0 = ci as f64 * width;
        chart
            .draw_series(h.iter().map(|&(k, cnt)| {
                let share = cnt as f64 / n.max(1) as f64;
                Rectangle::new(
                    [(k as f64 + x0, 0.0), (k as f64 + x0 + width, share)],
                    color.filled(),
                )
            }))?
            .label(format!("{} ({n} spans)", c.name))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
