"""A model folder in 16 bits on both load paths: NaN rows, norms and each text's cosine to the float32 vector.

    python -m benchmarks.half_precision MODEL_DIR [MODEL_DIR ...] [--output benchmarks/results/DATE-half-precision.md]

Rows: a bare ``SentenceTransformer(MODEL_DIR).half()`` (sentence-transformers' own modules, no st-static code) and
``st_static.load_model(MODEL_DIR).half()``, each against the bare float32 load. The texts are the ones a table gets
tiny rows for (``""``, a space, an unknown emoji, symbols, other scripts) beside a sentence and a 2,000-word text (a
long sum). Issue 66: a folder saved before the empty text's ``Dense`` was scaled for 16 bits gives ``""`` NaN on the
bare path; ``st-static fallback MODEL_DIR -o NEW`` writes the rows and module anew.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

import st_static
from benchmarks.common import command_line, machine, write_report
from st_static.tensors import to_numpy

TEXTS = ["", " ", "😀", "?", "東京", "Привет", "Hello, world!", "A man is playing a guitar.", "word " * 2000]
LABELS = ['""', '" "', "😀", "?", "東京", "Привет", "Hello, world!", "a sentence", "2,000 words"]


def half_precision_rows(folder: str) -> list[dict[str, object]]:
    """One row per load path: NaN rows, the smallest and largest norm, each text's cosine to the float32 vector."""
    floats = SentenceTransformer(folder, device="cpu").encode(TEXTS)
    rows = []
    for path, model in (
        ("bare SentenceTransformer(folder).half()", SentenceTransformer(folder, device="cpu").half()),
        ("st_static.load_model(folder).half()", st_static.load_model(folder).half()),
    ):
        halves = to_numpy(model.encode(TEXTS, convert_to_tensor=True), dtype=torch.float32)
        finite = np.nan_to_num(halves)
        norms = np.linalg.norm(finite, axis=1)
        rows.append(
            {
                "model": folder,
                "path": path,
                "nan_rows": int(np.isnan(halves).any(axis=1).sum()),
                "norms": [float(norms.min()), float(norms.max())],
                "cosines": dict(zip(LABELS, np.einsum("ij,ij->i", floats, finite).tolist(), strict=True)),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("models", nargs="+", help="Model folders.")
    parser.add_argument("--output", type=Path, help="Markdown report (and JSON next to it).")
    args = parser.parse_args()
    rows = [row for folder in args.models for row in half_precision_rows(folder)]
    lines = [
        "# A model in 16 bits on both load paths",
        "",
        f"Command: `{command_line('benchmarks.half_precision')}`",
        "",
        f"Machine: {machine()[0]}. Cosine of each text's 16-bit vector to the bare float32 load's.",
        "",
        "| model | path | NaN rows | norms | " + " | ".join(LABELS) + " |",
        "|---|---|---:|---|" + "---:|" * len(LABELS),
    ]
    for row in rows:
        low, high = row["norms"]
        cosines = " | ".join(f"{value:.4f}" for value in row["cosines"].values())
        lines.append(f"| {row['model']} | {row['path']} | {row['nan_rows']} | {low:.4f}-{high:.4f} | {cosines} |")
    write_report(args.output, lines, rows)


if __name__ == "__main__":
    main()
