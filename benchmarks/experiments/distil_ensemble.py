"""Issue 64 experiment: train a folded ensemble as one table, by similarity distillation on a build's cached targets.

The members of an ensemble are trained apart (or not by us: potion, WordLlama) and then concatenated; no step sees the
concatenation. Here the folded ensemble (one table and a plain ``Normalize``, as ``st-static compress`` writes it) is
refined with ``SimilarityDistillationLoss`` on the distillation sentences of a finished build's work folder and that
build's teacher vectors (with ``--second-teacher``: both teachers' neighbour distributions, as the flagship trains),
so the blocks learn to agree where the teachers do. Both forms are scored on dev (STS dev sets, task dev halves: the
scoring of ``benchmarks.ensembles``), test columns reported only; ``st-static evaluate OUT`` scores the saved one.

    python -m benchmarks.experiments.distil_ensemble --ensemble MODELS/swe-nomic-potion-wordllama-768d \\
        --targets MODELS/swe-nomic-minilm-256d.work/completion-* \\
        --second-teacher MODELS/swe-nomic-minilm-256d.work/second-teacher-* --out MODELS/ensemble-distilled
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.ensembles import score
from st_static import load_model, save_model
from st_static.extraction.target_mix import SecondTeacherTargets
from st_static.settings import RefinementSettings
from st_static.stages.extraction_folder import ExtractionStage
from st_static.training import refine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ensemble", required=True, help="A folded ensemble folder (st-static compress's output).")
    parser.add_argument("--targets", required=True, help="A finished extraction or completion folder of a build.")
    parser.add_argument("--second-teacher", help="That build's second-teacher folder (sample.npy, targets.npy).")
    parser.add_argument("--second-teacher-weight", type=float, default=0.5)
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--learning-rate", type=float, default=0.003)
    parser.add_argument("--out", required=True, help="Where the trained ensemble is saved (a new folder).")
    parser.add_argument("--data", type=Path, required=True, help="The shared data folder (dev sets, task files).")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if out.exists():
        parser.error(f"--out {out} exists; give a new folder.")

    model = load_model(args.ensemble).float()  # a float16 table cannot take optimiser steps
    before = score(model, args.data)
    extraction = ExtractionStage.open(args.targets)
    sentences = extraction.sentences()
    targets = np.asarray(extraction.teacher_embeddings(), dtype=np.float32)
    loss_arguments = None
    if args.second_teacher:
        second = SecondTeacherTargets.open(args.second_teacher)
        sentences = [sentences[index] for index in second.sample]
        targets, loss_arguments = second.side_by_side(targets, args.second_teacher_weight)
    settings = RefinementSettings(steps=args.steps, batch_size=args.batch_size, learning_rate=args.learning_rate)
    started = time.perf_counter()
    result = refine(
        model,
        settings,
        sentences=sentences,
        teacher_embeddings=targets,
        teacher_loss_arguments=loss_arguments,
        output_dir=out.with_name(out.name + ".training"),
    )
    seconds = time.perf_counter() - started
    save_model(result.model, out)  # a fresh empty-text Dense for the trained table (ST's own save keeps the old)
    record = {
        "ensemble": args.ensemble,
        "targets": args.targets,
        "second_teacher": args.second_teacher,
        "sentences": len(sentences),
        "steps": args.steps,
        "batch_size": args.batch_size,
        "learning_rate": args.learning_rate,
        "seconds": round(seconds, 1),
        "best_step": result.best_step,
        "best_validation_loss": result.best_validation_loss,
        "before": before,
        "after": score(result.model, args.data),
    }
    (out / "distil_ensemble.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print("| form | stsb-en-test | sick-dev | STS dev mean | task dev mean | dev mean | task test mean |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for form in ("before", "after"):
        row = record[form]
        print(
            f"| {form} | {row['sts']['stsb-en-test']:.2f} | {row['sts']['sick-dev']:.2f} | {row['sts_dev_mean']:.2f} "
            f"| {row['task_dev_mean']:.2f} | {row['dev_mean']:.2f} | {row['task_test_mean']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
