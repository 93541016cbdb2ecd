"""Completing a cross-lingual table with the teacher's Chinese and Japanese tokens."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer

from st_static import StaticWordAverage
from st_static.extraction.completion import (
    complete_spaceless_vocabulary,
    complete_vocabulary,
    isolated_token_vectors,
    teacher_spaceless_tokens,
)
from st_static.extraction.ridge import RidgeMap
from st_static.training.propagation import propagate_refinement
from tests.teachers import CJK_WORDS, HAN_CHARACTERS, KANA_WORDS, make_tiny_teacher


@pytest.fixture(scope="module")
def cjk_teacher(tmp_path_factory: pytest.TempPathFactory) -> SentenceTransformer:
    folder = make_tiny_teacher(tmp_path_factory.mktemp("cjk"), kind="cjk")
    return SentenceTransformer(str(folder), device="cpu")


def _teacher_tokenizer(teacher: SentenceTransformer) -> Tokenizer:
    return teacher[0].tokenizer._tokenizer


def test_teacher_tokens_per_language_most_probable_first(cjk_teacher: SentenceTransformer) -> None:
    chinese = teacher_spaceless_tokens(_teacher_tokenizer(cjk_teacher), {"zh"})
    japanese = teacher_spaceless_tokens(_teacher_tokenizer(cjk_teacher), {"ja"})
    # The Unigram scores fall with the piece index, so the multi-character words (listed first) lead.
    assert chinese[: len(CJK_WORDS)] == CJK_WORDS
    assert set(chinese) == set(CJK_WORDS) | set(HAN_CHARACTERS)
    assert set(japanese) == set(CJK_WORDS) | set(KANA_WORDS) | set(HAN_CHARACTERS)
    # Punctuation alone or mixed with letters is never a table word; languages with spaces get nothing.
    assert "\u3002" not in japanese and "x\u30fb" not in japanese
    assert teacher_spaceless_tokens(_teacher_tokenizer(cjk_teacher), {"en", "de"}) == []


def test_ridge_map_recovers_a_linear_map() -> None:
    rng = np.random.default_rng(0)
    source = rng.normal(size=(500, 16))
    weight, bias = rng.normal(size=(16, 8)), rng.normal(size=8)
    mapping = RidgeMap.fit(source, source @ weight + bias, ridge=1e-8)
    probe = rng.normal(size=(20, 16))
    np.testing.assert_allclose(mapping(probe), probe @ weight + bias, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="at least two paired rows"):
        RidgeMap.fit(source[:1], source[:1])


def _module_with_known_tokens(
    teacher: SentenceTransformer, known: list[str], transform: np.ndarray
) -> StaticWordAverage:
    """A raw table whose Chinese rows are a known linear image of the teacher's isolated token vectors."""
    vectors, encoded = isolated_token_vectors(teacher, known)
    assert encoded.all()
    words = ["cat", "dog", *known]
    table = np.concatenate([np.ones((2, transform.shape[1]), dtype=np.float32), vectors @ transform])
    return StaticWordAverage.from_word_vectors(words, table, teacher_tokenizer=_teacher_tokenizer(teacher))


def test_missing_tokens_are_added_through_the_fitted_map(cjk_teacher: SentenceTransformer) -> None:
    known = HAN_CHARACTERS[:150]
    missing = [*CJK_WORDS, *HAN_CHARACTERS[150:]]
    transform = np.random.default_rng(1).normal(size=(32, 32)).astype(np.float32)
    module = _module_with_known_tokens(cjk_teacher, known, transform)

    completed, report = complete_spaceless_vocabulary(module, cjk_teacher, ["en", "zh"])

    assert report["added"] == len(missing) and report["in_table"] == len(known)
    assert report["held_out_cosine"]["mapped"] > 0.99
    assert completed.vocabulary[: module.num_words] == module.vocabulary
    np.testing.assert_array_equal(completed.word_vectors[: module.num_words].detach(), module.word_vectors.detach())
    expected, _ = isolated_token_vectors(cjk_teacher, missing)
    rows = [completed.vocabulary.index(token) for token in missing]
    got = completed.word_vectors[rows].detach().numpy()
    cosine = (
        (got * (expected @ transform)).sum(1)
        / np.linalg.norm(got, axis=1)
        / np.linalg.norm(expected @ transform, axis=1)
    )
    assert cosine.min() > 0.99
    # A run of Han characters now segments into the added multi-character token.
    assert completed.tokenizer.encode(CJK_WORDS[0] + HAN_CHARACTERS[0]).tokens[0] == CJK_WORDS[0]
    assert completed.metadata.stages[-1] == "completion"
    # Kana tokens are Japanese only: a Chinese table does not get them.
    assert not set(KANA_WORDS) & set(completed.vocabulary)


def test_nothing_to_add_returns_the_module(cjk_teacher: SentenceTransformer) -> None:
    module = StaticWordAverage.from_word_vectors(["cat", "dog"], np.ones((2, 32), dtype=np.float32))
    same, report = complete_spaceless_vocabulary(module, cjk_teacher, ["en", "de"])
    assert same is module and report["added"] == 0


def test_too_few_known_tokens_is_a_clear_error(cjk_teacher: SentenceTransformer) -> None:
    module = _module_with_known_tokens(cjk_teacher, HAN_CHARACTERS[:5], np.eye(32, dtype=np.float32))
    with pytest.raises(ValueError, match="at least 100 are needed"):
        complete_spaceless_vocabulary(module, cjk_teacher, ["en", "ja"])


def test_completion_stage_folder_is_read_like_an_extraction(tmp_path: Path, cjk_teacher: SentenceTransformer) -> None:
    from st_static.model.save_load import save_model
    from st_static.settings import ExtractionSettings
    from st_static.stages.completion import run_completion
    from st_static.stages.extraction_folder import ExtractionStage

    module = _module_with_known_tokens(cjk_teacher, HAN_CHARACTERS[:120], np.eye(32, dtype=np.float32))
    extraction = tmp_path / "extraction"
    save_model(SentenceTransformer(modules=[module], device="cpu"), extraction / "model")
    (extraction / "targets").mkdir()
    (extraction / "targets" / "sentences.txt").write_text("cat\n", encoding="utf-8")
    np.save(extraction / "targets" / "teacher_embeddings.npy", np.zeros((1, 32), dtype=np.float32))
    (extraction / "pca_sentences.txt").write_text("cat dog\n", encoding="utf-8")
    (extraction / "stats.json").write_text("{}", encoding="utf-8")
    teacher_folder = tmp_path / "teacher"
    cjk_teacher.save_pretrained(str(teacher_folder))

    settings = ExtractionSettings(teacher=str(teacher_folder))
    stage = run_completion(ExtractionStage.open(extraction), tmp_path / "completion", settings, ["en", "zh"])

    assert stage.stats["completion"]["added"] == len(CJK_WORDS) + 40
    assert stage.sentences() == ["cat"] and stage.pca_sentences() == ["cat dog"]
    assert stage.teacher_embeddings().shape == (1, 32)
    reopened = ExtractionStage.open(tmp_path / "completion")
    assert reopened.stats == stage.stats
    assert not list(tmp_path.glob(".completion.tmp-*"))


def letter_words(count: int, prefix: str) -> list[str]:
    return [prefix + chr(97 + index // 26 % 26) + chr(97 + index % 26) for index in range(count)]


@pytest.fixture(scope="module")
def wordpiece_teacher(tmp_path_factory: pytest.TempPathFactory) -> SentenceTransformer:
    return SentenceTransformer(str(make_tiny_teacher(tmp_path_factory.mktemp("wp"))), device="cpu")


def test_words_the_corpus_lacks_are_added_lowercased_through_the_map(wordpiece_teacher: SentenceTransformer) -> None:
    known, missing = letter_words(150, "k"), letter_words(40, "m")
    transform = np.random.default_rng(2).normal(size=(32, 32)).astype(np.float32)
    vectors, _ = isolated_token_vectors(wordpiece_teacher, known)
    module = StaticWordAverage.from_word_vectors(known, vectors @ transform)
    assert module.lowercase

    candidates = [*known[:100], *(word.upper() for word in missing), "two words", *known[100:]]
    completed, report = complete_vocabulary(module, wordpiece_teacher, candidates)

    assert (report["in_table"], report["added"]) == (150, 40)
    assert completed.lowercase and completed.vocabulary[150:] == missing
    expected, _ = isolated_token_vectors(wordpiece_teacher, missing)
    got = completed.word_vectors[150:].detach().numpy()
    target = expected @ transform
    cosine = (got * target).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(target, axis=1)
    assert cosine.mean() > 0.99 and cosine.min() > 0.9
    assert completed.token_ids(["MAB"])[0].tolist() == [completed.vocabulary.index("mab")]


def test_the_refinement_map_reaches_rows_training_never_touched() -> None:
    rng = np.random.default_rng(3)
    before = rng.normal(size=(300, 8))
    weight = rng.normal(size=(8, 8))
    after = before.copy()
    after[:250] = before[:250] @ weight  # the rows a training batch reached
    propagated, mapped = propagate_refinement(before, after)
    assert mapped == 50
    expected = before[250:] @ weight
    cosine = (
        (propagated[250:] * expected).sum(1)
        / np.linalg.norm(expected, axis=1)
        / np.linalg.norm(propagated[250:], axis=1)
    )
    assert cosine.min() > 0.999
    np.testing.assert_array_equal(propagated[:250], after[:250])
