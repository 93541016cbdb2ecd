"""Scores of static models side by side: each alone, every pair and all together (blocks normalised, equal weights).

    python -m benchmarks.experiments.ensemble_check swe=models/swe-minilm-256 \
        tokenlearn=MODELS/tokenlearn-all-MiniLM-L6-v2-en-pca256 --data ../shared/data \
        --output benchmarks/results/2026-11-23-ensemble-check.md

A model is an st-static folder (``st_static.load_model``) or a model2vec folder (``model2vec.StaticModel``; needs
``pip install model2vec``). The ensemble's vector of a text is the concatenation of each model's normalised vector,
what ``st-static compress A B`` builds for st-static members. Choose on the dev columns; stsb-en-test is reported only.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.common import DEV_TASKS, TEST_TASKS, dev_mean, task_evaluator, task_table_header, write_report

Encoder = Callable[[list[str]], np.ndarray]


def load_encoder(folder: Path) -> Encoder:
    """An encoder for an st-static or model2vec folder."""
    if (folder / "st_static_config.json").is_file():
        from st_static import load_model

        model = load_model(str(folder))
        return lambda texts: model.encode(list(texts), batch_size=4096)
    config = folder / "config.json"
    if config.is_file() and json.loads(config.read_text()).get("model_type") == "model2vec":
        try:
            from model2vec import StaticModel
        except ImportError as error:
            raise SystemExit("error: model2vec folders need `pip install model2vec`.") from error
        model = StaticModel.from_pretrained(str(folder))
        return lambda texts: model.encode(list(texts))
    raise SystemExit(f"error: {folder} is neither an st-static nor a model2vec folder.")


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def side_by_side(encoders: list[Encoder]) -> Encoder:
    return lambda texts: np.concatenate([unit_rows(np.asarray(encode(texts))) for encode in encoders], axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+", help="LABEL=FOLDER, two or more.")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--output", type=Path, required=True)
    arguments = parser.parse_args()
    named = dict(model.split("=", 1) if "=" in model else (Path(model).name, model) for model in arguments.models)
    if len(named) < 2:
        raise SystemExit("error: give two or more models (LABEL=FOLDER).")
    encoders = {label: load_encoder(Path(folder)) for label, folder in named.items()}
    evaluate = task_evaluator(arguments.data, tasks=",".join(DEV_TASKS + TEST_TASKS))
    groups = [combination for size in range(1, len(named) + 1) for combination in itertools.combinations(named, size)]
    columns = [*DEV_TASKS, *TEST_TASKS]
    lines = [
        "# Static models side by side",
        "",
        f"Command: `python -m benchmarks.experiments.ensemble_check {' '.join(sys.argv[1:])}`. Spearman x100 "
        "(msrp-dev: average precision x100); each model's vector normalised, then concatenated.",
        "",
        *task_table_header("models", ["dev mean"]),
    ]
    results = []
    for group in groups:
        scores = {
            task: result["score"] for task, result in evaluate(side_by_side([encoders[g] for g in group])).items()
        }
        mean = dev_mean(scores)
        results.append({"models": list(group), "scores": scores, "dev_mean": mean})
        lines.append(f"| {' + '.join(group)} | " + " | ".join(f"{scores[t]:.2f}" for t in columns) + f" | {mean:.2f} |")
        print(lines[-1], flush=True)
    write_report(arguments.output, lines, results)


if __name__ == "__main__":
    main()
