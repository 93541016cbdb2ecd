"""A lexical ensemble member: each word of a table a random unit vector scaled by its IDF over a corpus.

    python -m benchmarks.experiments.lexical_member MODELS/swe-minilm-256-shared \
        --corpus ../shared/data/corpus/en-modern.txt --dim 256 --out MODELS/lexical-256

The mean of such rows approximates a TF-IDF bag of words: two texts' cosine is about the IDF-weighted overlap of
their words (random directions are near-orthogonal; at 256 dimensions two words' rows meet at about +-0.06).
Beside semantic members in an ensemble it is a hybrid of lexical and semantic matching, as hybrid retrieval is:
score it with ``python -m benchmarks.ensembles --member lexical=MODELS/lexical-256 ...``. The member has the source
table's words and tokenizer; a line's document frequency counts its lowercased ``\\w+`` words.
"""

from __future__ import annotations

import argparse
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks.common import log

WORD = re.compile(r"\w+")


def document_frequencies(corpus: Path) -> tuple[Counter[str], int]:
    """How many lines of ``corpus`` hold each lowercased word, and the number of lines."""
    frequencies: Counter[str] = Counter()
    lines = 0
    with corpus.open(encoding="utf-8") as handle:
        for line in handle:
            lines += 1
            frequencies.update(set(WORD.findall(line.lower())))
    return frequencies, lines


def lexical_rows(words: list[str], frequencies: Counter[str], lines: int, dim: int, seed: int = 0) -> np.ndarray:
    """One random unit row per word, times the word's smoothed IDF, ``log((N + 1) / (df + 1)) + 1``."""
    idf = np.array([math.log((lines + 1) / (frequencies.get(word, 0) + 1)) + 1 for word in words], dtype=np.float32)
    rows = np.random.default_rng(seed).standard_normal((len(words), dim)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows * idf[:, None]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="the st-static table whose words and tokenizer the member takes")
    parser.add_argument("--corpus", type=Path, required=True, help="text file, one document per line")
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--out", type=Path, required=True)
    arguments = parser.parse_args()
    if arguments.dim < 2:
        parser.error("--dim must be at least 2")
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize

    from st_static import StaticWordAverage
    from st_static.model.save_load import load_model, save_model

    module = load_model(arguments.model)[0]
    words = list(module.vocabulary[: module.num_vocabulary_words])
    log(f"document frequencies over {arguments.corpus} ...")
    frequencies, lines = document_frequencies(arguments.corpus)
    if lines == 0:
        parser.error(f"--corpus {arguments.corpus} is empty")
    rows = lexical_rows(words, frequencies, lines, arguments.dim)
    table = StaticWordAverage.from_word_vectors(words, rows, teacher_tokenizer=module.tokenizer, lowercase=True)
    save_model(SentenceTransformer(modules=[table, Normalize()], device="cpu"), arguments.out, inputs=[arguments.model])
    norms = np.linalg.norm(rows, axis=1)
    print(
        f"wrote {arguments.out}: {len(words):,} words from {lines:,} lines, row norms (IDF) {norms.min():.2f} to "
        f"{norms.max():.2f}, median {np.median(norms):.2f}"
    )


if __name__ == "__main__":
    main()
