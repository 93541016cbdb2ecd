"""Moved: the build's stages are :mod:`st_static.stages`, one module each. This module keeps the old names
importable (loaded on first use)."""

from __future__ import annotations

import importlib
from typing import Any

_MOVED = {
    "ExtractionStage": "st_static.stages.extraction_folder",
    "StageFolderError": "st_static.stages.extraction_folder",
    "build_vocabulary_from_corpus": "st_static.stages.extraction",
    "check_prompt_length": "st_static.stages.extraction",
    "run_extraction": "st_static.stages.extraction",
    "run_completion": "st_static.stages.completion",
    "fit_reduction": "st_static.stages.reduction",
    "run_reduction": "st_static.stages.reduction",
    "run_fallback": "st_static.stages.fallback",
    "run_pieces": "st_static.stages.pieces",
    "peak_memory_mib": "st_static.stages.base",
}


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_MOVED[name]), name)


def __dir__() -> list[str]:
    return sorted(_MOVED)
