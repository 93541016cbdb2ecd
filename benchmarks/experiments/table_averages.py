"""Averaged tables: does the flagship's distillation gain from averaging its table over steps, or over seeds?

    python -m benchmarks.experiments.table_averages --work MODELS/swe-nomic-embed-text-v1.5-256d.work \
        --second-work MODELS/swe-minilm-256.work --share 0.5 --seed 0 --data ../shared/data --output OUT/averages.md
    python -m benchmarks.experiments.table_averages --average-folders WORK/distillation-A WORK/distillation-B \
        --data ../shared/data --output OUT/soup.md

The distillation trains with sparse Adam at a constant learning rate and keeps the table of the lowest validation
loss. Averaging a table's recent steps (Polyak averaging, an exponential moving average) often gives a better model
than its last step. The first form runs the flagship's distillation stage (``mixed_distributions``'s student,
sentences and targets) once and scores four tables:
- *final*: the trained table, as the build keeps it;
- *EMA 250* and *EMA 1000*: exponential moving averages with time constants of 250 and 1,000 steps, updated every
  10 steps;
- *second half*: the mean of the table over the second half of the steps (every 10th step).
Rows no batch reached get the refinement's ridge map in every variant, as the build gives them.

The second form averages finished tables of one recipe trained with different seeds (a "soup"), against each alone.
Both choose on the STS dev sets and the task dev halves; stsb-en-test and the test halves are reported only.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import command_line, task_evaluator, write_report
from benchmarks.task_levers import ENGLISH_TASKS, STS_DEV, STS_TEST, scored_row, task_scores

EVERY = 10
"""Steps between two updates of the averages."""
TIME_CONSTANTS = (250, 1000)


def averaging_callback(module: Any) -> Any:
    """A trainer callback keeping :data:`TIME_CONSTANTS` moving averages and the second half's mean of the table."""
    from transformers import TrainerCallback

    class TableAverages(TrainerCallback):
        def __init__(self) -> None:
            self.moving: dict[int, Any] = dict.fromkeys(TIME_CONSTANTS)
            self.tail: Any = None
            self.tail_count = 0

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step % EVERY:
                return
            weight = module.embedding.weight.detach()
            for constant, average in self.moving.items():
                if average is None:
                    self.moving[constant] = weight.clone()
                else:
                    decay = float(np.exp(-EVERY / constant))
                    average.mul_(decay).add_(weight, alpha=1 - decay)
            if state.global_step > state.max_steps // 2:
                if self.tail is None:
                    self.tail = weight.clone()
                else:
                    self.tail.add_(weight)
                self.tail_count += 1

    return TableAverages()


def trained_variants(arguments: argparse.Namespace) -> tuple[Any, dict[str, np.ndarray]]:
    """The flagship's distillation stage once: the model and its final, moving-average and second-half tables."""
    import st_static.training.trainer as trainer_module
    from benchmarks.experiments.mixed_distributions import distillation_inputs
    from st_static.settings import RefinementSettings
    from st_static.tensors import to_numpy
    from st_static.training import refine
    from st_static.training.propagation import propagate_refinement

    model, sentences, labels, blocks = distillation_inputs(arguments.work, arguments.second_work, arguments.share)
    module = model[0]
    before = to_numpy(module.word_vectors).copy()
    callback = averaging_callback(module)
    plain_trainer = trainer_module.SparseTableTrainer

    class AveragingTrainer(plain_trainer):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, callbacks: list[Any] | None = None, **kwargs: Any) -> None:
            super().__init__(*args, callbacks=[*(callbacks or []), callback], **kwargs)

    trainer_module.SparseTableTrainer = AveragingTrainer
    try:
        refine(
            model,
            RefinementSettings(seed=arguments.seed),
            sentences=sentences,
            teacher_embeddings=labels,
            teacher_loss_arguments=blocks,
        )
    finally:
        trainer_module.SparseTableTrainer = plain_trainer
    rows = len(before)
    variants = {"final": to_numpy(module.word_vectors).copy()}
    for constant, average in callback.moving.items():
        variants[f"EMA {constant}"] = propagate_refinement(before, to_numpy(average[:rows]).copy())[0]
    tail = callback.tail[:rows] / callback.tail_count
    variants["second half"] = propagate_refinement(before, to_numpy(tail).copy())[0]
    return model, variants


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, help="the first teacher's build's work folder")
    parser.add_argument("--second-work", type=Path, help="the second teacher's build's work folder")
    parser.add_argument("--share", type=float, default=0.5, help="the second teacher's share of the distribution")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--average-folders", type=Path, nargs="+", help="finished tables of one recipe to average")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()

    import torch

    from st_static import load_model

    started = time.perf_counter()
    if arguments.average_folders:
        model = load_model(arguments.average_folders[0])
        tables = [load_model(folder)[0].word_vectors.detach().float().numpy() for folder in arguments.average_folders]
        variants: dict[str, Any] = {
            folder.name: table for folder, table in zip(arguments.average_folders, tables, strict=True)
        }
        variants["mean of the tables"] = np.mean(tables, axis=0)
    elif arguments.work is None or arguments.second_work is None:
        raise SystemExit("Give --work and --second-work, or --average-folders.")
    else:
        model, variants = trained_variants(arguments)
    module = model[0]
    evaluate = task_evaluator(arguments.data, ",".join(STS_DEV + STS_TEST))
    header = ["table", *STS_DEV, "STS dev mean", *(f"{task} dev" for task in ENGLISH_TASKS)]
    header += ["task dev mean", "stsb-en-test", "task test mean"]
    lines = ["# Averaged tables", "", f"Command: `{command_line('benchmarks.experiments.table_averages')}`", ""]
    lines += ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    rows = []
    for name, table in variants.items():
        with torch.no_grad():
            module.word_vectors.copy_(torch.from_numpy(np.ascontiguousarray(table)))
        module.sync_token_rows()
        sts = {task: result["score"] for task, result in evaluate(model).items()}
        tasks = task_scores(model, arguments.data / "tasks")
        row = scored_row(name, sts, tasks, seed=arguments.seed)
        rows.append(row)
        print(json.dumps({key: row[key] for key in ("variant", "sts_dev_mean", "task_dev_mean")}), flush=True)
        cells = [name, *(f"{sts[task]:.2f}" for task in STS_DEV), f"{row['sts_dev_mean']:.2f}"]
        cells += [*(f"{tasks[task][0]:.2f}" for task in ENGLISH_TASKS), f"{row['task_dev_mean']:.2f}"]
        cells += [f"{sts['stsb-en-test']:.2f}", f"{row['task_test_mean']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"{time.perf_counter() - started:.0f} s in all."]
    write_report(arguments.output, lines, rows)


if __name__ == "__main__":
    main()
