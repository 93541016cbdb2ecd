"""Hostile inputs (issue 31 item 6): each is refused with an st-static error naming the file, one ``error:`` line
from the command line, and before any teacher pass when it is an input of a build."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import st_static.stages.extraction as stages_module
from st_static import save_model
from st_static.cli import app
from st_static.data_files import DataFormatError
from st_static.errors import ModelFolderError
from st_static.evaluation.task_files import TaskFileError, read_labelled_pairs
from st_static.extraction.corpus import CorpusError, check_corpus, check_corpus_language
from st_static.model.save_load import load_model

from .teachers import TINY_CORPUS, make_tiny_teacher

runner = CliRunner()
DEEP_JSON = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> Path:
    return make_tiny_teacher(tmp_path_factory.mktemp("teacher"))


@pytest.fixture
def folder(word_model, tmp_path) -> Path:
    return save_model(word_model, tmp_path / "model")


@pytest.fixture
def no_teacher_pass(monkeypatch) -> None:
    monkeypatch.setattr(stages_module, "load_teacher", lambda *a, **k: pytest.fail("the teacher was loaded"))
    monkeypatch.setattr(stages_module, "extract_word_vectors", lambda *a, **k: pytest.fail("the teacher ran"))


def assert_one_error_line(result, fragment: str) -> None:
    """Exit code 1, no traceback, and one ``error:`` line (last) holding ``fragment``; progress lines may precede it."""
    lines = result.output.strip().splitlines()
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert [line for line in lines if line.startswith("error:")] == lines[-1:], result.output
    assert fragment in lines[-1], result.output


def build_arguments(teacher: Path, corpus: Path, out: Path) -> list[str]:
    return ["build", "--teacher", str(teacher), "--corpus", str(corpus), "--out", str(out), "--dim", "8"]


# ------------------------------------------------------------------------------------------------ model folders
@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        ("tokenizer.json", DEEP_JSON, "tokenizer.json is corrupt (its JSON is nested too deeply to parse)"),
        ("st_static_config.json", DEEP_JSON, "st_static_config.json is corrupt (its JSON is nested too deeply"),
        ("st_static_config.json", '{"num_words": ' + "9" * 5000 + "}", "holds an integer of over 4,300 digits"),
        ("st_static_config.json", "{not json", "st_static_config.json is corrupt (Expecting property name"),
        ("modules.json", DEEP_JSON, "modules.json is corrupt (its JSON is nested too deeply"),
        ("modules.json", "[{", "modules.json is corrupt (Expecting property name"),
    ],
)
def test_json_python_cannot_parse_is_a_model_folder_error_naming_the_file(folder, file, content, message):
    (folder / file).write_text(content, encoding="utf-8")
    with pytest.raises(ModelFolderError, match=re.escape(message)):
        load_model(folder)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_config_number_json_does_not_allow_is_refused_by_load_and_info(folder, constant):
    """Python reads NaN as a float every type check passes; ``info`` printed it back as a figure."""
    config = json.loads((folder / "st_static_config.json").read_text(encoding="utf-8"))
    config["metadata"]["training"] = {"learning_rate": 0.001}
    text = json.dumps(config).replace("0.001", constant)
    (folder / "st_static_config.json").write_text(text, encoding="utf-8")
    message = f"st_static_config.json is corrupt (it holds {constant}, which is not a JSON value)"
    with pytest.raises(ModelFolderError, match=re.escape(message)):
        load_model(folder)
    assert_one_error_line(runner.invoke(app, ["info", str(folder)]), message)


def test_info_on_a_deeply_nested_tokenizer_is_one_error_line(folder):
    (folder / "tokenizer.json").write_text(DEEP_JSON, encoding="utf-8")
    assert_one_error_line(runner.invoke(app, ["info", str(folder)]), "tokenizer.json is corrupt")


@pytest.mark.parametrize("kind", ["os.system", "some_pkg.Evil"])
def test_info_refuses_a_class_outside_sentence_transformers_as_load_model_does(folder, kind):
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    modules[1]["type"] = kind
    (folder / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    with pytest.raises(ModelFolderError, match=f"names the class '{kind}'"):
        load_model(folder)
    assert_one_error_line(
        runner.invoke(app, ["info", str(folder)]), f"modules.json: its entry 1 names the class '{kind}'"
    )


def test_a_module_path_outside_the_folder_is_refused(folder):
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    modules[1]["path"] = "../elsewhere"
    (folder / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    with pytest.raises(ModelFolderError, match="not a relative path inside the folder"):
        load_model(folder)


# ------------------------------------------------------------------------------------------------ build inputs
def test_a_prompt_that_fills_the_teachers_length_is_refused_before_the_teacher_pass(teacher, tmp_path, no_teacher_pass):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n")
    arguments = [*build_arguments(teacher, corpus, tmp_path / "m"), "--prompt", " ".join(["word"] * 400)]
    assert_one_error_line(runner.invoke(app, arguments), "--prompt takes 400 of the teacher's 64 tokens per text")
    assert not (tmp_path / "m").exists()


def test_a_chinese_corpus_under_english_is_refused_before_the_teacher_pass(teacher, tmp_path, no_teacher_pass):
    corpus = tmp_path / "zh.txt"
    lines = [
        "我们今天去公园散步了",
        "他喜欢在图书馆看书",
        "这个城市的天气很好",
        "我的朋友明天来北京",
        "她每天早上喝咖啡",
    ]
    corpus.write_text("\n".join(lines * 4) + "\n", encoding="utf-8")
    result = runner.invoke(app, build_arguments(teacher, corpus, tmp_path / "m"))
    assert_one_error_line(result, "It looks like Chinese text: pass --languages zh.")


def test_run_extraction_refuses_a_chinese_corpus_under_english_before_the_teacher(teacher, tmp_path, no_teacher_pass):
    from st_static.settings import ExtractionSettings

    lines = ["我们今天去公园散步了", "他喜欢在图书馆看书", "这个城市的天气很好", "我的朋友明天来北京"] * 5
    with pytest.raises(CorpusError, match="pass --languages zh"):
        stages_module.run_extraction(lines, ExtractionSettings(teacher=str(teacher)), tmp_path / "extraction")


def test_a_japanese_corpus_is_told_to_pass_ja():
    lines = ["今日は公園を散歩しました", "図書館で本を読むのが好きです"] * 5
    with pytest.raises(CorpusError, match="It looks like Japanese text: pass --languages ja"):
        check_corpus_language(lines, "en")
    check_corpus_language(lines, "ja")  # the right language passes
    check_corpus_language([*TINY_CORPUS, "一句中文"], "en")  # English with a little Chinese passes


def test_a_json_lines_corpus_file_is_one_error_line_naming_its_fields(teacher, tmp_path, no_teacher_pass):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"sentence": line, "id": 1}) for line in TINY_CORPUS * 3) + "\n")
    result = runner.invoke(app, build_arguments(teacher, corpus, tmp_path / "m"))
    assert_one_error_line(result, "holds JSON Lines: objects with the fields ['id', 'sentence'], not plain text")


def test_a_json_array_corpus_file_is_refused_naming_its_fields(tmp_path):
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"sentence": line} for line in TINY_CORPUS * 3]))
    with pytest.raises(CorpusError, match=r"corpus.json holds a JSON array of objects with the fields \['sentence'\]"):
        check_corpus(corpus)


def test_corpus_dicts_without_the_text_field_are_refused_naming_the_fields():
    with pytest.raises(CorpusError, match=r"Corpus item 0 has the fields \['sentence'\], not 'text'"):
        check_corpus([{"sentence": line} for line in TINY_CORPUS * 3])


def test_an_empty_corpus_in_memory_is_named_once():
    """Issue 66: it was "0 sentences given in memory has only 0 sentence(s)"."""
    from st_static.extraction.corpus import corpus_name

    with pytest.raises(CorpusError, match=r"^The corpus given in memory has only 0 sentence\(s\)") as raised:
        check_corpus([], name=corpus_name([]))
    assert "sentences given in memory" not in str(raised.value)


def test_eval_data_that_cannot_be_scored_is_refused_before_the_teacher_pass(teacher, tmp_path, no_teacher_pass):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n")
    sts = tmp_path / "data" / "sts" / "stsb-en-dev.tsv"
    sts.parent.mkdir(parents=True)
    sts.write_text("sentence1\tsentence2\tscore\nthe cat\tthe mat\t3.0\n")
    arguments = [*build_arguments(teacher, corpus, tmp_path / "m"), "--eval-data", str(tmp_path / "data")]
    assert_one_error_line(runner.invoke(app, arguments), f"{sts}: only one pair")
    assert not (tmp_path / "m").exists()


# ------------------------------------------------------------------------------------------------ evaluation files
STS_HEADER = "sentence1\tsentence2\tscore\n"
MSRP_HEADER = "sentence1\tsentence2\tlabel\n"
LONG_FIELD = "a " * 70_000  # 140,000 characters: over csv's 131,072


@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        ("sts/stsb-en-dev.tsv", STS_HEADER + "the cat\tthe mat\t3.0\n", "stsb-en-dev.tsv: only one pair"),
        ("sts/stsb-en-dev.tsv", STS_HEADER + "the cat\tthe mat\t3\nthe\tcat\t3\n", "every pair has the gold score 3"),
        ("pairclass/msrp-dev.tsv", MSRP_HEADER + "the cat\tmat\t0\nthe\tcat\t0\n", "none of the 2 pairs has label 1"),
        ("sts/stsb-en-dev.tsv", STS_HEADER + f"the cat\tmat\t3\n{LONG_FIELD}\tthe\t2\n", "stsb-en-dev.tsv:3: a field"),
        ("sts/stsb-en-dev.tsv", STS_HEADER + "the cat\tmat\t3\nthe\tcat\tnan\nword\tworld\t1\n", "tsv:3: score 'nan'"),
        ("sts/stsb-en-dev.tsv", STS_HEADER + "the cat\tmat\t3\nthe\tcat\t1\nword\tworld\tinf\n", "tsv:4: score 'inf'"),
        ("pairclass/msrp-dev.tsv", MSRP_HEADER + "the cat\tmat\t1\nthe\tcat\t-inf\n", "msrp-dev.tsv:3: label '-inf'"),
    ],
)
def test_an_evaluation_file_that_cannot_be_scored_is_one_error_line(folder, tmp_path, file, content, message):
    path = tmp_path / "data" / file
    path.parent.mkdir(parents=True)
    path.write_text(content)
    result = runner.invoke(app, ["evaluate", str(folder), "--data", str(tmp_path / "data")])
    assert_one_error_line(result, message)


def test_a_task_file_with_a_long_field_is_one_error_line(folder, tmp_path):
    task = tmp_path / "topics.tsv"
    task.write_text(f"text\tlabel\nthe cat\tx\n{LONG_FIELD}\ty\n")
    assert_one_error_line(runner.invoke(app, ["evaluate", str(folder), "--tasks", str(task)]), "topics.tsv:3: a field")


def test_a_pair_task_file_without_a_positive_pair_is_refused(tmp_path):
    task = tmp_path / "pairs.tsv"
    task.write_text(MSRP_HEADER + "the cat\tmat\t0\nthe\tcat\t0\n")
    with pytest.raises(TaskFileError, match="none of the 2 pairs has label 1"):
        read_labelled_pairs(task)


def test_data_format_errors_name_the_line_of_a_non_finite_score(tmp_path):
    from st_static.data_files import read_scored_pairs

    path = tmp_path / "sts.tsv"
    path.write_text(STS_HEADER + "the cat\tmat\t3\n\nthe\tcat\tnan\n")  # an empty line: line numbers stay the file's
    with pytest.raises(DataFormatError, match=r"sts.tsv:4: score 'nan' is not a finite number"):
        read_scored_pairs(path)
