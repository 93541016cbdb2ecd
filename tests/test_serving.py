"""Serving paths: the ASCII look-up, the one-query and batch routes, lone surrogates and long texts."""

from __future__ import annotations

import copy
import random
import string

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from tokenizers import normalizers

import st_static
from st_static import StaticWordAverage
from st_static.model.ascii_words import AsciiWordRows
from st_static.model.tokenization import split_long_text, split_words
from st_static.model.word_rows import WordRows

from .conftest import ADVERSARIAL_TEXTS, SHARED_DATA, WORDS, teacher_like_tokenizer

TRICKY_PIECES = [
    "the", "cat", "The", "CAT", "tokeniser", "tokenises", "zzqq", "Hello", "x" * 101, "12", "1990s", "don't",
    ",", "!", " ", "  ", "\t", "\n", "_", "-", "<\u0338", "e\u0301", "caf\u00e9", "\u00c9T\u00c9", "\u3002",
    "\u4e16\u754c", "\U0001f600", "\u200b", "\u0130", "\u03a3\u039f\u03a3", "\ufeff", "a" * 100,
]  # fmt: skip


def random_texts(alphabet: list[str], count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(count)]


def tokenizer_rows(module: StaticWordAverage, text: str) -> list[int]:
    """The rows the Rust tokenizer gives ``text``, without the dropped ones."""
    token_ids = module.tokenizer.encode(text, add_special_tokens=False).ids
    rows = module.token_rows.numpy()[token_ids]
    return rows[rows != module.num_words].tolist()


def kept(rows: np.ndarray, module: StaticWordAverage) -> list[int]:
    return rows[rows != module.num_words].tolist()


@pytest.fixture
def case_sensitive_module() -> StaticWordAverage:
    words = ["Apple", "apple", "the", "The", "cat", "token", "US", "us"]
    vectors = np.random.default_rng(1).standard_normal((len(words), 8)).astype(np.float32)
    return StaticWordAverage.from_word_vectors(words, vectors, teacher_tokenizer=teacher_like_tokenizer())


def test_ascii_look_up_gives_the_tokenizers_rows_on_random_ascii(word_module):
    alphabet = [*WORDS, "tokeniser", "zzz", "Cat", "THE", "x" * 101, *string.printable]
    lookup = AsciiWordRows.from_tokenizer(word_module.tokenizer, word_module.token_rows.numpy(), word_module.num_words)
    texts = [text for text in random_texts(alphabet, 400) + ADVERSARIAL_TEXTS if text.isascii()]
    rows, counts = lookup.rows(texts)
    assert [kept(part, word_module) for part in np.split(rows, np.cumsum(counts)[:-1])] == [
        tokenizer_rows(word_module, text) for text in texts
    ]


def test_ascii_look_up_keeps_case_rules_of_a_case_sensitive_vocabulary(case_sensitive_module):
    module = case_sensitive_module
    lookup = AsciiWordRows.from_tokenizer(module.tokenizer, module.token_rows.numpy(), module.num_words)
    texts = random_texts(["Apple", "APPLE", "apple", "THE", "Us", "US", "tokens", "Cats", " ", "."], 200, seed=2)
    assert [kept(np.array(lookup.text_rows(text), dtype=np.int64), module) for text in texts] == [
        tokenizer_rows(module, text) for text in texts
    ]


def test_ascii_look_up_declines_a_normaliser_it_does_not_reproduce(word_module):
    tokenizer = word_module.tokenizer
    tokenizer.normalizer = normalizers.Sequence([normalizers.Strip(), normalizers.Lowercase()])
    assert AsciiWordRows.from_tokenizer(tokenizer, word_module.token_rows.numpy(), word_module.num_words) is None


def test_rows_match_the_tokenizer_on_mixed_batches(word_module):
    texts = random_texts([*WORDS, *TRICKY_PIECES], 300, seed=3)
    rows, offsets = word_module.word_rows.rows(texts)
    parts = np.split(rows, offsets[1:])
    assert [kept(part, word_module) for part in parts] == [tokenizer_rows(word_module, text) for text in texts]


def test_fast_path_equals_model_encode_on_adversarial_texts(word_model):
    texts = [*ADVERSARIAL_TEXTS, *random_texts([*WORDS, *TRICKY_PIECES], 100, seed=4)]
    np.testing.assert_allclose(st_static.encode(word_model, texts), word_model.encode(texts), atol=1e-6)


def test_fast_path_prepends_the_models_prompts_as_model_encode_does(word_model, tmp_path):
    word_model.prompts = {"query": "hello: ", "document": "world "}
    word_model.default_prompt_name = "query"
    st_static.save_model(word_model, tmp_path / "prompted")
    model = st_static.load_model(tmp_path / "prompted")
    texts = ["the cat sat", "mat", "", "zzqq", "the cat sat"]
    assert model.default_prompt_name == "query"
    np.testing.assert_allclose(st_static.encode(model, texts), model.encode(texts), atol=1e-6)
    np.testing.assert_allclose(st_static.encode(model, "mat"), model.encode("mat"), atol=1e-6)  # the one-text route
    for keywords in ({"prompt_name": "document"}, {"prompt": "cat "}, {"prompt": ""}):
        np.testing.assert_allclose(
            st_static.encode(model, texts, **keywords), model.encode(texts, **keywords), atol=1e-6
        )
    with pytest.raises(ValueError, match="'passage' is not one of the model's prompts"):
        st_static.encode(model, texts, prompt_name="passage")


def test_one_query_route_equals_the_batch_route(word_model):
    texts = [*ADVERSARIAL_TEXTS, "the cat sat", "tokeniser tokens"]
    one_by_one = np.stack([st_static.encode(word_model, text) for text in texts])
    np.testing.assert_allclose(one_by_one, st_static.encode(word_model, texts), atol=1e-6)


@pytest.mark.parametrize("batch_size", [1, 2, 3, 4, 8192])
def test_every_batch_size_gives_one_vector_per_text(word_model, batch_size):
    texts = ["a", "the cat", "", "tokeniser mat"]
    vectors = st_static.encode(word_model, texts, batch_size=batch_size)
    np.testing.assert_allclose(vectors, word_model.encode(texts), atol=1e-6)


def test_the_models_truncate_dim_cuts_the_vectors_as_model_encode_does(word_model, tmp_path):
    texts = ["the cat sat", "mat", "", "zzqq"]
    word_model.truncate_dim = 8
    for batch in (texts, texts[:1]):
        expected = word_model.encode(batch)
        assert st_static.encode(word_model, batch).shape == expected.shape == (len(batch), 8)
        np.testing.assert_allclose(st_static.encode(word_model, batch), expected, atol=1e-6)
    assert st_static.encode(word_model, "the cat").shape == (8,)
    st_static.save_model(word_model, tmp_path / "m")
    loaded = SentenceTransformer(str(tmp_path / "m"), truncate_dim=8, device="cpu")
    np.testing.assert_allclose(st_static.encode(loaded, texts), loaded.encode(texts), atol=1e-6)


@pytest.mark.parametrize(
    ("texts", "batch_size", "error"),
    [
        (np.array("a cat"), 8192, "Expected a str or a sequence of str, got a 0-d numpy array"),
        (np.array([["a"], ["b"]]), 8192, "Expected a str or a sequence of str, got a 2-d numpy array"),
        (["a cat"], 1.5, "batch_size must be an int, got float"),
        (["a cat"], True, "batch_size must be an int, got bool"),
        (["a cat"], "2", "batch_size must be an int, got str"),
    ],
)
def test_wrong_texts_and_batch_sizes_get_the_usual_messages(word_model, texts, batch_size, error):
    with pytest.raises(TypeError, match=error):
        st_static.encode(word_model, texts, batch_size=batch_size)


def test_numpy_arrays_of_str_and_numpy_batch_sizes_are_read(word_model):
    texts = ["the cat", "mat", ""]
    expected = st_static.encode(word_model, texts)
    np.testing.assert_allclose(st_static.encode(word_model, np.array(texts), batch_size=np.int64(2)), expected)


def test_one_query_route_without_normalisation_is_the_mean(word_module):
    rows = [WORDS.index("the"), WORDS.index("cat")]
    expected = word_module.word_vectors.detach()[rows].mean(dim=0).numpy()
    np.testing.assert_allclose(st_static.encode(word_module, "the cat!", normalize=False), expected, atol=1e-6)


def test_forward_without_autograd_equals_the_embedding_bag(word_module):
    features = word_module.preprocess(["the cat", "", "tokeniser sat on the mat", "qqq"])
    expected = torch.nn.EmbeddingBag.forward(word_module.embedding, features["input_ids"], features["offsets"])
    with torch.inference_mode():
        actual = word_module.forward(dict(features))["sentence_embedding"]
    torch.testing.assert_close(actual, expected.detach(), atol=1e-6, rtol=0)


def test_numpy_table_follows_in_place_updates(word_module):
    table = word_module.numpy_table()
    with torch.no_grad():
        word_module.embedding.weight[0] += 1.0
    assert word_module.numpy_table() is table
    np.testing.assert_array_equal(table[0], word_module.embedding.weight[0].detach().numpy())


def test_copies_drop_the_inference_caches_and_still_encode_alike(word_model):
    module = word_model[0]
    expected = st_static.encode(word_model, ["the cat sat", "hello world"])
    copied = copy.deepcopy(word_model)
    assert "_numpy_table" not in copied[0].__dict__ and "_word_rows" not in copied[0].__dict__
    np.testing.assert_allclose(st_static.encode(copied, ["the cat sat", "hello world"]), expected, atol=1e-6)
    assert copied[0].numpy_table() is not module.numpy_table()


def test_a_lone_surrogate_does_not_fail_the_fast_path_batch(word_model):
    vectors = st_static.encode(word_model, ["the cat", "mat \ud800 sat"])
    np.testing.assert_allclose(vectors, st_static.encode(word_model, ["the cat", "mat \ufffd sat"]), atol=1e-6)


def test_a_lone_surrogate_does_not_fail_sentence_transformer_encode(word_model):
    vectors = word_model.encode(["the cat", "mat\ud800sat"])
    np.testing.assert_allclose(vectors, word_model.encode(["the cat", "mat\ufffdsat"]), atol=1e-6)


@pytest.mark.parametrize("text", TRICKY_PIECES)
def test_cutting_a_long_text_keeps_its_tokens(word_module, text):
    long_text = " ".join(random_texts([*TRICKY_PIECES, text * 3], 40, seed=len(text))) + text * 20
    pieces = split_long_text(long_text, max_chars=16)
    assert "".join(pieces) == long_text
    cut = [token for piece in pieces for token in word_module.tokenizer.encode(piece, add_special_tokens=False).ids]
    assert cut == word_module.tokenizer.encode(long_text, add_special_tokens=False).ids


def test_long_texts_give_the_uncut_vector(word_model):
    module = word_model[0]
    texts = ["the cat sat on the mat, tokeniser! " * 300, "café naïve 世界 " * 200, "hello"]
    expected = st_static.encode(word_model, texts)
    module._word_rows = WordRows(module.tokenizer, module.token_rows.numpy(), module.num_words, 64, 256)
    np.testing.assert_allclose(st_static.encode(word_model, texts), expected, atol=1e-6)
    np.testing.assert_allclose(word_model.encode(texts), expected, atol=1e-6)


def test_long_texts_are_tokenised_in_bounded_calls(word_module):
    reader = WordRows(word_module.tokenizer, word_module.token_rows.numpy(), word_module.num_words, 64, 256)
    calls: list[int] = []
    ascii_rows, tokenizer_rows_of = reader.ascii.rows, reader._tokenizer_rows
    reader.ascii.rows = lambda texts: calls.append(sum(map(len, texts))) or ascii_rows(texts)
    reader._tokenizer_rows = lambda texts: calls.append(sum(map(len, texts))) or tokenizer_rows_of(texts)
    reader.rows(["the cat sat " * 1000, "café " * 1000])
    assert len(calls) > 10 and max(calls) <= 256 + 64


@pytest.mark.skipif(not (SHARED_DATA / "corpus" / "en.txt").is_file(), reason="shared data not available")
def test_fast_path_equals_model_encode_on_corpus_lines():
    with (SHARED_DATA / "corpus" / "en.txt").open(encoding="utf-8") as handle:
        lines = [line.strip() for _, line in zip(range(3000), handle, strict=False)]
    words = sorted({word for line in lines[:1500] for word in split_words(line.lower())})
    vectors = np.random.default_rng(5).standard_normal((len(words), 16)).astype(np.float32)
    module = StaticWordAverage.from_word_vectors(words, vectors, teacher_tokenizer=teacher_like_tokenizer())
    model = SentenceTransformer(modules=[module, Normalize()], device="cpu")
    bare_rows = [tokenizer_rows(module, line) for line in lines]
    rows, offsets = module.word_rows.rows(lines)
    assert [kept(part, module) for part in np.split(rows, offsets[1:])] == bare_rows
    np.testing.assert_allclose(st_static.encode(model, lines), model.encode(lines), atol=1e-6)
