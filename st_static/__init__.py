"""st-static: static word embeddings distilled from any Sentence Transformer."""

from __future__ import annotations

from st_static.inference import encode
from st_static.io import load_model, save_model
from st_static.static_word_average import ModelFolderError, StaticWordAverage

__version__ = "0.1.0"

__all__ = ["ModelFolderError", "StaticWordAverage", "__version__", "encode", "load_model", "save_model"]
