"""``st-static embed --engine ray`` (issue 50): Ray Data ``map_batches`` on a local Ray with two workers gives the
vectors of the one-process run; without Ray the engine names the extra to install."""

from __future__ import annotations

import builtins
from pathlib import Path

import numpy as np
import pytest

import st_static
from st_static.collections.folder import EmbeddingsFolder
from st_static.errors import MissingExtraError

WORDS = ["the cat", "sat on the mat", "hello world", "token", "café 12", "don't", "", "the 1990s"]


def corpus_file(path: Path, count: int) -> Path:
    rng = np.random.default_rng(1)
    path.write_text("".join(" ".join(rng.choice(WORDS, size=3)) + "\n" for _ in range(count)), encoding="utf-8")
    return path


def test_a_local_ray_with_two_workers_gives_the_one_process_vectors(word_model, tmp_path):
    pytest.importorskip("ray.data", reason="the ray extra is not installed")
    st_static.save_model(word_model, tmp_path / "model")
    corpus = corpus_file(tmp_path / "corpus.txt", 95)
    common = {"shard_size": 20, "precision": "int8", "show_progress_bar": False}
    one = st_static.embed_files(tmp_path / "model", corpus, tmp_path / "one", **common)
    ray = st_static.embed_files(tmp_path / "model", corpus, tmp_path / "ray", engine="ray", workers=2, **common)
    assert one.shards == ray.shards == 5 and ray.rows == 95
    first, second = EmbeddingsFolder(tmp_path / "one"), EmbeddingsFolder(tmp_path / "ray")
    assert first.manifest.ranges == second.manifest.ranges
    for local, on_ray in zip(first.shards(), second.shards(), strict=True):
        assert local.ids == on_ray.ids
        np.testing.assert_array_equal(local.vectors, on_ray.vectors)


def test_without_ray_the_engine_names_the_extra(word_model, tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    corpus = corpus_file(tmp_path / "corpus.txt", 5)
    with pytest.raises(MissingExtraError, match=r'pip install "st-static\[ray\]"'):
        st_static.embed_files(word_model, corpus, tmp_path / "out", engine="ray", show_progress_bar=False)


def test_an_unreachable_cluster_fails_at_once_before_the_model_loads(word_model, tmp_path, monkeypatch):
    """Issue 66: Ray retried ``--address 127.0.0.1:1`` for 14 minutes, then raised a bare ConnectionError."""
    import time

    import st_static.collections.job as job
    from st_static.collections.inputs import OptionError

    pytest.importorskip("ray.data", reason="the ray extra is not installed")

    def no_load(_model):
        raise AssertionError("the model was loaded before Ray was checked")

    monkeypatch.setattr(job, "load_collection_model", no_load)
    corpus = corpus_file(tmp_path / "corpus.txt", 5)
    started = time.perf_counter()
    with pytest.raises(OptionError, match=r"Cannot reach the Ray cluster at 127\.0\.0\.1:1"):
        st_static.embed_files(
            word_model, corpus, tmp_path / "out", engine="ray", address="127.0.0.1:1", show_progress_bar=False
        )
    assert time.perf_counter() - started < 30
    assert not (tmp_path / "out").exists()


def test_ray_refuses_standard_input(word_model, tmp_path):
    import io

    from st_static.collections.inputs import OptionError

    with pytest.raises(OptionError, match="standard input or a pipe"):
        st_static.embed_files(
            word_model, "-", tmp_path / "out", engine="ray", stdin=io.BytesIO(b"a\n"), show_progress_bar=False
        )
