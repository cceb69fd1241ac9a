"""`indent` with `any_whitespace=False` against Python's own `json.dumps`
(random instances, every indentation and separator pair), the ECMAScript
regex readings of `Grammar.from_regex`, quoted `email` local parts and the
schema errors whose wording XGrammar's tests match. Where xgrammar is
importable the same inputs go through it and the answers are compared."""

import json
import random

import pytest

import zapspec
from zapspec.testing import _is_grammar_accept_string as accepts

try:  # the peer, for side-by-side answers (skipped where it is absent)
    import xgrammar as xgr
    from xgrammar.testing import _is_grammar_accept_string as xgr_accepts
except Exception:  # pragma: no cover - depends on the environment
    xgr = None

needs_xgr = pytest.mark.skipif(xgr is None, reason="xgrammar is not importable")

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "n": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "pt": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
               "required": ["x", "y"]},
        "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
        "extra": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "kind": {"enum": ["a", {"k": [1, 2]}, []]},
        "free": {},
        "tree": {"$ref": "#/$defs/tree"},
    },
    "required": ["name", "n"],
    "$defs": {"tree": {"type": "object", "properties": {
        "v": {"type": "integer"},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/tree"}}}, "required": ["v"]}},
}


def rand_free(rng, depth):
    r = rng.random()
    if depth > 3 or r < 0.4:
        return rng.choice([None, True, 1, -2.5, "s", "é"])
    if r < 0.7:
        return [rand_free(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {f"k{i}": rand_free(rng, depth + 1) for i in range(rng.randrange(3))}


def rand_tree(rng, depth):
    t = {"v": rng.randrange(-5, 50)}
    if depth < 4 and rng.random() < 0.6:
        t["kids"] = [rand_tree(rng, depth + 1) for _ in range(rng.randrange(3))]
    return t


def rand_instance(rng):
    """A random valid instance of SCHEMA, keys in the schema's order."""
    v = {"name": rng.choice(["", "x", "a b", 'q"uote']), "n": rng.randrange(-1000, 1000)}
    if rng.random() < 0.7:
        v["tags"] = [rng.choice(["t", "u"]) for _ in range(rng.randrange(4))]
    if rng.random() < 0.5:
        v["pt"] = {"x": rng.choice([0, 1.5, -3]), "y": rng.choice([2, 0.25])}
    if rng.random() < 0.6:
        v["grid"] = [[rng.randrange(10) for _ in range(rng.randrange(3))] for _ in range(rng.randrange(3))]
    if rng.random() < 0.4:
        v["extra"] = {f"e{i}": rng.random() < 0.5 for i in range(rng.randrange(3))}
    if rng.random() < 0.5:
        v["kind"] = rng.choice(["a", {"k": [1, 2]}, []])
    if rng.random() < 0.5:
        v["free"] = rand_free(rng, 2)
    if rng.random() < 0.5:
        v["tree"] = rand_tree(rng, 2)
    return v


@pytest.mark.parametrize("indent", [0, 1, 2, 4])
@pytest.mark.parametrize("separators", [None, (",", ": "), (", ", ": "), (",", ":")])
def test_indent_is_json_dumps(indent, separators):
    g = zapspec.Grammar.from_json_schema(SCHEMA, any_whitespace=False, indent=indent, separators=separators)
    # json.dumps' separators with an indent, as XGrammar's default
    dumps_seps = separators or (",", ": ")
    rng = random.Random(indent * 7 + len(str(separators)))
    for _ in range(40):
        v = rand_instance(rng)
        text = json.dumps(v, indent=indent, separators=dumps_seps)
        assert accepts(g, text), text
        # the same value on one line, or indented by one more space, is refused
        assert not accepts(g, json.dumps(v, separators=dumps_seps))
        assert not accepts(g, json.dumps(v, indent=indent + 1, separators=dumps_seps))
        if dumps_seps[0] == ",":
            assert not accepts(g, text.replace(",\n", ", \n", 1)) or ",\n" not in text
    # invalid instances in the right layout are refused
    for bad in [{"name": "x"}, {"name": 1, "n": 1}, {"name": "x", "n": 1, "pt": {"x": 1}},
                {"name": "x", "n": 1, "kind": "b"}, {"name": "x", "n": 1, "tree": {"kids": []}}]:
        assert not accepts(g, json.dumps(bad, indent=indent, separators=dumps_seps))


def test_indent_refusals():
    for bad in [-1, 257]:
        with pytest.raises(zapspec.SchemaError):
            zapspec.Grammar.from_json_schema(SCHEMA, any_whitespace=False, indent=bad)
    with pytest.raises(zapspec.SchemaError):
        zapspec.Grammar.from_json_schema(SCHEMA, any_whitespace=False, indent=2, separators=(";", ": "))
    # containers deeper than max_indent_depth are not written; a schema
    # that needs them is a LimitExceeded with its pointer
    deep = {"type": "integer"}
    for _ in range(6):
        deep = {"type": "array", "items": deep, "minItems": 1}
    with pytest.raises(zapspec.LimitExceeded) as e:
        zapspec.Grammar.from_json_schema(deep, any_whitespace=False, indent=2, max_indent_depth=4)
    assert e.value.limit == "depth" and e.value.pointer.startswith("/items/items/items/items")
    g = zapspec.Grammar.from_json_schema(deep, any_whitespace=False, indent=2)
    assert accepts(g, json.dumps([[[[[[1]]]]]], indent=2))


@needs_xgr
def test_indent_agrees_with_xgrammar():
    # XGrammar writes free values ({}, additionalProperties) on one line
    # even under an indent; schemas whose every value is declared agree
    schema = {"type": "object", "properties": {
        "array_field": {"type": "array", "items": {"type": "string"}},
        "tuple_field": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"},
                        {"type": "array", "items": {"type": "string"}}], "items": False,
                        "minItems": 3},
        "object_field": {"type": "object", "additionalProperties": {"type": "integer"}}},
        "required": ["array_field", "tuple_field", "object_field"]}
    rng = random.Random(5)
    for kw in [{"indent": 2}, {"indent": 4}, {"indent": 2, "separators": (",", ": ")}]:
        g = zapspec.Grammar.from_json_schema(schema, any_whitespace=False, **kw)
        peer = xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False, **kw)
        for _ in range(20):
            v = {"array_field": ["a"] * rng.randrange(3),
                 "tuple_field": ["s", rng.randrange(9), ["x"] * rng.randrange(3)],
                 "object_field": {f"k{i}": i for i in range(rng.randrange(3))}}
            for text in [json.dumps(v, indent=kw["indent"], separators=(",", ": ")), json.dumps(v),
                         json.dumps(v, indent=kw["indent"] + 2, separators=(",", ": "))]:
                assert accepts(g, text) == xgr_accepts(peer, text), text


def test_regex_readings():
    # XGrammar's reading: a `{` that starts no quantifier and `[]` are errors
    for bad, phrase in [("a{,3}", "Invalid repetition"), ("a{", "Invalid repetition"),
                        ("[]", "Empty character class is not allowed in regex."),
                        ("abc)", "Unmatched ')'"), ("abc((a)", "The parenthesis is not closed.")]:
        with pytest.raises(zapspec.GrammarError, match=phrase.replace("(", r"\(").replace(")", r"\)")):
            zapspec.Grammar.from_regex(bad)
        if xgr is not None:
            with pytest.raises(RuntimeError):
                xgr.Grammar.from_regex(bad)
    # ECMAScript's Annex B reading, one keyword away
    g = zapspec.Grammar.from_regex("a{,3}", annex_b=True)
    assert accepts(g, "a{,3}") and not accepts(g, "aaa")
    g = zapspec.Grammar.from_regex("x[]|y", annex_b=True)
    assert accepts(g, "y") and not accepts(g, "x")
    assert accepts(zapspec.Grammar.from_regex("a[^]b"), "a\nb")
    assert accepts(zapspec.Grammar.from_regex("a}"), "a}")
    for bad in ["abc)", "(a"]:
        with pytest.raises(zapspec.GrammarError):
            zapspec.Grammar.from_regex(bad, annex_b=True)


EMAILS = [
    ('"very.(),:;<>[]\\".VERY.\\"very@\\\\ \\"very\\".unusual"@strange.example.com', True),
    ('" "@example.org', True),
    ('"john..doe"@example.org', True),
    ('""@example.org', True),
    ('"a\\b"@example.org', True),
    ('"' + "x" * 62 + '"@example.org', True),
    ('"' + "x" * 63 + '"@example.org', False),
    ('"' + "\\x" * 31 + '"@example.org', True),
    ('"' + "\\x" * 31 + 'y"@example.org', False),
    ('"a"b"@example.org', False),
    ('"a\\"@example.org', False),
    ('"tab\there"@example.org', False),
    ('"a"@', False),
    ('just"not"right@example.com', False),
    ('simple@example.com', True),
]


@pytest.mark.parametrize("email, ok", EMAILS)
def test_quoted_local_part_email(email, ok):
    g = zapspec.Grammar.from_json_schema({"type": "string", "format": "email"})
    assert accepts(g, json.dumps(email)) == ok


# XGrammar's error messages (what its tests match), for the schema errors
# both engines raise; zapspec's message contains XGrammar's phrase
ERRORS = [
    ({"type": "integer", "multipleOf": "x"}, "Value must be a number"),
    ({"type": "number", "multipleOf": 0}, "multipleOf must be greater than 0"),
    ({"type": "array", "prefixItems": {"type": "string"}}, "prefixItems must be an array"),
    ({"type": "array", "prefixItems": ["x"]}, "prefixItems must be an array of objects or booleans"),
    ({"type": "array", "items": "x"}, "items must be a boolean or an object"),
    ({"type": "array", "unevaluatedItems": "x"}, "unevaluatedItems must be a boolean or an object"),
    ({"type": "array", "minItems": "x"}, "minItems must be an integer"),
    ({"type": "array", "maxItems": -1}, "maxItems must be a non-negative integer"),
    ({"type": "array", "minItems": 5, "maxItems": 3}, "minItems is greater than maxItems: 5 > 3"),
    ({"type": "array", "prefixItems": [{}, {}], "minItems": 3, "items": False},
     "minItems is greater than the number of prefixItems, but additional items are not allowed: 3 > 2"),
    ({"type": "object", "properties": "x"}, "properties must be an object"),
    ({"type": "object", "required": {"k": 1}}, "required must be an array"),
    ({"type": "object", "patternProperties": ["x"]}, "patternProperties must be an object"),
    ({"type": "object", "propertyNames": "x"}, "propertyNames must be an object"),
    ({"type": "object", "minProperties": "x"}, "minProperties must be an integer"),
    ({"type": "object", "maxProperties": -1}, "maxProperties must be a non-negative integer"),
    ({"type": "object", "minProperties": 5, "maxProperties": 3}, "minProperties is greater than maxProperties: 5 > 3"),
    ({"type": "object", "maxProperties": 1, "required": ["a", "b"]},
     "maxProperties is less than the number of required properties: 1 < 2"),
    ({"type": "object", "additionalProperties": False, "properties": {"k": {}}, "minProperties": 2},
     "minProperties is greater than the number of properties, but additional properties aren't allowed: 2 > 1"),
]


@pytest.mark.parametrize("schema, phrase", ERRORS)
def test_schema_error_wording(schema, phrase):
    with pytest.raises(zapspec.SchemaError) as e:
        zapspec.Grammar.from_json_schema(schema)
    assert phrase in str(e.value)
    assert e.value.pointer is not None
    if xgr is not None:
        with pytest.raises(RuntimeError) as x:
            xgr.Grammar.from_json_schema(json.dumps(schema))
        assert phrase in str(x.value)


def test_integer_multiple_of_above_1000():
    g = zapspec.Grammar.from_json_schema({"type": "integer", "multipleOf": 1024})
    for v, ok in [(0, True), (1024, True), (-2048, True), (1000, False), (1025, False), (10240, True)]:
        assert accepts(g, str(v)) == ok
    g = zapspec.Grammar.from_json_schema({"type": "integer", "multipleOf": 9973})
    assert accepts(g, str(9973 * 123)) and not accepts(g, str(9973 * 123 + 1))
    with pytest.raises(zapspec.SchemaError):
        zapspec.Grammar.from_json_schema({"type": "integer", "multipleOf": 10001})


def test_enum_containers_checked_against_sibling_keywords_in_every_layout():
    # the members are checked against the sibling keywords as values, so
    # the layout of the grammar does not drop them
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "enum": [{"a": 1}, {"a": "x"}, {"b": 2}]}
    for kw, text in [({}, '{"a": 1}'), ({"separators": (",", ":")}, '{"a":1}'),
                     ({"indent": 2}, '{\n  "a": 1\n}')]:
        g = zapspec.Grammar.from_json_schema(schema, any_whitespace=False, **kw)
        assert accepts(g, text)
        assert not accepts(g, text.replace("1", '"x"'))
