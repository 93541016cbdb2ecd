"""How far apart two tables' bitext accuracies must be before a dev half can tell them apart.

    python -m benchmarks.experiments.bitext_noise --model card=MODELS/a --model variant=MODELS/b \
        --file ../shared/data/tatoeba/jpn-eng.tsv --output benchmarks/results/DATE-bitext-noise.md

Each model reads every pair of each file (a Tatoeba or Tux Paint dev half). A pair scores the mean of its two
retrievals, as ``st-static evaluate`` scores the file (0, 0.5 or 1; the mean over the pairs is the accuracy). The
pairs are then resampled with replacement (``--resamples``, seed 0), each resample scored again with the pairs'
own scores (the candidates stay the whole file):

- per model: the accuracy and the 2.5 and 97.5 percentiles of the resamples (the spread a withheld half of the
  same size would show);
- per model after the first: the difference to the first, paired (the same resampled pairs for both), its
  percentiles, and the share of resamples in which it is above zero.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import command_line, log, write_report
from benchmarks.experiments.tatoeba_gap import correct_both_ways, read_pairs


def pair_scores(model: Any, path: Path) -> np.ndarray:
    """Per pair of ``path``, the mean of its two retrievals by ``model`` (0, 0.5 or 1)."""
    english, foreign = read_pairs(path)
    return correct_both_ways(np.asarray(model.encode(english)), np.asarray(model.encode(foreign)))


def resampled_means(scores: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """x100 mean of ``scores`` over each row of ``samples`` (indices of resampled pairs)."""
    return 100.0 * scores[samples].mean(axis=1)


def interval(values: np.ndarray) -> tuple[float, float]:
    """The 2.5 and 97.5 percentiles of ``values``."""
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", required=True, metavar="NAME=PATH", help="the first is compared")
    parser.add_argument("--file", action="append", required=True, type=Path, help="a bitext file (eng, other)")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()
    if arguments.resamples < 100:
        parser.error("--resamples must be at least 100")
    named = [entry.split("=", 1) for entry in arguments.model]
    if any(len(entry) != 2 or not all(entry) for entry in named):
        parser.error("--model takes NAME=PATH")
    from st_static.model.save_load import load_model

    rows: list[dict[str, Any]] = []
    lines = [
        "# Bitext accuracy: what a dev half can tell apart",
        "",
        f"Command: `{command_line('benchmarks.experiments.bitext_noise')}`",
        "",
        f"Pairs resampled with replacement, {arguments.resamples:,} times (seed 0); accuracy x100, mean of both "
        "directions; interval: 2.5 and 97.5 percentiles; difference: to the first model, paired.",
        "",
        "| file | pairs | model | accuracy | interval | difference | its interval | share of resamples above 0 |",
        "| --- | ---: | --- | ---: | --- | ---: | --- | ---: |",
    ]
    models = {name: load_model(path) for name, path in named}
    for path in arguments.file:
        log(f"{path.name} ...")
        scores = {name: pair_scores(model, path) for name, model in models.items()}
        count = len(next(iter(scores.values())))
        samples = np.random.default_rng(0).integers(0, count, size=(arguments.resamples, count))
        means = {name: resampled_means(values, samples) for name, values in scores.items()}
        first = named[0][0]
        for name, values in scores.items():
            accuracy = 100.0 * float(values.mean())
            low, high = interval(means[name])
            row: dict[str, Any] = {"file": path.name, "pairs": count, "model": name, "accuracy": accuracy}
            row["interval"] = [low, high]
            cells = [path.name, f"{count:,}", name, f"{accuracy:.2f}", f"{low:.2f} - {high:.2f}"]
            if name == first:
                cells += ["", "", ""]
            else:
                difference = means[name] - means[first]
                low, high = interval(difference)
                above = float(np.mean(difference > 0))
                row.update(difference=accuracy - 100.0 * float(scores[first].mean()), difference_interval=[low, high])
                row["share_above_zero"] = above
                cells += [f"{row['difference']:+.2f}", f"{low:+.2f} - {high:+.2f}", f"{above:.3f}"]
            rows.append(row)
            lines.append("| " + " | ".join(cells) + " |")
    write_report(arguments.output, lines, rows)


if __name__ == "__main__":
    main()
