"""Hostile JSON Schemas as MaskBench files, for the compile-limit table.

Writes one MaskBench-format file (``{"description", "schema", "tests": []}``)
per hostile input into ``OUT``: huge enums and key sets, nested ``anyOf``,
DNF blow-ups, regex bombs, deep ``$ref`` chains and deep nesting. Run the
MaskBench binary on the folder with both engines, then
``hostile_table.py`` for the table (time to first mask and the live-heap
peak of each input beside llguidance)::

    python examples/python/hostile_schemas.py /tmp/hostile --seed 0
    cd examples && cargo run --profile release-fast -p examples --bin maskbench -- \\
        /tmp/hostile --engine zapspec,llguidance --out /tmp/hostile-run
    python examples/python/hostile_table.py /tmp/hostile-run

Standard library only; the same seed writes the same files.
"""

import argparse
import json
import os
import random
import string
import sys


def words(rng, n, lo=4, hi=14):
    """``n`` distinct random lower-case words."""
    out, seen = [], set()
    while len(out) < n:
        w = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(lo, hi)))
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def nested_any_of(depth):
    s = {"type": "string"}
    for _ in range(depth):
        s = {
            "anyOf": [
                {"type": "string"},
                {"type": "array", "items": s},
                {"type": "object", "additionalProperties": s},
            ]
        }
    return s


def nested_any_of_refs(depth):
    """``nested_any_of(depth)`` with each level a definition: the same
    language in linear size (inline, the text grows as 3^depth)."""
    defs = {
        f"d{i}": {
            "anyOf": [
                {"type": "string"},
                {"type": "array", "items": {"$ref": f"#/$defs/d{i + 1}"}},
                {"type": "object", "additionalProperties": {"$ref": f"#/$defs/d{i + 1}"}},
            ]
        }
        for i in range(depth)
    }
    defs[f"d{depth}"] = {"type": "string"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def ref_chain(n):
    defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(n)}
    defs[f"d{n}"] = {"type": "integer"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def ref_tree(n):
    """Each definition an object of two properties referring to the next."""
    defs = {
        f"d{i}": {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/d{i + 1}"}, "b": {"$ref": f"#/$defs/d{i + 1}"}},
        }
        for i in range(n)
    }
    defs[f"d{n}"] = {"type": "string"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def deep_properties(n):
    s = {"type": "integer"}
    for _ in range(n):
        s = {"type": "object", "properties": {"x": s}, "required": ["x"]}
    return s


def cases(rng):
    yield "enum-strings-35000", {"enum": words(rng, 35000, 6, 40)}
    yield "enum-strings-5000", {"enum": words(rng, 5000)}
    yield "enum-mixed-5000", {
        "enum": [rng.choice([w, len(w), {"k": w}, [w]]) for w in words(rng, 5000)]
    }
    names = words(rng, 5000)
    yield "object-5000-optional-keys-closed", {
        "type": "object",
        "properties": {n: {"type": "integer"} for n in names},
        "additionalProperties": False,
    }
    yield "object-5000-optional-keys-open", {
        "type": "object",
        "properties": {n: {"type": "integer"} for n in names},
    }
    yield "object-500-required-keys", {
        "type": "object",
        "properties": {n: {"type": "string"} for n in names[:500]},
        "required": names[:500],
    }
    yield "object-200-patterns", {
        "type": "object",
        "patternProperties": {f"^{n}[0-9]{{1,6}}$": {"type": "integer"} for n in names[:200]},
    }
    yield "nested-anyOf-12", nested_any_of(12)
    yield "nested-anyOf-24-by-ref", nested_any_of_refs(24)
    yield "nested-anyOf-200-by-ref", nested_any_of_refs(200)
    yield "allOf-of-12-anyOf-x3", {
        "allOf": [
            {"anyOf": [{"required": [f"a{i}"]}, {"required": [f"b{i}"]}, {"required": [f"c{i}"]}]}
            for i in range(12)
        ],
        "type": "object",
    }
    yield "oneOf-200-objects", {
        "oneOf": [
            {"type": "object", "properties": {"kind": {"const": n}, "v": {"type": "integer"}},
             "required": ["kind"]}
            for n in names[:200]
        ]
    }
    yield "regex-a-or-b-star-a-ab25", {"type": "string", "pattern": "^(a|b)*a(a|b){25}$"}
    yield "regex-nested-counts", {"type": "string", "pattern": "^(?:(?:a{1,100}){1,100}){1,100}$"}
    yield "regex-word-space-star", {"type": "string", "pattern": "^(\\w+\\s?)*$"}
    yield "regex-100-alternatives-counted", {
        "type": "string",
        "pattern": "^(?:" + "|".join(names[:100]) + "){1,50}$",
    }
    yield "string-pattern-maxLength-100000", {
        "type": "string", "pattern": "^[a-z ]+$", "maxLength": 100000,
    }
    yield "string-minLength-maxLength-1000000", {
        "type": "string", "minLength": 1000, "maxLength": 1000000,
    }
    yield "array-minItems-maxItems-10000", {
        "type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}}},
        "minItems": 100, "maxItems": 10000,
    }
    yield "integer-bounds-wide", {"type": "integer", "minimum": -(10**30), "maximum": 10**30}
    yield "ref-chain-2000", ref_chain(2000)
    yield "ref-tree-40", ref_tree(40)
    yield "ref-self-recursive", {
        "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"},
                                                        "v": {"type": "integer"}}}},
        "$ref": "#/$defs/n",
    }
    # two JSON levels per property: 60 stays within serde_json's 128, 500
    # shows what a reader with that limit does
    yield "deep-properties-60", deep_properties(60)
    yield "deep-properties-500", deep_properties(500)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    sys.setrecursionlimit(10_000)  # json.dump of the 500-deep schema
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    for i, (name, schema) in enumerate(cases(rng)):
        path = os.path.join(a.out, f"{i:02d}-{name}.json")
        with open(path, "w") as f:
            json.dump({"description": name, "schema": schema, "tests": []}, f)
        print(f"{path}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
