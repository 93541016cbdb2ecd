"""Evaluation functions on tiny inputs whose answers are computed independently (by hand or with plain numpy)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from st_static.data_files import DataFormatError
from st_static.evaluation import (
    alignment,
    cosine_average_precision,
    evaluate_pair_classification,
    evaluate_sts,
    evaluate_tasks,
    evaluate_translation_retrieval,
    find_tasks,
    language_silhouette,
    lookup_encoder,
    model_encoder,
    retrieval_accuracy,
    spearman_cosine,
    uniformity,
)
from st_static.evaluation.suite import NoEvaluationDataError


def unit_vector(angle: float) -> np.ndarray:
    return np.array([math.cos(angle), math.sin(angle)])


def write_tsv(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\t".join(header) + "\n" + "".join("\t".join(map(str, row)) + "\n" for row in rows))
    return path


def ranks(values):
    order = np.argsort(values)
    result = np.empty(len(values))
    result[order] = np.arange(len(values))
    return result


# ---------------------------------------------------------------- STS
def test_spearman_is_100_for_same_order_and_minus_100_for_reversed():
    first = np.tile([1.0, 0.0], (4, 1))
    second = np.stack([unit_vector(angle) for angle in (1.5, 1.0, 0.5, 0.1)])  # cosines increase
    assert spearman_cosine(first, second, np.array([0.0, 1.0, 2.0, 3.0])) == pytest.approx(100.0)
    assert spearman_cosine(first, second, np.array([3.0, 2.0, 1.0, 0.0])) == pytest.approx(-100.0)


def test_spearman_matches_rank_correlation_by_hand():
    first = np.tile([1.0, 0.0], (5, 1))
    angles = np.array([0.3, 1.2, 0.1, 0.9, 0.6])
    second = np.stack([unit_vector(angle) for angle in angles])
    gold = np.array([4.0, 1.0, 3.0, 2.0, 5.0])
    # cosine ranks: cos decreases with the angle -> ranks of -angle; Pearson of ranks, written out
    cosine_ranks, gold_ranks = ranks(-angles), ranks(gold)
    centred_a, centred_b = cosine_ranks - cosine_ranks.mean(), gold_ranks - gold_ranks.mean()
    expected = 100 * (centred_a @ centred_b) / math.sqrt((centred_a @ centred_a) * (centred_b @ centred_b))
    assert spearman_cosine(first, second, gold) == pytest.approx(expected)


def test_spearman_is_nan_when_undefined_and_checks_sizes():
    same = np.ones((3, 2))
    assert math.isnan(spearman_cosine(same, same, np.array([1.0, 2.0, 3.0])))
    with pytest.raises(ValueError, match="gold scores"):
        spearman_cosine(same, same, np.array([1.0, 2.0]))


def test_evaluate_sts_on_a_file_equals_numpy_computation(word_model, tmp_path):
    rows = [
        ("the cat sat", "the cat sat on the mat", 4.5),
        ("hello world", "the mat", 0.5),
        ("the cat", "a cat", 3.0),
        ("word world", "hello word", 2.0),
        ("tokeniser", "token", 4.0),
    ]
    path = write_tsv(tmp_path / "sts.tsv", ("sentence1", "sentence2", "score"), rows)
    result = evaluate_sts(model_encoder(word_model), path)
    first = word_model.encode([row[0] for row in rows])
    second = word_model.encode([row[1] for row in rows])
    cosines = np.sum(first * second, axis=1)  # unit vectors
    expected = 100 * np.corrcoef(ranks(cosines), ranks(np.array([row[2] for row in rows])))[0, 1]
    assert result["metric"] == "spearman_cosine"
    assert result["pairs"] == 5
    assert result["score"] == pytest.approx(expected, abs=1e-6)


# ---------------------------------------------------------------- translation retrieval
def test_retrieval_accuracy_counts_nearest_neighbours_in_each_direction():
    english = np.stack([unit_vector(0.0), unit_vector(1.0)])
    other = np.stack([unit_vector(0.4), unit_vector(0.45)])
    # en->other: 0.0 is nearest 0.4 (right), 1.0 is nearest 0.45 (right) -> 100
    # other->en: 0.4 is nearest 0.0 (right), 0.45 is nearest 0.0 (wrong, 0.45 < 0.55) -> 50
    assert retrieval_accuracy(english, other) == pytest.approx(100.0)
    assert retrieval_accuracy(other, english) == pytest.approx(50.0)


def test_zero_vectors_get_no_credit_from_the_row_order():
    zero = np.zeros(2)
    # A zero query (then a zero candidate) on row 0: the row order (argmax of ties) would count it as found.
    assert retrieval_accuracy(np.stack([zero, unit_vector(1.0)]), np.stack([unit_vector(0.3), unit_vector(1.0)])) == 50
    opposite = unit_vector(1.0 + math.pi)  # cosine -1 with unit_vector(1.0), below the zero candidate's 0
    assert retrieval_accuracy(np.stack([opposite, unit_vector(1.0)]), np.stack([zero, unit_vector(1.0)])) == 50
    assert retrieval_accuracy(np.zeros((3, 2)), np.zeros((3, 2))) == 0


def test_retrieval_rejects_misaligned_sides():
    with pytest.raises(ValueError, match="align"):
        retrieval_accuracy(np.ones((3, 2)), np.ones((2, 2)))


def test_translation_file_gives_both_directions_and_diagnostics(tmp_path):
    vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0], "x": [0.9, 0.1], "y": [0.8, 0.2]}
    encoder = lookup_encoder({text: np.array(vector) for text, vector in vectors.items()})
    path = write_tsv(tmp_path / "tatoeba" / "xxx-eng.tsv", ("eng", "other"), [("a", "x"), ("b", "y")])
    result = evaluate_translation_retrieval(encoder, path)
    assert result["accuracy_1_to_2"] == pytest.approx(100.0)  # a->x (cos .99 vs .97), b->y (.24 vs .11)
    assert result["accuracy_2_to_1"] == pytest.approx(50.0)  # x->a right, y->a (.97 vs .24) wrong
    assert result["score"] == pytest.approx(75.0)
    assert {"alignment", "uniformity", "language_silhouette"} <= result.keys()


# ---------------------------------------------------------------- pair classification
def test_average_precision_by_hand():
    first = np.tile([1.0, 0.0], (3, 1))
    second = np.stack([unit_vector(0.1), unit_vector(0.5), unit_vector(1.0)])  # scores decrease
    # ranking: label 1, 0, 1 -> precision at the positives: 1/1 and 2/3 -> AP = (1 + 2/3) / 2
    assert cosine_average_precision(first, second, np.array([1, 0, 1])) == pytest.approx(100 * (1 + 2 / 3) / 2)


def test_average_precision_rejects_bad_labels(tmp_path):
    with pytest.raises(ValueError, match="0 or 1"):
        cosine_average_precision(np.ones((2, 2)), np.ones((2, 2)), np.array([0, 2]))
    path = write_tsv(tmp_path / "msrp.tsv", ("sentence1", "sentence2", "label"), [("a", "b", 1), ("a", "c", 3)])
    with pytest.raises(DataFormatError, match="0 or 1"):
        evaluate_pair_classification(lookup_encoder({}), path)


# ---------------------------------------------------------------- diagnostics
def test_alignment_and_uniformity_known_values():
    points = np.array([[1.0, 0.0], [-1.0, 0.0]])
    assert alignment(points, points) == 0.0
    assert alignment(points, -points) == pytest.approx(4.0)
    assert uniformity(points) == pytest.approx(-8.0)  # one pair at squared distance 4: log exp(-2 * 4)
    three = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])  # squared distances 2, 4, 2
    assert uniformity(three) == pytest.approx(math.log((2 * math.exp(-4) + math.exp(-8)) / 3))


def test_language_silhouette_separated_vs_mixed():
    rng = np.random.default_rng(0)
    english = rng.normal(size=(50, 8)) + np.eye(8)[0] * 10
    german = rng.normal(size=(50, 8)) - np.eye(8)[0] * 10
    assert language_silhouette(english, german) > 0.8
    mixed = rng.normal(size=(100, 8))
    assert abs(language_silhouette(mixed[:50], mixed[50:])) < 0.1


# ---------------------------------------------------------------- encoders
def test_fast_path_encoder_equals_model_encode(word_model):
    texts = ["the cat sat", "Hello world", "", "tokeniser tokens", "the cat sat"]
    np.testing.assert_allclose(model_encoder(word_model)(texts), word_model.encode(texts), atol=1e-6)
    np.testing.assert_allclose(model_encoder(word_model, fast=False)(texts), word_model.encode(texts), atol=1e-6)


def test_encoder_falls_back_to_model_encode_where_the_fast_path_disagrees(word_model, monkeypatch, caplog):
    import st_static.evaluation.encoders as encoders

    monkeypatch.setattr(encoders, "static_encode", lambda model, texts, **kwargs: np.ones((len(texts), 16), "f4"))
    texts = ["the cat sat", "Hello world"]
    encoder = model_encoder(word_model)
    np.testing.assert_allclose(encoder(texts), word_model.encode(texts), atol=1e-6)
    np.testing.assert_allclose(encoder(["mat", "on"]), word_model.encode(["mat", "on"]), atol=1e-6)
    assert "using model.encode" in caplog.text


def test_prompt_is_prepended(word_model):
    texts = ["sat on", "world"]
    np.testing.assert_allclose(
        model_encoder(word_model, prompt="cat ")(texts), word_model.encode(texts, prompt="cat "), atol=1e-6
    )


# ---------------------------------------------------------------- suite
def test_unknown_files_are_ignored_and_empty_folders_refused(tmp_path):
    write_tsv(tmp_path / "sts" / "stsb-xx-test.tsv", ("sentence1", "sentence2", "score"), [("a", "b", 1.0)])
    write_tsv(tmp_path / "sts" / "other-benchmark.tsv", ("sentence1", "sentence2", "score"), [("a", "b", 1.0)])
    (tmp_path / "notes.txt").write_text("not data")
    write_tsv(tmp_path / "tatoeba" / "deu-eng.tsv", ("eng", "other"), [("a", "b")])
    assert [(task.name, task.kind) for task in find_tasks(tmp_path)] == [
        ("stsb-xx-test", "sts"),
        ("tatoeba-deu-eng", "translation"),
    ]
    assert [task.name for task in find_tasks(tmp_path, include="tatoeba-*")] == ["tatoeba-deu-eng"]
    assert len(find_tasks(tmp_path, include="stsb-xx-test, tatoeba-deu-eng")) == 2  # comma-separated globs
    (tmp_path / "empty").mkdir()
    with pytest.raises(NoEvaluationDataError, match="no evaluation file"):
        find_tasks(tmp_path / "empty")


def test_corrupt_file_is_named(tmp_path, word_model):
    path = write_tsv(tmp_path / "sts" / "sick-dev.tsv", ("sentence1", "sentence2", "score"), [("a", "b", "high")])
    with pytest.raises(DataFormatError, match=r"sick-dev\.tsv"):
        evaluate_tasks(model_encoder(word_model), find_tasks(tmp_path))
    assert path.exists()


def test_a_saved_table_with_fallback_rows_takes_the_fast_path_also_when_loaded_bare(fallback_model, tmp_path):
    from sentence_transformers import SentenceTransformer

    import st_static
    from st_static.evaluation import is_static_pipeline

    st_static.save_model(fallback_model, tmp_path / "model")
    bare = SentenceTransformer(str(tmp_path / "model"), device="cpu")
    assert len(bare) == 3  # table, the empty text's Dense, Normalize
    assert is_static_pipeline(bare) and is_static_pipeline(st_static.load_model(tmp_path / "model"))
    texts = ["the cat sat", "", "?"]
    np.testing.assert_allclose(model_encoder(bare)(texts), bare.encode(texts), atol=1e-6)


def test_subword_static_embedding_is_not_taken_for_an_st_static_model():
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Normalize
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    import st_static
    from st_static.evaluation import is_static_pipeline

    from .conftest import teacher_like_tokenizer

    # A BERT-style subword tokenizer with [UNK] at id 1, as model2vec models have: st_static's word layout does
    # not apply, so the fast path must refuse it and the evaluation must use model.encode.
    tokenizer = teacher_like_tokenizer()
    weights = np.random.default_rng(0).standard_normal((tokenizer.get_vocab_size(), 8)).astype(np.float32)
    model = SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_weights=weights), Normalize()])
    assert not is_static_pipeline(model)
    with pytest.raises(TypeError, match="subword tokenizer"):
        st_static.encode(model, ["the cat"])
    texts = ["the cat sat", "tokens on the mat"]
    np.testing.assert_allclose(model_encoder(model)(texts), model.encode(texts), atol=1e-6)


def test_a_leading_byte_order_mark_is_dropped_by_the_data_file_readers(tmp_path):
    from st_static.data_files import read_scored_pairs, read_translation_pairs

    contents = {"sts.tsv": "sentence1\tsentence2\tscore\na b\tc\t4.5\n", "pairs.tsv": "eng\tother\ncat\tKatze\n"}
    for name, content in contents.items():
        (tmp_path / name).write_text(content, encoding="utf-8")
        (tmp_path / f"bom-{name}").write_text(content, encoding="utf-8-sig")
    assert read_scored_pairs(tmp_path / "bom-sts.tsv") == read_scored_pairs(tmp_path / "sts.tsv")
    assert read_translation_pairs(tmp_path / "bom-pairs.tsv") == read_translation_pairs(tmp_path / "pairs.tsv")
