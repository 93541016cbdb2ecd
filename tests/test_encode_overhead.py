"""Per-call overhead of encoding: nothing proportional to the vocabulary may run on every encode call."""

from __future__ import annotations

from sentence_transformers import SentenceTransformer

import st_static
from st_static import StaticWordAverage


def test_encode_does_not_resync_the_table_on_every_call(word_model, monkeypatch):
    word_model.encode(["the cat"])  # the first eval() after construction syncs once
    calls = []
    monkeypatch.setattr(StaticWordAverage, "sync_token_rows", lambda self: calls.append(1))
    for _ in range(3):
        word_model.encode(["the cat"])
    assert calls == []
    word_model.train()
    word_model.eval()  # leaving training does sync
    assert calls == [1]


def test_fast_path_cache_is_not_a_submodule_of_a_bare_loaded_model(word_model, tmp_path):
    word_model.save_pretrained(str(tmp_path))
    bare = SentenceTransformer(str(tmp_path), device="cpu")
    before = [name for name, _ in bare.named_modules()]
    st_static.encode(bare, ["the cat"])
    assert [name for name, _ in bare.named_modules()] == before
