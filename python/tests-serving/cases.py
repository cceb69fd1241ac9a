"""The fixed cases the vLLM tests run (every structured-output request type
vLLM has, and unconstrained prompts for the speculative-decoding check), and
the independent checks of each output: the ``jsonschema`` package for
schemas, ``json`` for ``json_object``, Python's ``re`` for regexes and for
the grammars (each written here also as a regex), membership for choices."""

import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "smollm2-hf"
GGUF = ROOT / "models" / "smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "email": {"type": "string", "format": "email"},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
ORDER = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
        "items": {
            "type": "array",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string", "maxLength": 8}, "qty": {"type": "integer", "minimum": 1}},
                "required": ["sku", "qty"],
            },
        },
        "status": {"enum": ["open", "paid", "shipped"]},
    },
    "required": ["id", "items", "status"],
}
WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 24},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
    },
    "required": ["city", "unit"],
}
PHONE = r"\(\d{3}\) \d{3}-\d{4}"
DATE = r"20[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
GBNF_ANSWER = 'root ::= ("yes" | "no") ", because " [a-z ]{1,40} "."'
GBNF_ANSWER_RE = r"(yes|no), because [a-z ]{1,40}\."
GBNF_LIST = 'root ::= item ("," item){0,4}\nitem ::= [a-z]{2,10}'
GBNF_LIST_RE = r"[a-z]{2,10}(,[a-z]{2,10}){0,4}"
CHOICE = ["red", "green", "blue", "dark purple"]
TAG = {
    "type": "structural_tag",
    "format": {
        "type": "triggered_tags",
        "triggers": ["<tool_call>"],
        "tags": [
            {
                "begin": '<tool_call>{"name": "get_weather", "arguments": ',
                "content": {"type": "json_schema", "json_schema": WEATHER},
                "end": "}</tool_call>",
            }
        ],
        "at_least_one": True,
        "stop_after_first": True,
    },
}
TAG_RE = re.compile(r'<tool_call>\{"name": "get_weather", "arguments": (.*)\}</tool_call>', re.S)


def cases() -> list:
    """(id, kind, spec, prompt): ``kind`` is the ``StructuredOutputsParams``
    field (``none``: unconstrained)."""
    out = [
        ("json-person", "json", PERSON, "Describe a fictional person as JSON with name, age and email."),
        ("json-order", "json", ORDER, "Write a JSON order with an id, items and a status."),
        ("json-weather", "json", WEATHER, "What is the weather request for Paris? Answer in JSON."),
        ("json-object", "json_object", True, "Give a JSON object with two keys, name and color, for a cat."),
        ("json-object-2", "json_object", True, "Return the capital cities of three countries as a JSON object."),
        ("regex-phone", "regex", PHONE, "Write a US phone number."),
        ("regex-date", "regex", DATE, "What is a date in 2024?"),
        ("grammar-answer", "grammar", GBNF_ANSWER, "Is the sky blue? Answer yes or no and say why."),
        ("grammar-list", "grammar", GBNF_LIST, "List a few fruits, comma separated, lowercase."),
        ("choice-color", "choice", CHOICE, "What colour is grass?"),
        ("tag-weather", "structural_tag", json.dumps(TAG), "Call the weather tool for Berlin."),
    ]
    unconstrained = [
        ("free-count", "none", None, "Count from one to twenty in words."),
        ("free-repeat", "none", None, "Repeat this sentence three times: the quick brown fox jumps over the lazy dog."),
        ("free-json", "none", None, 'Copy this JSON exactly: {"a": 1, "b": [1, 2, 3], "c": {"d": "e"}}'),
    ]
    long = {"json-order", "json-object", "json-object-2"}
    return [
        {"id": i, "kind": k, "spec": s, "prompt": p, "max_tokens": 200 if i in long else 96}
        for i, k, s, p in out + unconstrained
    ]


def check(case: dict, text: str) -> None:
    """Raises AssertionError unless ``text`` satisfies the case's constraint."""
    import jsonschema

    kind, spec = case["kind"], case["spec"]
    if kind == "json":
        jsonschema.validate(json.loads(text), spec, format_checker=jsonschema.FormatChecker())
    elif kind == "json_object":
        assert isinstance(json.loads(text), dict), text
    elif kind == "regex":
        assert re.fullmatch(spec, text), (spec, text)
    elif kind == "grammar":
        rx = {GBNF_ANSWER: GBNF_ANSWER_RE, GBNF_LIST: GBNF_LIST_RE}[spec]
        assert re.fullmatch(rx, text), (rx, text)
    elif kind == "choice":
        assert text in spec, text
    elif kind == "structural_tag":
        m = TAG_RE.search(text)
        assert m, text
        jsonschema.validate(json.loads(m.group(1)), WEATHER)
