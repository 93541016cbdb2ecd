"""Distillation against two teachers: mixed targets, the second-teacher stage, its settings and its record."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import st_static
from st_static.extraction.target_mix import SecondTeacherTargets, mix_targets, sample_sentences
from st_static.settings import BuildSettings, ExtractionSettings, SettingsError
from st_static.teachers import TeacherError

from .teachers import TINY_CORPUS, make_tiny_teacher

TINY = {"dim": 8, "min_sentences": 1, "steps": 8, "batch_size": 4, "eval_steps": 4, "pca_sample_size": 100}


@pytest.fixture(scope="module")
def teachers(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("teachers")
    return make_tiny_teacher(folder / "first"), make_tiny_teacher(folder / "second", hidden_size=24, seed=7)


def _cosines(vectors: np.ndarray) -> np.ndarray:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit @ unit.T


def test_mixed_targets_give_the_weighted_mean_of_both_teachers_centred_cosines():
    rng = np.random.default_rng(0)
    first, second = rng.normal(size=(50, 6)) + 3.0, rng.normal(size=(50, 11))
    mixed = mix_targets([first, second], [0.3, 0.7])
    expected = 0.3 * _cosines(first - first.mean(0)) + 0.7 * _cosines(second - second.mean(0))
    np.testing.assert_allclose(_cosines(mixed), expected, atol=1e-5)
    alone = mix_targets([first, second], [1.0, 0.0])
    np.testing.assert_allclose(_cosines(alone), _cosines(first - first.mean(0)), atol=1e-5)
    assert mixed.dtype == np.float32 and mixed.shape == (50, 17)


def test_mixed_targets_refuse_what_they_cannot_mix():
    block = np.ones((4, 3))
    with pytest.raises(ValueError, match="one weight per teacher"):
        mix_targets([block, block], [1.0])
    with pytest.raises(ValueError, match="different sentences"):
        mix_targets([block, np.ones((5, 3))], [0.5, 0.5])
    for weights in ([0.0, 0.0], [-1.0, 2.0], [float("nan"), 1.0]):
        with pytest.raises(ValueError, match="non-negative"):
            mix_targets([block, block], weights)


def test_the_sample_is_sorted_seeded_and_whole_when_asked_for_more():
    assert np.array_equal(sample_sentences(10, 4), sample_sentences(10, 4))
    assert list(sample_sentences(10, 4)) == sorted(sample_sentences(10, 4))
    assert list(sample_sentences(5, 100)) == [0, 1, 2, 3, 4]


def test_second_teacher_settings_are_checked():
    with pytest.raises(SettingsError, match="second_teacher_weight"):
        ExtractionSettings(second_teacher="x", second_teacher_weight=1.5)
    with pytest.raises(SettingsError, match="second_teacher_mix"):
        ExtractionSettings(second_teacher="x", second_teacher_mix="logits")
    with pytest.raises(SettingsError, match="second_teacher_sentences"):
        ExtractionSettings(second_teacher="x", second_teacher_sentences=0)
    with pytest.raises(SettingsError, match="second_teacher must name"):
        ExtractionSettings(second_teacher="  ")
    with pytest.raises(SettingsError, match="cross-lingual"):
        BuildSettings.from_flat(second_teacher="x", languages=["en", "de"], parallel=["de=pairs.tsv"])
    with pytest.raises(SettingsError, match="long texts"):
        BuildSettings.from_flat(second_teacher="x", long_texts=4)


def test_a_second_teacher_keys_its_stage_moves_the_table_and_is_recorded(teachers, tmp_path):
    first, second = teachers
    work = tmp_path / "work"
    corpus = TINY_CORPUS * 3

    def with_second(**settings: object):
        return st_static.distill(
            str(first),
            corpus,
            work_dir=work,
            second_teacher=str(second),
            second_teacher_sentences=10,
            **settings,
            **TINY,
        )

    plain = st_static.distill(str(first), corpus, work_dir=work, **TINY)
    both = with_second()
    assert len(list(work.glob("extraction-*"))) == 1  # the first teacher's pass is shared
    (stage,) = work.glob("second-teacher-*")
    targets = SecondTeacherTargets.open(stage)
    assert targets.vectors.shape == (10, 24) and len(targets.sample) == 10
    np.testing.assert_allclose(np.linalg.norm(targets.vectors, axis=1), 1.0, atol=1e-2)  # bfloat16 where native
    assert len(list(work.glob("distillation-*"))) == 2
    assert not np.allclose(plain.encode(["the cat sat"]), both.encode(["the cat sat"]))
    record = both[0].metadata.second_teacher
    assert record.teacher == second.name and record.weight == 0.5 and record.sentences == 10
    assert record.mix == "distributions"
    assert plain[0].metadata.second_teacher is None
    from st_static.model_card import render_model_card

    card = " ".join(render_model_card(both).split())
    assert f"the sentence similarities of a second teacher, `{second.name}`" in card
    assert "the neighbour distributions it distilled are 0.5 that teacher's and the rest the first's, over 10" in card
    assert "second teacher" not in render_model_card(plain)

    again = with_second()  # every stage from the cache
    np.testing.assert_array_equal(again.encode(["the cat sat"]), both.encode(["the cat sat"]))
    weighted = with_second(second_teacher_weight=1.0)
    assert len(list(work.glob("second-teacher-*"))) == 1  # a new weight reuses the second teacher's pass
    assert len(list(work.glob("distillation-*"))) == 3
    assert weighted[0].metadata.second_teacher.weight == 1.0
    cosines = with_second(second_teacher_mix="cosines")
    assert len(list(work.glob("second-teacher-*"))) == 1  # so does the other mix
    assert len(list(work.glob("distillation-*"))) == 4
    assert not np.allclose(cosines.encode(["the cat sat"]), both.encode(["the cat sat"]))
    assert cosines[0].metadata.second_teacher.mix == "cosines"
    assert "the cosines it distilled are 0.5 that teacher's" in " ".join(render_model_card(cosines).split())
    recorded = [
        json.loads(path.read_text())["settings"].get("teacher_dims")
        for path in work.glob("distillation-*/training/training_history.json")
    ]
    assert sorted(recorded, key=str) == [None, None, [32, 24], [32, 24]]  # plain and cosines; 0.5 and 1.0


def test_the_refinement_reads_both_teachers_blocks_apart_with_their_shares(teachers, tmp_path, monkeypatch):
    import st_static.training

    calls = []
    refine = st_static.training.refine
    monkeypatch.setattr(
        st_static.training, "refine", lambda *args, **kwargs: calls.append(kwargs) or refine(*args, **kwargs)
    )
    first, second = teachers
    work = tmp_path / "work"
    for mix in ("distributions", "cosines"):
        st_static.distill(
            str(first),
            TINY_CORPUS * 3,
            work_dir=work,
            second_teacher=str(second),
            second_teacher_sentences=10,
            second_teacher_weight=0.7,
            second_teacher_mix=mix,
            **TINY,
        )
    distributions, cosines = calls
    arguments = distributions["teacher_loss_arguments"]
    assert arguments["teacher_dims"] == [32, 24]
    assert arguments["teacher_weights"] == pytest.approx([0.3, 0.7])
    targets = distributions["teacher_embeddings"]
    assert targets.shape == (10, 56)
    np.testing.assert_allclose(np.linalg.norm(targets[:, :32], axis=1), np.linalg.norm(targets[:, 32:], axis=1))
    assert cosines["teacher_loss_arguments"] is None and cosines["teacher_embeddings"].shape == (10, 56)
    np.testing.assert_allclose(
        np.linalg.norm(cosines["teacher_embeddings"][:, 32:], axis=1) ** 2, 0.7, atol=1e-5
    )  # the second block's cosines weigh 0.7


def test_a_missing_second_teacher_fails_before_the_teacher_pass(teachers, tmp_path):
    first, _ = teachers
    work = tmp_path / "work"
    with pytest.raises(TeacherError):
        st_static.distill(str(first), TINY_CORPUS, work_dir=work, second_teacher=str(tmp_path / "missing"), **TINY)
    assert not list(work.glob("extraction-*"))


def test_the_second_teachers_pass_gives_its_sentence_vectors_in_order_and_resumes(teachers, tmp_path, monkeypatch):
    from sentence_transformers import SentenceTransformer

    from st_static.extraction import target_mix

    monkeypatch.setattr(target_mix, "CHUNK", 4)
    teacher = SentenceTransformer(str(teachers[1]), device="cpu")
    sentences = list(dict.fromkeys(TINY_CORPUS))[:10]
    vectors = target_mix.encode_targets(teacher, sentences, "", tmp_path / "partial")
    np.testing.assert_allclose(vectors, teacher.encode(sentences, normalize_embeddings=True), atol=1e-5)
    chunks = sorted((tmp_path / "partial").glob("chunk-*.npy"))
    assert len(chunks) == 3
    chunks[-1].unlink()  # as if interrupted in the last chunk
    calls = []
    forward = teacher.forward
    monkeypatch.setattr(teacher, "forward", lambda features, **kwargs: calls.append(1) or forward(features, **kwargs))
    np.testing.assert_allclose(
        target_mix.encode_targets(teacher, sentences, "", tmp_path / "partial"), vectors, atol=1e-6
    )
    assert 1 <= len(calls) <= 2  # only the missing chunk's batches ran again
