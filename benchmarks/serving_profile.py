"""Where the time of one query and of 20,000 texts goes, on both serving paths, before and after st-static's changes.

    python -m benchmarks.serving_profile MODEL_DIR [--corpus ../shared/data/corpus/en.txt] [--output FILE]

(``python -m benchmarks.serving --profile FILE`` runs it too.) Each step is timed on its own, in one process: the p50 of
2,000 calls for one query, the best of 3 runs over the corpus lines (batches of 1,024) for the batch. "Before" is
the pipeline as it was (Rust ``encode_batch_fast`` for every text, the ids gathered in Python, torch's
``embedding_bag`` on torch's default threads, ``torch.nn.functional.normalize``); "after" is what
``st_static.encode`` and ``StaticWordAverage`` run now. The steps overlap nothing: their sum is close to the total.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

import st_static
from benchmarks.common import (
    check_pipeline,
    check_texts,
    machine_description,
    normalize_rows,
    static_module,
    sum_rows,
    text_vector,
    to_numpy,
)

QUERY = "The quick brown fox jumps over the lazy dog."


def one_call_us(function: Callable[[], object], calls: int = 2000) -> float:
    """p50 of ``calls`` calls, in microseconds, after 200 warm-up calls."""
    for _ in range(200):
        function()
    timings = []
    for _ in range(calls):
        start = time.perf_counter()
        function()
        timings.append(time.perf_counter() - start)
    return float(np.percentile(timings, 50) * 1e6)


def batch_ms(function: Callable[[], object], repeats: int = 3) -> float:
    """Best of ``repeats`` runs, in milliseconds, after one warm-up run."""
    function()
    timings = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        function()
        timings.append(time.perf_counter() - start)
    return min(timings) * 1000


def old_token_rows(module: st_static.StaticWordAverage, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The former ``token_ids``: the Rust tokenizer for every text, ids gathered by Python generators."""
    encodings = module.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
    lengths = np.fromiter((len(encoding.ids) for encoding in encodings), dtype=np.int64, count=len(encodings))
    ids = np.fromiter((i for encoding in encodings for i in encoding.ids), dtype=np.int64, count=int(lengths.sum()))
    offsets = np.zeros(len(encodings), dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    return to_numpy(module.token_rows)[ids], offsets


def torch_sum(weight: torch.Tensor, rows: np.ndarray, offsets: np.ndarray, pad: int) -> torch.Tensor:
    with torch.inference_mode():
        return torch.nn.functional.embedding_bag(
            torch.from_numpy(rows), weight, torch.from_numpy(offsets), mode="sum", padding_idx=pad
        )


def torch_normalize(sums: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return torch.nn.functional.normalize(sums, p=2, dim=1)


def profile(
    model_dir: Path, corpus: Path, sentences: int, batch_size: int
) -> list[tuple[str, str, float | None, float | None]]:
    """Rows ``(path, step, one query in microseconds, corpus in milliseconds)``; ``None`` where a step does not run."""
    with corpus.open(encoding="utf-8") as handle:
        texts = [line.strip() for _, line in zip(range(sentences), handle, strict=False)]
    batches = [texts[start : start + batch_size] for start in range(0, len(texts), batch_size)]
    model = st_static.load_model(model_dir)
    module = static_module(model)
    weight = module.embedding.weight.detach()
    table = module.numpy_table()
    pad = module.num_words
    reader = module.word_rows
    old_one = old_token_rows(module, [QUERY])
    new_one = reader.rows([QUERY])
    old_batches = [old_token_rows(module, batch) for batch in batches]
    new_batches = [reader.rows(batch) for batch in batches]
    old_sums = [torch_sum(weight, rows, offsets, pad) for rows, offsets in old_batches]
    new_sums = [sum_rows(weight, rows, offsets, pad) for rows, offsets in new_batches]
    features_one = module.preprocess([QUERY])
    features = [module.preprocess(batch) for batch in batches]
    bare = SentenceTransformer(str(model_dir), device="cpu")
    steps: list[tuple[str, str, Callable[[], object] | None, Callable[[], object] | None]] = [
        ("fast path, before", "input checks", lambda: check_texts([QUERY]), lambda: [check_texts(b) for b in batches]),
        ("fast path, before", "tokenise (Rust) + Python glue", lambda: old_token_rows(module, [QUERY]),
         lambda: [old_token_rows(module, b) for b in batches]),
        ("fast path, before", "sum: torch embedding_bag, default threads",
         lambda: torch_sum(weight, *old_one, pad), lambda: [torch_sum(weight, r, o, pad) for r, o in old_batches]),
        ("fast path, before", "normalise: torch", lambda: torch_normalize(old_sums[0][:1]),
         lambda: [torch_normalize(s) for s in old_sums]),
        ("fast path, after", "input checks + dispatch",
         lambda: (check_texts([QUERY]), check_pipeline(model), static_module(model), module.numpy_table()),
         lambda: [check_texts(b) for b in batches]),
        ("fast path, after", "rows: ASCII look-up (Rust for other texts)", lambda: reader.rows([QUERY]),
         lambda: [reader.rows(b) for b in batches]),
        ("fast path, after", "sum + normalise: numpy (one text)", lambda: text_vector(table, new_one[0], pad, True),
         None),
        ("fast path, after", "sum: torch embedding_bag, one thread (batch)", None,
         lambda: [sum_rows(weight, r, o, pad) for r, o in new_batches]),
        ("fast path, after", "normalise: torch, one thread (batch)", None,
         lambda: [normalize_rows(s) for s in new_sums]),
        ("fast path, after", "total `st_static.encode`", lambda: st_static.encode(model, [QUERY]),
         lambda: st_static.encode(model, texts, batch_size=batch_size)),
        ("ST encode, st-static module", "our preprocess", lambda: module.preprocess([QUERY]),
         lambda: [module.preprocess(b) for b in batches]),
        ("ST encode, st-static module", "our forward (inference mode)", lambda: inference(module, features_one),
         lambda: [inference(module, f) for f in features]),
        ("ST encode, st-static module", "Normalize module", lambda: inference(model[1], {"sentence_embedding":
         torch.ones(1, weight.shape[1])}), None),
        ("ST encode, st-static module", "total `SentenceTransformer.encode`", lambda: model.encode([QUERY]),
         lambda: model.encode(texts, batch_size=batch_size)),
        ("ST encode, bare load", "ST's StaticEmbedding.preprocess", lambda: bare[0].preprocess([QUERY]),
         lambda: [bare[0].preprocess(b) for b in batches]),
        ("ST encode, bare load", "total `SentenceTransformer.encode`", lambda: bare.encode([QUERY]),
         lambda: bare.encode(texts, batch_size=batch_size)),
    ]  # fmt: skip
    results = []
    for path, step, one, many in steps:
        results.append(
            (path, step, None if one is None else one_call_us(one), None if many is None else batch_ms(many))
        )
        print(f"{path}: {step}: {results[-1][2:]}", file=sys.stderr)
    return results


def inference(module: torch.nn.Module, features: dict) -> object:
    with torch.inference_mode():
        return module(dict(features))


def write_profile(
    model_dir: Path, corpus: Path, sentences: int, batch_size: int, output: Path, model_label: str
) -> None:
    """Measure the steps and write the breakdown as markdown to ``output``."""
    load_before = "/".join(f"{value:.1f}" for value in os.getloadavg())
    results = profile(model_dir, corpus, sentences, batch_size)
    load_after = "/".join(f"{value:.1f}" for value in os.getloadavg())
    lines = [
        "# Serving profile: where the time goes",
        "",
        f"Command: `python -m benchmarks.serving_profile {model_label}` (or `python -m benchmarks.serving --profile`)",
        "",
        f"Machine: {machine_description()}; torch threads {torch.get_num_threads()}; load average {load_before}"
        f" before, {load_after} after (shared machine: compare within the table).",
        f"One query: `{QUERY}`, p50 of 2,000 calls. Batch: the first {sentences:,} lines of en.txt in batches of"
        f" {batch_size:,}, best of 3. '-': the step does not run on that path.",
        "",
        f"| path | step | one query (us) | {sentences:,} lines (ms) |",
        "| --- | --- | ---: | ---: |",
    ]
    for path, step, one, many in results:
        one_text = "-" if one is None else f"{one:.1f}"
        many_text = "-" if many is None else f"{many:.1f}"
        lines.append(f"| {path} | {step} | {one_text} | {many_text} |")
    output.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--model-label", default=None)
    parser.add_argument("--corpus", type=Path, default=Path("../shared/data/corpus/en.txt"))
    parser.add_argument("--sentences", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--output", type=Path, default=Path("serving-profile.md"))
    args = parser.parse_args()
    write_profile(
        args.model,
        args.corpus,
        args.sentences,
        args.batch_size,
        args.output,
        args.model_label or f"MODELS/{args.model.name}",
    )
    print(args.output.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
