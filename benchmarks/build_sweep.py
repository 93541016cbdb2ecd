"""Build variants over one shared stage cache: dev scores, test scores (reported only) and costs per variant.

    python benchmarks/build_sweep.py --corpus ../shared/data/corpus/en.txt --data ../shared/data --work runs/sweep \
        --set sentences_per_word=5 \
        --variant "lr 1e-3|learning_rate=0.001" --variant "lr 3e-3|learning_rate=0.003" \
        --output benchmarks/results/DATE-distillation-sweep.md

Each ``--variant "NAME|name=value,name=value"`` is a build with those settings on top of ``--set``; variants that
share a stage's settings share its cached output, so a sweep over distillation settings runs the teacher once.
Settings are chosen on the dev columns (stsb-en-dev, sick-dev, msrp-dev) and the validation loss; stsb-en-test is
printed for the record and must not be used to choose. Writes a markdown table, its JSON and a plot of the
validation-loss curves (``.png``).
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

DEV_TASKS = ("stsb-en-dev", "sick-dev", "msrp-dev")
TEST_TASKS = ("stsb-en-test",)


def parse_values(text: str) -> dict[str, object]:
    """``name=value,name=value``; values are read as JSON when they parse (numbers, booleans), else as text."""
    values: dict[str, object] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = item.partition("=")
        try:
            values[name] = json.loads(value)
        except json.JSONDecodeError:
            values[name] = value
    return values


def run_variant(name: str, values: dict[str, object], arguments: argparse.Namespace, evaluate) -> dict:
    """Build one variant (reusing cached stages) and return its row."""
    settings = BuildSettings.from_flat(corpus=str(arguments.corpus), **{**parse_values(arguments.set), **values})
    started = time.perf_counter()
    with folder_lock(arguments.work):
        result = run_pipeline(settings, arguments.work, evaluate=evaluate)
    scores = result.stage_scores
    final_stage = list(scores)[-1]
    return {
        "variant": name,
        "settings": values,
        "seconds": time.perf_counter() - started,
        "stage_seconds": result.seconds,
        "stage_scores": {
            stage: {task: score["score"] for task, score in tasks.items()} for stage, tasks in scores.items()
        },
        "final": {task: score["score"] for task, score in scores[final_stage].items()},
        "best_step": result.training.get("best_step"),
        "steps": result.training.get("steps"),
        "best_validation_loss": result.training.get("best_validation_loss"),
        "train_seconds": result.training.get("train_seconds"),
        "history": [(record["step"], record["loss"]) for record in result.training.get("history", [])],
    }


def write_report(rows: list[dict], arguments: argparse.Namespace) -> None:
    columns = [*DEV_TASKS, *TEST_TASKS]
    lines = [
        f"# Build variants ({arguments.corpus.name}, base settings: `{arguments.set or 'defaults'}`)",
        "",
        "Command: `python benchmarks/build_sweep.py --corpus "
        f"{arguments.corpus.name} --set '{arguments.set}' "
        + " ".join(
            f"--variant '{row['variant']}|{','.join(f'{k}={v}' for k, v in row['settings'].items())}'" for row in rows
        )
        + "`. Spearman x100 (msrp-dev: average precision x100). Choose on dev; stsb-en-test is reported only. "
        "Stage caches are shared, so a variant's time counts only the stages it did not reuse.",
        "",
        "| variant | " + " | ".join(columns) + " | dev mean | best step / steps | best val. loss | train s |",
        "| --- | " + " | ".join("---:" for _ in columns) + " | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        dev = [row["final"].get(task) for task in DEV_TASKS]
        known = [value for value in dev if value is not None]
        loss = row["best_validation_loss"]
        lines.append(
            f"| {row['variant']} | "
            + " | ".join(f"{row['final'][task]:.2f}" if task in row["final"] else "-" for task in columns)
            + f" | {sum(known) / len(known):.2f} | {row['best_step']} / {row['steps']} | "
            + (f"{loss:.4f}" if loss is not None else "-")
            + f" | {row['train_seconds'] or 0:.0f} |"
        )
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text("\n".join(lines) + "\n", encoding="utf-8")
    arguments.output.with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    plot(rows, arguments.output.with_suffix(".png"))
    print("\n".join(lines))


def plot(rows: list[dict], path: Path) -> None:
    """Left: validation loss against step, one line per variant. Right: the final scores of each variant."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12, 4.5), layout="constrained")
    curves, bars = figure.subplots(1, 2, width_ratios=(1, 1.2))
    for row in rows:
        if len(row["history"]) > 1:
            steps, losses = zip(*row["history"][1:], strict=True)
            curves.plot(steps, losses, marker=".", label=row["variant"])
    curves.set_xlabel("step")
    curves.set_ylabel("validation loss (comparable only at equal batch size and temperature)")
    curves.grid(alpha=0.3)
    curves.legend(fontsize=6)
    tasks = [*DEV_TASKS, *TEST_TASKS]
    width = 0.8 / len(rows)
    for index, row in enumerate(rows):
        positions = [task_index + index * width for task_index in range(len(tasks))]
        bars.bar(positions, [row["final"].get(task, 0.0) for task in tasks], width, label=row["variant"])
    bars.set_xticks([task_index + 0.4 - width / 2 for task_index in range(len(tasks))], tasks)
    low = min(row["final"].get(task, 100.0) for row in rows for task in tasks)
    bars.set_ylim(low - 2, None)
    bars.set_ylabel("score x100 (choose on dev; stsb-en-test reported only)")
    bars.grid(alpha=0.3, axis="y")
    bars.legend(fontsize=6)
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True, help="Folder with sts/ and pairclass/ dev and test files.")
    parser.add_argument("--work", type=Path, required=True, help="Stage cache shared by every variant.")
    parser.add_argument("--set", default="", help="Settings of every variant, name=value,name=value.")
    parser.add_argument("--variant", action="append", required=True, help='"NAME|name=value,name=value"')
    parser.add_argument("--output", type=Path, required=True)
    arguments = parser.parse_args()

    evaluate = task_evaluator(arguments.data, ",".join([*DEV_TASKS, *TEST_TASKS]))
    rows = []
    for item in arguments.variant:
        name, _, values = item.partition("|")
        rows.append(run_variant(name, parse_values(values), arguments, evaluate))
        print(json.dumps({key: rows[-1][key] for key in ("variant", "final", "best_step", "steps")}), flush=True)
        write_report(rows, arguments)  # after every variant: an interrupted sweep keeps what it measured


if __name__ == "__main__":
    main()
