"""The evaluation file (``evaluation.json``) and the markdown tables ``st-static evaluate`` prints."""

from __future__ import annotations

import math
import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from st_static.files import write_json_atomically

VERSIONED_PACKAGES = ("st-static", "sentence-transformers", "torch", "transformers", "tokenizers", "mteb", "numpy")
DIAGNOSTIC_KEYS = ("alignment", "uniformity", "language_silhouette")


def package_versions(packages: tuple[str, ...] = VERSIONED_PACKAGES) -> dict[str, str]:
    """Installed versions of ``packages`` (those not installed are left out), plus the Python version."""
    versions = {"python": platform.python_version()}
    for package in packages:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    return value


def evaluation_document(
    model: str,
    results: dict[str, dict[str, Any]],
    teacher: str | None = None,
    teacher_results: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The evaluation file's content: ``{"model", "results", "versions"}`` (see DEVELOPING.md), with the teacher's
    results on the same tasks as ``"teacher": {"model", "results"}`` when given."""
    document: dict[str, Any] = {"model": model, "results": _json_safe(results)}
    if teacher_results is not None:
        document["teacher"] = {"model": teacher, "results": _json_safe(teacher_results)}
    return {**document, "versions": package_versions()}


def write_json(document: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``document`` as indented JSON, atomically (temporary file in the same folder, then rename)."""
    destination = Path(path)
    destination.parent.mkdir(parents=True, exist_ok=True)
    return write_json_atomically(destination, document)


def _number(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _score(result: dict[str, Any] | None) -> float | None:
    score = (result or {}).get("score")
    return float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None


def markdown_tables(
    results: dict[str, dict[str, Any]], teacher_results: dict[str, dict[str, Any]] | None = None
) -> str:
    """A scores table (task, metric, score x100, size; with ``teacher_results``, the teacher's score beside the
    model's) and, for translation tasks, a diagnostics table."""
    teacher = teacher_results is not None
    if teacher:
        lines = ["| task | metric | score | teacher | pairs |", "| --- | --- | ---: | ---: | ---: |"]
    else:
        lines = ["| task | metric | score | pairs |", "| --- | --- | ---: | ---: |"]
    for name, result in results.items():
        cells = [name, result["metric"], _number(result.get("score"))]
        if teacher:
            cells.append(_number(_score(teacher_results.get(name))) if name in teacher_results else "-")
        lines.append("| " + " | ".join([*cells, str(result.get("pairs", ""))]) + " |")
    scored = {name: _score(result) for name, result in results.items() if _score(result) is not None}
    if len(scored) > 1:
        cells = [f"**mean of {len(scored)} tasks**", "", f"**{_number(sum(scored.values()) / len(scored))}**"]
        if teacher:  # the teacher's mean only when it was scored on every one of those tasks
            teacher_scores = [_score(teacher_results.get(name)) for name in scored]
            complete = None not in teacher_scores
            cells.append(f"**{_number(sum(teacher_scores) / len(teacher_scores))}**" if complete else "")
        lines.append("| " + " | ".join([*cells, ""]) + " |")
    translation = {name: result for name, result in results.items() if "accuracy_1_to_2" in result}
    if translation:
        lines += [
            "",
            "| task | accuracy en->xx | accuracy xx->en | alignment | uniformity | language silhouette |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for name, result in translation.items():
            lines.append(
                f"| {name} | {_number(result['accuracy_1_to_2'])} | {_number(result['accuracy_2_to_1'])} | "
                + " | ".join(_number(result.get(key), 3) for key in DIAGNOSTIC_KEYS)
                + " |"
            )
    return "\n".join(lines)


def stage_scores_markdown(stage_scores: dict[str, dict[str, dict[str, Any]]]) -> str:
    """A markdown table of scores (x100) per stage (rows) and task (columns)."""
    tasks: list[str] = []
    for results in stage_scores.values():
        tasks.extend(task for task in results if task not in tasks)
    lines = ["| stage | " + " | ".join(tasks) + " |", "|---" * (len(tasks) + 1) + "|"]
    for stage, results in stage_scores.items():
        cells = [f"{results[task]['score']:.2f}" if task in results else "-" for task in tasks]
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
