"""Per-language scores of cross-lingual tables beside their teacher's: Tatoeba, Tux Paint and STS per language.

    python -m benchmarks.language_table --model 13=MODELS/swe-multilingual-e5-small-13/evaluation.json \
        --model four=hub_cards/swe-multilingual-e5-small-en-de-ja-zh-extra.md --teacher MODELS/e5-teacher.json \
        --output benchmarks/results/DATE-thirteen-languages.md

A model's scores come from the ``evaluation.json`` of ``st-static evaluate`` or from a hub card's data block (the
evaluation recorded when the card was rendered). ``--teacher`` is the teacher's own ``evaluation.json`` (``st-static
evaluate TEACHER --json FILE``) or any evaluation file holding a ``teacher`` entry. One row per language: bitext
accuracy (both directions, dev halves: ``tatoeba-XXX-eng``, ``tuxpaint-XXX-eng``), cross-lingual STS
(``stsb-en-XX-test``) and monolingual STS (``stsb-XX-test``) where there is a file, each model's score, the teacher's,
and the first model's share of the teacher's bitext accuracy (issue 65: at least 90% in each new language).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchmarks.common import command_line, machine, write_report
from hub_cards.refresh import read_card_data
from st_static.model.languages import ISO_639_3
from st_static.model_card import read_evaluation
from st_static.model_card.evaluation_table import EvaluationFileError, check_evaluation

BITEXT = (("tatoeba", "Tatoeba"), ("tuxpaint", "Tux Paint"))


def read_results(path: Path) -> dict[str, float]:
    """``{task: score}`` of an ``evaluation.json`` or of a hub card's data block."""
    if path.suffix == ".md":
        data = read_card_data(path.read_text(encoding="utf-8"))
        if data is None:
            raise EvaluationFileError(f"{path}: no card data block (is it a card hub_cards/refresh.py rendered?).")
        evaluation = data.get("evaluation")
        check_evaluation(evaluation, source=str(path))
    else:
        evaluation = read_evaluation(path)
    return {task: result["score"] for task, result in evaluation["results"].items() if result["score"] is not None}


def read_teacher_results(path: Path) -> dict[str, float]:
    """The teacher's scores: its own evaluation file, or the ``teacher`` entry of a model's."""
    evaluation = read_evaluation(path)
    results = evaluation.get("teacher", {}).get("results", evaluation["results"])
    return {task: result["score"] for task, result in results.items() if result["score"] is not None}


def language_rows(languages: list[str], models: dict[str, dict[str, float]], teacher: dict[str, float]) -> list[dict]:
    """One row per language: each column's score per model and the teacher's (``None`` where not measured)."""
    rows = []
    for language in languages:
        code = ISO_639_3.get(language, language)
        tasks = {label: f"{prefix}-{code}-eng" for prefix, label in BITEXT}
        tasks |= {"cross-lingual STS": f"stsb-en-{language}-test", "STS": f"stsb-{language}-test"}
        row: dict[str, Any] = {"language": language}
        for label, task in tasks.items():
            row[label] = {name: results.get(task) for name, results in models.items()} | {"teacher": teacher.get(task)}
        rows.append(row)
    return rows


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def render(rows: list[dict], names: list[str]) -> list[str]:
    """The markdown table: per column, each model's score then the teacher's; the share of the teacher's."""
    columns = ["Tatoeba", "Tux Paint", "cross-lingual STS", "STS"]
    header = ["language"]
    for column in columns:
        header += [f"{column} {name}" for name in [*names, "teacher"]]
    header += [f"{label} {names[0]} / teacher" for _, label in BITEXT]
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    for row in rows:
        cells = [row["language"]]
        for column in columns:
            cells += [_cell(row[column][name]) for name in [*names, "teacher"]]
        for _, label in BITEXT:
            first, teacher = row[label][names[0]], row[label]["teacher"]
            cells.append("-" if first is None or not teacher else f"{100 * first / teacher:.1f}%")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--model", action="append", required=True, help="NAME=evaluation.json or NAME=card.md")
    parser.add_argument("--teacher", type=Path, required=True, help="The teacher's evaluation.json.")
    parser.add_argument(
        "--languages", default="de,ja,zh,fr,es,it,pt,ru,tr,pl,cs,ko", help="Comma-separated ISO 639-1 codes."
    )
    parser.add_argument("--output", type=Path, help="Markdown report (and JSON next to it).")
    args = parser.parse_args()
    models: dict[str, dict[str, float]] = {}
    for entry in args.model:
        name, separator, path = entry.partition("=")
        if not separator or not name or not path:
            parser.error(f"--model takes NAME=FILE, got {entry!r}.")
        models[name] = read_results(Path(path))
    rows = language_rows(args.languages.split(","), models, read_teacher_results(args.teacher))
    names = list(models)
    english = {name: results.get("stsb-en-test") for name, results in models.items()}
    lines = [
        "# Scores per language beside the teacher's",
        "",
        f"Command: `{command_line('benchmarks.language_table')}`. Machine: {machine()[0]}.",
        "",
        "Bitext accuracy in both directions on the dev halves; STS Spearman on the test files (reported, never chosen "
        "on). The last columns: the first model's bitext accuracy as a share of the teacher's.",
        "",
        *render(rows, names),
        "",
        "English STS-B test: " + ", ".join(f"{name} {_cell(score)}" for name, score in english.items()) + ".",
    ]
    write_report(args.output, lines, {"models": list(models), "rows": rows, "stsb_en_test": english})


if __name__ == "__main__":
    main()
