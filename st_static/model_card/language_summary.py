"""The per-language table of a cross-lingual evaluation: Tatoeba and Tux Paint bitext accuracy of each language,
beside the teacher's, and the share of the teacher's score the model keeps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from st_static.model.languages import language_name, two_letter_code

BITEXT_COLLECTIONS = {"tatoeba": "Tatoeba", "tuxpaint": "Tux Paint"}
"""First part of a bitext task's name (``tatoeba-fra-eng``, ``tuxpaint-fra-eng``) -> the collection's name."""
NOT_MEASURED = "**TBD**"
MISSING = "-"


@dataclass
class LanguageScores:
    """One language's bitext scores (x100): per collection the mean over its files, the model's and the teacher's."""

    language: str
    tasks: dict[str, list[str]] = field(default_factory=dict)
    model: dict[str, list[float]] = field(default_factory=dict)
    teacher: dict[str, list[float]] = field(default_factory=dict)
    paired: list[tuple[float, float]] = field(default_factory=list)
    """``(model, teacher)`` of every task both were scored on: the share of the teacher's score."""


def bitext_language(task: str) -> tuple[str, str] | None:
    """``(collection, language)`` of a bitext task against English (``tuxpaint-fra-eng`` -> ``("Tux Paint",
    "fr")``), the language as models list it (ISO 639-1); ``None`` for any other task."""
    collection, *codes = task.split("-")
    others = [code for code in (two_letter_code(code) for code in codes) if code != "en"]
    if collection not in BITEXT_COLLECTIONS or len(codes) != 2 or len(others) != 1:
        return None
    return BITEXT_COLLECTIONS[collection], others[0]


def _score(result: dict[str, Any] | None) -> float | None:
    score = (result or {}).get("score")
    return float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None


def language_scores(
    results: dict[str, dict[str, Any]], teacher: dict[str, dict[str, Any]] | None = None
) -> list[LanguageScores]:
    """The bitext scores of each language in ``results`` (and ``teacher``, the teacher's results), by language code."""
    by_language: dict[str, LanguageScores] = {}
    for task, result in results.items():
        found = bitext_language(task)
        if found is None:
            continue
        collection, language = found
        scores = by_language.setdefault(language, LanguageScores(language))
        scores.tasks.setdefault(collection, []).append(task)
        model_score = _score(result)
        teacher_score = _score(teacher.get(task)) if teacher is not None else None
        if model_score is not None:
            scores.model.setdefault(collection, []).append(model_score)
        if teacher_score is not None:
            scores.teacher.setdefault(collection, []).append(teacher_score)
        if model_score is not None and teacher_score is not None:
            scores.paired.append((model_score, teacher_score))
    return [by_language[language] for language in sorted(by_language)]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _cell(values: list[float] | None, listed: bool = False) -> str:
    """The mean of ``values``; else TBD for a task listed without a score (a preview), or ``-`` for no task."""
    if values:
        return f"{_mean(values):.2f}"
    return NOT_MEASURED if listed else MISSING


def _share(paired: list[tuple[float, float]]) -> str:
    teacher_total = sum(teacher for _, teacher in paired)
    return (
        f"{100 * sum(model for model, _ in paired) / teacher_total:.1f}%" if paired and teacher_total > 0 else MISSING
    )


def render_language_summary(
    results: dict[str, dict[str, Any]], teacher: dict[str, dict[str, Any]] | None = None
) -> str:
    """A Markdown table with a row per language of the bitext tasks in ``results``: Tatoeba and Tux Paint accuracy,
    with ``teacher`` (the teacher's results) also the teacher's beside each and the share of the teacher's score
    (the model's scores over the teacher's on the tasks both have, in %); a mean row under two or more languages.
    Empty when ``results`` has no bitext task against English."""
    rows = language_scores(results, teacher)
    if not rows:
        return ""
    collections = [name for name in BITEXT_COLLECTIONS.values() if any(name in row.tasks for row in rows)]
    header = ["language"]
    for collection in collections:
        header += [collection, f"{collection} (teacher)"] if teacher is not None else [collection]
    header += ["share of the teacher's"] if teacher is not None else []
    lines = ["| " + " | ".join(header) + " |", "|:--" + "|--:" * (len(header) - 1) + "|"]

    def line(name: str, scores: LanguageScores) -> str:
        cells = [name]
        for collection in collections:
            cells.append(_cell(scores.model.get(collection), listed=collection in scores.tasks))
            if teacher is not None:
                cells.append(_cell(scores.teacher.get(collection)))
        cells += [_share(scores.paired)] if teacher is not None else []
        return "| " + " | ".join(cells) + " |"

    lines += [line(f"{language_name(scores.language)} ({scores.language})", scores) for scores in rows]
    if len(rows) > 1:
        mean = LanguageScores("mean", paired=[pair for scores in rows for pair in scores.paired])
        for scores in rows:
            for collection, values in scores.model.items():
                mean.model.setdefault(collection, []).append(_mean(values))
            for collection, values in scores.teacher.items():
                mean.teacher.setdefault(collection, []).append(_mean(values))
        for collection in collections:  # the teacher's mean only over the same languages as the model's
            if len(mean.teacher.get(collection, [])) != len(mean.model.get(collection, [])):
                mean.teacher.pop(collection, None)
        lines.append(line(f"**mean of {len(rows)} languages**", mean))
    return "\n".join(lines)
