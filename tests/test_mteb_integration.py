"""The real ``mteb`` evaluation code runs offline on local STS files and agrees with our own Spearman."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize

from st_static import StaticWordAverage
from st_static.data_files import read_scored_pairs
from st_static.evaluation import evaluate_sts, model_encoder
from st_static.model.tokenization import split_words

from .conftest import SHARED_DATA

mteb = pytest.importorskip("mteb")

from mteb.abstasks.sts import AbsTaskSTS  # noqa: E402

from st_static.evaluation.mteb_tasks import local_sts_task, run_mteb, split_task_names  # noqa: E402

STSB_TEST = Path(os.environ.get("ST_STATIC_DATA", SHARED_DATA)) / "sts" / "stsb-en-test.tsv"

ROWS = [
    ("the cat sat", "the cat sat on the mat", 4.5),
    ("hello world", "the mat", 0.5),
    ("the cat", "cat", 3.0),
    ("word world", "hello word", 2.0),
    ("tokeniser", "token", 4.0),
    ("café 12", "the 1990s", 1.0),
    ("on the mat", "the mat", 3.5),
]


def test_split_task_names_keeps_benchmark_names_whole():
    assert split_task_names("STS12, MTEB(eng, v2),SICK-R") == ["STS12", "MTEB(eng, v2)", "SICK-R"]


def test_mteb_score_equals_our_spearman_on_a_local_task(word_model, tmp_path):
    path = tmp_path / "tiny-sts.tsv"
    path.write_text("sentence1\tsentence2\tscore\n" + "".join(f"{a}\t{b}\t{s}\n" for a, b, s in ROWS))
    task = local_sts_task(path, name="TinySTS")
    assert isinstance(task, AbsTaskSTS)
    results = run_mteb(word_model, [task])
    ours = evaluate_sts(model_encoder(word_model), path)["score"]
    assert results["mteb:TinySTS"]["metric"] == "cosine_spearman"
    assert results["mteb:TinySTS"]["score"] == pytest.approx(ours, abs=1e-6)


@pytest.mark.skipif(not STSB_TEST.exists(), reason="shared data not available")
def test_mteb_score_equals_our_spearman_on_stsb_test():
    # Random vectors over every word of the file, so that no sentence is empty: for texts without a known word
    # mteb and st-static use different conventions (mteb: 1 - paired cosine distance, i.e. 1 for two zero
    # vectors and 0.5 for one; st-static: similarity 0).
    pairs = read_scored_pairs(STSB_TEST)
    words = sorted({word for text in pairs.sentences1 + pairs.sentences2 for word in split_words(text.lower())})
    vectors = np.random.default_rng(0).standard_normal((len(words), 32)).astype(np.float32)
    model = SentenceTransformer(modules=[StaticWordAverage.from_word_vectors(words, vectors), Normalize()])
    results = run_mteb(model, [local_sts_task(STSB_TEST, name="LocalSTSBenchmark")], batch_size=512)
    ours = evaluate_sts(model_encoder(model), STSB_TEST)["score"]
    assert results["mteb:LocalSTSBenchmark"]["score"] == pytest.approx(ours, abs=1e-6)
