"""Distillation against two teachers at once, from a finished build's cached stages (issue 54 item 1).

    python -m benchmarks.experiments.two_teachers --work MODELS/swe-minilm-256.work \
        --second-teacher TEACHERS/nomic-embed-text-v1.5 --prompt "clustering: " --sentences 100000 \
        --weights 0,0.5,0.75,1 --data ../shared/data --cache OUT/nomic-targets \
        --output benchmarks/results/DATE-two-teachers.md

The first teacher's build gives the PCA-stage table and the distillation sentences with their targets. The second
teacher encodes a random sample of those sentences (cached in ``--cache``, resumable). Each weight ``w`` distils the
PCA-stage table on the sample with targets whose cosines are ``(1 - w)`` times the first teacher's plus ``w`` times
the second's (``st_static.extraction.target_mix``); ``w = 0`` on the sample against the full build's distillation
row shows what the smaller sample costs. Scores: the STS dev sets and the English task files' dev halves choose;
stsb-en-test and the task test halves are reported only.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.common import command_line, only_folder, task_evaluator, write_report
from benchmarks.task_levers import ENGLISH_TASKS, STS_DEV, STS_TEST, task_scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="the first teacher's build's work folder")
    parser.add_argument("--second-teacher", required=True)
    parser.add_argument("--prompt", default="", help="the second teacher's prompt")
    parser.add_argument("--sentences", type=int, default=100_000, help="sample of the distillation sentences")
    parser.add_argument("--weights", default="0,0.5,1", help="the second teacher's weights to try")
    parser.add_argument("--steps", type=int, default=5_000)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()

    from st_static import load_model
    from st_static.extraction.target_mix import run_second_teacher
    from st_static.extraction.teacher_model import load_teacher
    from st_static.settings import RefinementSettings
    from st_static.stages.extraction_folder import ExtractionStage
    from st_static.training import refine

    extraction = ExtractionStage.open(only_folder(arguments.work, "completion-*"))
    reduction = only_folder(arguments.work, "pca-*")
    sentences = extraction.sentences()
    first = extraction.teacher_embeddings()
    started = time.perf_counter()
    teacher = load_teacher(arguments.second_teacher, precision="auto")
    second = run_second_teacher(teacher, sentences, arguments.prompt, arguments.sentences, arguments.cache)
    del teacher
    chosen = [sentences[index] for index in second.sample]
    encode_seconds = time.perf_counter() - started
    print(f"second teacher: {len(chosen)} sentences in {encode_seconds:.0f} s", flush=True)

    evaluate_sts = task_evaluator(arguments.data, ",".join(STS_DEV + STS_TEST))
    rows = []
    for weight in (float(value) for value in arguments.weights.split(",")):
        started = time.perf_counter()
        targets = second.mixed_with(first, weight)
        settings = RefinementSettings(steps=arguments.steps)
        model = refine(load_model(reduction), settings, sentences=chosen, teacher_embeddings=targets).model
        seconds = time.perf_counter() - started
        sts = {task: result["score"] for task, result in evaluate_sts(model).items()}
        tasks = task_scores(model, arguments.data / "tasks")
        row = {
            "weight": weight,
            "seconds": seconds,
            "sts": sts,
            "tasks": tasks,
            "sts_dev_mean": float(np.mean([sts[task] for task in STS_DEV])),
            "task_dev_mean": float(np.mean([dev for dev, _ in tasks.values()])),
            "task_test_mean": float(np.mean([test for _, test in tasks.values()])),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)

    task_names = list(ENGLISH_TASKS)
    header = ["second teacher's weight", *STS_DEV, "STS dev mean", *(f"{task} dev" for task in task_names)]
    header += ["task dev mean", "stsb-en-test", "task test mean", "distillation s"]
    lines = ["| " + " | ".join(header) + " |", "| ---: |" + " ---: |" * (len(header) - 1)]
    for row in rows:
        cells = [f"{row['weight']:.2f}", *(f"{row['sts'][task]:.2f}" for task in STS_DEV)]
        cells += [f"{row['sts_dev_mean']:.2f}", *(f"{row['tasks'][task][0]:.2f}" for task in task_names)]
        cells += [f"{row['task_dev_mean']:.2f}", f"{row['sts']['stsb-en-test']:.2f}", f"{row['task_test_mean']:.2f}"]
        cells.append(f"{row['seconds']:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    title = "Two teachers: distillation targets mixing the first teacher's cosines with the second's"
    notes = [f"Second teacher's pass: {len(chosen):,} sentences in {encode_seconds:.0f} s."]
    lines = [f"# {title}", "", f"Command: `{command_line('benchmarks.experiments.two_teachers')}`", "", *lines, ""]
    write_report(arguments.output, [*lines, *notes], rows)


if __name__ == "__main__":
    main()
