"""The bitmask a Python matcher fills is the Rust matcher's mask, bit for
bit, at every step of walks through the valid instances of a MaskBench
sample; and it agrees with an independent reference: a token's bit is set
exactly when a fork of the matcher accepts the token.

Over SmolLM2's GGUF vocabulary when fetched, tiktoken o200k otherwise."""

import numpy as np
import pytest

import zapspec

from conftest import compact, maskbench_sample

EVERY = 60  # ≈112 schemas of the 6,730


def expected_row(words, info):
    """The engine's 64-bit mask words → the int32 row layout, done here with
    numpy (an independent conversion): EOS bit → the stop tokens' bits."""
    n = info.tokenizer_vocab_size
    bits = np.unpackbits(np.asarray(words, dtype="<u8").view(np.uint8), bitorder="little")[:n].astype(bool)
    eos_like = bits & SPECIAL[info.name]  # the engine's only special bit: its EOS
    out = np.zeros(((info.vocab_size + 31) // 32) * 32, dtype=bool)
    out[: min(n, info.vocab_size)] = (bits & ~eos_like)[: info.vocab_size]
    if eos_like.any():
        out[info.stop_token_ids] = True
    return out


def row_bits(row):
    return np.unpackbits(row.view(np.uint8), bitorder="little").astype(bool)


SPECIAL = {}


def test_masks_equal_engine_masks_bit_for_bit(info):
    special = np.zeros(info.tokenizer_vocab_size, dtype=bool)
    special[info.special_token_ids] = True
    SPECIAL[info.name] = special
    sample = maskbench_sample(EVERY)
    compiler = zapspec.GrammarCompiler(info)
    bm = zapspec.allocate_token_bitmask(1, info.vocab_size, framework="numpy")
    compiled = refused = walked = steps = 0
    for name, schema, valid, _ in sample:
        try:
            cg = compiler.compile_json_schema(schema, any_whitespace=False, separators=(",", ":"), strict_mode=False, one_of="require_disjoint")
        except zapspec.ZapspecError:
            refused += 1
            continue
        compiled += 1
        for inst in valid:
            m = zapspec.GrammarMatcher(cg)
            for k, t in enumerate(info.encode(compact(inst))):
                m.fill_next_token_bitmask(bm)
                got = row_bits(bm[0])
                want = expected_row(m._engine_mask_words(), info)
                assert np.array_equal(got, want), f"{name}: step {k}"
                steps += 1
                if not got[t] or not m.accept_token(t):
                    break  # e.g. keys not in the schema's order: the walk ends here
            else:
                m.fill_next_token_bitmask(bm)
                if m.is_accepting():
                    walked += 1
    print(f"{compiled} compiled, {refused} refused, {walked} instances walked to the end, {steps} masks compared")
    assert compiled >= 0.9 * len(sample)
    assert walked >= 0.5 * compiled and steps > 1000


def test_masks_equal_brute_force_acceptance(info):
    """For a few states of a few schemas: every token whose bit is set is
    accepted by a fork, and a random sample of unset tokens (and every stop
    token) is refused."""
    rng = np.random.default_rng(7)
    compiler = zapspec.GrammarCompiler(info)
    bm = zapspec.allocate_token_bitmask(1, info.vocab_size, framework="numpy")
    checked = 0
    for name, schema, valid, _ in maskbench_sample(400):
        try:
            cg = compiler.compile_json_schema(schema, any_whitespace=False, separators=(",", ":"), strict_mode=False, one_of="require_disjoint")
        except zapspec.ZapspecError:
            continue
        if not valid:
            continue
        ids = info.encode(compact(valid[0]))
        m = zapspec.GrammarMatcher(cg)
        for k in sorted(set(rng.integers(0, len(ids), size=3).tolist()) | {len(ids)}):
            while m.num_tokens < k and m.accept_token(ids[m.num_tokens]):
                pass
            if m.num_tokens != k:
                break
            m.fill_next_token_bitmask(bm)
            bits = row_bits(bm[0])[: info.vocab_size]
            on = np.flatnonzero(bits)
            off = rng.choice(np.flatnonzero(~bits), size=min(300, int((~bits).sum())), replace=False)
            for t in on.tolist():
                assert m.fork().accept_token(t), f"{name} step {k}: token {t} set but refused"
            for t in off.tolist():
                assert not m.fork().accept_token(t), f"{name} step {k}: token {t} unset but accepted"
            checked += 1
    assert checked >= 10
