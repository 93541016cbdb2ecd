"""The evaluation table of a card: read ``evaluation.json``, render it, parse it back, and compare the two."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

from huggingface_hub.repocard_data import EvalResult

from st_static.errors import StStaticError

EVALUATION_FILE_NAME = "evaluation.json"
TBD = "**TBD**"


class EvaluationFileError(StStaticError, ValueError):
    """An ``evaluation.json`` file is not valid JSON or does not follow the documented schema."""


EVALUATION_BEGIN = "<!-- st-static evaluation table -->"
EVALUATION_END = "<!-- /st-static evaluation table -->"


def read_evaluation(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check an ``evaluation.json`` (``{"results": {task: {"metric": str, "score": float}}, ...}``).

    Raises:
        EvaluationFileError: If the file is not JSON or a result lacks its metric or numeric score.
    """
    path = Path(path)
    try:
        evaluation = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise EvaluationFileError(f"{path}: cannot be read as JSON ({error}).") from error
    check_evaluation(evaluation, source=str(path))
    return evaluation


def check_evaluation(evaluation: object, source: str = "evaluation") -> None:
    """Raise :class:`EvaluationFileError` unless ``evaluation`` follows the ``evaluation.json`` schema.

    A score may be ``None`` (not measured yet): preview cards show it as TBD.
    """
    results = evaluation.get("results") if isinstance(evaluation, dict) else None
    if not isinstance(results, dict):
        raise EvaluationFileError(f"{source}: expected an object with a 'results' object (task -> result).")
    for task, result in results.items():
        if not isinstance(result, dict) or not isinstance(result.get("metric"), str):
            raise EvaluationFileError(f"{source}: result {task!r} has no 'metric' string.")
        score = result.get("score")
        if score is not None and (
            isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score)
        ):
            raise EvaluationFileError(f"{source}: result {task!r} has score {score!r}, not a finite number.")


def format_score(score: float | None) -> str:
    """A score as the card shows it (two decimals; TBD when not measured)."""
    return TBD if score is None else f"{score:.2f}"


def evaluation_rows(evaluation: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """``{task: (metric, score as shown)}`` of an evaluation, in the file's order."""
    return {
        task: (result["metric"], format_score(result.get("score"))) for task, result in evaluation["results"].items()
    }


def render_evaluation_table(evaluation: dict[str, Any]) -> str:
    """The Markdown table of an evaluation, between the markers :func:`parse_evaluation_table` reads."""
    lines = [EVALUATION_BEGIN, "| task | metric | score |", "|:-----|:-------|------:|"]
    lines += [f"| {task} | {metric} | {score} |" for task, (metric, score) in evaluation_rows(evaluation).items()]
    lines.append(EVALUATION_END)
    return "\n".join(lines)


TASK_TYPE_LABELS = {
    "classification": "classification (accuracy)",
    "clustering": "clustering (V-measure)",
    "retrieval": "retrieval (nDCG@10)",
    "pair_classification": "pair classification (cosine AP)",
}
"""Task types of task-file results (their ``type``), in the order the card shows them."""


def render_task_type_table(evaluation: dict[str, Any]) -> str:
    """A table of the task-type results (those with a ``type``): per type its tasks, scores and mean, then the mean
    over those tasks and the STS mean; empty when the evaluation has no task-type result."""
    by_type: dict[str, dict[str, float]] = {}
    for task, result in evaluation["results"].items():
        if result.get("type") in TASK_TYPE_LABELS and result.get("score") is not None:
            by_type.setdefault(result["type"], {})[task] = float(result["score"])
    if not by_type:
        return ""
    lines = ["| task type | tasks | mean | scores |", "|:----------|------:|-----:|:-------|"]
    for kind, label in TASK_TYPE_LABELS.items():
        scores = by_type.get(kind)
        if scores:
            listed = ", ".join(f"{task} {score:.2f}" for task, score in scores.items())
            lines.append(f"| {label} | {len(scores)} | {sum(scores.values()) / len(scores):.2f} | {listed} |")
    every = [score for scores in by_type.values() for score in scores.values()]
    lines.append(f"| **task mean** | {len(every)} | **{sum(every) / len(every):.2f}** | |")
    sts = [
        float(result["score"])
        for result in evaluation["results"].values()
        if result.get("kind") == "sts" and result.get("score") is not None
    ]
    if sts:
        lines.append(f"| STS mean (Spearman) | {len(sts)} | {sum(sts) / len(sts):.2f} | |")
    return "\n".join(lines)


def parse_evaluation_table(card_text: str) -> dict[str, tuple[str, str]] | None:
    """``{task: (metric, score as shown)}`` of the card's evaluation table, or ``None`` if it has none."""
    match = re.search(re.escape(EVALUATION_BEGIN) + r"\n(.*?)\n" + re.escape(EVALUATION_END), card_text, re.S)
    if match is None:
        return None
    rows: dict[str, tuple[str, str]] = {}
    for line in match.group(1).splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3:
            rows[cells[0]] = (cells[1], cells[2])
    return rows


def evaluation_table_differences(card_text: str, evaluation: dict[str, Any] | None) -> list[str]:
    """What differs between the card's evaluation table and ``evaluation`` (empty when they agree)."""
    shown = parse_evaluation_table(card_text)
    expected = evaluation_rows(evaluation) if evaluation is not None else None
    if shown is None and expected is None:
        return []
    if shown is None:
        return [f"the card has no evaluation table, but {EVALUATION_FILE_NAME} has {len(expected)} result(s)"]
    if expected is None:
        return [f"the card shows {len(shown)} evaluation result(s), but the folder has no {EVALUATION_FILE_NAME}"]
    differences = []
    for task, (metric, score) in expected.items():
        if task not in shown:
            differences.append(f"{task}: {EVALUATION_FILE_NAME} has {metric} {score}, the card does not list it")
        elif shown[task] != (metric, score):
            differences.append(
                f"{task}: the card shows {shown[task][0]} {shown[task][1]}, {EVALUATION_FILE_NAME} has {metric} {score}"
            )
    differences += [
        f"{task}: the card shows {metric} {score}, {EVALUATION_FILE_NAME} does not have it"
        for task, (metric, score) in shown.items()
        if task not in expected
    ]
    return differences


def _evaluation_task(task: str, task_type: str | None = None) -> tuple[str, str]:
    if task_type in TASK_TYPE_LABELS:
        return task_type.replace("_", " ").title(), task_type.replace("_", "-")
    if task.startswith(("sts", "sick")):
        return "Semantic Similarity", "semantic-similarity"
    if task.startswith("tatoeba"):
        return "Translation Retrieval", "translation-retrieval"
    if task.startswith(("msrp", "pair")):
        return "Pair Classification", "pair-classification"
    return "Evaluation", "evaluation"


def model_index_results(evaluation: dict[str, Any]) -> list[EvalResult]:
    results = []
    for task, result in evaluation["results"].items():
        if result.get("score") is None:
            continue
        task_name, task_type = _evaluation_task(task, result.get("type"))
        results.append(
            EvalResult(
                task_name=task_name,
                task_type=task_type,
                dataset_type=task,
                dataset_name=task.replace("-", " "),
                metric_name=result["metric"].replace("_", " ").title(),
                metric_type=result["metric"],
                metric_value=float(result["score"]),
            )
        )
    return results
