"""Training batches of sentences the teacher finds alike: harder in-batch comparisons for the distillation loss.

Random batches of a varied corpus hold few sentences close to each other, so the similarity distillation mostly
learns which sentences are *unrelated*. A share of the batches can instead be drawn from one neighbourhood of the
teacher's embedding space: the sentences are hashed by the signs of a few random projections of their teacher
embeddings (locality-sensitive hashing, new projections every epoch), sorted by hash and cut into batches, so a
batch holds sentences on one topic and the loss must rank near neighbours as the teacher does.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from sentence_transformers.base.sampler import DefaultBatchSampler


class TeacherNeighbourBatchSampler(DefaultBatchSampler):
    """Batches of which ``neighbour_share`` come from one teacher-embedding neighbourhood, the rest at random.

    Args:
        dataset: A dataset with a ``label`` column of teacher embeddings ``(num_sentences, teacher_dim)``.
        batch_size: Sentences per batch.
        drop_last: Drop the last incomplete batch.
        valid_label_columns: Accepted for the trainer's interface; the ``label`` column is always used.
        generator: Accepted for the trainer's interface; batches are drawn from ``seed`` and the epoch.
        seed: Seed of the shuffles and projections (combined with the epoch).
        neighbour_share: Share of the batches grouped by neighbourhood, in ``[0, 1]``.
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int,
        drop_last: bool,
        valid_label_columns: list[str] | None = None,
        generator: torch.Generator | None = None,
        seed: int = 0,
        *,
        neighbour_share: float,
    ) -> None:
        super().__init__(
            dataset,
            batch_size=batch_size,
            drop_last=drop_last,
            valid_label_columns=valid_label_columns,
            generator=generator,
            seed=seed,
        )
        if not 0.0 <= neighbour_share <= 1.0:
            raise ValueError(f"neighbour_share must lie in [0, 1], got {neighbour_share!r}.")
        self.neighbour_share = neighbour_share
        labels = np.asarray(dataset.with_format("numpy")["label"], dtype=np.float32)
        if labels.ndim != 2 or len(labels) != len(dataset):
            raise ValueError("TeacherNeighbourBatchSampler needs a 'label' column of teacher embeddings.")
        self.labels = labels

    def __len__(self) -> int:
        count = len(self.labels)
        return count // self.batch_size if self.drop_last else math.ceil(count / self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        rng = np.random.default_rng([self.seed, self.epoch])
        order = rng.permutation(len(self.labels))
        grouped_batches = round(self.neighbour_share * (len(order) // self.batch_size))
        grouped, rest = np.split(order, [grouped_batches * self.batch_size])
        if grouped_batches > 1:
            bits = math.ceil(math.log2(grouped_batches))
            projections = rng.standard_normal((self.labels.shape[1], bits)).astype(np.float32)
            codes = (self.labels[grouped] @ projections > 0) @ (1 << np.arange(bits))
            grouped = grouped[np.argsort(codes, kind="stable")]  # random order within a hash bucket
        batches = [chunk.tolist() for chunk in np.split(grouped, grouped_batches)] if grouped_batches else []
        batches += [rest[start : start + self.batch_size].tolist() for start in range(0, len(rest), self.batch_size)]
        if self.drop_last:
            batches = [batch for batch in batches if len(batch) == self.batch_size]
        for index in rng.permutation(len(batches)):
            yield batches[index]
