"""Every Python block of the README and of the user guide's Python page runs as shown."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "docs" / "src" / "getting-started" / "python.md"]


def python_blocks():
    blocks = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        found = re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)
        blocks += [(page.name, block) for block in found]
    return blocks


def test_each_page_has_python_blocks():
    assert {name for name, _ in python_blocks()} == {page.name for page in PAGES}


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_block_runs(index, capsys):
    name, block = python_blocks()[index]
    exec(compile(block, f"{name} block {index + 1}", "exec"), {})
    assert capsys.readouterr().out.strip(), "the block printed nothing"
