"""Threads: 8 Python threads sharing one CompiledGrammar (a matcher each)
fill the single-threaded masks; the batch fill equals a loop of single
fills, with 1 and 2 threads and with row indices."""

import hashlib
import threading

import numpy as np
import pytest

import zapspec

from conftest import compact, maskbench_sample


def walks(info, compiler, n_schemas=12):
    out = []
    for name, schema, valid, _ in maskbench_sample(500)[:n_schemas]:
        try:
            cg = compiler.compile_json_schema(schema, any_whitespace=False, separators=(",", ":"), strict_mode=False, one_of="require_disjoint")
        except zapspec.ZapspecError:
            continue
        for inst in valid[:2]:
            out.append((cg, info.encode(compact(inst))))
    return out


def digests(info, cg, ids):
    m = zapspec.GrammarMatcher(cg)
    bm = zapspec.allocate_token_bitmask(1, info.vocab_size, framework="numpy")
    out = []
    for t in ids:
        m.fill_next_token_bitmask(bm)
        out.append(hashlib.sha1(bm.tobytes()).hexdigest())
        if not m.accept_token(t):
            break
    return out


def test_eight_threads_share_a_compiled_grammar(info):
    # separate compilers: the threaded run starts from cold caches too
    reference = [digests(info, cg, ids) for cg, ids in walks(info, zapspec.GrammarCompiler(info))]
    shared = walks(info, zapspec.GrammarCompiler(info))
    assert len(shared) >= 8
    results = [[None] * len(shared) for _ in range(8)]
    errors = []

    def run(k):
        try:
            order = list(range(len(shared)))
            order = order[k:] + order[:k]  # threads start on different grammars
            for i in order:
                results[k][i] = digests(info, *shared[i])
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(8):
        assert results[k] == reference


@pytest.mark.parametrize("threads", [1, 2, None])
def test_batch_equals_loop(info, compiler, threads):
    ws = walks(info, compiler)
    matchers = []
    rng = np.random.default_rng(threads)
    for cg, ids in ws:
        m = zapspec.GrammarMatcher(cg)
        for t in ids[: int(rng.integers(0, len(ids) + 1))]:
            if not m.accept_token(t):
                break
        matchers.append(m)
    n = len(matchers)
    batch = zapspec.allocate_token_bitmask(n + 3, info.vocab_size, framework="numpy")
    rows = rng.permutation(n + 3)[:n].tolist()
    need = zapspec.batch_fill_next_token_bitmask(matchers, batch, indices=rows, max_threads=threads)
    single = zapspec.allocate_token_bitmask(1, info.vocab_size, framework="numpy")
    for m, r, nd in zip(matchers, rows, need):
        assert m.fill_next_token_bitmask(single) == nd
        assert np.array_equal(batch[r], single[0])
    untouched = sorted(set(range(n + 3)) - set(rows))
    assert (batch[untouched] == -1).all()
    plain = zapspec.allocate_token_bitmask(n, info.vocab_size, framework="numpy")
    zapspec.batch_fill_next_token_bitmask(matchers, plain, max_threads=threads)
    assert np.array_equal(plain, batch[rows])


def test_concurrent_compiles_share_one_slot(info):
    """Threads compiling at once through a compiler with one compile slot
    all finish (the slot is handed on, also after a refused schema)."""
    compiler = zapspec.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    schemas = [{"type": "object", "properties": {f"k{i}": {"type": "integer", "minimum": i}}} for i in range(6)]
    schemas.append({"type": "array", "uniqueItems": True, "items": {"type": "string"}})  # refused
    results = [None] * len(schemas)

    def run(i):
        try:
            results[i] = compiler.compile_json_schema(schemas[i])
        except zapspec.SchemaError as e:
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(schemas))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert all(isinstance(r, zapspec.CompiledGrammar) for r in results[:-1])
    assert isinstance(results[-1], zapspec.SchemaError)
    compiler.compile_regex("a")  # the slot is free
