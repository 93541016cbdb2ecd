"""The repository's layout: few modules loose at the top of the package, modules of a readable size, and no merge
leftovers (``run.py.orig``, conflict markers) among the tracked files."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "st_static"
MAX_LOOSE_MODULES = 6
"""Modules at the top of ``st_static/`` besides ``__init__.py``: what every package uses (DEVELOPING.md)."""
MAX_MODULE_LINES = 450
LEFTOVER_NAME = re.compile(r"(\.orig|\.rej|_(BACKUP|BASE|LOCAL|REMOTE)_\d+(\.[^/]*)?)$")
CONFLICT_MARKER = re.compile(r"^(<{7} |>{7} |\|{7} )", re.MULTILINE)


def tracked_files() -> list[str]:
    try:
        listing = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
        ).stdout.decode("utf-8", errors="surrogateescape")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [name for name in listing.split("\0") if name]


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def test_no_merge_leftover_is_tracked():
    names = tracked_files()
    leftovers = [name for name in names if LEFTOVER_NAME.search(name)]
    assert not leftovers, f"merge or patch leftovers are tracked (git rm them): {leftovers}"
    texts = [name for name in names if name.endswith((".py", ".md", ".toml", ".txt", ".json", ".cfg", ".yml"))]
    marked = [name for name in texts if (ROOT / name).is_file() and CONFLICT_MARKER.search(read(ROOT / name))]
    assert not marked, f"files with merge conflict markers: {marked}"


def test_the_leftover_patterns_match_what_merges_leave():
    for name in ("st_static/pipeline/run.py.orig", "a.py.rej", "a_BASE_12345.py", "a_LOCAL_7.py", "x/b_REMOTE_1"):
        assert LEFTOVER_NAME.search(name), name
    for name in ("st_static/pipeline/run.py", "origin.py", "BASE.md", "data_BASE.tsv"):
        assert not LEFTOVER_NAME.search(name), name
    assert CONFLICT_MARKER.search("x = 1\n<<<<<<< HEAD\ny = 2\n")
    assert not CONFLICT_MARKER.search("Title\n=======\n")


def test_at_most_six_modules_are_loose_at_the_top_of_the_package():
    loose = sorted(path.name for path in PACKAGE.glob("*.py") if path.name != "__init__.py")
    assert len(loose) <= MAX_LOOSE_MODULES, f"{len(loose)} loose modules (move one into a package): {loose}"


def test_the_files_package_keeps_its_modules_readable():
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in (PACKAGE / "files").glob("*.py")}
    assert not {name: lines for name, lines in sizes.items() if lines > MAX_MODULE_LINES}, sizes


def test_no_module_of_the_package_is_over_450_lines():
    sizes = {
        str(path.relative_to(PACKAGE)): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    long = {name: lines for name, lines in sorted(sizes.items()) if lines > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by what they do): {long}"
