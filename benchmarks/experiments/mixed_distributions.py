"""Two teachers mixed as neighbour distributions instead of cosines (issue 54 item 1).

    python -m benchmarks.experiments.mixed_distributions --work MODELS/swe-nomic-embed-text-v1.5-256d.work \
        --second-work MODELS/swe-minilm-256.work --share 0.6 --seed 0 --data ../shared/data --output OUT/mixed.md

The build's two-teacher distillation (``--second-teacher``) trains the student's softmax over in-batch cosines
towards the softmax of the *mixed cosines*, ``softmax((1 - w) T1 + w T2)`` (``st_static.extraction.target_mix``).
Here the target is the *mixture of the two teachers' distributions*, ``(1 - w) softmax(T1) + w softmax(T2)``: each
teacher keeps its own nearest neighbours in the target, instead of both being blurred into one ranking.

The student is the first build's PCA-stage table (``--work``: its only 256-d ``pca-*`` folder), trained with the
build's distillation settings (seeded by ``--seed``) on every distillation sentence; both teachers' vectors are the
extraction stages' targets of the two builds (``--second-work`` must be a build of the same sentences). The loss is
:class:`MixedDistributionsLoss`, registered for this script only. Scores: the distillation stage (no fallback rows
or pieces, float32); its control is ``benchmarks.experiments.word_concat --variant 0:7:W:SEED`` (the same student
and sentences, cosines mixed). The STS dev sets and the task dev halves choose; stsb-en-test and the test halves are
reported only.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import torch
from sentence_transformers.util import cos_sim
from torch import Tensor

from benchmarks.common import command_line, only_folder, task_evaluator, write_report
from benchmarks.task_levers import ENGLISH_TASKS, STS_DEV, STS_TEST, scored_row, task_scores
from st_static.losses.registry import register_loss
from st_static.losses.similarity_distillation import SimilarityDistillationLoss


@register_loss("mixed-distributions", data="teacher_embeddings")
class MixedDistributionsLoss(SimilarityDistillationLoss):
    """The similarity distillation loss against ``(1 - share) softmax(T1) + share softmax(T2)``, where the labels are
    the first teacher's ``first_dim`` columns followed by the second teacher's (set on the class by :func:`main`)."""

    first_dim = 0
    share = 0.5

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        student = embeddings[0]
        teacher = self._check_teacher_embeddings(labels, student)
        count = student.shape[0]
        if count < 2:
            return student.sum() * 0.0
        diagonal = torch.eye(count, dtype=torch.bool, device=student.device)
        with torch.no_grad():
            blocks = (teacher[:, : self.first_dim], teacher[:, self.first_dim :])
            probabilities = [
                (cos_sim(block, block) / self.temperature).masked_fill(diagonal, -math.inf).softmax(dim=1)
                for block in blocks
            ]
            target = (1 - self.share) * probabilities[0] + self.share * probabilities[1]
        logits = (cos_sim(student, student) / self.temperature).masked_fill(diagonal, -math.inf)
        return -(target * logits.log_softmax(dim=1).masked_fill(diagonal, 0.0)).sum(dim=1).mean()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="the first teacher's build's work folder")
    parser.add_argument("--second-work", type=Path, required=True, help="the second teacher's build's work folder")
    parser.add_argument("--share", type=float, default=0.6, help="the second teacher's share of the distribution")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()

    from st_static import load_model
    from st_static.extraction.target_mix import mix_targets
    from st_static.settings import RefinementSettings
    from st_static.stages.extraction_folder import ExtractionStage
    from st_static.training import refine

    first, second = (
        ExtractionStage.open(only_folder(work, "completion-*")) for work in (arguments.work, arguments.second_work)
    )
    if first.sentences() != second.sentences():
        raise SystemExit("The two builds read different sentences: give two builds of the same corpus.")
    reductions = [path for path in sorted(arguments.work.glob("pca-*")) if load_model(path)[0].embedding_dim == 256]
    if len(reductions) != 1:
        raise SystemExit(f"{arguments.work} holds {len(reductions)} 256-d PCA stages, not 1.")
    targets = [np.asarray(stage.teacher_embeddings(), dtype=np.float32) for stage in (first, second)]
    MixedDistributionsLoss.first_dim = targets[0].shape[1]
    MixedDistributionsLoss.share = arguments.share
    labels = mix_targets(targets, [0.5, 0.5])  # each block centred and normalised; the loss splits them again

    started = time.perf_counter()
    settings = RefinementSettings(loss="mixed-distributions", seed=arguments.seed)
    model = refine(load_model(reductions[0]), settings, sentences=first.sentences(), teacher_embeddings=labels).model
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
