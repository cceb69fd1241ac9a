#!/usr/bin/env python3
"""llama.cpp (llama-cpp-python) CPU speed on SmolLM2: the peer that
`smollm2_bench` runs beside zapspec's native forward, one process per
measurement, with the same inputs:

- prefill tokens/s over the same README text (`--prefill` tokens);
- greedy decode tokens/s after the same chat prompt (`--decode` tokens);
- the cost of one forward of N tokens (every row's logits, as verifying a
  draft needs) at a context of `--context` tokens, over the cost of one
  single-token forward there, for each N in `--ns`;
- peak RSS of the process (and what loading the model added to it).

Prints one JSON object. This VM's llama.cpp crashes on the first decode
with its AMX ("extra") buffer types; `Llama(...)` ignores
`use_extra_bufts` as a keyword, so the default model parameters it starts
from are patched.

  python3 scripts/reference/llama_cpp_speed.py [--threads N] [--prefill 128] [--decode 40]
"""
import argparse
import json
import os
import resource
import statistics
import time

import llama_cpp
import numpy as np
import llama_cpp.llama_cpp as C
from llama_cpp import Llama

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(ROOT, "models", "smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
PROMPT = (
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "<|im_start|>user\nName three primary colors, then stop.<|im_end|>\n<|im_start|>assistant\n"
)


def patch_llama_cpp():
    orig = C.llama_model_default_params

    def patched():
        p = orig()
        p.use_extra_bufts = False
        return p

    C.llama_model_default_params = patched
    llama_cpp.llama_model_default_params = patched


def rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prefill", type=int, default=128)
    ap.add_argument("--decode", type=int, default=40)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--ns", default="1,4,8,16")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    ns = [int(x) for x in a.ns.split(",") if x]
    patch_llama_cpp()
    # the same context window as zapspec's worker
    n_ctx = a.context + max(ns) + a.prefill + 64

    def load(logits_all):
        return Llama(model_path=MODEL, n_ctx=n_ctx, n_batch=512, n_ubatch=512, n_threads=a.threads,
                     n_threads_batch=a.threads, logits_all=logits_all, verbose=False)

    rss0 = rss_kib("VmRSS")
    t0 = time.perf_counter()
    # prefill and decode want the last row's logits only
    llm = load(False)
    load_s = time.perf_counter() - t0
    rss1 = rss_kib("VmRSS")

    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    ids = llm.tokenize(text.encode(), add_bos=False, special=False)
    while len(ids) < max(a.prefill, a.context + max(ns)):
        ids = ids + ids
    pre = ids[: a.prefill]
    times = []
    for _ in range(a.reps):
        llm.reset()
        t1 = time.perf_counter()
        llm.eval(pre)
        times.append(time.perf_counter() - t1)
    prefill_s = statistics.median(times)

    p = llm.tokenize(PROMPT.encode(), add_bos=False, special=True)
    llm.reset()
    llm.eval(p)
    out = []
    t2 = time.perf_counter()
    for _ in range(a.decode):
        # the last row's logits in llama.cpp's own buffer (this context
        # keeps no `scores` rows)
        logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))
        t = int(logits.argmax())
        out.append(t)
        llm.eval([t])
    decode_s = time.perf_counter() - t2

    # peak RSS of the process as a user runs it; the second context below
    # keeps every row's logits (an n_ctx × vocab array), which would not be
    # a fair peak
    rss_peak = rss_kib("VmHWM")
    answer = llm.detokenize(out[: out.index(2)] if 2 in out else out).decode("utf-8", "replace")
    del llm
    # N-token forwards at a `context`-token context, every row's logits (as
    # verifying a draft needs): fill it once, then for each N evaluate N
    # tokens and roll back (`eval` drops the KV entries past `n_tokens`).
    llm = load(True)
    llm.eval(ids[: a.context])
    forward = {}
    for n in ns:
        block = ids[a.context: a.context + n]
        ts = []
        for _ in range(a.reps):
            llm.n_tokens = a.context
            t = time.perf_counter()
            llm.eval(block)
            ts.append(time.perf_counter() - t)
        forward[str(n)] = statistics.median(ts)
    print(json.dumps({
        "engine": "llama.cpp (llama-cpp-python %s)" % llama_cpp.__version__,
        "threads": a.threads,
        "load_s": load_s,
        "prefill_tokens": len(pre),
        "prefill_tok_per_s": len(pre) / prefill_s,
        "decode_tokens": len(out),
        "decode_tok_per_s": len(out) / decode_s,
        "context": a.context,
        "forward_s": forward,
        "rss_peak_mib": rss_peak / 1024,
        "rss_load_delta_mib": (rss1 - rss0) / 1024,
        "answer": answer,
    }))


if __name__ == "__main__":
    main()
