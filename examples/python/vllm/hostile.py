"""Hostile constraints for serving tests and benchmarks: each is a
(name, kind, spec) a client could send; a backend must compile it within its
budget or refuse it, without stalling other requests."""
import json


def big_enum(n: int = 35_000) -> dict:
    # ~1 MB of schema: 35,000 distinct 24-28 byte strings
    return {"type": "string", "enum": [f"value-{i:06d}-{(i * 7919) % 100003:06d}" for i in range(n)]}


def ref_cycles(depth: int = 40) -> dict:
    # a chain of definitions, each referring to the next and back to the root
    defs = {}
    for i in range(depth):
        nxt = f"#/$defs/n{i + 1}" if i + 1 < depth else "#"
        defs[f"n{i}"] = {
            "type": "object",
            "properties": {"next": {"$ref": nxt}, "back": {"$ref": "#/$defs/n0"}, "v": {"type": "integer"}},
        }
    return {"$ref": "#/$defs/n0", "$defs": defs}


def nested_any_of(depth: int = 12) -> dict:
    s: dict = {"type": "string"}
    for _ in range(depth):
        s = {"anyOf": [{"type": "string"}, {"type": "array", "items": s}, {"type": "object", "additionalProperties": s}]}
    return s


REGEX_BOMB = r"(([a-z]{1,30}){1,30}[0-9]{1,30}){1,20}"


def hostile() -> list:
    return [
        ("enum-35k", "json", big_enum()),
        ("ref-cycles", "json", ref_cycles()),
        ("anyof-12", "json", nested_any_of()),
        ("regex-bomb", "regex", REGEX_BOMB),
    ]


if __name__ == "__main__":
    for name, kind, spec in hostile():
        print(name, kind, len(json.dumps(spec)))
