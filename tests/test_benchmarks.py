"""The benchmark worker measures a row end to end and returns the model's own embeddings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

WORKER = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_worker.py"


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
