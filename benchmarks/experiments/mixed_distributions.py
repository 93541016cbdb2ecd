"""Two teachers mixed as neighbour distributions instead of cosines (issue 54 item 1).

    python -m benchmarks.experiments.mixed_distributions --work MODELS/swe-nomic-embed-text-v1.5-256d.work \
        --second-work MODELS/swe-minilm-256.work --share 0.6 --seed 0 --data ../shared/data --output OUT/mixed.md

The build's two-teacher distillation first trained the student's softmax over in-batch cosines towards the
softmax of the *mixed cosines*, ``softmax((1 - w) T1 + w T2)`` (now ``--second-teacher-mix cosines``). Here the
target is the *mixture of the two teachers' distributions*, ``(1 - w) softmax(T1) + w softmax(T2)``: each
teacher keeps its own nearest neighbours in the target, instead of both being blurred into one ranking.

The student is the first build's PCA-stage table (``--work``: its only 256-d ``pca-*`` folder), trained with the
build's distillation settings (seeded by ``--seed``) on every distillation sentence; both teachers' vectors are the
extraction stages' targets of the two builds (``--second-work`` must be a build of the same sentences). The loss is
the similarity distillation loss reading the two teachers' blocks apart (``teacher_dims``, ``teacher_weights``), as
the build's ``second_teacher_mix=distributions`` does over its second teacher's sample. Scores: the distillation
stage (no fallback rows or pieces, float32); its control is ``benchmarks.experiments.word_concat --variant
0:7:W:SEED`` (the same student and sentences, cosines mixed). The STS dev sets and the task dev halves choose;
stsb-en-test and the test halves are reported only.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import command_line, only_folder, task_evaluator, write_report
from benchmarks.task_levers import ENGLISH_TASKS, STS_DEV, STS_TEST, scored_row, task_scores


def distillation_inputs(
    work: Path, second_work: Path, share: float
) -> tuple[Any, list[str], np.ndarray, dict[str, list[Any]]]:
    """The first build's 256-d PCA-stage table, the distillation sentences, both teachers' targets side by side and
    the loss arguments that read them apart (``teacher_dims``, ``teacher_weights``) at the second teacher's ``share``.
    """
    from st_static import load_model
    from st_static.extraction.target_mix import SecondTeacherTargets
    from st_static.stages.extraction_folder import ExtractionStage

    first, second = (ExtractionStage.open(only_folder(folder, "completion-*")) for folder in (work, second_work))
    if first.sentences() != second.sentences():
        raise SystemExit("The two builds read different sentences: give two builds of the same corpus.")
    reductions = [path for path in sorted(work.glob("pca-*")) if load_model(path)[0].embedding_dim == 256]
    if len(reductions) != 1:
        raise SystemExit(f"{work} holds {len(reductions)} 256-d PCA stages, not 1.")
    first_targets, second_targets = (
        np.asarray(stage.teacher_embeddings(), dtype=np.float32) for stage in (first, second)
    )
    # Every sentence read by both teachers, side by side as the build's distributions mix sets them.
    second_teacher = SecondTeacherTargets(sample=np.arange(len(second_targets)), vectors=second_targets)
    labels, blocks = second_teacher.side_by_side(first_targets, share)
    return load_model(reductions[0]), first.sentences(), labels, blocks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="the first teacher's build's work folder")
    parser.add_argument("--second-work", type=Path, required=True, help="the second teacher's build's work folder")
    parser.add_argument("--share", type=float, default=0.6, help="the second teacher's share of the distribution")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()

    from st_static.settings import RefinementSettings
    from st_static.training import refine

    student, sentences, labels, blocks = distillation_inputs(arguments.work, arguments.second_work, arguments.share)

    started = time.perf_counter()
    settings = RefinementSettings(seed=arguments.seed)
    model = refine(
        student, settings, sentences=sentences, teacher_embeddings=labels, teacher_loss_arguments=blocks
    ).model
    seconds = time.perf_counter() - started
    sts = {
        task: result["score"]
        for task, result in task_evaluator(arguments.data, ",".join(STS_DEV + STS_TEST))(model).items()
    }
    tasks = task_scores(model, arguments.data / "tasks")
    variant = f"share {arguments.share}, seed {arguments.seed}"
    row = scored_row(variant, sts, tasks, share=arguments.share, seed=arguments.seed, seconds=seconds)
    print(json.dumps(row), flush=True)
    header = ["share", "seed", *STS_DEV, "STS dev mean", *(f"{task} dev" for task in ENGLISH_TASKS)]
    header += ["task dev mean", "stsb-en-test", "task test mean"]
    cells = [f"{arguments.share:.1f}", str(arguments.seed), *(f"{sts[task]:.2f}" for task in STS_DEV)]
    cells += [f"{row['sts_dev_mean']:.2f}", *(f"{tasks[task][0]:.2f}" for task in ENGLISH_TASKS)]
    cells += [f"{row['task_dev_mean']:.2f}", f"{sts['stsb-en-test']:.2f}", f"{row['task_test_mean']:.2f}"]
    lines = ["# Two teachers mixed as neighbour distributions", ""]
    lines += [f"Command: `{command_line('benchmarks.experiments.mixed_distributions')}`", ""]
    lines += ["| " + " | ".join(header) + " |", "|" + " ---: |" * len(header), "| " + " | ".join(cells) + " |"]
    write_report(arguments.output, lines, [row])


if __name__ == "__main__":
    main()
