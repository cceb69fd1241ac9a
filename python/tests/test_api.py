"""The XGrammar-style API on small grammars: acceptance, masks, stop
tokens, rollback, fork, reset, jump-forward, drafts, caching."""

import json

import numpy as np
import pytest

import zapspec

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def allowed(bitmask_row: np.ndarray, vocab_size: int):
    bits = np.unpackbits(bitmask_row.view(np.uint8), bitorder="little")[:vocab_size]
    return set(np.flatnonzero(bits).tolist())


def walk(matcher, ids):
    for t in ids:
        assert matcher.accept_token(t), t


def test_json_schema_walk_stop_and_rollback(info, compiler):
    cg = compiler.compile_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":"))
    m = zapspec.GrammarMatcher(cg)
    bm = zapspec.allocate_token_bitmask(1, info.vocab_size, framework="numpy")
    ids = info.encode('{"name":"Bob","age":42}')
    for t in ids:
        assert m.fill_next_token_bitmask(bm) is True
        assert t in allowed(bm[0], info.vocab_size)
        for s in info.stop_token_ids:
            assert s not in allowed(bm[0], info.vocab_size)
        assert not m.is_accepting()
        assert m.accept_token(t)
    assert m.is_accepting() and m.is_completed() and not m.is_terminated()
    m.fill_next_token_bitmask(bm)
    assert set(info.stop_token_ids) <= allowed(bm[0], info.vocab_size)
    assert m.accept_token(info.stop_token_ids[-1])
    assert m.is_terminated() and m.is_completed() and not m.is_accepting()
    assert m.num_tokens == len(ids) + 1
    assert not m.accept_token(ids[0])  # nothing after the stop token
    with pytest.raises(zapspec.MatcherTerminatedError):
        m.fill_next_token_bitmask(bm)
    m.rollback(1)
    assert not m.is_terminated() and m.is_accepting()
    m.rollback(len(ids))
    assert m.num_tokens == 0
    m.fill_next_token_bitmask(bm)
    assert ids[0] in allowed(bm[0], info.vocab_size)


def test_rejected_token_leaves_state_usable(info, compiler):
    cg = compiler.compile_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":"))
    m = zapspec.GrammarMatcher(cg)
    bm = zapspec.allocate_token_bitmask(1, info.vocab_size, framework="numpy")
    before = None
    ids = info.encode('{"name":"Al')
    walk(m, ids)
    m.fill_next_token_bitmask(bm)
    before = bm.copy()
    bad = info.encode("\n")[0]  # a raw newline cannot be in a JSON string
    assert bad not in allowed(bm[0], info.vocab_size)
    assert not m.accept_token(bad)
    assert not m.accept_token(info.stop_token_ids[0])  # not accepting yet
    m.fill_next_token_bitmask(bm)
    assert np.array_equal(bm, before)
    walk(m, info.encode('ice","age":1}'))
    assert m.is_accepting()


def test_fork_reset_and_validate_tokens(info, compiler):
    cg = compiler.compile_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":"))
    m = zapspec.GrammarMatcher(cg)
    ids = info.encode('{"name":"Bob","age":42}')
    walk(m, ids[:3])
    f = m.fork()
    walk(f, ids[3:])
    assert f.is_accepting() and m.num_tokens == 3
    assert m.validate_tokens(ids[3:]) == len(ids) - 3
    assert m.validate_tokens(ids[3:] + info.stop_token_ids[:1] + [ids[0]]) == len(ids) - 3 + 1
    assert m.validate_tokens(info.encode("\n}")) == 0
    assert m.num_tokens == 3  # validate changes nothing
    m.reset()
    assert m.num_tokens == 0 and m.validate_tokens(ids) == len(ids)


def test_jump_forward_and_forced_tokens(info, compiler):
    cg = compiler.compile_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":"))
    m = zapspec.GrammarMatcher(cg)
    assert m.find_jump_forward_string() == '{"name":"'
    forced = m.compute_forced_tokens()
    text = info.decode(forced).decode()
    assert '{"name":"'.startswith(text) and len(forced) >= 1
    assert m.validate_tokens(forced) == len(forced)
    walk(m, info.encode('{"name":"Bob'))
    assert m.find_jump_forward_string() == ""  # the string may go on
    walk(m, info.encode('"'))
    assert m.find_jump_forward_string() == ',"age":'


def test_accept_string_is_one_step(info, compiler):
    m = zapspec.GrammarMatcher(compiler.compile_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":")))
    assert m.accept_string('{"name":"B')
    assert m.num_tokens == 1
    assert not m.accept_string("\n")
    assert m.accept_string(b'ob","age":7}')
    assert m.is_accepting()
    m.rollback(1)
    assert not m.is_accepting() and m.num_tokens == 1


def test_regex_ebnf_builtin_json(info, compiler):
    m = zapspec.GrammarMatcher(compiler.compile_regex(r"[0-9]{3}-[a-z]+"))
    walk(m, info.encode("123-abc"))
    assert m.is_accepting()
    assert m.validate_tokens(info.encode("7")) == 0
    g = zapspec.Grammar.from_ebnf('start ::= "yes" | "no"', root_rule_name="start")
    m = zapspec.GrammarMatcher(compiler.compile_grammar(g))
    walk(m, info.encode("no"))
    assert m.is_accepting()
    m = zapspec.GrammarMatcher(compiler.compile_grammar('root ::= "a"+'))
    walk(m, info.encode("aaa"))
    m = zapspec.GrammarMatcher(compiler.compile_builtin_json_grammar())
    walk(m, info.encode('{"a": [1, 2.5, "x", null, true]}'))
    assert m.is_accepting()
    assert "::=" in str(zapspec.Grammar.builtin_json_grammar())


def test_whitespace_and_strict_mode(info, compiler):
    loose = compiler.compile_json_schema(SCHEMA, any_whitespace=True, strict_mode=False)
    m = zapspec.GrammarMatcher(loose)
    walk(m, info.encode('{ "name" : "B",\n  "age": 3, "extra": [1] }'))
    assert m.is_accepting()
    # XGrammar's defaults: any whitespace, so compact JSON (pydantic's
    # model_dump_json) and json.dumps' spacing both pass
    for text in ('{"name":"B","age":3}', '{"name": "B", "age": 3}', '{\n  "name": "B",\n  "age": 3\n}'):
        default = zapspec.GrammarMatcher(compiler.compile_json_schema(SCHEMA))
        walk(default, info.encode(text))
        assert default.is_accepting()
    # any_whitespace=False without separators: json.dumps' ", " and ": "
    fixed = zapspec.GrammarMatcher(compiler.compile_json_schema(SCHEMA, any_whitespace=False))
    walk(fixed, info.encode('{"name": "B", "age": 3}'))
    assert fixed.is_accepting()
    assert fixed.fork().validate_tokens(info.encode(" ")) == 0
    strict = zapspec.GrammarMatcher(compiler.compile_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":")))
    assert strict.validate_tokens(info.encode('{"name":"B","age":3,"x":1}')) < len(info.encode('{"name":"B","age":3,"x":1}'))


def test_raw_vocabulary_with_padding_and_stop_override():
    vocab = ["<eos>", "a", "b", "ab", "Ġc"]
    info = zapspec.TokenizerInfo(vocab, zapspec.VocabType.BYTE_LEVEL, vocab_size=70, stop_token_ids=[0])
    assert info.vocab_size == 70 and info.tokenizer_vocab_size == 5
    # padding ids are special too (XGrammar reports them)
    assert info.decoded_vocab[4] == b" c" and info.special_token_ids == [0] + list(range(5, 70))
    cg = zapspec.GrammarCompiler(info).compile_regex("(ab)+ c")
    m = zapspec.GrammarMatcher(cg)
    bm = zapspec.allocate_token_bitmask(2, 70, framework="numpy")
    bm[:] = 0x5A5A5A5A  # garbage the fill must overwrite
    m.fill_next_token_bitmask(bm, index=1)
    assert allowed(bm[1], 70) == {1, 3}  # padding ids 5..69 never allowed
    assert (bm[0] == 0x5A5A5A5A).all()
    assert not m.accept_token(69)  # a padding id: refused, not an error
    walk(m, [3, 1, 2, 4])
    m.fill_next_token_bitmask(bm)
    assert allowed(bm[0], 70) == {0}
    m2 = zapspec.GrammarMatcher(cg, override_stop_tokens=[2])
    walk(m2, [3, 4])
    m2.fill_next_token_bitmask(bm)
    assert allowed(bm[0], 70) == {2}
    assert m2.accept_token(2) and m2.is_terminated()


def test_compiler_cache(info):
    c = zapspec.GrammarCompiler(info, cache_limit_bytes=10**9)
    a = c.compile_json_schema(SCHEMA)
    size = c.get_cache_size_bytes()
    assert size > 0
    b = c.compile_json_schema(json.dumps(SCHEMA))  # same canonical schema: a hit
    assert c.get_cache_size_bytes() == size
    c.compile_json_schema(SCHEMA, any_whitespace=False)  # other options: a new entry
    assert c.get_cache_size_bytes() > size
    c.clear_cache()
    assert c.get_cache_size_bytes() == 0
    tiny = zapspec.GrammarCompiler(info, cache_limit_bytes=1)
    tiny.compile_json_schema(SCHEMA)
    tiny.compile_regex("a+")
    assert tiny.get_cache_size_bytes() <= max(a.memory_size_bytes, 10**6)
    assert repr(b).startswith("CompiledGrammar(")


def test_bitmask_helpers_numpy():
    bm = zapspec.allocate_token_bitmask(2, 70, framework="numpy")
    assert bm.shape == (2, 3) and bm.dtype == np.int32 and (bm == -1).all()
    bm[0, 0] = 0b1010
    bm[1, 2] = 0  # tokens 64..69 banned in row 1
    logits = np.zeros((2, 72), dtype=np.float32)
    zapspec.apply_token_bitmask_inplace(logits, bm)
    assert np.isneginf(logits[0, [0, 2, 4, 31]]).all() and logits[0, 1] == 0 and logits[0, 3] == 0
    assert np.isneginf(logits[1, 64:70]).all() and (logits[1, :64] == 0).all()
    assert np.isneginf(logits[1, 64:]).all() and (logits[0, 70:] == 0).all()
    # float64 goes through the numpy path, same result
    l64 = np.zeros((2, 72))
    zapspec.apply_token_bitmask_inplace(l64, bm)
    assert np.array_equal(np.isneginf(l64[:, :96]), np.isneginf(logits[:, :96]))
    # indices: only row 1
    logits = np.zeros((2, 70), dtype=np.float32)
    zapspec.apply_token_bitmask_inplace(logits, bm, indices=[1])
    assert (logits[0] == 0).all() and np.isneginf(logits[1, 64:]).all()
    zapspec.reset_token_bitmask(bm)
    assert (bm == -1).all()


def test_bitmask_helpers_torch_equal_numpy():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    rng = np.random.default_rng(3)
    bm = rng.integers(-(2**31), 2**31, size=(3, 4), dtype=np.int64).astype(np.int32)
    bm[1] = -1
    bm[2, 1] = 0
    want = rng.normal(size=(3, 100)).astype(np.float32)
    got = torch.from_numpy(want.copy())
    zapspec.apply_token_bitmask_inplace(want, bm)
    zapspec.apply_token_bitmask_inplace(got, torch.from_numpy(bm))
    assert np.array_equal(got.numpy(), want)
    # indices, a 1-D row, and a torch bitmask from allocate_token_bitmask
    tb = zapspec.allocate_token_bitmask(2, 100, framework="torch")
    assert tb.dtype == torch.int32 and tuple(tb.shape) == (2, 4)
    tb[1, 0] = 0
    logits = torch.zeros(2, 100)
    zapspec.apply_token_bitmask_inplace(logits, tb, indices=[1])
    assert torch.isneginf(logits[1, :32]).all() and (logits[0] == 0).all() and (logits[1, 32:] == 0).all()
    row = torch.zeros(100)
    zapspec.apply_token_bitmask_inplace(row, tb[1])
    assert torch.isneginf(row[:32]).all() and (row[32:] == 0).all()


def test_apply_on_strided_logits():
    """llama-cpp-python hands processors a float32 view with a 12-byte
    stride into its candidate array: masked in place like a plain array."""
    rng = np.random.default_rng(5)
    cand = np.zeros(70, dtype=[("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
    cand["logit"] = rng.normal(size=70)
    view = cand["logit"]
    assert view.strides == (12,)
    bm = rng.integers(-(2**31), 2**31, size=3, dtype=np.int64).astype(np.int32)
    bm[1] = 0
    want = view.copy()
    zapspec.apply_token_bitmask_inplace(want, bm)
    zapspec.apply_token_bitmask_inplace(view, bm)
    assert np.array_equal(view, want) and np.isneginf(view[32:64]).all()
    bits = np.unpackbits(bm.view(np.uint8), bitorder="little")[:70].astype(bool)
    assert np.array_equal(np.isneginf(view), ~bits)
