"""Build a static model with random vectors over the most frequent corpus words: a stand-in for speed tests.

    python benchmarks/random_model.py OUT_DIR [--corpus ../shared/data/corpus/en.txt] [--words 30000] [--dim 256]

Its quality is meaningless (random vectors); its vocabulary size, dimension and tokenisation are those of a real
model, so its speed is. Real models come from the extraction/training pipeline.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize

from st_static import StaticWordAverage
from st_static.extraction.corpus import iter_sentences as iter_lines
from st_static.model.save_load import save_model
from st_static.model.tokenization import split_words

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "corpus" / "en.txt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--words", type=int, default=30_000, help="vocabulary size (most frequent lowercase words)")
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    counts: Counter[str] = Counter()
    for line in iter_lines(args.corpus):
        counts.update(split_words(line.lower()))
    words = [word for word, _ in counts.most_common(args.words)]
    vectors = np.random.default_rng(args.seed).standard_normal((len(words), args.dim)).astype(np.float32)
    module = StaticWordAverage.from_word_vectors(
        words, vectors, metadata={"corpus": str(args.corpus), "vocab_size": len(words), "note": "random vectors"}
    )
    save_model(SentenceTransformer(modules=[module, Normalize()], device="cpu"), args.output)
    print(f"saved {len(words)} words x {args.dim} to {args.output}")


if __name__ == "__main__":
    main()
