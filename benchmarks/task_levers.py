"""Build levers measured on the task files (classification, clustering, retrieval) and on STS, dev and test apart.

    python -m benchmarks.task_levers --corpus ../shared/data/corpus/en.txt --data ../shared/data \
        --work models/swe-minilm-256.work --variant "baseline|" --variant "long texts 20k|long_texts=20000" \
        --output benchmarks/results/DATE-task-levers.md

Every variant is a build over one shared stage cache (the default build's, so the teacher pass is reused). The task
files are evaluation data, so choosing happens on dev halves cut from them with a fixed seed: classification fits on
70% of the train half and scores the other 30% (dev) or fits on the whole train half and scores the test half
(test); clustering and retrieval split items / queries in two halves. STS dev sets (stsb-en-dev, sick-dev,
msrp-dev) are dev; stsb-en-test and the task test halves are reported only.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.common import (
    DEV_TASKS,
    ENGLISH_TASKS,
    TEST_TASKS,
    command_line,
    parse_settings,
    task_evaluator,
    task_scores,
    write_report,
)

STS_DEV, STS_TEST = DEV_TASKS, TEST_TASKS


def scored_row(variant: str, sts: dict[str, float], tasks: dict[str, tuple[float, float]], **extra: object) -> dict:
    """A variant's row of the report: its STS and task scores (``extra`` keys after its name) and their means."""
    return {
        "variant": variant,
        **extra,
        "sts": sts,
        "tasks": tasks,
        "sts_dev_mean": float(np.mean([sts[task] for task in STS_DEV])),
        "task_dev_mean": float(np.mean([dev for dev, _ in tasks.values()])),
        "task_test_mean": float(np.mean([test for _, test in tasks.values()])),
    }


def plot(rows: list[dict], path: Path) -> None:
    """Bars of the task dev mean and the STS dev mean per variant (the choosing columns)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [row["variant"] for row in rows]
    figure, axes = plt.subplots(1, 2, figsize=(10, 0.5 * len(rows) + 1.5), sharey=True)
    panels = (("task_dev_mean", "task dev mean"), ("sts_dev_mean", "STS dev mean"))
    for axis, (key, title) in zip(axes, panels, strict=True):
        values = [row[key] for row in rows]
        axis.barh(names, values, color="tab:blue")
        axis.set_xlim(min(values) - 1, max(values) + 0.5)
        axis.set_title(title)
        for index, value in enumerate(values):
            axis.text(value, index, f" {value:.2f}", va="center", fontsize=8)
    axes[0].invert_yaxis()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def report(rows: list[dict], output: Path | None, command: str, title: str = "Task levers") -> None:
    """Print the table of ``rows`` (and, with ``output``, write it, its JSON and the plot)."""
    task_names = list(ENGLISH_TASKS)
    header = ["variant", *STS_DEV, "STS dev mean", *(f"{task} dev" for task in task_names), "task dev mean"]
    header += ["stsb-en-test", *(f"{task} test" for task in task_names), "task test mean"]
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    for row in rows:
        cells = [row["variant"], *(f"{row['sts'][task]:.2f}" for task in STS_DEV), f"{row['sts_dev_mean']:.2f}"]
        cells += [f"{row['tasks'][task][0]:.2f}" for task in task_names] + [f"{row['task_dev_mean']:.2f}"]
        cells += [f"{row['sts']['stsb-en-test']:.2f}"]
        cells += [f"{row['tasks'][task][1]:.2f}" for task in task_names] + [f"{row['task_test_mean']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    if output:
        plot(rows, output.with_suffix(".png"))
    write_report(
        output,
        [f"# {title}", "", f"Command: `{command}`", "", *lines],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--teacher", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--set", default="", help="name=value,... shared by every variant")
    parser.add_argument("--variant", action="append", required=True, help='"NAME|name=value,..."')
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()

    evaluate_sts = task_evaluator(arguments.data, ",".join(STS_DEV + STS_TEST))
    rows = []
    for variant in arguments.variant:
        name, _, values = variant.partition("|")
        overrides = {**parse_settings([arguments.set]), **parse_settings([values])}
        started = time.perf_counter()
        from st_static import distill

        corpus = overrides.pop("corpus", arguments.corpus)
        model = distill(arguments.teacher, corpus, work_dir=arguments.work, **overrides)
        seconds = time.perf_counter() - started
        sts = {task: result["score"] for task, result in evaluate_sts(model).items()}
        tasks = task_scores(model, arguments.data / "tasks")
        row = scored_row(name, sts, tasks, settings=overrides, seconds=seconds)
        rows.append(row)
        print(json.dumps(row), flush=True)

    report(rows, arguments.output, command_line("benchmarks.task_levers"))


if __name__ == "__main__":
    main()
