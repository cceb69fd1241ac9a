//! Aggregation of per-schema results into one summary per engine, and the
//! Markdown tables (engines side by side; the ablation table).

use std::collections::BTreeMap;

use examples::maskstats::{fmt_us, Summary};
use serde::{Deserialize, Serialize};

use crate::run::{SchemaResult, Status};

/// One engine's totals (the JSON summary line).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EngineSummary {
    pub engine: String,
    pub schemas: usize,
    pub passing: usize,
    pub compile_errors: usize,
    pub compile_error_reasons: BTreeMap<String, usize>,
    /// Schemas that compiled but got some test wrong.
    pub failing_schemas: usize,
    pub valid_tests: usize,
    pub invalid_tests: usize,
    /// Valid instances refused.
    pub validation_errors: usize,
    /// Invalid instances accepted whole.
    pub invalidation_errors: usize,
    pub timeouts: usize,
    pub panics: usize,
    /// Child process crashed or hung past the hard limit.
    pub crashes: usize,
    pub mask_advance_mismatches: usize,
    pub tokens: usize,
    pub ttfm_us: Summary,
    /// Share of the summed TTFM spent building terminal automata: over
    /// all compiled schemas, and over the slowest 1% by TTFM (engines that
    /// report it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfm_automata_share: Option<(f64, f64)>,
    /// Shares of the summed TTFM spent translating the schema into a
    /// grammar and in the first mask (after the compile), over all compiled
    /// schemas and over the slowest 1% by TTFM: `[(schema, first mask); 2]`
    /// (engines that report the schema step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfm_split: Option<[(f64, f64); 2]>,
    pub tbm_us: Summary,
    /// Tokens per second of mask computation: masks / total mask time.
    pub mask_throughput_per_s: f64,
    /// Per-schema peak live Earley items (engines that report it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_items: Option<Summary>,
    /// Peak resident set (VmHWM) of the engine's process, KiB (max over
    /// child restarts).
    pub vmhwm_kib: u64,
    /// VmRSS after loading the vocabulary and building the engine, before
    /// the first schema, KiB.
    pub baseline_rss_kib: u64,
    /// Live heap bytes at that point (the binary's counting allocator).
    #[serde(default)]
    pub baseline_heap_bytes: u64,
    /// Live heap per schema (the counting allocator; `None`: no samples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap: Option<HeapSummary>,
    /// Building the engine once per process (vocabulary index, tokenizer
    /// environment; not in any TTFM), ms, max over child restarts.
    #[serde(default)]
    pub engine_build_ms: f64,
    pub child_restarts: usize,
    pub wall_s: f64,
}

/// The live-heap samples of an engine's schemas ([`crate::run::HeapSample`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct HeapSummary {
    /// Bytes per compiled grammar: live heap after compile + first mask
    /// minus before the compile, over the schemas that compiled (the
    /// grammar, its first matcher, and what the compile added to the
    /// engine's shared caches).
    pub grammar_bytes: Summary,
    /// Bytes a schema left behind once its grammar and matchers were
    /// dropped (after minus before; negative when it freed shared cache).
    pub retained_bytes: Summary,
    /// Live heap after the last schema minus before the first: what the
    /// whole run left in the engine.
    pub retained_total: i64,
    /// Largest live heap at any point of the run.
    pub peak_bytes: u64,
    /// Live heap after the last schema.
    pub final_bytes: u64,
    /// Largest shared-cache byte account after a schema (engines that
    /// report it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_bytes_max: Option<u64>,
}

fn heap_summary(results: &[SchemaResult]) -> Option<HeapSummary> {
    let samples: Vec<(&SchemaResult, crate::run::HeapSample)> = results
        .iter()
        .filter_map(|r| r.heap.map(|h| (r, h)))
        .collect();
    let (first, last) = (samples.first()?.1, samples.last()?.1);
    let grammar: Vec<f64> = samples
        .iter()
        .filter(|(r, _)| r.status != Status::CompileError)
        .filter_map(|(_, h)| h.held.map(|b| b as f64 - h.before as f64))
        .collect();
    let retained: Vec<f64> = samples
        .iter()
        .map(|(_, h)| h.after as f64 - h.before as f64)
        .collect();
    Some(HeapSummary {
        grammar_bytes: Summary::of(&grammar),
        retained_bytes: Summary::of(&retained),
        retained_total: last.after as i64 - first.before as i64,
        peak_bytes: samples.iter().map(|(_, h)| h.peak).max().unwrap_or(0),
        final_bytes: last.after,
        cache_bytes_max: results.iter().filter_map(|r| r.cache_bytes).max(),
    })
}

pub fn summarize(engine: &str, results: &[SchemaResult]) -> EngineSummary {
    let mut s = EngineSummary {
        engine: engine.to_string(),
        schemas: results.len(),
        ..Default::default()
    };
    let mut ttfm = Vec::new();
    let mut automata: Vec<(f64, f64)> = Vec::new();
    let mut split: Vec<(f64, f64, f64)> = Vec::new();
    let mut tbm = Vec::new();
    let mut peaks = Vec::new();
    for r in results {
        match r.status {
            Status::Pass => s.passing += 1,
            Status::Fail => s.failing_schemas += 1,
            Status::CompileError => {
                s.compile_errors += 1;
                *s.compile_error_reasons
                    .entry(r.error_category.clone().unwrap_or_default())
                    .or_default() += 1;
            }
            Status::Timeout => s.timeouts += 1,
            Status::Panic => s.panics += 1,
            Status::Crash => s.crashes += 1,
            Status::BadFile => {}
        }
        s.valid_tests += r.valid_tests;
        s.invalid_tests += r.invalid_tests;
        s.validation_errors += r.validation_errors.len();
        s.invalidation_errors += r.invalidation_errors.len();
        s.mask_advance_mismatches += r.mask_advance_mismatch;
        s.tokens += r.tokens;
        if r.status != Status::CompileError {
            if let Some(t) = r.ttfm_us {
                ttfm.push(t);
                if let Some(a) = r.ttfm_automata_us {
                    automata.push((t, a));
                }
                if let (Some(g), Some(m)) = (r.ttfm_schema_us, r.ttfm_first_mask_us) {
                    split.push((t, g, m));
                }
            }
        }
        tbm.extend(r.tbm_ns.iter().map(|&n| n as f64 / 1000.0));
        if let Some(p) = r.peak_items {
            peaks.push(p as f64);
        }
    }
    s.ttfm_us = Summary::of(&ttfm);
    s.heap = heap_summary(results);
    if !automata.is_empty() {
        let share = |xs: &[(f64, f64)]| {
            let t: f64 = xs.iter().map(|x| x.0).sum();
            let a: f64 = xs.iter().map(|x| x.1).sum();
            if t > 0.0 {
                a / t
            } else {
                0.0
            }
        };
        automata.sort_by(|x, y| y.0.total_cmp(&x.0));
        let top = automata.len().div_ceil(100);
        s.ttfm_automata_share = Some((share(&automata), share(&automata[..top])));
    }
    if !split.is_empty() {
        let share = |xs: &[(f64, f64, f64)]| {
            let t: f64 = xs.iter().map(|x| x.0).sum::<f64>().max(f64::MIN_POSITIVE);
            (
                xs.iter().map(|x| x.1).sum::<f64>() / t,
                xs.iter().map(|x| x.2).sum::<f64>() / t,
            )
        };
        split.sort_by(|x, y| y.0.total_cmp(&x.0));
        let top = split.len().div_ceil(100);
        s.ttfm_split = Some([share(&split), share(&split[..top])]);
    }
    s.tbm_us = Summary::of(&tbm);
    let total: f64 = tbm.iter().sum();
    s.mask_throughput_per_s = if total > 0.0 {
        tbm.len() as f64 / (total / 1e6)
    } else {
        0.0
    };
    s.peak_items = if peaks.is_empty() {
        None
    } else {
        Some(Summary::of(&peaks))
    };
    s
}

fn ratio(x: f64, base: Option<f64>) -> String {
    match base {
        Some(b) if b > 0.0 && x > 0.0 => format!(" ({:.2}×)", x / b),
        _ => String::new(),
    }
}

/// Engines side by side; latency rows also as a ratio to `llguidance`
/// (`×` > 1: slower than llguidance).
pub fn markdown_table(sums: &[EngineSummary]) -> String {
    let base = sums.iter().find(|s| s.engine == "llguidance");
    let mut out = String::new();
    out.push_str("| metric |");
    for s in sums {
        out.push_str(&format!(" {} |", s.engine));
    }
    out.push_str("\n|---|");
    for _ in sums {
        out.push_str("---:|");
    }
    out.push('\n');
    type Row = (&'static str, fn(&EngineSummary) -> String);
    let count_rows: [Row; 13] = [
        ("schemas", |s| s.schemas.to_string()),
        ("passing", |s| s.passing.to_string()),
        ("compile errors", |s| s.compile_errors.to_string()),
        ("failing (compiled, some test wrong)", |s| {
            s.failing_schemas.to_string()
        }),
        ("validation errors (valid refused)", |s| {
            format!("{} / {}", s.validation_errors, s.valid_tests)
        }),
        ("invalidation errors (invalid accepted)", |s| {
            format!("{} / {}", s.invalidation_errors, s.invalid_tests)
        }),
        ("timeouts", |s| s.timeouts.to_string()),
        ("panics caught", |s| s.panics.to_string()),
        ("crashes / hard kills", |s| s.crashes.to_string()),
        ("mask/advance mismatches", |s| {
            s.mask_advance_mismatches.to_string()
        }),
        ("tokens (masks)", |s| {
            format!("{} ({})", s.tokens, s.tbm_us.count)
        }),
        ("engine construction (once, not in TTFM)", |s| {
            format!("{:.1} ms", s.engine_build_ms)
        }),
        ("peak RSS VmHWM (baseline)", |s| {
            format!(
                "{:.0} MiB ({:.0})",
                s.vmhwm_kib as f64 / 1024.0,
                s.baseline_rss_kib as f64 / 1024.0
            )
        }),
    ];
    for (name, f) in count_rows {
        out.push_str(&format!("| {name} |"));
        for s in sums {
            out.push_str(&format!(" {} |", f(s)));
        }
        out.push('\n');
    }
    for (label, pick) in [("TTFM", 0usize), ("TBM", 1usize)] {
        let get = |s: &EngineSummary| {
            if pick == 0 {
                s.ttfm_us.clone()
            } else {
                s.tbm_us.clone()
            }
        };
        for (k, (row, _)) in get(&EngineSummary::default()).rows().iter().enumerate() {
            out.push_str(&format!("| {label} {row} |"));
            for s in sums {
                let v = get(s).rows()[k].1;
                let b = base.map(|b| get(b).rows()[k].1);
                out.push_str(&format!(" {}{} |", fmt_us(v), ratio(v, b)));
            }
            out.push('\n');
        }
    }
    if sums.iter().any(|s| s.ttfm_automata_share.is_some()) {
        out.push_str("| TTFM share in terminal automata (all / slowest 1%) |");
        for s in sums {
            match s.ttfm_automata_share {
                Some((a, b)) => out.push_str(&format!(" {:.0}% / {:.0}% |", 100.0 * a, 100.0 * b)),
                None => out.push_str(" — |"),
            }
        }
        out.push('\n');
    }
    if sums.iter().any(|s| s.ttfm_split.is_some()) {
        out.push_str("| TTFM share in schema → grammar / first mask (all; slowest 1%) |");
        for s in sums {
            match s.ttfm_split {
                Some([(g, m), (g1, m1)]) => out.push_str(&format!(
                    " {:.0}% / {:.0}%; {:.0}% / {:.0}% |",
                    100.0 * g,
                    100.0 * m,
                    100.0 * g1,
                    100.0 * m1
                )),
                None => out.push_str(" — |"),
            }
        }
        out.push('\n');
    }
    out.push_str("| mask throughput (masks/s) |");
    for s in sums {
        out.push_str(&format!(" {:.0} |", s.mask_throughput_per_s));
    }
    out.push('\n');
    out
}

fn mib(bytes: f64) -> String {
    let m = bytes / (1024.0 * 1024.0);
    if m.abs() < 1.0 {
        format!("{:.0} KiB", bytes / 1024.0)
    } else {
        format!("{m:.1} MiB")
    }
}

/// Live heap per engine (the counting allocator of the binary): bytes per
/// compiled grammar, what each schema left behind, the run's peak.
pub fn markdown_heap(sums: &[EngineSummary]) -> String {
    if sums.iter().all(|s| s.heap.is_none()) {
        return String::new();
    }
    let mut out = String::from("\n### Live heap (counting allocator)\n\n| metric |");
    for s in sums {
        out.push_str(&format!(" {} |", s.engine));
    }
    out.push_str("\n|---|");
    for _ in sums {
        out.push_str("---:|");
    }
    out.push('\n');
    let mut row = |name: &str, f: &dyn Fn(&HeapSummary, &EngineSummary) -> String| {
        out.push_str(&format!("| {name} |"));
        for s in sums {
            match &s.heap {
                Some(h) => out.push_str(&format!(" {} |", f(h, s))),
                None => out.push_str(" — |"),
            }
        }
        out.push('\n');
    };
    type Pick = fn(&HeapSummary) -> &Summary;
    let dists: [(&str, Pick); 2] = [
        ("bytes per compiled grammar", |h| &h.grammar_bytes),
        ("left behind per schema", |h| &h.retained_bytes),
    ];
    for (what, pick) in dists {
        for (k, (p, _)) in Summary::default().rows().iter().enumerate() {
            if matches!(*p, "p50" | "p99" | "max" | "mean") {
                row(&format!("{what} {p}"), &|h, _| mib(pick(h).rows()[k].1));
            }
        }
    }
    row("live heap before the first schema", &|_, s| {
        mib(s.baseline_heap_bytes as f64)
    });
    row("left behind by the whole run", &|h, _| {
        mib(h.retained_total as f64)
    });
    row("live heap after the last schema", &|h, _| {
        mib(h.final_bytes as f64)
    });
    row("live heap peak", &|h, _| mib(h.peak_bytes as f64));
    row("shared cache account, max after a schema", &|h, _| {
        h.cache_bytes_max.map_or("—".into(), |b| mib(b as f64))
    });
    out
}

/// Compile-error census: top reasons per engine.
pub fn markdown_reasons(sums: &[EngineSummary], top: usize) -> String {
    let mut out = String::new();
    for s in sums {
        if s.compile_error_reasons.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n**{}** compile errors by reason ({}):\n\n| reason | schemas |\n|---|---:|\n",
            s.engine, s.compile_errors
        ));
        let mut v: Vec<(&String, &usize)> = s.compile_error_reasons.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (r, n) in v.iter().take(top) {
            out.push_str(&format!("| {} | {n} |\n", r.replace('|', "\\|")));
        }
        if v.len() > top {
            let rest: usize = v.iter().skip(top).map(|x| *x.1).sum();
            out.push_str(&format!("| ({} other reasons) | {rest} |\n", v.len() - top));
        }
    }
    out
}

/// The ablation table of our engine's variants (ZapFormat Table 3/4).
pub fn markdown_ablation(sums: &[EngineSummary]) -> String {
    let mut out = String::from(
        "| variant | passing | TBM p50 | TBM p90 | TBM p99 | TBM mean | masks/s | TTFM p50 | TTFM p90 | peak items p50 | peak items p99 | peak items max | VmHWM |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for s in sums {
        let p = s.peak_items.clone().unwrap_or_default();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {:.0} | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} MiB |\n",
            s.engine,
            s.passing,
            fmt_us(s.tbm_us.p50),
            fmt_us(s.tbm_us.p90),
            fmt_us(s.tbm_us.p99),
            fmt_us(s.tbm_us.mean),
            s.mask_throughput_per_s,
            fmt_us(s.ttfm_us.p50),
            fmt_us(s.ttfm_us.p90),
            p.p50,
            p.p99,
            p.max,
            s.vmhwm_kib as f64 / 1024.0
        ));
    }
    out
}

/// The engines' summaries over the schemas that every engine compiled
/// (passing or failing some test; not refused, timed out or crashed), so
/// that no engine's percentiles are charged for schemas another refuses.
pub struct CommonSet {
    /// Schemas in the set.
    pub schemas: usize,
    /// One summary per engine, in the run's order, over those schemas
    /// (process-wide figures, peak RSS and baseline, are copied from the
    /// engine's whole run).
    pub sums: Vec<EngineSummary>,
    /// Per-schema TTFM ratio of the first other engine to `llguidance`:
    /// (engine, ratio summary, share of schemas slower, schemas > 2×
    /// slower), when `llguidance` ran.
    pub ratio: Option<(String, Summary, f64, usize)>,
    /// The slowest schemas of that engine by TTFM: (file, its TTFM,
    /// llguidance's TTFM), µs.
    pub slowest: Vec<(String, f64, f64)>,
}

fn compiled(r: &SchemaResult) -> bool {
    matches!(r.status, Status::Pass | Status::Fail)
}

/// [`CommonSet`] of a run: `per_engine[i]` are the results of `sums[i]`.
pub fn common_set(sums: &[EngineSummary], per_engine: &[Vec<SchemaResult>]) -> CommonSet {
    use std::collections::{BTreeSet, HashMap};
    let sets: Vec<BTreeSet<usize>> = per_engine
        .iter()
        .map(|rs| rs.iter().filter(|r| compiled(r)).map(|r| r.index).collect())
        .collect();
    let common: BTreeSet<usize> = match sets.split_first() {
        Some((first, rest)) => first
            .iter()
            .copied()
            .filter(|i| rest.iter().all(|s| s.contains(i)))
            .collect(),
        None => BTreeSet::new(),
    };
    let out: Vec<EngineSummary> = sums
        .iter()
        .zip(per_engine)
        .map(|(whole, rs)| {
            let kept: Vec<SchemaResult> = rs
                .iter()
                .filter(|r| common.contains(&r.index))
                .cloned()
                .collect();
            let mut s = summarize(&whole.engine, &kept);
            s.vmhwm_kib = whole.vmhwm_kib;
            s.baseline_rss_kib = whole.baseline_rss_kib;
            s.baseline_heap_bytes = whole.baseline_heap_bytes;
            s.engine_build_ms = whole.engine_build_ms;
            s.wall_s = whole.wall_s;
            s
        })
        .collect();
    let base = sums.iter().position(|s| s.engine == "llguidance");
    let other = sums.iter().position(|s| s.engine != "llguidance");
    let (mut ratio, mut slowest) = (None, Vec::new());
    if let (Some(b), Some(o)) = (base, other) {
        let ttfm = |rs: &[SchemaResult]| -> HashMap<usize, (String, f64)> {
            rs.iter()
                .filter(|r| common.contains(&r.index))
                .filter_map(|r| r.ttfm_us.map(|t| (r.index, (r.file.clone(), t))))
                .collect()
        };
        let (tb, to) = (ttfm(&per_engine[b]), ttfm(&per_engine[o]));
        let mut pairs: Vec<(String, f64, f64)> = to
            .iter()
            .filter_map(|(i, (f, t))| tb.get(i).map(|(_, u)| (f.clone(), *t, *u)))
            .collect();
        let ratios: Vec<f64> = pairs
            .iter()
            .filter(|p| p.2 > 0.0)
            .map(|p| p.1 / p.2)
            .collect();
        if !ratios.is_empty() {
            let slower = ratios.iter().filter(|&&r| r > 1.0).count() as f64 / ratios.len() as f64;
            let over2 = ratios.iter().filter(|&&r| r > 2.0).count();
            ratio = Some((sums[o].engine.clone(), Summary::of(&ratios), slower, over2));
        }
        pairs.sort_by(|x, y| y.1.total_cmp(&x.1));
        pairs.truncate(10);
        slowest = pairs;
    }
    CommonSet {
        schemas: common.len(),
        sums: out,
        ratio,
        slowest,
    }
}

/// The [`CommonSet`] as Markdown: the side-by-side table, the per-schema
/// ratio and the slowest schemas.
pub fn markdown_common(c: &CommonSet) -> String {
    let mut md = format!(
        "\n### Over the {} schemas every engine compiles\n\n\
         Percentiles over the same schemas for every engine (peak RSS and the \
         baseline are the whole run's).\n\n",
        c.schemas
    );
    md.push_str(&markdown_table(&c.sums));
    if let Some((engine, r, slower, over2)) = &c.ratio {
        md.push_str(&format!(
            "\nPer-schema TTFM ratio {engine} / llguidance: p25 {:.2}, p50 {:.2}, p75 {:.2}, \
             p90 {:.2}, p99 {:.2}, max {:.2}, mean {:.2}; {:.0}% of schemas slower, \
             {over2} more than 2× slower.\n",
            r.p25,
            r.p50,
            r.p75,
            r.p90,
            r.p99,
            r.max,
            r.mean,
            100.0 * slower
        ));
    }
    if !c.slowest.is_empty() {
        md.push_str("\n| slowest by TTFM | TTFM | llguidance |\n|---|---:|---:|\n");
        for (f, t, u) in &c.slowest {
            let name = std::path::Path::new(f)
                .file_name()
                .map_or(f.clone(), |n| n.to_string_lossy().into_owned());
            md.push_str(&format!("| `{name}` | {} | {} |\n", fmt_us(*t), fmt_us(*u)));
        }
    }
    md
}
