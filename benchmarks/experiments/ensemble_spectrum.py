"""Reshape a folded ensemble's spectrum: stretch its leading sentence directions, or keep only the leading ones.

    python -m benchmarks.experiments.ensemble_spectrum MODELS/swe-mpw-768d \
        --corpus ../shared/data/corpus/en-modern.txt --powers 0.25,0.5 --keep 256,384,512 \
        --data ../shared/data --output benchmarks/results/DATE-ensemble-spectrum.md

``benchmarks.experiments.ensemble_centering`` found that removing a folded ensemble's leading sentence directions costs
news-title clustering most: those directions carry topic. This asks the opposite: does giving them more weight lift
the task files? With ``V`` the principal directions of a corpus sample's (un-normalised) sentence vectors and ``s``
their singular values, each row ``w`` becomes ``V^T diag((s / s_1)^p) V w`` (``--powers``: ``p`` > 0 stretches the
leading directions against the rest, ``p = 0`` is the table as built), or ``V_k w`` (``--keep``: the first ``k``
directions only, a narrower table). Both are linear, so folding them into every row is exact for the mean of rows.
Scored on the dev data (STS dev sets and the task files' dev halves, ``benchmarks.ensembles.score``); test columns
are reported, never chosen on.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from benchmarks.common import command_line, log, machine, write_report
from benchmarks.ensembles import score, score_table
from st_static.data_files import first_lines

if TYPE_CHECKING:
    from st_static.model.static_word_average import StaticWordAverage


def sentence_spectrum(model: object, module: StaticWordAverage, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """The singular values and principal directions (rows, largest first) of the texts' centred, un-normalised
    averaged rows of ``module`` (``model``'s float table)."""
    from st_static.compression.model_parts import rebuild

    raw = rebuild(model, [module]).encode(texts, batch_size=4096, convert_to_tensor=True).to(torch.float64)  # type: ignore[arg-type]
    _, values, directions = torch.linalg.svd(raw - raw.mean(dim=0), full_matrices=False)
    return values, directions


def reshaped(model: object, module: StaticWordAverage, rows: torch.Tensor) -> object:
    """``model`` with its float table ``module``'s rows replaced by ``rows``, then ``Normalize``."""
    from sentence_transformers.base.modules import Normalize

    from st_static.compression.model_parts import rebuild
    from st_static.model.static_word_average import StaticWordAverage

    table = StaticWordAverage(module.tokenizer, rows.to(torch.float32), metadata=module.metadata)
    return rebuild(model, [table, Normalize()])  # type: ignore[arg-type]


def stretched_rows(
    module: StaticWordAverage, values: torch.Tensor, directions: torch.Tensor, power: float
) -> torch.Tensor:
    """Every row ``w`` as ``V^T diag((s / s_1)^power) V w``."""
    rows = module.word_vectors.detach().to(torch.float64)
    return ((rows @ directions.T) * (values / values[0]) ** power) @ directions


def kept_rows(module: StaticWordAverage, directions: torch.Tensor, keep: int) -> torch.Tensor:
    """Every row ``w`` as its coordinates on the first ``keep`` directions."""
    return module.word_vectors.detach().to(torch.float64) @ directions[:keep].T


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", type=Path, help="a folded ensemble (or any static model) folder")
    parser.add_argument("--corpus", type=Path, required=True, help="text file: the sentences whose spectrum is read")
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--powers", default="0.25,0.5", help="stretch powers p to try, comma-separated")
    parser.add_argument("--keep", default="256,384,512", help="numbers of leading directions to keep, comma-separated")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--save-chosen", type=Path, help="folder to save the variant chosen on the dev mean to")
    args = parser.parse_args(argv)

    from st_static import load_model
    from st_static.compression.model_parts import float_pipeline

    model = load_model(str(args.model))
    module, _ = float_pipeline(model)  # the float table, read once
    texts = first_lines(args.corpus, args.lines)
    values, directions = sentence_spectrum(model, module, texts)
    variants: list[tuple[str, torch.Tensor | None]] = [("as built", None)]
    variants += [
        (f"stretch p = {p}", stretched_rows(module, values, directions, float(p))) for p in args.powers.split(",") if p
    ]
    variants += [(f"keep {k}", kept_rows(module, directions, int(k))) for k in args.keep.split(",") if k]
    rows = []
    for name, table_rows in variants:
        log(f"{name} ...")
        scored = model if table_rows is None else reshaped(model, module, table_rows)
        rows.append({"variant": name, **score(scored, args.data)})
        print(json.dumps(rows[-1]), flush=True)
    chosen = max(rows, key=lambda row: row["dev_mean"])
    if args.save_chosen is not None:
        from st_static import save_model

        chosen_rows = dict(variants)[chosen["variant"]]
        save_model(model if chosen_rows is None else reshaped(model, module, chosen_rows), args.save_chosen)  # type: ignore[arg-type]
    lines = [
        "# A folded ensemble's spectrum: leading sentence directions stretched, or the rest dropped",
        "",
        f"Command: `{command_line('benchmarks.experiments.ensemble_spectrum', argv)}`",
        f"Machine: {machine()[0]}. Directions and singular values from the first {len(texts):,} lines of "
        f"`{args.corpus.name}`.",
        "",
        *score_table(rows, "variant", lambda row: row["variant"]),
    ]
    lines += ["", f"Chosen on the dev mean: {chosen['variant']}."]
    write_report(args.output, lines, {"rows": rows, "singular_values": values[:16].tolist()})


if __name__ == "__main__":
    main()
