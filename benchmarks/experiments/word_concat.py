"""Both teachers' word vectors in one table: the raw tables of two builds over the same corpus concatenated before the
sentence PCA, then distilled on both teachers' mixed similarities (issue 54 item 1).

    python -m benchmarks.experiments.word_concat --work MODELS/swe-nomic-embed-text-v1.5-256d.work \
        --second-work MODELS/swe-minilm-256.work --variant 0:7:0.6 --variant 0.3:7:0.6 --data ../shared/data \
        --output OUT/word-concat.md

Both work folders must hold a finished completion stage of the same vocabulary and sentences (two builds of the same
corpus and settings whose teachers share a tokenizer: nomic-embed-text-v1.5 and all-MiniLM-L6-v2 both read
bert-base-uncased's). A variant ``W:R:T``:

* scales each raw table so that its sentence vectors (means over the PCA sample) have unit total variance, times the
  square root of its share (``W`` for the second table, ``1 - W`` for the first) and concatenates them;
* fits the sentence PCA with ABTT on the concatenation, removing ``R`` components, and keeps ``--dim``;
* rescales the reduced table to the median row norm of the first build's own PCA stage of ``--dim`` dimensions, so
  that Adam's steps meet rows of the size they meet in that build;
* distils it on every distillation sentence with targets whose cosines are ``(1 - T)`` times the first teacher's
  plus ``T`` times the second's (``st_static.extraction.target_mix``; both teachers' vectors are the extraction
  stages' targets, no new teacher pass).

A fourth field ``:SEED`` sets the distillation's seed (validation split, batch order; default 0). ``0:R:T`` is the
first build's own words (the two-teacher flagship's recipe at ``T``). Scores: the STS dev sets and the English task
files' dev halves choose; stsb-en-test and the task test halves are reported only.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.common import command_line, only_folder, task_evaluator, write_report
from benchmarks.task_levers import ENGLISH_TASKS, STS_DEV, STS_TEST, scored_row, task_scores


def _variant(text: str) -> tuple[float, int, float, int]:
    word_share, removed, target_share, *seed = text.split(":")
    return float(word_share), int(removed), float(target_share), int(seed[0]) if seed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="the first teacher's build's work folder")
    parser.add_argument("--second-work", type=Path, required=True, help="the second teacher's build's work folder")
    parser.add_argument(
        "--variant", action="append", type=_variant, required=True, help="W:R:T or W:R:T:SEED (see above)"
    )
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()

    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Normalize

    from st_static import load_model
    from st_static.extraction.target_mix import mix_targets
    from st_static.model.inference import encode
    from st_static.model.static_word_average import StaticWordAverage
    from st_static.reduction.pca import fit_pca
    from st_static.settings import RefinementSettings
    from st_static.stages.extraction_folder import ExtractionStage
    from st_static.tensors import to_numpy
    from st_static.training import refine

    first_stage = ExtractionStage.open(only_folder(arguments.work, "completion-*"))
    second_stage = ExtractionStage.open(only_folder(arguments.second_work, "completion-*"))
    first, second = load_model(first_stage.model_path)[0], load_model(second_stage.model_path)[0]
    if first.tokenizer.to_str() != second.tokenizer.to_str() or first_stage.sentences() != second_stage.sentences():
        raise SystemExit("The two builds differ in vocabulary or sentences: give two builds of the same corpus.")
    reductions = [load_model(path)[0] for path in sorted(arguments.work.glob("pca-*")) if path.is_dir()]
    reductions = [module for module in reductions if module.embedding_dim == arguments.dim]
    if len(reductions) != 1:
        raise SystemExit(f"{arguments.work} holds {len(reductions)} PCA stages of {arguments.dim} dimensions, not 1.")
    reference = to_numpy(reductions[0].word_vectors)
    reference_norm = float(np.median(np.linalg.norm(reference, axis=1)))

    pca_sentences = first_stage.pca_sentences()
    sentence_vectors = [encode(module, pca_sentences, normalize=False).astype(np.float64) for module in (first, second)]
    known = np.all([np.abs(vectors).sum(axis=1) > 0 for vectors in sentence_vectors], axis=0)
    sentence_vectors = [vectors[known] for vectors in sentence_vectors]
    variances = [float(((vectors - vectors.mean(0)) ** 2).sum(axis=1).mean()) for vectors in sentence_vectors]
    tables = [to_numpy(module.word_vectors) for module in (first, second)]
    sentences = first_stage.sentences()
    targets = [np.asarray(stage.teacher_embeddings(), dtype=np.float32) for stage in (first_stage, second_stage)]

    evaluate_sts = task_evaluator(arguments.data, ",".join(STS_DEV + STS_TEST))
    rows = []
    for word_share, removed, target_share, seed in arguments.variant:
        started = time.perf_counter()
        scales = [np.sqrt((1 - word_share) / variances[0]), np.sqrt(word_share / variances[1])]
        transform = fit_pca(
            np.concatenate([vectors * scale for vectors, scale in zip(sentence_vectors, scales, strict=True)], 1),
            dim=arguments.dim,
            removed_components=removed,
        )
        reduced = transform.apply(
            np.concatenate([table * scale for table, scale in zip(tables, scales, strict=True)], 1)
        )
        reduced *= reference_norm / np.median(np.linalg.norm(reduced, axis=1))
        module = StaticWordAverage(first.tokenizer, reduced, metadata=first.metadata)
        model = SentenceTransformer(modules=[module, Normalize()], device="cpu")
        mixed = mix_targets(targets, [1 - target_share, target_share])
        model = refine(model, RefinementSettings(seed=seed), sentences=sentences, teacher_embeddings=mixed).model
        seconds = time.perf_counter() - started
        sts = {task: result["score"] for task, result in evaluate_sts(model).items()}
        tasks = task_scores(model, arguments.data / "tasks")
        row = scored_row(
            f"{word_share}:{removed}:{target_share}:{seed}",
            sts,
            tasks,
            word_share=word_share,
            removed_components=removed,
            target_share=target_share,
            seed=seed,
            seconds=seconds,
        )
        rows.append(row)
        print(json.dumps(row), flush=True)

    task_names = list(ENGLISH_TASKS)
    header = ["second words' share", "ABTT", "second targets' share", "seed", *STS_DEV, "STS dev mean"]
    header += [*(f"{task} dev" for task in task_names), "task dev mean", "stsb-en-test", "task test mean", "s"]
    lines = ["| " + " | ".join(header) + " |", "|" + " ---: |" * len(header)]
    for row in rows:
        cells = [
            f"{row['word_share']:.1f}",
            str(row["removed_components"]),
            f"{row['target_share']:.1f}",
            str(row["seed"]),
        ]
        cells += [*(f"{row['sts'][task]:.2f}" for task in STS_DEV), f"{row['sts_dev_mean']:.2f}"]
        cells += [*(f"{row['tasks'][task][0]:.2f}" for task in task_names), f"{row['task_dev_mean']:.2f}"]
        cells += [f"{row['sts']['stsb-en-test']:.2f}", f"{row['task_test_mean']:.2f}", f"{row['seconds']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    title = "Both teachers' word vectors concatenated before the PCA, distilled on mixed targets"
    lines = [f"# {title}", "", f"Command: `{command_line('benchmarks.experiments.word_concat')}`", "", *lines]
    write_report(arguments.output, lines, rows)


if __name__ == "__main__":
    main()
