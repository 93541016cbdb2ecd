"""The compiled fast path (issue 87, the ``fast`` extra): the same vectors as today's path and as
``SentenceTransformer.encode`` on a 2,000-text mix, on every kind of table; today's path without numba."""

from __future__ import annotations

import functools
import itertools
import random
import string
import sys
import threading

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize

import st_static
from st_static import StaticWordAverage
from st_static.errors import MissingExtraError
from st_static.model import compiled_rows
from st_static.model.tokenization import split_words
from st_static.model.word_rows import replace_surrogates

from .conftest import ADVERSARIAL_TEXTS, WORDS, teacher_like_tokenizer, with_fallback

pytest.importorskip("numba", reason="the fast extra (numba) is not installed")

COSINE_TOLERANCE = 1e-5
CORPUS_LINES = 1_500
MIX_SIZE = 2_000
LONG_TEXTS = [
    "The cat sat on the mat, tokeniser! Don't stop: 1990s, 12,345.67 #tags & more. " * 1_400,  # > 100,000 chars
    "word-" * 25_000,  # cut after the hyphens only
    "a" * 150_000,  # one word far past WordPiece's limit: no cut point, no row
    "x" * 120_000 + " the cat sat",
    "caf\u00e9 na\u00efve \u4e16\u754c the cat " * 8_000,  # long and not ASCII: today's path
]
HAND_MADE = [
    "", " ", "\t\n ", "   \n\n  ", "\x00\x01\x7f", "!!! ??? ...", string.punctuation, "#", "?", "$5 + 3% = @home",
    "\U0001f600", "\U0001f600\U0001f600 \U0001f642", "hello\U0001f600world", "THE CAT", "The Cat", "tHe cAt", "Apple",
    "APPLE apple US us", "12 1990s 2024 007", "don't won't it's o'clock rock'n'roll", "tokenisers tokenizing zzzzqqqq",
    "x" * 99, "x" * 100, "x" * 101, "naïve café résumé", "e\u0301", "lone \ud800 surrogate", "abc\x00def",
    "hello\nworld\r\nagain", "hello\u00a0world", "\uff34\uff28\uff25 full width", "played walking jumpers cooked",
    "painted marking talker", "\ue000 the sentinel itself", "the_cat-sat.on/the\\mat", "a b c d e f g",
]  # fmt: skip


@functools.cache
def corpus_lines() -> tuple[str, ...]:
    with st_static.bundled.default_corpus().open(encoding="utf-8") as handle:
        return tuple(line.strip() for line in itertools.islice(handle, CORPUS_LINES))


@functools.cache
def mixed_texts() -> tuple[str, ...]:
    """2,000 texts: corpus lines, hand-made edge cases, very long texts, then random ASCII and non-ASCII strings."""
    texts = [*corpus_lines(), *ADVERSARIAL_TEXTS, *HAND_MADE, *LONG_TEXTS]
    rng = random.Random(87)
    alphabet = [*WORDS, "Tokeniser", "CATS", "zzz", "x" * 101, "é", "世界", "😀", *string.printable]
    while len(texts) < MIX_SIZE:
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))))
    return tuple(texts)


def today(model: SentenceTransformer, texts: list[str], **kwargs: object) -> np.ndarray:
    """``st_static.encode`` through today's path (the compiled loop switched off)."""
    compiled_rows.ENABLED = False
    try:
        return st_static.encode(model, texts, **kwargs)
    finally:
        compiled_rows.ENABLED = True


def assert_same_vectors(actual: np.ndarray, expected: np.ndarray, texts: list[str]) -> None:
    """Every row within 1e-5 cosine of the expected one (and as long, to 1e-4); zero rows where the expected are."""
    assert actual.shape == expected.shape and actual.dtype == np.float32
    norms, expected_norms = np.linalg.norm(actual, axis=1), np.linalg.norm(expected, axis=1)
    zero = expected_norms == 0
    assert np.all(norms[zero] == 0), [texts[index][:40] for index in np.flatnonzero(zero & (norms != 0))]
    cosines = (actual[~zero] * expected[~zero]).sum(axis=1) / (norms[~zero] * expected_norms[~zero])
    worst = np.argsort(cosines)[:3]
    assert cosines.min() >= 1 - COSINE_TOLERANCE, [texts[np.flatnonzero(~zero)[i]][:60] for i in worst]
    np.testing.assert_allclose(norms, expected_norms, rtol=1e-4, atol=1e-7)  # float32 sums of 20,000 rows


def corpus_module(fallback: bool) -> StaticWordAverage:
    """A table of the words of the first corpus lines (the later lines and the random texts have unknown words)."""
    words = sorted({word for line in corpus_lines()[:1_000] for word in split_words(line.lower())})
    vectors = np.random.default_rng(5).standard_normal((len(words), 32)).astype(np.float32)
    module = StaticWordAverage.from_word_vectors(words, vectors, teacher_tokenizer=teacher_like_tokenizer())
    return with_fallback(module) if fallback else module


def cased_module() -> StaticWordAverage:
    words = ["Apple", "apple", "the", "The", "THE", "cat", "Cat", "token", "US", "us", "12", "1990s"]
    vectors = np.random.default_rng(1).standard_normal((len(words), 8)).astype(np.float32)
    return with_fallback(
        StaticWordAverage.from_word_vectors(words, vectors, teacher_tokenizer=teacher_like_tokenizer())
    )


def pieces_model() -> SentenceTransformer:
    from st_static.extraction.pieces import add_piece_rows

    from .test_pieces import LETTERS, morphology_model

    model, _ = morphology_model(held_out=("painted", "marking", "cooks", "talker"))
    return add_piece_rows(model, pieces=["ed", "ing", "er", "s", *LETTERS])[0]


def make_model(kind: str, word_module: StaticWordAverage) -> SentenceTransformer:
    from st_static.compression import quantize

    if kind == "pieces":
        return pieces_model()
    module = {
        "plain": lambda: word_module,
        "fallback": lambda: with_fallback(word_module),
        "corpus": lambda: corpus_module(fallback=False),
        "corpus-fallback": lambda: corpus_module(fallback=True),
        "cased": cased_module,
        "float16": lambda: corpus_module(fallback=True),
    }[kind]()
    model = SentenceTransformer(modules=[module, Normalize()], device="cpu")
    return quantize(model, "float16") if kind == "float16" else model


MODEL_KINDS = ["plain", "fallback", "corpus", "corpus-fallback", "cased", "pieces", "float16"]


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_the_compiled_loop_gives_todays_vectors_and_model_encodes_on_the_mix(kind, word_module, monkeypatch):
    model = make_model(kind, word_module)
    texts = list(mixed_texts())
    calls = []
    encode_ascii = compiled_rows.CompiledLookup.encode
    monkeypatch.setattr(
        compiled_rows.CompiledLookup,
        "encode",
        lambda self, *args: calls.append(len(args[1])) or encode_ascii(self, *args),
    )
    compiled = st_static.encode(model, texts)
    assert calls and sum(calls) == sum(text.isascii() for text in texts)  # every ASCII text through the loop
    assert_same_vectors(compiled, today(model, texts), texts)
    assert_same_vectors(compiled, model.encode(texts, batch_size=256), texts)
    assert_same_vectors(st_static.encode(model, texts, normalize=False), today(model, texts, normalize=False), texts)


def test_a_saved_folder_reads_as_a_bare_sentence_transformer_encodes_it(tmp_path):
    from st_static.compression import quantize

    texts = [replace_surrogates(text) for text in mixed_texts()]  # a bare StaticEmbedding refuses lone surrogates
    for name, model in [
        ("float32", SentenceTransformer(modules=[corpus_module(fallback=True), Normalize()], device="cpu")),
        ("float16", quantize(SentenceTransformer(modules=[cased_module(), Normalize()], device="cpu"), "float16")),
    ]:
        st_static.save_model(model, tmp_path / name)
        bare = SentenceTransformer(str(tmp_path / name), device="cpu")
        expected = bare.encode(texts, batch_size=256)
        assert_same_vectors(st_static.encode(bare, texts), expected, texts)
        assert_same_vectors(st_static.encode(st_static.load_model(tmp_path / name), texts), expected, texts)


def test_small_and_large_batches_prompts_and_truncation_match_todays_path(fallback_model):
    texts = list(mixed_texts())
    for batch in (texts[:2], texts[:63], texts[:700], [text for text in texts if text.isascii()][:300]):
        assert_same_vectors(st_static.encode(fallback_model, batch), today(fallback_model, batch), batch)
        prompted = st_static.encode(fallback_model, batch, prompt="query: ")
        assert_same_vectors(prompted, today(fallback_model, batch, prompt="query: "), batch)
    for text in [*LONG_TEXTS, "the cat " * 600]:  # one long text: the compiled loop too (one short one: numpy)
        assert_same_vectors(st_static.encode(fallback_model, [text]), today(fallback_model, [text]), [text])
        assert st_static.encode(fallback_model, text).shape == (16,)
    fallback_model.truncate_dim = 8
    try:
        cut = st_static.encode(fallback_model, texts[:100])
        np.testing.assert_allclose(cut, today(fallback_model, texts[:100]), atol=1e-6)
        assert cut.shape == (100, 8)
    finally:
        fallback_model.truncate_dim = None


def test_small_buffers_run_on_the_calling_thread_and_long_ones_are_cut_into_buffers(fallback_model, monkeypatch):
    kernels = compiled_rows.load_kernels(required=True)
    used: list[str] = []

    def spy(name: str):
        run = getattr(kernels, name)
        return lambda *args: used.append(name) or run(*args)

    for name in ("texts_serial", "texts_parallel"):
        monkeypatch.setattr(kernels, name, spy(name))
    st_static.encode(fallback_model, ["the cat", "sat on the mat"])
    assert used == ["texts_serial"]
    used.clear()
    monkeypatch.setattr(compiled_rows, "CHUNK_CHARS", 50)
    texts = [f"the cat {index} sat on the mat" for index in range(40)] + ["mat " * 40]
    vectors = st_static.encode(fallback_model, texts)
    assert len(used) > 10
    assert_same_vectors(vectors, today(fallback_model, texts), texts)


def test_a_forked_process_runs_the_loop_on_its_own_thread(fallback_model, monkeypatch):
    kernels = compiled_rows.load_kernels(required=True)
    run = kernels.texts_serial
    used: list[int] = []
    monkeypatch.setattr(kernels, "texts_serial", lambda *args: used.append(1) or run(*args))
    monkeypatch.setattr(kernels, "texts_parallel", lambda *args: pytest.fail("a parallel loop after fork"))
    monkeypatch.setattr(compiled_rows, "_FORKED", True)
    texts = [text for text in mixed_texts() if text.isascii()][:500]
    assert_same_vectors(st_static.encode(fallback_model, texts), today(fallback_model, texts), texts)
    assert used


def test_calls_from_several_threads_at_once_give_the_same_vectors(fallback_model):
    texts = [text for text in mixed_texts() if len(text) < 1_000]
    expected = today(fallback_model, texts)
    results: list[np.ndarray] = []
    threads = [
        threading.Thread(target=lambda: results.append(st_static.encode(fallback_model, texts))) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    for vectors in results:
        assert_same_vectors(vectors, expected, texts)


def test_the_loop_follows_in_place_updates_of_the_table(fallback_model):
    texts = ["the cat", "sat on the mat", "hello world"]
    before = st_static.encode(fallback_model, texts)
    with __import__("torch").no_grad():
        fallback_model[0].embedding.weight.mul_(-1.0)
    np.testing.assert_allclose(st_static.encode(fallback_model, texts), -before, atol=1e-6)


def test_without_numba_encode_takes_todays_path(fallback_model, monkeypatch):
    texts = list(mixed_texts()[:300])
    expected = st_static.encode(fallback_model, texts)
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    monkeypatch.delitem(sys.modules, "st_static.model.compiled_kernels")
    monkeypatch.setattr(compiled_rows, "_KERNELS", False)
    assert compiled_rows.load_kernels() is None
    with pytest.raises(MissingExtraError, match=r"st-static\[fast\]"):
        compiled_rows.load_kernels(required=True)
    monkeypatch.setattr(
        compiled_rows.CompiledLookup, "encode", lambda *args: pytest.fail("the compiled loop ran without numba")
    )
    assert_same_vectors(st_static.encode(fallback_model, texts), expected, texts)


def test_the_fast_extra_is_declared_and_in_dev():
    import tomllib

    from .conftest import REPO_ROOT

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert any(requirement.startswith("numba") for requirement in extras["fast"])
    assert any("fast" in requirement for requirement in extras["dev"])
