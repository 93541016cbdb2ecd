"""Print one markdown table: what truncation, quantisation, pruning and ensembling cost a static model.

Scores are Spearman x100 of cosine similarity on STS-B test and SICK dev. Sizes are whole folders on disk.
Every compressed variant is saved and reloaded the way a user would load it: quantised, pruned and truncated
folders with a bare ``SentenceTransformer(path)``, ensembles with ``st_static.load_model``. ``Δsim`` is the
change of the STS-B pair cosines against the float32 model (max / mean), ``1-cos`` the drift of the
sentence vectors themselves (max / mean).

    PYTHONPATH=. python benchmarks/compression.py MODEL [--second MODEL2] [--matryoshka MODEL3] \\
        [--output benchmarks/results/compression.md]
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer

from st_static.compression import (
    STORAGE_FORMATS,
    ensemble,
    folder_size,
    prune_vocabulary,
    quantize,
    truncate_dimensions,
)
from st_static.data_files import ScoredPairs, read_scored_pairs
from st_static.evaluation.sts import spearman_cosine
from st_static.model.save_load import load_model, save_model
from st_static.model.tokenization import token_targets


def default_data_folder() -> Path:
    """``$ST_STATIC_DATA/sts``, else the first ``shared/data/sts`` above this file (main checkout or worktree)."""
    if os.environ.get("ST_STATIC_DATA"):
        return Path(os.environ["ST_STATIC_DATA"]) / "sts"
    for parent in Path(__file__).resolve().parents:
        if (parent / "shared" / "data" / "sts").is_dir():
            return parent / "shared" / "data" / "sts"
    return Path("shared/data/sts")


TASKS = {"STS-B test": "stsb-en-test.tsv", "SICK dev": "sick-dev.tsv"}
DEFAULT_DIMS = (256, 128, 64, 32)
DEFAULT_VOCAB_SIZES = (150_000, 75_000, 30_000)


@dataclass
class Row:
    section: str
    variant: str
    dim: int
    words: int
    size: int | None
    scores: dict[str, float]
    pair_change: tuple[float, float] | None = None
    vector_change: tuple[float, float] | None = None


class StsScorer:
    """Spearman x100 of cosine similarities on the STS tasks, keeping the vectors to measure their drift."""

    def __init__(self, data: Path) -> None:
        self.tasks: dict[str, ScoredPairs] = {name: read_scored_pairs(data / file) for name, file in TASKS.items()}
        self.reference: dict[str, np.ndarray] = {}

    def embed(self, model: SentenceTransformer, pairs: ScoredPairs, truncate_dim: int | None) -> np.ndarray:
        texts = pairs.sentences1 + pairs.sentences2
        embeddings = model.encode(texts, batch_size=2048, truncate_dim=truncate_dim, convert_to_numpy=True)
        embeddings = embeddings.astype(np.float32)
        norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
        return embeddings / np.maximum(norms, 1e-12)

    def score(self, model: SentenceTransformer, truncate_dim: int | None = None, compare: bool = True) -> Row:
        scores: dict[str, float] = {}
        pair_change = vector_change = None
        for name, pairs in self.tasks.items():
            unit = self.embed(model, pairs, truncate_dim)
            half = len(pairs.sentences1)
            cosines = (unit[:half] * unit[half:]).sum(axis=1)
            scores[name] = spearman_cosine(unit[:half], unit[half:], np.asarray(pairs.scores))
            if name == "STS-B test":
                reference = self.reference.get(name)
                if reference is None:
                    self.reference[name] = unit
                elif compare:
                    reference_cosines = (reference[:half] * reference[half:]).sum(axis=1)
                    delta = np.abs(cosines - reference_cosines)
                    pair_change = (float(delta.max()), float(delta.mean()))
                    if unit.shape[1] == reference.shape[1]:
                        drift = np.maximum(1 - (unit * reference).sum(axis=1), 0.0)
                        drift = drift[np.linalg.norm(reference, axis=1) > 0]
                        vector_change = (float(drift.max()), float(drift.mean()))
        return Row("", "", 0, 0, None, scores, pair_change, vector_change)


def words_of(model: SentenceTransformer) -> int:
    return token_targets(model[0].tokenizer)[1]


def scored(scorer: StsScorer, model: SentenceTransformer, section: str, variant: str, size: int | None, **kw) -> Row:
    row = scorer.score(model, **kw)
    row.section, row.variant, row.size = section, variant, size
    row.dim = kw.get("truncate_dim") or int(model.get_embedding_dimension())
    row.words = words_of(model)
    return row


def save_and_reload(model: SentenceTransformer, folder: Path, bare: bool) -> tuple[SentenceTransformer, int]:
    save_model(model, folder)
    reloaded = SentenceTransformer(str(folder), device="cpu") if bare else load_model(folder)
    return reloaded, folder_size(folder)


def dimension_rows(scorer: StsScorer, model: SentenceTransformer, label: str, dims: list[int], size: int | None):
    full = int(model.get_embedding_dimension())
    rows = [scored(scorer, model, "dimensions", f"{label}, full", size, compare=False)]
    for dim in dims:
        if dim < full:
            rows.append(scored(scorer, model, "dimensions", f"{label}, truncate_dim={dim}", None, truncate_dim=dim))
    return rows


def format_table(rows: list[Row]) -> str:
    def pair(values: tuple[float, float] | None) -> str:
        return "-" if values is None else f"{values[0]:.4f} / {values[1]:.4f}"

    lines = [
        "| section | variant | dim | words | size on disk | STS-B test | SICK dev "
        "| Δsim max / mean | 1-cos max / mean |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        size = "-" if row.size is None else f"{row.size / 1e6:.1f} MB"
        lines.append(
            f"| {row.section} | {row.variant} | {row.dim} | {row.words} | {size} | {row.scores['STS-B test']:.2f} | "
            f"{row.scores['SICK dev']:.2f} | {pair(row.pair_change)} | {pair(row.vector_change)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="The static model folder (float32).")
    parser.add_argument("--second", help="A second static model, for the ensemble rows.")
    parser.add_argument("--matryoshka", help="A model trained with MatryoshkaLoss, for the dimension rows.")
    parser.add_argument("--dims", type=int, nargs="+", default=list(DEFAULT_DIMS))
    parser.add_argument(
        "--vocab-sizes",
        type=int,
        nargs="+",
        default=None,
        help="Vocabulary sizes to prune to (default 150k/75k/30k, those below the model's size; else 1/2, 1/4, 1/10).",
    )
    parser.add_argument(
        "--data", type=Path, default=default_data_folder(), help="Folder with stsb-en-test.tsv and sick-dev.tsv."
    )
    parser.add_argument("--work-dir", type=Path, default=None, help="Keep the compressed folders here.")
    parser.add_argument("--output", type=Path, default=None, help="Also write the table to this file.")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    scorer = StsScorer(args.data)
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="st-static-compression-"))
    base = load_model(args.model)
    num_words = words_of(base)
    base_size = folder_size(args.model) if Path(args.model).is_dir() else None
    rows = dimension_rows(scorer, base, "base", args.dims, base_size)
    for dim in args.dims:
        if dim < int(base.get_embedding_dimension()):
            cut, size = save_and_reload(truncate_dimensions(base, dim), work / f"dim-{dim}", bare=True)
            rows.append(scored(scorer, cut, "dimensions", f"base, table cut to {dim}, float32", size))
    if args.matryoshka:
        rows += dimension_rows(scorer, load_model(args.matryoshka), "matryoshka", args.dims, None)

    for storage in STORAGE_FORMATS:
        reloaded, size = save_and_reload(quantize(base, storage), work / storage, bare=True)
        rows.append(scored(scorer, reloaded, "storage", storage, size))

    vocab_sizes = args.vocab_sizes or [size for size in DEFAULT_VOCAB_SIZES if size < num_words]
    if not vocab_sizes:
        vocab_sizes = [num_words // 2, num_words // 4, num_words // 10]
    for vocab_size in vocab_sizes:
        pruned, size = save_and_reload(prune_vocabulary(base, vocab_size), work / f"vocab-{vocab_size}", bare=True)
        rows.append(scored(scorer, pruned, "vocabulary", f"top {vocab_size} words, float32", size))
    smallest = prune_vocabulary(base, vocab_sizes[-1])
    combined, size = save_and_reload(quantize(smallest, "int8-row"), work / "vocab-int8", bare=True)
    rows.append(scored(scorer, combined, "vocabulary", f"top {vocab_sizes[-1]} words, int8-row", size))

    if args.second:
        second = load_model(args.second)
        second_size = folder_size(args.second) if Path(args.second).is_dir() else None
        rows.append(scored(scorer, base, "ensemble", "member A (model)", base_size, compare=False))
        rows.append(scored(scorer, second, "ensemble", "member B (--second)", second_size, compare=False))
        for weights in ([1.0, 1.0], [2.0, 1.0]):
            label = f"A+B, weights {weights[0]:g}:{weights[1]:g}"
            folder = work / f"ensemble-{weights[0]:g}-{weights[1]:g}"
            combined, size = save_and_reload(ensemble([base, second], weights), folder, bare=False)
            rows.append(scored(scorer, combined, "ensemble", label, size, compare=False))

    table = format_table(rows)
    print(table)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        command = "python " + " ".join(shlex.quote(arg) for arg in sys.argv)
        header = f"# Compression of {args.model}\n\nCommand: `{command}`\n\n"
        args.output.write_text(header + table + "\n", encoding="utf-8")
    if args.work_dir is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
