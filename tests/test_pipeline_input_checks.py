"""The build's input checks (:mod:`st_static.pipeline.input_checks`) refuse, before any teacher loads: languages
beyond the first without ``--parallel`` files, and ``--extra-pairs`` files that train nothing; the file errors of
``--parallel``, ``--extra-pairs`` and ``--second-pass-pairs`` name the option that gave the file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from st_static.cli import app
from st_static.extraction.corpus import CorpusError
from st_static.extraction.pair_sources import SourceFilter, source_file
from st_static.pipeline.input_checks import InputSizes, check_input_files
from st_static.settings import BuildSettings, SettingsError

from .teachers import TINY_CORPUS
from .test_build import GERMAN
from .test_hostile_inputs import assert_one_error_line

runner = CliRunner()


def write_corpus(path: Path) -> Path:
    path.write_text("\n".join(TINY_CORPUS * 3) + "\n", encoding="utf-8")
    return path


def write_pairs(path: Path, rows: list[str], sources: list[str] | None = None) -> Path:
    """A pair file of ``rows`` (``first<TAB>second``) under a header, with a ``.source.txt`` when given."""
    path.write_text("en\tother\n" + "".join(f"{row}\n" for row in rows), encoding="utf-8")
    if sources is not None:
        source_file(path).write_text("".join(f"{source}\n" for source in sources), encoding="utf-8")
    return path


def en_de_pairs(path: Path) -> Path:
    return write_pairs(path, [f"{english}\t{german}" for english, german in zip(TINY_CORPUS, GERMAN, strict=True)])


def check(settings: BuildSettings, corpus: Path | None = None) -> InputSizes:
    filter_ = SourceFilter.of(settings.keep_sources, settings.leave_out_sources)
    return check_input_files(settings, str(corpus) if corpus is not None else None, filter_)


# ------------------------------------------------------------------------ languages without translation pairs
@pytest.mark.parametrize(
    ("languages", "message"),
    [
        (["en", "de"], "--languages en,de names de but no --parallel file pairs en with it"),
        (["en", "de", "ja"], "--languages en,de,ja names de, ja but no --parallel file pairs en with them"),
    ],
)
def test_languages_beyond_the_first_without_parallel_files_are_refused(tmp_path, languages, message):
    corpus = write_corpus(tmp_path / "en.txt")
    with pytest.raises(SettingsError, match="^" + message) as error:
        check(BuildSettings(corpus=[str(corpus)], languages=languages), corpus)
    assert f"Give --parallel LANG=FILE (en first) for {', '.join(languages[1:])}, or --languages en." in str(
        error.value
    )


def test_one_language_or_every_language_paired_passes(tmp_path):
    corpus = write_corpus(tmp_path / "en.txt")
    lines = len(TINY_CORPUS) * 3  # write_corpus writes the tiny corpus three times
    assert check(BuildSettings(corpus=[str(corpus)], languages=["en"]), corpus).corpus_sentences == lines
    parallel = en_de_pairs(tmp_path / "en-de.tsv")
    paired = BuildSettings(corpus=[str(corpus)], parallel=[f"de={parallel}"], languages=["en", "de"])
    assert check(paired, corpus).corpus_sentences == lines


def test_the_build_command_refuses_unpaired_languages_before_any_teacher(tmp_path, no_teacher):
    corpus = write_corpus(tmp_path / "en.txt")
    arguments = ["build", "--teacher", "never-loaded", "--corpus", str(corpus), "--languages", "en,de"]
    result = runner.invoke(app, [*arguments, "--out", str(tmp_path / "m"), "--dim", "8"])
    assert_one_error_line(result, "error: --languages en,de names de but no --parallel file pairs en with it")
    assert not (tmp_path / "m").exists()


# ------------------------------------------------------------------------ --extra-pairs that train nothing
def extra_pairs_settings(tmp_path: Path, extra: Path, **values) -> BuildSettings:
    parallel = en_de_pairs(tmp_path / "en-de.tsv")
    return BuildSettings(parallel=[f"de={parallel}"], languages=["en", "de"], extra_pairs={"de": str(extra)}, **values)


def test_extra_pairs_without_a_row_with_text_on_both_sides_are_refused(tmp_path):
    extra = write_pairs(tmp_path / "words.tsv", ["cat\t", "\thund", " \t \t"])
    with pytest.raises(CorpusError, match="only 0 translation pair") as error:
        check(extra_pairs_settings(tmp_path, extra))
    assert str(error.value).startswith(f"--extra-pairs de={extra}: only 0 translation pair(s) have text on both sides")


@pytest.mark.parametrize(
    ("option", "kept"),
    [
        ({"leave_out_sources": ["mo.*"]}, ", of the rows --leave-out-sources mo.* keeps,"),
        ({"keep_sources": ["ddtp"]}, ", of the rows --keep-sources ddtp keeps,"),
        ({"training_leave_out_sources": ["mo.*"]}, "mo.* keeps,"),
    ],
)
def test_extra_pairs_a_source_filter_empties_are_refused(tmp_path, option, kept):
    rows = ["cat\tkatze", "dog\thund", "mat\tmatte"]
    extra = write_pairs(tmp_path / "words.tsv", rows, ["mo.wesnoth", "mo.gcc", "mo.gcc"])
    (tmp_path / "en-de.source.txt").write_text("ddtp\n" * len(TINY_CORPUS), encoding="utf-8")
    with pytest.raises(CorpusError, match=re.escape(f"--extra-pairs de={extra}: only 0 translation pair")) as error:
        check(extra_pairs_settings(tmp_path, extra, **option))
    assert kept in str(error.value)


def test_a_few_usable_extra_pairs_pass(tmp_path):
    extra = write_pairs(tmp_path / "words.tsv", ["cat\tkatze", "dog\t", "mat\tmatte"], ["ddtp", "ddtp", "mo.gcc"])
    check(extra_pairs_settings(tmp_path, extra))  # two dictionary words: enough for training-only pairs
    with pytest.raises(CorpusError, match="only 0 translation pair"):
        check(extra_pairs_settings(tmp_path, extra, leave_out_sources=["ddtp", "mo.*"]))


def test_the_build_command_refuses_empty_extra_pairs_before_any_teacher(tmp_path, no_teacher):
    parallel = en_de_pairs(tmp_path / "en-de.tsv")
    extra = write_pairs(tmp_path / "words.tsv", ["cat\t", "dog\t"])
    arguments = ["build", "--teacher", "never-loaded", "--parallel", f"de={parallel}", "--languages", "en,de"]
    arguments += ["--extra-pairs", f"de={extra}", "--out", str(tmp_path / "m"), "--dim", "8"]
    result = runner.invoke(app, arguments)
    assert_one_error_line(result, f"error: --extra-pairs de={extra}: only 0 translation pair(s)")
    assert not (tmp_path / "m").exists()


# ------------------------------------------------------------------------ file errors name their option
def test_a_missing_pair_file_is_named_by_the_option_that_gave_it(tmp_path):
    corpus = write_corpus(tmp_path / "en.txt")
    parallel = en_de_pairs(tmp_path / "en-de.tsv")
    missing = tmp_path / "missing.tsv"
    crosslingual = {"languages": ["en", "de"], "parallel": [f"de={parallel}"]}
    cases = [
        (BuildSettings(languages=["en", "de"], parallel=[f"de={missing}"]), f"--parallel de={missing}: "),
        (BuildSettings(languages=["en", "de"], parallel=[str(missing)]), f"--parallel {missing}: "),
        (BuildSettings(**crosslingual, extra_pairs={"de": str(missing)}), f"--extra-pairs de={missing}: "),
        (
            BuildSettings.from_flat(**crosslingual, second_pass_pairs=[f"de={missing}"]),
            f"--second-pass-pairs de={missing}: ",
        ),
    ]
    for settings, head in cases:
        with pytest.raises(CorpusError, match="does not exist") as error:
            check(settings, corpus)
        assert str(error.value).startswith(head), str(error.value)


def test_too_few_pairs_are_named_by_the_option_that_gave_them(tmp_path):
    few = write_pairs(tmp_path / "few.tsv", ["cat\tkatze", "dog\thund"])
    with pytest.raises(CorpusError, match=re.escape(f"--parallel {few}: only 2 translation pair(s) have")):
        check(BuildSettings(languages=["en", "de"], parallel=[str(few)]))
    parallel = en_de_pairs(tmp_path / "en-de.tsv")
    settings = BuildSettings.from_flat(
        languages=["en", "de"], parallel=[f"de={parallel}"], second_pass_pairs=[f"de={few}"]
    )
    head = f"The second contrastive pass's pairs (--second-pass-pairs de={few}): only 2 translation pair(s)"
    with pytest.raises(CorpusError, match=re.escape(head)):
        check(settings)
