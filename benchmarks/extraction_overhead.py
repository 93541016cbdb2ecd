"""Extraction overhead: tokens/s of the full extraction vs the teacher's bare forward pass on the same batches.

The bare pass is what any use of the teacher costs: ``teacher.preprocess`` + ``teacher.forward`` per batch. The
extraction adds offset alignment, word tokenisation and the per-word sums. Both run the same length-sorted batches
(best of ``--repeats`` runs each, alternating).

    python benchmarks/extraction_overhead.py [--teacher T] [--corpus FILE] [--sentences 5000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer

from st_static.extraction import build_vocabulary, count_word_sentences, extract_word_vectors
from st_static.extraction.extract import plan_batches, teacher_token_counts
from st_static.model.tokenization import build_word_tokenizer
from st_static.teachers import resolve_teacher

REPO = Path(__file__).resolve().parents[1]


def bare_pass(teacher: SentenceTransformer, sentences: list[str], prompt: str) -> tuple[int, float]:
    batches = plan_batches(sentences, 1024, 128, teacher_token_counts(teacher, sentences, prompt))
    tokens = 0
    started = time.perf_counter()
    with torch.inference_mode():
        for batch in batches:
            features = teacher.preprocess(batch.texts, prompt=prompt or None)
            tokens += int(features["attention_mask"].sum())
            teacher.forward(features)
    return tokens, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teacher", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--prompt", default="")
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "data" / "corpus" / "en.txt")
    parser.add_argument("--sentences", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=2)
    arguments = parser.parse_args()

    with arguments.corpus.open(encoding="utf-8") as handle:
        sentences = [line.strip() for _, line in zip(range(arguments.sentences), handle, strict=False) if line.strip()]
    teacher = SentenceTransformer(resolve_teacher(arguments.teacher), device="cpu")
    words = build_vocabulary(count_word_sentences(sentences), size=150_000, min_sentences=1).words
    word_tokenizer = build_word_tokenizer(words)
    bare_pass(teacher, sentences[:200], arguments.prompt)  # warm-up
    bare_best = full_best = float("inf")
    tokens = 0
    for _ in range(arguments.repeats):
        tokens, seconds = bare_pass(teacher, sentences, arguments.prompt)
        bare_best = min(bare_best, seconds)
        started = time.perf_counter()
        extract_word_vectors(teacher, sentences, word_tokenizer, prompt=arguments.prompt)
        full_best = min(full_best, time.perf_counter() - started)
    print(f"{len(sentences)} sentences, {tokens} teacher tokens, best of {arguments.repeats}")
    print("| pass | seconds | tokens/s |\n|---|---|---|")
    print(f"| teacher forward only (preprocess + forward) | {bare_best:.1f} | {tokens / bare_best:,.0f} |")
    print(f"| full extraction (+ alignment, word sums) | {full_best:.1f} | {tokens / full_best:,.0f} |")
    print(f"extraction throughput = {100 * bare_best / full_best:.1f}% of the bare forward pass")


if __name__ == "__main__":
    main()
