"""scripts/cedict_pairs.py on a miniature CC-CEDICT file and HSK word list."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .project_scripts import load_script, script_path

SCRIPT = script_path("cedict_pairs")

CEDICT = """\
# CC-CEDICT
# a comment line
李 李 [Li3] /surname Li/
李 李 [li3] /plum/
學生 学生 [xue2 sheng5] /student/schoolchild/
喫 吃 [chi1] /variant of 吃[chi1]/
吃 吃 [chi1] /to eat (something)/to consume/
個 个 [ge4] /classifier for people or objects in general/
稀詞 稀词 [xi1 ci2] /rare word/
謝謝 谢谢 [xie4 xie5] /to thank/thanks/
"""

WORDS = "\ufeff// HSK Level 1\n谢谢\txie4 xie5\n学生\n\n个\n吃\n李\n不在\n"


def _files(tmp_path: Path) -> tuple[Path, Path]:
    cedict = tmp_path / "cedict.txt"
    cedict.write_text(CEDICT, encoding="utf-8")
    words = tmp_path / "hsk.txt"
    words.write_text(WORDS, encoding="utf-8")
    return cedict, words


def test_listed_words_become_one_pair_each_with_their_first_translating_gloss(tmp_path: Path) -> None:
    cedict, words = _files(tmp_path)
    script = load_script("cedict_pairs")
    # In list order; a surname, a classifier note or a variant note is no translation (个 has nothing else, so it is
    # left out, and 李 takes its second entry); notes and the infinitive marker go; a word without an entry is left
    # out; the traditional forms are not the key.
    assert script.word_pairs(cedict, [words]) == [("thank", "谢谢"), ("student", "学生"), ("eat", "吃"), ("plum", "李")]
    # Every entry: the unlisted one joins after the listed words, each word once.
    assert script.word_pairs(cedict, [words], all_entries=True)[-1] == ("rare word", "稀词")
    assert len(script.word_pairs(cedict, [words], all_entries=True)) == 5
    assert script.clean_gloss("see 吃[chi1]") == ""
    assert script.clean_gloss("to go (somewhere)") == "go"


def test_the_command_writes_a_pair_file_the_build_reads(tmp_path: Path) -> None:
    from st_static.extraction.pair_sources import read_pairs

    cedict, words = _files(tmp_path)
    out = tmp_path / "pairs" / "en-zh-cedict.tsv"
    command = [sys.executable, str(SCRIPT), "--cedict", str(cedict), "--words", str(words), "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    assert "wrote 4 pairs" in result.stdout
    assert read_pairs(out) == [("thank", "谢谢"), ("student", "学生"), ("eat", "吃"), ("plum", "李")]
    assert not out.with_name(out.name + ".tmp").exists()


def test_a_word_list_without_entries_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    cedict, _ = _files(tmp_path)
    words = tmp_path / "none.txt"
    words.write_text("不在\n", encoding="utf-8")
    out = tmp_path / "out.tsv"
    command = [sys.executable, str(SCRIPT), "--cedict", str(cedict), "--words", str(words), "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode != 0 and "no pairs" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("gloss", ["surname Li", "old variant of 吃[chi1]", "CL:個|个[ge4]", "abbr. for 北京"])
def test_glosses_that_are_not_translations_are_skipped(gloss: str) -> None:
    assert load_script("cedict_pairs").clean_gloss(gloss) == ""


def test_the_pair_writer_cleans_whitespace_and_refuses_to_write_nothing(tmp_path: Path) -> None:
    from st_static.data_files import DataFormatError, read_translation_pairs, write_translation_pairs

    out = tmp_path / "pairs.tsv"
    assert write_translation_pairs(out, [("to\tbe", "是\n的"), (" ", "空")]) == 1
    assert read_translation_pairs(out) == [("to be", "是 的")]
    with pytest.raises(DataFormatError, match="no pairs"):
        write_translation_pairs(tmp_path / "none.tsv", [("", "")])
    assert not (tmp_path / "none.tsv").exists()
