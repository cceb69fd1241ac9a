"""Tool calling beside xgrammar and llguidance, in one run: compile time of
one structural tag over 10, 50, 100 and 500 tools (cold: tools no compiler
has seen; warm: the same tools again under another tool_choice), memory
per compiled tag, and the time per mask in free text and inside a call.

Tools are MaskBench's Glaiveai2K function-parameter schemas (names from the
file names), in the Hermes/Qwen ``<tool_call>`` format
(``get_model_structural_tag("qwen_3", ...)`` on zapspec and xgrammar;
llguidance's own tool grammar, ``llguidance.StructTag.to_grammar``, with
the same begin and end strings). Each engine runs in its own process, so
that its peak RSS is its own.

    python bench.py --tokenizer DIR --data ../shared/data/maskbench --seed 0 \
        --out examples/results/tools

writes ``compile.{md,json}`` and ``masks.{md,json}``.
"""

import argparse
import glob
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import time

COUNTS = [10, 50, 100, 500]
CALL_BEGIN = '<tool_call>\n{"name": "{name}", "arguments": '
CALL_END = "}\n</tool_call>"


def load_tools(data, seed):
    """(name, schema, a valid instance) of every Glaive file, shuffled with
    ``seed``; duplicate names get a suffix."""
    out, seen = [], {}
    for f in sorted(glob.glob(os.path.join(data, "Glaiveai2K---*.json"))):
        d = json.load(open(f))
        base = re.sub(r"_[0-9a-f]{8}$", "", os.path.basename(f)[len("Glaiveai2K---"):-5])
        k = seen.get(base, 0)
        seen[base] = k + 1
        name = base if k == 0 else f"{base}_{k}"
        valid = [t["data"] for t in d.get("tests", []) if t.get("valid")]
        out.append((name, d["schema"], valid[0] if valid else None))
    random.Random(seed).shuffle(out)
    return out


def compilable(tools):
    """The tools whose schema each engine compiles alone (vocabulary-free
    checks), so that no engine is charged for a schema another refuses."""
    import warnings

    import llguidance
    import xgrammar
    import zapspec

    keep = []
    for t in tools:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                zapspec.Grammar.from_json_schema(t[1])
            xgrammar.Grammar.from_json_schema(json.dumps(t[1]))
            is_error, _ = llguidance.LLMatcher.validate_grammar_with_warnings(
                llguidance.grammar_from("json_schema", json.dumps(t[1]))
            )
            if not is_error:
                keep.append(t)
        except Exception:
            pass
    return keep


def tool_dicts(tools):
    return [{"type": "function", "function": {"name": n, "parameters": s}} for n, s, _ in tools]


def pct(xs):
    xs = sorted(xs)
    if not xs:
        return {}
    q = lambda p: xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))]
    return {"n": len(xs), "p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "max": xs[-1], "mean": statistics.fmean(xs)}


class Zapspec:
    name = "zapspec"

    def __init__(self, tok_dir):
        import zapspec
        from transformers import AutoTokenizer

        self.z = zapspec
        from zapspec.builtin_structural_tag import get_model_structural_tag

        self.stag = get_model_structural_tag
        self.info = zapspec.TokenizerInfo.from_huggingface(AutoTokenizer.from_pretrained(tok_dir))
        self.compiler = zapspec.GrammarCompiler(self.info)
        self.warm()

    def warm(self):
        # the first bitmask allocation imports torch (~170 ms from a cold
        # disk): done here, outside every timed call, for each engine
        self.z.allocate_token_bitmask(1, self.info.vocab_size)

    def compile(self, tools, choice):
        tag = self.stag("qwen_3", tool_dicts(tools), tool_choice=choice, reasoning="disabled")
        t0 = time.perf_counter()
        g = self.compiler.compile_structural_tag(tag)
        t1 = time.perf_counter()
        m = self.z.GrammarMatcher(g)
        bm = self.z.allocate_token_bitmask(1, self.info.vocab_size)
        m.fill_next_token_bitmask(bm)
        t2 = time.perf_counter()
        return g, m, bm, t1 - t0, t2 - t0, g.memory_size_bytes

    def step(self, m, bm, token):
        assert m.accept_token(token)
        t0 = time.perf_counter()
        m.fill_next_token_bitmask(bm)
        return time.perf_counter() - t0


class Xgrammar(Zapspec):
    name = "xgrammar"

    def __init__(self, tok_dir):
        import xgrammar
        from transformers import AutoTokenizer
        from xgrammar.builtin_structural_tag import get_model_structural_tag

        self.z = xgrammar
        self.stag = get_model_structural_tag
        self.info = xgrammar.TokenizerInfo.from_huggingface(AutoTokenizer.from_pretrained(tok_dir))
        self.compiler = xgrammar.GrammarCompiler(self.info, max_threads=1)
        self.warm()


class Llguidance:
    name = "llguidance"

    def __init__(self, tok_dir):
        import llguidance
        import llguidance.hf
        import llguidance.numpy
        from transformers import AutoTokenizer

        self.ll = llguidance
        self.np = llguidance.numpy
        self.tok = llguidance.hf.from_tokenizer(AutoTokenizer.from_pretrained(tok_dir))
        self.vocab = self.tok.vocab_size
        self.np.allocate_token_bitmask(1, self.vocab)  # as Zapspec.warm

    def compile(self, tools, choice):
        # llguidance's tool grammar has no tool_choice: "warm" compiles the
        # same grammar again
        tags = [
            self.ll.StructTag(trigger="<tool_call>", begin=CALL_BEGIN.replace("{name}", n), grammar=s, end=CALL_END)
            for n, s, _ in tools
        ]
        grammar = self.ll.StructTag.to_grammar(tags, assume_special=False)
        t0 = time.perf_counter()
        m = self.ll.LLMatcher(self.tok, grammar)
        t1 = time.perf_counter()
        if m.is_error():
            raise RuntimeError(m.get_error())
        bm = self.np.allocate_token_bitmask(1, self.vocab)
        self.np.fill_next_token_bitmask(m, bm, 0)
        t2 = time.perf_counter()
        return m, m, bm, t1 - t0, t2 - t0, None

    def step(self, m, bm, token):
        assert m.consume_token(token), m.get_error()
        t0 = time.perf_counter()
        self.np.fill_next_token_bitmask(m, bm, 0)
        return time.perf_counter() - t0


ENGINES = {"zapspec": Zapspec, "xgrammar": Xgrammar, "llguidance": Llguidance}


def run_engine(a):
    from transformers import AutoTokenizer

    tools = json.load(open(a.tools))
    eng = ENGINES[a.engine](a.tokenizer)
    res = {"engine": a.engine, "compile": [], "masks": {}}
    start = 0
    for n in COUNTS:
        cold_tools = tools[start : start + n]  # never seen by this process
        start += n
        try:
            _, _, _, c, ttfm, mem = eng.compile(cold_tools, "auto")
            _, _, _, wc, wttfm, _ = eng.compile(cold_tools[::-1], "auto")
            res["compile"].append({"tools": n, "cold_s": c, "cold_ttfm_s": ttfm, "warm_s": wc, "warm_ttfm_s": wttfm, "bytes": mem})
        except Exception as e:  # an engine that refuses: recorded, not hidden
            res["compile"].append({"tools": n, "error": str(e)[:300]})
        print(f"{a.engine}: {n} tools done", file=sys.stderr)
    # masks: a fresh set of ten tools, a text with a call of each of three
    tok = AutoTokenizer.from_pretrained(a.tokenizer)
    mt = [t for t in tools[start:] if t[2] is not None][:10]
    text, spans = "I will look that up for you first. ", []
    for name, _, inst in mt[:3]:
        call = CALL_BEGIN.replace("{name}", name) + json.dumps(inst) + CALL_END
        spans.append((len(text), len(text) + len(call)))
        text += call + " Then some more words in between. "
    ids = tok.encode(text, add_special_tokens=False)
    res["masks"] = {"tokens": len(ids)}
    # the first request with these tools (caches cold), then a second
    # request (the same tools in another order: a new compiled grammar)
    for label, order in (("first", mt), ("second", mt[::-1])):
        free, inside = [], []
        g, m, bm, _, _, _ = eng.compile(order, "auto")
        pos = 0
        for t in ids:
            pos += len(tok.decode([t]))
            dt = eng.step(m, bm, t)
            (inside if any(a_ <= pos < b_ for a_, b_ in spans) else free).append(dt * 1e6)
        res["masks"][label] = {"free_text_us": pct(free), "in_call_us": pct(inside)}
    res["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    json.dump(res, sys.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", required=True, help="a Hugging Face tokenizer directory")
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "../../../../shared/data/maskbench"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--engine", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--tools", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.engine:
        return run_engine(a)
    import tempfile

    pool = load_tools(a.data, a.seed)
    tools = compilable(pool)
    print(f"{len(tools)} of {len(pool)} Glaive tools compile alone on every engine", file=sys.stderr)
    tf = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(tools, tf)
    tf.close()
    a.pool = (len(tools), len(pool))
    results = []
    for e in ENGINES:
        p = subprocess.run(
            [sys.executable, __file__, "--tokenizer", a.tokenizer, "--data", a.data, "--seed", str(a.seed),
             "--engine", e, "--tools", tf.name],
            capture_output=True, text=True,
        )
        if p.returncode != 0:
            results.append({"engine": e, "error": p.stderr[-500:]})
            print(p.stderr[-2000:], file=sys.stderr)
            continue
        results.append(json.loads(p.stdout))
    write(a, results)


def write(a, results):
    out = a.out or "."
    os.makedirs(out, exist_ok=True)
    meta = {"tokenizer": os.path.basename(a.tokenizer.rstrip("/")), "seed": a.seed, "counts": COUNTS,
            "tools_compilable": a.pool[0], "tools_in_pool": a.pool[1],
            "command": "python examples/python/tools/bench.py --tokenizer DIR --seed %d --out %s" % (a.seed, out)}
    json.dump({"meta": meta, "results": results}, open(os.path.join(out, "tools.json"), "w"), indent=1)
    L = [f"# Tool calling beside xgrammar and llguidance\n",
         f"One structural tag in the Hermes/Qwen `<tool_call>` format over N MaskBench Glaiveai2K tools ({a.pool[0]} of the {a.pool[1]} files compile alone on all three engines; only those are drawn); tokenizer {meta['tokenizer']}, seed {a.seed}, one process per engine, one thread. Command: `{meta['command']}`.\n",
         "## Compile (ms): cold = tools never seen; warm = the same tools again in reverse order (a new tag: compiled-grammar caches miss, per-tool caches may hit); TTFM = compile + first mask\n",
         "| engine | tools | cold | cold TTFM | warm | warm TTFM | compiled bytes |", "|---|---|---|---|---|---|---|"]
    for r in results:
        for c in r.get("compile", []):
            if "error" in c:
                L.append(f"| {r['engine']} | {c['tools']} | refused: {c['error'][:80]} | | | | |")
            else:
                b = c["bytes"]
                L.append(f"| {r['engine']} | {c['tools']} | {c['cold_s']*1e3:.1f} | {c['cold_ttfm_s']*1e3:.1f} | {c['warm_s']*1e3:.1f} | {c['warm_ttfm_s']*1e3:.1f} | {b if b is not None else 'n/a'} |")
    L += ["", "## Time per mask (µs), ten tools, a text with three calls; the first request with these tools, then a second (the same tools reordered)\n",
          "| engine | request | region | n | p50 | p90 | p99 | max | mean |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for req in ("first", "second"):
            for reg in ("free_text_us", "in_call_us"):
                d = r.get("masks", {}).get(req, {}).get(reg)
                if d:
                    L.append(f"| {r['engine']} | {req} | {reg[:-3].replace('_', ' ')} | {d['n']} | {d['p50']:.0f} | {d['p90']:.0f} | {d['p99']:.0f} | {d['max']:.0f} | {d['mean']:.0f} |")
    L += ["", "| engine | peak RSS (MiB) |", "|---|---|"]
    for r in results:
        L.append(f"| {r['engine']} | {r.get('peak_rss_mib', float('nan')):.0f} |" if "peak_rss_mib" in r else f"| {r['engine']} | failed: {r.get('error','')[:100]} |")
    open(os.path.join(out, "tools.md"), "w").write("\n".join(L) + "\n")
    print("\n".join(L))


if __name__ == "__main__":
    main()
