"""The meaning map of the disentangler (Nonomura et al., 2026): a square linear layer after a sentence embedding.

``MeaningMap`` reads a sentence embedding ``e`` and writes its meaning part ``m(e) = W e (+ b)`` as the sentence
embedding, keeping ``e`` as ``full_embedding``; the language part is ``l(e) = e - m(e)``. The losses of
:mod:`st_static.losses.language_bias` train it with the model before it frozen, and
:func:`st_static.training.fold_meaning_map` folds a trained one into a static table.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import torch
from sentence_transformers.base.modules import Module
from torch import nn

FULL_EMBEDDING = "full_embedding"
"""The feature that keeps the embedding ``e`` the map read (the meaning part replaces ``sentence_embedding``)."""


class MeaningMap(Module):
    """The meaning part of a sentence embedding: ``m(e) = W e (+ b)``, ``W`` initialised to the identity.

    The input ``e`` stays in the features as ``full_embedding``, so a loss reads both parts (``l(e) = e - m(e)``).

    No bias by default. A static table's sentence vector is the mean of its rows, so a bias-free map folds exactly
    into the table (every row ``r`` becomes ``W r``, and the mean of the new rows is ``W`` times the old mean) on
    every row: words, pieces, the fallback rows and the empty-text row. A bias ``b`` cannot be folded that way: adding
    ``b`` to every row works for rows of a word's size, but the fallback and empty-text rows are scaled to 1e-3 and
    1e-7 of a word row (:mod:`st_static.extraction.fallback`), so ``b`` would swamp the texts made only of fallback
    characters. Without a bias the scale of ``e`` does not matter either: the map is trained on the table model's
    normalised output, ``W (e / |e|)`` has the direction of ``W e``, and the folded table ends with ``Normalize``.

    Args:
        dim: The embedding's dimension (the map is ``dim x dim``).
        bias: Whether the map adds a trained bias (``False``: foldable into a static table).
    """

    config_keys: ClassVar[list[str]] = ["dim", "bias"]

    def __init__(self, dim: int, bias: bool = False) -> None:
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}.")
        self.dim = dim
        self.bias = bool(bias)
        self.linear = nn.Linear(dim, dim, bias=self.bias)
        with torch.no_grad():
            self.linear.weight.copy_(torch.eye(dim))
            if self.linear.bias is not None:
                self.linear.bias.zero_()

    def forward(self, features: dict[str, torch.Tensor], **kwargs: Any) -> dict[str, torch.Tensor]:
        """Write ``m(e)`` as ``sentence_embedding`` and keep ``e`` as ``full_embedding``."""
        embedding = features["sentence_embedding"]
        features[FULL_EMBEDDING] = embedding
        features["sentence_embedding"] = self.linear(embedding.to(self.linear.weight.dtype))
        return features

    @property
    def weight(self) -> torch.Tensor:
        """``W``, ``(dim, dim)``: the meaning part is ``W e``."""
        return self.linear.weight

    def get_embedding_dimension(self) -> int:
        return self.dim

    def save(self, output_path: str, *args: Any, safe_serialization: bool = True, **kwargs: Any) -> None:
        self.save_config(output_path)
        self.save_torch_weights(output_path, safe_serialization=safe_serialization)

    @classmethod
    def load(
        cls,
        model_name_or_path: str,
        subfolder: str = "",
        token: bool | str | None = None,
        cache_folder: str | None = None,
        revision: str | None = None,
        local_files_only: bool = False,
        **kwargs: Any,
    ) -> Self:
        hub_kwargs = {
            "subfolder": subfolder,
            "token": token,
            "cache_folder": cache_folder,
            "revision": revision,
            "local_files_only": local_files_only,
        }
        config = cls.load_config(model_name_or_path=model_name_or_path, **hub_kwargs)
        module = cls(**{key: config[key] for key in cls.config_keys if key in config})
        return cls.load_torch_weights(model_name_or_path=model_name_or_path, model=module, **hub_kwargs)

    def __repr__(self) -> str:
        return f"MeaningMap(dim={self.dim}, bias={self.bias})"
