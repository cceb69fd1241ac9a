"""README's Python quickstart, run as written (the code block under
"## From Python")."""

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_quickstart_runs():
    text = README.read_text(encoding="utf-8")
    section = text.split("## From Python", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block, "README's Python section has a python code block"
    exec(compile(block.group(1), "README.md", "exec"), {})
