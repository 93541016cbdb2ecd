"""Saved folders in model2vec's numpy-only StaticModel: same vectors by default, or a card that says why not."""

from __future__ import annotations

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize

from st_static import StaticWordAverage
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


def fine_tune(model: SentenceTransformer, output_dir) -> None:
    """A few steps of the ST trainer with MultipleNegativesRankingLoss, as a user fine-tunes a model."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    pairs = {"anchor": ["the cat sat", "hello world", "the mat", "token word"], "positive": ["cat", "world", "mat"]}
    pairs["positive"].append("tokenise")
    arguments = SentenceTransformerTrainingArguments(
        output_dir=str(output_dir), max_steps=4, per_device_train_batch_size=4, learning_rate=0.1, report_to="none"
    )
    arguments.dataloader_pin_memory = False
    arguments.save_strategy = "no"
    loss = MultipleNegativesRankingLoss(model)
    SentenceTransformerTrainer(model=model, args=arguments, train_dataset=Dataset.from_dict(pairs), loss=loss).train()


@pytest.mark.parametrize("loaded_with", ["st_static", "bare"])
def test_a_fine_tuned_model_saved_in_place_stays_a_whole_st_static_folder(word_model, tmp_path, loaded_with):
    from st_static.model.save_load import load_model

    word_model[0].metadata = {"teacher": "sentence-transformers/all-MiniLM-L6-v2", "stages": ["extraction"]}
    folder = save_model(word_model, tmp_path / "model")
    before = load_model(folder).encode(["the cat sat on the mat"])
    model = load_model(folder) if loaded_with == "st_static" else SentenceTransformer(str(folder), device="cpu")
    fine_tune(model, tmp_path / "trainer")
    model.save_pretrained(str(folder))  # what the trainer's users do: save in place
    texts = ["the cat sat on the mat", "hello world", "token"]
    expected = model.encode(texts)
    assert not np.allclose(model.encode(texts[:1]), before)  # it did train
    np.testing.assert_allclose(load_model(folder).encode(texts), expected, atol=1e-6)  # loads, same vectors
    save_model(load_model(folder), folder)  # refreshes the hashes and model2vec's config
    for copy in (folder, save_model(SentenceTransformer(str(folder), device="cpu"), tmp_path / "copy")):
        np.testing.assert_allclose(load_model(copy).encode(texts), expected, atol=1e-6)
        np.testing.assert_allclose(SentenceTransformer(str(copy), device="cpu").encode(texts), expected, atol=1e-6)
        np.testing.assert_allclose(model2vec.StaticModel.from_pretrained(copy).encode(texts), expected, atol=1e-6)
    assert load_model(folder)[0].metadata.teacher == "sentence-transformers/all-MiniLM-L6-v2"


def test_saving_a_bare_loaded_model_in_place_keeps_its_metadata(word_model, tmp_path):
    from st_static.model.save_load import load_model

    word_model[0].metadata = {"teacher": "sentence-transformers/all-MiniLM-L6-v2", "stages": ["extraction"]}
    folder = save_model(word_model, tmp_path / "model")
    bare = SentenceTransformer(str(folder), device="cpu")
    save_model(bare, folder)
    assert load_model(folder)[0].metadata.stages == ["extraction"]
    assert not isinstance(bare[0], StaticWordAverage)  # the model itself is left as it was
    texts = ["the cat sat on the mat", "hello world"]
    np.testing.assert_allclose(model2vec.StaticModel.from_pretrained(folder).encode(texts), bare.encode(texts), 1e-6)
