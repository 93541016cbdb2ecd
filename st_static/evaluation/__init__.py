"""Evaluation: STS (Spearman), translation retrieval (Tatoeba), paraphrase AP (MSRP), diagnostics, MTEB glue.

The MTEB glue of :mod:`st_static.evaluation.mteb_tasks` needs the ``eval`` extra (``pip install "st-static[eval]"``)
and is imported from its module.
"""

from __future__ import annotations

from st_static.evaluation.diagnostics import alignment, bilingual_diagnostics, language_silhouette, uniformity
from st_static.evaluation.encoders import Encoder, is_static_pipeline, lookup_encoder, model_encoder
from st_static.evaluation.pair_classification import cosine_average_precision, evaluate_pair_classification
from st_static.evaluation.sts import evaluate_sts, spearman_cosine
from st_static.evaluation.suite import (
    EvaluationTask,
    NoEvaluationDataError,
    evaluate_tasks,
    find_tasks,
    task_evaluator,
)
from st_static.evaluation.translation import evaluate_translation_retrieval, retrieval_accuracy

__all__ = [
    "Encoder",
    "EvaluationTask",
    "NoEvaluationDataError",
    "alignment",
    "bilingual_diagnostics",
    "cosine_average_precision",
    "evaluate_pair_classification",
    "evaluate_sts",
    "evaluate_tasks",
    "evaluate_translation_retrieval",
    "find_tasks",
    "is_static_pipeline",
    "language_silhouette",
    "lookup_encoder",
    "model_encoder",
    "retrieval_accuracy",
    "spearman_cosine",
    "task_evaluator",
    "uniformity",
]
