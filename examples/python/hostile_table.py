"""The hostile-input table from a MaskBench run: per input and engine, the
result, the time to first mask and the live-heap peak of the compile.

Reads ``<engine>.schemas.jsonl`` of a ``maskbench`` run over the files of
``hostile_schemas.py`` (see there for the commands) and writes
``hostile.md`` and ``hostile.json`` into ``--out`` (default: the run's
folder). The heap figure is the counting allocator's peak while the schema
was compiled and its first mask computed, minus the live heap before it
(``heap.peak - heap.before``): the input's own working memory, whichever
engine allocated it, since both engines link into the one binary.

    python examples/python/hostile_table.py /tmp/hostile-run --out examples/results/hostile-compile

Standard library only.
"""

import argparse
import json
import os


def load(run, engine):
    # the binary writes `zapspec:variant` as `zapspec_variant`
    path = os.path.join(run, f"{engine.replace(':', '_')}.schemas.jsonl")
    rows = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") == "schema":
                r = r["result"]
                rows[os.path.basename(r["file"])] = r
    return rows


def mib(b):
    return f"{b / 2**20:.1f} MiB"


def ms(us):
    if us is None:
        return "—"
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    return f"{us / 1e3:.1f} ms"


def cell(r):
    """Result, time and heap peak of one row, for the table and the JSON."""
    if r is None:
        return {"status": "absent", "ttfm_us": None, "refused_us": None, "heap_peak_bytes": None, "error": None}
    h = r.get("heap") or {}
    peak = h["peak"] - h["before"] if "peak" in h and "before" in h else None
    return {
        "status": r["status"],
        "ttfm_us": r.get("ttfm_us"),
        "refused_us": r.get("refused_us"),
        "heap_peak_bytes": peak,
        "error": r.get("error_category") or r.get("error"),
    }


def result_text(c):
    if c["status"] in ("pass", "fail"):
        return "compiled" if c["status"] == "pass" else "compiled (instance mismatch)"
    err = (c["error"] or c["status"]).replace("|", "\\|").replace("\n", " ")
    if len(err) > 70:
        err = err[:67] + "…"
    return f"refused: {err}" if c["status"] == "compile_error" else f"{c['status']}: {err}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="the maskbench --out folder")
    ap.add_argument("--engines", default="zapspec,llguidance")
    ap.add_argument("--out", help="where to write hostile.md / hostile.json (default: RUN)")
    a = ap.parse_args()
    engines = a.engines.split(",")
    data = {e: load(a.run, e) for e in engines}
    names = sorted(set().union(*[set(d) for d in data.values()]))
    table = []
    for n in names:
        table.append({"input": n, **{e: cell(data[e].get(n)) for e in engines}})
    out = a.out or a.run
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "hostile.json"), "w") as f:
        json.dump(table, f, indent=1)
    lines = [
        "| input | " + " | ".join(f"{e} result | {e} TTFM | {e} heap peak" for e in engines) + " |",
        "|---|" + "---|---|---|" * len(engines),
    ]
    for row in table:
        cells = []
        for e in engines:
            c = row[e]
            cells += [
                result_text(c),
                ms(c["ttfm_us"] if c["ttfm_us"] is not None else c["refused_us"]),
                mib(c["heap_peak_bytes"]) if c["heap_peak_bytes"] is not None else "—",
            ]
        lines.append(f"| {row['input'].removesuffix('.json')} | " + " | ".join(cells) + " |")
    with open(os.path.join(out, "hostile.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
