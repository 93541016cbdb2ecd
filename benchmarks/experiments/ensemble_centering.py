"""All-but-the-top on a folded ensemble: centre it and drop its leading sentence directions, folded into the table.

    python -m benchmarks.experiments.ensemble_centering MODELS/swe-mpw-768d \
        --corpus ../shared/data/corpus/en-modern.txt --components 0,1,2,3,5,8 \
        --data ../shared/data --output benchmarks/results/DATE-ensemble-centering.md

A folded ensemble (``st-static compress A B C --fold-norms``) is a plain table: a text's vector is the mean of its
rows, then ``Normalize``. Each member's table was centred and had its leading components removed on its own, but the
concatenation of the members' blocks was not: the members' mean directions add up to a common direction every text
shares, which cosine similarity, k-means and nearest-neighbour search all read as likeness. Because the pooling is a
mean, ``mean(P (w - c)) = P (mean(w) - c)``: centring the sentence vectors of a corpus sample (``c``, their mean)
and projecting out their first ``D`` principal directions (``P = I - U U^T``) is exact when folded into every row.
Each ``D`` (``-1``: the table unchanged) is scored on the dev data (STS dev sets and the task files' dev halves,
``benchmarks.ensembles.score``); test columns are reported, never chosen on.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from benchmarks.common import command_line, log, machine, write_report
from benchmarks.ensembles import score
from st_static.data_files import first_lines

if TYPE_CHECKING:
    from st_static.model.static_word_average import StaticWordAverage


def sentence_statistics(
    model: object, module: StaticWordAverage, texts: list[str]
) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean of the texts' (un-normalised) averaged rows of ``module`` (``model``'s float table) and the principal
    directions around it, largest first."""
    from st_static.compression.model_parts import rebuild

    raw = rebuild(model, [module]).encode(texts, batch_size=4096, convert_to_tensor=True).to(torch.float64)  # type: ignore[arg-type]
    centre = raw.mean(dim=0)
    _, _, directions = torch.linalg.svd(raw - centre, full_matrices=False)
    return centre, directions


def centred(
    model: object, module: StaticWordAverage, centre: torch.Tensor, directions: torch.Tensor, components: int
) -> object:
    """``model`` with every row ``w`` of its float table ``module`` replaced by ``P (w - c)``, ``P`` removing the first
    ``components`` directions."""
    from sentence_transformers.base.modules import Normalize

    from st_static.compression.model_parts import rebuild
    from st_static.model.static_word_average import StaticWordAverage

    rows = module.word_vectors.detach().to(torch.float64) - centre
    top = directions[:components]
    rows = rows - (rows @ top.T) @ top
    table = StaticWordAverage(module.tokenizer, rows.to(torch.float32), metadata=module.metadata)
    return rebuild(model, [table, Normalize()])  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", type=Path, help="a folded ensemble (or any static model) folder")
    parser.add_argument("--corpus", type=Path, required=True, help="text file: the sentences to centre on")
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--components", default="0,1,2,3,5,8", help="D values to try, comma-separated")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)

    from st_static import load_model
    from st_static.compression.model_parts import float_pipeline

    model = load_model(str(args.model))
    module, _ = float_pipeline(model)  # the float table, read once
    texts = first_lines(args.corpus, args.lines)
    centre, directions = sentence_statistics(model, module, texts)
    rows = [{"components": -1, **score(model, args.data)}]
    print(json.dumps(rows[-1]), flush=True)
    for components in (int(part) for part in args.components.split(",")):
        log(f"centred, {components} components removed ...")
        rows.append(
            {"components": components, **score(centred(model, module, centre, directions, components), args.data)}
        )
        print(json.dumps(rows[-1]), flush=True)
    chosen = max(rows, key=lambda row: row["dev_mean"])
    tasks = list(rows[0]["tasks"])
    lines = [
        "# All-but-the-top on a folded ensemble",
        "",
        f"Command: `{command_line('benchmarks.experiments.ensemble_centering', argv)}`",
        f"Machine: {machine()[0]}. Centre and directions from the first {len(texts):,} lines of `{args.corpus.name}`.",
        "Components -1: the table as built; 0: centred only; D: centred and the first D directions removed.",
        "",
        "| components | stsb-en-dev | sick-dev | msrp-dev | "
        + " | ".join(f"{task} dev" for task in tasks)
        + " | STS dev mean | task dev mean | dev mean | stsb-en-test | task test mean |",
        "| " + " | ".join(["---"] + ["---:"] * (len(tasks) + 8)) + " |",
    ]
    for row in rows:
        sts = row["sts"]
        cells = [sts["stsb-en-dev"], sts["sick-dev"], sts["msrp-dev"], *(row["tasks"][task][0] for task in tasks)]
        cells += [row["sts_dev_mean"], row["task_dev_mean"], row["dev_mean"], sts["stsb-en-test"]]
        cells.append(row["task_test_mean"])
        lines.append(f"| {row['components']} | " + " | ".join(f"{value:.2f}" for value in cells) + " |")
    lines += ["", f"Chosen on the dev mean: components {chosen['components']}."]
    write_report(args.output, lines, {"rows": rows, "mean_norm": float(np.linalg.norm(centre.numpy()))})


if __name__ == "__main__":
    main()
