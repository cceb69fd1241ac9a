#!/usr/bin/env python3
"""Per-call cost of zapspec's ``fill_next_token_bitmask`` seen from Python.

Walks the valid instances of a MaskBench sample token by token and times
every ``GrammarMatcher.fill_next_token_bitmask(bm)`` call with
``time.perf_counter_ns``, and at the same warm states the Rust call itself
(``Constraint::fill_mask``) and the package's row fill, timed inside Rust
(``GrammarMatcher._time_fills``):

* **cold**: the first pass, on freshly compiled grammars (masks computed by
  the engine, except where an earlier instance of the same schema already
  reached the same state);
* **warm**: a second pass over the same walks with new matchers on the same
  compiled grammars (masks from the grammar's state cache: the p50 case of
  decoding);
* **warm, torch**: the warm pass into a CPU ``torch.int32`` tensor instead of
  a numpy array (``--torch``);
* baselines at the same positions: the timer alone, an empty Python function,
  ``m.is_accepting()`` (a no-op pyo3 method: the binding's floor), and
  numpy's ``bm.fill(-1)`` on the same bitmask (writing the row once);
* **batch**: ``zapspec.batch_fill_next_token_bitmask`` on ``--batch`` (64)
  matchers, each advanced along a different instance (restarting at its end),
  with ``max_threads=1`` and ``2``, beside a Python loop of
  ``fill_next_token_bitmask(bm2d, i)`` over the same matchers at the same
  state; warm (an untimed fill first at every step), order rotated per step.

Usage (from the repository root, in /work/venv)::

    python examples/python/overhead.py
    python examples/python/overhead.py --every 50 --tokenizers o200k,smollm2 --batch 64 --batch-steps 300

Writes ``<out>/<name>.md`` and ``<name>.json`` (default
``examples/results/python/overhead.*``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import shlex
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from maskbench import REPO, SMOLLM2_GGUF, compact, list_files, reorder, zapspec_build  # noqa: E402

import zapspec  # noqa: E402


def make_info(kind: str) -> "zapspec.TokenizerInfo":
    if kind == "o200k":
        return zapspec.TokenizerInfo.from_tiktoken("o200k_base")
    if kind == "smollm2":
        return zapspec.TokenizerInfo.from_gguf(os.path.join(REPO, SMOLLM2_GGUF))
    raise ValueError(kind)


def compile_schema(compiler, schema_text: str):
    return compiler.compile_json_schema(schema_text, any_whitespace=False, separators=(",", ":"), strict_mode=False, one_of="require_disjoint")


def accepted(compiled, toks: List[int], stop: int) -> bool:
    m = zapspec.GrammarMatcher(compiled)
    return all(m.accept_token(t) for t in toks) and m.accept_token(stop)


def collect_walks(args, info, kind: str) -> List[Dict[str, Any]]:
    """(schema, tokens) of every valid instance that zapspec accepts (file
    key order, else reordered to the schema's order), over the sample."""
    compiler = zapspec.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    stop = info.stop_token_ids[0]
    walks = []
    for f in list_files(args.data, args.every, args.limit):
        d = json.load(open(os.path.join(args.data, f), encoding="utf-8"))
        schema = d.get("schema", {})
        text = json.dumps(schema, ensure_ascii=False)
        try:
            cg = compile_schema(compiler, text)
        except zapspec.ZapspecError:
            continue
        for t in d.get("tests", []):
            if not t.get("valid", True):
                continue
            for s in (compact(t["data"]), compact(reorder(t["data"], schema, schema)),
                      compact(reorder(t["data"], schema, schema, branches_first=True))):
                toks = list(info.encode(s))
                if accepted(cg, toks, stop):
                    walks.append({"file": f, "schema_text": text, "toks": toks})
                    break
    return walks


def dist(ns: List[int]) -> Dict[str, float]:
    a = np.asarray(ns, dtype=np.float64) / 1000.0
    if not len(a):
        return {"n": 0}
    return {"n": int(len(a)), "p50": float(np.percentile(a, 50)), "p90": float(np.percentile(a, 90)),
            "p99": float(np.percentile(a, 99)), "max": float(a.max()), "mean": float(a.mean())}


RUST_ENGINE = "Rust: EarleyMatcher::fill_mask into a TokenSet (the Rust call, timed in Rust)"
RUST_ENGINE_FIRST = "Rust: EarleyMatcher::fill_mask, timed just before the Python call (the mask cold in the CPU caches)"
RUST_PACKAGE = "Rust: the package's bitmask-row fill, no Python (timed in Rust)"


def timed_pass(walks, compiled: Dict[str, Any], bm, extra: Dict[str, Callable] | None = None) -> Dict[str, List[int]]:
    """One pass over the walks with new matchers; times fill at every
    position (and the `extra` baselines at the same positions)."""
    pc = time.perf_counter_ns
    out: Dict[str, List[int]] = {"fill": []}
    for k in extra or {}:
        out[k] = []
    if extra:
        out["timer alone (perf_counter_ns pair)"] = []
    gc.disable()
    try:
        for w in walks:
            m = zapspec.GrammarMatcher(compiled[w["file"]])
            for i in range(len(w["toks"]) + 1):
                if extra:
                    # the engine's call first, so that it (not the Python
                    # call) meets the state's mask cold in the CPU caches
                    engine, _ = m._time_fills(1)
                    out.setdefault(RUST_ENGINE_FIRST, []).append(engine[0])
                t0 = pc()
                m.fill_next_token_bitmask(bm)
                t1 = pc()
                out["fill"].append(t1 - t0)
                if extra:
                    t0 = pc()
                    t1 = pc()
                    out["timer alone (perf_counter_ns pair)"].append(t1 - t0)
                for k, fn in (extra or {}).items():
                    t0 = pc()
                    fn(m)
                    t1 = pc()
                    out[k].append(t1 - t0)
                if extra:
                    # the same state's fill timed inside Rust: the engine's
                    # own `Constraint::fill_mask` (the Rust call) and the
                    # package's row fill without Python
                    engine, package = m._time_fills(1)
                    out.setdefault(RUST_ENGINE, []).append(engine[0])
                    out.setdefault(RUST_PACKAGE, []).append(package[0])
                if i < len(w["toks"]):
                    m.accept_token(w["toks"][i])
    finally:
        gc.enable()
    return out


def profile_fill(walks, compiled, bm, calls: int = 2000) -> List[Dict[str, Any]]:
    """Python-level functions that run inside `fill_next_token_bitmask`
    (cProfile over `calls` warm fills at one position): what the binding
    calls back into Python for, per fill."""
    import cProfile
    import pstats

    w = max(walks, key=lambda w: len(w["toks"]))
    m = zapspec.GrammarMatcher(compiled[w["file"]])
    for t in w["toks"][: len(w["toks"]) // 2]:
        m.accept_token(t)
    m.fill_next_token_bitmask(bm)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        m.fill_next_token_bitmask(bm)
    prof.disable()
    st = pstats.Stats(prof)
    rows = []
    for (fname, line, func), (cc, nc, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        if "disable" in func:
            continue
        rows.append({"function": f"{os.path.basename(fname)}:{line}({func})" if line else func,
                     "calls_per_fill": nc / calls, "own_us_per_fill_under_profiler": tt / calls * 1e6,
                     "cum_us_per_fill_under_profiler": ct / calls * 1e6})
    rows.sort(key=lambda r: -r["cum_us_per_fill_under_profiler"])
    return rows[:12]


def batch_bench(args, walks, compiled, info) -> Dict[str, Any]:
    """64 matchers at different positions; per step: untimed warm-up fill,
    then batch(max_threads=1), batch(max_threads=2), a Python loop, in an
    order rotated per step; then every matcher accepts its next token."""
    rng = random.Random(args.seed)
    n = args.batch
    picks = list(range(len(walks)))
    rng.shuffle(picks)
    picks = (picks * (n // max(1, len(picks)) + 1))[:n]
    ms, pos = [], []
    for j, wi in enumerate(picks):
        m = zapspec.GrammarMatcher(compiled[walks[wi]["file"]])
        # start each at a different place along its instance
        p = rng.randrange(len(walks[wi]["toks"]) + 1)
        for t in walks[wi]["toks"][:p]:
            m.accept_token(t)
        ms.append(m)
        pos.append(p)
    bm2 = zapspec.allocate_token_bitmask(n, info.vocab_size, framework="numpy")
    idx = list(range(n))
    pc = time.perf_counter_ns

    def b1():
        zapspec.batch_fill_next_token_bitmask(ms, bm2, max_threads=1)

    def b2():
        zapspec.batch_fill_next_token_bitmask(ms, bm2, max_threads=2)

    def bauto():
        zapspec.batch_fill_next_token_bitmask(ms, bm2)

    def loop():
        for i in idx:
            ms[i].fill_next_token_bitmask(bm2, i)

    # the 2-thread pool last: its idle workers spin for a while after a
    # call and take the second core from whatever runs next
    variants = [("batch, max_threads=1", b1), ("batch, max_threads=None (caller first, pool after 100 µs)", bauto),
                ("Python loop of fill", loop), ("batch, max_threads=2", b2)]
    res: Dict[str, List[int]] = {k: [] for k, _ in variants}
    check = zapspec.allocate_token_bitmask(n, info.vocab_size, framework="numpy")
    mismatches = 0
    gc.disable()
    try:
        for step in range(args.batch_steps):
            loop()  # warm-up: masks of this state computed and cached
            np.copyto(check, bm2)
            order = variants[step % 3:] + variants[: step % 3]
            for k, fn in order:
                t0 = pc()
                fn()
                t1 = pc()
                res[k].append(t1 - t0)
                if not np.array_equal(check, bm2):
                    mismatches += 1
            for i, m in enumerate(ms):
                w = walks[picks[i]]["toks"]
                if pos[i] >= len(w):
                    m.reset()
                    pos[i] = 0
                else:
                    m.accept_token(w[pos[i]])
                    pos[i] += 1
    finally:
        gc.enable()
    return {"per_call": {k: dist(v) for k, v in res.items()}, "rows_differing_from_loop": mismatches,
            "distinct_instances": len(set(picks)), "steps": args.batch_steps}


def run_tokenizer(args, kind: str) -> Dict[str, Any]:
    t0 = time.perf_counter()
    info = make_info(kind)
    walks = collect_walks(args, info, kind)
    prep_s = time.perf_counter() - t0
    compiler = zapspec.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    bm = zapspec.allocate_token_bitmask(1, info.vocab_size, framework="numpy")
    compiled = {}
    for w in walks:
        if w["file"] not in compiled:
            compiled[w["file"]] = compile_schema(compiler, w["schema_text"])
    cold = timed_pass(walks, compiled, bm)["fill"]

    def noop(_m):
        return None

    extra = {
        "lambda returning None": lambda _m: None,
        "empty Python function call": noop,
        "m.is_accepting() (no-op pyo3 call)": lambda m: m.is_accepting(),
        "numpy bm.fill(-1)": lambda _m: bm.fill(-1),
        "numpy str(bm.dtype)": lambda _m: str(bm.dtype),
        "batch_fill_next_token_bitmask([m], bm, max_threads=1)": lambda m: zapspec.batch_fill_next_token_bitmask([m], bm, max_threads=1),
    }
    warm_runs = timed_pass(walks, compiled, bm, extra)
    out = {"tokenizer": kind, "vocab_size": info.vocab_size, "bitmask_words": int(bm.shape[1]),
           "walks": len(walks), "schemas": len(compiled), "prep_s": prep_s,
           "calls": {"fill, cold (first pass)": dist(cold), "fill, warm (second pass)": dist(warm_runs["fill"])}}
    out["calls"]["timer alone (perf_counter_ns pair)"] = dist(warm_runs["timer alone (perf_counter_ns pair)"])
    out["calls"][RUST_ENGINE] = dist(warm_runs[RUST_ENGINE])
    out["calls"][RUST_PACKAGE] = dist(warm_runs[RUST_PACKAGE])
    out["calls"][RUST_ENGINE_FIRST] = dist(warm_runs[RUST_ENGINE_FIRST])
    out["python_over_rust_first"] = dist(warm_runs["fill"])["p50"] / dist(warm_runs[RUST_ENGINE_FIRST])["p50"]
    ratio = np.asarray(warm_runs["fill"], dtype=np.float64) / np.maximum(np.asarray(warm_runs[RUST_ENGINE], dtype=np.float64), 1.0)
    out["python_over_rust"] = {q: float(np.percentile(ratio, q)) for q in (50, 90, 99)}
    out["python_over_rust"]["p50_ratio_of_p50s"] = dist(warm_runs["fill"])["p50"] / dist(warm_runs[RUST_ENGINE])["p50"]
    out["python_over_rust"]["p99_ratio_of_p99s"] = dist(warm_runs["fill"])["p99"] / dist(warm_runs[RUST_ENGINE])["p99"]
    for k in extra:
        out["calls"][k if k == "lambda returning None" else k + " [via lambda]"] = dist(warm_runs[k])
    out["python_calls_inside_fill"] = profile_fill(walks, compiled, bm)
    if args.torch:
        import torch

        bt = zapspec.allocate_token_bitmask(1, info.vocab_size, framework="torch")
        assert isinstance(bt, torch.Tensor)
        out["calls"]["fill, warm, torch CPU tensor"] = dist(timed_pass(walks, compiled, bt)["fill"])
    out["batch"] = batch_bench(args, walks, compiled, info)
    return out


def fmt(v: float) -> str:
    if v != v:
        return "–"
    return f"{v / 1000:.3g} ms" if v >= 1000 else f"{v:.3g} µs"


def write_md(args, cmd: str, results: List[Dict[str, Any]], meta: Dict[str, Any]) -> str:
    L = ["# zapspec from Python: per-call cost of `fill_next_token_bitmask`\n", f"Command: `{cmd}`\n"]
    L.append(f"Machine: {meta['cpu']}, {meta['cores']} cores, shared with other jobs (load average {meta['load_before']} "
             f"before, {meta['load_after']} after), Python {meta['python']}, numpy {meta['numpy']}, zapspec "
             f"{meta['zapspec']} (`{meta['zapspec_build']}`). `time.perf_counter_ns` around each call, GC disabled during the passes. Sample: the "
             f"valid instances of every {args.every}th MaskBench file (`{args.data}`) that zapspec accepts (file key "
             "order, else keys reordered to the schema's order), one mask per token plus the final one.\n")
    L.append("The fill rows call the bound method directly between the two timer reads; the \"via lambda\" "
             "baselines are called through a one-line lambda, so their floor is the \"lambda returning None\" row, and "
             "every row includes the timer pair's own cost (the \"timer alone\" row).\n")
    for r in results:
        L.append(f"## {r['tokenizer']} (vocab_size {r['vocab_size']}, {r['bitmask_words']} int32 words per row)\n")
        c = r["calls"]
        L.append(f"{r['walks']} walks over {r['schemas']} schemas. Warm `fill_next_token_bitmask` p50 "
                 f"{fmt(c['fill, warm (second pass)']['p50'])} against {fmt(c['m.is_accepting() (no-op pyo3 call) [via lambda]']['p50'])} "
                 f"for a no-op pyo3 method and {fmt(c['numpy str(bm.dtype) [via lambda]']['p50'])} for numpy's "
                 f"`str(bm.dtype)`"
                 + (" (which the binding runs once per fill: see the cProfile table)"
                    if any("_dtype.py" in x["function"] and "__str__" in x["function"] for x in r["python_calls_inside_fill"])
                    else " (not called inside fill: see the cProfile table)")
                 + "; a batch call fills "
                 f"a row for {fmt(r['batch']['per_call']['batch, max_threads=1']['mean'] / args.batch)} on average "
                 f"(max_threads=1).\n")
        q = r["python_over_rust"]
        L.append(f"**Python over the Rust call** (same states, warm). At every state the engine's call is timed in "
                 "Rust first (it meets the state's mask cold in the CPU caches), then the Python call, then the "
                 "engine's call again: the Python call and the second Rust call both find the mask warm. Python / "
                 f"Rust (both warm): p50 / p50 = {q['p50_ratio_of_p50s']:.2f}×, p99 / p99 = {q['p99_ratio_of_p99s']:.2f}×; "
                 f"per state, the ratio's p50 / p90 / p99 = {q[50]:.2f}× / {q[90]:.2f}× / {q[99]:.2f}×. The first "
                 "(cold) Rust call costs more than the warm Python call (Python / cold Rust p50 = "
                 f"{r['python_over_rust_first']:.2f}×): whichever call meets a state first pays the cache misses "
                 "(the state-cache lookup and the mask's |V|/8 bytes), which in serving is every call, since a model "
                 "forward runs between two fills of a sequence. Python times include the timer pair; Rust times are "
                 "`Instant::now` inside Rust.\n")
        L.append("| call | n | p50 | p90 | p99 | max | mean |")
        L.append("|---|---:|---:|---:|---:|---:|---:|")
        for k, d in r["calls"].items():
            L.append(f"| {k} | {d['n']} | {fmt(d['p50'])} | {fmt(d['p90'])} | {fmt(d['p99'])} | {fmt(d['max'])} | {fmt(d['mean'])} |")
        pf = [x for x in r["python_calls_inside_fill"] if "fill_next_token_bitmask" not in x["function"]]
        if pf:
            L.append("\nPython functions run inside one `fill_next_token_bitmask` call (cProfile over 2,000 warm fills "
                     "at one position; times inflated by the profiler):\n")
            L.append("| function | calls per fill | cumulative µs per fill (profiled) |")
            L.append("|---|---:|---:|")
            for x in pf[:8]:
                L.append(f"| `{x['function']}` | {x['calls_per_fill']:.2g} | {x['cum_us_per_fill_under_profiler']:.2f} |")
        b = r["batch"]
        L.append(f"\nBatch of {args.batch} matchers ({b['distinct_instances']} distinct instances), {b['steps']} steps, "
                 f"warm; per call (one call fills all {args.batch} rows); rows different from the loop's: "
                 f"{b['rows_differing_from_loop']}.\n")
        L.append("| call | n | p50 | p90 | p99 | max | mean | mean per row |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for k, d in b["per_call"].items():
            L.append(f"| {k} | {d['n']} | {fmt(d['p50'])} | {fmt(d['p90'])} | {fmt(d['p99'])} | {fmt(d['max'])} | "
                     f"{fmt(d['mean'])} | {fmt(d['mean'] / args.batch)} |")
        L.append("")
    L.append("")
    return "\n".join(L)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=os.path.join(REPO, "..", "shared", "data", "maskbench"))
    p.add_argument("--every", type=int, default=50)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--tokenizers", default="o200k,smollm2")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--batch-steps", type=int, default=300)
    p.add_argument("--torch", action=argparse.BooleanOptionalAction, default=True, help="also time a torch CPU bitmask")
    p.add_argument("--seed", type=int, default=0, help="batch: which walks and starting positions")
    p.add_argument("--out", default=os.path.join(REPO, "examples/results/python"))
    p.add_argument("--name", default="overhead")
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    random.seed(args.seed)
    cmd = "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(os.path.abspath(__file__), REPO)] + (sys.argv[1:] if argv is None else argv))
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    meta = {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
            "zapspec": zapspec.__version__, "zapspec_build": zapspec_build(), "load_before": ", ".join(f"{x:.2f}" for x in os.getloadavg()),
            "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    results = []
    for kind in [k.strip() for k in args.tokenizers.split(",") if k.strip()]:
        print(f"{kind} ...", file=sys.stderr, flush=True)
        results.append(run_tokenizer(args, kind))
    meta["load_after"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    os.makedirs(args.out, exist_ok=True)
    md = write_md(args, cmd, results, meta)
    with open(os.path.join(args.out, args.name + ".md"), "w", encoding="utf-8") as fh:
        fh.write(md)
    with open(os.path.join(args.out, args.name + ".json"), "w", encoding="utf-8") as fh:
        json.dump({"command": cmd, "args": vars(args), "meta": meta, "results": results}, fh, indent=1)
    print(md)


if __name__ == "__main__":
    main()
