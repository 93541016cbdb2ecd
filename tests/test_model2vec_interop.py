"""Saved folders in model2vec's numpy-only StaticModel: same vectors by default, or a card that says why not."""

from __future__ import annotations

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize

from st_static.compression import ensemble, quantize
from st_static.model.model2vec_config import MODEL2VEC_CONFIG_FILE_NAME
from st_static.model.save_load import save_model

from .conftest import ADVERSARIAL_TEXTS

model2vec = pytest.importorskip("model2vec")  # a dev dependency; importing it needs no network


def test_model2vec_loads_a_saved_model_with_the_same_vectors(word_model, tmp_path):
    save_model(word_model, tmp_path / "model")
    texts = [*ADVERSARIAL_TEXTS, "the cat sat on the mat"]
    vectors = model2vec.StaticModel.from_pretrained(tmp_path / "model").encode(texts)
    np.testing.assert_allclose(vectors, word_model.encode(texts), atol=1e-6)


def test_model2vec_loads_an_int8_row_table_with_its_dequantised_vectors(word_model, tmp_path):
    save_model(quantize(word_model, "int8-row"), tmp_path / "int8")
    texts = ["the cat sat on the mat", "tokeniser", "hello world 12"]
    expected = SentenceTransformer(str(tmp_path / "int8"), device="cpu").encode(texts)
    vectors = model2vec.StaticModel.from_pretrained(tmp_path / "int8").encode(texts)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)


def test_an_int8_column_table_gets_no_model2vec_config_and_its_card_says_why(word_model, tmp_path):
    save_model(quantize(word_model, "int8-column"), tmp_path / "int8")
    assert not (tmp_path / "int8" / MODEL2VEC_CONFIG_FILE_NAME).exists()
    assert "does not load in model2vec: an int8-column table" in (tmp_path / "int8" / "README.md").read_text()


def test_an_ensemble_gets_no_model2vec_config(word_model, tmp_path):
    combined = ensemble([word_model, word_model])
    save_model(combined, tmp_path / "ensemble")
    assert not (tmp_path / "ensemble" / MODEL2VEC_CONFIG_FILE_NAME).exists()


def test_bare_sentence_transformers_reads_the_model2vec_key(word_model, tmp_path):
    save_model(word_model, tmp_path / "model")
    bare = SentenceTransformer(str(tmp_path / "model"), device="cpu")
    assert type(bare[0]).__name__ == "StaticEmbedding" and isinstance(bare[1], Normalize)
    np.testing.assert_allclose(bare.encode(["the cat"]), word_model.encode(["the cat"]), atol=1e-6)
