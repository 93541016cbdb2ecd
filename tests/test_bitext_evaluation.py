"""Bitext evaluation in every language (issue 65): Tatoeba and Tux Paint files found, named and mapped to the
languages models list, scored in both directions, and shown beside the teacher's in ``st-static evaluate`` and the
card (a row per language, the share of the teacher's score)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import yaml
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from typer.testing import CliRunner

import st_static
from st_static import StaticWordAverage
from st_static.cli import app
from st_static.evaluation import evaluate_tasks, find_tasks, lookup_encoder, model_encoder
from st_static.evaluation.report import markdown_tables
from st_static.evaluation.suite import default_tasks, task_languages, task_split
from st_static.model_card import (
    EVALUATION_FILE_NAME,
    EvaluationFileError,
    check_evaluation,
    evaluation_table_differences,
    parse_evaluation_table,
    render_evaluation_table,
)
from st_static.model_card.language_summary import render_language_summary

from .conftest import SHARED_DATA, WORDS

runner = CliRunner()

# The ISO 639-3 names of the xling/tuxpaint/ files and the ISO 639-1 codes models list (the data README's languages).
TUX_PAINT_CODES = {
    "ara": "ar",
    "ces": "cs",
    "cmn": "zh",
    "deu": "de",
    "fin": "fi",
    "fra": "fr",
    "hun": "hu",
    "ind": "id",
    "ita": "it",
    "jpn": "ja",
    "kor": "ko",
    "nld": "nl",
    "pol": "pl",
    "por": "pt",
    "rus": "ru",
    "spa": "es",
    "swe": "sv",
    "tur": "tr",
    "ukr": "uk",
    "vie": "vi",
}


def write_tsv(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\t".join(header) + "\n" + "".join("\t".join(map(str, row)) + "\n" for row in rows))
    return path


@pytest.fixture
def bitext_dir(tmp_path):
    """A data folder with STS-B English, Tatoeba French and Tux Paint French and Korean (texts of the tiny models)."""
    root = tmp_path / "data"
    write_tsv(
        root / "sts" / "stsb-en-test.tsv",
        ("sentence1", "sentence2", "score"),
        [("the cat sat", "the cat sat on the mat", 4.5), ("hello world", "the mat", 0.5), ("the cat", "cat", 3.0)],
    )
    write_tsv(root / "sts" / "stsb-en-train.tsv", ("sentence1", "sentence2", "score"), [("the cat", "cat", 3.0)])
    pairs = [("the cat", "cat"), ("hello world", "world"), ("mat", "on mat"), ("token", "tokenise word")]
    write_tsv(root / "tatoeba" / "fra-eng.tsv", ("eng", "other"), pairs)
    write_tsv(root / "xling" / "tuxpaint" / "fra-eng.tsv", ("eng", "other"), pairs[::-1])
    write_tsv(root / "xling" / "tuxpaint" / "kor-eng.tsv", ("eng", "other"), pairs[:2])
    return root


# ---------------------------------------------------------------- finding and choosing the files
def test_tux_paint_files_are_found_and_named_as_translation_tasks(bitext_dir):
    tasks = {task.name: task for task in find_tasks(bitext_dir)}
    assert {"tatoeba-fra-eng", "tuxpaint-fra-eng", "tuxpaint-kor-eng"} <= set(tasks)
    assert tasks["tuxpaint-kor-eng"].kind == "translation"
    assert tasks["tuxpaint-kor-eng"].path == bitext_dir / "xling" / "tuxpaint" / "kor-eng.tsv"
    assert [task.name for task in find_tasks(bitext_dir, include="tuxpaint-*")] == [
        "tuxpaint-fra-eng",
        "tuxpaint-kor-eng",
    ]


@pytest.mark.parametrize(("three", "two"), sorted(TUX_PAINT_CODES.items()))
def test_every_tux_paint_language_maps_to_the_code_models_list(three, two):
    assert task_languages(f"tuxpaint-{three}-eng") == {two, "en"}
    assert task_languages(f"tatoeba-{three}-eng") == {two, "en"}
    assert task_split(f"tuxpaint-{three}-eng") == "dev"  # dev halves, like tatoeba


@pytest.mark.skipif(not (SHARED_DATA / "xling" / "tuxpaint").is_dir(), reason="needs the shared data folder")
def test_the_shared_tux_paint_files_are_the_twenty_mapped_languages():
    names = {task.name for task in find_tasks(SHARED_DATA, include="tuxpaint-*")}
    assert names == {f"tuxpaint-{three}-eng" for three in TUX_PAINT_CODES}


def test_default_tasks_pick_the_bitext_files_of_the_models_languages(bitext_dir):
    tasks = find_tasks(bitext_dir)
    french = {task.name for task in default_tasks(tasks, ["en", "fr"])}
    assert french == {"stsb-en-test", "tatoeba-fra-eng", "tuxpaint-fra-eng"}  # no Korean, no train file
    assert {task.name for task in default_tasks(tasks, ["en"])} == {"stsb-en-test"}
    every = {task.name for task in default_tasks(tasks, None)}
    assert every == {"stsb-en-test", "tatoeba-fra-eng", "tuxpaint-fra-eng", "tuxpaint-kor-eng"}


def test_a_crosslingual_builds_evaluator_scores_only_its_languages_dev_and_test_files(bitext_dir, tmp_path):
    from st_static.data_files import DataFormatError
    from st_static.evaluation.suite import NoEvaluationDataError, task_evaluator

    model = st_static.load_model(save_table(tmp_path / "model", seed=0, languages=["en", "fr"]))
    assert set(task_evaluator(bitext_dir, languages=["en", "fr"])(model)) == {
        "stsb-en-test",
        "tatoeba-fra-eng",
        "tuxpaint-fra-eng",
    }
    with pytest.raises(DataFormatError, match="stsb-en-train"):  # without languages: every file, as before
        task_evaluator(bitext_dir)
    assert set(task_evaluator(bitext_dir, "tuxpaint-kor-*", languages=["en", "fr"])(model)) == {"tuxpaint-kor-eng"}
    with pytest.raises(NoEvaluationDataError, match="in the languages ja"):
        task_evaluator(bitext_dir, languages=["ja"])


def test_the_disentangle_benchmark_reads_the_same_codes(bitext_dir):
    from benchmarks.disentangle import tasks_for

    tasks = tasks_for(bitext_dir, ["en", "fr", "ko"])
    assert tasks["tuxpaint-ko"] == ("translation", "dev", bitext_dir / "xling" / "tuxpaint" / "kor-eng.tsv")
    assert tasks["tatoeba-fr"][2] == bitext_dir / "tatoeba" / "fra-eng.tsv"


# ---------------------------------------------------------------- scores
def test_tux_paint_accuracy_is_counted_in_both_directions(tmp_path):
    write_tsv(
        tmp_path / "xling" / "tuxpaint" / "fra-eng.tsv",
        ("eng", "other"),
        [("a cow", "une vache"), ("a cat", "un chat"), ("a dog", "un chien")],
    )
    angles = {"a cow": 0.0, "a cat": 1.0, "a dog": 2.0, "une vache": 0.1, "un chat": 0.45, "un chien": 2.1}
    encoder = lookup_encoder({text: np.array([math.cos(angle), math.sin(angle)]) for text, angle in angles.items()})
    result = evaluate_tasks(encoder, find_tasks(tmp_path))["tuxpaint-fra-eng"]
    # en->fr: every English caption is nearest its own translation; fr->en: "un chat" (0.45) is nearer "a cow" (0)
    # than "a cat" (1.0), the other two are right.
    assert result["accuracy_1_to_2"] == pytest.approx(100.0)
    assert result["accuracy_2_to_1"] == pytest.approx(200 / 3)
    assert result["score"] == pytest.approx(250 / 3)
    assert (result["kind"], result["pairs"]) == ("translation", 3)


def test_printed_table_has_the_teachers_column_and_its_mean_only_when_complete():
    results = {
        "tatoeba-fra-eng": {"metric": "accuracy", "score": 90.0, "pairs": 4},
        "stsb-en-test": {"metric": "spearman_cosine", "score": 70.0, "pairs": 3},
    }
    teacher = {"tatoeba-fra-eng": {"metric": "accuracy", "score": 96.0}, "stsb-en-test": {"score": 84.0}}
    table = markdown_tables(results, teacher)
    assert "| task | metric | score | teacher | pairs |" in table
    assert "| tatoeba-fra-eng | accuracy | 90.00 | 96.00 | 4 |" in table
    assert "| **mean of 2 tasks** |  | **80.00** | **90.00** |  |" in table
    partial = markdown_tables(results, {"tatoeba-fra-eng": teacher["tatoeba-fra-eng"]})
    assert "| stsb-en-test | spearman_cosine | 70.00 | - | 3 |" in partial
    assert "| **mean of 2 tasks** |  | **80.00** |  |  |" in partial  # no teacher mean over fewer tasks
    assert "teacher" not in markdown_tables(results)


# ---------------------------------------------------------------- per-language table and the card
RESULTS = {
    "stsb-en-test": {"metric": "spearman_cosine", "score": 75.0, "kind": "sts"},
    "tatoeba-fra-eng": {"metric": "accuracy", "score": 90.0, "kind": "translation"},
    "tuxpaint-fra-eng": {"metric": "accuracy", "score": 70.0, "kind": "translation"},
    "tuxpaint-kor-eng": {"metric": "accuracy", "score": 40.0, "kind": "translation"},
}
TEACHER = {
    "stsb-en-test": {"metric": "spearman_cosine", "score": 82.0},
    "tatoeba-fra-eng": {"metric": "accuracy", "score": 95.0},
    "tuxpaint-fra-eng": {"metric": "accuracy", "score": 80.0},
    "tuxpaint-kor-eng": {"metric": "accuracy", "score": 50.0},
}


def test_language_rows_put_the_teachers_scores_beside_and_the_share_of_them():
    lines = render_language_summary(RESULTS, TEACHER).splitlines()
    assert lines[0] == (
        "| language | Tatoeba | Tatoeba (teacher) | Tux Paint | Tux Paint (teacher) | share of the teacher's |"
    )
    assert "| French (fr) | 90.00 | 95.00 | 70.00 | 80.00 | 91.4% |" in lines  # (90 + 70) / (95 + 80)
    assert "| Korean (ko) | - | - | 40.00 | 50.00 | 80.0% |" in lines
    # Tux Paint: (70 + 40) / 2 and (80 + 50) / 2; the share over every task both have: 200 / 225
    assert lines[-1] == "| **mean of 2 languages** | 90.00 | 95.00 | 55.00 | 65.00 | 88.9% |"


def test_without_the_teachers_scores_only_the_models_are_shown():
    lines = render_language_summary(RESULTS).splitlines()
    assert lines[0] == "| language | Tatoeba | Tux Paint |"
    assert "| French (fr) | 90.00 | 70.00 |" in lines
    assert not any("teacher" in line or "%" in line for line in lines)
    assert render_language_summary({"stsb-en-test": RESULTS["stsb-en-test"]}) == ""  # an English model: no table


def test_a_teacher_scored_on_fewer_languages_gets_no_mean_over_other_ones():
    teacher = {"tuxpaint-fra-eng": TEACHER["tuxpaint-fra-eng"]}
    lines = render_language_summary(RESULTS, teacher).splitlines()
    assert "| Korean (ko) | - | - | 40.00 | - | - |" in lines
    assert lines[-1] == "| **mean of 2 languages** | 90.00 | - | 55.00 | - | 87.5% |"  # 70 / 80


def test_the_evaluation_table_shows_the_teacher_column_and_checks_it():
    evaluation = {"results": RESULTS, "teacher": {"model": "intfloat/multilingual-e5-small", "results": TEACHER}}
    table = render_evaluation_table(evaluation)
    assert "| task | metric | score | teacher (multilingual-e5-small) |" in table
    assert parse_evaluation_table(table)["tuxpaint-kor-eng"] == ("accuracy", "40.00", "50.00")
    assert evaluation_table_differences(table, evaluation) == []
    changed = json.loads(json.dumps(evaluation))
    changed["teacher"]["results"]["tuxpaint-kor-eng"]["score"] = 55.0
    assert evaluation_table_differences(table, changed) == [
        "tuxpaint-kor-eng: the card shows accuracy 40.00 (teacher 50.00), evaluation.json has accuracy 40.00 "
        "(teacher 55.00)"
    ]
    with pytest.raises(EvaluationFileError, match="teacher"):
        check_evaluation({"results": RESULTS, "teacher": {"model": "x"}})
    with pytest.raises(EvaluationFileError, match=r"teacher: result 'tatoeba-fra-eng'"):
        check_evaluation({"results": RESULTS, "teacher": {"results": {"tatoeba-fra-eng": {"score": 1}}}})


def save_card(model, folder, evaluation) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / EVALUATION_FILE_NAME).write_text(json.dumps(evaluation), encoding="utf-8")
    model.save_pretrained(str(folder))
    return (folder / "README.md").read_text(encoding="utf-8")


def test_the_card_of_a_crosslingual_model_has_a_row_per_language_with_the_teacher_beside(described_model, tmp_path):
    described_model[0].metadata.languages = ["en", "fr", "ko"]
    evaluation = {"results": RESULTS, "teacher": {"model": "intfloat/multilingual-e5-small", "results": TEACHER}}
    card = save_card(described_model, tmp_path / "model", evaluation)
    assert "| French (fr) | 90.00 | 95.00 | 70.00 | 80.00 | 91.4% |" in card
    assert "| Korean (ko) | - | - | 40.00 | 50.00 | 80.0% |" in card
    assert "mean of both directions, dev halves, the teacher's beside" in card
    assert parse_evaluation_table(card)["tatoeba-fra-eng"] == ("accuracy", "90.00", "95.00")
    assert evaluation_table_differences(card, evaluation) == []
    index = yaml.safe_load(card.split("---\n")[1])["model-index"][0]["results"]
    tasks = {result["dataset"]["type"]: result["task"]["type"] for result in index}
    assert tasks["tuxpaint-kor-eng"] == "translation-retrieval"


def test_a_card_without_the_teachers_scores_shows_only_the_models(described_model, tmp_path):
    described_model[0].metadata.languages = ["en", "fr", "ko"]
    card = save_card(described_model, tmp_path / "model", {"results": RESULTS})
    assert "| language | Tatoeba | Tux Paint |" in card and "| French (fr) | 90.00 | 70.00 |" in card
    assert "share of the teacher's" not in card and "Tatoeba (teacher)" not in card
    assert "| task | metric | score |" in card  # no teacher column
    assert parse_evaluation_table(card)["tatoeba-fra-eng"] == ("accuracy", "90.00")


def test_an_english_card_has_no_language_rows(described_model, tmp_path):
    card = save_card(described_model, tmp_path / "model", {"results": {"stsb-en-test": RESULTS["stsb-en-test"]}})
    assert "Translation retrieval per language" not in card and "| language |" not in card


# ---------------------------------------------------------------- st-static evaluate --teacher
def save_table(folder, seed: int, languages: list[str] | None = None):
    vectors = np.random.default_rng(seed).standard_normal((len(WORDS), 16)).astype(np.float32)
    metadata = {"languages": languages} if languages else None
    module = StaticWordAverage.from_word_vectors(WORDS, vectors, metadata=metadata)
    st_static.save_model(SentenceTransformer(modules=[module, Normalize()], device="cpu"), folder)
    return folder


def test_evaluate_scores_the_teacher_on_the_same_tasks_and_keeps_it_in_the_json(bitext_dir, tmp_path):
    model = save_table(tmp_path / "model", seed=0, languages=["en", "fr"])
    teacher = save_table(tmp_path / "teacher", seed=1)
    json_path = tmp_path / "evaluation.json"
    arguments = ["evaluate", str(model), "--data", str(bitext_dir), "--json", str(json_path), "--teacher", str(teacher)]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 0, result.output
    document = json.loads(json_path.read_text())
    assert set(document["results"]) == {"stsb-en-test", "tatoeba-fra-eng", "tuxpaint-fra-eng"}  # no Korean
    assert document["teacher"]["model"] == str(teacher)
    tasks = default_tasks(find_tasks(bitext_dir), ["en", "fr"])
    expected = evaluate_tasks(model_encoder(st_static.load_model(teacher)), tasks)
    for name, scores in expected.items():
        assert document["teacher"]["results"][name]["score"] == pytest.approx(scores["score"], abs=1e-6)
    model_score = document["results"]["tuxpaint-fra-eng"]["score"]
    teacher_score = expected["tuxpaint-fra-eng"]["score"]
    assert f"| tuxpaint-fra-eng | accuracy | {model_score:.2f} | {teacher_score:.2f} | 4 |" in result.stdout
    assert "| French (fr) |" in result.stdout and "share of the teacher's" in result.stdout


def test_evaluate_reads_the_teachers_scores_from_its_evaluation_file(bitext_dir, tmp_path):
    model = save_table(tmp_path / "model", seed=0, languages=["en", "fr"])
    teacher_scores = {
        "tatoeba-fra-eng": {"metric": "accuracy", "score": 50.0},
        "tuxpaint-kor-eng": {"metric": "accuracy", "score": 30.0},
    }
    teacher_file = tmp_path / "teacher.json"
    teacher_file.write_text(json.dumps({"model": "my-teacher", "results": teacher_scores}))
    json_path = tmp_path / "evaluation.json"
    arguments = ["evaluate", str(model), "--data", str(bitext_dir), "--json", str(json_path)]
    result = runner.invoke(app, [*arguments, "--teacher", str(teacher_file)])
    assert result.exit_code == 0, result.output
    document = json.loads(json_path.read_text())
    assert document["teacher"] == {
        "model": "my-teacher",
        "results": {"tatoeba-fra-eng": teacher_scores["tatoeba-fra-eng"]},
    }
    row = next(line for line in result.stdout.splitlines() if line.startswith("| tuxpaint-fra-eng |"))
    assert row.endswith("| - | 4 |")  # the teacher's file has no French Tux Paint score


def test_evaluate_without_a_teacher_writes_and_prints_only_the_models_scores(bitext_dir, tmp_path):
    model = save_table(tmp_path / "model", seed=0, languages=["en", "fr"])
    json_path = tmp_path / "evaluation.json"
    result = runner.invoke(app, ["evaluate", str(model), "--data", str(bitext_dir), "--json", str(json_path)])
    assert result.exit_code == 0, result.output
    assert "teacher" not in json.loads(json_path.read_text())
    assert "| language | Tatoeba | Tux Paint |" in result.stdout and "teacher" not in result.stdout


def test_a_broken_teacher_file_is_one_error_line(bitext_dir, tmp_path):
    model = save_table(tmp_path / "model", seed=0, languages=["en", "fr"])
    (tmp_path / "teacher.json").write_text('{"results": {"tatoeba-fra-eng": {"score": 1}}}')
    result = runner.invoke(
        app, ["evaluate", str(model), "--data", str(bitext_dir), "--teacher", str(tmp_path / "teacher.json")]
    )
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "--teacher" in result.stderr and "no 'metric'" in result.stderr
