"""Steps 1 and 2 of the method: decontextualised word vectors from a teacher, then sentence-level PCA + ABTT."""

from __future__ import annotations

import importlib
from typing import Any

from st_static.extraction.corpus import CorpusError, iter_sentences
from st_static.extraction.extract import ExtractionResult, extract_word_vectors
from st_static.extraction.selection import SentenceSelection, select_sentences
from st_static.extraction.vocabulary import Vocabulary, build_vocabulary, count_word_sentences
from st_static.reduction.pca import PCATransform, fit_pca
from st_static.settings import ExtractionSettings
from st_static.teachers import TeacherError

_STAGE_NAMES = {
    "ExtractionStage": "st_static.stages.extraction_folder",
    "run_extraction": "st_static.stages.extraction",
    "fit_reduction": "st_static.stages.reduction",
    "run_reduction": "st_static.stages.reduction",
}
"""Names of the extraction and reduction stages (:mod:`st_static.stages`), loaded on first use: the stages import
this package, never the other way at import time."""


def __getattr__(name: str) -> Any:
    if name not in _STAGE_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_STAGE_NAMES[name]), name)


__all__ = [
    "CorpusError",
    "ExtractionResult",
    "ExtractionSettings",
    "ExtractionStage",
    "PCATransform",
    "SentenceSelection",
    "TeacherError",
    "Vocabulary",
    "build_vocabulary",
    "count_word_sentences",
    "extract_word_vectors",
    "fit_pca",
    "fit_reduction",
    "iter_sentences",
    "run_extraction",
    "run_reduction",
    "select_sentences",
]
