"""The slowest 1% of a MaskBench run by zapspec's time to first mask,
with where each millisecond went, beside llguidance's TTFM on the same
file. Reads the per-schema JSONL files `maskbench` writes
(`<out>/zapspec.schemas.jsonl`, `<out>/llguidance.schemas.jsonl`).

    python examples/python/maskbench_slowest.py RUN_DIR [--label NAME] [--top 0.01]

Columns: TTFM; the schema → grammar step (`ttfm_schema_us`); terminal
automata built during the compile (`ttfm_automata_us`); the rest of the
engine's compile (TTFM − schema step − automata − first mask; the index
work of the compile); the first mask (matcher start + mask); grammar
rules are not in the JSONL. Standard library only.
"""

import argparse
import json
import math
import pathlib


def load(path):
    out = {}
    if not path.exists():
        return out
    for line in path.open():
        r = json.loads(line)
        if r.get("kind") == "schema":
            res = r["result"]
            out[pathlib.Path(res["file"]).name] = res
    return out


def ms(us):
    return "—" if us is None else f"{us / 1000:.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--label", default=None)
    ap.add_argument("--top", type=float, default=0.01)
    a = ap.parse_args()
    run = pathlib.Path(a.run)
    z = load(run / "zapspec.schemas.jsonl")
    g = load(run / "llguidance.schemas.jsonl")
    done = [(k, r) for k, r in z.items() if r.get("ttfm_us")]
    done.sort(key=lambda kr: -kr[1]["ttfm_us"])
    n = max(1, math.ceil(len(done) * a.top))
    print(f"### {a.label or run.name}: slowest {n} of {len(done)} by zapspec TTFM (ms)\n")
    print("| schema | TTFM | schema → grammar | automata | rest of compile | first mask | llguidance TTFM |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    tot = [0.0] * 5
    for k, r in done[:n]:
        t = r["ttfm_us"]
        s = r.get("ttfm_schema_us") or 0.0
        au = r.get("ttfm_automata_us") or 0.0
        fm = r.get("ttfm_first_mask_us") or 0.0
        rest = max(0.0, t - s - au - fm)
        for i, x in enumerate([t, s, au, rest, fm]):
            tot[i] += x
        gl = g.get(k, {}).get("ttfm_us")
        gs = ms(gl) if gl else g.get(k, {}).get("status", "—").replace("_", " ")
        print(f"| `{k[:-5]}` | {ms(t)} | {ms(s)} | {ms(au)} | {ms(rest)} | {ms(fm)} | {gs} |")
    print(
        f"| **sum** | {ms(tot[0])} | {ms(tot[1])} ({100 * tot[1] / tot[0]:.0f}%) | {ms(tot[2])} ({100 * tot[2] / tot[0]:.0f}%) "
        f"| {ms(tot[3])} ({100 * tot[3] / tot[0]:.0f}%) | {ms(tot[4])} ({100 * tot[4] / tot[0]:.0f}%) | |"
    )


if __name__ == "__main__":
    main()
