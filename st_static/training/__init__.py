"""Refinement, step 3 of the method: train only the word table with the sentence-transformers trainer.

Monolingual models are refined by similarity distillation against precomputed teacher sentence embeddings
(:func:`refine_by_distillation`); cross-lingual ones by a contrastive loss on translation pairs
(:func:`refine_by_translation`; several language pairs take turns, one pair per batch, so the objective is the sum
of the pairs' losses). Both follow the paper (Adam, early stopping on a held-out validation loss, the table of the
best validation step restored) with the defaults of ``RefinementSettings``, chosen by a sweep on dev sets
(``benchmarks/results/2026-11-23-distillation-sweep.md``): larger batches at a higher learning rate converge in a
sixth of the paper's 30k steps of 128. The validation
loss is evaluated before training and every ``eval_steps`` steps; ``output_dir`` receives its history
(``training_history.json``) and a plot (``training_curve.png``).

Modules: ``refinement`` (entry points, the loss chosen by the settings), ``datasets`` (training/validation data),
``trainer`` (the trainer with sparse Adam), ``sampler`` (the weighted round robin over language pairs),
``callbacks`` (best table, early stopping), ``records`` (history, curve, metadata); the disentangler after a frozen
table: ``disentangle`` (:func:`train_meaning_map`), ``precomputed`` (the frozen model's vectors as an input module),
``meaning_fold`` (:func:`fold_meaning_map`, :func:`disentangle_table`). Needs the ``train`` extra.
"""

from __future__ import annotations

from st_static.training.datasets import split_indices
from st_static.training.disentangle import DisentangleError, MeaningMapResult, train_meaning_map
from st_static.training.meaning_fold import disentangle_table, fold_meaning_map
from st_static.training.records import (
    CURVE_FILE_NAME,
    HISTORY_FILE_NAME,
    TrainingResult,
    ValidationRecord,
    plot_training_curve,
    write_training_record,
)
from st_static.training.refinement import (
    loss_names,
    refine,
    refine_by_distillation,
    refine_by_translation,
    trainable_module,
)

__all__ = [
    "CURVE_FILE_NAME",
    "HISTORY_FILE_NAME",
    "DisentangleError",
    "MeaningMapResult",
    "TrainingResult",
    "ValidationRecord",
    "disentangle_table",
    "fold_meaning_map",
    "loss_names",
    "plot_training_curve",
    "refine",
    "refine_by_distillation",
    "refine_by_translation",
    "split_indices",
    "train_meaning_map",
    "trainable_module",
    "write_training_record",
]
