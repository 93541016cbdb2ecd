"""A linear map from a folded ensemble's sentence vectors to a teacher's, fit by ridge regression and folded into rows.

    python -m benchmarks.experiments.ensemble_teacher_map MODELS/swe-mpw-768d \
        --targets MODELS/swe-minilm-256-shared.work/extraction-KEY/targets --ridge 0.00001,0.0001,0.001 \
        --data ../shared/data --output benchmarks/results/DATE-ensemble-teacher-map.md

The ensemble weighs its members with one number each (the seed's a_i). This asks whether a whole matrix does better:
``W`` maps the ensemble's normalised sentence vectors ``x`` onto the teacher's normalised vectors ``y`` of the same
corpus sentences (the build's cached distillation targets: unlabelled text, no similarity labels), ``W = (X^T X +
lambda n I)^-1 X^T Y``. Because the pooling is a mean and the model normalises last, ``normalise(W^T mean(rows))``
is exact when ``W`` is folded into every row: the result is a plain table of the teacher's width. ``--blend`` also
tries ``[x, b W^T x]`` (each part normalised, then concatenated: the exact block form, not folded). Scored on dev
(STS dev sets and the task files' dev halves, ``benchmarks.ensembles.score``); test columns reported only.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from benchmarks.common import command_line, log, machine, write_report
from benchmarks.ensembles import score, score_table
from benchmarks.experiments.ensemble_spectrum import reshaped

if TYPE_CHECKING:
    from st_static.model.static_word_average import StaticWordAverage


def sentence_vectors(model: object, module: StaticWordAverage, texts: list[str]) -> torch.Tensor:
    """The texts' averaged rows of ``module`` (``model``'s float table), normalised, in float64."""
    from st_static.compression.model_parts import rebuild

    raw = rebuild(model, [module]).encode(texts, batch_size=4096, convert_to_tensor=True).to(torch.float64)  # type: ignore[arg-type]
    return torch.nn.functional.normalize(raw, dim=1)


def ridge_map(inputs: torch.Tensor, targets: torch.Tensor, ridge: float) -> torch.Tensor:
    """``W`` minimising ``|X W - Y|^2 + ridge n |W|^2``."""
    gram = inputs.T @ inputs + ridge * len(inputs) * torch.eye(inputs.shape[1], dtype=inputs.dtype)
    return torch.linalg.solve(gram, inputs.T @ targets)


def mapped(model: object, module: StaticWordAverage, weights: torch.Tensor) -> object:
    """``model`` with every row ``w`` replaced by ``W^T w``, then ``Normalize``."""
    return reshaped(model, module, module.word_vectors.detach().to(torch.float64) @ weights)


class Blend:
    """``[x, b y]``: the ensemble's normalised vector beside its mapped one's (normalised), as one encoder."""

    def __init__(self, model: object, mapped_model: object, share: float) -> None:
        self.model, self.mapped_model, self.share = model, mapped_model, share

    def encode(self, texts: list[str], **kwargs: object) -> np.ndarray:
        kwargs = {**kwargs, "convert_to_numpy": True, "normalize_embeddings": True}
        first = self.model.encode(texts, **kwargs)  # type: ignore[attr-defined]
        second = self.mapped_model.encode(texts, **kwargs)  # type: ignore[attr-defined]
        return np.concatenate([first, self.share * second], axis=1)

    def __call__(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts)


def variant_label(row: dict) -> str:
    """A row's variant, with how closely its map fits the teacher's vectors when it has one."""
    return f"{row['variant']} ({row['fit_cosine']:.4f})" if "fit_cosine" in row else row["variant"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", type=Path, help="a folded ensemble (or any static model) folder")
    parser.add_argument("--targets", type=Path, required=True, help="a build's targets/ (sentences.txt + .npy)")
    parser.add_argument("--sentences", type=int, default=200_000, help="fit on the first N target sentences")
    parser.add_argument("--ridge", default="0.00001,0.0001,0.001", help="ridge strengths to try, comma-separated")
    parser.add_argument("--blend", default="", help="shares b of the mapped part beside the ensemble to try")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--save-chosen", type=Path, help="folder to save the best mapped table (dev mean) to")
    args = parser.parse_args(argv)

    from st_static import load_model, save_model
    from st_static.compression.model_parts import float_pipeline

    model = load_model(str(args.model))
    module, _ = float_pipeline(model)
    texts = (args.targets / "sentences.txt").read_text(encoding="utf-8").splitlines()[: args.sentences]
    teacher = torch.from_numpy(np.load(args.targets / "teacher_embeddings.npy", mmap_mode="r")[: len(texts)].copy())
    targets = torch.nn.functional.normalize(teacher.to(torch.float64), dim=1)
    log(f"encoding {len(texts):,} sentences ...")
    inputs = sentence_vectors(model, module, texts)
    rows = [{"variant": "as built", **score(model, args.data)}]
    print(json.dumps(rows[-1]), flush=True)
    maps: dict[str, torch.Tensor] = {}
    for ridge in (float(part) for part in args.ridge.split(",") if part):
        name = f"mapped, ridge {ridge:g}"
        log(f"{name} ...")
        maps[name] = ridge_map(inputs, targets, ridge)
        fit = float(torch.nn.functional.cosine_similarity(inputs @ maps[name], targets).mean())
        rows.append({"variant": name, "fit_cosine": fit, **score(mapped(model, module, maps[name]), args.data)})
        print(json.dumps(rows[-1]), flush=True)
    best = max((row for row in rows if row["variant"] in maps), key=lambda row: row["dev_mean"])
    for share in (float(part) for part in args.blend.split(",") if part):
        name = f"blend, {best['variant']}, share {share:g}"
        log(f"{name} ...")
        blend = Blend(model, mapped(model, module, maps[best["variant"]]), share)
        rows.append({"variant": name, **score(blend, args.data)})
        print(json.dumps(rows[-1]), flush=True)
    if args.save_chosen is not None:
        save_model(mapped(model, module, maps[best["variant"]]), args.save_chosen)  # type: ignore[arg-type]
    lines = [
        "# A teacher map folded into a folded ensemble",
        "",
        f"Command: `{command_line('benchmarks.experiments.ensemble_teacher_map', argv)}`",
        f"Machine: {machine()[0]}. Fit on the first {len(texts):,} sentences of `{args.targets}` (the teacher's "
        f"{targets.shape[1]}-d vectors).",
        "",
        *score_table(rows, "variant (fit cosine)", variant_label),
    ]
    chosen = max(rows, key=lambda row: row["dev_mean"])
    lines += ["", f"Chosen on the dev mean: {chosen['variant']}."]
    write_report(args.output, lines, {"rows": rows})


if __name__ == "__main__":
    main()
