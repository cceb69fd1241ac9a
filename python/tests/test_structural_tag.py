"""Structural tags and the built-in tool-calling formats: each format's
language on instances, refusals as the package's exceptions with a JSON
pointer, masks inside free text and calls, and — where xgrammar is
importable — the same tags and instances through xgrammar, answers
compared."""

import itertools
import json

import numpy as np
import pytest

import zapspec
from zapspec.builtin_structural_tag import FAMILIES, get_model_structural_tag
from zapspec.structural_tag import (
    AnyTextFormat,
    JSONSchemaFormat,
    StructuralTag,
    TagFormat,
    TriggeredTagsFormat,
)
from zapspec.testing import _is_grammar_accept_string

try:  # the peer, for side-by-side answers (skipped where it is absent)
    import xgrammar as xgr
    from xgrammar.builtin_structural_tag import get_model_structural_tag as xgr_builtin
    from xgrammar.testing import _is_grammar_accept_string as xgr_accepts
except Exception:  # pragma: no cover - depends on the environment
    xgr = None

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TIME = {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}


def stag(fmt):
    return {"type": "structural_tag", "format": fmt}


def check(fmt, accepted, refused):
    g = zapspec.Grammar.from_structural_tag(stag(fmt))
    peer = xgr and xgr.Grammar.from_structural_tag(stag(fmt))
    for s, want in [(s, True) for s in accepted] + [(s, False) for s in refused]:
        assert _is_grammar_accept_string(g, s) == want, (fmt, s)
        if peer is not None:
            assert xgr_accepts(peer, s) == want, ("xgrammar disagrees", fmt, s)


def test_triggered_tags_with_free_text():
    fmt = {
        "type": "triggered_tags",
        "triggers": ["<function="],
        "tags": [
            {"type": "tag", "begin": "<function=get_weather>", "content": {"type": "json_schema", "json_schema": CITY}, "end": "</function>"},
            {"type": "tag", "begin": "<function=get_time>", "content": {"type": "json_schema", "json_schema": TIME}, "end": "</function>"},
        ],
    }
    call = '<function=get_weather>{"city": "SF"}</function>'
    check(
        fmt,
        ["", "no call", "I will call. " + call, call + " and " + '<function=get_time>{"tz": "UTC"}</function>', "<function"],
        ['<function=get_weather>{"tz": "UTC"}</function>', "<function=other>{}</function>", "x <function=get_weather>"],
    )


def test_think_then_answer():
    fmt = {
        "type": "sequence",
        "elements": [
            {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
            {"type": "const_string", "value": "\n"},
            {"type": "json_schema", "json_schema": CITY},
        ],
    }
    check(fmt, ['<think>a < b</think>\n{"city": "x"}'], ['<think>a</think></think>\n{"city": "x"}', "<think>a</think>\n{}"])


def test_tags_with_separator_and_or():
    tag = {"begin": "<a>", "content": {"type": "const_string", "value": "1"}, "end": "</a>"}
    check({"type": "tags_with_separator", "tags": [tag], "separator": ","}, ["", "<a>1</a>,<a>1</a>"], ["<a>1</a>,"])
    check(
        {"type": "or", "elements": [{"type": "regex", "pattern": "[0-9]+"}, {"type": "const_string", "value": "none"}]},
        ["42", "none"],
        ["4x", ""],
    )


def test_pydantic_models_and_the_legacy_form():
    st = StructuralTag(
        format=TriggeredTagsFormat(
            triggers=["<tool_call>"],
            tags=[TagFormat(begin="<tool_call>", content=JSONSchemaFormat(json_schema=CITY), end="</tool_call>")],
        )
    )
    g = zapspec.Grammar.from_structural_tag(st)
    assert _is_grammar_accept_string(g, 'hi <tool_call>{"city": "P"}</tool_call>')
    compiled = zapspec.GrammarCompiler(zapspec.TokenizerInfo(["a", "<tool_call>", "{"])).compile_structural_tag(st)
    assert isinstance(compiled, zapspec.CompiledGrammar)
    with pytest.warns(DeprecationWarning):
        g = zapspec.Grammar.from_structural_tag([zapspec.StructuralTagItem(begin="<f>", schema=CITY, end="</f>")], ["<f>"])
    assert _is_grammar_accept_string(g, 'x<f>{"city": "a"}</f>y')
    assert not _is_grammar_accept_string(g, "x<f>{}</f>y")


@pytest.mark.parametrize(
    "fmt, pointer, needle",
    [
        ({"type": "nope"}, "/format/type", "Format type not recognized"),
        ({"type": "sequence", "elements": []}, "/format", "at least one element"),
        ({"type": "tag", "begin": "a", "content": {"type": "any_text"}, "end": ""}, "/format/end", "at least one end string must be non-empty"),
        ({"type": "triggered_tags", "triggers": ["<f", "<fu"], "tags": [{"begin": "<fun", "content": {"type": "const_string", "value": ""}, "end": ">"}]}, "/format/triggers/1", "prefix"),
        ({"type": "triggered_tags", "triggers": ["<f="], "tags": [{"begin": "<g=", "content": {"type": "const_string", "value": ""}, "end": ">"}]}, "/format/tags/0", "does not match any trigger"),
        ({"type": "triggered_tags", "triggers": ["<f="], "excludes": ["f="], "tags": [{"begin": "<f=", "content": {"type": "const_string", "value": ""}, "end": ">"}]}, "/format/excludes/0", "inside trigger"),
        ({"type": "token", "token": "<|x|>"}, "/format", "token-level"),
    ],
)
def test_bad_tags_are_invalid_structural_tag_errors(fmt, pointer, needle):
    with pytest.raises(zapspec.InvalidStructuralTagError) as e:
        zapspec.Grammar.from_structural_tag(stag(fmt))
    assert isinstance(e.value, RuntimeError)
    assert e.value.pointer == pointer and needle in str(e.value)
    assert "Invalid structural tag error" in str(e.value)


def test_bad_json_and_bad_schemas_name_their_place():
    with pytest.raises(zapspec.InvalidJSONError, match="Failed to parse JSON"):
        zapspec.Grammar.from_structural_tag("{not json")
    bad = {"type": "json_schema", "json_schema": {"type": "integer", "minimum": 3, "maximum": 1}}
    with pytest.raises(zapspec.SchemaError) as e:
        zapspec.Grammar.from_structural_tag(stag({"type": "sequence", "elements": [bad]}))
    assert e.value.pointer.startswith("/format/elements/0/json_schema")
    with pytest.raises(ValueError, match="Unknown format type"):
        get_model_structural_tag("no_such_model", [])
    with pytest.raises(ValueError, match="not built"):
        get_model_structural_tag("minimax_m3", [])


def test_free_text_masks_forbid_only_what_could_start_a_trigger():
    """In free text every token is allowed but those that would write the
    trigger partly inside a tag's rules, or an excluded string."""
    vocab = ["a", "b", "<", "<tool", "<tool_call>", "</think>", "x</think>", "{", '"', "}"]
    info = zapspec.TokenizerInfo(vocab)
    fmt = StructuralTag(
        format=TriggeredTagsFormat(
            triggers=["<tool_call>"],
            tags=[TagFormat(begin="<tool_call>", content=JSONSchemaFormat(json_schema={"type": "object"}), end="</tool_call>")],
            excludes=["</think>"],
        )
    )
    m = zapspec.GrammarMatcher(zapspec.GrammarCompiler(info).compile_structural_tag(fmt))
    bm = zapspec.allocate_token_bitmask(1, info.vocab_size)
    m.fill_next_token_bitmask(bm)
    allowed = {vocab[i] for i in range(len(vocab)) if (int(bm[0, i // 32]) >> (i % 32)) & 1}
    assert allowed == {"a", "b", "<", "<tool", "<tool_call>", "{", '"', "}"}
    assert m.accept_string("<tool_call>")
    m.fill_next_token_bitmask(bm)
    allowed = {vocab[i] for i in range(len(vocab)) if (int(bm[0, i // 32]) >> (i % 32)) & 1}
    assert allowed == {"{"}


TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": CITY}},
    {"type": "function", "function": {"name": "get_time", "parameters": TIME}},
]
CHOICES = ["auto", "required", {"type": "function", "function": {"name": "get_time"}}, "none"]


def xml_param(style, key, value):
    """One parameter in an XML style: strings raw, other values as JSON."""
    raw = value if isinstance(value, str) else json.dumps(value)
    flag = "true" if isinstance(value, str) else "false"
    return {
        "qwen_xml": f"<parameter={key}>{raw}</parameter>",
        "minimax_xml": f'<parameter name="{key}">{raw}</parameter>',
        "deepseek_xml": f'<\uff5cDSML\uff5cparameter name="{key}" string="{flag}">{raw}</\uff5cDSML\uff5cparameter>',
        "deepseek_v4_1_xml": f'<\uff5cDSML\uff5c parameter name="{key}" string="{flag}">{raw}</\uff5cDSML\uff5c parameter>',
        "glm_xml": f"<arg_key>{key}</arg_key><arg_value>{raw}</arg_value>",
        "kimi_k3_xml": f'<|open|>argument key="{key}" type="{"string" if flag == "true" else "number"}"<|sep|>{raw}<|close|>argument<|sep|>',
        "cohere_xml": f'<cofl:value name="{key}" type="{"raw" if flag == "true" else "json"}">{raw}</cofl:value>',
    }[style]


def xml_args(style, args):
    return "\n".join(xml_param(style, k, v) for k, v in args.items())


XML_STYLES = ["qwen_xml", "minimax_xml", "deepseek_xml", "deepseek_v4_1_xml", "glm_xml", "kimi_k3_xml", "cohere_xml"]
XML_SCHEMAS = [
    {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]},
    {"type": "object", "properties": {"unit": {"enum": ["c", "f", 1]}, "tags": {"type": "array", "items": {"type": "string"}}}},
    {"type": "object", "properties": {"city": {"type": "string"}}, "additionalProperties": {"type": "number"}},
    {"type": "object"},
]
XML_ARGS = [
    {},
    {"city": "Paris"},
    {"city": "Paris", "days": 3},
    {"days": 3, "city": "Paris"},
    {"days": 3},
    {"city": "a </b> c", "days": "x"},
    {"unit": "c"},
    {"unit": 1, "tags": ["a", "b"]},
    {"unit": "k"},
    {"tags": "a"},
    {"city": "Rome", "extra": 2.5},
    {"extra": "two"},
]


@pytest.mark.skipif(xgr is None, reason="xgrammar is not installed (pip install xgrammar): nothing to compare with")
@pytest.mark.parametrize("style", XML_STYLES)
@pytest.mark.parametrize("schema", range(len(XML_SCHEMAS)))
@pytest.mark.parametrize("any_order", [False, True])
def test_xml_styles_accept_what_xgrammar_accepts(style, schema, any_order):
    fmt = {"type": "json_schema", "json_schema": XML_SCHEMAS[schema], "style": style, "any_order": any_order}
    ours = zapspec.Grammar.from_structural_tag(stag(fmt))
    theirs = xgr.Grammar.from_structural_tag(stag(fmt))
    for args in XML_ARGS:
        for text in [xml_args(style, args), " " + xml_args(style, args).replace("\n", "") + "\n"]:
            assert _is_grammar_accept_string(ours, text) == xgr_accepts(theirs, text), (fmt, text)


def test_xml_style_refusals_are_invalid_structural_tag_errors():
    obj = {"type": "object", "properties": {"n": {"type": "integer"}}}
    with pytest.raises(zapspec.InvalidStructuralTagError):
        zapspec.Grammar.from_structural_tag(stag({"type": "json_schema", "json_schema": obj, "style": "minimax_m3_xml"}))
    with pytest.raises(zapspec.InvalidStructuralTagError) as e:
        zapspec.Grammar.from_structural_tag(
            stag({"type": "json_schema", "json_schema": obj, "style": "cohere_xml", "excludes": ["<"]})
        )
    assert "/format/excludes" in str(e.value)
    with pytest.raises(zapspec.InvalidStructuralTagError):
        zapspec.Grammar.from_structural_tag(
            stag({"type": "json_schema", "json_schema": obj, "style": "qwen_xml", "max_whitespace_cnt": 0})
        )
    with pytest.raises(zapspec.InvalidStructuralTagError):
        zapspec.Grammar.from_structural_tag(stag({"type": "json_schema", "json_schema": {"type": "string"}, "style": "qwen_xml"}))


def family_instances(model):
    """Texts around the family's own delimiters: answers, calls (valid,
    invalid, two), reasoning blocks present and absent."""
    f = FAMILIES[model]
    if "layout" in f:
        return layout_instances(model)
    call = f["call"]

    def one(name, args):
        mid = ("0" + call.get("args", "").replace("{name}", name)) if "id" in call else ""
        body = xml_args(f["style"], args) if "style" in f else json.dumps(args)
        return call["begin"].replace("{name}", name) + mid + body + call["end"]

    sec = dict(f.get("section") or {"begin": "", "end": ""})
    calls = {
        "weather": sec["begin"] + one("get_weather", {"city": "Paris"}) + sec["end"],
        "time": sec["begin"] + one("get_time", {"tz": "UTC"}) + sec["end"],
        "two": sec["begin"]
        + one("get_weather", {"city": "a"})
        + sec.get("separator", "")
        + one("get_time", {"tz": "b"})
        + sec["end"],
        "glued": sec["begin"] + one("get_weather", {"city": "a"}) + one("get_time", {"tz": "b"}) + sec["end"],
        "bad": sec["begin"] + one("get_weather", {"tz": "x"}) + sec["end"],
        "unknown": sec["begin"] + one("send_mail", {"to": "x"}) + sec["end"],
    }
    think = f.get("think") or {"begin": "<think>", "end": "</think>", "suffix": ""}
    heads = ["", "thinking" + think["end"] + think["suffix"], think["begin"] + "thinking" + think["end"] + think["suffix"]]
    bodies = ["Sure, it is sunny.", *calls.values(), "Let me check. " + calls["weather"], calls["weather"] + " Done."]
    if "forced_prefix" in sec:
        bodies.append(sec["forced_prefix"] + calls["weather"])
    return [h + b for h, b in itertools.product(heads, bodies)]


def layout_instances(model):
    """Kimi-K3's blocks and Harmony's messages: each block or message
    present and absent, in and out of order, calls valid and invalid."""
    if model == "kimi_k3":

        def call(name, args):
            params = "".join(
                f'<|open|>argument key="{k}" type="string"<|sep|>{v}<|close|>argument<|sep|>' for k, v in args.items()
            )
            return f'<|open|>call tool="{name}" index="1"<|sep|>{params}<|close|>call<|sep|>'

        section = lambda *cs: "<|open|>tools<|sep|>" + "".join(cs) + "<|close|>tools<|sep|>"
        sections = [
            "",
            section(call("get_weather", {"city": "P"})),
            section(call("get_weather", {"city": "a"}), call("get_time", {"tz": "b"})),
            section(call("get_weather", {"tz": "x"})),
            section(),
        ]
        heads = ["", "hm<|close|>think<|sep|>", "<|open|>think<|sep|>hm<|close|>think<|sep|>"]
        responses = ["ok<|close|>response<|sep|>", "<|open|>response<|sep|>ok<|close|>response<|sep|>"]
        ends = ["<|close|>message<|sep|>", ""]
        return ["".join(p) for p in itertools.product(heads, responses, sections, ends)]
    assert model == "harmony"
    sep = "<|start|>assistant"
    headers = [
        "<|channel|>commentary to=functions.{}<|constrain|>json<|message|>",
        " to=functions.{}<|channel|>commentary <|constrain|>json<|message|>",
        " to=functions.{}<|channel|>commentary json<|message|>",
    ]
    messages = [
        "<|channel|>final<|message|>hi<|end|>",
        "<|channel|>final<|message|>hi<|return|>",
        "<|channel|>analysis<|message|>hm<|end|>",
        "<|channel|>commentary<|message|>hm<|end|>",
        *(h.format("get_weather") + '{"city": "P"}<|call|>' for h in headers),
        headers[0].format("get_time") + '{"city": "P"}<|call|>',
        '<|channel|>commentary to=browser.search code<|message|>{"query": "q"}<|call|>',
    ]
    out = [""]
    for a, b in itertools.product(messages, ["", *messages]):
        out.append(a + (sep + b if b else ""))
    return out


HARMONY_TOOLS = TOOLS + [
    {"type": "web_search_preview", "name": "browser.search", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}
]


@pytest.mark.skipif(xgr is None, reason="xgrammar is not installed (pip install xgrammar): nothing to compare with")
@pytest.mark.parametrize("choice", [*CHOICES, {"type": "web_search_preview"}])
@pytest.mark.parametrize("reasoning", ["enabled", "disabled"])
@pytest.mark.parametrize("parallel", [True, False])
def test_harmony_builtin_tools_accept_what_xgrammar_accepts(choice, reasoning, parallel):
    kw = dict(tool_choice=choice, reasoning=reasoning, parallel_tool_calls=parallel)
    ours = zapspec.Grammar.from_structural_tag(get_model_structural_tag("harmony", HARMONY_TOOLS, **kw))
    theirs = xgr.Grammar.from_structural_tag(xgr_builtin("harmony", HARMONY_TOOLS, **kw).model_dump_json())
    for text in layout_instances("harmony"):
        assert _is_grammar_accept_string(ours, text) == xgr_accepts(theirs, text), (kw, text)


def test_allowed_tools_must_name_offered_builtin_tools():
    choice = {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [{"type": "web_search_preview"}]}}
    with pytest.raises(ValueError, match="Allowed builtin tools are not found"):
        get_model_structural_tag("harmony", TOOLS, tool_choice=choice)


def test_builtin_tools_are_left_out_where_the_family_writes_none():
    search = {"type": "web_search_preview", "name": "browser.search", "parameters": None}
    with pytest.raises(ValueError, match="exactly one tool"):
        get_model_structural_tag("llama", [search], tool_choice={"type": "web_search_preview"})
    st = get_model_structural_tag("harmony", [search], tool_choice={"type": "web_search_preview"}, reasoning=False)
    g = zapspec.Grammar.from_structural_tag(st)
    assert _is_grammar_accept_string(g, '<|channel|>commentary to=browser.search code<|message|>{"q": 1}<|call|>')
    assert not _is_grammar_accept_string(g, "<|channel|>final<|message|>hi<|end|>")


@pytest.mark.skipif(xgr is None, reason="xgrammar is not installed (pip install xgrammar): nothing to compare with")
@pytest.mark.parametrize("model", sorted(FAMILIES))
@pytest.mark.parametrize("choice", range(len(CHOICES)))
@pytest.mark.parametrize("reasoning", ["enabled", "auto", "disabled"])
@pytest.mark.parametrize("parallel", [True, False])
def test_builtin_families_accept_what_xgrammar_accepts(model, choice, reasoning, parallel):
    kw = dict(tool_choice=CHOICES[choice], reasoning=reasoning, parallel_tool_calls=parallel)
    ours = zapspec.Grammar.from_structural_tag(get_model_structural_tag(model, TOOLS, **kw))
    theirs = xgr.Grammar.from_structural_tag(xgr_builtin(model, TOOLS, **kw).model_dump_json())
    for text in family_instances(model):
        assert _is_grammar_accept_string(ours, text) == xgr_accepts(theirs, text), (model, kw, text)


def test_builtin_qwen_3_language():
    st = get_model_structural_tag("qwen_3", TOOLS, tool_choice="required", reasoning="disabled")
    g = zapspec.Grammar.from_structural_tag(st)
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert _is_grammar_accept_string(g, call)
    assert _is_grammar_accept_string(g, call + "\nDone.")
    assert not _is_grammar_accept_string(g, "Sure. " + call)
    assert not _is_grammar_accept_string(g, "Sure.")
