"""The fallback stage: the trained table (the refinement's, or the second contrastive pass's when it ran) with
fallback rows (:mod:`st_static.extraction.fallback`), so every text gets a vector, in ``fallback-KEY/`` (``model/`` +
``report.json``).

Runs when ``fallback_rows`` (the default). Keyed by the trained table's key and the constants that set the rows, so
``fallback_rows`` changes no other stage's key.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from sentence_transformers import SentenceTransformer

from st_static.distributed import barrier, is_first_process, process_device
from st_static.extraction.teacher_model import load_teacher
from st_static.files import staged_folder
from st_static.model.save_load import holds_st_static_output, load_model, save_model
from st_static.settings import ExtractionSettings
from st_static.stages.base import Build, FolderStage, stage_key


class Fallback(FolderStage):
    """One process adds the rows; every process reads its folder."""

    name = "fallback"

    def applies(self, build: Build) -> bool:
        return build.settings.extraction.fallback_rows

    def key(self, build: Build) -> str:
        return stage_key(build.trained_key, "fallback", fallback_version())

    def run_in(self, build: Build, folder: Path) -> SentenceTransformer:
        settings = build.settings
        if is_first_process():
            run_fallback(build.trained(), folder, settings.extraction, settings.device)
        barrier()
        build.model_path = folder / "model"
        build.model = build.record_inputs(load_model(build.model_path))
        return build.model


def fallback_version() -> dict[str, float | str]:
    """What keys the fallback step besides the refined table: the constants that set its rows and the normalisation
    its layout reads with (which decides the characters that get rows)."""
    from st_static.extraction.fallback import (
        EMPTY_TEXT_LARGEST_ENTRY,
        EMPTY_TEXT_SCALE,
        FALLBACK_CHARACTER_SCALE,
        FIT_WORDS,
    )
    from st_static.model.tokenization import INFERENCE_FORM

    return {
        "characters": FALLBACK_CHARACTER_SCALE,
        "empty_text": EMPTY_TEXT_SCALE,
        "empty_text_largest_entry": EMPTY_TEXT_LARGEST_ENTRY,
        "fit_words": FIT_WORDS,
        "normalization": INFERENCE_FORM,
    }


def run_fallback(
    model_path: str | os.PathLike[str],
    output: str | os.PathLike[str],
    settings: ExtractionSettings,
    device: str | None = None,
) -> Path:
    """The last step: the finished table with fallback rows (:mod:`st_static.extraction.fallback`), saved in
    ``output`` (with ``report.json``); a finished folder is reused.

    Returns:
        The saved model's folder (``output / "model"``).
    """
    from st_static.extraction.fallback import add_fallback_rows

    output = Path(output)
    if (output / "report.json").is_file():
        return output / "model"
    started = time.perf_counter()
    settings = settings.with_teacher_prompt()
    model = load_model(model_path)
    teacher = load_teacher(settings.teacher, device=process_device(device), precision=settings.teacher_precision)
    completed, report = add_fallback_rows(model, teacher, prompt=settings.prompt)
    report["seconds"] = time.perf_counter() - started
    with staged_folder(output, replaceable=holds_st_static_output) as staging:
        save_model(completed, staging / "model")
        (staging / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return output / "model"
