"""Rows per script: which scripts a table's words, pieces and fallback rows cover, and the build's warning about a
language whose script no row reads on its own."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize

from st_static import StaticWordAverage
from st_static.model.languages import language_scripts, script_of
from st_static.model.script_coverage import (
    ScriptRows,
    coverage_line,
    script_coverage,
    table_script_coverage,
    uncovered_scripts,
)
from st_static.model.tokenization import add_fallback_layout, add_piece_layout, build_word_tokenizer
from st_static.pipeline.run import report_scripts

WORDS = ["the", "a", "Straße", "élan", "東京", "猫", "かな", "고양이", "x東"]
PIECES = ["ing", "ł", "ся"]
FALLBACK = ["?", "ş", "ж", "한", "😀"]


LETTERS = {"a": "Latin", "é": "Latin", "ł": "Latin", "ş": "Latin", "ğ": "Latin", "\u0131": "Latin"}  # U+0131: dotless i
LETTERS |= {"ж": "Cyrillic", "한": "Hangul", "か": "Kana", "カ": "Kana", "猫": "Han", "ب": "Arabic"}
NOT_LETTERS = ["1", "?", "\u00d7", "😀"]  # U+00D7, the multiplication sign, lies among the Latin letters


@pytest.mark.parametrize(("char", "script"), [*LETTERS.items(), *((char, None) for char in NOT_LETTERS)])
def test_every_letter_of_the_thirteen_languages_has_its_script(char, script):
    assert script_of(char) == script


def test_japanese_is_written_in_two_scripts_and_unknown_languages_in_none():
    assert language_scripts("ja") == language_scripts("jpn") == ("Kana", "Han")
    assert language_scripts("cmn") == ("Han",)
    assert language_scripts("tr") == ("Latin",) and language_scripts("ko") == ("Hangul",)
    assert language_scripts("xx") == ()


def test_rows_are_counted_per_script_and_kind():
    coverage = script_coverage(WORDS, PIECES, FALLBACK)
    assert list(coverage) == ["Latin", "Cyrillic", "Hangul", "Kana", "Han"]  # SCRIPT_RANGES order, none empty
    # "x東" counts for Latin and Han; the piece "ł" is Latin, but reads a row only after a prefix: not a letter alone.
    assert coverage["Latin"] == ScriptRows(words=5, pieces=2, fallback=1, letters=2)  # "a" and "ş" read alone
    assert coverage["Cyrillic"] == ScriptRows(words=0, pieces=1, fallback=1, letters=1)
    assert coverage["Hangul"] == ScriptRows(words=1, pieces=0, fallback=1, letters=1)
    assert coverage["Kana"] == ScriptRows(words=1, pieces=0, fallback=0, letters=0)
    assert coverage["Han"] == ScriptRows(words=3, pieces=0, fallback=0, letters=1)
    assert coverage["Latin"].rows == 8


def test_a_language_whose_script_no_row_reads_alone_is_named():
    coverage = script_coverage(WORDS, PIECES, FALLBACK)
    languages = ["en", "de", "ja", "zh", "ru", "ko", "ar"]
    # Kana: a word of two letters only (no one-letter word, no fallback row); Arabic: no row at all.
    assert uncovered_scripts(coverage, languages) == {"Kana": ["ja"], "Arabic": ["ar"]}
    assert uncovered_scripts(script_coverage([], [], []), ["ko", "tr"]) == {"Hangul": ["ko"], "Latin": ["tr"]}


def test_the_report_line_names_every_script_with_its_rows():
    line = coverage_line({"Latin": ScriptRows(words=120_345, pieces=2_100, fallback=310, letters=305)})
    assert line == "Rows per script: Latin 120,345 words + 2,100 pieces + 310 fallback (305 letters alone)."
    assert coverage_line({}) == "Rows per script: none."


TABLE_WORDS = ["the", "a", "Straße", "élan", "고양이"]  # no Chinese or Japanese word: their layout takes seconds


@pytest.fixture(scope="module")
def table() -> StaticWordAverage:
    """A table with words, piece rows and fallback rows of several scripts."""
    tokenizer = build_word_tokenizer(TABLE_WORDS, lowercase=False, extra_characters=[*FALLBACK, *"łся"])
    tokenizer = add_piece_layout(add_fallback_layout(tokenizer, FALLBACK), PIECES)
    rows = len(TABLE_WORDS) + len(PIECES) + 1 + len(FALLBACK)  # the empty text's row and one per fallback character
    vectors = np.random.default_rng(0).standard_normal((rows, 8)).astype(np.float32)
    return StaticWordAverage(tokenizer, vectors)


def test_a_tables_coverage_reads_its_words_pieces_and_fallback_rows(table):
    assert table.vocabulary == TABLE_WORDS and table.pieces == PIECES and table.fallback_characters == FALLBACK
    coverage = table_script_coverage(table)
    assert coverage == script_coverage(TABLE_WORDS, PIECES, FALLBACK)
    assert coverage["Latin"] == ScriptRows(words=4, pieces=2, fallback=1, letters=2)


def test_the_build_logs_the_rows_per_script_and_warns_about_an_uncovered_language(table, caplog):
    model = SentenceTransformer(modules=[table, Normalize()], device="cpu")
    with caplog.at_level(logging.INFO, logger="st_static"):
        coverage = report_scripts(model, ["en", "ko", "ja", "ar"])
    assert coverage == script_coverage(TABLE_WORDS, PIECES, FALLBACK)
    assert coverage_line(coverage) in caplog.messages
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 3  # Japanese: no Kana and no Han row; Arabic: none
    assert warnings[0].startswith("No row of the table reads a letter of the Kana script on its own")
    assert "text in ja " in warnings[0]
    assert "of the Han script" in warnings[1] and "text in ja " in warnings[1]
    assert "of the Arabic script" in warnings[2] and "text in ar " in warnings[2]


def test_a_model_that_is_not_a_static_table_has_no_script_report():
    assert report_scripts(SentenceTransformer(modules=[Normalize()], device="cpu"), ["en"]) == {}
