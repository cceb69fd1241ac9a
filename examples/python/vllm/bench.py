"""zapspec, xgrammar and guidance as vLLM's structured-output backend, on
the same requests through the same OpenAI-compatible server (one server
process per backend, started and stopped in turn; SmolLM2-135M-Instruct,
greedy, bf16).

Requests are chat completions with ``response_format: json_schema`` over
MaskBench schemas (a seeded sample of ``../shared/data/maskbench/`` and of
``../shared/data/maskbench-hard/``), kept only where every backend's
front end accepts the schema, so no backend is charged for a schema another
refuses. At 1, 4 and 16 concurrent requests it measures request throughput,
output tokens/s, time to first token and request latency (streamed; p50,
p90, p99, max, mean), and the share of outputs valid under their schema (the
``jsonschema`` package; outputs cut by ``max_tokens`` are counted apart).
Beside it, in this process, the time each library takes per request to
compile the schema and fill the first mask over the served vocabulary (the
work vLLM's compile thread does before a request's first step), as
distributions over the same schemas.

    python examples/python/vllm/bench.py --model models/smollm2-hf --seed 0 \\
        --out examples/results/vllm

writes ``vllm.md``, ``vllm.json`` and ``vllm.png``.
"""

import argparse
import glob
import json
import os
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))

from server import SERVED_NAME, serve, stream  # noqa: E402

BACKENDS = ["xgrammar", "guidance", "zapspec"]


def dist(xs):
    if not xs:
        return None
    xs = sorted(xs)

    def q(p):
        return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]

    return {
        "n": len(xs),
        "p50": q(0.5),
        "p90": q(0.9),
        "p99": q(0.99),
        "max": xs[-1],
        "mean": statistics.fmean(xs),
    }


def sample(data_dirs, n, seed):
    rng = random.Random(seed)
    out = []
    for d in data_dirs:
        files = sorted(glob.glob(os.path.join(d, "*.json")))
        if not files:
            raise SystemExit(f"no MaskBench files in {d}")
        rng.shuffle(files)
        picked = 0
        for f in files:
            if picked == n:
                break
            doc = json.load(open(f))
            schema = doc["schema"]
            if not isinstance(schema, dict) or len(json.dumps(schema)) > 12_000:
                continue  # the prompt carries the schema: keep it within the model's context
            out.append({"name": os.path.basename(d.rstrip("/")) + "/" + os.path.basename(f)[:-5], "schema": schema})
            picked += 1
    return out


def accepted_by_all(items, tokenizer):
    """vLLM's own front-end checks for each backend, on the request as the
    server builds it: ``validate_xgrammar_grammar`` (its list of features
    xgrammar mishandles, then ``Grammar.from_json_schema``),
    ``validate_guidance_grammar`` (llguidance's grammar validation over the
    served tokenizer) and zapspec's ``validate_request``."""
    from vllm.sampling_params import SamplingParams, StructuredOutputsParams
    from vllm.v1.structured_output.backend_guidance import validate_guidance_grammar
    from vllm.v1.structured_output.backend_xgrammar import validate_xgrammar_grammar

    from zapspec.contrib.vllm import validate_request

    checks = {
        "xgrammar": validate_xgrammar_grammar,
        "guidance": lambda sp: validate_guidance_grammar(sp, tokenizer=tokenizer),
        "zapspec": validate_request,
    }
    keep, refused = [], {b: 0 for b in BACKENDS}
    for it in items:
        ok = True
        for b, check in checks.items():
            sp = SamplingParams(structured_outputs=StructuredOutputsParams(json=it["schema"]))
            try:
                check(sp)
            except Exception:
                refused[b] += 1
                ok = False
        if ok:
            keep.append(it)
    return keep, refused


def compile_times(items, hf_tokenizer, vocab_size):
    """Per schema and library: compile + first mask (s), built as vLLM's
    backends build them (any whitespace; guidance's grammar from vLLM's
    ``serialize_guidance_grammar``), caches off."""
    import llguidance
    import llguidance.hf
    import llguidance.torch
    import xgrammar
    from vllm.v1.structured_output.backend_guidance import serialize_guidance_grammar
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions

    import zapspec

    out = {b: [] for b in BACKENDS}
    xinfo = xgrammar.TokenizerInfo.from_huggingface(hf_tokenizer, vocab_size=vocab_size)
    xc = xgrammar.GrammarCompiler(xinfo, max_threads=8, cache_enabled=False)
    xbm = xgrammar.allocate_token_bitmask(1, vocab_size)
    ltok = llguidance.hf.from_tokenizer(hf_tokenizer, n_vocab=vocab_size)
    lbm = llguidance.torch.allocate_token_bitmask(1, ltok.vocab_size)
    zinfo = zapspec.TokenizerInfo.from_huggingface(hf_tokenizer, vocab_size=vocab_size)
    zc = zapspec.GrammarCompiler(zinfo, max_threads=8, cache_enabled=False)
    zbm = zapspec.allocate_token_bitmask(1, vocab_size)
    for it in items:
        text = json.dumps(it["schema"])
        t = time.perf_counter()
        m = xgrammar.GrammarMatcher(xc.compile_json_schema(text, any_whitespace=True))
        m.fill_next_token_bitmask(xbm)
        out["xgrammar"].append(time.perf_counter() - t)
        t = time.perf_counter()
        lm = llguidance.LLMatcher(ltok, serialize_guidance_grammar(StructuredOutputOptions.JSON, text))
        llguidance.torch.fill_next_token_bitmask(lm, lbm, 0)
        out["guidance"].append(time.perf_counter() - t)
        t = time.perf_counter()
        zm = zapspec.GrammarMatcher(zc.compile_json_schema(text))
        zm.fill_next_token_bitmask(zbm)
        out["zapspec"].append(time.perf_counter() - t)
    return out


def prompt(schema):
    return (
        "Produce one JSON value that satisfies this JSON Schema. Reply with the JSON only.\n"
        + json.dumps(schema, separators=(",", ":"))[:1500]
    )


def run_level(url, items, concurrency, max_tokens):
    import jsonschema

    def one(it):
        body = {
            "model": SERVED_NAME,
            "messages": [{"role": "user", "content": prompt(it["schema"])}],
            "temperature": 0,
            "max_tokens": max_tokens,
            "response_format": {"type": "json_schema", "json_schema": {"name": "out", "schema": it["schema"]}},
        }
        r = stream(url, body)
        r["name"] = it["name"]
        if r["status"] == 200 and r["finish_reason"] == "stop":
            try:
                jsonschema.validate(json.loads(r["text"]), it["schema"])
                r["valid"] = True
            except Exception as e:  # invalid output: what the grammar let through
                r["valid"] = False
                r["why"] = str(e)[:200]
        else:
            r["valid"] = None
        return r

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as ex:
        rs = list(ex.map(one, items))
    wall = time.perf_counter() - t0
    ok = [r for r in rs if r["status"] == 200]
    return {
        "concurrency": concurrency,
        "requests": len(rs),
        "wall_s": wall,
        "req_per_s": len(rs) / wall,
        "out_tok_per_s": sum(r["tokens"] for r in ok) / wall,
        "ttft_s": dist([r["ttft"] for r in ok if r["ttft"] is not None]),
        "latency_s": dist([r["latency"] for r in ok]),
        "errors": len(rs) - len(ok),
        "stopped": sum(r["finish_reason"] == "stop" for r in ok),
        "truncated": sum(r["finish_reason"] == "length" for r in ok),
        "valid": sum(r["valid"] is True for r in rs),
        "invalid": [{"name": r["name"], "why": r.get("why"), "text": r["text"][:300]} for r in rs if r["valid"] is False],
        "texts": {r["name"]: r["text"] for r in rs},
    }


def fmt(x, unit=""):
    return "—" if x is None else (f"{x * 1000:.0f} ms" if unit == "ms" else f"{x:.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "models/smollm2-hf"))
    ap.add_argument("--data", nargs="+", default=[os.path.join(ROOT, "../shared/data/maskbench"), os.path.join(ROOT, "../shared/data/maskbench-hard")])
    ap.add_argument("--per-set", type=int, default=16, help="schemas sampled from each data set")
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(ROOT, "examples/results/vllm"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    import llguidance.hf
    from transformers import AutoConfig, AutoTokenizer

    hf = AutoTokenizer.from_pretrained(args.model)
    vocab_size = AutoConfig.from_pretrained(args.model).vocab_size
    items = sample(args.data, args.per_set, args.seed)
    kept, refused = accepted_by_all(items, llguidance.hf.from_tokenizer(hf, n_vocab=vocab_size))
    print(f"{len(items)} schemas sampled, {len(kept)} accepted by every backend; refused: {refused}", flush=True)
    comp = compile_times(kept, hf, vocab_size)
    levels = [int(c) for c in args.concurrency.split(",")]
    runs = {}
    for b in args.backends.split(","):
        log = os.path.join(args.out, f"server-{b}.log")
        t0 = time.perf_counter()
        with serve(args.model, b, log) as url:
            startup = time.perf_counter() - t0
            warm = run_level(url, kept[:1], 1, 8)  # first request: tokenizer info, compile threads
            runs[b] = {"startup_s": startup, "warmup_s": warm["wall_s"], "levels": []}
            for c in levels:
                r = run_level(url, kept, c, args.max_tokens)
                runs[b]["levels"].append(r)
                print(
                    f"{b:9s} c={c:2d}: {r['req_per_s']:.2f} req/s, {r['out_tok_per_s']:.1f} tok/s, "
                    f"TTFT p50 {fmt(r['ttft_s'] and r['ttft_s']['p50'], 'ms')}, valid {r['valid']}/{r['requests']}, "
                    f"truncated {r['truncated']}, errors {r['errors']}",
                    flush=True,
                )
        os.remove(log)
    # greedy outputs the same under every backend?
    same = {}
    for c_i, c in enumerate(levels):
        texts = [runs[b]["levels"][c_i]["texts"] for b in runs]
        same[c] = sum(all(t.get(k) == texts[0].get(k) for t in texts) for k in texts[0])
    result = {
        "command": " ".join(["python", "examples/python/vllm/bench.py"] + sys.argv[1:]),
        "seed": args.seed,
        "model": os.path.basename(args.model.rstrip("/")),
        "max_tokens": args.max_tokens,
        "sampled": len(items),
        "kept": [it["name"] for it in kept],
        "refused_by_front_end": refused,
        "compile_first_mask_s": {b: dist(v) for b, v in comp.items()},
        "same_text_all_backends": same,
        "runs": runs,
    }
    with open(os.path.join(args.out, "vllm.json"), "w") as f:
        json.dump(result, f, indent=1)
    write_md(result, args.out)
    plot(result, args.out)


def write_md(r, out):
    L = []
    L.append("# zapspec inside vLLM, beside xgrammar and guidance\n")
    L.append(
        f"vLLM 0.32 (CPU build), OpenAI-compatible server, {r['model']}, greedy, bf16, "
        f"`max_tokens` {r['max_tokens']}; chat completions with `response_format: json_schema` over "
        f"{len(r['kept'])} MaskBench schemas (of {r['sampled']} sampled, seed {r['seed']}; kept where every "
        f"backend's front end accepts the schema — refused: "
        + ", ".join(f"{b} {n}" for b, n in r["refused_by_front_end"].items())
        + "). One server per backend, the same requests at each concurrency; zapspec runs as vLLM's "
        "`xgrammar` backend name with `ZAPSPEC_VLLM=1`.\n"
    )
    L.append(f"```sh\n{r['command']}\n```\n")
    L.append("## Serving\n")
    L.append("| backend | concurrency | req/s | output tok/s | TTFT p50 / p99 | latency p50 / p99 | valid | cut by max_tokens | errors |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for b, run in r["runs"].items():
        for lv in run["levels"]:
            t, l = lv["ttft_s"] or {}, lv["latency_s"] or {}
            L.append(
                f"| {b} | {lv['concurrency']} | {lv['req_per_s']:.2f} | {lv['out_tok_per_s']:.1f} | "
                f"{fmt(t.get('p50'), 'ms')} / {fmt(t.get('p99'), 'ms')} | {fmt(l.get('p50'))} s / {fmt(l.get('p99'))} s | "
                f"{lv['valid']} / {lv['requests']} | {lv['truncated']} | {lv['errors']} |"
            )
    L.append("")
    L.append(
        "Outputs with the same text under all three backends, per concurrency: "
        + ", ".join(f"{c}: {n} of {len(r['kept'])}" for c, n in r["same_text_all_backends"].items())
        + ".\n"
    )
    L.append("## Compile and first mask per request (in one process, the served vocabulary)\n")
    L.append("| library | n | p50 | p90 | p99 | max | mean |")
    L.append("|---|---|---|---|---|---|---|")
    for b, d in r["compile_first_mask_s"].items():
        if d:
            L.append(
                f"| {b} | {d['n']} | " + " | ".join(fmt(d[k], "ms") for k in ("p50", "p90", "p99", "max", "mean")) + " |"
            )
    L.append("")
    invalid = [(b, lv["concurrency"], x) for b, run in r["runs"].items() for lv in run["levels"] for x in lv["invalid"]]
    if invalid:
        L.append("## Outputs that failed their schema\n")
        for b, c, x in invalid:
            L.append(f"- {b}, concurrency {c}, `{x['name']}`: {x['why']}")
        L.append("")
    with open(os.path.join(out, "vllm.md"), "w") as f:
        f.write("\n".join(L))


def plot(r, out):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no PNG")
        return
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for b, run in r["runs"].items():
        cs = [lv["concurrency"] for lv in run["levels"]]
        ax[0].plot(cs, [lv["out_tok_per_s"] for lv in run["levels"]], marker="o", label=b)
        ax[1].plot(cs, [lv["ttft_s"]["p50"] * 1000 if lv["ttft_s"] else None for lv in run["levels"]], marker="o", label=b)
    ax[0].set(xlabel="concurrent requests", ylabel="output tokens/s", xscale="log", title="throughput")
    ax[1].set(xlabel="concurrent requests", ylabel="TTFT p50 (ms)", xscale="log", title="time to first token")
    for a in ax:
        a.set_xticks([lv["concurrency"] for lv in next(iter(r["runs"].values()))["levels"]])
        a.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        a.legend()
    fig.suptitle(f"vLLM 0.32 CPU, {r['model']}, MaskBench json_schema requests")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "vllm.png"), dpi=110)


if __name__ == "__main__":
    main()
