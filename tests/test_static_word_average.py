"""StaticWordAverage: look-up rules, saving, bare loading and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize

import st_static
from st_static import ModelFolderError, StaticWordAverage
from st_static.hub.bare_load import bare_encode
from st_static.model.tokenization import build_word_tokenizer, split_words

from .conftest import ADVERSARIAL_TEXTS, WORDS
from .hf_cache import place_in_hf_cache


def word_rows(module: StaticWordAverage, text: str) -> list[str]:
    rows, _ = module.token_ids([text])
    vocabulary = module.vocabulary
    return [vocabulary[row] for row in rows if row < module.num_words]


def test_punctuation_is_dropped_and_case_falls_back(word_module):
    assert word_rows(word_module, "The CAT, sat!") == ["the", "cat", "sat"]


def test_unknown_word_falls_back_to_longest_known_prefix(word_module):
    assert word_rows(word_module, "tokeniser") == ["tokenise"]
    assert word_rows(word_module, "tokens") == ["token"]
    assert word_rows(word_module, "qqq") == []


def test_sentence_is_the_mean_of_its_word_vectors(word_module):
    vectors = word_module.word_vectors.detach().numpy()
    expected = (vectors[WORDS.index("cat")] + vectors[WORDS.index("sat")]) / 2
    mean = st_static.encode(word_module, "cat sat", normalize=False)
    np.testing.assert_allclose(mean, expected, rtol=1e-6)
    unit = st_static.encode(word_module, "cat sat")
    np.testing.assert_allclose(unit, expected / np.linalg.norm(expected), rtol=1e-6)


def test_case_sensitive_vocabulary_prefers_exact_form():
    words = ["Apple", "apple", "pie"]
    module = StaticWordAverage.from_word_vectors(words, np.eye(3, dtype=np.float32))
    assert not module.lowercase
    assert word_rows(module, "Apple apple APPLE Pie") == ["Apple", "apple", "apple", "pie"]


def test_spaceless_scripts_are_segmented_into_vocabulary_tokens():
    words = ["東京", "に", "行き", "ます", "hello"]
    module = StaticWordAverage.from_word_vectors(words, np.eye(5, dtype=np.float32))
    assert word_rows(module, "東京に行きます") == ["東京", "に", "行き", "ます"]
    assert word_rows(module, "hello東京X") == ["hello", "東京"]


def test_no_known_word_gives_zero_vector_never_nan(word_model):
    embeddings = word_model.encode(["", "   ", "!!!", "qqqq zzzz", "😀"])
    assert np.isfinite(embeddings).all()
    assert np.abs(embeddings).max() == 0.0


@pytest.mark.parametrize("bad", [None, 3, b"bytes", ["ok", None], ["ok", 1.5], {"a": "b"}])
def test_wrong_input_types_raise_type_error(word_model, bad):
    with pytest.raises(TypeError, match="str"):
        word_model.encode(bad)
    with pytest.raises(TypeError, match="str"):
        st_static.encode(word_model, bad)


def test_every_adversarial_string_gets_a_finite_vector(word_model):
    embeddings = word_model.encode(ADVERSARIAL_TEXTS)
    assert embeddings.shape == (len(ADVERSARIAL_TEXTS), 16)
    assert np.isfinite(embeddings).all()
    norms = np.linalg.norm(embeddings, axis=1)
    assert np.all((np.abs(norms - 1) < 1e-5) | (norms == 0))


def test_one_megabyte_string(word_model):
    text = "the cat sat on the mat " * 43_479  # 1,000,017 characters
    assert len(text) > 1_000_000
    embedding = word_model.encode(text)
    expected = word_model.encode("the cat sat on the mat")
    assert np.isfinite(embedding).all()
    np.testing.assert_allclose(embedding, expected, atol=1e-3)  # float32 sums over 260k words


def test_fast_path_matches_sentence_transformers_encode(word_model):
    texts = ADVERSARIAL_TEXTS + ["the cat", "Hello world"] * 50
    np.testing.assert_allclose(st_static.encode(word_model, texts), word_model.encode(texts), atol=1e-6)


def test_bare_load_gives_identical_embeddings(word_model, tmp_path):
    word_model.save_pretrained(str(tmp_path / "model"))
    modules = json.loads((tmp_path / "model" / "modules.json").read_text())
    assert all(module["type"].startswith("sentence_transformers.") for module in modules)
    reloaded = SentenceTransformer(str(tmp_path / "model"), device="cpu")
    texts = [*ADVERSARIAL_TEXTS, "tokeniser tokens", "THE CAT"]
    np.testing.assert_allclose(reloaded.encode(texts), word_model.encode(texts), atol=1e-6)
    again = StaticWordAverage.load(str(tmp_path / "model"))
    assert again.vocabulary == WORDS
    np.testing.assert_array_equal(again.word_vectors.detach().numpy(), word_model[0].word_vectors.detach().numpy())


def test_loads_by_repo_id_from_offline_cache_without_st_static(word_model, tmp_path):
    word_model.save_pretrained(str(tmp_path / "model"))
    cache = tmp_path / "hub"
    place_in_hf_cache(tmp_path / "model", "org/swe-test", cache)
    texts = ["the cat sat", "Tokeniser!", "", "hello world"]
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "HF_HOME": str(tmp_path / "home")}
    result = bare_encode("org/swe-test", texts, env=env)
    assert result.first_module == "StaticEmbedding"
    np.testing.assert_allclose(result.embeddings, word_model.encode(texts), atol=1e-6)


def test_trained_rows_reach_case_variants_after_eval():
    module = StaticWordAverage.from_word_vectors(["Apple", "apple"], np.eye(2, dtype=np.float32))
    model = SentenceTransformer(modules=[module, Normalize()], device="cpu")
    model.train()
    features = module.preprocess(["APPLE"])
    assert features["input_ids"].tolist() == [1]  # the variant reads the word's row while training
    with torch.no_grad():
        module.embedding.weight[1] = torch.tensor([0.0, 5.0])
    model.eval()
    raw_ids = module.tokenizer.encode("APPLE", add_special_tokens=False).ids
    assert module.embedding.weight[raw_ids[0]].tolist() == [0.0, 5.0]


def test_interrupted_save_leaves_a_folder_that_does_not_load(word_model, tmp_path, monkeypatch):
    target = tmp_path / "model"
    word_model.save_pretrained(str(target))
    monkeypatch.setattr(Normalize, "save", lambda *args, **kwargs: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        word_model.save_pretrained(str(target))
    assert not (target / "modules.json").exists()
    with pytest.raises(Exception):  # noqa: B017 - any refusal will do, as long as nothing loads
        SentenceTransformer(str(target), device="cpu")


def test_corrupt_weights_are_reported(word_model, tmp_path):
    word_model.save_pretrained(str(tmp_path))
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(ModelFolderError, match="corrupt or truncated"):
        StaticWordAverage.load(str(tmp_path))


def test_corrupt_tokenizer_is_reported(word_model, tmp_path):
    word_model.save_pretrained(str(tmp_path))
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(ModelFolderError, match=r"tokenizer\.json is corrupt"):
        StaticWordAverage.load(str(tmp_path))


def test_mismatched_table_and_vocabulary_are_reported(word_model, tmp_path):
    word_model.save_pretrained(str(tmp_path / "a"))
    other = StaticWordAverage.from_word_vectors(["x", "y"], np.ones((2, 16), dtype=np.float32))
    other.save(str(tmp_path / "b"))
    (tmp_path / "a" / "tokenizer.json").write_bytes((tmp_path / "b" / "tokenizer.json").read_bytes())
    with pytest.raises(ModelFolderError, match="different models"):
        StaticWordAverage.load(str(tmp_path / "a"))


def test_missing_folder_is_reported(tmp_path):
    with pytest.raises(ModelFolderError, match="missing"):
        StaticWordAverage.load(str(tmp_path / "nothing-here"))


def test_foreign_tokenizer_is_refused(tmp_path):
    from tokenizers import Tokenizer, models

    Tokenizer(models.WordLevel({"a": 0, "<unk>": 1}, unk_token="<unk>")).save(str(tmp_path / "tokenizer.json"))
    with pytest.raises(ModelFolderError, match="Not a st-static word tokenizer"):
        StaticWordAverage.load(str(tmp_path))


@pytest.mark.parametrize(
    ("words", "message"),
    [([], "empty"), (["a", "a"], "twice"), (["two words"], "single word"), (["a"], None)],
)
def test_vocabulary_is_checked(words, message):
    if message is None:
        assert build_word_tokenizer(words).get_vocab()["a"] == 0
    else:
        with pytest.raises(ValueError, match=message):
            build_word_tokenizer(words)


def test_table_shape_is_checked():
    with pytest.raises(ValueError, match="must match"):
        StaticWordAverage.from_word_vectors(["a", "b"], np.ones((3, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="NaN"):
        StaticWordAverage.from_word_vectors(["a"], np.full((1, 4), np.nan, dtype=np.float32))


def test_split_words_drops_punctuation_symbols_and_controls():
    assert split_words("Hello, world! 😀 a\x00b don't") == ["Hello", "world", "a", "b", "don", "t"]
