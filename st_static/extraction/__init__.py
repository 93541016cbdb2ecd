"""Steps 1 and 2 of the method: decontextualised word vectors from a teacher, then sentence-level PCA + ABTT."""

from __future__ import annotations

from st_static.extraction.corpus import CorpusError, iter_sentences
from st_static.extraction.extract import ExtractionResult, extract_word_vectors
from st_static.extraction.selection import SentenceSelection, select_sentences
from st_static.extraction.stages import (
    ExtractionSettings,
    ExtractionStage,
    fit_reduction,
    run_extraction,
    run_reduction,
)
from st_static.extraction.vocabulary import Vocabulary, build_vocabulary, count_word_sentences
from st_static.reduction.pca import PCATransform, fit_pca
from st_static.teachers import TeacherError

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
