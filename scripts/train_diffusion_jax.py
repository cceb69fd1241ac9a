#!/usr/bin/env python3
"""Trains the byte-level masked-diffusion LMs of `models/` with JAX (XLA),
the same architecture, corpus, loss and file format as the Rust `train`
example (`examples/src/bin/train.rs`, `gpu-backend/src/train.rs`), only
several times faster per CPU core (XLA fuses the RMSNorm / RoPE / softmax
chains that candle's autograd runs as dozens of small kernels), and on a
GPU where JAX finds one (the shipped `models/diffusion-bytes-3m*` were
trained on an H100; see models/README.md).

A GPU machine without the data: `--pack FILE.npz` writes the corpus (JSON
and code splits, identical bytes) here, `--corpus FILE.npz` trains on it
there. `--keep-best` writes a checkpoint only when the held-out bound
improves; `--dropout` adds residual dropout while training.

The output directory is a normal zapspec checkpoint (`config.json`,
`model.safetensors` with Hugging Face names, `manifest.json`). The Rust
side re-scores it independently: `train --kind diffusion --init DIR
--steps 0 --out /tmp/x` prints the held-out bound of the loaded weights,
which must agree with this script's figure (the manifest records both).

    python3 -m pip install --user "jax[cpu]" safetensors
    python3 scripts/train_diffusion_jax.py --out models/diffusion-bytes-jax \
        --hidden 256 --layers 4 --heads 8 --intermediate 704 --minutes 60

Architecture (= `gpu-backend/src/transformer.rs`): token embedding tied
with the LM head, pre-RMSNorm decoder blocks, rotary embeddings on the two
halves of each head (`rope`, not interleaved), SwiGLU MLP; attention
bidirectional or blockwise-causal (key block <= query block).
Loss (= `Trainer::diffusion_loss`): LLaDA, one masking rate t ~ U(1e-3, 1)
per window, weight 1/t on masked positions, sum over all positions divided
by their count; `--sdar` = `Trainer::blockwise_diffusion_loss`.
"""

import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np

SEP, MASK, VOCAB = 256, 257, 258


def fnv(name):
    h = 0xCBF29CE484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def load_corpus(d, heldout):
    """Valid MaskBench instances, compact JSON (key order kept), each after
    one separator token; held out by fnv1a(file name) mod 10000."""
    train, held = [], []
    stats = dict(train_files=0, heldout_files=0, train_instances=0, heldout_instances=0)
    for name in sorted(os.listdir(d)):
        if not name.endswith(".json"):
            continue
        try:
            v = json.load(open(os.path.join(d, name), encoding="utf-8"))
        except Exception:
            continue
        is_held = (fnv(name) % 10000) / 10000.0 < heldout
        n = 0
        for t in v.get("tests", []) if isinstance(v, dict) else []:
            if t.get("valid") is not True or "data" not in t:
                continue
            s = json.dumps(t["data"], ensure_ascii=False, separators=(",", ":"))
            dst = held if is_held else train
            dst.append(SEP)
            dst.extend(s.encode("utf-8"))
            n += 1
        key = "heldout" if is_held else "train"
        stats[key + "_files"] += 1
        stats[key + "_instances"] += n
    return np.array(train, np.int32), np.array(held, np.int32), stats


def load_code(root, heldout_dirs):
    files = []
    for dp, dns, fns in os.walk(root):
        dns[:] = [x for x in dns if not (x.startswith(".") or x.startswith("target") or x == "models")]
        files += [os.path.join(dp, f) for f in fns if f.endswith(".rs")]
    tr, he, nt, nh = [], [], 0, 0
    for f in sorted(files):
        rel = os.path.relpath(f, root)
        try:
            b = open(f, "rb").read()
            b.decode("utf-8")
        except Exception:
            continue
        h = any(x and rel.startswith(x) for x in heldout_dirs)
        dst = he if h else tr
        dst.append(SEP)
        dst.extend(b)
        nh += h
        nt += not h
    return np.array(tr, np.int32), np.array(he, np.int32), nt, nh


def unigram_bits(train, ev):
    c = np.bincount(train, minlength=VOCAB).astype(np.float64) + 1.0
    p = c / c.sum()
    return float(-np.log2(p[ev]).mean())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data/maskbench")
    ap.add_argument("--code", default=".")
    ap.add_argument("--no-code", action="store_true")
    ap.add_argument("--code-heldout", default="dllm-draftgraph/src,core/src,earley/src,spec-verify/src")
    ap.add_argument("--code-share", type=float, default=0.25)
    ap.add_argument("--out", required=True)
    ap.add_argument("--init", help="checkpoint directory to continue from")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--intermediate", type=int, default=0, help="default: the Rust rule")
    ap.add_argument("--context", type=int, default=288)
    ap.add_argument("--attention", choices=["bidirectional", "block-causal"], default=None,
                    help="default: bidirectional, or the --init checkpoint's (given with --init: converts it, SDAR-style)")
    ap.add_argument("--block-size", type=int, default=None, help="default 32, or the --init checkpoint's")
    ap.add_argument("--sdar", action="store_true")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--heldout", type=float, default=0.1)
    ap.add_argument("--eval-windows", type=int, default=32)
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--bench", type=int, default=0, help="time this many steps and exit")
    ap.add_argument("--pack", help="write the corpus (JSON and code splits, stats) to this .npz and exit")
    ap.add_argument("--corpus", help="read the corpus from a --pack file instead of --data/--code")
    ap.add_argument("--dropout", type=float, default=0.0,
                    help="residual dropout on the attention and MLP outputs while training (inference has none)")
    ap.add_argument("--keep-best", action="store_true",
                    help="write the checkpoint only when the held-out bound improves (early stopping)")
    a = ap.parse_args()

    t0 = time.time()
    if a.corpus:
        z = np.load(a.corpus)
        train, held = z["train"].astype(np.int32), z["held"].astype(np.int32)
        cstats = json.loads(str(z["stats"]))
        code_tr = code_he = None
        if not a.no_code and "code_tr" in z:
            code_tr, code_he = z["code_tr"].astype(np.int32), z["code_he"].astype(np.int32)
    else:
        train, held, cstats = load_corpus(a.data, a.heldout)
        code_tr = code_he = None
        if not a.no_code:
            code_tr, code_he, nt, nh = load_code(a.code, [x.strip() for x in a.code_heldout.split(",")])
    if a.pack:
        extra = {} if code_tr is None else dict(code_tr=code_tr.astype(np.uint16), code_he=code_he.astype(np.uint16))
        np.savez_compressed(a.pack, train=train.astype(np.uint16), held=held.astype(np.uint16),
                            stats=np.array(json.dumps(cstats)), **extra)
        print(f"packed {len(train)} + {len(held)} JSON and {0 if code_tr is None else len(code_tr) + len(code_he)} code bytes into {a.pack}")
        return

    import jax
    import jax.numpy as jnp

    a.device = f"{jax.devices()[0].platform}: {jax.devices()[0].device_kind}"
    print(f"device {a.device}", file=sys.stderr)
    print(f"corpus: {len(train)} train / {len(held)} held-out bytes; code {0 if code_tr is None else len(code_tr)}", file=sys.stderr)

    # --- configuration -------------------------------------------------
    if a.init:
        cfg = json.load(open(os.path.join(a.init, "config.json")))
        if a.attention:
            cfg["zapspec"]["attention"] = "bidirectional" if a.attention == "bidirectional" else "block_causal"
        if a.block_size:
            cfg["zapspec"]["block_size"] = a.block_size
    else:
        inter = a.intermediate or ((8 * a.hidden // 3 + 63) // 64 * 64)
        cfg = {
            "architectures": ["ZapspecMaskedDiffusionLM"],
            "model_type": "llama",
            "vocab_size": VOCAB,
            "hidden_size": a.hidden,
            "intermediate_size": inter,
            "num_hidden_layers": a.layers,
            "num_attention_heads": a.heads,
            "num_key_value_heads": a.heads,
            "rms_norm_eps": 1e-6,
            "rope_theta": 10000.0,
            "max_position_embeddings": a.context,
            "tie_word_embeddings": True,
            "hidden_act": "silu",
            "eos_token_id": SEP,
            "zapspec": {
                "kind": "diffusion",
                "mask_token_id": MASK,
                "attention": "block_causal" if a.attention == "block-causal" else "bidirectional",
                "block_size": a.block_size or 32,
            },
        }
    H, L = cfg["hidden_size"], cfg["num_hidden_layers"]
    NH = cfg["num_attention_heads"]
    HD = H // NH
    I = cfg["intermediate_size"]
    T = cfg["max_position_embeddings"]
    eps = cfg["rms_norm_eps"]
    att = cfg["zapspec"]["attention"]
    bs = cfg["zapspec"]["block_size"]

    # --- weights ---------------------------------------------------------
    names = ["model.embed_tokens.weight", "model.norm.weight"]
    for l in range(L):
        p = f"model.layers.{l}."
        names += [p + "input_layernorm.weight", p + "post_attention_layernorm.weight"]
        names += [p + f"self_attn.{x}_proj.weight" for x in "qkvo"]
        names += [p + f"mlp.{x}_proj.weight" for x in ("gate", "up", "down")]

    def shape(n):
        if n.endswith("embed_tokens.weight"):
            return (VOCAB, H)
        if "layernorm" in n or n == "model.norm.weight":
            return (H,)
        if "self_attn" in n:
            return (H, H)
        if "down_proj" in n:
            return (H, I)
        return (I, H)

    if a.init:
        params = read_safetensors(os.path.join(a.init, "model.safetensors"))
        params = {n: jnp.asarray(params[n]) for n in names}
    else:
        rng = np.random.default_rng(a.seed)
        params = {}
        for n in names:
            s = shape(n)
            if len(s) == 1:
                params[n] = jnp.ones(s, jnp.float32)
            else:
                std = 0.02
                if n.endswith("o_proj.weight") or n.endswith("down_proj.weight"):
                    std = 0.02 / math.sqrt(2 * L)
                params[n] = jnp.asarray(rng.normal(0, std, s).astype(np.float32))
    nparams = sum(int(np.prod(v.shape)) for v in params.values())
    print(f"model: {L} layers x {H}, {NH} heads, mlp {I}, context {T}, {nparams} params", file=sys.stderr)

    inv = 1.0 / (cfg["rope_theta"] ** (np.arange(0, HD // 2) * 2.0 / HD))
    fr = np.arange(T)[:, None] * inv[None, :]
    cos, sin = jnp.asarray(np.cos(fr), jnp.float32), jnp.asarray(np.sin(fr), jnp.float32)
    if att == "bidirectional":
        amask = jnp.zeros((T, T), jnp.float32)
    else:
        qb = np.arange(T)[:, None] // bs
        kb = np.arange(T)[None, :] // bs
        amask = jnp.asarray(np.where(kb <= qb, 0.0, -1e30), jnp.float32)

    def rms(x, w):
        return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + eps) * w

    def rope(x):  # (B, NH, T, HD)
        x1, x2 = x[..., : HD // 2], x[..., HD // 2 :]
        return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    def drop(x, key, i):
        if key is None or a.dropout <= 0.0:
            return x
        keep = jax.random.bernoulli(jax.random.fold_in(key, i), 1.0 - a.dropout, x.shape)
        return jnp.where(keep, x / (1.0 - a.dropout), 0.0)

    def forward(p, toks, key=None):
        B = toks.shape[0]
        x = p["model.embed_tokens.weight"][toks]
        for l in range(L):
            pre = f"model.layers.{l}."
            h = rms(x, p[pre + "input_layernorm.weight"])

            def proj(nm, h=h, pre=pre):
                return (h @ p[pre + f"self_attn.{nm}_proj.weight"].T).reshape(B, T, NH, HD).transpose(0, 2, 1, 3)

            q = rope(proj("q")) / math.sqrt(HD)
            k = rope(proj("k"))
            v = proj("v")
            s = q @ k.transpose(0, 1, 3, 2) + amask
            pr = jax.nn.softmax(s, -1)
            o = (pr @ v).transpose(0, 2, 1, 3).reshape(B, T, H)
            x = x + drop(o @ p[pre + "self_attn.o_proj.weight"].T, key, 2 * l)
            h = rms(x, p[pre + "post_attention_layernorm.weight"])
            g = jax.nn.silu(h @ p[pre + "mlp.gate_proj.weight"].T) * (h @ p[pre + "mlp.up_proj.weight"].T)
            x = x + drop(g @ p[pre + "mlp.down_proj.weight"].T, key, 2 * l + 1)
        h = rms(x, p["model.norm.weight"])
        return h @ p["model.embed_tokens.weight"].T

    def loss_fn(p, noisy, clean, w, key=None):
        logp = jax.nn.log_softmax(forward(p, noisy, key), -1)
        nll = -jnp.take_along_axis(logp, clean[..., None], -1)[..., 0]
        return jnp.sum(nll * w) / nll.size

    # AdamW (betas 0.9/0.999, eps 1e-8, no weight decay), as candle-nn's.
    b1, b2, aeps = 0.9, 0.999, 1e-8

    @jax.jit
    def step(p, m, v, t, lr, noisy, clean, w, key):
        l, g = jax.value_and_grad(loss_fn)(p, noisy, clean, w, key)
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
        c1, c2 = 1 - b1**t, 1 - b2**t
        p = jax.tree_util.tree_map(lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + aeps), p, m, v)
        return p, m, v, l

    eval_loss = jax.jit(loss_fn)

    rng = np.random.default_rng(a.seed + 1)

    def noise(wins, rates=None):
        wins = np.asarray(wins)
        B = wins.shape[0]
        if a.sdar:
            nb = (T + bs - 1) // bs
            cut = rng.integers(0, nb, B)
            t = rng.uniform(1e-3, 1.0, (B, nb))
            t = np.where(np.arange(nb)[None, :] < cut[:, None], 0.0, t)
            t = np.repeat(t, bs, 1)[:, :T]
        else:
            t = rng.uniform(1e-3, 1.0, B) if rates is None else np.asarray(rates)
            t = np.broadcast_to(t[:, None], (B, T))
        m = rng.random((B, T)) < t
        noisy = np.where(m, MASK, wins).astype(np.int32)
        w = np.where(m, 1.0 / np.maximum(t, 1e-12), 0.0).astype(np.float32)
        return noisy, wins.astype(np.int32), w

    def windows(src, n):
        o = rng.integers(0, len(src) - T, n)
        return np.stack([src[i : i + T] for i in o])

    def fixed_windows(src, n):
        n = max(1, min(n, len(src) // T))
        st = (len(src) - T) // n
        return np.stack([src[i * st : i * st + T] for i in range(n)])

    ev_json = fixed_windows(held, a.eval_windows)
    ev_code = fixed_windows(code_he, 16) if code_he is not None else None

    def bound(wins):
        """LLaDA bound, bits/byte: 4 stratified rates per window, fixed seed."""
        nonlocal rng
        saved, rng = rng, np.random.default_rng(12345)
        k, s = 4, 0.0
        for rep in range(k):
            for c0 in range(0, len(wins), 16):
                c = wins[c0 : c0 + 16]
                rates = [((i * k + rep) % (4 * k)) / (4 * k) + 0.5 / (4 * k) for i in range(len(c))]
                sd, a.sdar = a.sdar, False
                x, y, w = noise(c, rates)
                a.sdar = sd
                s += float(eval_loss(params, x, y, w)) * len(c)
        rng = saved
        return s / (k * len(wins)) / math.log(2)

    m = jax.tree_util.tree_map(jnp.zeros_like, params)
    v = jax.tree_util.tree_map(jnp.zeros_like, params)

    def batch():
        n_code = 0 if code_tr is None else int(rng.binomial(a.batch, a.code_share))
        parts = [windows(train, a.batch - n_code)]
        if n_code:
            parts.append(windows(code_tr, n_code))
        return np.concatenate(parts)

    if a.bench:
        x, y, w = noise(batch())
        params_, m_, v_, l = step(params, m, v, 1.0, 1e-4, x, y, w, jax.random.PRNGKey(0))
        l.block_until_ready()
        t1 = time.time()
        for i in range(a.bench):
            x, y, w = noise(batch())
            params_, m_, v_, l = step(params_, m_, v_, float(i + 2), 1e-4, x, y, w, jax.random.PRNGKey(i + 1))
        l.block_until_ready()
        dt = (time.time() - t1) / a.bench
        print(f"{dt:.3f} s/step, {a.batch * T / dt:.0f} tokens/s, loss {float(l):.3f}")
        return

    init_json = bound(ev_json)
    uni = unigram_bits(train, ev_json.reshape(-1))
    print(f"held-out at init {init_json:.3f} bits/byte, unigram {uni:.3f}", file=sys.stderr)
    curve = [(0, init_json)]
    train_curve = []
    budget = a.minutes * 60
    ts = time.time()
    s = 0
    ema = None
    dkey = jax.random.PRNGKey(a.seed + 2)
    best = (init_json, 0)
    while s < a.steps:
        prog = max(s / a.steps, (time.time() - ts) / budget)
        if prog >= 1.0:
            break
        warm = 0.05
        if prog < warm:
            lr = a.lr * (0.05 + 0.95 * prog / warm)
        else:
            q = min((prog - warm) / (1 - warm), 1.0)
            lr = a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * q)))
        x, y, w = noise(batch())
        params, m, v, l = step(params, m, v, float(s + 1), lr, x, y, w, jax.random.fold_in(dkey, s))
        s += 1
        if s % 20 == 0:
            lf = float(l) / math.log(2)
            ema = lf if ema is None else 0.9 * ema + 0.1 * lf
            train_curve.append((s, ema))
        if s % a.eval_every == 0:
            e = bound(ev_json)
            curve.append((s, e))
            el = time.time() - ts
            print(f"step {s} ({el/60:.1f} min, {s*a.batch*T/el:.0f} tok/s): train {(ema or float('nan')):.3f} held-out {e:.3f} bits/byte lr {lr:.2e}", file=sys.stderr, flush=True)
            if not a.keep_best or e < best[0]:
                best = (e, s)
                best_params = params
                save(a, cfg, params, names, nparams, cstats, s, ts, t0, curve, train_curve, uni, init_json, ev_code, bound, code_tr, code_he, final=False, best=best)
    final = bound(ev_json)
    curve.append((s, final))
    if a.keep_best and final >= best[0] and best[1] > 0:
        # the checkpoint on disk is the best one; rewrite its manifest with
        # the whole curve, its own weights and figures
        params = best_params
    else:
        best = (final, s)
    save(a, cfg, params, names, nparams, cstats, s, ts, t0, curve, train_curve, uni, init_json, ev_code, bound, code_tr, code_he, final=True, best=best)
    print(f"done: {s} steps, held-out {final:.3f} bits/byte, kept step {best[1]} at {best[0]:.3f} (unigram {uni:.3f})", file=sys.stderr)


def read_safetensors(path):
    f = open(path, "rb")
    n = struct.unpack("<Q", f.read(8))[0]
    h = json.loads(f.read(n))
    base = 8 + n
    data = open(path, "rb").read()
    out = {}
    for k, v in h.items():
        if k == "__metadata__":
            continue
        assert v["dtype"] == "F32", (k, v["dtype"])
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(data[base + a : base + b], np.float32).reshape(v["shape"])
    return out


def write_safetensors(path, tensors):
    hdr, off, blobs = {}, 0, []
    for k in sorted(tensors):
        b = np.ascontiguousarray(tensors[k], np.float32).tobytes()
        hdr[k] = {"dtype": "F32", "shape": list(tensors[k].shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def save(a, cfg, params, names, nparams, cstats, s, ts, t0, curve, train_curve, uni, init_json, ev_code, bound, code_tr, code_he, final, best):
    os.makedirs(a.out, exist_ok=True)
    json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=2)
    write_safetensors(os.path.join(a.out, "model.safetensors"), {n: np.asarray(params[n]) for n in names})
    prior = None
    if a.init and os.path.exists(os.path.join(a.init, "manifest.json")):
        prior = json.load(open(os.path.join(a.init, "manifest.json"))).get("training")
    man = {
        "kind": "diffusion",
        "corpus": dict(
            source="MaskBench valid instances, compact JSON (Python json.dumps, key order kept), one separator token (256) before each",
            path=a.data,
            split="held-out = schema files with fnv1a(file name) mod 10000 < 1000",
            **cstats,
        ),
        "model": dict(
            params=nparams,
            hidden=cfg["hidden_size"],
            layers=cfg["num_hidden_layers"],
            heads=cfg["num_attention_heads"],
            intermediate=cfg["intermediate_size"],
            context=cfg["max_position_embeddings"],
            attention=cfg["zapspec"]["attention"],
            block_size=cfg["zapspec"]["block_size"],
            safetensors_bytes=os.path.getsize(os.path.join(a.out, "model.safetensors")),
        ),
        "training": dict(
            trainer=f"scripts/train_diffusion_jax.py (JAX/XLA, {a.device})",
            optimizer="AdamW (0.9, 0.999, 1e-8), no weight decay, 5% warm-up then cosine to 10% over max(step/steps, wall/budget)",
            loss=("blockwise (SDAR-style): clean blocks before a random cut, per-block rates t_b ~ U(1e-3,1), weight 1/t_b" if a.sdar else "LLaDA: one rate t ~ U(1e-3,1) per window, weight 1/t"),
            init=a.init,
            init_training=prior,
            peak_lr=a.lr,
            batch=a.batch,
            steps=s,
            tokens_seen=s * a.batch * cfg["max_position_embeddings"],
            budget_minutes=a.minutes,
            dropout=a.dropout,
            kept_step=best[1],
            keep_best=a.keep_best,
            seed=a.seed,
            code_share=0 if code_tr is None else a.code_share,
            train_wall_seconds=time.time() - ts,
            total_wall_seconds=time.time() - t0,
            machine=f"{a.device}, {os.cpu_count()} logical cores",
            finished=final,
        ),
        "heldout": dict(
            windows=a.eval_windows,
            window_tokens=cfg["max_position_embeddings"],
            bits_per_byte=best[0],
            bits_per_byte_at_init=init_json,
            unigram_bits_per_byte=uni,
            metric="LLaDA variational bound E_t[(1/t) sum_masked -log2 p] / tokens (an upper bound on bits per byte), 4 stratified masking rates per window, seed 12345",
        ),
        "curve": {"eval": curve, "train_ema": train_curve},
    }
    if final and ev_code is not None:
        man["code"] = dict(
            source="this workspace's *.rs files (target*, hidden dirs and models/ skipped), one separator token before each file",
            heldout_dirs=a.code_heldout,
            train_share_of_windows=a.code_share,
            train_tokens=int(len(code_tr)),
            heldout_tokens=int(len(code_he)),
            heldout_windows=int(len(ev_code)),
            heldout_bits_per_byte=bound(ev_code),
            heldout_unigram_bits_per_byte=unigram_bits(code_tr, ev_code.reshape(-1)),
        )
    json.dump(man, open(os.path.join(a.out, "manifest.json"), "w"), indent=2)


if __name__ == "__main__":
    main()
