"""Refinement with the sentence-transformers trainer: the loss falls, only the table trains, early stopping works."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.base.modules import Dense, Normalize
from transformers import TrainerControl, TrainerState

import st_static
from st_static import StaticWordAverage
from st_static.losses import SimilarityDistillationLoss
from st_static.model.empty_text import attach_empty_text_dense, empty_text_dense, is_empty_text_dense
from st_static.model.tokenization import split_words
from st_static.training import (
    CURVE_FILE_NAME,
    HISTORY_FILE_NAME,
    refine_by_distillation,
    refine_by_translation,
    split_indices,
)
from st_static.training.callbacks import BestTableCallback

from .conftest import WORDS as CONFTEST_WORDS
from .conftest import with_fallback


def make_words(prefix: str, count: int) -> list[str]:
    """Letter-only words (the word tokenizer splits on everything else): ``prefix`` + two letters."""
    return [prefix + chr(97 + index // 26) + chr(97 + index % 26) for index in range(count)]


def make_model(
    words: list[str], dim: int = 16, seed: int = 0, extra_modules: list | None = None
) -> SentenceTransformer:
    vectors = np.random.default_rng(seed).standard_normal((len(words), dim)).astype(np.float32)
    module = StaticWordAverage.from_word_vectors(words, vectors)
    return SentenceTransformer(modules=[module, *(extra_modules or []), Normalize()], device="cpu")


def make_sentences(words: list[str], count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(words, size=rng.integers(3, 8))) for _ in range(count)]


def bag_of_words_teacher(sentences: list[str], words: list[str], dim: int, seed: int = 1) -> np.ndarray:
    """Synthetic teacher: the mean of fixed random word vectors (a random projection of the bag of words)."""
    projection = np.random.default_rng(seed).standard_normal((len(words), dim))
    index = {word: row for row, word in enumerate(words)}
    embeddings = np.zeros((len(sentences), dim))
    for row, sentence in enumerate(sentences):
        known = [index[word] for word in split_words(sentence) if word in index]
        if known:
            embeddings[row] = projection[known].mean(axis=0)
    return embeddings.astype(np.float32)


WORDS = make_words("w", 40)


def test_distillation_lowers_the_validation_loss_and_writes_its_record(tmp_path):
    model = make_model(WORDS)
    initial = model[0].word_vectors.detach().clone()
    sentences = make_sentences(WORDS, 640, seed=2)
    teacher = bag_of_words_teacher(sentences, WORDS, dim=24)
    result = refine_by_distillation(
        model,
        sentences,
        teacher,
        steps=60,
        batch_size=32,
        learning_rate=0.05,
        validation_size=128,
        eval_steps=20,
        patience=None,
        output_dir=tmp_path / "record",
    )
    assert [record.step for record in result.history] == [0, 20, 40, 60]
    losses = [record.loss for record in result.history]
    assert losses[-1] < losses[0] * 0.9
    assert result.best_validation_loss == min(losses)
    assert result.best_step == result.history[losses.index(min(losses))].step
    assert result.steps == 60 and not result.stopped_early and result.steps_per_second > 0
    assert result.model is model and not torch.equal(model[0].word_vectors, initial)

    metadata = model[0].metadata
    assert metadata.stages == ["distillation"]
    assert metadata.training.loss == "SimilarityDistillationLoss"
    assert metadata.training.best_validation_loss == pytest.approx(result.best_validation_loss)
    assert model[0].embedding.sparse is False  # switched back after training

    record = json.loads((tmp_path / "record" / HISTORY_FILE_NAME).read_text())
    assert [point["step"] for point in record["history"]] == [0, 20, 40, 60]
    assert record["settings"]["batch_size"] == 32
    assert (tmp_path / "record" / CURVE_FILE_NAME).read_bytes().startswith(b"\x89PNG")
    assert sorted(path.name for path in (tmp_path / "record").iterdir()) == sorted([HISTORY_FILE_NAME, CURVE_FILE_NAME])


def test_only_the_word_rows_train_and_the_unknown_row_stays_zero():
    words = ["Berlin", "paris", *make_words("w", 30)]  # case-sensitive; "Paris" and "PARIS" read the "paris" row
    dense = Dense(16, 16)
    dense_before = {name: value.clone() for name, value in dense.state_dict().items()}
    model = make_model(words, extra_modules=[dense])
    module = model[0]
    assert module.embedding.weight.shape[0] > module.num_words + 1  # there are case-variant rows
    sentences = [sentence + " Berlin Paris PARIS" for sentence in make_sentences(words, 256, seed=3)]
    result = refine_by_distillation(
        model,
        sentences,
        bag_of_words_teacher(sentences, words, dim=20),
        steps=20,
        batch_size=32,
        learning_rate=0.05,
        validation_size=64,
        eval_steps=10,
    )
    assert result.steps == 20
    weight = module.embedding.weight.detach()
    assert torch.equal(weight[module.num_words], torch.zeros(weight.shape[1]))
    extra = torch.arange(module.num_words + 1, weight.shape[0])
    assert torch.equal(weight[extra], weight[module.token_rows[extra]])
    for name, value in dense.state_dict().items():
        assert torch.equal(value, dense_before[name])
    assert all(parameter.requires_grad for parameter in dense.parameters())
    # The case variants read the trained row.
    np.testing.assert_allclose(model.encode("PARIS Paris"), model.encode("paris"), rtol=1e-5)


def test_sparse_adam_updates_only_the_rows_in_the_batch(word_module):
    # The mechanism refinement relies on: sparse EmbeddingBag gradients + SparseAdam leave other rows alone,
    # including the [UNK] padding row, even before sync_token_rows() re-zeroes it.
    word_module.embedding.sparse = True
    optimizer = torch.optim.SparseAdam([word_module.embedding.weight], lr=0.1)
    before = word_module.embedding.weight.detach().clone()
    features = word_module.preprocess(["the cat qqq", "zzz", "sat on"])  # qqq, zzz: the [UNK] row
    assert (features["input_ids"] == word_module.num_words).any()
    for _ in range(3):
        word_module(features)["sentence_embedding"].square().sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    changed = (word_module.embedding.weight.detach() != before).any(dim=1).nonzero().flatten().tolist()
    assert changed == sorted(CONFTEST_WORDS.index(word) for word in ("the", "cat", "sat", "on"))
    assert torch.equal(word_module.embedding.weight[word_module.num_words], torch.zeros(before.shape[1]))


def test_early_stopping_restores_the_best_table():
    model = make_model(WORDS)
    initial = model[0].word_vectors.detach().clone()
    sentences = make_sentences(WORDS, 384, seed=4)
    # Validation targets are the student's own embeddings, so the initial table is optimal on them; the
    # training targets are noise, so every step makes the validation loss worse.
    labels = np.random.default_rng(5).standard_normal((len(sentences), 16)).astype(np.float32)
    _, validation = split_indices(len(sentences), 128, seed=7)
    labels[validation] = model.encode([sentences[i] for i in validation], convert_to_numpy=True)
    result = refine_by_distillation(
        model,
        sentences,
        labels,
        steps=200,
        batch_size=32,
        learning_rate=0.1,
        validation_size=128,
        eval_steps=5,
        patience=2,
        seed=7,
    )
    assert result.stopped_early
    assert result.steps == 10
    assert [record.step for record in result.history] == [0, 5, 10]
    assert result.history[1].loss > result.history[0].loss
    assert result.best_step == 0
    assert torch.equal(model[0].word_vectors, initial)


def test_best_table_callback_keeps_the_best_and_stops_after_patience(word_module):
    callback = BestTableCallback(word_module, patience=2)
    state, control = TrainerState(), TrainerControl()
    tables = {}
    for step, loss in [(0, 3.0), (10, 2.0), (20, 2.5), (30, 2.1)]:
        with torch.no_grad():
            word_module.word_vectors.add_(1.0)
        tables[step] = word_module.word_vectors.detach().clone()
        state.global_step = step
        callback.on_evaluate(None, state, control, metrics={"eval_loss": loss})
        assert control.should_training_stop == (step == 30)
    callback.on_train_end(None, state, control)
    assert callback.best_step == 10 and callback.best_loss == 2.0
    assert torch.equal(word_module.word_vectors, tables[10])


def test_best_table_callback_sums_the_losses_of_several_datasets(word_module):
    callback = BestTableCallback(word_module, patience=None, dataset_names=["en-de", "en-fr"])
    state, control = TrainerState(), TrainerControl()
    callback.on_evaluate(None, state, control, metrics={"eval_en-de_loss": 1.5})
    assert callback.history == []
    callback.on_evaluate(None, state, control, metrics={"eval_en-fr_loss": 2.0})
    assert len(callback.history) == 1
    assert callback.history[0].loss == pytest.approx(3.5)
    assert callback.history[0].components == {"en-de": 1.5, "en-fr": 2.0}


def translate(sentences: list[str], source: list[str], target: list[str]) -> list[str]:
    mapping = dict(zip(source, target, strict=True))
    return [" ".join(mapping[word] for word in sentence.split()) for sentence in sentences]


def test_translation_refinement_sums_the_language_pairs(tmp_path):
    english, german, french = make_words("e", 20), make_words("g", 20), make_words("f", 20)
    model = make_model(english + german + french)
    english_sentences = make_sentences(english, 600, seed=6)
    first, second = english_sentences[:300], english_sentences[300:]
    english_german = list(zip(first, translate(first, english, german), strict=True))
    repeated = [(first[0], "gzz"), ("eyy", english_german[1][1])]  # a sentence in a second pair: dropped
    pairs = {
        ("en", "de"): english_german + repeated,
        ("en", "fr"): list(zip(second, translate(second, english, french), strict=True)),
    }
    result = refine_by_translation(
        model,
        pairs,
        steps=40,
        batch_size=16,
        learning_rate=0.05,
        validation_size=64,
        eval_steps=20,
        output_dir=tmp_path,
    )
    settings = json.loads((tmp_path / HISTORY_FILE_NAME).read_text())["settings"]
    assert settings["train_size"] == {"en-de": 300 - 64, "en-fr": 300 - 64}
    assert [record.step for record in result.history] == [0, 20, 40]
    for record in result.history:
        assert set(record.components) == {"en-de", "en-fr"}
        assert record.loss == pytest.approx(sum(record.components.values()))
    assert result.history[-1].loss < result.history[0].loss * 0.9
    assert model[0].metadata.stages == ["contrastive"]
    assert model[0].metadata.training.loss == "BilingualContrastiveLoss"


def test_translation_refinement_with_distillation_in_turn(tmp_path):
    english, german = make_words("e", 20), make_words("g", 20)
    words = english + german
    model = make_model(words)
    first = make_sentences(english, 300, seed=11)
    pairs = {("en", "de"): list(zip(first, translate(first, english, german), strict=True))}
    sentences = make_sentences(english, 200, seed=12) + make_sentences(german, 200, seed=13)
    teacher = bag_of_words_teacher(sentences, words, dim=24)

    result = refine_by_translation(
        model,
        pairs,
        steps=40,
        batch_size=16,
        learning_rate=0.05,
        validation_size=64,
        eval_steps=20,
        output_dir=tmp_path,
        distillation=(sentences, teacher),
    )

    settings = json.loads((tmp_path / HISTORY_FILE_NAME).read_text())["settings"]
    assert settings["train_size"] == {"en-de": 300 - 64, "distillation": 400 - 64}
    assert settings["language_pairs"] == ["en-de"] and settings["center_teacher"] is True
    assert settings["loss"] == "BilingualContrastiveLoss + SimilarityDistillationLoss"
    for record in result.history:
        assert set(record.components) == {"en-de", "distillation"}
        assert record.loss == pytest.approx(sum(record.components.values()))
    for component in ("en-de", "distillation"):
        assert result.history[-1].components[component] < result.history[0].components[component]
    with pytest.raises(ValueError, match="teacher"):
        refine_by_translation(model, pairs, batch_size=16, validation_size=16, distillation=(sentences, teacher[:5]))


def test_matryoshka_distillation_with_a_teacher_as_wide_as_the_student():
    model = make_model(WORDS, dim=16)
    sentences = make_sentences(WORDS, 256, seed=8)
    result = refine_by_distillation(
        model,
        sentences,
        bag_of_words_teacher(sentences, WORDS, dim=16),  # as wide as the student: padded internally
        steps=15,
        batch_size=32,
        learning_rate=0.05,
        validation_size=64,
        eval_steps=10,
        matryoshka_dims=[16, 8, 4],
    )
    assert [record.step for record in result.history] == [0, 10, 15]  # the last step is evaluated too
    assert all(math.isfinite(record.loss) for record in result.history)
    assert result.history[-1].loss < result.history[0].loss


def test_the_loss_trains_inside_a_plain_sentence_transformer_trainer(tmp_path):
    model = make_model(WORDS)
    initial = model[0].word_vectors.detach().clone()
    sentences = make_sentences(WORDS, 64, seed=9)
    dataset = Dataset.from_dict({"sentence": sentences, "label": bag_of_words_teacher(sentences, WORDS, dim=12)})
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path),
        max_steps=4,
        per_device_train_batch_size=16,
        report_to="none",
        save_strategy="no",
        dataloader_pin_memory=False,
    )
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=dataset, loss=SimilarityDistillationLoss(model)
    )
    trainer.train()
    assert not torch.equal(model[0].word_vectors, initial)


def test_refinement_rejects_bad_input():
    model = make_model(WORDS)
    sentences = make_sentences(WORDS, 100, seed=10)
    teacher = bag_of_words_teacher(sentences, WORDS, dim=8)
    with pytest.raises(ValueError, match="shape"):
        refine_by_distillation(model, sentences, teacher[:-1], batch_size=16, validation_size=16)
    with pytest.raises(ValueError, match="batch_size"):
        refine_by_distillation(model, sentences, teacher, batch_size=1, validation_size=16)
    with pytest.raises(ValueError, match="NaN"):
        refine_by_distillation(model, sentences, np.full_like(teacher, np.nan), batch_size=16, validation_size=16)
    with pytest.raises(TypeError, match="str"):
        refine_by_distillation(model, [*sentences[:-1], 3], teacher, batch_size=16, validation_size=16)
    with pytest.raises(TypeError, match="static model"):
        refine_by_distillation(SentenceTransformer(modules=[Dense(4, 4)]), sentences, teacher)
    with pytest.raises(TypeError, match="language1, language2"):
        refine_by_translation(model, {"en-de": [("a", "b")] * 100}, batch_size=16, validation_size=16)
    with pytest.raises(TypeError, match=r"\(str, str\) pair"):
        refine_by_translation(model, {("en", "de"): [("a", "b", "c")] * 100}, batch_size=16, validation_size=16)
    assert model[0].metadata.is_empty()  # nothing ran


def test_small_data_trains_without_a_validation_split(tmp_path, caplog):
    model = make_model(WORDS)
    sentences = make_sentences(WORDS, 100, seed=10)
    teacher = bag_of_words_teacher(sentences, WORDS, dim=8)
    result = refine_by_distillation(
        model, sentences, teacher, steps=6, batch_size=64, validation_size=64, eval_steps=2, output_dir=tmp_path
    )
    assert "without early stopping" in caplog.text
    assert result.steps == 6 and result.history == [] and math.isnan(result.best_validation_loss)
    record = json.loads((tmp_path / HISTORY_FILE_NAME).read_text())
    assert record["settings"]["validation_size"] == 0 and record["settings"]["train_size"] == 100
    assert not (tmp_path / CURVE_FILE_NAME).exists()


def test_small_data_without_validation_stops_after_a_hundred_passes(caplog):
    from st_static.training.refinement import EPOCHS_WITHOUT_VALIDATION

    model = make_model(WORDS)
    sentences = make_sentences(WORDS, 100, seed=10)
    teacher = bag_of_words_teacher(sentences, WORDS, dim=8)
    result = refine_by_distillation(model, sentences, teacher, steps=5000, batch_size=64, validation_size=64)
    assert result.steps == EPOCHS_WITHOUT_VALIDATION * 2  # 100 items in batches of 64: two steps per pass
    assert "instead of 5000" in caplog.text


def test_the_validation_split_scales_down_to_a_tenth_when_it_would_outweigh_training():
    from st_static.training.datasets import plan_split

    assert plan_split(100_000, 128, 4096, "big") == (128, 4096)
    assert plan_split(5_000, 128, 4096, "mid") == (128, 384)  # a tenth (500) in whole batches
    assert plan_split(300, 128, 4096, "small") == (128, 0)
    assert plan_split(50, 128, 4096, "tiny") == (50, 0)  # fewer items than a batch: one smaller batch


def test_a_bare_static_embedding_model_is_converted_in_place(tmp_path):
    make_model(WORDS).save_pretrained(str(tmp_path / "model"))
    model = SentenceTransformer(str(tmp_path / "model"), device="cpu")
    assert not isinstance(model[0], StaticWordAverage)
    sentences = make_sentences(WORDS, 96, seed=11)
    result = refine_by_distillation(
        model, sentences, bag_of_words_teacher(sentences, WORDS, dim=8), steps=2, batch_size=32, validation_size=32
    )
    assert isinstance(model[0], StaticWordAverage)
    assert model[0].metadata.stages == ["distillation"]
    assert result.steps == 2


def test_a_common_offset_in_the_teacher_does_not_change_distillation_when_centred():
    words = make_words("w", 40)
    sentences = make_sentences(words, 192, seed=5)
    teacher = bag_of_words_teacher(sentences, words, dim=12)
    offset = teacher + 25.0  # a strongly anisotropic version of the same teacher
    results = []
    for targets in (teacher, offset):
        model = make_model(words)
        refine_by_distillation(model, sentences, targets, steps=8, batch_size=32, validation_size=64, eval_steps=4)
        results.append(model[0].word_vectors.detach().clone())
    torch.testing.assert_close(results[0], results[1], atol=1e-5, rtol=1e-4)


def test_refinement_keeps_the_fallback_rows_and_refreshes_the_empty_text_dense(tmp_path):
    # Training grows the largest row (the empty text's Dense scales by it) and the propagation to untrained rows
    # would map the fallback rows; sentence-transformers' own save must still write a Dense that load_model takes.
    model = attach_empty_text_dense(
        SentenceTransformer(modules=[with_fallback(make_model(WORDS)[0]), Normalize()], device="cpu")
    )
    module = model[0]
    fallback_rows = module.word_vectors[module.fallback_start :].detach().clone()
    scale_before = float(empty_text_dense(model).linear.weight[0, 0])
    sentences = make_sentences(WORDS, 256, seed=3)
    refine_by_distillation(
        model,
        sentences,
        bag_of_words_teacher(sentences, WORDS, dim=20),
        steps=20,
        batch_size=32,
        learning_rate=0.5,
        validation_size=64,
        eval_steps=10,
        patience=None,
        propagate_to_untrained=True,
    )
    assert torch.equal(module.word_vectors[module.fallback_start :], fallback_rows)
    fresh = empty_text_dense(model)
    assert float(fresh.linear.weight[0, 0]) != scale_before  # the largest row crossed a power of two
    (held,) = [later for later in model if is_empty_text_dense(later)]
    assert torch.equal(held.linear.weight, fresh.linear.weight) and torch.equal(held.linear.bias, fresh.linear.bias)

    model.save_pretrained(str(tmp_path / "model"))
    loaded = st_static.load_model(tmp_path / "model")
    texts = ["", f"{WORDS[0]} {WORDS[1]}"]
    np.testing.assert_allclose(loaded.encode(texts), model.encode(texts), atol=1e-6)
