"""One-query latency of the fast path next to WordLlama's: the serving benchmark's one-query rows, side by side.

    python -m benchmarks.one_query MODEL_DIR [--rounds 3] [--calls 2000] [--output benchmarks/results/DATE-one-query.md]

Each row runs in a fresh process (``benchmarks.serving``'s worker, so the numbers are those of its table): the short
query of ``benchmarks.serving`` embedded ``--calls`` times after 50 warm-up calls, p50 and p99; rows alternate over
``--rounds`` rounds and each figure is the best round. Rows: ``st_static.encode`` (the fast path) of MODEL_DIR after
``st_static.load_model``, ``SentenceTransformer.encode`` of the same (st-static's module), and WordLlama l2_supercat
256 in its own venv (``benchmarks.common.ensure_venv``). The serving benchmark's other rows (model2vec's own distill
among them) are left out, so this runs in a minute.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from benchmarks.common import CACHE, command_line, ensure_venv, load_average, log, machine, write_report
from benchmarks.serving import SHORT_QUERY, best, run_row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", type=Path, help="an st-static model folder")
    parser.add_argument("--corpus", type=Path, default=Path("../shared/data/corpus/en.txt"))
    parser.add_argument("--sentences", type=int, default=2_000)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--calls", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    args.corpus = args.corpus.resolve()
    model = str(args.model.resolve())
    rows = [
        {"label": "`st_static.encode` (fast path)", "kind": "fast", "path": model, "python": sys.executable,
         "st_static": True},
        {"label": "`SentenceTransformer.encode`, `st_static.load_model`", "kind": "st", "path": model,
         "python": sys.executable, "st_static": True},
        {"label": "WordLlama l2_supercat 256", "kind": "wordllama", "path": "l2_supercat",
         "python": str(ensure_venv(args.cache, "wordllama"))},
    ]  # fmt: skip
    start_load = load_average()
    rounds: list[list[dict]] = [[] for _ in rows]
    with tempfile.TemporaryDirectory(prefix="st-static-one-query-") as folder:
        for round_index in range(args.rounds):
            for index, row in enumerate(rows):
                log(f"round {round_index + 1}: {row['label']} ...")
                rounds[index].append(run_row(row, args, Path(folder), f"row{index}"))
    results = [best(row_rounds) for row_rounds in rounds]
    wordllama = results[-1]["p50_ms"]
    lines = [
        "# One-query latency: the fast path next to WordLlama",
        "",
        f"Command: `{command_line('benchmarks.one_query', argv)}`",
        f"Machine: {machine()[0]}; load average at the start {start_load}.",
        f"Query: `{SHORT_QUERY}`; {args.calls} calls after 50 warm-up calls per process; best of {args.rounds} rounds.",
        "",
        "| path | one query p50 (ms) | p99 (ms) | p50 / WordLlama's | load averages (per round) |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for row, result in zip(rows, results, strict=True):
        lines.append(
            f"| {row['label']} | {result['p50_ms']:.4f} | {result['p99_ms']:.4f} | {result['p50_ms'] / wordllama:.2f} "
            f"| {result['load_average']} |"
        )
    write_report(args.output, lines)


if __name__ == "__main__":
    main()
