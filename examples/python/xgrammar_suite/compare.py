"""Per-file table of XGrammar's suite: tests passing on xgrammar, of those
passing on zapspec, and every remaining failure named, with its category
(`CATEGORIES` in `categories.json`: the more-correct cases and the tests of
XGrammar's internals). Writes Markdown to stdout and JSON beside it.

    python compare.py OUT/xgrammar.xml OUT/zapspec.xml [--files a.py,b.py] [--json OUT/table.json]
"""
import argparse
import collections
import fnmatch
import json
import os
import re
import xml.etree.ElementTree as ET


def load(path):
    """{file::test: (status, failure text)} of a JUnit file."""
    out = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        f = tc.get("classname", "").split(".")[0] + ".py"
        status, text = "pass", ""
        for child in tc:
            if child.tag in ("failure", "error"):
                status, text = "fail", (child.get("message") or "") + "\n" + (child.text or "")
            elif child.tag == "skipped":
                status = "skip"
        out[f + "::" + tc.get("name")] = (status, text)
    return out


def category(cats, key, text):
    """The first category whose test globs match, else the first whose
    failure regexes match (a test listed by name is never reclassified by
    its message)."""
    for c in cats:
        if any(fnmatch.fnmatchcase(key, p) for p in c.get("tests", [])):
            return c["name"]
    for c in cats:
        if any(re.search(r, text) for r in c.get("messages", [])):
            return c["name"]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("xgrammar")
    ap.add_argument("zapspec")
    ap.add_argument("--files", default="")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "categories.json")) as fh:
        cats = json.load(fh)
    files = set(a.files.split(",")) if a.files else None
    x, z = load(a.xgrammar), load(a.zapspec)
    per = collections.defaultdict(lambda: collections.Counter())
    rest = collections.defaultdict(list)
    for k, (s, _) in sorted(x.items()):
        f = k.split("::")[0]
        if s != "pass" or (files and f not in files):
            continue
        per[f]["xgrammar"] += 1
        zs, text = z.get(k, ("missing", ""))
        if zs == "pass":
            per[f]["zapspec"] += 1
            continue
        cat = category(cats, k, text)
        per[f][cat or "other"] += 1
        rest[f].append((k.split("::")[1], cat or "other"))
    names = [c["name"] for c in cats] + ["other"]
    print("| file | xgrammar passes | zapspec passes | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    tot = collections.Counter()
    for f in sorted(per):
        tot.update(per[f])
        print(f"| {f} | {per[f]['xgrammar']} | {per[f]['zapspec']} | " + " | ".join(str(per[f][n]) for n in names) + " |")
    print(f"| **all** | {tot['xgrammar']} | {tot['zapspec']} | " + " | ".join(str(tot[n]) for n in names) + " |")
    print()
    for c in cats:
        print(f"- **{c['name']}**: {c['why']}")
    print("\n## Tests passing on xgrammar and not on zapspec\n")
    for f in sorted(rest):
        print(f"### {f}\n")
        for t, c in rest[f]:
            print(f"- `{t}` — {c}")
        print()
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"per_file": {f: dict(per[f]) for f in per}, "failing": rest}, fh, indent=1)


if __name__ == "__main__":
    main()
