"""Title clustering read by converged k-means beside the scorer's mini-batch runs: how much of a gain is the scorer's?

    python -m benchmarks.experiments.clustering_convergence readme=MODELS/swe-minilm-256-shared \
        ensemble=MODELS/swe-mpw-768d --data ../shared/data --output benchmarks/results/DATE-clustering-convergence.md

``st-static evaluate`` scores a clustering file as mteb does: ``MiniBatchKMeans`` runs (one start each) whose V-measure
moves by about 5 points with the seed. Issue 64's independent scorer read the README table's news-title clustering
41.8 and the three-member ensemble's 54.3 (+12.5); ``st-static evaluate`` reads +7. This reads each model's
normalised title vectors with full k-means (``KMeans``, ten starts, five seeds: a converged partition) and with 30
one-start ``MiniBatchKMeans`` seeds, over the whole file, so the gain can be read without the scorer's noise.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.common import command_line, log, machine, write_report


def vectors(spec: str, texts: list[str]) -> np.ndarray:
    """Normalised vectors of ``texts`` from a st-static table, or any Sentence Transformer folder."""
    from st_static import load_model
    from st_static.errors import StStaticError

    try:
        model = load_model(spec)
    except StStaticError:
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(spec, device="cpu")
    return np.asarray(model.encode(texts, batch_size=1024, normalize_embeddings=True))


def v_measures(embeddings: np.ndarray, labels: list[str], full_seeds: int, batch_seeds: int) -> dict[str, list[float]]:
    """V-measures (x100) of converged ``KMeans`` (ten starts), of one-start ``MiniBatchKMeans`` (one per seed), and of
    the one run with seed 42 that mteb's legacy clustering task took (``st-static evaluate`` before 2026-11-27)."""
    from sklearn.cluster import KMeans, MiniBatchKMeans
    from sklearn.metrics import v_measure_score

    clusters = len(set(labels))
    full = [KMeans(clusters, n_init=10, random_state=seed).fit_predict(embeddings) for seed in range(full_seeds)]
    batch = [
        MiniBatchKMeans(clusters, batch_size=500, n_init="auto", random_state=seed).fit_predict(embeddings)
        for seed in range(batch_seeds)
    ]
    legacy = MiniBatchKMeans(clusters, batch_size=500, n_init="auto", random_state=42).fit_predict(embeddings)
    return {
        "kmeans": [100 * v_measure_score(labels, found) for found in full],
        "minibatch": [100 * v_measure_score(labels, found) for found in batch],
        "seed_42": 100 * v_measure_score(labels, legacy),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+", help="NAME=FOLDER, the first the reference the gains are read against")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--full-seeds", type=int, default=5)
    parser.add_argument("--batch-seeds", type=int, default=30)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)

    from st_static.evaluation.task_files.formats import read_labelled_texts

    data = read_labelled_texts(args.data / "tasks" / "bbc-news-title-clustering.tsv", with_split=False)
    rows = []
    for spec in args.models:
        name, _, folder = spec.partition("=")
        log(f"{name} ...")
        scores = v_measures(vectors(folder, data.texts), data.labels, args.full_seeds, args.batch_seeds)
        rows.append({"name": name, "folder": folder, **scores})
    lines = [
        "# News-title clustering: converged k-means against the scorer's mini-batch runs",
        "",
        f"Command: `{command_line('benchmarks.experiments.clustering_convergence', argv)}`",
        f"Machine: {machine()[0]}. {len(data.texts):,} titles, {len(set(data.labels))} topics, normalised vectors.",
        "",
        f"| model | KMeans, 10 starts ({args.full_seeds} seeds): mean | sd | gain | "
        f"MiniBatchKMeans, 1 start ({args.batch_seeds} seeds): mean | sd | min - max | gain | "
        "one run, seed 42 (the legacy scorer) | gain |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    reference = rows[0]
    for row in rows:
        full, batch = np.array(row["kmeans"]), np.array(row["minibatch"])
        full_gain = full.mean() - np.mean(reference["kmeans"])
        batch_gain = batch.mean() - np.mean(reference["minibatch"])
        lines.append(
            f"| {row['name']} (`{row['folder']}`) | {full.mean():.2f} | {full.std():.2f} | {full_gain:+.2f} | "
            f"{batch.mean():.2f} | {batch.std():.2f} | {batch.min():.2f} - {batch.max():.2f} | {batch_gain:+.2f} | "
            f"{row['seed_42']:.2f} | {row['seed_42'] - reference['seed_42']:+.2f} |"
        )
    write_report(args.output, lines, {"rows": rows})


if __name__ == "__main__":
    main()
