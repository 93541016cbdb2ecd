"""Training the table with sentence-transformers' trainer: sparse Adam on the word rows, early stopping.

A table of 150k x 256 is 38M parameters, and a dense Adam step reads and writes all of them and their two moments
(about 0.8 s per step on a laptop CPU). Only the rows of the words in a batch get a gradient, so the table is
trained with sparse gradients (``nn.EmbeddingBag(sparse=True)``) and :class:`torch.optim.SparseAdam`, which
updates just those rows. This is *lazy* Adam, a small departure from the paper's dense Adam: a row's moments decay,
and the row moves, only in the steps where one of its words is in the batch. The best table is kept in memory
(:class:`~st_static.training.callbacks.BestTableCallback`) rather than in trainer checkpoints, which would write the
table and both Adam moments to disk at every improvement.
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch
from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.base.sampler import MultiDatasetBatchSamplers
from torch import nn

from st_static.training.callbacks import BestTableCallback
from st_static.training.progress import use_refinement_progress
from st_static.training.records import TrainingResult, record_in_metadata, write_training_record
from st_static.training.sampler import weighted_round_robin

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from st_static.model.static_word_average import StaticWordAverage

logger = logging.getLogger(__name__)


class SparseTableTrainer(SentenceTransformerTrainer):
    """The sentence-transformers trainer, computing the gradient norm it logs from sparse gradients too."""

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


def train_table(
    model: SentenceTransformer,
    module: StaticWordAverage,
    train_dataset: Any,
    eval_dataset: Any | None,
    loss: nn.Module | dict[str, nn.Module],
    record: dict[str, Any],
    *,
    stage: str,
    output_dir: str | os.PathLike[str] | None,
    num_threads: int | None,
    device: str | None = None,
    batches_per_round: Mapping[str, int] | None = None,
) -> TrainingResult:
    """Train only the table of ``model`` with the trainer and sparse Adam; restore the best validation table.

    Args:
        model: The static model (refined in place).
        module: Its :class:`~st_static.StaticWordAverage`.
        train_dataset: A dataset, or a ``DatasetDict`` of several (taken in turn, ``batches_per_round`` batches of
            each per round).
        eval_dataset: The validation set(s), matching ``train_dataset``; ``None`` trains all steps without early
            stopping.
        loss: The loss, or one per dataset name.
        record: The settings to record (``loss``, ``batch_size``, ``learning_rate``, ``temperature``,
            ``steps``, ``eval_steps``, ``patience``, ``seed``, ...).
        stage: The stage name added to the metadata.
        output_dir: Receives ``training_history.json`` and ``training_curve.png`` when given.
        num_threads: Torch threads while training (restored afterwards); ``None`` keeps the current setting.
        device: ``"cpu"`` keeps training on the CPU; otherwise the trainer uses CUDA when there is a GPU.
        batches_per_round: Batches of each dataset of a ``DatasetDict`` per round, by name (1 for a name not
            given; ``None``: one of each, sentence-transformers' round robin).
    """
    several = isinstance(loss, dict)
    validate = eval_dataset is not None
    callback = BestTableCallback(module, record["patience"] if validate else None, list(loss) if several else None)
    weight = module.embedding.weight
    was_training = model.training
    was_sparse = module.embedding.sparse
    frozen = [parameter for parameter in model.parameters() if parameter is not weight and parameter.requires_grad]
    weight_required_grad = weight.requires_grad
    previous_threads = torch.get_num_threads()
    with tempfile.TemporaryDirectory(prefix="st-static-train-") as scratch:
        args = SentenceTransformerTrainingArguments(
            output_dir=scratch,
            max_steps=record["steps"],
            per_device_train_batch_size=record["batch_size"],
            per_device_eval_batch_size=record["batch_size"],
            learning_rate=record["learning_rate"],
            lr_scheduler_type="constant",
            warmup_steps=0,
            weight_decay=0.0,
            max_grad_norm=0.0,  # no clipping (the paper does not clip; sparse gradients)
            eval_strategy="steps" if validate else "no",
            eval_steps=record["eval_steps"] if validate else None,
            eval_on_start=validate,
            logging_steps=record["eval_steps"],
            save_strategy="no",
            report_to="none",
            seed=record["seed"],
            data_seed=record["seed"],
            dataloader_drop_last=True,
            dataloader_pin_memory=torch.cuda.is_available(),
            # Without a GPU, accelerate runs several torchrun processes as DDP only when told it is on the CPU.
            use_cpu=not torch.cuda.is_available() or str(device).startswith("cpu"),
            multi_dataset_batch_sampler=_multi_dataset_sampler(train_dataset, batches_per_round),
        )
        try:
            if num_threads is not None:
                torch.set_num_threads(num_threads)
            for parameter in frozen:
                parameter.requires_grad_(False)
            weight.requires_grad_(True)
            module.embedding.sparse = True
            optimizer = torch.optim.SparseAdam([weight], lr=record["learning_rate"])
            trainer = SparseTableTrainer(
                model=model,
                args=args,
                train_dataset=train_dataset,
                eval_dataset=eval_dataset,
                loss=loss,
                callbacks=[callback],
                optimizers=(optimizer, None),
            )
            use_refinement_progress(trainer, f"Refining ({stage})", callback if validate else None)
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
        best_step=callback.best_step if validate else steps,
        best_validation_loss=callback.best_loss if validate else math.nan,
        steps=steps,
        stopped_early=callback.stopped_early,
        train_seconds=train_seconds,
        steps_per_second=steps / train_seconds if train_seconds > 0 else math.nan,
        log_history=list(trainer.state.log_history),
    )
    record_in_metadata(module, stage, record, result)
    logger.info(
        "%s: %d steps in %.1f s (%.1f steps/s); best validation loss %.5f at step %d.",
        record["loss"],
        steps,
        train_seconds,
        result.steps_per_second,
        result.best_validation_loss,
        result.best_step,
    )
    if output_dir is not None:
        result.output_dir = write_training_record(result, output_dir, record)
    return result


def _multi_dataset_sampler(
    train_dataset: Any, batches_per_round: Mapping[str, int] | None
) -> MultiDatasetBatchSamplers | Callable[..., Any]:
    """sentence-transformers' round robin, or the weighted one when a dataset takes more than one batch per round."""
    names = list(train_dataset) if isinstance(train_dataset, Mapping) else []
    repeats = [(batches_per_round or {}).get(name, 1) for name in names]
    if all(count == 1 for count in repeats):
        return MultiDatasetBatchSamplers.ROUND_ROBIN
    return weighted_round_robin(repeats)
