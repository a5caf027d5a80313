"""Every Python block a user can copy runs as shown: the READMEs, the migration page and
every page of the user guide (docs/src/**/*.md).

Each ```python block runs on its own, as a user would paste it, in a fresh interpreter whose
working directory is an empty temporary folder. A block that reads Adult (``adult.data``,
``adult.test``) finds them there, linked from the data directory CI gives
(``DP_ML_DATA_DIR``); without it such a block is skipped, except under CI (``CI`` set),
where a missing data directory fails. A block that cannot run here at all (a Spark cluster's
DataFrame, another library) is marked on the line before its fence with
``<!-- doc-test: skip (the reason) -->``; no other block is skipped.

Blocks marked ``<!-- doc-test: in sequence (a name) -->`` (the README's own-data walk-through)
are one session: they run in order, Python and shell alike, in one folder, the shell blocks
with the ``dpml`` command on the PATH (``$DPML_CLI``, else the one ``cargo test`` builds in
``target/debug``, else ``target/release``, else the PATH's); without one the sequence is
skipped, except under CI.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = sorted(
    [ROOT / "README.md", ROOT / "python" / "README.md", ROOT / "python" / "MIGRATING_FROM_DIFFPRIVLIB.md"]
    + list((ROOT / "docs" / "src").rglob("*.md"))
)
SKIP = re.compile(r"<!-- doc-test: skip \((.+)\) -->\s*\n$")
SEQUENCE = re.compile(r"<!-- doc-test: in sequence \((.+)\) -->\s*\n$")
ADULT_FILES = ("adult.data", "adult.test")


def python_blocks():
    """(page, line, code, skip reason or None) of every ```python block."""
    blocks = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"^```python\n(.*?)^```$", text, flags=re.S | re.M):
            before = text[: match.start()]
            if SEQUENCE.search(before):
                continue  # run by test_a_sequence_runs_as_shown
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


def sequences():
    """``{(page, name): [(line, language, code), ...]}`` of the blocks marked in sequence."""
    found = {}
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"^```(python|sh)\n(.*?)^```$", text, flags=re.S | re.M):
            before = text[: match.start()]
            marked = SEQUENCE.search(before)
            if marked:
                key = (page.relative_to(ROOT).as_posix(), marked.group(1))
                line = before.count("\n") + 1
                found.setdefault(key, []).append((line, match.group(1), match.group(2)))
    return found


SEQUENCES = sequences()


def dpml_command():
    """The folder holding the ``dpml`` command, or None."""
    given = os.environ.get("DPML_CLI")
    candidates = [pathlib.Path(given)] if given else []
    candidates += [ROOT / "target" / "debug" / "dpml", ROOT / "target" / "release" / "dpml"]
    on_path = shutil.which("dpml")
    if on_path:
        candidates.append(pathlib.Path(on_path))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate.parent
    return None


def test_the_readme_has_its_own_data_walk_through():
    blocks = SEQUENCES.get(("README.md", "own data"), [])
    assert [language for _, language, _ in blocks] == ["python", "sh", "python"], blocks


@pytest.mark.parametrize("key", sorted(SEQUENCES), ids=[f"{p}:{n}" for p, n in sorted(SEQUENCES)])
def test_a_sequence_runs_as_shown(key, tmp_path):
    page, _ = key
    folder = dpml_command()
    if folder is None:
        if os.environ.get("CI"):
            pytest.fail("no dpml command: cargo test --workspace builds target/debug/dpml")
        pytest.skip("the dpml command: build it (cargo build -p dp-cli) or set DPML_CLI")
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}
    for line, language, code in SEQUENCES[key]:
        command = [sys.executable, "-c", code] if language == "python" else ["bash", "-euo", "pipefail", "-c", code]
        result = subprocess.run(
            command, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env
        )
        assert result.returncode == 0, f"{page}, the block at line {line}:\n{result.stderr[-3000:]}"
    # The walk-through's last block printed its predictions, score and outlook.
    assert result.stdout.strip(), f"{page}, the block at line {line} printed nothing"

