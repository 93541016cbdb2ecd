"""One-query latency of the fast path, after either load, next to WordLlama's: the serving benchmark's one-query rows.

    python -m benchmarks.one_query MODEL_DIR [--rounds 3] [--calls 2000] [--output benchmarks/results/DATE-one-query.md]

Each row runs in a fresh process (``benchmarks.serving``'s worker, so the numbers are those of its table): the short
query of ``benchmarks.serving`` embedded once (the first call: what a path builds on first use), then ``--calls``
times after 50 warm-up calls, p50 and p99; rows alternate over ``--rounds`` rounds and each figure is the best round.
Rows: ``st_static.encode`` (the fast path) of MODEL_DIR after ``st_static.load_model`` and after a plain
``SentenceTransformer(MODEL_DIR)`` (the README's path: the look-ups are built on the first call and kept),
``SentenceTransformer.encode`` of the ``load_model`` model (st-static's module), and WordLlama l2_supercat 256: in its
own venv (``benchmarks.common.ensure_venv``) when that exists or ``--wordllama-python`` names one, else in this
interpreter when it has ``wordllama`` (its packaged table, read offline), else in a new venv. The serving benchmark's
other rows (model2vec's own distill among them) are left out, so this runs in a minute.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

from benchmarks.common import CACHE, PEER_ENVS, command_line, ensure_venv, load_average, log, machine, write_report
from benchmarks.serving import SHORT_QUERY, WARM_UP_CALLS, best, run_row


def wordllama_python(cache: Path, given: Path | None) -> str:
    """The interpreter of the WordLlama row: ``given``, the peer venv when made, this one when it has wordllama, else
    a new peer venv."""
    if given is not None:
        return str(given)
    peer = cache / "bench-envs" / "wordllama"
    ready = peer / ".st-static-ready"
    if (peer / "bin" / "python").exists() and ready.exists() and ready.read_text() == " ".join(PEER_ENVS["wordllama"]):
        return str(peer / "bin" / "python")
    if importlib.util.find_spec("wordllama") is not None:
        return sys.executable
    return str(ensure_venv(cache, "wordllama"))


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
    parser.add_argument("--wordllama-python", type=Path, default=None, help="the interpreter of the WordLlama row")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    args.corpus = args.corpus.resolve()
    model = str(args.model.resolve())
    wordllama = wordllama_python(args.cache, args.wordllama_python)
    wordllama_where = "this interpreter" if wordllama == sys.executable else "its own venv"
    rows = [
        {"label": "`st_static.encode`, `st_static.load_model`", "kind": "fast", "path": model,
         "python": sys.executable, "st_static": True},
        {"label": "`st_static.encode`, plain `SentenceTransformer(folder)`", "kind": "fast-bare", "path": model,
         "python": sys.executable, "st_static": True},
        {"label": "`SentenceTransformer.encode`, `st_static.load_model`", "kind": "st", "path": model,
         "python": sys.executable, "st_static": True},
        {"label": f"WordLlama l2_supercat 256 ({wordllama_where})", "kind": "wordllama", "path": "l2_supercat",
         "python": wordllama},
    ]  # fmt: skip
    start_load = load_average()
    rounds: list[list[dict]] = [[] for _ in rows]
    with tempfile.TemporaryDirectory(prefix="st-static-one-query-") as folder:
        for round_index in range(args.rounds):
            for index, row in enumerate(rows):
                log(f"round {round_index + 1}: {row['label']} ...")
                rounds[index].append(run_row(row, args, Path(folder), f"row{index}"))
    results = [best(row_rounds) for row_rounds in rounds]
    wordllama_p50 = results[-1]["p50_ms"]
    lines = [
        "# One-query latency: the fast path, after either load, next to WordLlama",
        "",
        f"Command: `{command_line('benchmarks.one_query', argv)}`",
        f"Machine: {machine()[0]}; load average at the start {start_load}.",
        f"Query: `{SHORT_QUERY}`; one first call, then {args.calls} calls after {WARM_UP_CALLS} warm-up calls per "
        f"process; best of {args.rounds} rounds.",
        "",
        "| path | one query p50 (ms) | p99 (ms) | p50 / WordLlama's | first call (ms) | load (s) | load averages (per "
        "round) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for row, result in zip(rows, results, strict=True):
        lines.append(
            f"| {row['label']} | {result['p50_ms']:.4f} | {result['p99_ms']:.4f} | "
            f"{result['p50_ms'] / wordllama_p50:.2f} | {result['first_call_ms']:.1f} | {result['load_seconds']:.2f} "
            f"| {result['load_average']} |"
        )
    plain, loaded = results[1], results[0]
    lines += ["", f"p50 of the plain load / `load_model`'s: {plain['p50_ms'] / loaded['p50_ms']:.2f}."]
    write_report(args.output, lines)


if __name__ == "__main__":
    main()
