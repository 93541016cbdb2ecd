"""Bad input to ``st-static compress``: each is refused with one ``error:`` line naming the option, and no output."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from st_static.cli import app
from st_static.model.save_load import load_model, save_model

from .test_compression import WORDS_A, WORDS_B, make_model


@pytest.fixture
def members(tmp_path: Path) -> list[str]:
    """Two saved st-static tables: 8 words x 8 dimensions (``m0``) and 8 words x 5 dimensions (``m1``)."""
    save_model(make_model(WORDS_A, 8, seed=1), tmp_path / "m0")
    save_model(make_model(WORDS_B, 5, seed=2), tmp_path / "m1")
    return [str(tmp_path / "m0"), str(tmp_path / "m1")]


def refused(arguments: list[str], output: Path, *messages: str) -> str:
    """Run ``compress`` with ``arguments``: it must exit 1 with one ``error:`` line holding ``messages``, writing
    nothing at ``output``; return the line."""
    result = CliRunner().invoke(app, ["compress", *arguments, "-o", str(output)])
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    for message in messages:
        assert message in errors[0]
    assert not output.exists()
    return errors[0]


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        (["--weights", "1,0"], "--weights"),
        (["--weights", "nan,1"], "--weights"),
        (["--weights", "inf,1"], "--weights"),
        (["-w", "-1", "-w", "1"], "--weight"),
        (["-w", "0", "-w", "0"], "--weight"),
    ],
)
def test_weights_that_are_not_positive_numbers_are_refused_naming_the_option(members, tmp_path, weights, message):
    line = refused([*members, *weights], tmp_path / "out", message, "positive")
    assert "block_weights" not in line


@pytest.mark.parametrize("weights", [["-w", "0"], ["-w", "1"], ["--weights", "2"]])
def test_weights_for_a_single_model_are_refused(members, tmp_path, weights):
    refused([members[0], *weights], tmp_path / "out", "--weight", "ensemble")


@pytest.mark.parametrize(("size", "message"), [("0", "positive"), ("-3", "positive"), ("9", "only 8 words")])
def test_a_vocab_size_that_is_not_positive_or_exceeds_the_table_is_refused(members, tmp_path, size, message):
    refused([members[0], "--vocab-size", size], tmp_path / "out", "--vocab-size", message)


def test_a_vocab_size_larger_than_an_ensembles_union_is_refused(members, tmp_path):
    refused([*members, "-k", "11"], tmp_path / "out", "--vocab-size", "only 10 words")


def test_a_vocab_size_equal_to_the_table_still_copies_it(members, tmp_path):
    result = CliRunner().invoke(app, ["compress", members[0], "-k", "8", "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert load_model(tmp_path / "out")[0].vocabulary == WORDS_A


@pytest.mark.parametrize(("dim", "message"), [("0", "positive"), ("-1", "positive"), ("9", "only 8 dimensions")])
def test_a_dim_that_is_not_positive_or_exceeds_the_table_is_refused(members, tmp_path, dim, message):
    refused([members[0], "--dim", dim], tmp_path / "out", "--dim", message)


def test_a_dim_for_an_ensemble_is_refused_naming_the_option(members, tmp_path):
    refused([*members, "--dim", "3"], tmp_path / "out", "--dim", "ensemble")


@pytest.mark.parametrize("lines", ["the 5\ncat 3\nsat 1\n", "zebu\t5\nyak\t3\n"])
def test_frequencies_that_rank_no_word_of_the_model_are_refused(members, tmp_path, lines):
    """A file of 'word count' lines (a space, not a tab) reads as words 'the 5', ...: none is a word of the table, so
    the ranking was row order while the metadata said the file ranked the words."""
    frequencies = tmp_path / "frequencies.txt"
    frequencies.write_text(lines, encoding="utf-8")
    refused([members[0], "-k", "3", "--frequencies", str(frequencies)], tmp_path / "out", "--frequencies", "none of")


def test_an_unreadable_frequency_file_is_refused_naming_the_option(members, tmp_path):
    refused([members[0], "-k", "3", "--frequencies", str(tmp_path / "missing.txt")], tmp_path / "out", "--frequencies")


def test_fold_norms_texts_a_member_cannot_read_are_refused_naming_the_option_and_member(members, tmp_path):
    corpus = tmp_path / "zebra.txt"
    corpus.write_text("zebra\nzebra zebra\n", encoding="utf-8")  # m1 knows neither word nor any prefix of them
    refused([*members, "--fold-norms", str(corpus)], tmp_path / "out", "--fold-norms", "member 1 (m1)")


def test_eval_data_without_the_scored_tasks_is_refused_before_the_ensemble_is_built(members, tmp_path, monkeypatch):
    import st_static.compression as compression

    monkeypatch.setattr(compression, "ensemble", lambda *a, **k: pytest.fail("the ensemble was built"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\n", encoding="utf-8")
    (tmp_path / "data").mkdir()
    arguments = [*members, "--fold-norms", str(corpus), "--eval-data", str(tmp_path / "data")]
    refused(arguments, tmp_path / "out", "--eval-data", "no evaluation file")


def test_an_unknown_storage_format_is_refused_naming_the_option(members, tmp_path):
    refused([members[0], "-s", "int4"], tmp_path / "out", "--storage", "unknown storage format")


def test_a_wordllama_member_alone_is_refused_as_not_an_ensemble(tmp_path):
    """It said 'no such model folder': a single model goes to the st-static loader, which read the spec as a path."""
    refused(["wordllama:l2_supercat:256"], tmp_path / "out", "wordllama:l2_supercat:256", "ensemble")


@pytest.mark.parametrize("spec", ["wordllama:l2_supercat:\u00b2", "wordllama:../../x:256", "wordllama:a/b:256"])
def test_a_malformed_wordllama_member_is_refused_by_its_form(members, tmp_path, spec):
    refused([spec, members[1]], tmp_path / "out", "wordllama:CONFIG:DIM")


def test_a_member_given_twice_is_refused_also_by_another_name_of_its_folder(members, tmp_path):
    refused([members[0], members[1], members[0]], tmp_path / "out", "the same member as", "--weights")
    other_name = tmp_path / "link-to-m0"
    other_name.symlink_to(members[0])
    refused([members[0], str(other_name)], tmp_path / "out", str(other_name), "the same member as")
    refused(["wordllama:l2_supercat:256", members[1], "wordllama:l2_supercat:256"], tmp_path / "out", "same member")
