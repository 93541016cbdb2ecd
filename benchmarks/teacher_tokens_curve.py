"""Quality against the text the teacher reads: one build per ``--sentences-per-word`` N (shortest sentences first).

    python benchmarks/teacher_tokens_curve.py --corpus ../shared/data/corpus/en.txt --data ../shared/data \
        --work runs/curve [--teacher minilm] [--values 100,50,20,10,5] [--set steps=4000 ...] \
        --output benchmarks/results/DATE-teacher-tokens-curve.md

For each N the script runs the build's stages (extraction with N, PCA/ABTT, distillation with the given settings)
in one shared work folder (stages are cached, so a rerun only adds missing points) and records the teacher tokens
read, the teacher pass time, the distillation sentences and the dev scores (stsb-en-dev, sick-dev) after PCA and
after distillation. Writes a markdown table and a plot (``.png`` next to it): scores against teacher tokens.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from st_static.build.pipeline import run_pipeline  # noqa: E402
from st_static.evaluation.suite import task_evaluator  # noqa: E402
from st_static.files import folder_lock  # noqa: E402
from st_static.settings import BuildSettings  # noqa: E402

TASKS = ("stsb-en-dev", "sick-dev")


def parse_overrides(items: list[str]) -> dict[str, object]:
    """``name=value`` pairs; values are read as JSON when they parse (numbers, booleans), else as text."""
    overrides: dict[str, object] = {}
    for item in items:
        name, _, text = item.partition("=")
        try:
            overrides[name] = json.loads(text)
        except json.JSONDecodeError:
            overrides[name] = text
    return overrides


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True, help="Folder with sts/stsb-en-dev.tsv and sick-dev.tsv.")
    parser.add_argument("--work", type=Path, required=True, help="Stage cache shared by every point.")
    parser.add_argument("--teacher", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--values", default="100,50,20,10,5", help="The values of --sentences-per-word.")
    parser.add_argument("--set", nargs="*", default=[], help="More build settings, name=value (e.g. steps=4000).")
    parser.add_argument("--output", type=Path, required=True)
    arguments = parser.parse_args()

    evaluate = task_evaluator(arguments.data, ",".join(TASKS))
    rows = []
    for value in [int(item) for item in arguments.values.split(",")]:
        settings = BuildSettings.from_flat(
            corpus=str(arguments.corpus),
            teacher=arguments.teacher,
            sentences_per_word=value,
            **parse_overrides(arguments.set),
        )
        started = time.perf_counter()
        with folder_lock(arguments.work):
            result = run_pipeline(settings, arguments.work, evaluate=evaluate)
        stats, extraction = {}, None
        for path in arguments.work.glob("extraction-*/stats.json"):
            candidate = json.loads(path.read_text())
            if candidate["settings"]["sentences_per_word"] == value:
                stats, extraction = candidate, path
        rows.append(
            {
                "sentences_per_word": value,
                "teacher_tokens": stats.get("teacher_tokens"),
                "sentences": stats.get("sentences_encoded"),
                "teacher_pass_seconds": stats.get("seconds", {}).get("teacher_pass"),
                "build_seconds": time.perf_counter() - started,
                "pca": {task: result.stage_scores["pca"][task]["score"] for task in TASKS},
                "distillation": {task: result.stage_scores["distillation"][task]["score"] for task in TASKS},
                "stage_folder": extraction.parent.name if extraction else None,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    write_report(rows, arguments)


def write_report(rows: list[dict], arguments: argparse.Namespace) -> None:
    lines = [
        f"# Quality against teacher tokens read ({arguments.teacher}, {arguments.corpus.name})",
        "",
        f"Command: `python benchmarks/teacher_tokens_curve.py --corpus {arguments.corpus.name} --values "
        f"{arguments.values} {' '.join('--set ' + item for item in arguments.set)}`. Shortest sentences first; "
        "scores Spearman x100 on dev sets; seconds measured with the machine possibly shared.",
        "",
        "| N | teacher tokens | sentences | teacher pass s | PCA stsb-en-dev | PCA sick-dev | distilled stsb-en-dev "
        "| distilled sick-dev |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(
            f"| {row['sentences_per_word']} | {row['teacher_tokens']:,} | {row['sentences']:,} | "
            f"{row['teacher_pass_seconds']:.0f} | {row['pca']['stsb-en-dev']:.2f} | {row['pca']['sick-dev']:.2f} | "
            f"{row['distillation']['stsb-en-dev']:.2f} | {row['distillation']['sick-dev']:.2f} |"
        )
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text("\n".join(lines) + "\n", encoding="utf-8")
    arguments.output.with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    plot(rows, arguments.output.with_suffix(".png"))
    print("\n".join(lines))


def plot(rows: list[dict], path: Path) -> None:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6, 4), layout="constrained")
    axes = figure.subplots()
    tokens = [row["teacher_tokens"] / 1e6 for row in rows]
    for stage, style in (("pca", "--"), ("distillation", "-")):
        for task, color in zip(TASKS, ("tab:blue", "tab:orange"), strict=True):
            axes.plot(
                tokens, [row[stage][task] for row in rows], style, marker="o", color=color, label=f"{task} ({stage})"
            )
    for row, x in zip(rows, tokens, strict=True):
        axes.annotate(f"N={row['sentences_per_word']}", (x, row["distillation"]["stsb-en-dev"]), fontsize=7)
    axes.set_xlabel("teacher tokens read (millions)")
    axes.set_ylabel("Spearman x100")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7)
    figure.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
