"""Refinement, step 3 of the method: train only the word table with the sentence-transformers trainer.

Monolingual models are refined by similarity distillation against precomputed teacher sentence embeddings
(:func:`refine_by_distillation`); cross-lingual ones by a contrastive loss on translation pairs
(:func:`refine_by_translation`; several language pairs take turns, one pair per batch, so the objective is the sum
of the pairs' losses). Both follow the paper: Adam at a learning rate of 1e-3, batches of 128, up to 30k steps,
early stopping on a held-out validation loss, and the table of the best validation step restored. The validation
loss is evaluated before training and every ``eval_steps`` steps; ``output_dir`` receives its history
(``training_history.json``) and a plot (``training_curve.png``).

Speed: a table of 150k x 256 is 38M parameters, and a dense Adam step reads and writes all of them and their two
moments (about 0.8 s per step on this project's CPU). Only the rows of the words in a batch get a gradient, so the
table is trained with sparse gradients (``nn.EmbeddingBag(sparse=True)``) and :class:`torch.optim.SparseAdam`,
which updates just those rows. This is *lazy* Adam, a small departure from the paper's dense Adam: a row's moments
decay, and the row moves, only in the steps where one of its words is in the batch. The best table is kept in
memory rather than in trainer checkpoints, which would write the table and both Adam moments to disk at every
improvement.
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import MatryoshkaLoss
from sentence_transformers.sentence_transformer.modules import StaticEmbedding
from torch import nn
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from st_static.files import write_file_atomically, write_text_atomically
from st_static.losses import BilingualContrastiveLoss, SimilarityDistillationLoss
from st_static.static_word_average import StaticWordAverage, check_texts

logger = logging.getLogger(__name__)

HISTORY_FILE_NAME = "training_history.json"
CURVE_FILE_NAME = "training_curve.png"


@dataclass(frozen=True)
class ValidationRecord:
    """The validation loss at one evaluation step.

    Attributes:
        step: The optimiser step (0 is the table before training).
        loss: The validation loss; for several language pairs, the sum of the pairs' losses.
        components: The loss of each language pair (``"en-de"`` -> loss); empty for a single dataset.
    """

    step: int
    loss: float
    components: dict[str, float] = field(default_factory=dict)


@dataclass
class TrainingResult:
    """What a refinement run did.

    Attributes:
        model: The refined model (the same object that was passed in), holding the best table.
        history: The validation loss of every evaluation, in order (the first is before training).
        best_step: The step whose table the model holds.
        best_validation_loss: The validation loss at ``best_step``.
        steps: Optimiser steps run.
        stopped_early: Whether training stopped because the validation loss stopped improving.
        train_seconds: Wall time of training, evaluations included.
        steps_per_second: ``steps / train_seconds``.
        output_dir: The folder holding the history and the training curve, if one was given.
    """

    model: SentenceTransformer
    history: list[ValidationRecord]
    best_step: int
    best_validation_loss: float
    steps: int
    stopped_early: bool
    train_seconds: float
    steps_per_second: float
    output_dir: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        """The run as JSON-serialisable data (without the model)."""
        return {
            "best_step": self.best_step,
            "best_validation_loss": self.best_validation_loss,
            "steps": self.steps,
            "stopped_early": self.stopped_early,
            "train_seconds": self.train_seconds,
            "steps_per_second": self.steps_per_second,
            "history": [asdict(record) for record in self.history],
        }


class BestTableCallback(TrainerCallback):
    """Track the validation loss, keep the best table in memory, stop after ``patience`` evaluations without
    improvement, and put the best table back when training ends.

    Args:
        module: The table being trained.
        patience: Evaluations without a lower validation loss before training stops; ``None`` never stops early.
        dataset_names: Names of the evaluation datasets when there are several (their losses are summed), or
            ``None`` for a single evaluation dataset.
    """

    def __init__(
        self, module: StaticWordAverage, patience: int | None, dataset_names: Sequence[str] | None = None
    ) -> None:
        self.module = module
        self.patience = patience
        if dataset_names is None:
            self.metric_names = {"eval_loss": ""}
        else:
            self.metric_names = {f"eval_{name}_loss": name for name in dataset_names}
        self.history: list[ValidationRecord] = []
        self.best_loss = math.inf
        self.best_step = 0
        self.best_table: torch.Tensor | None = None
        self.evaluations_without_improvement = 0
        self.stopped_early = False
        self._pending: dict[str, float] = {}

    def on_evaluate(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        metrics: dict[str, float] | None = None,
        **kwargs: Any,
    ) -> None:
        # With several evaluation datasets the trainer reports each one in its own call.
        for key, name in self.metric_names.items():
            if metrics and key in metrics:
                self._pending[name] = float(metrics[key])
        if len(self._pending) < len(self.metric_names):
            return
        components, self._pending = self._pending, {}
        loss = sum(components.values())
        self.history.append(ValidationRecord(state.global_step, loss, components if len(components) > 1 else {}))
        if loss < self.best_loss:
            self.best_loss = loss
            self.best_step = state.global_step
            self.best_table = self.module.word_vectors.detach().clone()
            self.evaluations_without_improvement = 0
            return
        if not math.isfinite(loss):
            logger.warning("The validation loss at step %d is %s.", state.global_step, loss)
        self.evaluations_without_improvement += 1
        if self.patience is not None and self.evaluations_without_improvement >= self.patience:
            logger.info(
                "Stopping at step %d: no lower validation loss in %d evaluations (best %.5f at step %d).",
                state.global_step,
                self.evaluations_without_improvement,
                self.best_loss,
                self.best_step,
            )
            self.stopped_early = True
            control.should_training_stop = True

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.restore_best_table()

    def restore_best_table(self) -> None:
        """Copy the best table seen back into the module (and its case-variant rows)."""
        if self.best_table is None:
            return
        with torch.no_grad():
            self.module.word_vectors.copy_(self.best_table)
        self.module.sync_token_rows()


def _require_train_extra() -> None:
    """Raise an ``ImportError`` naming the extra if the training dependencies are missing."""
    try:
        import accelerate  # noqa: F401
        import datasets  # noqa: F401
    except ImportError as error:
        raise ImportError(
            f'Refinement needs the "train" extra ({error.name}): pip install "st-static[train]"'
        ) from error


def _trainer_class() -> type:
    """The sentence-transformers trainer, computing the gradient norm it logs from sparse gradients too."""
    from sentence_transformers import SentenceTransformerTrainer

    class SparseTableTrainer(SentenceTransformerTrainer):
        # transformers logs the gradient norm every step through ``clip_grad_norm_``, which has no sparse kernel.
        def _get_grad_norm(self, model: nn.Module, grad_norm: Any = None) -> float | None:
            if grad_norm is not None:
                return grad_norm
            squares = []
            for parameter in model.parameters():
                if parameter.grad is None:
                    continue
                if parameter.grad.is_sparse:
                    # Coalesced in place: the optimiser's own coalesce() is then free.
                    parameter.grad = parameter.grad.coalesce()
                    squares.append(parameter.grad.values().float().square().sum())
                else:
                    squares.append(parameter.grad.float().square().sum())
            return torch.stack(squares).sum().sqrt().item() if squares else None

    return SparseTableTrainer


def refine_by_distillation(
    model: SentenceTransformer,
    sentences: Sequence[str],
    teacher_embeddings: np.ndarray | torch.Tensor,
    *,
    max_steps: int = 30000,
    batch_size: int = 128,
    learning_rate: float = 1e-3,
    temperature: float = 0.05,
    validation_size: int = 4096,
    eval_steps: int = 500,
    patience: int | None = 5,
    output_dir: str | os.PathLike[str] | None = None,
    matryoshka_dims: Sequence[int] | None = None,
    seed: int = 42,
    num_threads: int | None = 1,
    center_teacher: bool = True,
) -> TrainingResult:
    """Refine a static model by similarity distillation from precomputed teacher sentence embeddings.

    The teacher's embeddings are centred (their mean over ``teacher_embeddings`` subtracted) before their cosine
    similarities are taken: many teachers are strongly anisotropic (multilingual-e5-small: in-batch cosines
    0.78 +- 0.03), which at the paper's temperature makes every teacher distribution nearly flat, and matching
    flat distributions squeezes the student's similarities together (STS-B test 67 -> 36 for e5 here; with
    centring 67 -> 73). For a near-isotropic teacher the centring changes little.

    The sentences are shuffled; ``validation_size`` of them (rounded down to whole batches) are held out for the
    validation loss, evaluated before training and every ``eval_steps`` steps. The model ends up holding the
    table with the lowest validation loss. Only the table trains.

    Args:
        model: A static model whose first module is a :class:`~st_static.StaticWordAverage` (a bare
            ``StaticEmbedding`` is converted in place). Refined in place.
        sentences: The training sentences (the paper samples them from the extraction corpus; short ones work best).
        teacher_embeddings: ``(len(sentences), teacher_dim)`` teacher sentence embeddings of ``sentences``.
        max_steps: Most optimiser steps.
        batch_size: Sentences per batch, ``K`` of the loss (the paper: 128).
        learning_rate: Adam's learning rate.
        temperature: The loss's softmax temperature.
        validation_size: Sentences held out for the validation loss.
        eval_steps: Steps between evaluations.
        patience: Evaluations without improvement before stopping; ``None`` runs all ``max_steps``.
        output_dir: If given, the folder that receives ``training_history.json`` and ``training_curve.png``.
        matryoshka_dims: If given, wrap the loss in ``MatryoshkaLoss`` with these dimensions, so that truncated
            tables also work (the table's own dimension should be among them).
        seed: Seed of the validation split, the batch order and the trainer.
        num_threads: Torch threads while training (restored afterwards); ``None`` keeps the current setting.
            Each step is a few small operations, which more threads slow down rather than speed up.
        center_teacher: Subtract the mean teacher embedding before comparing similarities (see above).

    Returns:
        The run's :class:`TrainingResult`.

    Raises:
        TypeError: If ``sentences`` is not a sequence of str or the model is not a static model.
        ValueError: If the sizes disagree, there are too few sentences or an argument is out of range.
    """
    _require_train_extra()

    module = trainable_module(model)
    _check_settings(max_steps, batch_size, learning_rate, validation_size, eval_steps, patience)
    validation_size = _whole_batches(validation_size, batch_size)
    train_dataset, eval_dataset = _distillation_datasets(
        sentences, teacher_embeddings, module, validation_size, batch_size, seed, center_teacher, matryoshka_dims
    )

    loss = _with_matryoshka(model, SimilarityDistillationLoss(model, temperature=temperature), matryoshka_dims)
    settings = {
        "loss": "SimilarityDistillationLoss",
        **_common_settings(
            batch_size, learning_rate, temperature, max_steps, eval_steps, patience, validation_size, seed
        ),
        "train_size": len(train_dataset),
        "matryoshka_dims": list(matryoshka_dims) if matryoshka_dims else None,
        "center_teacher": center_teacher,
    }
    return _refine(
        model,
        module,
        train_dataset,
        eval_dataset,
        loss,
        settings,
        stage="distillation",
        output_dir=output_dir,
        num_threads=num_threads,
    )


def _distillation_datasets(
    sentences: Sequence[str],
    teacher_embeddings: np.ndarray | torch.Tensor,
    module: StaticWordAverage,
    validation_size: int,
    batch_size: int,
    seed: int,
    center_teacher: bool,
    matryoshka_dims: Sequence[int] | None,
) -> tuple[Any, Any]:
    """Shuffled train and validation datasets of ``(sentence, teacher embedding)`` for the distillation loss."""
    from datasets import Dataset

    sentences = check_texts(sentences)
    teacher = _check_teacher_embeddings(teacher_embeddings, len(sentences))
    if center_teacher:
        teacher = teacher - teacher.mean(axis=0, dtype=np.float64).astype(teacher.dtype)
    if len(sentences) - validation_size < batch_size:
        raise ValueError(
            f"{len(sentences)} sentences leave {len(sentences) - validation_size} for training after holding out "
            f"{validation_size} for validation; need at least one batch of {batch_size}."
        )
    if matryoshka_dims and teacher.shape[1] in {*matryoshka_dims, module.embedding_dim}:
        # MatryoshkaLoss truncates labels as wide as the student; a zero column keeps the teacher's cosines.
        teacher = np.pad(teacher, ((0, 0), (0, 1)))
    train, validation = split_indices(len(sentences), validation_size, seed)
    train_dataset = Dataset.from_dict({"sentence": [sentences[i] for i in train], "label": teacher[train]})
    eval_dataset = Dataset.from_dict({"sentence": [sentences[i] for i in validation], "label": teacher[validation]})
    # Labels as tensors: the collator stacks them instead of building a tensor from nested lists.
    return (
        train_dataset.with_format("torch", columns=["label"], output_all_columns=True),
        eval_dataset.with_format("torch", columns=["label"], output_all_columns=True),
    )


def refine_by_translation(
    model: SentenceTransformer,
    pairs: dict[tuple[str, str], Sequence[tuple[str, str]]],
    *,
    max_steps: int = 30000,
    batch_size: int = 128,
    learning_rate: float = 1e-3,
    temperature: float = 0.05,
    validation_size: int = 4096,
    eval_steps: int = 500,
    patience: int | None = 5,
    output_dir: str | os.PathLike[str] | None = None,
    matryoshka_dims: Sequence[int] | None = None,
    seed: int = 42,
    num_threads: int | None = 1,
    distillation: tuple[Sequence[str], np.ndarray | torch.Tensor] | None = None,
    center_teacher: bool = True,
    training_only_pairs: dict[tuple[str, str], Sequence[tuple[str, str]]] | None = None,
) -> TrainingResult:
    """Refine a cross-lingual static model with the bilingual contrastive loss on translation pairs.

    Every batch holds ``batch_size`` translation pairs of *one* language pair. With several language pairs, the
    trainer's multi-dataset training takes batches from the pairs in turn (round robin), so each pair gets the
    same number of steps and the training objective is the sum of the pairs' losses, as the paper suggests for
    more than two languages; the validation loss is the sum of the pairs' validation losses. Within a language
    pair, a sentence that occurs in several translation pairs is kept in the first of them only, so that no batch
    holds a sentence twice (it would be its own negative) and no sentence is both trained and validated on.

    Args:
        model: A static model whose first module is a :class:`~st_static.StaticWordAverage`. Refined in place.
        pairs: ``{(language1, language2): [(sentence1, sentence2), ...]}``, e.g. ``{("en", "de"): en_de_pairs}``.
        max_steps: Most optimiser steps (over all language pairs).
        batch_size: Translation pairs per batch, ``K`` of the loss (the paper: 128).
        learning_rate: Adam's learning rate.
        temperature: The loss's softmax temperature.
        validation_size: Translation pairs held out *per language pair* for the validation loss.
        eval_steps: Steps between evaluations.
        patience: Evaluations without improvement before stopping; ``None`` runs all ``max_steps``.
        output_dir: If given, the folder that receives ``training_history.json`` and ``training_curve.png``.
        matryoshka_dims: If given, wrap the loss in ``MatryoshkaLoss`` with these dimensions.
        seed: Seed of the validation split, the batch order and the trainer.
        num_threads: Torch threads while training (restored afterwards); ``None`` keeps the current setting.
            Each step is a few small operations, which more threads slow down rather than speed up.
        distillation: Optional ``(sentences, teacher_embeddings)``: a ``"distillation"`` dataset trained with
            :class:`~st_static.losses.SimilarityDistillationLoss` in turn with the language pairs, so the table
            keeps the teacher's similarity structure within each language while translations are pulled
            together (its validation loss is part of the sum).
        center_teacher: Centre the distillation targets (see :func:`refine_by_distillation`).
        training_only_pairs: More pairs per language pair (e.g. a bilingual dictionary) added to the training
            split only, so the validation loss stays on ``pairs``: held-out dictionary words would have rows
            that no training pair reaches, and their loss could not fall. Pairs sharing a sentence with
            ``pairs`` are skipped.

    Returns:
        The run's :class:`TrainingResult`; its history lists each dataset's loss in ``components``.

    Raises:
        TypeError: If ``pairs`` is not shaped as described or the model is not a static model.
        ValueError: If a language pair has too few translation pairs or an argument is out of range.
    """
    _require_train_extra()
    from datasets import Dataset, DatasetDict

    module = trainable_module(model)
    _check_settings(max_steps, batch_size, learning_rate, validation_size, eval_steps, patience)
    validation_size = _whole_batches(validation_size, batch_size)
    if not isinstance(pairs, dict) or not pairs:
        raise TypeError("pairs must be a non-empty dict {(language1, language2): [(sentence1, sentence2), ...]}.")
    train_datasets, eval_datasets = {}, {}
    training_only_sizes: dict[str, int] = {}
    for languages, language_pairs in pairs.items():
        name = _pair_name(languages)
        if name in train_datasets:
            raise ValueError(f"The language pair {name} is given twice.")
        first, second = _check_translation_pairs(language_pairs, name)
        if len(first) - validation_size < batch_size:
            raise ValueError(
                f"{name}: {len(first)} translation pairs leave {len(first) - validation_size} for training after "
                f"holding out {validation_size} for validation; need at least one batch of {batch_size}."
            )
        train, validation = split_indices(len(first), validation_size, seed)
        train_first, train_second = [first[i] for i in train], [second[i] for i in train]
        extra = {_pair_name(key): value for key, value in (training_only_pairs or {}).items()}.get(name)
        if extra:
            extra_first, extra_second = _check_translation_pairs(extra, f"{name} (training only)")
            seen_first, seen_second = set(first), set(second)
            kept = [
                (one, two)
                for one, two in zip(extra_first, extra_second, strict=True)
                if one not in seen_first and two not in seen_second
            ]
            train_first += [one for one, _ in kept]
            train_second += [two for _, two in kept]
            training_only_sizes[name] = len(kept)
        train_datasets[name] = Dataset.from_dict({"sentence1": train_first, "sentence2": train_second})
        eval_datasets[name] = Dataset.from_dict(
            {"sentence1": [first[i] for i in validation], "sentence2": [second[i] for i in validation]}
        )

    loss = _with_matryoshka(model, BilingualContrastiveLoss(model, temperature=temperature), matryoshka_dims)
    losses: dict[str, nn.Module] = dict.fromkeys(train_datasets, loss)
    if distillation is not None:
        train_datasets["distillation"], eval_datasets["distillation"] = _distillation_datasets(
            *distillation, module, validation_size, batch_size, seed, center_teacher, matryoshka_dims
        )
        losses["distillation"] = _with_matryoshka(
            model, SimilarityDistillationLoss(model, temperature=temperature), matryoshka_dims
        )
    settings = {
        "loss": "BilingualContrastiveLoss" + (" + SimilarityDistillationLoss" if distillation is not None else ""),
        **_common_settings(
            batch_size, learning_rate, temperature, max_steps, eval_steps, patience, validation_size, seed
        ),
        "train_size": {name: len(dataset) for name, dataset in train_datasets.items()},
        "language_pairs": [name for name in train_datasets if name != "distillation"],
        "matryoshka_dims": list(matryoshka_dims) if matryoshka_dims else None,
    }
    if distillation is not None:
        settings["center_teacher"] = center_teacher
    if training_only_sizes:
        settings["training_only_pairs"] = training_only_sizes
    return _refine(
        model,
        module,
        DatasetDict(train_datasets),
        DatasetDict(eval_datasets),
        losses,
        settings,
        stage="contrastive",
        output_dir=output_dir,
        num_threads=num_threads,
    )


def _with_matryoshka(model: SentenceTransformer, loss: nn.Module, dims: Sequence[int] | None) -> nn.Module:
    """Wrap ``loss`` in sentence-transformers' ``MatryoshkaLoss`` over ``dims`` when dimensions are given."""
    return MatryoshkaLoss(model, loss, list(dims)) if dims else loss


def _common_settings(
    batch_size: int,
    learning_rate: float,
    temperature: float,
    max_steps: int,
    eval_steps: int,
    patience: int | None,
    validation_size: int,
    seed: int,
) -> dict[str, Any]:
    """The training settings both refinements record."""
    return {
        "batch_size": batch_size,
        "learning_rate": learning_rate,
        "temperature": temperature,
        "max_steps": max_steps,
        "eval_steps": eval_steps,
        "patience": patience,
        "validation_size": validation_size,
        "seed": seed,
    }


def split_indices(num_items: int, validation_size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The shuffled ``(train, validation)`` index split the refinement functions use.

    Args:
        num_items: Number of sentences (or translation pairs).
        validation_size: Items held out; the rest, in shuffled order, are for training.
        seed: Seed of the shuffle.
    """
    order = np.random.default_rng(seed).permutation(num_items)
    return order[validation_size:], order[:validation_size]


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


def plot_training_curve(history: Sequence[ValidationRecord], path: str | os.PathLike[str], best_step: int) -> Path:
    """Plot the validation loss per evaluation step to a PNG file (written atomically).

    Raises:
        ImportError: If matplotlib is not installed (``pip install "st-static[eval]"``).
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError('Plotting the training curve needs matplotlib: pip install "st-static[eval]"') from error
    path = Path(path)
    figure = Figure(figsize=(6, 4), layout="constrained")
    axes = figure.subplots()
    steps = [record.step for record in history]
    names = sorted({name for record in history for name in record.components})
    for name in names:
        axes.plot(steps, [record.components.get(name, math.nan) for record in history], linewidth=1, label=name)
    axes.plot(steps, [record.loss for record in history], marker="o", markersize=3, color="black", label="validation")
    axes.axvline(best_step, color="tab:red", linestyle="--", linewidth=1, label=f"best (step {best_step})")
    axes.set_xlabel("step")
    axes.set_ylabel("validation loss" + (" (sum over language pairs)" if names else ""))
    axes.grid(alpha=0.3)
    axes.legend()
    write_file_atomically(path, lambda temporary: figure.savefig(temporary, format="png", dpi=120))
    return path


def write_training_record(result: TrainingResult, output_dir: str | os.PathLike[str], settings: dict[str, Any]) -> Path:
    """Write ``training_history.json`` and, if matplotlib is installed, ``training_curve.png`` to ``output_dir``."""
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"settings": settings, **result.to_dict()}, indent=2)
    write_text_atomically(output / HISTORY_FILE_NAME, text)
    try:
        plot_training_curve(result.history, output / CURVE_FILE_NAME, result.best_step)
    except ImportError as error:
        logger.warning("Skipping %s: %s", CURVE_FILE_NAME, error)
    return output


def _refine(
    model: SentenceTransformer,
    module: StaticWordAverage,
    train_dataset: Any,
    eval_dataset: Any,
    loss: nn.Module | dict[str, nn.Module],
    settings: dict[str, Any],
    *,
    stage: str,
    output_dir: str | os.PathLike[str] | None,
    num_threads: int | None,
) -> TrainingResult:
    """Train the table with the trainer, sparse Adam and early stopping; restore the best table."""
    from sentence_transformers import SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import MultiDatasetBatchSamplers

    several = isinstance(loss, dict)
    callback = BestTableCallback(module, settings["patience"], list(loss) if several else None)
    weight = module.embedding.weight
    was_training = model.training
    was_sparse = module.embedding.sparse
    frozen = [parameter for parameter in model.parameters() if parameter is not weight and parameter.requires_grad]
    weight_required_grad = weight.requires_grad
    previous_threads = torch.get_num_threads()
    with tempfile.TemporaryDirectory(prefix="st-static-train-") as scratch:
        args = SentenceTransformerTrainingArguments(
            output_dir=scratch,
            max_steps=settings["max_steps"],
            per_device_train_batch_size=settings["batch_size"],
            per_device_eval_batch_size=settings["batch_size"],
            learning_rate=settings["learning_rate"],
            lr_scheduler_type="constant",
            warmup_steps=0,
            weight_decay=0.0,
            max_grad_norm=0.0,  # no clipping (the paper does not clip; sparse gradients)
            eval_strategy="steps",
            eval_steps=settings["eval_steps"],
            eval_on_start=True,
            logging_steps=settings["eval_steps"],
            save_strategy="no",
            report_to="none",
            seed=settings["seed"],
            data_seed=settings["seed"],
            dataloader_drop_last=True,
            dataloader_pin_memory=torch.cuda.is_available(),
            multi_dataset_batch_sampler=MultiDatasetBatchSamplers.ROUND_ROBIN,
        )
        try:
            if num_threads is not None:
                torch.set_num_threads(num_threads)
            for parameter in frozen:
                parameter.requires_grad_(False)
            weight.requires_grad_(True)
            module.embedding.sparse = True
            optimizer = torch.optim.SparseAdam([weight], lr=settings["learning_rate"])
            trainer = _trainer_class()(
                model=model,
                args=args,
                train_dataset=train_dataset,
                eval_dataset=eval_dataset,
                loss=loss,
                callbacks=[callback],
                optimizers=(optimizer, None),
            )
            started = time.perf_counter()
            output = trainer.train()
            train_seconds = time.perf_counter() - started
        finally:
            module.embedding.sparse = was_sparse
            weight.requires_grad_(weight_required_grad)
            for parameter in frozen:
                parameter.requires_grad_(True)
            callback.restore_best_table()
            model.train(was_training)
            torch.set_num_threads(previous_threads)

    steps = int(output.global_step)
    result = TrainingResult(
        model=model,
        history=callback.history,
        best_step=callback.best_step,
        best_validation_loss=callback.best_loss,
        steps=steps,
        stopped_early=callback.stopped_early,
        train_seconds=train_seconds,
        steps_per_second=steps / train_seconds if train_seconds > 0 else math.nan,
    )
    _record_in_metadata(module, stage, settings, result)
    logger.info(
        "%s: %d steps in %.1f s (%.1f steps/s); best validation loss %.5f at step %d.",
        settings["loss"],
        steps,
        train_seconds,
        result.steps_per_second,
        result.best_validation_loss,
        result.best_step,
    )
    if output_dir is not None:
        result.output_dir = write_training_record(result, output_dir, settings)
    return result


def _record_in_metadata(
    module: StaticWordAverage, stage: str, settings: dict[str, Any], result: TrainingResult
) -> None:
    stages = list(module.metadata.get("stages", []))
    if stage not in stages:
        stages.append(stage)
    module.metadata["stages"] = stages
    module.metadata["training"] = {
        "loss": settings["loss"],
        "steps": result.steps,
        "best_step": result.best_step,
        "batch_size": settings["batch_size"],
        "learning_rate": settings["learning_rate"],
        "temperature": settings["temperature"],
        "best_validation_loss": result.best_validation_loss,
    }


def _check_settings(
    max_steps: int, batch_size: int, learning_rate: float, validation_size: int, eval_steps: int, patience: int | None
) -> None:
    for name, value in (("max_steps", max_steps), ("batch_size", batch_size), ("eval_steps", eval_steps)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}.")
    if batch_size < 2:
        raise ValueError(f"batch_size must be at least 2 (the losses compare texts within a batch), got {batch_size}.")
    if not isinstance(learning_rate, int | float) or not 0 < learning_rate < math.inf:
        raise ValueError(f"learning_rate must be a positive number, got {learning_rate!r}.")
    if isinstance(validation_size, bool) or not isinstance(validation_size, int) or validation_size < batch_size:
        raise ValueError(
            f"validation_size must be an int of at least one batch ({batch_size}), got {validation_size!r}."
        )
    if patience is not None and (isinstance(patience, bool) or not isinstance(patience, int) or patience < 1):
        raise ValueError(f"patience must be a positive int or None, got {patience!r}.")


def _whole_batches(size: int, batch_size: int) -> int:
    """``size`` rounded down to whole batches (the validation loss is a mean over full batches of ``K``)."""
    return size - size % batch_size


def _check_teacher_embeddings(teacher_embeddings: np.ndarray | torch.Tensor, num_sentences: int) -> np.ndarray:
    if torch.is_tensor(teacher_embeddings):
        teacher_embeddings = teacher_embeddings.detach().cpu().numpy()
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


def _pair_name(languages: object) -> str:
    if (
        not isinstance(languages, tuple)
        or len(languages) != 2
        or not all(isinstance(language, str) and language for language in languages)
    ):
        raise TypeError(f"Each key of pairs must be a (language1, language2) tuple of two codes, got {languages!r}.")
    return f"{languages[0]}-{languages[1]}"


def _check_translation_pairs(language_pairs: object, name: str) -> tuple[list[str], list[str]]:
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
