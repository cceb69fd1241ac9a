#!/usr/bin/env python3
"""llama.cpp (llama-cpp-python) CPU speed on SmolLM2, the peer of
`smollm2_bench`: prefill tokens/s over the same README text and greedy decode
tokens/s after the same chat prompt.

  python3 scripts/reference/llama_cpp_speed.py [--threads N] [--prefill 256] [--decode 64]
"""
import argparse
import json
import os
import time

from llama_cpp import Llama

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(ROOT, "models", "smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--prefill", type=int, default=256)
ap.add_argument("--decode", type=int, default=64)
a = ap.parse_args()

t0 = time.time()
llm = Llama(model_path=MODEL, n_ctx=4096, n_threads=a.threads, n_threads_batch=a.threads, verbose=False)
load_s = time.time() - t0
text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
ids = llm.tokenize(text.encode(), add_bos=False, special=False)
while len(ids) < a.prefill:
    ids = ids + ids
ids = ids[: a.prefill]
llm.reset()
t1 = time.time()
llm.eval(ids)
prefill_s = time.time() - t1
prompt = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nName three primary colors, then stop.<|im_end|>\n<|im_start|>assistant\n"
# a second context that keeps every row's logits (one row per decode step,
# so no extra work there) for the greedy loop
llm = Llama(model_path=MODEL, n_ctx=4096, n_threads=a.threads, n_threads_batch=a.threads,
            logits_all=True, verbose=False)
p = llm.tokenize(prompt.encode(), add_bos=False, special=True)
llm.reset()
llm.eval(p)
out = []
t2 = time.time()
for _ in range(a.decode):
    logits = llm.scores[llm.n_tokens - 1]
    t = int(logits.argmax())
    if t == 2:
        break
    out.append(t)
    llm.eval([t])
decode_s = time.time() - t2
print(json.dumps({
    "engine": "llama.cpp (llama-cpp-python 0.3.36)", "threads": a.threads, "load_s": load_s,
    "prefill_tokens": len(ids), "prefill_tok_per_s": len(ids) / prefill_s,
    "decode_tokens": len(out), "decode_tok_per_s": len(out) / decode_s,
    "answer": llm.detokenize(out).decode("utf-8", "replace"),
}, indent=1))
