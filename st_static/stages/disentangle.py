"""The disentangle stage: the disentangler's meaning map trained on the build's translation pairs and folded into the
table (:mod:`st_static.training.meaning_fold`), in ``disentangle-KEY/`` (``model/`` + ``report.json``).

Runs when ``disentangle`` (cross-lingual builds only), on the last table (after the fallback and piece rows, which the
fold carries) and before the storage. Keyed by the key of the stage it reads, the ``DisentangleSettings`` and the
training's constants, so it changes no other stage's key.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

from sentence_transformers import SentenceTransformer

from st_static.distributed import barrier, is_first_process
from st_static.files import staged_folder
from st_static.model.save_load import holds_st_static_output, load_model, save_model
from st_static.stages.base import Build, FolderStage, stage_key
from st_static.stages.refinement import training_pairs


class Disentangle(FolderStage):
    """One process trains and folds the map; every process reads its folder."""

    name = "disentangle"

    def applies(self, build: Build) -> bool:
        return build.settings.disentanglement.disentangle

    def key(self, build: Build) -> str:
        extraction = build.settings.extraction
        read = "pieces" if extraction.piece_rows else "fallback" if extraction.fallback_rows else "refinement"
        read_key = build.trained_key if read == "refinement" else build.keys[read]
        return stage_key(read_key, "disentangle", asdict(build.settings.disentanglement), disentangle_version())

    def run_in(self, build: Build, folder: Path) -> SentenceTransformer:
        if is_first_process():
            run_disentangle(build, folder)
        barrier()
        build.model_path = folder / "model"
        build.model = build.record_inputs(load_model(build.model_path))
        return build.model


def disentangle_version() -> dict[str, int]:
    """What keys the stage besides its settings: the training's constants."""
    from st_static.training.disentangle import MIN_PAIRS

    return {"min_pairs": MIN_PAIRS, "version": 1}


def run_disentangle(build: Build, output: Path) -> Path:
    """The last table with the meaning map folded in, saved in ``output`` (with ``report.json``); a finished folder is
    reused.

    Returns:
        The saved model's folder (``output / "model"``).
    """
    from st_static.training.meaning_fold import disentangle_table

    if (output / "report.json").is_file():
        return output / "model"
    pairs = training_pairs(build)
    if pairs is None:
        raise RuntimeError("the disentangle stage runs in cross-lingual builds only")
    started = time.perf_counter()
    settings = build.settings.disentanglement
    model = load_model(build.model_path or build.trained())
    folded, result = disentangle_table(
        model,
        pairs,
        constraints=settings.disentangle_constraints,
        language_weight=settings.disentangle_language_weight,
        max_pairs=settings.disentangle_max_pairs,
        max_epochs=settings.disentangle_max_epochs,
        file_names=build.recorded_inputs().parallel,
        device=build.settings.device,
    )
    report = {
        **result.record().to_dict(),
        "steps": result.steps,
        "train_seconds": result.train_seconds,
        "history": [{"epoch": epoch, "validation_loss": loss} for epoch, loss in result.history],
        "seconds": time.perf_counter() - started,
    }
    with staged_folder(output, replaceable=holds_st_static_output) as staging:
        save_model(folded, staging / "model")
        (staging / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return output / "model"
