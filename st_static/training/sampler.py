"""The order of the batches when a refinement trains on several datasets: a weighted round robin.

sentence-transformers' :class:`~sentence_transformers.base.sampler.RoundRobinBatchSampler` takes one batch of each
dataset in turn, so each language pair gets the same share of the steps whatever its size or difficulty: in a
table of 12 language pairs, each gets 1/12. :class:`WeightedRoundRobinBatchSampler` takes ``repeats[i]`` batches of
dataset ``i`` per round instead (all ones: the same batches in the same order as the plain round robin); like it,
an epoch ends when a dataset runs out of batches, and a round is never cut short.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import accumulate
from typing import Any

from sentence_transformers.base.sampler import RoundRobinBatchSampler


class WeightedRoundRobinBatchSampler(RoundRobinBatchSampler):
    """Yields ``repeats[i]`` batches of dataset ``i`` per round, the datasets in turn, until one runs out.

    Args:
        dataset: The concatenation of the datasets (``torch.utils.data.ConcatDataset``).
        batch_samplers: One batch sampler per dataset.
        generator: The generator the batch samplers shuffle with (seeded with ``seed`` + the epoch).
        seed: The seed.
        repeats: Batches of each dataset per round, in the order of ``dataset.datasets``: positive integers.

    Raises:
        ValueError: If ``repeats`` does not give one positive integer per dataset.
    """

    def __init__(
        self,
        dataset: Any,
        batch_samplers: list[Any],
        generator: Any = None,
        seed: int = 0,
        *,
        repeats: Sequence[int],
    ) -> None:
        super().__init__(dataset, batch_samplers, generator=generator, seed=seed)
        repeats = list(repeats)
        if len(repeats) != len(batch_samplers) or any(
            isinstance(count, bool) or not isinstance(count, int) or count < 1 for count in repeats
        ):
            raise ValueError(
                f"repeats must give one positive integer per dataset ({len(batch_samplers)}), got {repeats!r}."
            )
        self.repeats = repeats

    def __iter__(self) -> Iterator[list[int]]:
        if self.generator and self.seed is not None:
            self.generator.manual_seed(self.seed + self.epoch)
        offsets = [0, *accumulate(len(part) for part in self.dataset.datasets)]
        batches = [iter(sampler) for sampler in self.batch_samplers]
        while True:
            round_of_batches: list[list[int]] = []
            for offset, source, count in zip(offsets, batches, self.repeats, strict=False):
                for _ in range(count):
                    batch = next(source, None)
                    if batch is None:
                        return
                    round_of_batches.append([index + offset for index in batch])
            yield from round_of_batches

    def __len__(self) -> int:
        """The batches of an epoch: whole rounds until the first dataset runs out."""
        rounds = min(len(sampler) // count for sampler, count in zip(self.batch_samplers, self.repeats, strict=True))
        return rounds * sum(self.repeats)


def batches_per_round(
    dataset_names: Sequence[str], paired_languages: Mapping[str, str], language_weights: Mapping[str, int] | None
) -> dict[str, int]:
    """Each dataset's batches per round: the weight of the language it pairs with the pivot (``paired_languages``:
    dataset name -> that language), else 1 (a dataset of no language pair, a language without a weight)."""
    weights = language_weights or {}
    return {name: weights.get(paired_languages.get(name, ""), 1) for name in dataset_names}


def weighted_round_robin(repeats: Sequence[int]) -> Callable[..., WeightedRoundRobinBatchSampler]:
    """The ``multi_dataset_batch_sampler`` argument of the trainer for ``repeats`` (it calls it with the dataset,
    the batch samplers, the generator and the seed)."""
    return functools.partial(WeightedRoundRobinBatchSampler, repeats=list(repeats))
