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


def evaluation_document(model: str, results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The evaluation file's content: ``{"model", "results", "versions"}`` (see DEVELOPING.md)."""
    return {"model": model, "results": _json_safe(results), "versions": package_versions()}


def write_json(document: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``document`` as indented JSON, atomically (temporary file in the same folder, then rename)."""
    destination = Path(path)
    destination.parent.mkdir(parents=True, exist_ok=True)
    return write_json_atomically(destination, document)


def _number(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def markdown_tables(results: dict[str, dict[str, Any]]) -> str:
    """A scores table (task, metric, score x100, size) and, for translation tasks, a diagnostics table."""
    lines = ["| task | metric | score | pairs |", "| --- | --- | ---: | ---: |"]
    for name, result in results.items():
        lines.append(f"| {name} | {result['metric']} | {_number(result.get('score'))} | {result.get('pairs', '')} |")
    scores = [result["score"] for result in results.values() if isinstance(result.get("score"), int | float)]
    if len(scores) > 1:
        lines.append(f"| **mean of {len(scores)} tasks** | | **{_number(sum(scores) / len(scores))}** | |")
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
