#!/usr/bin/env python3
"""Independent references for the SmolLM2 GGUF model, written as fixtures that
`cargo test -p zapspec-backend --test smollm2` and `-p zapspec-vocab --test
gguf_tokenizer` check without Python.

* logits: a float64 numpy forward of the Llama architecture written here from
  the paper's definition (RMSNorm, RoPE on adjacent pairs as GGUF stores Q/K,
  grouped-query attention, SwiGLU), weights dequantised by the `gguf` package
  (llama.cpp's own Python reader); and, when `llama_cpp` (llama-cpp-python) is
  installed, llama.cpp's logits for the same tokens (quantised matmuls, as
  llama.cpp runs them);
* tokens: a byte-level BPE written here from the algorithm (GPT-2's byte
  alphabet, llama.cpp's `smollm` pre-tokenizer regexes, merges by rank) on
  >= 10,000 lines of this repository's sources and docs plus whole files,
  checked against llama.cpp's tokenizer (`special=False`) when llama_cpp is
  installed.

Usage (from the repository root, after scripts/fetch-smollm2.sh):
  pip install numpy gguf llama-cpp-python
  python3 scripts/reference/smollm2_reference.py
"""
import json
import os
import subprocess
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(ROOT, "models", "smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
LOGITS_OUT = os.path.join(ROOT, "gpu-backend", "tests", "fixtures", "smollm2_logits.json")
TOKENS_OUT = os.path.join(ROOT, "vocab", "tests", "fixtures", "smollm2_tokens.jsonl")

PROMPTS = [
    "<|im_start|>user\nCreate a calendar event for a team lunch on Friday at noon.<|im_end|>\n<|im_start|>assistant\n",
    '{"name": "Zurich", "population": 415367, "tags": ["city", "lake"], "ok": true}',
    "fn main() {\n    let xs: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{:?}\", xs);\n}\n",
]
POSITIONS = 32
STRIDE = 256
TOP = 16


def weights():
    r = GGUFReader(MODEL)
    md = {"tokens": r.fields["tokenizer.ggml.tokens"].contents(),
          "merges": r.fields["tokenizer.ggml.merges"].contents()}
    for k, f in r.fields.items():
        if k.startswith("tokenizer."):
            continue
        try:
            md[k] = f.contents()
        except Exception:
            pass
    w = {}
    for t in r.tensors:
        a = dequantize(t.data, t.tensor_type).astype(np.float64)
        w[t.name] = a.reshape([int(x) for x in reversed(t.shape)]) if a.ndim > 1 else a.reshape(-1)
    return md, w


def rmsnorm(x, g, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def rope_pairs(x, pos, base):
    # x: (n, heads, hd); rotate adjacent pairs (x[2i], x[2i+1]) by pos * base^(-2i/hd)
    hd = x.shape[-1]
    inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = pos[:, None] * inv[None, :]  # (n, hd/2)
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


def forward(md, w, ids):
    L = md["llama.block_count"]
    H = md["llama.attention.head_count"]
    KV = md["llama.attention.head_count_kv"]
    eps = md["llama.attention.layer_norm_rms_epsilon"]
    base = md["llama.rope.freq_base"]
    E = w["token_embd.weight"]
    d = E.shape[1]
    hd = d // H
    n = len(ids)
    pos = np.arange(n, dtype=np.float64)
    x = E[ids]
    causal = np.triu(np.full((n, n), -np.inf), 1)
    for l in range(L):
        g = lambda k: w[f"blk.{l}.{k}.weight"]
        h = rmsnorm(x, g("attn_norm"), eps)
        q = rope_pairs((h @ g("attn_q").T).reshape(n, H, hd), pos, base)
        k = rope_pairs((h @ g("attn_k").T).reshape(n, KV, hd), pos, base)
        v = (h @ g("attn_v").T).reshape(n, KV, hd)
        att = np.empty((n, H, hd))
        for hh in range(H):
            kv = hh // (H // KV)
            s = q[:, hh, :] @ k[:, kv, :].T / np.sqrt(hd) + causal
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            att[:, hh, :] = s @ v[:, kv, :]
        x = x + att.reshape(n, d) @ g("attn_output").T
        h = rmsnorm(x, g("ffn_norm"), eps)
        a = h @ g("ffn_gate").T
        x = x + ((a / (1 + np.exp(-a))) * (h @ g("ffn_up").T)) @ g("ffn_down").T
    h = rmsnorm(x, w["output_norm.weight"], eps)
    head = w.get("output.weight", E)
    return h @ head.T


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class PyBpe:
    """GPT-2 byte-level BPE with llama.cpp's `smollm` pre-tokenizer: the text
    is split into single digits (\\p{N}) and the rest, the rest by GPT-2's
    regex, each piece mapped to the byte alphabet and merged by rank."""

    def __init__(self, tokens, merges):
        import regex
        self.ids = {t: i for i, t in enumerate(tokens)}
        self.ranks = {tuple(m.split(" ", 1)): r for r, m in enumerate(merges)}
        self.b2u = bytes_to_unicode()
        self.digits = regex.compile(r"\p{N}")
        self.gpt2 = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
        self.cache = {}

    def bpe(self, piece):
        if piece in self.cache:
            return self.cache[piece]
        word = list(piece)
        while len(word) > 1:
            best = min(range(len(word) - 1), key=lambda i: self.ranks.get((word[i], word[i + 1]), 1 << 60))
            if (word[best], word[best + 1]) not in self.ranks:
                break
            word = word[:best] + [word[best] + word[best + 1]] + word[best + 2:]
        out = [self.ids[w] for w in word]
        self.cache[piece] = out
        return out

    def encode(self, text):
        # split off every digit, then GPT-2's regex inside the other spans
        spans, last = [], 0
        for m in self.digits.finditer(text):
            if m.start() > last:
                spans.append(text[last:m.start()])
            spans.append(m.group())
            last = m.end()
        if last < len(text):
            spans.append(text[last:])
        ids = []
        for span in spans:
            for piece in self.gpt2.findall(span):
                ids.extend(self.bpe("".join(self.b2u[b] for b in piece.encode("utf-8"))))
        return ids


def repo_lines():
    files = subprocess.run(
        ["git", "ls-files", "*.rs", "*.md", "*.toml", "*.gbnf", "*.py", "*.sh"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()
    seen, lines, docs = set(), [], []
    for f in sorted(files):
        if "fixtures" in f:
            continue
        try:
            text = open(os.path.join(ROOT, f), encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        if len(docs) < 40 and 200 < len(text) < 6000:
            docs.append(text)
        for line in text.split("\n"):
            if line.strip() and line not in seen:
                seen.add(line)
                lines.append(line)
    extra = [
        "  leading spaces and   runs\tof\t\twhitespace  ",
        "digits 1234567890 and 3.14159e-10, 0x1F, 2026-11-24",
        "unicode: Zürich, naïve, 日本語, emoji 🙂🚀, Ωmega, café",
        "\n\n\nblank lines\n\n",
        "'s 't 're 've 'm 'll 'd don't I'm we'll",
    ]
    return lines, docs, extra


def main():
    md, w = weights()
    llm = None
    try:
        from llama_cpp import Llama
        llm = Llama(model_path=MODEL, n_ctx=512, logits_all=True, verbose=False, n_threads=2)
    except Exception as e:  # noqa: BLE001
        print(f"llama_cpp unavailable ({e}); writing numpy logits only", file=sys.stderr)

    py = PyBpe(md["tokens"], md["merges"])
    tok = py.encode
    if llm is not None:
        llama_tok = lambda s: llm.tokenize(s.encode("utf-8"), add_bos=False, special=False)
        def tok(s):
            a, b = py.encode(s), llama_tok(s)
            if a != b:
                print(f"python BPE and llama.cpp disagree on {s!r}: {a} vs {b}", file=sys.stderr)
            return b

    cases = []
    for text in PROMPTS:
        ids = tok(text)[:POSITIONS]
        ref = forward(md, w, np.array(ids))
        case = {"text": text, "ids": ids, "rows": []}
        lc = None
        if llm is not None:
            llm.reset()
            llm.eval(ids)
            lc = np.array(llm.scores[: len(ids)], dtype=np.float64)
        for p in range(len(ids)):
            top = list(np.argsort(-ref[p])[:TOP])
            sel = sorted(set(top) | set(range(0, ref.shape[1], STRIDE)))
            row = {"ids": [int(i) for i in sel], "numpy": [round(float(ref[p, i]), 5) for i in sel]}
            if lc is not None:
                row["llama_cpp"] = [round(float(lc[p, i]), 5) for i in sel]
            case["rows"].append(row)
        cases.append(case)
        if lc is not None:
            print(f"prompt {len(cases)}: max |numpy - llama.cpp| = {np.abs(ref - lc).max():.4f}, "
                  f"argmax agree {np.mean(ref.argmax(-1) == lc.argmax(-1)):.3f}")
    os.makedirs(os.path.dirname(LOGITS_OUT), exist_ok=True)
    with open(LOGITS_OUT, "w") as f:
        json.dump({"model": os.path.basename(MODEL), "tokenizer": "llama.cpp" if llm else "python BPE",
                   "positions": POSITIONS, "stride": STRIDE,
                   "top": TOP, "cases": cases}, f, separators=(",", ":"))
        f.write("\n")

    lines, docs, extra = repo_lines()
    os.makedirs(os.path.dirname(TOKENS_OUT), exist_ok=True)
    n = 0
    with open(TOKENS_OUT, "w") as f:
        # every third distinct line (>= 10,000), spread over all tracked files
        for text in lines[::3] + docs[:20] + extra:
            f.write(json.dumps({"text": text, "ids": tok(text)}, ensure_ascii=False) + "\n")
            n += 1
    print(f"wrote {LOGITS_OUT} and {n} tokenized texts ({len(lines[::3])} lines, {len(docs[:20])} files) to {TOKENS_OUT}")


if __name__ == "__main__":
    main()
