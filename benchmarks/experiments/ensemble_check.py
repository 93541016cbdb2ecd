"""Scores of static models side by side: each alone, every pair and all together (blocks normalised, equal weights).

    python -m benchmarks.experiments.ensemble_check swe=models/swe-minilm-256 \
        tokenlearn=MODELS/tokenlearn-all-MiniLM-L6-v2-en-pca256 --data ../shared/data \
        --output benchmarks/results/2026-11-23-ensemble-check.md

A model is an st-static folder (``st_static.load_model``) or a model2vec folder (``model2vec.StaticModel``; needs
``pip install model2vec``). The ensemble's vector of a text is the concatenation of each model's normalised vector,
what ``st-static compress A B`` builds for st-static members. Choose on the dev columns; stsb-en-test is reported only.
``--tasks`` adds the English task files' dev and test halves (``benchmarks.task_levers``); ``--weight`` gives the
last model's block a weight against the others' (``st-static compress -w``), repeat it for several.
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


def side_by_side(encoders: list[Encoder], last_weight: float = 0.5) -> Encoder:
    """Normalised blocks, the last one scaled so that its share of every cosine is ``last_weight`` (2 models:
    ``0.5`` is equal weights)."""
    others = (1.0 - last_weight) / max(len(encoders) - 1, 1)
    scales = [np.sqrt(others)] * (len(encoders) - 1) + [np.sqrt(last_weight)] if len(encoders) > 1 else [1.0]
    return lambda texts: np.concatenate(
        [scale * unit_rows(np.asarray(encode(texts))) for scale, encode in zip(scales, encoders, strict=True)], axis=1
    )


class _Encoding:
    """An encoder as ``benchmarks.task_levers.task_scores`` calls a model."""

    def __init__(self, encode: Encoder) -> None:
        self._encode = encode

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        return unit_rows(np.asarray(self._encode(list(texts))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+", help="LABEL=FOLDER, two or more.")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--tasks", action="store_true", help="also the English task files' dev and test halves")
    parser.add_argument("--weight", type=float, action="append", help="the last model's share of the cosines")
    arguments = parser.parse_args()
    named = dict(model.split("=", 1) if "=" in model else (Path(model).name, model) for model in arguments.models)
    if len(named) < 2:
        raise SystemExit("error: give two or more models (LABEL=FOLDER).")
    encoders = {label: load_encoder(Path(folder)) for label, folder in named.items()}
    evaluate = task_evaluator(arguments.data, tasks=",".join(DEV_TASKS + TEST_TASKS))
    groups = [combination for size in range(1, len(named) + 1) for combination in itertools.combinations(named, size)]
    variants = [(group, 0.5 if len(group) == 2 else 1.0 / len(group)) for group in groups]
    variants += [(tuple(named), weight) for weight in arguments.weight or []]
    columns = [*DEV_TASKS, *TEST_TASKS]
    extra = ["dev mean"]
    if arguments.tasks:
        from benchmarks.task_levers import ENGLISH_TASKS, task_scores

        extra += [*(f"{task} dev" for task in ENGLISH_TASKS), "task dev mean", "task test mean"]
    lines = [
        "# Static models side by side",
        "",
        f"Command: `python -m benchmarks.experiments.ensemble_check {' '.join(sys.argv[1:])}`. Spearman x100 "
        "(msrp-dev: average precision x100); each model's vector normalised, then concatenated (the last model's "
        "share of the cosines in brackets).",
        "",
        *task_table_header("models", extra),
    ]
    results = []
    for group, weight in variants:
        encode = side_by_side([encoders[g] for g in group], weight)
        scores = {task: result["score"] for task, result in evaluate(encode).items()}
        mean = dev_mean(scores)
        label = " + ".join(group) + (f" ({weight:.2f})" if len(group) > 1 else "")
        row: dict[str, object] = {"models": list(group), "weight": weight, "scores": scores, "dev_mean": mean}
        cells = [f"{scores[t]:.2f}" for t in columns] + [f"{mean:.2f}"]
        if arguments.tasks:
            tasks = task_scores(_Encoding(encode), arguments.data / "tasks")
            row["tasks"] = tasks
            cells += [f"{dev:.2f}" for dev, _ in tasks.values()]
            cells += [f"{np.mean([dev for dev, _ in tasks.values()]):.2f}"]
            cells += [f"{np.mean([test for _, test in tasks.values()]):.2f}"]
        results.append(row)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    write_report(arguments.output, lines, results)


if __name__ == "__main__":
    main()
