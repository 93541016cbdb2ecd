"""Refinement entry points: train a static model's table with the losses its settings name."""

from __future__ import annotations

import dataclasses
import logging
import math
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import StaticEmbedding

from st_static.losses.registry import make_loss, registered_loss
from st_static.model.empty_text import attach_empty_text_dense
from st_static.model.static_word_average import StaticWordAverage
from st_static.settings import RefinementSettings
from st_static.tensors import to_numpy
from st_static.training.datasets import SplitData, distillation_datasets, pair_name, translation_datasets
from st_static.training.propagation import propagate_refinement
from st_static.training.records import TrainingResult
from st_static.training.sampler import batches_per_round

if TYPE_CHECKING:
    from torch import nn

logger = logging.getLogger(__name__)

TranslationPairs = dict[tuple[str, str], Sequence[tuple[str, str]]]
"""``{(language1, language2): [(sentence1, sentence2), ...]}``."""


def require_train_extra() -> None:
    """Raise an ``ImportError`` naming the extra if the training dependencies are missing."""
    try:
        import accelerate  # noqa: F401
        import datasets  # noqa: F401
    except ImportError as error:
        raise ImportError(
            f'Refinement needs the "train" extra ({error.name}): pip install "st-static[train]"'
        ) from error


def trainable_module(model: SentenceTransformer) -> StaticWordAverage:
    """The model's :class:`StaticWordAverage`, converting a bare ``StaticEmbedding`` first module in place.

    Raises:
        TypeError: If ``model`` is not a ``SentenceTransformer`` starting with a static embedding module.
    """
    if not isinstance(model, SentenceTransformer) or len(model) == 0:
        raise TypeError(f"Expected a static SentenceTransformer model, got {type(model).__name__}.")
    first = model[0]
    if isinstance(first, StaticWordAverage):
        return first
    if isinstance(first, StaticEmbedding):
        converted = StaticWordAverage.from_static_embedding(first).to(first.embedding.weight.device)
        model._modules[next(iter(model._modules))] = converted
        return converted
    raise TypeError(f"Expected a static model (StaticWordAverage first), got a first module {type(first).__name__}.")


def loss_names(settings: RefinementSettings, crosslingual: bool) -> list[str]:
    """The losses a refinement trains with: ``settings.loss`` (``auto``: contrastive across languages, else
    distillation), plus distillation for a cross-lingual table with ``crosslingual_distillation``."""
    main = settings.loss if settings.loss != "auto" else ("contrastive" if crosslingual else "distillation")
    names = [main]
    if crosslingual and settings.crosslingual_distillation and main != "distillation":
        names.append("distillation")
    return names


def refine(
    model: SentenceTransformer,
    settings: RefinementSettings,
    *,
    sentences: Sequence[str] | None = None,
    teacher_embeddings: np.ndarray | torch.Tensor | None = None,
    teacher_loss_arguments: Mapping[str, Any] | None = None,
    pairs: TranslationPairs | None = None,
    training_only_pairs: TranslationPairs | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    device: str | None = None,
) -> TrainingResult:
    """Refine ``model``'s table with the losses of :func:`loss_names` on the data each one trains on.

    A ``teacher_embeddings`` loss trains on ``sentences`` with their teacher embeddings (constructed with
    ``teacher_loss_arguments`` as well, e.g. ``teacher_dims`` and ``teacher_weights`` when the embeddings are several
    teachers' side by side); a ``translation_pairs`` loss on one dataset per language pair of ``pairs``. With
    several datasets, batches come from each in turn (round robin; ``language_weights`` batches of a language's
    pairs per round, one of the others), so the objective is the (so weighted) sum of their losses; the validation
    loss is their plain sum. Under ``torchrun`` every process trains its share of the batches (DDP through
    the trainer); ``device="cpu"`` keeps training on the CPU when a GPU is present.

    Raises:
        ValueError: If a loss's data is missing or too small, or a setting is out of range.
        TypeError: If the data is not shaped as described or the model is not a static model.
    """
    require_train_extra()
    from datasets import DatasetDict

    module = trainable_module(model)
    names = loss_names(settings, crosslingual=pairs is not None)
    splits: dict[str, SplitData] = {}
    losses: dict[str, nn.Module] = {}
    record: dict[str, Any] = {}
    for name in names:
        entry = registered_loss(name)
        arguments = teacher_loss_arguments if entry.data == "teacher_embeddings" else None
        loss = make_loss(name, model, settings, arguments)
        if entry.data == "teacher_embeddings":
            if sentences is None or teacher_embeddings is None:
                raise ValueError(f"The {name} loss trains on sentences with teacher embeddings; none were given.")
            splits[name] = distillation_datasets(
                sentences,
                teacher_embeddings,
                student_dim=module.embedding_dim,
                batch_size=settings.batch_size,
                validation_size=settings.validation_size,
                seed=settings.seed,
                center_teacher=settings.center_teacher,
                matryoshka_dims=settings.matryoshka_dims,
            )
            losses[name] = loss
            record["center_teacher"] = settings.center_teacher
            record.update(teacher_loss_arguments or {})
        else:
            if not isinstance(pairs, dict) or not pairs:
                raise TypeError(
                    "pairs must be a non-empty dict {(language1, language2): [(sentence1, sentence2), ...]}."
                )
            extra = {pair_name(key): value for key, value in (training_only_pairs or {}).items()}
            for languages, language_pairs in pairs.items():
                pair = pair_name(languages)
                if pair in splits:
                    raise ValueError(f"The language pair {pair} is given twice.")
                splits[pair], kept = translation_datasets(
                    language_pairs,
                    pair,
                    batch_size=settings.batch_size,
                    validation_size=settings.validation_size,
                    seed=settings.seed,
                    training_only=extra.get(pair),
                )
                losses[pair] = loss
                if kept:
                    record.setdefault("training_only_pairs", {})[pair] = kept
            record["language_pairs"] = list(pairs and [pair_name(key) for key in pairs])
    batch_size = min(split.batch_size for split in splits.values())
    validate = all(split.validation is not None for split in splits.values())
    several = len(splits) > 1
    train = DatasetDict({name: split.train for name, split in splits.items()}) if several else _only(splits).train
    validation = None
    if validate:
        validation = (
            DatasetDict({name: split.validation for name, split in splits.items()})
            if several
            else _only(splits).validation
        )
    record = {
        **dataclasses.asdict(settings),
        "loss": " + ".join(type(_unwrapped(losses[name])).__name__ for name in _distinct_losses(splits, losses)),
        "batch_size": batch_size,
        "validation_size": len(_only(splits).validation) if validate else 0,
        "train_size": {name: len(split.train) for name, split in splits.items()} if several else len(train),
        **record,
    }
    train_sizes = {name: len(split.train) for name, split in splits.items()}
    record["steps"] = _step_budget(settings, train_sizes, batch_size, validate)
    paired = {pair_name(languages): languages[1] for languages in pairs or {}}
    rounds = batches_per_round(list(splits), paired, settings.language_weights) if several else {}
    if any(count != 1 for count in rounds.values()):
        _check_whole_rounds(rounds, train_sizes, batch_size, paired)
        record["batches_per_round"] = rounds
    stage = (
        "contrastive" if any(registered_loss(name).data == "translation_pairs" for name in names) else "distillation"
    )
    # the words and the pieces: the fallback rows never train and keep their tiny scale (no map carries them)
    trained_rows = module.fallback_start
    before = to_numpy(module.word_vectors[:trained_rows]).copy() if settings.propagate_to_untrained else None
    try:
        result = _train(
            model,
            module,
            train,
            validation,
            losses if several else _only(losses),
            record,
            stage,
            output_dir,
            settings,
            device,
            rounds,
        )
        if before is not None:
            table, mapped = propagate_refinement(before, to_numpy(module.word_vectors[:trained_rows]))
            with torch.no_grad():
                module.word_vectors[:trained_rows] = torch.from_numpy(table).to(module.word_vectors.device)
            module.sync_token_rows()
            module.metadata.training.propagated_rows = mapped
    finally:
        _refresh_empty_text_dense(model, module)
    return result


def _check_whole_rounds(
    rounds: dict[str, int], train_sizes: dict[str, int], batch_size: int, paired: dict[str, str]
) -> None:
    """Refuse a language weight larger than the batches its pairs make: an epoch would hold no whole round."""
    for name, count in rounds.items():
        batches = train_sizes[name] // batch_size
        if batches < count:
            raise ValueError(
                f"language_weights gives {paired.get(name, name)} {count} batches per round, but its training pairs "
                f"make {batches} batches of {batch_size}: lower its weight to {max(batches, 1)} or less, or give it "
                "more pairs."
            )


def _refresh_empty_text_dense(model: SentenceTransformer, module: StaticWordAverage) -> None:
    """Give a table with fallback rows a fresh empty text's ``Dense``: its scale follows the largest row, which
    training moves, so the one the model held is stale (sentence-transformers' ``save_pretrained`` writes it)."""
    if module.fallback is not None:
        attach_empty_text_dense(model)


def _train(
    model: SentenceTransformer,
    module: StaticWordAverage,
    train: Any,
    validation: Any,
    loss: Any,
    record: dict[str, Any],
    stage: str,
    output_dir: str | os.PathLike[str] | None,
    settings: RefinementSettings,
    device: str | None,
    rounds: dict[str, int],
) -> TrainingResult:
    from st_static.training.trainer import train_table

    return train_table(
        model,
        module,
        train,
        validation,
        loss,
        record,
        stage=stage,
        output_dir=output_dir,
        num_threads=settings.num_threads,
        device=device,
        batches_per_round=rounds,
    )


EPOCHS_WITHOUT_VALIDATION = 100
"""Most passes over the training data when it is too small for a validation split (no early stopping can act)."""


def _step_budget(settings: RefinementSettings, train_sizes: dict[str, int], batch_size: int, validate: bool) -> int:
    """``settings.steps``; without a validation split, at most :data:`EPOCHS_WITHOUT_VALIDATION` passes."""
    batches_per_epoch = sum(math.ceil(size / batch_size) for size in train_sizes.values())
    budget = max(1, EPOCHS_WITHOUT_VALIDATION * batches_per_epoch)
    if validate or budget >= settings.steps:
        return settings.steps
    logger.warning(
        "Training for %d steps (%d passes over %s items) instead of %d: with no validation split to stop early, "
        "more passes over so little data only overfit it.",
        budget,
        EPOCHS_WITHOUT_VALIDATION,
        f"{sum(train_sizes.values()):,}",
        settings.steps,
    )
    return budget


def _only(items: dict[str, Any]) -> Any:
    return next(iter(items.values()))


def _unwrapped(loss: Any) -> Any:
    return getattr(loss, "loss", loss)  # MatryoshkaLoss keeps the wrapped loss as .loss


def _distinct_losses(splits: dict[str, SplitData], losses: dict[str, Any]) -> list[str]:
    """One dataset name per distinct loss object, in order (language pairs share one contrastive loss)."""
    seen: set[int] = set()
    chosen = []
    for name in splits:
        if id(losses[name]) not in seen:
            seen.add(id(losses[name]))
            chosen.append(name)
    return chosen


def _settings(settings: RefinementSettings | None, **overrides: Any) -> RefinementSettings:
    try:
        return dataclasses.replace(settings or RefinementSettings(), **overrides)
    except TypeError as error:
        raise TypeError(f"{error}; the keyword arguments are the fields of RefinementSettings.") from error


def refine_by_distillation(
    model: SentenceTransformer,
    sentences: Sequence[str],
    teacher_embeddings: np.ndarray | torch.Tensor,
    settings: RefinementSettings | None = None,
    *,
    output_dir: str | os.PathLike[str] | None = None,
    **overrides: Any,
) -> TrainingResult:
    """Refine a static model by similarity distillation from precomputed teacher sentence embeddings.

    The teacher's embeddings are centred (their mean over ``teacher_embeddings`` subtracted) before their cosine
    similarities are taken: many teachers are strongly anisotropic (multilingual-e5-small: in-batch cosines
    0.78 +- 0.03), which at the paper's temperature makes every teacher distribution nearly flat, and matching
    flat distributions squeezes the student's similarities together (STS-B test 67 -> 36 for e5 here; with
    centring 67 -> 73). For a near-isotropic teacher the centring changes little.

    The sentences are shuffled; ``validation_size`` of them (whole batches, scaled down for small data) are held
    out for the validation loss, evaluated before training and every ``eval_steps`` steps. The model ends up
    holding the table with the lowest validation loss. Only the table trains.

    Args:
        model: A static model whose first module is a :class:`~st_static.StaticWordAverage` (a bare
            ``StaticEmbedding`` is converted in place). Refined in place.
        sentences: The training sentences (the paper samples them from the extraction corpus; short ones work best).
        teacher_embeddings: ``(len(sentences), teacher_dim)`` teacher sentence embeddings of ``sentences``.
        settings: The refinement settings (:class:`~st_static.settings.RefinementSettings`; its defaults follow
            the paper). ``settings.loss`` ``auto`` means the distillation loss.
        output_dir: If given, the folder that receives ``training_history.json`` and ``training_curve.png``.
        **overrides: Fields of the settings to change, e.g. ``steps=2000, batch_size=64``.

    Returns:
        The run's :class:`TrainingResult`.
    """
    return refine(
        model,
        _settings(settings, **overrides),
        sentences=sentences,
        teacher_embeddings=teacher_embeddings,
        output_dir=output_dir,
    )


def refine_by_translation(
    model: SentenceTransformer,
    pairs: TranslationPairs,
    settings: RefinementSettings | None = None,
    *,
    distillation: tuple[Sequence[str], np.ndarray | torch.Tensor] | None = None,
    training_only_pairs: TranslationPairs | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    **overrides: Any,
) -> TrainingResult:
    """Refine a cross-lingual static model with the bilingual contrastive loss on translation pairs.

    Every batch holds ``batch_size`` translation pairs of *one* language pair. With several language pairs, the
    trainer's multi-dataset training takes batches from the pairs in turn (round robin), so each pair gets the
    same number of steps (a language of ``language_weights``: that many times as many) and the training objective
    is the sum of the pairs' losses, as the paper suggests for more than two languages; the validation loss is the
    sum of the pairs' validation losses. Within a language
    pair, a sentence that occurs in several translation pairs is kept in the first of them only, so that no batch
    holds a sentence twice (it would be its own negative) and no sentence is both trained and validated on.

    Args:
        model: A static model whose first module is a :class:`~st_static.StaticWordAverage`. Refined in place.
        pairs: ``{(language1, language2): [(sentence1, sentence2), ...]}``, e.g. ``{("en", "de"): en_de_pairs}``.
        settings: The refinement settings; ``validation_size`` is per language pair.
        distillation: Optional ``(sentences, teacher_embeddings)``: a ``"distillation"`` dataset trained with
            :class:`~st_static.losses.SimilarityDistillationLoss` in turn with the language pairs, so the table
            keeps the teacher's similarity structure within each language while translations are pulled
            together (its validation loss is part of the sum).
        training_only_pairs: More pairs per language pair (e.g. a bilingual dictionary) added to the training
            split only, so the validation loss stays on ``pairs``: held-out dictionary words would have rows
            that no training pair reaches, and their loss could not fall. Pairs sharing a sentence with
            ``pairs`` are skipped.
        output_dir: If given, the folder that receives ``training_history.json`` and ``training_curve.png``.
        **overrides: Fields of the settings to change.

    Returns:
        The run's :class:`TrainingResult`; its history lists each dataset's loss in ``components``.
    """
    chosen = _settings(settings, **overrides)
    if distillation is not None:
        chosen = dataclasses.replace(chosen, crosslingual_distillation=True)
    sentences, teacher_embeddings = distillation if distillation is not None else (None, None)
    return refine(
        model,
        chosen,
        sentences=sentences,
        teacher_embeddings=teacher_embeddings,
        pairs=pairs,
        training_only_pairs=training_only_pairs,
        output_dir=output_dir,
    )
