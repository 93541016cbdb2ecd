"""scripts/traditional_pairs.py: Chinese pairs in traditional characters from simplified ones."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .project_scripts import load_script, script_path

SCRIPT = script_path("traditional_pairs")
PAIRS = "en\tother\nWe should go to sleep.\t我们该去睡觉了。\nIt is one.\t一。\n"


def test_only_pairs_the_conversion_changes_are_kept_each_once() -> None:
    table = str.maketrans({"们": "們", "该": "該", "觉": "覺"})
    pairs = [("We should go to sleep.", "我们该去睡觉了。"), ("It is one.", "一。"), ("We should go.", "我们")]
    pairs += [("We should go to sleep.", "我們該去睡覺了。")]  # already traditional: its conversion changes nothing
    converted = load_script("traditional_pairs").traditional_pairs(pairs, lambda text: text.translate(table))
    assert converted == [("We should go to sleep.", "我們該去睡覺了。"), ("We should go.", "我們")]


def test_the_command_converts_with_opencc_and_honours_exclude(tmp_path: Path) -> None:
    pytest.importorskip("opencc")
    from st_static.data_files import read_translation_pairs

    source = tmp_path / "en-zh.tsv"
    source.write_text(PAIRS, encoding="utf-8")
    out = tmp_path / "en-zh-traditional.tsv"
    command = [sys.executable, str(SCRIPT), str(source), "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert read_translation_pairs(out) == [("We should go to sleep.", "我們該去睡覺了。")]
    tatoeba = tmp_path / "cmn-eng.tsv"
    tatoeba.write_text("eng\tother\nWe should go to sleep!\t我们该去睡觉了\n", encoding="utf-8")
    done = subprocess.run([*command, "--exclude", str(tatoeba)], capture_output=True, text=True)
    assert done.returncode != 0 and "no pairs" in done.stderr
