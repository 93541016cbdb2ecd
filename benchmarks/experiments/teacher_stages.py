"""Where a teacher's quality is kept or lost: STS dev sets and task dev halves after every stage of a build
(extraction, completion, PCA, distillation), for several teachers or prompts over one corpus.

    python -m benchmarks.experiments.teacher_stages --corpus CORPUS --data ../shared/data --work WORK \
        --variant "MiniLM|teacher=sentence-transformers/all-MiniLM-L6-v2" \
        --variant "nomic, clustering prompt|teacher=TEACHERS/nomic-embed-text-v1.5,prompt=clustering: " \
        --set complete_words=0 --output benchmarks/results/DATE-teacher-stages.md

A full build's work folder (``st-static build --out DIR``: ``--work DIR.work``) is scored without a new teacher pass
when the variant repeats the build's settings (its ``--corpus`` files, ``--set leave_out_sources=["chitchat"]``):
every stage is taken from the cache; a variant that changes only later settings (``dim``, ``steps``) reruns only
those stages. A variant's ``work=FOLDER`` scores another build's work folder in the same table. ``--final-only``
scores each variant's published model only (stage "final"), not every stage.

Each variant is ``st_static.distill`` over one shared stage cache with an evaluator that scores every stage: the STS
dev sets (and stsb-en-test, reported only) and the English task files' dev halves (test halves reported only),
as ``benchmarks.task_levers`` cuts them. Answers whether a teacher's word vectors carry topics right after
extraction (MiniLM) or only after distillation (EmbeddingGemma's token vectors carry the sentence, issue 29).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.common import command_line, parse_settings, task_evaluator, write_report
from benchmarks.task_levers import ENGLISH_TASKS, STS_DEV, STS_TEST, task_scores

STAGES = ("extraction", "completion", "pca", "distillation")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="append", required=True, help="repeat it to read several files as one")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--set", default="", help="name=value,... shared by every variant")
    parser.add_argument("--variant", action="append", required=True, help='"NAME|teacher=...,name=value,..."')
    parser.add_argument("--output", type=Path)
    parser.add_argument("--final-only", action="store_true", help="score only each variant's published model")
    arguments = parser.parse_args()

    from st_static.files import folder_lock
    from st_static.pipeline.run import run_pipeline
    from st_static.settings import BuildSettings

    evaluate_sts = task_evaluator(arguments.data, ",".join(STS_DEV + STS_TEST))

    def evaluate(model: object) -> dict:
        sts = {task: result["score"] for task, result in evaluate_sts(model).items()}
        return {"sts": sts, "tasks": task_scores(model, arguments.data / "tasks")}

    rows = []
    for variant in arguments.variant:
        name, _, values = variant.partition("|")
        overrides = {**parse_settings([arguments.set]), **parse_settings([values])}
        work = Path(str(overrides.pop("work", arguments.work)))
        settings = BuildSettings.from_flat(corpus=arguments.corpus, **overrides)
        started = time.perf_counter()
        work.mkdir(parents=True, exist_ok=True)
        with folder_lock(work):
            result = run_pipeline(settings, work, evaluate=None if arguments.final_only else evaluate)
        stage_scores = {"final": evaluate(result.model)} if arguments.final_only else result.stage_scores
        for stage, scores in stage_scores.items():
            row = {
                "variant": name,
                "stage": stage,
                "settings": overrides,
                "seconds": result.seconds,
                **scores,
                "sts_dev_mean": float(np.mean([scores["sts"][task] for task in STS_DEV])),
                "task_dev_mean": float(np.mean([dev for dev, _ in scores["tasks"].values()])),
                "task_test_mean": float(np.mean([test for _, test in scores["tasks"].values()])),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
        print(f"{name}: {time.perf_counter() - started:.0f} s", flush=True)

    task_names = list(ENGLISH_TASKS)
    header = ["variant", "stage", *STS_DEV, "STS dev mean", *(f"{task} dev" for task in task_names), "task dev mean"]
    header += ["stsb-en-test", "task test mean"]
    lines = ["| " + " | ".join(header) + " |", "| --- | --- |" + " ---: |" * (len(header) - 2)]
    for row in rows:
        cells = [row["variant"], row["stage"], *(f"{row['sts'][task]:.2f}" for task in STS_DEV)]
        cells += [f"{row['sts_dev_mean']:.2f}", *(f"{row['tasks'][task][0]:.2f}" for task in task_names)]
        cells += [f"{row['task_dev_mean']:.2f}", f"{row['sts']['stsb-en-test']:.2f}", f"{row['task_test_mean']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    command = command_line("benchmarks.experiments.teacher_stages")
    title = "Teacher stages: STS and task dev halves after every stage"
    write_report(arguments.output, [f"# {title}", "", f"Command: `{command}`", "", *lines], rows)


if __name__ == "__main__":
    main()
