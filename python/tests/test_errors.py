"""Bad input is a clear exception of the package's own, never a crash, and
the matcher stays usable after it."""

import numpy as np
import pytest

import zapspec

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


@pytest.fixture()
def matcher(compiler):
    return zapspec.GrammarMatcher(compiler.compile_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":")))


def test_invalid_json(compiler):
    with pytest.raises(zapspec.SchemaError) as e:
        compiler.compile_json_schema('{"type": "object",')
    assert e.value.kind == "invalid json" and e.value.position == (1, 18)
    assert isinstance(e.value, ValueError) and isinstance(e.value, zapspec.ZapspecError)
    # XGrammar's class for it, and the RuntimeError SGLang catches
    assert isinstance(e.value, zapspec.InvalidJSONError) and isinstance(e.value, RuntimeError)
    with pytest.raises(zapspec.SchemaError):
        compiler.compile_json_schema({"x": {1, 2}})  # not JSON-serialisable


def test_refused_schema_has_pointer(compiler):
    schema = {"properties": {"tags": {"type": "array", "uniqueItems": True}}}
    with pytest.raises(zapspec.SchemaError) as e:
        compiler.compile_json_schema(schema)
    assert e.value.pointer == "/properties/tags" and "uniqueItems" in e.value.kind
    with pytest.raises(zapspec.SchemaError) as e:
        compiler.compile_json_schema({"type": "string", "format": "iri"})
    assert "format" in e.value.kind
    with pytest.raises(zapspec.SchemaError) as e:
        # an indentation json.dumps would not write refused; under the
        # default any_whitespace=True indent is ignored, as in XGrammar
        compiler.compile_json_schema(SCHEMA, indent=-1, any_whitespace=False)
    assert e.value.kind == "option"
    compiler.compile_json_schema(SCHEMA, indent=2, any_whitespace=False)
    compiler.compile_json_schema(SCHEMA, indent=-1)
    with pytest.raises(TypeError):
        compiler.compile_json_schema(SCHEMA, no_such_option=True)


def test_limits_are_limit_exceeded(compiler):
    deep = {"type": "integer"}
    for _ in range(20):
        deep = {"type": "array", "items": deep}
    with pytest.raises(zapspec.LimitExceeded) as e:
        compiler.compile_json_schema(deep, max_depth=5)
    assert e.value.limit == "depth" and e.value.pointer


def test_bad_grammar_text(compiler):
    with pytest.raises(zapspec.GrammarError) as e:
        zapspec.Grammar.from_ebnf('root ::= "a" (')
    assert e.value.kind == "syntax" and e.value.position is not None
    with pytest.raises(zapspec.GrammarError) as e:
        compiler.compile_grammar("root ::= undefined-rule")
    assert e.value.kind == "undefined nonterminal"
    with pytest.raises(zapspec.GrammarError) as e:
        zapspec.Grammar.from_regex("a(b")
    assert e.value.kind == "regex" and e.value.position is not None
    with pytest.raises(zapspec.GrammarError):
        zapspec.Grammar.from_ebnf('a ::= "x"', root_rule_name="missing")
    with pytest.raises(TypeError):
        compiler.compile_grammar(42)


def test_unknown_tokens_and_rollback(info, matcher):
    for bad in (-1, info.vocab_size, 2**40):
        with pytest.raises(zapspec.InvalidTokenError):
            matcher.accept_token(bad)
    with pytest.raises(zapspec.InvalidTokenError):
        matcher.validate_tokens([0, -5])
    with pytest.raises(zapspec.RollbackError):
        matcher.rollback(1)
    with pytest.raises(zapspec.RollbackError):
        matcher.rollback(-1)
    ids = info.encode('{"a":1}')
    for t in ids:
        assert matcher.accept_token(t)
    # XGrammar accepts and ignores max_rollback_tokens (vLLM passes its
    # number of speculative tokens): rollback stays unbounded
    bounded = zapspec.GrammarMatcher(_compiled(info), max_rollback_tokens=1)
    for t in ids:
        assert bounded.accept_token(t)
    bounded.rollback(len(ids))
    assert bounded.max_rollback_tokens == -1 and bounded.num_tokens == 0
    with pytest.raises(zapspec.RollbackError):
        bounded.rollback(1)


def _compiled(info):
    return zapspec.GrammarCompiler(info).compile_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":"))


def test_bad_bitmasks(info, matcher):
    need = (info.vocab_size + 31) // 32
    with pytest.raises(zapspec.BitmaskError, match="int32"):
        matcher.fill_next_token_bitmask(np.zeros((1, need), dtype=np.int64))
    with pytest.raises(zapspec.BitmaskError, match="words per row"):
        matcher.fill_next_token_bitmask(np.zeros((1, need - 1), dtype=np.int32))
    with pytest.raises(zapspec.BitmaskError, match="rows"):
        matcher.fill_next_token_bitmask(np.zeros((2, need), dtype=np.int32), index=2)
    with pytest.raises(zapspec.BitmaskError, match="C-contiguous"):
        matcher.fill_next_token_bitmask(np.zeros((need, 2), dtype=np.int32).T)
    with pytest.raises(zapspec.BitmaskError, match="dimensions"):
        matcher.fill_next_token_bitmask(np.zeros((1, 1, need), dtype=np.int32))
    ro = np.zeros((1, need), dtype=np.int32)
    ro.setflags(write=False)
    with pytest.raises(zapspec.BitmaskError):
        matcher.fill_next_token_bitmask(ro)
    with pytest.raises(zapspec.BitmaskError):
        matcher.fill_next_token_bitmask([0] * need)
    with pytest.raises(zapspec.BitmaskError, match="twice"):
        zapspec.batch_fill_next_token_bitmask([matcher, matcher], np.zeros((2, need), dtype=np.int32))
    with pytest.raises(zapspec.BitmaskError, match="twice"):
        zapspec.batch_fill_next_token_bitmask(
            [matcher, matcher.fork()], np.zeros((2, need), dtype=np.int32), indices=[1, 1]
        )
    # still usable, and a 1-D row works
    row = np.zeros(need, dtype=np.int32)
    matcher.fill_next_token_bitmask(row)
    assert row.any()


def test_terminated_matcher(info, matcher):
    for t in info.encode('{"a":1}'):
        assert matcher.accept_token(t)
    assert matcher.accept_token(info.stop_token_ids[0])
    need = (info.vocab_size + 31) // 32
    with pytest.raises(zapspec.MatcherTerminatedError):
        matcher.fill_next_token_bitmask(np.zeros((1, need), dtype=np.int32))
    other = matcher.fork()
    other.rollback(1)
    bm = np.zeros((2, need), dtype=np.int32)
    with pytest.raises(zapspec.MatcherTerminatedError):
        zapspec.batch_fill_next_token_bitmask([other, matcher], bm)
    assert not bm.any()  # no row written
    assert not matcher.accept_token(info.encode("1")[0])


def test_tokenizer_errors(tmp_path):
    with pytest.raises(zapspec.TokenizerError):
        zapspec.TokenizerInfo.from_tiktoken("no_such_bpe")
    with pytest.raises(zapspec.TokenizerError):
        zapspec.TokenizerInfo.from_gguf(str(tmp_path / "missing.gguf"))
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF" + b"\xff" * 64)
    with pytest.raises(zapspec.TokenizerError):
        zapspec.TokenizerInfo.from_gguf(str(junk))
    bad_json = tmp_path / "tokenizer.json"
    bad_json.write_text("{not json")
    with pytest.raises(zapspec.TokenizerError):
        zapspec.TokenizerInfo.from_tokenizer_json(str(bad_json))
    # no stop token is allowed (XGrammar: the sequence then ends by the
    # grammar alone), but a stop id outside the vocabulary is not
    assert zapspec.TokenizerInfo(["a", "b"]).stop_token_ids == []
    with pytest.raises(zapspec.TokenizerError, match="stop"):
        zapspec.TokenizerInfo(["a", "b"], stop_token_ids=[7])
    with pytest.raises(zapspec.TokenizerError):
        zapspec.TokenizerInfo(["a", "\u4e00"], zapspec.VocabType.BYTE_LEVEL, stop_token_ids=[0])
    with pytest.raises(zapspec.TokenizerError):
        zapspec.TokenizerInfo(["a", 3], stop_token_ids=[0])
    with pytest.raises(zapspec.TokenizerError):
        zapspec.TokenizerInfo(["a", "b"], vocab_type="nonsense", stop_token_ids=[0])
