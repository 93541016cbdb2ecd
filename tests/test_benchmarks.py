"""The benchmark worker measures a row end to end and returns the model's own embeddings."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
WORKER = REPO / "benchmarks" / "bench_worker.py"
# Every maintained benchmark: the scripts at the top of benchmarks/ but the helpers and compare.py's row worker.
MAINTAINED = sorted(
    path.stem
    for path in (REPO / "benchmarks").glob("*.py")
    if path.stem not in {"__init__", "common", "text_vectors", "bench_worker"}
)
SHOW_HELP = """
import runpy, sys
for name in sys.argv[1:]:
    sys.argv = [name, "--help"]
    try:
        runpy.run_module(f"benchmarks.{name}", run_name="__main__")
    except SystemExit as exit:
        if exit.code not in (0, None):
            raise
"""


def test_worker_on_a_tiny_static_model(word_model, tmp_path):
    word_model.save_pretrained(str(tmp_path / "model"))
    texts = ["the cat sat", "hello world", "", "tokeniser"]
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    (tmp_path / "corpus.txt").write_text("the cat sat on the mat\nhello world\n" * 40)
    spec = {
        "kind": "sentence-transformers",
        "path": str(tmp_path / "model"),
        "texts": str(tmp_path / "texts.json"),
        "corpus": str(tmp_path / "corpus.txt"),
        "sentences": 64,
        "batch_size": 16,
        "repeats": 2,
        "time_budget": 1.0,
        "output": str(tmp_path / "out"),
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    env = {**os.environ, "PYTHONPATH": str(WORKER.parents[1]), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, str(WORKER), str(tmp_path / "spec.json")], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    np.testing.assert_allclose(np.load(tmp_path / "out" / "embeddings.npy"), word_model.encode(texts), atol=1e-6)
    assert metrics["dim"] == 16
    assert metrics["speed"]["sentences"] == 64 and metrics["speed"]["sentences_per_second"] > 0
    assert metrics["fast_speed"]["sentences_per_second"] > 0  # st-static pipeline: the fast path is measured too
    assert 0 < metrics["latency"]["p50_ms"] <= metrics["latency"]["p99_ms"]
    assert metrics["memory"]["peak_rss_mib"] > 0


MACHINE_PATH = re.compile(r"(?<![\w.~])/(?:work|root|home|tmp|mnt|Users)/")


def test_committed_results_and_docs_name_no_paths_of_a_machine():
    repo = Path(__file__).resolve().parents[1]
    documents = [
        path
        for folder in ("benchmarks/results", "hub_cards")
        for path in (repo / folder).rglob("*")
        if path.suffix in {".md", ".json", ".txt"}
    ]
    documents += [repo / "README.md", repo / "DEVELOPING.md"]
    offenders = [
        f"{path.relative_to(repo)}: {match.group(0)}"
        for path in documents
        for match in [MACHINE_PATH.search(path.read_text(encoding="utf-8"))]
        if match
    ]
    assert not offenders, offenders


def test_compare_commands_name_models_without_machine_paths():
    from benchmarks import compare

    assert compare.portable_argument("ours=/srv/models/swe-minilm-256") == "ours=MODELS/swe-minilm-256"
    assert compare.portable_argument(str(compare.REPO / "models" / "m")) == "models/m"
    assert (
        compare.portable_argument("sentence-transformers/all-MiniLM-L6-v2") == "sentence-transformers/all-MiniLM-L6-v2"
    )


def test_compare_gives_a_rows_prompt_to_its_worker_which_encodes_with_it(tmp_path):
    import argparse

    from sentence_transformers import SentenceTransformer

    from benchmarks import bench_worker, compare

    from .teachers import make_tiny_teacher

    teacher = make_tiny_teacher(tmp_path / "teacher")
    args = argparse.Namespace(
        models=[f"e5 teacher={teacher}", str(teacher)],
        prompt=["e5 teacher=query: "],
        peers="none",
        teacher=str(teacher),
    )
    prompted, plain = compare.build_rows(args)
    assert (prompted.label, prompted.prompt) == ("e5 teacher", "query: ") and plain.prompt is None
    with pytest.raises(SystemExit, match="names no model row: e5"):
        compare.build_rows(argparse.Namespace(**{**vars(args), "prompt": ["e5=query: "]}))
    encode, _, _ = bench_worker.load("sentence-transformers", str(teacher), 8, prompted.prompt)
    model = SentenceTransformer(str(teacher), device="cpu")
    texts = ["the cat sat", "a dog ran"]
    np.testing.assert_allclose(encode(texts), model.encode(texts, prompt="query: "), atol=1e-6)
    assert not np.allclose(encode(texts), model.encode(texts), atol=1e-4)


def test_every_maintained_benchmark_runs_as_a_module_and_shows_help():
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", SHOW_HELP, *MAINTAINED], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("usage:") == len(MAINTAINED) >= 15


def test_benchmarks_do_not_edit_sys_path():
    offenders = [
        str(path.relative_to(REPO)) for path in (REPO / "benchmarks").rglob("*.py") if "sys.path" in path.read_text()
    ]
    assert not offenders, offenders


def test_refinement_speed_runs_its_distillation(tmp_path):
    # --help alone missed a renamed setting (max_steps -> steps) that broke this benchmark at its first call.
    words = [f"word{index}" for index in range(300)]
    lines = [" ".join(words[index : index + 6]) for index in range(0, 294, 3)]
    (tmp_path / "corpus.txt").write_text("\n".join(lines * 12) + "\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    command = ["--corpus", str(tmp_path / "corpus.txt"), "--vocab-size", "300", "--dim", "16", "--teacher-dim", "8"]
    command += ["--sentences", "1000", "--steps", "6", "--eval-steps", "3"]
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.refinement_speed", *command],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(r"^steps: 6, time: [0-9.]+ s, steps/s: [0-9.]+", result.stdout, re.MULTILINE), result.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the check would run for minutes")
def test_gpu_check_says_in_one_line_that_there_is_no_cuda_and_exits_2(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_check", "--out", str(tmp_path / "check")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stdout.strip().count("\n") == 0 and "No CUDA device" in result.stdout
    assert not (tmp_path / "check").exists()  # no report that could pass for a check


def test_the_language_table_reads_evaluation_files_and_card_data_blocks(tmp_path):
    from benchmarks.language_table import language_rows, read_results, read_teacher_results, render

    def result(score: float) -> dict:
        return {"metric": "accuracy", "score": score}

    model = {
        "results": {"tatoeba-fra-eng": result(87.0), "tuxpaint-fra-eng": result(48.0), "stsb-en-test": result(71.4)}
    }
    (tmp_path / "model.json").write_text(json.dumps(model))
    card = {"evaluation": {"results": {"tatoeba-fra-eng": result(90.0)}}}
    (tmp_path / "card.md").write_text("# A card\n\n<!-- st-static card data\n" + json.dumps(card) + "\n-->\n")
    teacher = {"results": {}, "teacher": {"model": "t", "results": {"tatoeba-fra-eng": result(96.8)}}}
    (tmp_path / "teacher.json").write_text(json.dumps(teacher))
    models = {"new": read_results(tmp_path / "model.json"), "old": read_results(tmp_path / "card.md")}
    rows = language_rows(["fr"], models, read_teacher_results(tmp_path / "teacher.json"))
    assert rows[0]["Tatoeba"] == {"new": 87.0, "old": 90.0, "teacher": 96.8}
    assert rows[0]["Tux Paint"] == {"new": 48.0, "old": None, "teacher": None}
    line = render(rows, ["new", "old"])[-1]
    assert line.startswith("| fr | 87.00 | 90.00 | 96.80 | 48.00 | - | - |")
    assert line.endswith("| 89.9% | - |")  # 87.0 of 96.8; no teacher score: no share
