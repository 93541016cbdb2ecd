"""Per-call overhead of encoding: nothing proportional to the vocabulary may run on every encode call, and a plain
``SentenceTransformer`` load builds its fast-path look-ups once."""

from __future__ import annotations

import gc
import pickle

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Dense
from tokenizers import Tokenizer

import st_static
from st_static import StaticWordAverage
from st_static.model import empty_text, inference
from st_static.model.empty_text import EmptyTextDense
from st_static.model.inference import checked_static_module, plain_lookup, static_module


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


ONE_QUERY_TEXTS = ["the cat sat on the mat", "", "?", "Привет", "THE CAT, the Cat!", "cats and dogs " * 40]


def _both_loads(fallback_model, tmp_path):
    folder = st_static.save_model(fallback_model, tmp_path / "model")
    plain = SentenceTransformer(str(folder), device="cpu")
    loaded = st_static.load_model(folder)
    assert type(plain[1]).__name__ == "Dense" and not isinstance(plain[1], EmptyTextDense)  # a bare load's own
    return plain, loaded


def test_a_plain_load_and_load_model_give_identical_vectors_on_the_fast_path(fallback_model, tmp_path):
    plain, loaded = _both_loads(fallback_model, tmp_path)
    for text in ONE_QUERY_TEXTS:  # the one-query route
        for _ in range(2):  # the first call (look-ups built) and the second (kept)
            assert np.array_equal(st_static.encode(plain, text), st_static.encode(loaded, text)), text
    assert np.array_equal(st_static.encode(plain, ONE_QUERY_TEXTS), st_static.encode(loaded, ONE_QUERY_TEXTS))
    # model.encode adds the empty text's bias: ~1e-5 of a fallback row ("?", "Привет") on a tiny table
    np.testing.assert_allclose(st_static.encode(plain, ONE_QUERY_TEXTS), plain.encode(ONE_QUERY_TEXTS), atol=1e-5)


def test_the_second_call_on_a_plain_load_reuses_its_look_up(fallback_model, tmp_path, monkeypatch):
    plain, _ = _both_loads(fallback_model, tmp_path)
    assert plain_lookup(plain[0]) is None
    first = st_static.encode(plain, "the cat")
    lookup = plain_lookup(plain[0])
    rows = lookup.module.word_rows  # the ASCII look-up and the tokenizer's rows, made on the first call
    table = lookup.module.numpy_table()

    def rebuilt(*args, **kwargs):
        raise AssertionError("rebuilt on a later call")

    monkeypatch.setattr(inference, "check_pipeline", rebuilt)  # nor is the pipeline checked again
    monkeypatch.setattr(StaticWordAverage, "from_static_embedding", rebuilt)
    monkeypatch.setattr(empty_text.torch, "eye", rebuilt)  # the Dense's identity check
    for _ in range(3):
        assert np.array_equal(st_static.encode(plain, "the cat"), first)
    assert plain_lookup(plain[0]) is lookup
    assert checked_static_module(plain) is static_module(plain) is lookup.module
    assert lookup.module.word_rows is rows and lookup.module.numpy_table() is table


def test_a_plain_loads_look_up_follows_its_table_tokenizer_and_modules(fallback_model, tmp_path):
    plain, _ = _both_loads(fallback_model, tmp_path)
    before = st_static.encode(plain, "the cat")
    lookup = plain_lookup(plain[0])
    with torch.no_grad():  # a fine-tune's step writes the table in place
        plain[0].embedding.weight.mul_(-1.0)
    after = st_static.encode(plain, "the cat")
    assert plain_lookup(plain[0]) is not lookup
    np.testing.assert_allclose(after, -before, atol=1e-6)
    np.testing.assert_allclose(after, plain.encode("the cat"), atol=1e-6)

    lookup = plain_lookup(plain[0])
    plain[0].tokenizer = Tokenizer.from_str(plain[0].tokenizer.to_str())  # a tokenizer replaced
    st_static.encode(plain, "the cat")
    assert plain_lookup(plain[0]) is not lookup

    with torch.no_grad():  # the empty text's Dense trained: no longer a multiple of the identity, so the fast path
        plain[1].linear.weight[0, 0] *= 2.0  # refuses
    with pytest.raises(TypeError, match="Dense"):
        st_static.encode(plain, "the cat")
    with torch.no_grad():
        plain[1].linear.weight[0, 0] *= 0.5
    st_static.encode(plain, "the cat")
    plain.append(Dense(plain.get_embedding_dimension(), 4))  # a module added
    with pytest.raises(TypeError, match="Dense"):
        st_static.encode(plain, "the cat")


def test_the_caches_write_nothing_into_the_model_and_leave_with_it(fallback_model, tmp_path):
    plain, loaded = _both_loads(fallback_model, tmp_path)
    attributes = {id(module): set(vars(module)) for module in plain.modules()}
    st_static.encode(plain, "the cat")
    assert {id(module): set(vars(module)) for module in plain.modules()} == attributes
    copy = pickle.loads(pickle.dumps(plain))  # no weak reference, no private module in a pickle
    assert np.array_equal(st_static.encode(copy, "the cat"), st_static.encode(loaded, "the cat"))
    key = id(plain)
    assert key in inference._CHECKED_PIPELINES
    del plain
    gc.collect()
    assert key not in inference._CHECKED_PIPELINES
