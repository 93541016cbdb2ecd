"""scripts/jmdict_pairs.py on a miniature JMdict database of the jamdict-data layout."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from .project_scripts import load_script, script_path

SCRIPT = script_path("jmdict_pairs")


def _make_database(path: Path) -> None:
    connection = sqlite3.connect(path)
    connection.executescript(
        """
        CREATE TABLE Kanji (ID INTEGER PRIMARY KEY, idseq INTEGER, text TEXT);
        CREATE TABLE KJP (kid INTEGER, text TEXT);
        CREATE TABLE Kana (ID INTEGER PRIMARY KEY, idseq INTEGER, text TEXT, nokanji INTEGER);
        CREATE TABLE KNP (kid INTEGER, text TEXT);
        CREATE TABLE Sense (ID INTEGER PRIMARY KEY, idseq INTEGER);
        CREATE TABLE SenseGloss (sid INTEGER, lang TEXT, gend TEXT, text TEXT);
        INSERT INTO Kanji VALUES (1, 100, '誕生日'), (2, 200, '食べる'), (3, 300, '稀語'), (4, 200, '喰べる');
        INSERT INTO KJP VALUES (1, 'ichi1'), (2, 'news1'), (3, 'nf40'), (4, 'spec2');
        INSERT INTO Kana VALUES (1, 100, 'たんじょうび', 0), (2, 400, 'ありがとう', 1), (3, 500, 'まれ', 1);
        INSERT INTO KNP VALUES (1, 'ichi1'), (2, 'spec1');
        INSERT INTO Sense VALUES (10, 100), (20, 200), (21, 200), (30, 300), (40, 400);
        INSERT INTO SenseGloss VALUES (10, 'eng', NULL, 'birthday'), (20, 'eng', NULL, 'to eat (something)'),
            (20, 'eng', NULL, 'to consume'), (21, 'eng', NULL, 'to live on'), (30, 'eng', NULL, 'rare word'),
            (40, 'eng', NULL, 'thank you');
        """
    )
    connection.commit()
    connection.close()


def test_common_entries_become_one_pair_each(tmp_path: Path) -> None:
    database = tmp_path / "jamdict.db"
    _make_database(database)
    script = load_script("jmdict_pairs")
    # Common kanji forms (first one per entry), kana-only common words; uncommon entries and readings of kanji
    # words are left out; the first gloss of the first sense, without notes or the infinitive marker.
    assert script.common_pairs(database) == [("birthday", "誕生日"), ("eat", "食べる"), ("thank you", "ありがとう")]
    assert script.clean_gloss("to go (somewhere)") == "go"
    # Every entry: the uncommon one joins after the common ones; an entry without an English gloss never does.
    assert script.common_pairs(database, all_entries=True) == [
        ("birthday", "誕生日"),
        ("eat", "食べる"),
        ("thank you", "ありがとう"),
        ("rare word", "稀語"),
    ]


def test_command_writes_a_translation_pair_file(tmp_path: Path) -> None:
    from st_static.data_files import read_translation_pairs

    database = tmp_path / "jamdict.db"
    _make_database(database)
    out = tmp_path / "pairs" / "en-ja-jmdict.tsv"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--db", str(database), "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "wrote 3 pairs" in done.stdout
    assert read_translation_pairs(out) == [("birthday", "誕生日"), ("eat", "食べる"), ("thank you", "ありがとう")]


def test_exclude_leaves_out_pairs_with_a_text_of_an_evaluation_file(tmp_path: Path) -> None:
    from st_static.data_files import read_translation_pairs

    database = tmp_path / "jamdict.db"
    _make_database(database)
    tatoeba = tmp_path / "jpn-eng.tsv"
    # Compared without case and punctuation: "Birthday!" and "ありがとう。" each exclude a pair.
    tatoeba.write_text("eng\tother\nBirthday!\t誕生日だ。\nThanks.\tありがとう。\n", encoding="utf-8")
    out = tmp_path / "en-ja-jmdict.tsv"
    command = [sys.executable, str(SCRIPT), "--db", str(database), "--out", str(out), "--exclude", str(tatoeba)]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "wrote 1 pairs" in done.stdout and "2 left out by --exclude" in done.stdout
    assert read_translation_pairs(out) == [("eat", "食べる")]
