"""Bad values of the multilingual inputs (``--languages``, ``--parallel``, ``--extra-pairs``, ``--second-pass-pairs``,
``--eval-data`` and ``st-static evaluate --data`` with its Tatoeba and Tux Paint files) are refused with one error line
naming the option, before a teacher is loaded or a score is computed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from st_static.cli import app
from st_static.cli.options import settings_from_options
from st_static.data_files import DataFormatError
from st_static.evaluation import evaluate_translation_retrieval, task_evaluator
from st_static.evaluation.suite import DataFolderNotFoundError, find_tasks
from st_static.settings import BuildSettings, SecondPassSettings, SettingsError

from .test_hostile_inputs import assert_one_error_line

runner = CliRunner()
BITEXT_HEADER = "eng\tother\n"
BITEXT_ROWS = "the cat\tcat\nhello world\tworld\nmat\ton mat\n"


@pytest.fixture
def no_build(monkeypatch) -> None:
    """Fail the test if ``st-static build`` gets as far as running the pipeline (the teacher would load there)."""
    import st_static.pipeline.publish as publish_module

    monkeypatch.setattr(publish_module, "build", lambda *a, **k: pytest.fail("the pipeline ran"))


# ------------------------------------------------------------------------------------------------ --languages
@pytest.mark.parametrize(
    ("languages", "message"),
    [
        (["en", "de", "de"], "languages names de more than once (en,de,de)"),
        (["en", "en"], "languages names en more than once"),
        (["en", "german"], "'german' is not a language code"),
        (["en", "d e"], "'d e' is not a language code"),
        (["en", 7], "7 is not a language code"),
        (["EN", "de"], "write 'EN' as 'en'"),
        (["en", "ZH-Hant"], "write 'ZH-Hant' as 'zh-Hant'"),
        ("en,de", "languages must be a list of language codes"),
    ],
)
def test_languages_that_are_not_distinct_language_codes_are_refused(languages, message):
    with pytest.raises(SettingsError, match="languages") as raised:
        BuildSettings(languages=languages)
    assert message in str(raised.value)


def test_language_codes_keep_their_forms_and_blanks_are_left_out():
    assert BuildSettings(languages=[" en ", "", "zh-Hant", "yue", "pt_BR"]).languages == [
        "en",
        "zh-Hant",
        "yue",
        "pt_BR",
    ]
    assert settings_from_options({"languages": "en, de,"}).languages == ["en", "de"]


def test_a_repeated_language_no_longer_drops_a_positional_pair_file(no_build, tmp_path):
    arguments = ["build", "--out", str(tmp_path / "m"), "--prompt", "", "--languages", "en,de,de"]
    arguments += ["--parallel", str(tmp_path / "a.tsv"), "--parallel", str(tmp_path / "b.tsv")]
    assert_one_error_line(runner.invoke(app, arguments), "error: languages names de more than once")
    assert not (tmp_path / "m").exists()


# ------------------------------------------------------------------------------------------------ LANG=FILE options
@pytest.mark.parametrize("entry", ["de=", "de=  ", "=en-de.tsv"])
def test_a_parallel_entry_with_an_empty_side_is_refused_not_read_as_a_file_name(entry):
    with pytest.raises(SettingsError, match=r"^--parallel .*one side of its = is empty"):
        BuildSettings(parallel=[entry], languages=["en", "de"])


def test_the_build_command_names_the_parallel_entry_with_an_empty_side(no_build, tmp_path):
    arguments = ["build", "--out", str(tmp_path / "m"), "--prompt", "", "--languages", "en,de", "--parallel", "de="]
    assert_one_error_line(runner.invoke(app, arguments), "error: --parallel de=: give LANG=FILE")


def test_a_second_pass_entry_with_a_blank_file_is_refused():
    with pytest.raises(SettingsError, match=r"^--second-pass-pairs de=  : give LANG=FILE"):
        BuildSettings(
            parallel=["de=en-de.tsv"],
            languages=["en", "de"],
            second_pass=SecondPassSettings(second_pass_pairs=["de=  "]),
        )


def test_extra_pairs_naming_a_language_twice_are_refused_not_overwritten(no_build, tmp_path):
    values = {"languages": "en,de", "parallel": ["de=en-de.tsv"], "extra_pairs": ["de=one.tsv", "de=two.tsv"]}
    with pytest.raises(SettingsError, match=r"--extra-pairs names de twice \(de=one.tsv, de=two.tsv\)"):
        settings_from_options(values)
    arguments = ["build", "--out", str(tmp_path / "m"), "--prompt", "", "--languages", "en,de"]
    arguments += ["--parallel", "de=en-de.tsv", "--extra-pairs", "de=one.tsv", "--extra-pairs", "de=two.tsv"]
    assert_one_error_line(runner.invoke(app, arguments), "error: --extra-pairs names de twice")


def test_extra_pairs_without_parallel_files_are_refused_not_ignored():
    with pytest.raises(SettingsError, match=r"extra_pairs join the contrastive training .* give --parallel files"):
        BuildSettings(corpus=["en.txt"], languages=["en", "de"], extra_pairs={"de": "words.tsv"})
    with pytest.raises(SettingsError, match="extra_pairs names 'fr', which is not one of the paired languages"):
        BuildSettings(parallel=["de=en-de.tsv"], languages=["en", "de"], extra_pairs={"fr": "words.tsv"})


# ------------------------------------------------------------------------------------------------ data folders
def test_a_data_folder_that_is_missing_or_a_file_is_a_project_error(tmp_path):
    with pytest.raises(DataFolderNotFoundError, match="no-such: no such data folder"):
        find_tasks(tmp_path / "no-such")
    (tmp_path / "file.tsv").write_text(BITEXT_HEADER + BITEXT_ROWS)
    with pytest.raises(FileNotFoundError, match=r"file\.tsv: is a file, not a data folder"):
        find_tasks(tmp_path / "file.tsv")


@pytest.mark.parametrize("name", ["no-such", "file.tsv"])
def test_evaluate_names_data_that_is_not_a_folder_in_one_line(word_model, tmp_path, name):
    word_model.save_pretrained(str(tmp_path / "model"))
    (tmp_path / "file.tsv").write_text(BITEXT_HEADER + BITEXT_ROWS)
    result = runner.invoke(app, ["evaluate", str(tmp_path / "model"), "--data", str(tmp_path / name)])
    assert_one_error_line(result, f"error: --data {tmp_path / name}: ")


def test_build_names_eval_data_that_is_not_a_folder_in_one_line(no_build, tmp_path):
    arguments = ["build", "--out", str(tmp_path / "m"), "--prompt", "", "--eval-data", str(tmp_path / "no-such")]
    assert_one_error_line(runner.invoke(app, arguments), f"error: --eval-data {tmp_path / 'no-such'}: no such data")


# ------------------------------------------------------------------------------------------------ bitext files
def bitext_folder(root: Path, folder: str, content: str) -> Path:
    path = root / "data" / folder / "deu-eng.tsv"
    path.parent.mkdir(parents=True)
    path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize("folder", ["tatoeba", "xling/tuxpaint"])
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (BITEXT_HEADER + "the cat\t\n" + BITEXT_ROWS, "deu-eng.tsv:2: column 2 is empty"),
        (BITEXT_HEADER + BITEXT_ROWS + " \thund\n", "deu-eng.tsv:5: column 1 is empty"),
        (BITEXT_HEADER + "the cat\tcat\n", "deu-eng.tsv: only one pair; retrieval needs at least two"),
    ],
)
def test_a_bitext_file_that_retrieval_cannot_score_is_one_error_line(word_model, tmp_path, folder, content, message):
    bitext_folder(tmp_path, folder, content)
    word_model.save_pretrained(str(tmp_path / "model"))
    result = runner.invoke(app, ["evaluate", str(tmp_path / "model"), "--data", str(tmp_path / "data")])
    assert_one_error_line(result, message)
    with pytest.raises(DataFormatError, match=message):  # and a build's --eval-data is refused before its teacher
        task_evaluator(tmp_path / "data", languages=["en", "de"])


def test_a_bitext_file_with_two_full_pairs_is_scored(tmp_path):
    path = bitext_folder(tmp_path, "tatoeba", BITEXT_HEADER + "a\tx\nb\ty\n")
    result = evaluate_translation_retrieval(lambda texts: np.eye(4)[[0, 1, 0, 1]], path)
    assert result["pairs"] == 2 and result["score"] == 100.0


def test_evaluate_reads_the_data_files_before_it_loads_the_teacher(word_model, tmp_path, monkeypatch):
    import st_static.cli.evaluate as evaluate_module

    monkeypatch.setattr(evaluate_module, "open_teacher", lambda *a, **k: pytest.fail("the teacher was loaded"))
    bitext_folder(tmp_path, "xling/tuxpaint", BITEXT_HEADER + "the cat\tcat\nhello world\n")
    word_model.save_pretrained(str(tmp_path / "model"))
    arguments = ["evaluate", str(tmp_path / "model"), "--data", str(tmp_path / "data"), "--teacher", "minilm"]
    assert_one_error_line(runner.invoke(app, arguments), "deu-eng.tsv:3: expected 2 tab-separated fields, got 1")
