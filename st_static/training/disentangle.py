"""The disentangler (Nonomura et al.) after a frozen model: its meaning map trained on translation pairs.

Every text of the pairs is encoded once by the frozen model (unit vectors: a static table's normalised output, its
pieces and fallback rows read as at inference), and sentence-transformers' trainer trains a
:class:`~st_static.model.meaning_map.MeaningMap` after a look-up of those vectors
(:class:`~st_static.training.precomputed.PrecomputedEmbeddings`) with :class:`~st_static.losses.LanguageBiasLoss`:
Adam at 1e-4, batches of 512 pairs of one language pair (languages mixed over an epoch, in proportion to their
pairs), gradients clipped to norm 1 (the language part starts at zero, where its cosines' gradients are unbounded),
10% of each language's pairs held out, the validation loss evaluated before training and after every epoch, training
stopped after ``patience`` epochs without a lower one, and the best map kept: the paper's settings.
:func:`st_static.training.fold_meaning_map` folds the map into a static table.

A batch never holds a text twice (``j`` would be the text itself): :func:`split_pairs` keeps each sentence of a
language pair in one pair only, which is what ``BatchSamplers.NO_DUPLICATES`` guarantees, without that sampler's
check of every row every epoch (1.6 ms a row on the 2-core machine: minutes an epoch for 100,000 pairs; its hashed
variant hashes the validation split again at every evaluation).
"""

from __future__ import annotations

import logging
import math
import os
import random
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from transformers import TrainerControl, TrainerState, TrainingArguments

from st_static.errors import StStaticError
from st_static.losses.language_bias import CONSTRAINTS, LanguageBiasLoss, constraint_weights
from st_static.model.meaning_map import MeaningMap
from st_static.model.metadata import MeaningMapRecord
from st_static.settings import DISENTANGLE_MAX_EPOCHS
from st_static.training.callbacks import BestTableCallback
from st_static.training.precomputed import PrecomputedEmbeddings
from st_static.training.progress import use_refinement_progress

if TYPE_CHECKING:
    from st_static.extraction.pair_sources import SourceFilter

logger = logging.getLogger(__name__)

MIN_PAIRS = 300
"""The fewest translation pairs per language the disentangler trains on (a tenth of them validate)."""
DEFAULT_MAX_EPOCHS = DISENTANGLE_MAX_EPOCHS
"""Most epochs (early stopping ends most runs sooner)."""

TranslationPairs = Mapping[tuple[str, str], Sequence[tuple[str, str]]]
"""``{(pivot, other): [(pivot sentence, its translation), ...]}``."""
Encoder = Callable[[list[str]], np.ndarray]
"""Texts -> ``(len(texts), dim)`` vectors (the frozen model)."""


class DisentangleError(StStaticError, ValueError):
    """The disentangler cannot run on these inputs (too few pairs, a model that is not a cross-lingual table, ...)."""


@dataclass
class MeaningMapResult:
    """What training the meaning map did; ``meaning_map`` holds the map of the lowest validation loss."""

    meaning_map: MeaningMap
    constraints: str
    language_weight: float
    languages: list[str]
    """The languages of the pairs, the pivot first."""
    train_pairs: int
    validation_pairs: int
    epochs: int
    best_epoch: int
    """The epoch of the kept map (0: the identity, before training)."""
    best_validation_loss: float
    steps: int
    train_seconds: float
    history: list[tuple[float, float]] = field(default_factory=list)
    """``(epoch, validation loss)`` of every evaluation, the first before training."""

    def record(self, files: Sequence[str] | None = None) -> MeaningMapRecord:
        """The metadata record of this run (``files``: the pair files' names, never their paths)."""
        return MeaningMapRecord(
            constraints=self.constraints,
            language_weight=self.language_weight,
            languages=list(self.languages),
            files=list(files) if files else None,
            pairs=self.train_pairs,
            validation_pairs=self.validation_pairs,
            epochs=self.epochs,
            best_epoch=self.best_epoch,
            best_validation_loss=self.best_validation_loss if math.isfinite(self.best_validation_loss) else None,
        )


class _BestMapCallback(BestTableCallback):
    """:class:`BestTableCallback` for the map: keeps its best weights and the epoch of every evaluation."""

    def __init__(self, meaning_map: MeaningMap, patience: int, dataset_names: Sequence[str] | None) -> None:
        super().__init__(meaning_map, patience, dataset_names)  # type: ignore[arg-type]
        self.epochs: list[float] = []

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        evaluations = len(self.history)
        super().on_evaluate(args, state, control, **kwargs)
        if len(self.history) > evaluations:
            self.epochs.append(float(state.epoch or 0.0))

    def snapshot(self) -> dict[str, torch.Tensor]:
        return {name: tensor.detach().clone() for name, tensor in self.module.state_dict().items()}

    def restore_best_table(self) -> None:
        if self.best_table is not None:
            self.module.load_state_dict(self.best_table)


def read_disentangle_pairs(
    files: Mapping[str, Sequence[str | os.PathLike[str]]],
    pivot: str,
    source_filter: SourceFilter | None = None,
    min_pairs: int = MIN_PAIRS,
) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """The translation pairs of every language's files (``{language: [files]}``, pivot sentences first), read as a
    build reads them (:func:`st_static.extraction.pair_sources.read_pairs`, with its source filter).

    Raises:
        DisentangleError: If a language's files hold fewer than ``min_pairs`` pairs, naming them.
    """
    from st_static.extraction.pair_sources import read_language_pairs

    pairs = read_language_pairs(files, pivot, source_filter)
    for (_, language), read in pairs.items():
        if len(read) < min_pairs:
            names = ", ".join(Path(path).name for path in files[language])
            raise DisentangleError(
                f"{names} hold(s) {len(read):,} translation pair(s) for {pivot}-{language}; the disentangler needs at "
                f"least {min_pairs:,} per language ({min_pairs // 10:,} of them validate): give more pairs."
            )
    return pairs


def split_pairs(
    pairs: TranslationPairs, *, validation_share: float, max_pairs: int | None, seed: int, min_pairs: int = MIN_PAIRS
) -> dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]]:
    """``{"en-de": (train, validation)}``: each language pair's pairs without a repeated sentence (a pair whose
    sentence came before is left out), shuffled, at most its share of ``max_pairs``, ``validation_share`` held out.

    Raises:
        DisentangleError: If a language pair keeps fewer than ``min_pairs`` pairs, or a setting is out of range.
    """
    if not 0.0 < validation_share < 1.0:
        raise DisentangleError(f"validation_share must lie strictly between 0 and 1, got {validation_share!r}.")
    if max_pairs is not None and (isinstance(max_pairs, bool) or not isinstance(max_pairs, int) or max_pairs < 1):
        raise DisentangleError(f"max_pairs must be a positive integer, got {max_pairs!r}.")
    distinct = {languages: _distinct_pairs(language_pairs) for languages, language_pairs in pairs.items()}
    if not distinct:
        raise DisentangleError("The disentangler needs translation pairs; none were given.")
    total = sum(len(language_pairs) for language_pairs in distinct.values())
    splits = {}
    for languages, language_pairs in distinct.items():
        name = "-".join(languages)
        if len(language_pairs) < min_pairs:
            raise DisentangleError(
                f"{name} has {len(language_pairs):,} distinct translation pair(s); the disentangler needs at least "
                f"{min_pairs:,} per language pair."
            )
        chosen = list(language_pairs)
        random.Random(f"{seed}-{name}").shuffle(chosen)
        if max_pairs is not None:
            chosen = chosen[: max(min_pairs, round(max_pairs * len(language_pairs) / total))]
        held_out = max(1, round(validation_share * len(chosen)))
        splits[name] = (chosen[held_out:], chosen[:held_out])
    return splits


def _distinct_pairs(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    seen: set[str] = set()
    kept = []
    for first, second in pairs:
        if first in seen or second in seen or first == second:
            continue
        seen.update((first, second))
        kept.append((first, second))
    return kept


def frozen_encoder(model: SentenceTransformer, prompt: str | None = None, batch_size: int = 1024) -> Encoder:
    """The frozen model's normalised vectors of texts (``prompt`` prepended, e.g. ``"query: "`` for e5)."""

    def encode(texts: list[str]) -> np.ndarray:
        return model.encode(
            texts, prompt=prompt, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True
        ).astype(np.float32)

    return encode


def train_meaning_map(
    model: SentenceTransformer | Encoder,
    pairs: TranslationPairs,
    *,
    constraints: str = "both",
    language_weight: float = 1.0,
    batch_size: int = 512,
    learning_rate: float = 1e-4,
    max_epochs: int = DEFAULT_MAX_EPOCHS,
    patience: int = 3,
    validation_share: float = 0.1,
    max_pairs: int | None = None,
    seed: int = 0,
    prompt: str | None = None,
    min_pairs: int = MIN_PAIRS,
    device: str | None = None,
    num_threads: int | None = 1,
) -> MeaningMapResult:
    """Train a meaning map after the frozen ``model`` on translation pairs, with the paper's settings (module
    docstring); the result holds the map of the lowest validation loss.

    Args:
        model: The frozen model (a static table ending with ``Normalize``, or any Sentence Transformer), or a function
            giving its vectors of texts (e.g. cached teacher vectors). Its vectors are normalised before training.
        pairs: ``{(pivot, other): [(sentence, translation), ...]}``; every language pair trains in its own batches.
        constraints: ``intra``, ``inter`` or ``both`` (:class:`~st_static.losses.LanguageBiasLoss`).
        language_weight: The weight of ``L_lang`` in the intra-component constraints.
        batch_size: Pairs per batch (``K``).
        learning_rate: Adam's learning rate.
        max_epochs: Most epochs.
        patience: Epochs without a lower validation loss before training stops.
        validation_share: The share of each language pair's pairs held out for the validation loss.
        max_pairs: At most this many pairs in all (each language pair keeps its share), or ``None`` for all.
        seed: Seed of the split, the batch order and the trainer.
        prompt: Put before every text when ``model`` is a Sentence Transformer.
        min_pairs: The fewest distinct pairs a language pair may have.
        device: ``"cpu"`` keeps training on the CPU when there is a GPU.
        num_threads: Torch threads while training (restored afterwards; its small steps run fastest on one, and far
            faster than on several when the CPU is shared); ``None`` keeps torch's setting.

    Raises:
        DisentangleError: For too few pairs or a setting out of range.
    """
    from datasets import Dataset, DatasetDict
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers, MultiDatasetBatchSamplers

    check_disentangle_settings(
        constraints,
        language_weight,
        batch_size=batch_size,
        learning_rate=learning_rate,
        max_epochs=max_epochs,
        patience=patience,
    )
    splits = split_pairs(pairs, validation_share=validation_share, max_pairs=max_pairs, seed=seed, min_pairs=min_pairs)
    texts = list(dict.fromkeys(text for train, held in splits.values() for pair in train + held for text in pair))
    encode = frozen_encoder(model, prompt) if isinstance(model, SentenceTransformer) else model
    embeddings = np.asarray(encode(texts), dtype=np.float32)
    norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
    embeddings = embeddings / np.maximum(norms, 1e-12)
    dim = int(embeddings.shape[1])
    meaning_map = MeaningMap(dim)
    on_cpu = not torch.cuda.is_available() or str(device).startswith("cpu")
    trained = SentenceTransformer(
        modules=[PrecomputedEmbeddings(texts, embeddings), meaning_map], device="cpu" if on_cpu else device
    )

    def datasets(part: int) -> Any:
        columns = {name: list(zip(*split[part], strict=True)) for name, split in splits.items()}
        made = {
            name: Dataset.from_dict({"sentence1": list(firsts), "sentence2": list(seconds)})
            for name, (firsts, seconds) in columns.items()
        }
        return DatasetDict(made) if len(made) > 1 else next(iter(made.values()))

    loss = LanguageBiasLoss(trained, constraints=constraints, language_weight=language_weight)  # type: ignore[arg-type]
    callback = _BestMapCallback(meaning_map, patience, list(splits) if len(splits) > 1 else None)
    with tempfile.TemporaryDirectory(prefix="st-static-disentangle-") as scratch:
        args = SentenceTransformerTrainingArguments(
            output_dir=scratch,
            num_train_epochs=max_epochs,
            per_device_train_batch_size=batch_size,
            per_device_eval_batch_size=batch_size,
            learning_rate=learning_rate,
            lr_scheduler_type="constant",
            warmup_steps=0,
            weight_decay=0.0,  # AdamW without weight decay: Adam, as the paper
            max_grad_norm=1.0,
            eval_strategy="epoch",
            eval_on_start=True,
            logging_strategy="epoch",
            save_strategy="no",
            report_to="none",
            seed=seed,
            data_seed=seed,
            batch_sampler=BatchSamplers.BATCH_SAMPLER,  # no text occurs twice (split_pairs): see the module docstring
            multi_dataset_batch_sampler=MultiDatasetBatchSamplers.PROPORTIONAL,
            dataloader_drop_last=False,
            dataloader_pin_memory=False,
            use_cpu=on_cpu,
        )
        trainer = SentenceTransformerTrainer(
            model=trained,
            args=args,
            train_dataset=datasets(0),
            eval_dataset=datasets(1),
            loss=loss,
            callbacks=[callback],
        )
        use_refinement_progress(trainer, f"Disentangling ({constraints})", callback)
        previous_threads = torch.get_num_threads()
        started = time.perf_counter()
        try:
            if num_threads is not None:
                torch.set_num_threads(num_threads)
            output = trainer.train()
        finally:
            torch.set_num_threads(previous_threads)
            callback.restore_best_table()
        train_seconds = time.perf_counter() - started
    meaning_map.to("cpu").eval().requires_grad_(False)
    best_index = next(index for index, record in enumerate(callback.history) if record.step == callback.best_step)
    result = MeaningMapResult(
        meaning_map=meaning_map,
        constraints=constraints,
        language_weight=float(language_weight),
        languages=_languages(pairs),
        train_pairs=sum(len(train) for train, _ in splits.values()),
        validation_pairs=sum(len(held) for _, held in splits.values()),
        epochs=round(callback.epochs[-1]) if callback.epochs else 0,
        best_epoch=round(callback.epochs[best_index]),
        best_validation_loss=callback.best_loss,
        steps=int(output.global_step),
        train_seconds=train_seconds,
        history=[(epoch, record.loss) for epoch, record in zip(callback.epochs, callback.history, strict=True)],
    )
    logger.info(
        "Meaning map (%s): %d epochs, %d steps in %.1f s; best validation loss %.5f at epoch %d (%.5f before).",
        constraints,
        result.epochs,
        result.steps,
        train_seconds,
        result.best_validation_loss,
        result.best_epoch,
        result.history[0][1] if result.history else math.nan,
    )
    return result


def check_disentangle_settings(
    constraints: str,
    language_weight: float,
    *,
    batch_size: int = 512,
    learning_rate: float = 1e-4,
    max_epochs: int = DEFAULT_MAX_EPOCHS,
    patience: int = 3,
    names: Mapping[str, str] | None = None,
) -> None:
    """Refuse settings the disentangler cannot train with (before any work).

    Args:
        names: How messages name a setting (``{"language_weight": "--language-weight"}``); the argument's own name
            otherwise.

    Raises:
        DisentangleError: Naming the setting.
    """

    def named(setting: str) -> str:
        return (names or {}).get(setting, setting)

    try:
        constraint_weights(constraints)
    except ValueError:
        raise DisentangleError(
            f"{named('constraints')} must be one of {', '.join(CONSTRAINTS)}, got {constraints!r}."
        ) from None
    if (
        isinstance(language_weight, bool)
        or not isinstance(language_weight, int | float)
        or not 0 <= language_weight < math.inf
    ):
        raise DisentangleError(f"{named('language_weight')} must be a finite number >= 0, got {language_weight!r}.")
    for name, value, least in (("batch_size", batch_size, 2), ("max_epochs", max_epochs, 1), ("patience", patience, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise DisentangleError(f"{named(name)} must be an integer >= {least}, got {value!r}.")
    if isinstance(learning_rate, bool) or not isinstance(learning_rate, int | float) or not 0 < learning_rate < 1:
        raise DisentangleError(f"{named('learning_rate')} must lie between 0 and 1, got {learning_rate!r}.")


def _languages(pairs: TranslationPairs) -> list[str]:
    languages: list[str] = []
    for pair in pairs:
        languages.extend(language for language in pair if language not in languages)
    return languages
