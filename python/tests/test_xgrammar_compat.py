"""XGrammar's semantics where serving engines rely on them: defaults,
error classes, empty and stop-less vocabularies, termination without a stop
token, draft trees, the batch matcher, serialization. Where xgrammar is
importable, the same inputs are run through it and the answers compared."""

import json
import random
import re

import numpy as np
import pytest

import zapspec
from zapspec.testing import (
    _get_masked_tokens_from_bitmask,
    _is_grammar_accept_string,
    bitmask_to_bool_mask,
    bool_mask_to_bitmask,
)

try:  # the peer, for side-by-side answers (skipped where it is absent)
    import xgrammar as xgr
    from xgrammar.testing import _is_grammar_accept_string as xgr_accepts
except Exception:  # pragma: no cover - depends on the environment
    xgr = None

VOCAB = ["a", "b", "c", "{", "}", '"', ":", ",", " ", "true", "false", "null", "[", "]", "1"]


def both(schema_or_grammar, texts, **kw):
    """zapspec's acceptance of each text, checked against xgrammar's when
    it is importable."""
    if isinstance(schema_or_grammar, str) and "::=" in schema_or_grammar:
        g = zapspec.Grammar.from_ebnf(schema_or_grammar)
        peer = xgr and xgr.Grammar.from_ebnf(schema_or_grammar)
    elif schema_or_grammar is None:
        g = zapspec.Grammar.builtin_json_grammar()
        peer = xgr and xgr.Grammar.builtin_json_grammar()
    else:
        g = zapspec.Grammar.from_json_schema(schema_or_grammar, **kw)
        peer = xgr and xgr.Grammar.from_json_schema(json.dumps(schema_or_grammar), **kw)
    got = [_is_grammar_accept_string(g, t) for t in texts]
    if peer is not None:
        assert got == [xgr_accepts(peer, t) for t in texts]
    return got


def test_default_whitespace_is_any():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a", "b"]}
    texts = ['{"a":1,"b":"x"}', '{"a": 1, "b": "x"}', '{\n  "a": 1,\n  "b": "x"\n}', '{"a":1}']
    assert both(schema, texts) == [True, True, True, False]
    # json.dumps' separators when whitespace is fixed
    assert both(schema, texts, any_whitespace=False) == [False, True, False, False]
    assert both(schema, texts, any_whitespace=False, separators=(",", ":")) == [True, False, False, False]


def test_object_without_members_is_any_object():
    # vLLM compiles response_format json_object as exactly this schema
    texts = ["{}", '{"x": 1}', '{"x": {"y": [1, "z"]}}', "[]", "1"]
    assert both({"type": "object"}, texts) == [True, True, True, False, False]
    # annotations do not declare members
    assert both({"type": "object", "title": "t", "description": "d"}, texts[:2]) == [True, True]
    # declared members close the object under strict mode, `{}` included
    assert both({"type": "object", "properties": {}}, texts[:2]) == [True, False]
    assert both({"type": "object", "properties": {"p": {"type": "object"}}}, ['{"p": {"x": 1}}', '{"p": {}, "q": 1}']) == [True, False]
    # a free-form tool parameter stays free
    g = zapspec.Grammar.from_json_schema({"type": "object", "properties": {"args": {"type": "object"}}, "required": ["args"]})
    assert _is_grammar_accept_string(g, '{"args": {"k": [true]}}')
    # minProperties without properties is satisfiable (XGrammar refuses it)
    g = zapspec.Grammar.from_json_schema({"type": "object", "minProperties": 1})
    assert not _is_grammar_accept_string(g, "{}") and _is_grammar_accept_string(g, '{"k": null}')


def test_builtin_json_grammar_is_object_or_array():
    texts = ["{}", "[]", '{"a": [1, {"b": null}]}', '"x"', "1", " {}", "{} ", "[1, 2 ]"]
    assert both(None, texts) == [True, True, True, False, False, False, False, True]


def test_errors_are_runtime_errors():
    compiler = zapspec.GrammarCompiler(zapspec.TokenizerInfo(VOCAB))
    bad = [
        lambda: compiler.compile_json_schema('{"type": '),
        lambda: compiler.compile_json_schema({"type": "string", "format": "iri"}),
        lambda: compiler.compile_grammar('root ::= "a" ('),
        lambda: compiler.compile_regex("(a"),
    ]
    for f in bad:
        # what SGLang's dispatch_json / dispatch_ebnf / dispatch_regex catch
        with pytest.raises(RuntimeError) as e:
            f()
        assert isinstance(e.value, zapspec.ZapspecError) and isinstance(e.value, ValueError)
        assert e.value.kind
    with pytest.raises(zapspec.InvalidJSONError) as e:
        compiler.compile_json_schema('{"type": ')
    assert e.value.position == (1, 9)


def test_empty_and_stopless_vocabularies():
    empty = zapspec.TokenizerInfo([])
    assert empty.vocab_size == 0 and empty.decoded_vocab == [] and empty.stop_token_ids == []
    m = zapspec.GrammarMatcher(zapspec.GrammarCompiler(empty).compile_grammar('root ::= "ab" "c"*'))
    assert m.accept_string("ab") and m.is_completed() and not m.is_terminated()
    info = zapspec.TokenizerInfo(VOCAB, stop_token_ids=[])
    assert info.stop_token_ids == [] and info.vocab_size == len(VOCAB)
    c = zapspec.GrammarCompiler(info).compile_builtin_json_grammar()
    m = zapspec.GrammarMatcher(c)
    bm = zapspec.allocate_token_bitmask(1, info.vocab_size, framework="numpy")
    for t in [3, 4]:  # "{", "}"
        m.fill_next_token_bitmask(bm)
        assert t not in _get_masked_tokens_from_bitmask(bm, info.vocab_size)
        assert m.accept_token(t)
    m.fill_next_token_bitmask(bm)  # complete, nothing may follow, no stop token to allow
    assert _get_masked_tokens_from_bitmask(bm, info.vocab_size) == list(range(len(VOCAB)))
    # an int is a list of one stop token, as in XGrammar
    assert zapspec.TokenizerInfo(VOCAB, stop_token_ids=11).stop_token_ids == [11]


def test_tokenizer_metadata_and_serialization():
    vocab = ["<s>", "</s>", "▁a", "<0x0A>", "b"]
    info = zapspec.TokenizerInfo(vocab, zapspec.VocabType.BYTE_FALLBACK, vocab_size=8, stop_token_ids=[1], add_prefix_space=True)
    assert info.vocab_type == zapspec.VocabType.BYTE_FALLBACK and info.add_prefix_space
    assert info.special_token_ids[-3:] == [5, 6, 7]  # padding ids
    meta = info.dump_metadata()
    assert meta == '{"vocab_type":1,"vocab_size":8,"add_prefix_space":true,"stop_token_ids":[1]}'
    again = zapspec.TokenizerInfo.from_vocab_and_metadata(vocab, meta)
    assert again.decoded_vocab == info.decoded_vocab and again.dump_metadata() == meta
    if xgr is not None:
        assert xgr.TokenizerInfo(vocab, xgr.VocabType.BYTE_FALLBACK, vocab_size=8, stop_token_ids=[1], add_prefix_space=True).dump_metadata() == meta
    s = info.serialize_json()
    back = zapspec.TokenizerInfo.deserialize_json(s)
    assert back.serialize_json() == s and back.decoded_vocab == info.decoded_vocab
    assert back.special_token_ids == info.special_token_ids and back.stop_token_ids == [1]
    for bad, cls in [("not json", zapspec.InvalidJSONError), ("{}", zapspec.DeserializeFormatError),
                     (json.dumps({**json.loads(s), "__VERSION__": "v0"}), zapspec.DeserializeVersionError)]:
        with pytest.raises(cls):
            zapspec.TokenizerInfo.deserialize_json(bad)
        with pytest.raises(RuntimeError):
            zapspec.Grammar.deserialize_json(bad)
    g = zapspec.Grammar.from_json_schema({"type": "object", "properties": {"n": {"type": "integer"}}})
    gs = g.serialize_json()
    assert zapspec.Grammar.deserialize_json(gs).serialize_json() == gs
    assert str(zapspec.Grammar.deserialize_json(gs)) == str(g)
    tok = zapspec.TokenizerInfo(VOCAB)
    cg = zapspec.GrammarCompiler(tok).compile_grammar(g)
    cs = cg.serialize_json()
    cg2 = zapspec.CompiledGrammar.deserialize_json(cs, tok)
    assert cg2.serialize_json() == cs
    a, b = zapspec.GrammarMatcher(cg), zapspec.GrammarMatcher(cg2)
    ba, bb = (zapspec.allocate_token_bitmask(1, tok.vocab_size, framework="numpy") for _ in range(2))
    for t in [3, 5]:
        a.fill_next_token_bitmask(ba)
        b.fill_next_token_bitmask(bb)
        assert (ba == bb).all() and a.accept_token(t) == b.accept_token(t)


def test_terminate_without_stop_token():
    info = zapspec.TokenizerInfo(VOCAB + ["<eos>"], stop_token_ids=[len(VOCAB)])
    c = zapspec.GrammarCompiler(info).compile_grammar('root ::= "a" "b"*')
    m = zapspec.GrammarMatcher(c, terminate_without_stop_token=True)
    assert m.accept_token(0) and m.is_terminated() and m.is_completed()
    assert not m.accept_token(len(VOCAB))  # stop tokens are never accepted
    assert m.accept_token(1) and m.is_terminated()  # the grammar may still go on
    plain = zapspec.GrammarMatcher(c)
    assert plain.accept_token(0) and not plain.is_terminated()
    assert plain.accept_token(len(VOCAB)) and plain.is_terminated()


def brute_force_tree(matcher, nxt, sib, toks, vocab_size):
    """The rows traverse_draft_tree must write, from fork/accept/fill."""
    n = len(toks)
    rows = np.full((n, (vocab_size + 31) // 32), -1, dtype=np.int32)

    def visit(pos, parent, m):
        while pos != -1:
            ok = parent is None or (0 <= toks[pos] < vocab_size and not rows[parent][toks[pos] // 32] >> (toks[pos] % 32) & 1 == 0)
            f = m.fork()
            if ok and (parent is None or f.accept_token(toks[pos])) and not f.is_terminated():
                f.fill_next_token_bitmask(rows, pos)
                if nxt[pos] != -1:
                    visit(nxt[pos], pos, f)
            else:
                rows[pos] = 0
            pos = sib[pos]

    visit(0, None, matcher)
    return rows


def test_traverse_draft_tree_equals_brute_force():
    info = zapspec.TokenizerInfo(VOCAB, stop_token_ids=[])
    c = zapspec.GrammarCompiler(info).compile_builtin_json_grammar()
    rng = random.Random(7)
    for _ in range(60):
        n = rng.randint(1, 9)
        parent = [-1] + [rng.randrange(i) for i in range(1, n)]
        children = [[j for j in range(n) if parent[j] == i] for i in range(n)]
        nxt = [ch[0] if ch else -1 for ch in children]
        sib = [-1] * n
        for ch in children:
            for a, b in zip(ch, ch[1:]):
                sib[a] = b
        toks = [rng.choice([3, 4, 5, 12, 13, 14, 0, 6]) for _ in range(n)]
        m = zapspec.GrammarMatcher(c)
        m.accept_token(3)  # "{"
        want = brute_force_tree(m, nxt, sib, toks, info.vocab_size)
        got = zapspec.allocate_token_bitmask(n, info.vocab_size, framework="numpy")
        before = m.num_tokens
        assert m.traverse_draft_tree(np.array(nxt), np.array(sib), np.array(toks), got)
        assert (got == want).all() and m.num_tokens == before


def test_batch_matcher_equals_loops():
    info = zapspec.TokenizerInfo(VOCAB)
    c = zapspec.GrammarCompiler(info).compile_builtin_json_grammar()
    ms = [zapspec.GrammarMatcher(c) for _ in range(5)]
    singles = [zapspec.GrammarMatcher(c) for _ in range(5)]
    b = zapspec.BatchGrammarMatcher()
    for step in [[3, 12, 3, 0, 12], [5, 14, 4, 0, 13]]:
        assert b.batch_accept_token(ms, step) == [s.accept_token(t) for s, t in zip(singles, step)]
        got = zapspec.allocate_token_bitmask(5, info.vocab_size, framework="numpy")
        want = zapspec.allocate_token_bitmask(5, info.vocab_size, framework="numpy")
        b.batch_fill_next_token_bitmask(ms, got)
        for i, s in enumerate(singles):
            s.fill_next_token_bitmask(want, i)
        assert (got == want).all()
    strings = ["a", "1", "]", '"', "x"]
    assert b.batch_accept_string(ms, strings) == [s.accept_string(x) for s, x in zip(singles, strings)]
    counts = [min(k, s.num_tokens) for k, s in zip([1, 2, 1, 1, 0], singles)]
    zapspec.BatchGrammarMatcher.batch_rollback(ms, counts)
    for s, k in zip(singles, counts):
        s.rollback(k)
    assert [m.num_tokens for m in ms] == [s.num_tokens for s in singles]
    with pytest.raises(RuntimeError):
        b.batch_accept_token(ms, [1])


def test_max_rollback_tokens_is_ignored():
    info = zapspec.TokenizerInfo(VOCAB)
    c = zapspec.GrammarCompiler(info).compile_builtin_json_grammar()
    m = zapspec.GrammarMatcher(c, max_rollback_tokens=1)
    for t in [3, 5, 0, 5]:
        assert m.accept_token(t)
    m.rollback(4)
    assert m.max_rollback_tokens == -1 and m.num_tokens == 0


def test_bool_mask_round_trip():
    rng = np.random.default_rng(3)
    mask = rng.random((3, 70)) < 0.5
    bm = bool_mask_to_bitmask(mask)
    assert bm.shape == (3, 3) and bm.dtype == np.int32
    assert (bitmask_to_bool_mask(bm, 70) == mask).all()
    assert (bitmask_to_bool_mask(bm)[:, 70:]).all()  # padding bits allowed


def test_regexes_are_ecmascript():
    # a `[` inside a class is literal (ECMAScript), as in XGrammar's email regex
    g = zapspec.Grammar.from_regex(r'"([\w.@[\]]|\\")+"')
    assert _is_grammar_accept_string(g, '"a[b]@c"') and not _is_grammar_accept_string(g, '"a b"')
    # \d is ASCII
    assert not _is_grammar_accept_string(zapspec.Grammar.from_regex(r"\d+"), "\u0663")
    # lazy quantifiers are quantifiers; a quantifier after one is not
    assert _is_grammar_accept_string(zapspec.Grammar.from_regex("a+?b"), "aab")
    for bad in ["a++", "a*+", "a+??", "a{2}*", "(?=a)"]:
        with pytest.raises(zapspec.GrammarError):
            zapspec.Grammar.from_regex(bad)


def test_uri_template_format():
    g = zapspec.Grammar.from_json_schema({"type": "string", "format": "uri-template"})
    for ok in ['"http://example.com/{id}"', '"/s{?q,lang}"', '"{+path:6}/x{#frag*}"']:
        assert _is_grammar_accept_string(g, ok)
    for bad in ['"{}"', '"{a"', '"{a b}"', '"{x:0}"']:
        assert not _is_grammar_accept_string(g, bad)


def test_traverse_draft_tree_refuses_bad_shapes():
    info = zapspec.TokenizerInfo(VOCAB, stop_token_ids=[])
    m = zapspec.GrammarMatcher(zapspec.GrammarCompiler(info).compile_builtin_json_grammar())
    nxt, sib, toks = np.array([1, 2, -1]), np.array([-1, -1, -1]), np.array([3, 5, 4])
    bm = zapspec.allocate_token_bitmask(3, info.vocab_size, framework="numpy")
    for args in [(nxt, sib[:2], toks, bm), (nxt, sib.astype(np.int32), toks, bm),
                 (nxt, sib, toks, bm[0]), (nxt, sib, toks, bm[:2]), (nxt, np.array([1, -1, -1]), toks, bm),
                 (np.array([1, 7, -1]), sib, toks, bm),
                 (np.array([1, 0, -1]), sib, toks, bm),  # a cycle
                 (np.array([1, -1, -1]), np.array([-1, 2, 1]), toks, bm)]:  # siblings in a loop
        with pytest.raises(zapspec.BitmaskError):
            m.traverse_draft_tree(*args)
    assert m.traverse_draft_tree(nxt, sib, toks, bm)  # still usable


def test_apply_warns_on_a_narrow_bitmask():
    logits = np.ones((1, 70), dtype=np.float32)
    bm = np.zeros((1, 2), dtype=np.int32)
    with pytest.warns(UserWarning, match="left unmasked"):
        zapspec.apply_token_bitmask_inplace(logits, bm)
    assert np.isinf(logits[0, :64]).all() and np.isfinite(logits[0, 64:]).all()


def test_overlapping_one_of_is_any_of_with_a_warning():
    schema = {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]}
    with pytest.warns(UserWarning, match="falling back to anyOf"):
        g = zapspec.Grammar.from_json_schema(schema)
    # 1 matches both branches: invalid under oneOf, accepted as anyOf (XGrammar's looseness)
    assert _is_grammar_accept_string(g, "1") and _is_grammar_accept_string(g, "-3")
    # zapspec's exact reading, one switch away
    with pytest.raises(zapspec.SchemaError):
        zapspec.Grammar.from_json_schema(schema, one_of="require_disjoint")


def test_traverse_draft_tree_takes_deep_chains_and_times_out_cleanly():
    """A 10,000-token chain is walked without a call stack per level; a
    near-zero time limit stops after the root's row, the matcher left at
    the root's state."""
    info = zapspec.TokenizerInfo(["a"], vocab_size=1, stop_token_ids=[])
    g = zapspec.GrammarCompiler(info).compile_grammar('root ::= "a" root | "a"')
    n = 10000
    nxt = np.array([i + 1 for i in range(n - 1)] + [-1], dtype=np.int64)
    sib = np.full(n, -1, dtype=np.int64)
    toks = np.zeros(n, dtype=np.int64)
    m = zapspec.GrammarMatcher(g)
    bm = np.zeros((n, 1), dtype=np.int32)
    assert m.traverse_draft_tree(nxt, sib, toks, bm)
    assert (bm[:, 0] == 1).all()
    bm[:] = 0
    assert m.traverse_draft_tree(nxt, sib, toks, bm, time_threshold=1e-9) is False
    assert bm[0, 0] == 1
    assert m.accept_string("a") and m.is_completed()


# Regexes on whose language the two readings agree (no `.`, no `\s`: zapspec
# reads those as ECMA-262 does, XGrammar more widely and more narrowly).
SAME_READING_REGEXES = [
    "123",
    "ww我😁",
    r"\^\$\.\*\+\?\\\(\)\[\]\{\}\|\/",
    r"\u{20BB7}\u0300\x1F\cJ",
    r"[\r\n\$\u0010-\u006F\]\--]+",
    r"[-a-zA-Z+--]+",
    r"^abc$",
    r"abc|de(f|g)",
    r"(a|b)?[a-z]+(abc)*",
    r"(?:abc)(?<n>d)",
    r"a()b",
    r"(a|)",
    r"a||b",
    r"a{1,3}?b+?c{2,}",
    r"\d\w\W\D",
    r"^\d\d\d\d-(0[1-9]|1[0-2])-([0-2]\d|3[01])$",
]


@pytest.mark.parametrize("regex", SAME_READING_REGEXES)
def test_regex_to_ebnf_is_xgrammars_layout(regex):
    """`zapspec.testing._regex_to_ebnf` writes plain GBNF (no regex
    terminal) in XGrammar's layout, and its language is
    `Grammar.from_regex`'s."""
    from zapspec.testing import _regex_to_ebnf

    text = _regex_to_ebnf(regex)
    if xgr is not None:
        from xgrammar.testing import _regex_to_ebnf as xgr_regex_to_ebnf

        assert text == xgr_regex_to_ebnf(regex)
    rng = random.Random(0)
    alphabet = list("abcdefg0123456789-+$.|()[]{}^\\/?*") + ["我", "😁", "\n", "\r", "\u0300", "\U00020bb7"]
    g_text = zapspec.Grammar.from_ebnf(text)
    g_regex = zapspec.Grammar.from_regex(regex)
    for _ in range(200):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
        assert _is_grammar_accept_string(g_text, s) == _is_grammar_accept_string(g_regex, s), s


def test_regex_to_ebnf_refuses_as_from_regex():
    from zapspec.testing import _regex_to_ebnf

    for regex, phrase in [
        ("a++", "Two consecutive repetition modifiers are not allowed."),
        ("a{1,3}?{1,3}", "Two consecutive repetition modifiers are not allowed."),
        ("[]", "Empty character class is not allowed in regex."),
        ("abc)", "Unmatched ')'"),
        ("abc((a)", "The parenthesis is not closed."),
        ("(?i)abc", "group modifier"),
    ]:
        with pytest.raises(zapspec.GrammarError, match=re.escape(phrase)):
            _regex_to_ebnf(regex)
        with pytest.raises(RuntimeError):
            zapspec.Grammar.from_regex(regex)


def test_json_schema_grammar_names_xgrammars_value_rules():
    """The printed grammar of a schema defines XGrammar's `basic_*` rules,
    so grammar text written against them extends it; the language is the
    schema's."""
    from zapspec.testing import _json_schema_to_ebnf

    schema = {"type": "object", "properties": {"basic_string": {"type": "integer"}}, "required": ["basic_string"]}
    for kw in [{}, {"any_whitespace": False}, {"any_whitespace": False, "separators": (",", ":")}]:
        text = _json_schema_to_ebnf(schema, **kw)
        for name in ["basic_escape", "basic_string_sub", "basic_any", "basic_integer", "basic_number",
                     "basic_string", "basic_boolean", "basic_null", "basic_array", "basic_object", "root"]:
            assert f"\n{name} ::=" in "\n" + text, (name, text)
        texts = ['{"basic_string": 1}', '{"basic_string":1}', '{"basic_string": "x"}', "{}"]
        assert both(schema, texts, **kw) == [_is_grammar_accept_string(zapspec.Grammar.from_ebnf(text), t) for t in texts]
    # an engine's own rules around the schema's, by XGrammar's names
    text = _json_schema_to_ebnf({"type": "integer"}) + 'wrapper ::= "<" basic_object ">" root\n'
    g = zapspec.Grammar.from_ebnf(text, root_rule_name="wrapper")
    assert _is_grammar_accept_string(g, '<{"k": [1, null]}>7')
    assert not _is_grammar_accept_string(g, '<{"k": [1, null]}>"7"')


def test_ebnf_c_escapes():
    """XGrammar's EBNF reads C's escapes in literals and classes."""
    g = 'root ::= "\\a\\b\\f\\v\\e\\0\\?\\\'" [\\e]'
    assert both(g, ["\a\b\f\v\x1b\x00?'\x1b", "\a\b\f\v\x1b\x00?'e"]) == [True, False]


LARK_CASES = [
    ('start: "a" "b" | "c" ("d" | "e")', ["ab", "cd", "ce", "", "a", "ade"]),
    ('start: ("a" | "b") ["c"]', ["a", "bc", "", "c", "abc"]),
    ("start: value\nvalue: \"x\" | \"(\" value \")\" | \"[\" values? \"]\"\nvalues: value (\",\" value)*",
     ["x", "((x))", "[x,(x),[x]]", "()", "[x,]", "[(])"]),
    ('start: SIGNED\nSIGNED: SIGN? DIGIT+\nSIGN: "+" | "-"\nDIGIT: "0".."9"', ["0", "+7", "-42", "+", "--1"]),
    ('start: "a"~2 "b"{1,2} "c"{,1}', ["aab", "aabbc", "ab", "aabbb", "aabcc"]),
    ('start: "Ab-C9"i', ["Ab-C9", "ab-c9", "AB-C9", "ab_c9"]),
    (r"start: /a.b/ /[0-9]{2,4}/", ["acb12", "a\nb12", "acb1"]),
    ("%import common.SIGNED_NUMBER\nstart: SIGNED_NUMBER", ["0", "-12", "+.5", "-1e3", "+", "x"]),
    ("%import common.ESCAPED_STRING\nstart: ESCAPED_STRING", ['""', '"a\\"b"', '"unterminated', "abc"]),
    ("%import common.WS\n%ignore WS\nstart: \"a\" DIGIT \"c\"..\"d\"\nDIGIT: \"0\"..\"9\"",
     ["a1c", "a 1 d", "a\n1\n c  ", " a1c", "a 1 e"]),
    ("%ignore /[ _]+/\nstart: \"a\" \"b\"", ["ab", "a_b", "a _ b___", "_ab", "a-b"]),
    ('start: "n=" %json {"type": "integer"}', ["n=12", "n=-3", "n=1.5", "n=x"]),
]


@pytest.mark.parametrize("lark, texts", LARK_CASES)
def test_lark_languages_match_xgrammar(lark, texts):
    """`Grammar.from_lark` (llguidance's and XGrammar's Lark dialect): the
    accepted strings, beside xgrammar's where it is importable."""
    g = zapspec.Grammar.from_lark(lark)
    got = [_is_grammar_accept_string(g, t) for t in texts]
    assert any(got) and not all(got), got  # each case has both kinds
    if xgr is not None:
        peer = xgr.Grammar.from_lark(lark)
        assert got == [xgr_accepts(peer, t) for t in texts]
    compiled = zapspec.GrammarCompiler(zapspec.TokenizerInfo(["a", "b"])).compile_lark(lark)
    assert compiled is not None


def test_lark_named_grammars_and_errors():
    item = zapspec.Grammar.from_json_schema({"type": "integer"})
    g = zapspec.Grammar.from_lark('start: "[" @item ("," @item)* "]"', named_grammars={"item": item})
    assert _is_grammar_accept_string(g, "[1,2]") and not _is_grammar_accept_string(g, "[1,x]")
    g = zapspec.Grammar.from_lark("start: @pair", named_grammars={"pair": "start: /[a-z]+/ \":\" /[0-9]+/"})
    assert _is_grammar_accept_string(g, "ab:12")
    for lark, phrase in [
        ('item: "a"', "no start rule"),
        ("start: missing", "unknown name 'missing'"),
        ('start: TOKEN\nTOKEN: rule\nrule: "a"', "terminal 'TOKEN' cannot reference rule 'rule'"),
        ("start: FOO\nFOO: BAR\nBAR: FOO", "circular reference in terminal"),
        ('start "a"', "expected ':' after rule name"),
        ('start: "a"{3,2}', "repetition end must be greater"),
        ('start: "z".."a"', "range start must not exceed end"),
        ("start: @other", "unknown named grammar '@other'"),
        ("start: <|tool|>", "special tokens"),
    ]:
        with pytest.raises(zapspec.GrammarError, match=re.escape(phrase)) as info:
            zapspec.Grammar.from_lark(lark)
        assert "Lark error at line " in str(info.value)


MACRO_CASES = [
    ('root ::= "ID-" Regex("[0-9]{5}")', ["ID-12345", "ID-1234", "ID-123456", "12345"]),
    ('root ::= Regex("a.b")', ["acb", "a\nb", "ab"]),
    ('root ::= Regex("a.b", flags="")', ["acb", "a\nb"]),
    ('root ::= Regex("a.b", flags="is")', ["A\nB", "acb", "ab"]),
    ('root ::= Regex("(?i)abc")', ["ABC", "aBc", "abd"]),
    ('root ::= Regex("^(ab)+$")', ["abab", "ab", "aba", ""]),
    ('root ::= r "z"\nr ::= Regex("a*")', ["z", "aaz", "a"]),
    ('root ::= Regex("\\\\S+", json_string=true)', ["abc", 'a"b', "a\\b", "a b"]),
    ('root ::= Substring("abc", "de", "fg")', ["", "abc", "de", "abcde", "defg", "abcdefg", "ab", "cde", "abcfg"]),
    ('root ::= "x" Substring("ab", "c") "y"', ["xy", "xaby", "xabcy", "xcy", "xay"]),
    ('root ::= TagDispatch(("<tool>", body), excludes=("</end>"))\nbody ::= "{" [a-z]* "}"',
     ["", "free text", "a <tool>{x} b <tool>{} c", "<tool>{x", "text </end>", "<too", "<tool>x}"]),
    ('root ::= TagDispatch(("<t>", b), loop_after_dispatch=false)\nb ::= "x"', ["a<t>x", "a<t>xb", "a<t>x<t>x", "plain"]),
    ('root ::= TagDispatch(excludes=("bcd", "abce"))', ["abc", "hello", "abcd", "aabce", "abcbcd"]),
    ('root ::= TagDispatch(loop_after_dispatch=true)', ["any string", "", "好"]),
]


@pytest.mark.parametrize("ebnf, texts", MACRO_CASES)
def test_ebnf_macros_match_xgrammar(ebnf, texts):
    """XGrammar's EBNF macros `Regex`, `Substring` and `TagDispatch`: the
    accepted strings, beside xgrammar's where it is importable."""
    got = both(ebnf, texts)
    assert len(set(got)) == 2 or ebnf.endswith("loop_after_dispatch=true)"), got


def test_ebnf_macro_errors():
    for ebnf, phrase in [
        ("root ::= Regex()", "Regex expects exactly one string argument"),
        ('root ::= Regex("a", foo=true)', "Regex does not support the named argument foo"),
        ('root ::= Regex("a", flags="m")', "regular-expression flag 'm' is not supported"),
        (r'root ::= Regex("(a)\\1")', "bad regex"),
        ('root ::= Substring("a", 1)', "Substring() arguments must be strings"),
        ('root ::= TagDispatch(("tag1", r), excludes=("tag1"))\nr ::= "a"',
         "Exclude string must not be a prefix of trigger string: tag1"),
        ('root ::= TagDispatch(("t", r), stop_eos=false)\nr ::= "a"', "Unknown named argument for TagDispatch: stop_eos"),
        ('root ::= Token(128010) "a"', "token-level macro Token"),
    ]:
        with pytest.raises(zapspec.GrammarError, match=re.escape(phrase)) as info:
            zapspec.Grammar.from_ebnf(ebnf)
        assert isinstance(info.value, RuntimeError)
        assert info.value.position is not None


def test_tag_dispatch_masks_free_text_and_the_body():
    """Free text of a TagDispatch allows every token that neither completes
    an excluded string nor a tag with a wrong body; inside the body only
    what the rule allows."""
    vocab = ["<t>", "a", "b", "<", "t>", "x", "}", "{", "</end>", "</"]
    info = zapspec.TokenizerInfo(vocab)
    compiled = zapspec.GrammarCompiler(info).compile_grammar(
        'root ::= TagDispatch(("<t>", b), excludes=("</end>"))\nb ::= "{" "x"* "}"'
    )
    m = zapspec.GrammarMatcher(compiled, terminate_without_stop_token=True)
    mask = zapspec.allocate_token_bitmask(1, len(vocab))
    m.fill_next_token_bitmask(mask)
    rejected = {vocab[i] for i in _get_masked_tokens_from_bitmask(mask, len(vocab))}
    assert rejected == {"</end>"}
    assert m.accept_token(vocab.index("a")) and m.accept_token(vocab.index("<t>"))
    m.fill_next_token_bitmask(mask)
    allowed = set(vocab) - {vocab[i] for i in _get_masked_tokens_from_bitmask(mask, len(vocab))}
    assert allowed == {"{"}


def test_grammar_union_and_concat():
    a = zapspec.Grammar.from_ebnf('root ::= Substring("ab", "cd")')
    z = zapspec.Grammar.from_ebnf('root ::= "z"')
    union, concat = zapspec.Grammar.union(a, z), zapspec.Grammar.concat(a, z)
    texts = ["", "ab", "abcd", "z", "abz", "abcdz", "cdab", "b"]
    got = ([_is_grammar_accept_string(union, t) for t in texts], [_is_grammar_accept_string(concat, t) for t in texts])
    assert got == ([True, True, True, True, False, False, False, False], [False, False, False, True, True, True, False, False])
    if xgr is not None:
        pa, pz = xgr.Grammar.from_ebnf('root ::= Substring("ab", "cd")'), xgr.Grammar.from_ebnf('root ::= "z"')
        peer = ([xgr_accepts(xgr.Grammar.union(pa, pz), t) for t in texts], [xgr_accepts(xgr.Grammar.concat(pa, pz), t) for t in texts])
        assert got == peer
    with pytest.raises(zapspec.GrammarError):
        zapspec.Grammar.union()


def test_intersection_terminals_survive_serialization():
    """A regex terminal intersected with another (a `pattern` under
    `maxLength`, `Regex(…, json_string=true)`) prints as `/a/ & /b/` and
    reads back."""
    for g, yes, no in [
        (zapspec.Grammar.from_json_schema({"type": "string", "pattern": "^a+$", "maxLength": 3}), '"aaa"', '"aaaa"'),
        (zapspec.Grammar.from_ebnf(r'root ::= Regex("\\S+", json_string=true)'), "abc", 'a"b'),
    ]:
        back = zapspec.Grammar.deserialize_json(g.serialize_json())
        assert str(back) == str(g)
        assert _is_grammar_accept_string(back, yes) and not _is_grammar_accept_string(back, no)


def test_decoded_vocab_shows_control_token_text(tmp_path):
    """A Hugging Face tokenizer's special added tokens show their text in
    `decoded_vocab` (as XGrammar shows it) and survive serialization, while
    the engine never matches them as text."""
    special = lambda i, c: {"id": i, "content": c, "single_word": False, "lstrip": False,
                            "rstrip": False, "normalized": False, "special": True}
    vocab = {"<s>": 0, "</s>": 1, "<": 2, "s": 3, ">": 4, "a": 5, "/": 6}
    tj = {"version": "1.0", "truncation": None, "padding": None,
          "added_tokens": [special(0, "<s>"), special(1, "</s>")],
          "normalizer": None, "pre_tokenizer": None, "post_processor": None, "decoder": None,
          "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                    "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                    "vocab": vocab, "merges": []}}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(tj))
    info = zapspec.TokenizerInfo.from_tokenizer_json(str(path))
    assert info.decoded_vocab[:2] == [b"<s>", b"</s>"]
    assert {0, 1} <= set(info.special_token_ids)
    back = zapspec.TokenizerInfo.deserialize_json(info.serialize_json())
    assert back.decoded_vocab == info.decoded_vocab
    # `<s>` as text is written with ordinary tokens, never with the control token
    compiled = zapspec.GrammarCompiler(info).compile_grammar('root ::= "<s>"')
    m = zapspec.GrammarMatcher(compiled)
    assert not m.accept_token(0)
    assert m.accept_token(2) and m.accept_token(3) and m.accept_token(4)


@pytest.mark.parametrize(
    "ebnf, expected",
    [
        ('root ::= a b | "x"\na ::= "x" | ""\nb ::= "y" c | ""\nc ::= "z"\n', [0, 1, 2]),
        # `[a-z]*` and `("p" "q")?` are no rules of the text
        ('root ::= a [a-z]* ("p" "q")?\na ::= "x" | ""\nb ::= "y"\n', [0, 1]),
        ('root ::= a c\na ::= "x" | ""\nb ::= "y" | ""\nc ::= a b\n', [0, 1, 2, 3]),
        ('root ::= "x" a\na ::= "y"*\n', [1]),
    ],
)
def test_allow_empty_rule_ids_are_the_nullable_rules_as_written(ebnf, expected):
    from zapspec.testing import _get_allow_empty_rule_ids

    compiled = zapspec.GrammarCompiler(zapspec.TokenizerInfo([])).compile_grammar(ebnf)
    assert _get_allow_empty_rule_ids(compiled) == expected
    # by brute force: rule i derives "" exactly when a grammar rooted there accepts ""
    names = [line.split("::=")[0].strip() for line in ebnf.strip().splitlines()]
    nullable = [
        i for i, n in enumerate(names) if _is_grammar_accept_string(zapspec.Grammar.from_ebnf(ebnf, root_rule_name=n), "")
    ]
    assert nullable == expected


def _plain_decimals(rng, n):
    """Random plain JSON decimal texts near small bounds (signs, zeros,
    fractions, trailing zeros), plus a few that are not JSON numbers."""
    out = ["0", "-0", "-0.0", "0.000", "00", "1.", ".5", "+1", "01", "-"]
    for _ in range(n):
        sign = rng.choice(["", "-"])
        whole = str(rng.choice([0, 0, 1, 2, 3, 4, 5, 9, 10, 12, 99, 100, 127, 128, 1000]))
        frac = rng.choice(["", "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 7)))])
        out.append(sign + whole + frac)
    return out


@pytest.mark.parametrize(
    "lo, hi, ex_lo, ex_hi",
    [(-4.0, 4.0, False, False), (1.5, 5.75, False, False), (None, -1.5, False, False),
     (0.5, None, True, False), (-0.5, 0.5, False, True), (3.14159, 3.14159, False, False),
     (10.5, 2.5, False, False), (-100.0, 127.0, True, True), (None, None, False, False)],
)
def test_number_range_regex_is_the_bounds(lo, hi, ex_lo, ex_hi):
    """`_generate_float_regex` fully matches exactly the JSON numbers in
    the bounds (checked by value with Python's decimal arithmetic), and is
    the language a schema with those bounds gets."""
    from decimal import Decimal

    from zapspec.testing import _generate_float_regex

    rx = re.compile(_generate_float_regex(lo, hi, ex_lo, ex_hi))
    json_number = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")
    schema = {"type": "number"}
    if lo is not None:
        schema["exclusiveMinimum" if ex_lo else "minimum"] = lo
    if hi is not None:
        schema["exclusiveMaximum" if ex_hi else "maximum"] = hi
    if lo is not None and hi is not None and lo > hi:
        assert rx.pattern == "^()$"
        with pytest.raises(zapspec.SchemaError, match="contradict"):
            zapspec.Grammar.from_json_schema(schema)
        return
    g = zapspec.Grammar.from_json_schema(schema)
    for text in _plain_decimals(random.Random(7), 300):
        ok = json_number.fullmatch(text) is not None
        if ok:
            v = Decimal(text)
            ok = (lo is None or (v > Decimal(repr(lo)) if ex_lo else v >= Decimal(repr(lo)))) and (
                hi is None or (v < Decimal(repr(hi)) if ex_hi else v <= Decimal(repr(hi)))
            )
        assert (rx.fullmatch(text) is not None) == ok, text
        assert _is_grammar_accept_string(g, text) == ok, text


def test_integer_range_regex_and_bad_bounds():
    from zapspec.testing import _generate_float_regex, _generate_range_regex

    rx = re.compile(_generate_range_regex(-15, 1278))
    for i in range(-40, 1400):
        assert (rx.fullmatch(str(i)) is not None) == (-15 <= i <= 1278)
    assert rx.fullmatch("3.0") is None
    assert _generate_range_regex(5, 2) == "^()$"
    with pytest.raises(zapspec.SchemaError, match="not finite") as e:
        _generate_float_regex(float("inf"), 2.0)
    assert isinstance(e.value, RuntimeError) and e.value.kind == "unsupported `minimum`"


def test_serialization_version_and_debug_state():
    assert zapspec.get_serialization_version() == "zapspec-v1"
    g = zapspec.Grammar.from_ebnf('root ::= "a"')
    assert json.loads(g.serialize_json())["__VERSION__"] == zapspec.get_serialization_version()
    from zapspec.testing import _get_matcher_from_grammar

    m = _get_matcher_from_grammar('root ::= "ab" [c]*')
    before = m._debug_print_internal_state()
    assert m.accept_string("a")
    after = m._debug_print_internal_state()
    assert before.startswith("terminated: false") and after != before
    assert "steps that can be rolled back: 1" in after
