"""Saving and loading whole static models: atomic folders, checked loads."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import StaticEmbedding

from st_static.model_card import attach_card_data
from st_static.static_word_average import ModelFolderError, StaticWordAverage


def save_model(model: SentenceTransformer, path: str | os.PathLike[str], **save_kwargs: Any) -> Path:
    """Save ``model`` to ``path`` atomically: write a sibling temporary folder, then rename it into place.

    An interrupted save leaves the previous folder (if any) untouched and no partial folder under ``path``.
    A static model gets the st-static model card (:func:`st_static.model_card.attach_card_data`).

    Args:
        model: The model to save.
        path: The destination folder; replaced if it exists.
        **save_kwargs: Passed to ``SentenceTransformer.save_pretrained``.

    Returns:
        The destination path.
    """
    destination = Path(path).resolve()
    destination.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(model[0], StaticEmbedding):
        attach_card_data(model)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.tmp-", dir=destination.parent))
    try:
        model.save_pretrained(str(staging), **save_kwargs)
        replace_folder(staging, destination)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return destination


def replace_folder(source: Path, destination: Path) -> None:
    """Move the finished folder ``source`` to ``destination``, replacing it with two renames."""
    backup = None
    if destination.exists():
        backup = destination.with_name(f".{destination.name}.old-{os.getpid()}")
        shutil.rmtree(backup, ignore_errors=True)
        os.replace(destination, backup)
    os.replace(source, destination)
    if backup is not None:
        shutil.rmtree(backup, ignore_errors=True)


def load_model(
    model_name_or_path: str | os.PathLike[str], device: str | None = "cpu", **kwargs: Any
) -> SentenceTransformer:
    """Load a static model, checking its files, with :class:`StaticWordAverage` as its first module.

    A bare ``SentenceTransformer(path)`` also works; this adds the checks (complete, uncorrupted files; table
    and vocabulary that agree) and the word-level API of :class:`StaticWordAverage`.

    Args:
        model_name_or_path: A local folder or a Hub repo id.
        device: Device to load on.
        **kwargs: Passed to ``SentenceTransformer`` (``revision``, ``token``, ``cache_folder``, ...).

    Raises:
        ModelFolderError: If the folder is not a valid static model.
    """
    name = str(model_name_or_path)
    if not os.path.isdir(name) and (os.path.sep in name or name.startswith(".")) and not os.path.exists(name):
        raise ModelFolderError(f"{name}: no such folder.")
    hub_kwargs = {
        key: kwargs[key] for key in ("revision", "token", "cache_folder", "local_files_only") if key in kwargs
    }
    module = StaticWordAverage.load(name, **hub_kwargs)
    model = SentenceTransformer(name, device=device, **kwargs)
    if not isinstance(model[0], StaticEmbedding):
        raise ModelFolderError(f"{name}: the first module is {type(model[0]).__name__}, not a static embedding.")
    model._modules[next(iter(model._modules))] = module.to(model.device)
    attach_card_data(model)  # later saves regenerate the card instead of copying the loaded README
    return model
