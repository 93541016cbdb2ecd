"""Build cost against corpus size: wall time, peak memory and scores of the default build on the first p% of a corpus.

    python -m benchmarks.build_cost --corpus ../shared/data/corpus/en.txt --data ../shared/data --work runs/cost \
        [--fractions 25,50,100] [--option=--teacher=sentence-transformers/all-MiniLM-L6-v2 ...] \
        --output benchmarks/results/DATE-build-cost.md

Each point runs ``st-static build`` in its own process from an empty work folder (the first p% of the corpus lines
written to ``--work``), so its wall time and peak memory (the child's max RSS) are the whole command's. Points
run one after another; the machine should be otherwise idle.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import write_report


def run_point(fraction: int, arguments: argparse.Namespace) -> dict:
    """One build on the first ``fraction`` % of the corpus, in a fresh folder."""
    folder = arguments.work / f"p{fraction}"
    if folder.exists():
        raise SystemExit(f"{folder} exists: give an empty --work folder.")
    folder.mkdir(parents=True)
    lines = arguments.corpus.read_text(encoding="utf-8").splitlines(keepends=True)
    corpus = folder / arguments.corpus.name
    corpus.write_text("".join(lines[: len(lines) * fraction // 100]), encoding="utf-8")
    command = [
        str(Path(sys.executable).with_name("st-static")),
        "build",
        "--corpus",
        str(corpus),
        "--out",
        str(folder / "model"),
        "--eval-data",
        str(arguments.data),
        *arguments.option,
    ]
    started = time.perf_counter()
    with (folder / "log").open("w") as log:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
        # wait4 gives this child's own resource usage (its peak RSS), not the largest child's so far.
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if process.returncode:
        raise SystemExit(f"The build on {fraction}% failed (exit {process.returncode}); see {folder / 'log'}.")
    evaluation = json.loads((folder / "model" / "evaluation.json").read_text(encoding="utf-8"))["results"]
    stages = json.loads((folder / "model" / "stage_scores.json").read_text(encoding="utf-8"))
    return {
        "fraction": fraction,
        "lines": len(lines) * fraction // 100,
        "seconds": seconds,
        "peak_rss_mib": usage.ru_maxrss / 1024,
        "stage_seconds": stages.get("seconds", {}),
        "scores": {task: evaluation[task]["score"] for task in ("stsb-en-test", "sick-dev") if task in evaluation},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--fractions", default="25,50,100")
    parser.add_argument("--option", action="append", default=[], help="More build options, e.g. --option=--dim=256.")
    parser.add_argument("--output", type=Path, required=True)
    arguments = parser.parse_args()
    arguments.fractions = [int(value) for value in arguments.fractions.split(",")]
    arguments.option = [part for option in arguments.option for part in option.split("=", 1)]

    rows = []
    for fraction in arguments.fractions:
        rows.append(run_point(fraction, arguments))
        print(json.dumps(rows[-1]), flush=True)
    lines = [
        f"# Build cost against corpus size ({arguments.corpus.name})",
        "",
        f"Command: `python -m benchmarks.build_cost --corpus {arguments.corpus.name} --fractions "
        f"{','.join(map(str, arguments.fractions))} {' '.join(arguments.option)}`: the default `st-static build` "
        "(with `--eval-data`) on the first p% of the corpus lines, each from an empty work folder, one after another.",
        "",
        "| corpus | lines | wall time | peak RSS | stsb-en-test | sick-dev | stage seconds |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in rows:
        peak = f"{row['peak_rss_mib']:,.0f} MiB"
        stages = ", ".join(f"{name} {value:.0f}" for name, value in row["stage_seconds"].items())
        lines.append(
            f"| {row['fraction']}% | {row['lines']:,} | {row['seconds'] / 60:.1f} min | {peak} | "
            f"{row['scores'].get('stsb-en-test', float('nan')):.2f} | {row['scores'].get('sick-dev', float('nan')):.2f}"
            f" | {stages} |"
        )
    write_report(arguments.output, lines, rows)


if __name__ == "__main__":
    main()
