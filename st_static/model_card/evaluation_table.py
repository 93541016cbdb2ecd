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
    """Read and check an ``evaluation.json`` (``{"results": {task: {"metric": str, "score": float}}, ...}``, and
    optionally ``"teacher": {"model": str, "results": {...}}``, the teacher's scores on the same tasks).

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

    A score may be ``None`` (not measured yet): preview cards show it as TBD. A ``teacher`` entry, when there, is
    an object whose ``results`` follow the same rules.
    """
    results = evaluation.get("results") if isinstance(evaluation, dict) else None
    if not isinstance(results, dict):
        raise EvaluationFileError(f"{source}: expected an object with a 'results' object (task -> result).")
    _check_results(results, source)
    if "teacher" in evaluation:
        teacher = evaluation["teacher"]
        if not isinstance(teacher, dict) or not isinstance(teacher.get("results"), dict):
            raise EvaluationFileError(f"{source}: 'teacher' must be an object with a 'results' object.")
        _check_results(teacher["results"], f"{source}: teacher")


def _check_results(results: dict[str, Any], source: str) -> None:
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


NO_SCORE = "-"
"""The teacher's cell of a task the teacher was not scored on."""


def teacher_results(evaluation: dict[str, Any]) -> dict[str, dict[str, Any]] | None:
    """The teacher's results an evaluation records (``st-static evaluate --teacher``), or ``None``."""
    teacher = evaluation.get("teacher")
    results = teacher.get("results") if isinstance(teacher, dict) else None
    return results if isinstance(results, dict) else None


def evaluation_rows(evaluation: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """``{task: (metric, score as shown)}`` of an evaluation, in the file's order; with the teacher's scores,
    ``(metric, score, teacher's score)`` (:data:`NO_SCORE` for a task the teacher lacks)."""
    teacher = teacher_results(evaluation)
    rows: dict[str, tuple[str, ...]] = {}
    for task, result in evaluation["results"].items():
        rows[task] = (result["metric"], format_score(result.get("score")))
        if teacher is not None:
            rows[task] += (format_score(teacher[task].get("score")) if task in teacher else NO_SCORE,)
    return rows


def render_evaluation_table(evaluation: dict[str, Any]) -> str:
    """The Markdown table of an evaluation, between the markers :func:`parse_evaluation_table` reads; a ``teacher``
    column beside the scores when the evaluation records the teacher's."""
    teacher = evaluation.get("teacher")
    if teacher_results(evaluation) is None:
        lines = [EVALUATION_BEGIN, "| task | metric | score |", "|:-----|:-------|------:|"]
    else:
        name = str(teacher.get("model") or "").rstrip("/").split("/")[-1]
        header = f"teacher ({name})" if name else "teacher"
        lines = [EVALUATION_BEGIN, f"| task | metric | score | {header} |", "|:-----|:-------|------:|------:|"]
    lines += [f"| {task} | " + " | ".join(cells) + " |" for task, cells in evaluation_rows(evaluation).items()]
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


def parse_evaluation_table(card_text: str) -> dict[str, tuple[str, ...]] | None:
    """``{task: (metric, score as shown)}`` of the card's evaluation table (``(metric, score, teacher's score)`` when
    it has a teacher column), or ``None`` if it has none."""
    match = re.search(re.escape(EVALUATION_BEGIN) + r"\n(.*?)\n" + re.escape(EVALUATION_END), card_text, re.S)
    if match is None:
        return None
    rows: dict[str, tuple[str, ...]] = {}
    for line in match.group(1).splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) in (3, 4):
            rows[cells[0]] = tuple(cells[1:])
    return rows


def _shown(cells: tuple[str, ...]) -> str:
    """A row's cells as a difference names them: ``spearman 78.12``, ``accuracy 91.20 (teacher 95.00)``."""
    return " ".join(cells[:2]) + (f" (teacher {cells[2]})" if len(cells) > 2 else "")


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
    for task, cells in expected.items():
        if task not in shown:
            differences.append(f"{task}: {EVALUATION_FILE_NAME} has {_shown(cells)}, the card does not list it")
        elif shown[task] != cells:
            differences.append(
                f"{task}: the card shows {_shown(shown[task])}, {EVALUATION_FILE_NAME} has {_shown(cells)}"
            )
    differences += [
        f"{task}: the card shows {_shown(cells)}, {EVALUATION_FILE_NAME} does not have it"
        for task, cells in shown.items()
        if task not in expected
    ]
    return differences


def _evaluation_task(task: str, task_type: str | None = None) -> tuple[str, str]:
    if task_type in TASK_TYPE_LABELS:
        return task_type.replace("_", " ").title(), task_type.replace("_", "-")
    if task.startswith(("sts", "sick")):
        return "Semantic Similarity", "semantic-similarity"
    if task.startswith(("tatoeba", "tuxpaint")):
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
