"""Measure refinement speed (optimiser steps per second) for a paper-sized table on this machine.

Builds a static model with a `--vocab-size` x `--dim` random table over the most frequent corpus words, and
synthetic teacher embeddings (a fixed random projection of each sentence's bag of words), then runs
`refine_by_distillation` for `--steps` steps and prints the speed. No teacher model or network needed.

    python -m benchmarks.refinement_speed --steps 2000
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize

from benchmarks.common import StaticWordAverage, default_corpus, refine_by_distillation, split_words, to_numpy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=default_corpus())
    parser.add_argument("--vocab-size", type=int, default=150_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--teacher-dim", type=int, default=384)
    parser.add_argument("--sentences", type=int, default=200_000)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--eval-steps", type=int, default=500)
    parser.add_argument("--patience", type=int, default=5)
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args()

    started = time.perf_counter()
    sentences = [line.strip() for line in args.corpus.open(encoding="utf-8") if line.strip()][: args.sentences]
    counts = collections.Counter(word.lower() for sentence in sentences for word in split_words(sentence))
    words = [word for word, _ in counts.most_common(args.vocab_size)]
    words += [f"filler{index}" for index in range(args.vocab_size - len(words))]  # pad a small corpus's vocabulary
    rng = np.random.default_rng(0)
    module = StaticWordAverage.from_word_vectors(words, rng.standard_normal((len(words), args.dim), dtype=np.float32))
    model = SentenceTransformer(modules=[module, Normalize()], device="cpu")
    # Synthetic teacher: mean of fixed random word vectors passed through tanh, so the student cannot copy it.
    num_rows = module.embedding.weight.shape[0]
    teacher_table = torch.from_numpy(rng.standard_normal((num_rows, args.teacher_dim), dtype=np.float32))
    rows, offsets = module.token_ids(sentences)
    bags = torch.nn.functional.embedding_bag(
        torch.from_numpy(rows), teacher_table, torch.from_numpy(offsets), mode="mean", padding_idx=module.num_words
    )
    teacher = to_numpy(torch.tanh(bags * 3))
    print(
        f"setup: {len(sentences)} sentences, table {module.embedding.weight.shape[0]} x {args.dim} "
        f"({module.num_words} words), teacher dim {args.teacher_dim}, {time.perf_counter() - started:.1f} s"
    )

    result = refine_by_distillation(
        model,
        sentences,
        teacher,
        steps=args.steps,
        eval_steps=args.eval_steps,
        patience=args.patience,
        output_dir=args.output_dir,
    )
    print(
        f"steps: {result.steps}, time: {result.train_seconds:.1f} s, steps/s: {result.steps_per_second:.1f}, "
        f"best step {result.best_step}, best validation loss {result.best_validation_loss:.4f}, "
        f"stopped early: {result.stopped_early}"
    )
    for record in result.history:
        print(f"  step {record.step:>6}  validation loss {record.loss:.4f}")


if __name__ == "__main__":
    main()
