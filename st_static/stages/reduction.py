"""The reduction stage: sentence-level PCA + ABTT (or word-level PCA) of the raw table, in ``pca-KEY/`` (a saved
model of dimension ``dim``; :mod:`st_static.reduction.pca`). Keyed by the raw table's key and the
``ReductionSettings``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize

from st_static.distributed import barrier, is_first_process
from st_static.model.inference import encode
from st_static.model.metadata import PCARecord
from st_static.model.save_load import load_model, save_model
from st_static.model.static_word_average import StaticWordAverage
from st_static.reduction.pca import PCATransform, fit_pca, removed_components_for
from st_static.settings import ReductionSettings
from st_static.stages.base import Build, FolderStage, stage_key
from st_static.stages.extraction_folder import ExtractionStage
from st_static.tensors import to_numpy


class Reduction(FolderStage):
    """Step 2: one process fits and saves the reduced model; every process reads it."""

    name = "pca"

    def key(self, build: Build) -> str:
        return stage_key(build.table_key, asdict(build.settings.reduction))

    def run_in(self, build: Build, folder: Path) -> SentenceTransformer:
        if is_first_process() and not (folder / "modules.json").is_file():
            run_reduction(build.extracted(), folder, build.settings.reduction)
        barrier()
        build.reduced = load_model(folder)
        return build.reduced


def fit_reduction(module: StaticWordAverage, pca_sentences: Sequence[str], settings: ReductionSettings) -> PCATransform:
    """Step 2: fit the PCA (+ ABTT) on sentence vectors (means of the raw word vectors) or on the word table.

    Args:
        module: The extraction-stage module (raw teacher-dimension table).
        pca_sentences: Sentences embedded with the raw table to fit the sentence-level PCA.
        settings: Output dimension, removed components (default ``floor(teacher_dim / 100)``) and level.
    """
    removed_components = settings.removed_components
    if removed_components is None:
        removed_components = removed_components_for(module.embedding_dim)
    if settings.pca_level == "word":
        vectors = to_numpy(module.word_vectors)
    else:
        vectors = encode(module, list(pca_sentences), normalize=False)
        vectors = vectors[np.abs(vectors).sum(axis=1) > 0]  # sentences without a known word carry nothing
    return fit_pca(vectors, dim=settings.dim, removed_components=removed_components, level=settings.pca_level)


def run_reduction(
    extraction: ExtractionStage, output: str | os.PathLike[str] | None, settings: ReductionSettings
) -> SentenceTransformer:
    """Apply step 2 to a finished extraction and (with ``output``) save the reduced model atomically."""
    raw_module: StaticWordAverage = load_model(extraction.model_path)[0]
    transform = fit_reduction(raw_module, extraction.pca_sentences(), settings)
    reduced = transform.apply(to_numpy(raw_module.word_vectors))
    pca = PCARecord(level=settings.pca_level, removed_components=transform.removed_components, dim=settings.dim)
    module = StaticWordAverage(raw_module.tokenizer, reduced, metadata=raw_module.metadata.with_stage("pca", pca=pca))
    model = SentenceTransformer(modules=[module, Normalize()], device="cpu")
    if output is not None:
        save_model(model, output)
    return model
