"""A teacher's own quality under each of its prompts: STS (stsb-en-dev Spearman) and news-title clustering.

    python -m benchmarks.experiments.teacher_prompts TEACHERS/embeddinggemma-300m --data ../shared/data \
        --prompt "task: sentence similarity | query: " --prompt "task: clustering | query: " --prompt ""

The prompt a build reads its corpus with decides the space the table is distilled into, so a prompt whose space
clusters topics badly gives a table that does too. Clustering here is scikit-learn's ``KMeans`` (k = 5 labels,
``n_init=1``, mean V-measure over seeds 0-4) on all 2,089 BBC titles of ``tasks/bbc-news-title-clustering.tsv``;
the teacher runs in bfloat16 on the CPU.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("teacher")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--prompt", action="append", required=True)
    arguments = parser.parse_args()

    import torch
    from scipy.stats import spearmanr
    from sentence_transformers import SentenceTransformer
    from sklearn.cluster import KMeans
    from sklearn.metrics import v_measure_score

    teacher = SentenceTransformer(arguments.teacher, device="cpu", model_kwargs={"torch_dtype": torch.bfloat16})
    titles = read_rows(arguments.data / "tasks" / "bbc-news-title-clustering.tsv")
    pairs = read_rows(arguments.data / "sts" / "stsb-en-dev.tsv")

    def encode(texts: list[str], prompt: str) -> np.ndarray:
        return teacher.encode(texts, prompt=prompt, batch_size=64, normalize_embeddings=True).astype(np.float32)

    print("| prompt | stsb-en-dev | bbc-news-title-clustering (V-measure) |")
    print("| --- | ---: | ---: |")
    for prompt in arguments.prompt:
        first = encode([row["sentence1"] for row in pairs], prompt)
        second = encode([row["sentence2"] for row in pairs], prompt)
        sts = spearmanr((first * second).sum(axis=1), [float(row["score"]) for row in pairs])[0]
        vectors = encode([row["text"] for row in titles], prompt)
        labels = [row["label"] for row in titles]
        runs = [KMeans(5, n_init=1, random_state=seed).fit_predict(vectors) for seed in range(5)]
        clustering = np.mean([v_measure_score(labels, run) for run in runs])
        print(f"| `{prompt!r}` | {100 * sts:.2f} | {100 * clustering:.2f} |", flush=True)


if __name__ == "__main__":
    main()
