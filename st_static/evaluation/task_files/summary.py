"""Summaries of task-file results: per-type means, the task mean, the STS mean and their markdown table."""

from __future__ import annotations

from typing import Any

import numpy as np

from st_static.evaluation.task_files.formats import (
    CLASSIFICATION,
    CLUSTERING,
    PAIR_CLASSIFICATION,
    RETRIEVAL,
    TASK_TYPES,
)


def type_means(results: dict[str, dict[str, Any]]) -> dict[str, tuple[float, int]]:
    """``{task type: (mean score, number of tasks)}`` over results with a ``type``, in :data:`TASK_TYPES` order."""
    scores: dict[str, list[float]] = {}
    for result in results.values():
        score = result.get("score")
        if result.get("type") in TASK_TYPES and isinstance(score, int | float):
            scores.setdefault(result["type"], []).append(float(score))
    return {kind: (float(np.mean(scores[kind])), len(scores[kind])) for kind in TASK_TYPES if kind in scores}


def task_mean(results: dict[str, dict[str, Any]]) -> float | None:
    """The mean score over every task-type result (each task counts once), or ``None`` without any."""
    scores = [
        float(result["score"])
        for result in results.values()
        if result.get("type") in TASK_TYPES and isinstance(result.get("score"), int | float)
    ]
    return float(np.mean(scores)) if scores else None


def sts_mean(results: dict[str, dict[str, Any]]) -> float | None:
    """The mean Spearman over the STS results, or ``None`` without any."""
    scores = [
        float(result["score"])
        for result in results.values()
        if result.get("kind") == "sts" and isinstance(result.get("score"), int | float)
    ]
    return float(np.mean(scores)) if scores else None


TYPE_LABELS = {
    CLASSIFICATION: "classification (accuracy)",
    CLUSTERING: "clustering (V-measure)",
    RETRIEVAL: "retrieval (nDCG@10)",
    PAIR_CLASSIFICATION: "pair classification (cosine AP)",
}


def summary_markdown(results: dict[str, dict[str, Any]]) -> str:
    """A table of the mean per task type, the task mean and the STS mean (empty without task-type results)."""
    means = type_means(results)
    if not means:
        return ""
    lines = ["| task type | tasks | mean |", "| --- | ---: | ---: |"]
    lines += [f"| {TYPE_LABELS[kind]} | {count} | {mean:.2f} |" for kind, (mean, count) in means.items()]
    overall = task_mean(results)
    count = sum(count for _, count in means.values())
    lines.append(f"| **task mean** | {count} | **{overall:.2f}** |")
    sts = sts_mean(results)
    if sts is not None:
        sts_count = sum(1 for result in results.values() if result.get("kind") == "sts")
        lines.append(f"| STS mean (Spearman) | {sts_count} | {sts:.2f} |")
    return "\n".join(lines)
