"""Quality of steps 1 and 2 (the paper's ablation): extraction only, sentence-level PCA with and without ABTT,
word-level PCA, at the target dimension and at the largest one the teacher allows.

    python -m benchmarks.extraction_stages EXTRACTION_DIR [--dim 256] [--data ../shared/data]

EXTRACTION_DIR is an ``extraction-*`` stage folder of ``st-static build`` (or the output of ``run_extraction``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize

from benchmarks.common import (
    ExtractionStage,
    ReductionSettings,
    StaticWordAverage,
    default_data_dir,
    evaluate_tasks,
    find_tasks,
    fit_reduction,
    load_model,
    model_encoder,
    removed_components_for,
    to_numpy,
)

TASKS = ("stsb-en-dev", "sick-dev", "stsb-en-test")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("extraction", type=Path)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--data", type=Path, default=default_data_dir())
    arguments = parser.parse_args()

    tasks = [task for task in find_tasks(arguments.data) if task.name in TASKS]
    stage = ExtractionStage.open(arguments.extraction)
    raw = load_model(stage.model_path)
    module: StaticWordAverage = raw[0]
    vectors = to_numpy(module.word_vectors)
    teacher_dim = vectors.shape[1]
    top = removed_components_for(teacher_dim)
    pca_sentences = stage.pca_sentences()

    def score(model: SentenceTransformer) -> dict[str, float]:
        results = evaluate_tasks(model_encoder(model), tasks)
        return {name: results[name]["score"] for name in TASKS if name in results}

    rows = {f"extraction only ({teacher_dim}-d)": score(raw)}
    # All components kept, none removed: a rotation of the centred table, i.e. the effect of centring alone.
    centred = fit_reduction(module, pca_sentences, ReductionSettings(dim=teacher_dim, removed_components=0))
    centred_module = StaticWordAverage(module.tokenizer, centred.apply(vectors))
    rows[f"centring only (PCA keeping all {teacher_dim} dims)"] = score(
        SentenceTransformer(modules=[centred_module, Normalize()], device="cpu")
    )
    for dim in dict.fromkeys([arguments.dim, teacher_dim - top]):
        for label, level, removed in (
            ("sentence-level PCA, no ABTT", "sentence", 0),
            (f"sentence-level PCA + ABTT (r={top})", "sentence", top),
            (f"word-level PCA + ABTT (r={top})", "word", top),
        ):
            transform = fit_reduction(
                module, pca_sentences, ReductionSettings(dim=dim, removed_components=removed, pca_level=level)
            )
            reduced = StaticWordAverage(module.tokenizer, transform.apply(vectors))
            rows[f"{label}, {dim}-d"] = score(SentenceTransformer(modules=[reduced, Normalize()], device="cpu"))
    print(f"Stages on {arguments.extraction} ({len(module.vocabulary)} words, PCA on {len(pca_sentences)} sentences)")
    print("| stage | " + " | ".join(TASKS) + " |\n|---" * 1 + "|---" * len(TASKS) + "|")
    for label, scores in rows.items():
        print(f"| {label} | " + " | ".join(f"{scores[name]:.2f}" for name in TASKS) + " |")


if __name__ == "__main__":
    main()
