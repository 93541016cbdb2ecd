"""Training and validation datasets of the refinement: sentences with teacher embeddings, or translation pairs.

Each builder checks its data, holds out a validation split sized to the data (``validation_size`` in whole batches;
a tenth of the items when that would leave less for training; none, with a warning, when even that is less than
a batch) and returns
``datasets.Dataset`` objects in the column layout the losses expect.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from st_static.model.static_word_average import check_texts
from st_static.tensors import to_numpy

logger = logging.getLogger(__name__)

MIN_VALIDATION_SHARE = 10
"""Small data sets hold out ``1 / MIN_VALIDATION_SHARE`` of their items for validation."""


@dataclass
class SplitData:
    """The datasets of one kind of data: training, validation (``None`` when the data is too small to split)."""

    train: Any
    validation: Any | None
    batch_size: int


def split_indices(num_items: int, validation_size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The shuffled ``(train, validation)`` index split.

    Args:
        num_items: Number of sentences (or translation pairs).
        validation_size: Items held out; the rest, in shuffled order, are for training.
        seed: Seed of the shuffle.
    """
    order = np.random.default_rng(seed).permutation(num_items)
    return order[validation_size:], order[:validation_size]


def plan_split(num_items: int, batch_size: int, validation_size: int, name: str) -> tuple[int, int]:
    """``(batch_size, validation_size)`` fitted to ``num_items``: ``validation_size`` in whole batches while the
    training part stays the larger one, else a tenth of the data (none when that is less than one batch), and a
    batch no larger than the training data.

    Raises:
        ValueError: If there are fewer than two items (nothing to compare within a batch).
    """
    if num_items < 2:
        raise ValueError(f"{name}: {num_items} item(s); refinement compares items within a batch and needs at least 2.")
    held_out = validation_size - validation_size % batch_size
    if num_items - held_out < held_out:  # small data: hold out a tenth instead
        held_out = min(held_out, num_items // MIN_VALIDATION_SHARE)
        held_out -= held_out % batch_size
    if held_out < batch_size:
        logger.warning(
            "%s: %d items are too few for a validation split of whole batches of %d; training for all steps "
            "without early stopping.",
            name,
            num_items,
            batch_size,
        )
        held_out = 0
    if num_items - held_out < batch_size:
        logger.warning(
            "%s: %d items, fewer than one batch of %d; batches of %d instead.", name, num_items, batch_size, num_items
        )
        batch_size = num_items - held_out
    return batch_size, held_out


def check_teacher_embeddings(teacher_embeddings: np.ndarray | torch.Tensor, num_sentences: int) -> np.ndarray:
    """The teacher embeddings as a finite float32 matrix with one row per sentence."""
    if torch.is_tensor(teacher_embeddings):
        teacher_embeddings = to_numpy(teacher_embeddings)
    teacher = np.asarray(teacher_embeddings)
    if teacher.ndim != 2 or teacher.shape[0] != num_sentences:
        raise ValueError(
            f"teacher_embeddings must have shape (len(sentences), teacher_dim) = ({num_sentences}, ...), "
            f"got {teacher.shape}."
        )
    if teacher.shape[1] < 1 or not np.issubdtype(teacher.dtype, np.floating):
        raise ValueError(f"teacher_embeddings must be a float matrix with columns, got dtype {teacher.dtype}.")
    teacher = teacher.astype(np.float32, copy=False)
    if not np.isfinite(teacher).all():
        raise ValueError("teacher_embeddings contains NaN or infinite values.")
    return teacher


def distillation_datasets(
    sentences: Sequence[str],
    teacher_embeddings: np.ndarray | torch.Tensor,
    *,
    student_dim: int,
    batch_size: int,
    validation_size: int,
    seed: int,
    center_teacher: bool,
    matryoshka_dims: Sequence[int] | None,
) -> SplitData:
    """Shuffled datasets of ``(sentence, teacher embedding)`` for the distillation loss.

    Centring (``center_teacher``) subtracts the teacher embeddings' mean (see
    :func:`st_static.training.refine_by_distillation`).
    """
    from datasets import Dataset

    sentences = check_texts(sentences)
    teacher = check_teacher_embeddings(teacher_embeddings, len(sentences))
    if center_teacher:
        teacher = teacher - teacher.mean(axis=0, dtype=np.float64).astype(teacher.dtype)
    batch_size, held_out = plan_split(len(sentences), batch_size, validation_size, "distillation")
    if matryoshka_dims and teacher.shape[1] in {*matryoshka_dims, student_dim}:
        # MatryoshkaLoss truncates labels as wide as the student; a zero column keeps the teacher's cosines.
        teacher = np.pad(teacher, ((0, 0), (0, 1)))
    train, validation = split_indices(len(sentences), held_out, seed)

    def dataset(indices: np.ndarray) -> Any:
        data = Dataset.from_dict({"sentence": [sentences[i] for i in indices], "label": teacher[indices]})
        # Labels as tensors: the collator stacks them instead of building a tensor from nested lists.
        return data.with_format("torch", columns=["label"], output_all_columns=True)

    return SplitData(dataset(train), dataset(validation) if held_out else None, batch_size)


def pair_name(languages: object) -> str:
    """``"en-de"`` for the key ``("en", "de")`` of a translation-pair dict."""
    if (
        not isinstance(languages, tuple)
        or len(languages) != 2
        or not all(isinstance(language, str) and language for language in languages)
    ):
        raise TypeError(f"Each key of pairs must be a (language1, language2) tuple of two codes, got {languages!r}.")
    return f"{languages[0]}-{languages[1]}"


def check_translation_pairs(language_pairs: object, name: str) -> tuple[list[str], list[str]]:
    """The two sides of the translation pairs, keeping only the first pair a sentence (of either side) occurs in."""
    if isinstance(language_pairs, str | bytes) or not isinstance(language_pairs, Sequence):
        raise TypeError(
            f"{name}: expected a sequence of (sentence1, sentence2) pairs, got {type(language_pairs).__name__}."
        )
    first, second = [], []
    seen_first, seen_second = set(), set()
    for index, pair in enumerate(language_pairs):
        if not isinstance(pair, tuple | list) or len(pair) != 2 or not all(isinstance(text, str) for text in pair):
            raise TypeError(f"{name}: item {index} is not a (str, str) pair: {pair!r:.80}.")
        if pair[0] in seen_first or pair[1] in seen_second:
            continue
        seen_first.add(pair[0])
        seen_second.add(pair[1])
        first.append(pair[0])
        second.append(pair[1])
    if len(first) < len(language_pairs):
        logger.info(
            "%s: kept %d of %d translation pairs (repeated sentences dropped).", name, len(first), len(language_pairs)
        )
    return first, second


def translation_datasets(
    language_pairs: Sequence[tuple[str, str]],
    name: str,
    *,
    batch_size: int,
    validation_size: int,
    seed: int,
    training_only: Sequence[tuple[str, str]] | None = None,
) -> tuple[SplitData, int]:
    """Datasets of ``(sentence1, sentence2)`` translation pairs of one language pair.

    ``training_only`` pairs (e.g. a dictionary) join the training split only. One is skipped when its first sentence
    is in the validation split or its second sentence is in ``language_pairs`` or an earlier training-only pair; it may
    give a training pair's first sentence another translation (e.g. the same Chinese in the other script). Returns the
    datasets and the number of training-only pairs kept.
    """
    from datasets import Dataset

    first, second = check_translation_pairs(language_pairs, name)
    batch_size, held_out = plan_split(len(first), batch_size, validation_size, name)
    train, validation = split_indices(len(first), held_out, seed)
    train_first, train_second = [first[i] for i in train], [second[i] for i in train]
    kept = 0
    if training_only:
        extra_first, extra_second = check_translation_pairs(training_only, f"{name} (training only)")
        held_out_first, seen_second = {first[i] for i in validation}, set(second)
        for one, two in zip(extra_first, extra_second, strict=True):
            if one not in held_out_first and two not in seen_second:
                train_first.append(one)
                train_second.append(two)
                seen_second.add(two)
                kept += 1
    train_data = Dataset.from_dict({"sentence1": train_first, "sentence2": train_second})
    validation_data = (
        Dataset.from_dict({"sentence1": [first[i] for i in validation], "sentence2": [second[i] for i in validation]})
        if held_out
        else None
    )
    return SplitData(train_data, validation_data, batch_size), kept
