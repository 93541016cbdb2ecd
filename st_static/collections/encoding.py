"""How a collection's texts become vectors: the model (loaded once per process), its fingerprint (what a resumed
run checks), the fast path :func:`st_static.encode` (``model.encode`` for pipelines it refuses), and an encoder
object for libraries that take one (SemHash)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

from st_static.model.inference import check_pipeline, encode, resolve_prompt, static_module
from st_static.tensors import to_numpy

ModelLike = str | os.PathLike[str] | SentenceTransformer
ENCODE_BATCH = 8192


def load_collection_model(model: ModelLike) -> SentenceTransformer:
    """``model`` itself, or the static model it names (a folder or Hub id), loaded with its checks."""
    if isinstance(model, SentenceTransformer):
        return model
    from st_static.model.save_load import load_model

    return load_model(model)


def model_name(model: ModelLike) -> str:
    """How a run names its model: the folder or Hub id given, else the in-memory model's card name."""
    if isinstance(model, SentenceTransformer):
        return getattr(model.model_card_data, "model_name", None) or "a model in memory"
    return str(model)


def model_fingerprint(model: SentenceTransformer) -> str:
    """The sha256 of what decides a model's vectors: its weights, its first module's tokenizer, its modules and
    prompt. Two loads of one folder agree; any change to the table gives another."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        array = to_numpy(tensor, dtype=torch.float32 if tensor.dtype == torch.bfloat16 else None)
        digest.update(np.ascontiguousarray(array).view(np.uint8))
    tokenizer = getattr(model[0], "tokenizer", None)
    if hasattr(tokenizer, "to_str"):
        digest.update(tokenizer.to_str().encode())
    pipeline = {
        "modules": [type(module).__name__ for module in model],
        "truncate_dim": model.truncate_dim,
        "prompt": resolve_prompt(model),
    }
    digest.update(json.dumps(pipeline, sort_keys=True).encode())
    return digest.hexdigest()


def uses_fast_path(model: SentenceTransformer) -> bool:
    """Whether :func:`st_static.encode` reads this model (a static table, then ``Normalize`` only)."""
    try:
        check_pipeline(model)
        static_module(model)
    except TypeError:
        return False
    return True


def text_encoder(model: SentenceTransformer, truncate_dim: int | None = None) -> Callable[[list[str]], np.ndarray]:
    """A function from texts to float32 vectors: :func:`st_static.encode` where it reads the model, else
    ``model.encode``; then the first ``truncate_dim`` components (not renormalised, as ``model.encode`` gives)."""
    if uses_fast_path(model):

        def embed(texts: list[str]) -> np.ndarray:
            return encode(model, texts, batch_size=ENCODE_BATCH)

    else:

        def embed(texts: list[str]) -> np.ndarray:
            vectors = model.encode(texts, batch_size=256, convert_to_numpy=True, show_progress_bar=False)
            return np.asarray(vectors, dtype=np.float32)

    if truncate_dim is None:
        return embed
    return lambda texts: np.ascontiguousarray(embed(texts)[:, :truncate_dim])


def vector_dim(model: SentenceTransformer) -> int:
    """The dimension of the model's vectors (its ``truncate_dim`` when set)."""
    return int(text_encoder(model)(["a"]).shape[1])


def model_reference(model: ModelLike, folder: Path) -> str:
    """What another process loads the model from: the folder or Hub id given, or, for a model in memory, a copy
    saved into ``folder`` (a temporary folder the caller removes)."""
    if not isinstance(model, SentenceTransformer):
        return str(model)
    from st_static.model.save_load import save_model

    path = folder / "model"
    save_model(model, path)
    return str(path)


class FastEncoder:
    """An encoder object for libraries that take one with an ``encode(texts)`` method (SemHash, vicinity, ...),
    reading texts through :func:`st_static.encode`.

    Example:
        >>> from semhash import SemHash
        >>> semhash = SemHash.from_records(texts, model=FastEncoder(st_static.load_model("MODEL")))
        >>> kept = semhash.self_deduplicate(threshold=0.9).selected
    """

    def __init__(self, model: ModelLike) -> None:
        self.model = load_collection_model(model)
        self._embed = text_encoder(self.model)

    def encode(self, inputs: Sequence[str] | str, **kwargs: Any) -> np.ndarray:
        """Float32 unit vectors of ``inputs`` (a str gives one vector); keyword arguments are ignored."""
        if isinstance(inputs, str):
            return self._embed([inputs])[0]
        return self._embed(list(inputs))
