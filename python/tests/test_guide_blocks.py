"""Every Python block of the user guide's Python page runs as shown (docs/src/getting-started)."""

import pathlib
import re

import pytest

GUIDE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "src" / "getting-started" / "python.md"


def python_blocks():
    text = GUIDE.read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


def test_the_guide_has_python_blocks():
    assert len(python_blocks()) >= 1


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_guide_block_runs(index, capsys):
    exec(compile(python_blocks()[index], f"{GUIDE.name} block {index + 1}", "exec"), {})
    assert capsys.readouterr().out.strip(), "the block printed nothing"
