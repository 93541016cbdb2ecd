"""The storage stage: the last model quantised to ``storage`` (float16 by default) in memory, as the published folder
stores it (:func:`st_static.compression.quantize`: one row per word, fallback row and piece, whatever the format,
``float32`` too); it keeps no folder."""

from __future__ import annotations

from sentence_transformers import SentenceTransformer

from st_static.stages.base import Build, Stage


class Storage(Stage):
    """The stored table: one row per row, float16 by default."""

    name = "storage"

    def label(self, build: Build) -> str:
        return f"storage ({build.settings.extraction.storage})"

    def run(self, build: Build) -> SentenceTransformer:
        from st_static.compression.quantization import quantize

        if build.model is None:
            raise RuntimeError("the stages ran out of order: no model to store yet")
        build.model = quantize(build.model, build.settings.extraction.storage)
        return build.model
