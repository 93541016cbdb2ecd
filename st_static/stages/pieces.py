"""The pieces stage: subword-piece rows (:mod:`st_static.extraction.pieces`), so an unknown word reads its longest
known prefix and its pieces, in ``pieces-KEY/`` (``model/`` + ``report.json``).

Runs when ``piece_rows`` (the default), on the fallback stage's table (or the trained one). Keyed by the trained
table's key, the fit's constants and ``fallback_rows``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from sentence_transformers import SentenceTransformer

from st_static.distributed import barrier, is_first_process
from st_static.extraction.teacher_model import load_teacher_tokenizer
from st_static.files import staged_folder
from st_static.model.save_load import holds_st_static_output, load_model, save_model
from st_static.settings import ExtractionSettings
from st_static.stages.base import Build, FolderStage, stage_key


class Pieces(FolderStage):
    """One process fits the rows (the teacher's tokenizer only); every process reads its folder."""

    name = "pieces"

    def applies(self, build: Build) -> bool:
        return build.settings.extraction.piece_rows

    def key(self, build: Build) -> str:
        fallback_rows = build.settings.extraction.fallback_rows
        return stage_key(build.trained_key, "pieces", pieces_version(), fallback_rows)

    def run_in(self, build: Build, folder: Path) -> SentenceTransformer:
        source = build.model_path or build.trained()  # the fallback stage's table, else the trained one
        if is_first_process():
            run_pieces(source, folder, build.settings.extraction)
        barrier()
        build.model_path = folder / "model"
        build.model = build.record_inputs(load_model(build.model_path))
        return build.model


def pieces_version() -> dict[str, float]:
    """What keys the pieces step besides the table: the constants of the fit."""
    from st_static.extraction.pieces import MAX_PIECE_CHARS, PIECES_VERSION, RIDGE

    return {"ridge": RIDGE, "max_piece_chars": MAX_PIECE_CHARS, "version": PIECES_VERSION}


def run_pieces(
    model_path: str | os.PathLike[str], output: str | os.PathLike[str], settings: ExtractionSettings
) -> Path:
    """The table with subword-piece rows (:mod:`st_static.extraction.pieces`), saved in ``output`` (with
    ``report.json``); a finished folder is reused. Reads the teacher's tokenizer only (its continuation tokens).

    Returns:
        The saved model's folder (``output / "model"``).
    """
    from st_static.extraction.pieces import add_piece_rows

    output = Path(output)
    if (output / "report.json").is_file():
        return output / "model"
    started = time.perf_counter()
    model = load_model(model_path)
    with_pieces, report = add_piece_rows(model, load_teacher_tokenizer(settings.teacher))
    report["seconds"] = time.perf_counter() - started
    with staged_folder(output, replaceable=holds_st_static_output) as staging:
        save_model(with_pieces, staging / "model")
        (staging / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return output / "model"
