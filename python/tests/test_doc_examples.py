"""Every Python block a user can copy runs as shown: the READMEs, the migration page and
every page of the user guide (docs/src/**/*.md).

Each ```python block runs on its own, as a user would paste it, in a fresh interpreter whose
working directory is an empty temporary folder. A block that reads Adult (``adult.data``,
``adult.test``) finds them there, linked from the data directory CI gives
(``DP_ML_DATA_DIR``); without it such a block is skipped, except under CI (``CI`` set),
where a missing data directory fails. A block that cannot run here at all (a Spark cluster's
DataFrame, another library) is marked on the line before its fence with
``<!-- doc-test: skip (the reason) -->``; no other block is skipped.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = sorted(
    [ROOT / "README.md", ROOT / "python" / "README.md", ROOT / "python" / "MIGRATING_FROM_DIFFPRIVLIB.md"]
    + list((ROOT / "docs" / "src").rglob("*.md"))
)
SKIP = re.compile(r"<!-- doc-test: skip \((.+)\) -->\s*\n$")
ADULT_FILES = ("adult.data", "adult.test")


def python_blocks():
    """(page, line, code, skip reason or None) of every ```python block."""
    blocks = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"^```python\n(.*?)^```$", text, flags=re.S | re.M):
            before = text[: match.start()]
            skip = SKIP.search(before)
            line = before.count("\n") + 1
            blocks.append((page.relative_to(ROOT).as_posix(), line, match.group(1), skip and skip.group(1)))
    return blocks


BLOCKS = python_blocks()


def test_the_pages_have_python_blocks_and_skips_are_few():
    pages = {page for page, *_ in BLOCKS}
    assert {"README.md", "python/README.md", "python/MIGRATING_FROM_DIFFPRIVLIB.md"} <= pages
    assert "docs/src/getting-started/python.md" in pages
    skipped = [(page, line) for page, line, _, reason in BLOCKS if reason]
    assert len(skipped) <= 2, skipped


def test_a_fragment_fails_the_way_the_test_runs_blocks(tmp_path):
    """The runner is able to fail: a fragment using a name it never defines does."""
    result = run("clf.fit(X, y)\n", tmp_path)
    assert result.returncode != 0 and "NameError" in result.stderr


def run(code, folder):
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )


def adult_into(folder):
    """Links Adult's files into ``folder``, or skips (fails under CI) without them."""
    data = os.environ.get("DP_ML_DATA_DIR")
    found = data and all((pathlib.Path(data) / name).is_file() for name in ADULT_FILES)
    if not found:
        if os.environ.get("CI"):
            pytest.fail(f"DP_ML_DATA_DIR={data!r} holds no {ADULT_FILES}: CI must give Adult")
        pytest.skip("Adult's files: set DP_ML_DATA_DIR to the data directory")
    for name in ADULT_FILES:
        (folder / name).symlink_to(pathlib.Path(data) / name)


@pytest.mark.parametrize(
    "page, line, code, skip", BLOCKS, ids=[f"{page}:{line}" for page, line, *_ in BLOCKS]
)
def test_block_runs_as_shown(page, line, code, skip, tmp_path):
    if skip:
        pytest.skip(skip)
    if any(name in code for name in ADULT_FILES):
        adult_into(tmp_path)
    result = run(code, tmp_path)
    assert result.returncode == 0, f"{page}, the block at line {line}:\n{result.stderr[-3000:]}"
    assert result.stdout.strip(), f"{page}, the block at line {line} printed nothing"
