"""The benchmarks' one text -> vector cache (``benchmarks/text_vectors.py``): each text encoded once, a teacher's
chunks kept on disk so a pass resumes where it stopped."""

from __future__ import annotations

import numpy as np
import torch

from benchmarks import text_vectors
from benchmarks.text_vectors import TextVectors, encode_in_chunks


class CountingModel:
    """Encodes a text as (length, first letter's code point, 1), recording every text it was asked for."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts, prompt=None, batch_size=32, normalize_embeddings=False, convert_to_tensor=False):
        self.seen += texts
        rows = torch.tensor([[len(text), ord(text[0]), 1.0] for text in texts], dtype=torch.float32)
        return torch.nn.functional.normalize(rows, dim=1) if normalize_embeddings else rows


def expected(texts: list[str]) -> np.ndarray:
    return np.array([[len(text), ord(text[0]), 1.0] for text in texts], dtype=np.float32)


def test_chunks_keep_the_texts_order_and_a_rerun_encodes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(text_vectors, "CHUNK", 3)
    texts = ["a long sentence", "b", "cc", "a medium one", "dd d", "e"]
    model = CountingModel()
    vectors, seconds = encode_in_chunks(model, texts, tmp_path, "model", normalize=False)
    assert np.array_equal(vectors, expected(texts)) and seconds > 0
    assert model.seen[:3] == ["b", "e", "cc"]  # shortest first
    again = CountingModel()
    cached, seconds = encode_in_chunks(again, texts, tmp_path, "model", normalize=False)
    assert np.array_equal(cached, vectors) and seconds == 0 and again.seen == []


def test_an_interrupted_pass_encodes_only_its_missing_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(text_vectors, "CHUNK", 2)
    texts = ["aaaa", "b", "cc", "ddd", "eeeee"]
    encode_in_chunks(CountingModel(), texts, tmp_path, "model")
    (folder,) = tmp_path.iterdir()
    (folder / "chunk-00001.npy").unlink()  # the pass stopped before its second chunk was saved
    model = CountingModel()
    vectors, _ = encode_in_chunks(model, texts, tmp_path, "model")
    assert model.seen == ["ddd", "aaaa"] and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert not list(folder.glob("*.partial.npy"))


def test_another_prompt_or_label_is_another_cache_and_a_cached_folder_is_never_loaded(tmp_path):
    texts = ["one", "two"]
    encode_in_chunks(CountingModel(), texts, tmp_path, "teacher")
    model = CountingModel()
    encode_in_chunks(model, texts, tmp_path, "teacher", prompt="query: ")
    assert model.seen == ["one", "two"] and len(list(tmp_path.iterdir())) == 2
    vectors, seconds = encode_in_chunks(str(tmp_path / "no-such-folder"), texts, tmp_path, "teacher")
    assert seconds == 0 and vectors.shape == (2, 3)  # every chunk cached: the folder is not loaded
    encode_in_chunks(CountingModel(), texts, tmp_path, "")
    assert len([folder for folder in tmp_path.iterdir() if folder.name.startswith("texts-")]) == 1  # no label


def test_text_vectors_encode_each_text_once_in_memory_or_through_the_cache(tmp_path):
    model = CountingModel()
    vectors = TextVectors(model, normalize=False)
    assert np.array_equal(vectors(["x", "yy", "x"]), expected(["x", "yy", "x"]))
    assert np.array_equal(vectors(["yy", "zzz"]), expected(["yy", "zzz"]))
    assert model.seen == ["x", "yy", "zzz"]
    cached = TextVectors(CountingModel(), work=tmp_path, label="t")
    first = cached(["p", "qq"])
    fresh = CountingModel()
    assert np.array_equal(TextVectors(fresh, work=tmp_path, label="t")(["p", "qq"]), first) and fresh.seen == []
