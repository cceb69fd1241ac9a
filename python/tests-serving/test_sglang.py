"""zapspec as SGLang's grammar backend, against SGLang's own classes on
SmolLM2's tokenizer: the plugin registers ``--grammar-backend zapspec``; for
JSON schemas, the any-JSON grammar, regexes, GBNF and structural tags
(both forms), the masks equal SGLang's xgrammar backend's token by token
along a valid output, and after rollback, copy and jump-forward; refusals
are SGLang's ``InvalidGrammarObject`` with zapspec's pointer; the batched
fill equals the per-row fills; the mask applies to CPU logits. (A whole
SGLang server needs a CPU build of sgl-kernel that PyPI does not have.)"""

import json

import pytest

from cases import MODEL, TAG

torch = pytest.importorskip("torch")

# Languages both engines agree on: no `maxLength` on strings (XGrammar
# 0.2.8 then refuses every escape, `"a\nb"` under maxLength 5, which JSON
# allows), no integers (zapspec also writes `2.0` and, above a minimum of 0,
# `-0`: JSON Schema integers are numbers with a zero fraction).
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "admin": {"type": "boolean"}, "email": {"type": "string"}},
    "required": ["name", "admin"],
    "additionalProperties": False,
}
ORDER = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
        "items": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"enum": ["one", "two"]}}, "required": ["sku", "qty"]}},
        "status": {"enum": ["open", "paid", "shipped"]},
    },
    "required": ["id", "items", "status"],
}
WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"],
}
TAG = json.loads(json.dumps(TAG))
TAG["format"]["tags"][0]["content"]["json_schema"] = WEATHER
VALID = [
    ("json", json.dumps(PERSON), '{"name": "Ada", "admin": true, "email": "ada@example.com"}'),
    ("json", json.dumps(ORDER), '{"id": "ABC-1234", "items": [{"sku": "x1", "qty": "two"}], "status": "paid"}'),
    ("json", "$$ANY$$", '{"a": [1, 2.5, "é"], "b": {"c": null}}'),
    ("regex", r"\(\d{3}\) \d{3}-\d{4}", "(555) 123-4567"),
    ("ebnf", 'root ::= ("yes" | "no") ", because " [a-z ]{1,40} "."', "no, because it is late."),
    ("structural_tag", json.dumps(TAG), '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius"}}</tool_call>'),
    (
        "structural_tag",
        json.dumps({"structures": [{"begin": "<f>", "schema": WEATHER, "end": "</f>"}], "triggers": ["<f"]}),
        'ok <f>{"city": "Rome", "unit": "celsius"}</f>',
    ),
]


@pytest.fixture(scope="module")
def backends():
    from transformers import AutoConfig, AutoTokenizer

    from sglang.srt.constrained.xgrammar_backend import XGrammarGrammarBackend

    from zapspec.contrib.sglang import ZapspecGrammarBackend

    tok = AutoTokenizer.from_pretrained(str(MODEL))
    n = AutoConfig.from_pretrained(str(MODEL)).vocab_size
    eos = [tok.eos_token_id]
    return tok, n, XGrammarGrammarBackend(tok, vocab_size=n, model_eos_token_ids=eos), ZapspecGrammarBackend(tok, vocab_size=n, model_eos_token_ids=eos)


def test_the_plugin_registers_the_backend():
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES
    from sglang.srt.constrained.base_grammar_backend import GRAMMAR_BACKEND_REGISTRY
    from sglang.srt.plugins import load_plugins

    load_plugins()
    assert "zapspec" in GRAMMAR_BACKEND_CHOICES
    assert "zapspec" in GRAMMAR_BACKEND_REGISTRY


def _dispatch(backend, kind, spec):
    return getattr(backend, f"dispatch_{kind}")(spec)


def _ids(words, n):
    bits = (words.view(-1, 1) >> torch.arange(32, dtype=torch.int32)) & 1
    return set(torch.nonzero(bits.flatten()[:n]).flatten().tolist())


def _xgrammar_only(tok, zb):
    """Tokens XGrammar may allow where zapspec does not, by reading: the
    tokenizer's special tokens (`<|im_start|>`, ...), which XGrammar takes
    as text JSON strings and free text may contain, and in free text the
    tokens that cannot begin a UTF-8 character (a continuation byte or an
    invalid lead byte first: RFC 3629 section 3)."""
    special = {i for i, a in tok.added_tokens_decoder.items() if a.special and i != tok.eos_token_id}
    vocab = zb.tokenizer_info.decoded_vocab
    bad_start = {i for i, b in enumerate(vocab) if b and (b[0] & 0xC0 == 0x80 or b[0] in (0xC0, 0xC1) or b[0] >= 0xF5)}
    return special | bad_start


def _same(xm, zm, extra, n, where=""):
    """zapspec's mask is XGrammar's less some of ``extra``."""
    assert not (zm & ~xm).any(), f"zapspec allows more {where}"
    more = _ids(xm & ~zm, n)
    assert more <= extra, f"{where}: {sorted(more - extra)[:10]}"


def _mask(g, n):
    m = g.allocate_vocab_mask(n, 1, "cpu")
    g.fill_vocab_mask(m, 0)
    return m[0].clone()


@pytest.mark.parametrize("kind,spec,text", VALID, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(VALID)])
def test_masks_equal_sglang_xgrammar_backend(backends, kind, spec, text):
    tok, n, xb, zb = backends
    xg, zg = _dispatch(xb, kind, spec), _dispatch(zb, kind, spec)
    assert type(zg).__name__ == "ZapspecGrammar", zg
    ids = tok.encode(text, add_special_tokens=False) + [tok.eos_token_id]
    extra = _xgrammar_only(tok, zb)
    for i, t in enumerate(ids):
        _same(_mask(xg, n), _mask(zg, n), extra, n, f"before token {i} ({tok.decode(ids[:i])!r})")
        xg.accept_token(t)
        zg.accept_token(t)
    assert xg.is_terminated() and zg.is_terminated()
    # rollback, then the same masks again
    for g in (xg, zg):
        g.rollback(3)
    _same(_mask(xg, n), _mask(zg, n), extra, n, "after rollback")
    assert not zg.is_terminated()
    # a copy starts over
    xc, zc = xg.copy(), zg.copy()
    _same(_mask(xc, n), _mask(zc, n), extra, n, "in a copy")
    assert xc.try_jump_forward(tok) == zc.try_jump_forward(tok)


def test_jump_forward_and_retokenize(backends):
    # zapspec forwards only what every continuation shares (whitespace may
    # follow a key under any_whitespace, so not the `: ` XGrammar adds):
    # its string is a prefix of XGrammar's and both accept the retokenized ids
    tok, n, xb, zb = backends
    spec = json.dumps({"type": "object", "properties": {"temperature_celsius": {"type": "boolean"}}, "required": ["temperature_celsius"]})
    xg, zg = xb.dispatch_json(spec), zb.dispatch_json(spec)
    first = tok.encode('{"', add_special_tokens=False)
    for g in (xg, zg):
        for t in first:
            g.accept_token(t)
    hx, hz = xg.try_jump_forward(tok), zg.try_jump_forward(tok)
    assert hz is not None and hx is not None
    s, state = zg.jump_forward_str_state(hz)
    assert s and xg.jump_forward_str_state(hx)[0].startswith(s), (hx, hz)
    new = tok.encode('{"' + s, add_special_tokens=False)
    xg.jump_and_retokenize(first, new, state)
    zg.jump_and_retokenize(first, new, state)
    _same(_mask(xg, n), _mask(zg, n), _xgrammar_only(tok, zb), n, "after retokenizing")


@pytest.mark.parametrize(
    "kind,spec,pointer",
    [
        ("json", json.dumps({"type": "object", "properties": {"a": {"type": "strin"}}}), "at /properties/a"),
        ("json", "{not json", ""),
        ("regex", "(unclosed", ""),
        ("ebnf", "root ::= undefined_rule", ""),
        ("structural_tag", json.dumps({"type": "structural_tag", "format": {"type": "nope"}}), "at /format"),
    ],
)
def test_refusals_are_invalid_grammar_objects(backends, kind, spec, pointer):
    from sglang.srt.constrained.base_grammar_backend import InvalidGrammarObject

    _, _, _, zb = backends
    g = _dispatch(zb, kind, spec)
    assert isinstance(g, InvalidGrammarObject), g
    assert g.error_message.startswith("zapspec refused the"), g.error_message
    assert pointer in g.error_message, g.error_message


def test_batched_fill_equals_row_fills_and_masks_apply_on_cpu(backends):
    from sglang.srt.constrained.base_grammar_backend import GrammarRow

    tok, n, _, zb = backends
    gs = [_dispatch(zb, k, s) for k, s, _ in VALID]
    for g, (_, _, text) in zip(gs, VALID):
        for t in tok.encode(text, add_special_tokens=False)[:3]:
            g.accept_token(t)
    rows = gs[0].allocate_vocab_mask(n, len(gs), "cpu")
    type(gs[0]).fill_vocab_mask_batched([GrammarRow(i, g) for i, g in enumerate(gs)], rows)
    for i, g in enumerate(gs):
        assert torch.equal(rows[i], _mask(g, n)), i
    logits = torch.zeros(len(gs), n)
    gs[0].apply_vocab_mask(logits, rows)
    for i, g in enumerate(gs):
        allowed = torch.isfinite(logits[i])
        bits = (rows[i].view(-1, 1) >> torch.arange(32)) & 1
        want = bits.flatten()[:n].bool()
        assert torch.equal(allowed, want), i
