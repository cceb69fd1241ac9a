"""The grammar's share of a vLLM decoding step, per backend library: along
the outputs ``bench.py`` recorded (each backend's own greedy text at
concurrency 1, retokenized with the served tokenizer), the time to fill one
bitmask row and accept the token, as vLLM's backends call them
(xgrammar's and zapspec's ``fill_next_token_bitmask`` / ``accept_token``,
llguidance's ``fill_next_token_bitmask`` / ``consume_token``), in this
process, one library after the other. Compared with the step time the
server reported (request latency over output tokens), this is the part of
a step the backend costs.

    python examples/python/vllm/step_times.py --results examples/results/vllm

adds ``step_times`` to ``vllm.json`` and a section to ``vllm.md``.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))

from bench import dist  # noqa: E402


def schemas(names, data_root):
    out = {}
    for n in names:
        sub, base = n.split("/", 1)
        with open(os.path.join(data_root, sub, base + ".json")) as f:
            out[n] = json.load(f)["schema"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(ROOT, "examples/results/vllm"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models/smollm2-hf"))
    ap.add_argument("--data-root", default=os.path.join(ROOT, "../shared/data"))
    args = ap.parse_args()

    import llguidance
    import llguidance.hf
    import llguidance.torch
    import xgrammar
    from transformers import AutoConfig, AutoTokenizer
    from vllm.v1.structured_output.backend_guidance import serialize_guidance_grammar
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions

    import zapspec

    path = os.path.join(args.results, "vllm.json")
    r = json.load(open(path))
    tok = AutoTokenizer.from_pretrained(args.model)
    n = AutoConfig.from_pretrained(args.model).vocab_size
    sch = schemas(r["kept"], args.data_root)
    xc = xgrammar.GrammarCompiler(xgrammar.TokenizerInfo.from_huggingface(tok, vocab_size=n))
    zc = zapspec.GrammarCompiler(zapspec.TokenizerInfo.from_huggingface(tok, vocab_size=n))
    lt = llguidance.hf.from_tokenizer(tok, n_vocab=n)
    xbm, zbm = xgrammar.allocate_token_bitmask(1, n), zapspec.allocate_token_bitmask(1, n)
    lbm = llguidance.torch.allocate_token_bitmask(1, lt.vocab_size)
    out = {}
    for b in ("xgrammar", "guidance", "zapspec"):
        run = r["runs"].get(b)
        if not run:
            continue
        texts = run["levels"][0]["texts"]
        per = []
        for name, text in texts.items():
            ids = tok.encode(text, add_special_tokens=False)
            s = json.dumps(sch[name])
            if b == "xgrammar":
                m = xgrammar.GrammarMatcher(xc.compile_json_schema(s, any_whitespace=True))

                def step(t, m=m):
                    m.fill_next_token_bitmask(xbm)
                    return m.accept_token(t)
            elif b == "zapspec":
                m = zapspec.GrammarMatcher(zc.compile_json_schema(s))

                def step(t, m=m):
                    m.fill_next_token_bitmask(zbm)
                    return m.accept_token(t)
            else:
                m = llguidance.LLMatcher(lt, serialize_guidance_grammar(StructuredOutputOptions.JSON, s))

                def step(t, m=m):
                    llguidance.torch.fill_next_token_bitmask(m, lbm, 0)
                    return m.consume_token(t)
            for t in ids:
                t0 = time.perf_counter()
                ok = step(t)
                per.append(time.perf_counter() - t0)
                if not ok:
                    break
        out[b] = dist(per)
        step_s = [
            lv["latency_s"]["mean"] / max(1, lv["out_tok_per_s"] * lv["wall_s"] / max(1, lv["requests"]))
            for lv in run["levels"][:1]
            if lv["latency_s"]
        ]
        out[b]["server_step_s"] = step_s[0] if step_s else None
        print(b, out[b], flush=True)
    r["step_times"] = out
    json.dump(r, open(path, "w"), indent=1)
    md = os.path.join(args.results, "vllm.md")
    text = open(md).read().split("\n## Grammar time per step")[0].rstrip() + "\n"
    L = ["", "## Grammar time per step (fill one row + accept, along each backend's own outputs)", ""]
    L.append(f"`{' '.join(['python', 'examples/python/vllm/step_times.py'] + sys.argv[1:])}`")
    L.append("")
    L.append("| library | tokens | p50 | p90 | p99 | max | mean | server step at concurrency 1 (latency / tokens) | share |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for b, d in out.items():
        st = d.get("server_step_s")
        share = f"{100 * d['mean'] / st:.2f}%" if st else "—"
        L.append(
            f"| {b} | {d['n']} | "
            + " | ".join(f"{d[k] * 1e6:.0f} µs" for k in ("p50", "p90", "p99", "max", "mean"))
            + f" | {st * 1000:.1f} ms | {share} |"
            if st
            else f"| {b} | {d['n']} | " + " | ".join(f"{d[k] * 1e6:.0f} µs" for k in ("p50", "p90", "p99", "max", "mean")) + " | — | — |"
        )
    open(md, "w").write(text + "\n".join(L) + "\n")


if __name__ == "__main__":
    main()
