"""A frozen encoder as a look-up: the texts it encoded once and their vectors, as a sentence-transformers input module.

The disentangler trains only a map after a frozen model (:mod:`st_static.training.disentangle`). Its training pairs are
encoded once, by the model's own inference path (a static table's pieces and fallback rows included, which a table in
training mode does not read), and the trainer then reads the stored vectors instead of running the model every step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from sentence_transformers.base.modules import InputModule


class PrecomputedEmbeddings(InputModule):
    """Texts -> the vectors a frozen model gave them (``sentence_embedding``); a text it was not given is refused.

    Args:
        texts: The encoded texts, each once.
        embeddings: ``(len(texts), dim)``: their vectors, in order.
    """

    def __init__(self, texts: Sequence[str], embeddings: np.ndarray | torch.Tensor) -> None:
        super().__init__()
        table = torch.as_tensor(embeddings, dtype=torch.float32)
        if table.ndim != 2 or table.shape[0] != len(texts):
            raise ValueError(f"Expected ({len(texts)}, dim) embeddings, one per text, got {tuple(table.shape)}.")
        self.index = {text: row for row, text in enumerate(texts)}
        if len(self.index) != len(texts):
            raise ValueError("Each text must be given once.")
        self.register_buffer("embeddings", table, persistent=False)
        self.tokenizer = None

    def preprocess(self, inputs: Sequence[str], prompt: str | None = None, **kwargs: Any) -> dict[str, torch.Tensor]:
        """The rows of ``inputs`` (``prompt`` is ignored: the texts were encoded with the frozen model's own)."""
        try:
            rows = [self.index[text] for text in inputs]
        except (KeyError, TypeError) as error:
            raise ValueError(f"The text {error.args[0]!r:.80} was not encoded beforehand.") from None
        return {"input_ids": torch.tensor(rows, dtype=torch.long)}

    def forward(self, features: dict[str, torch.Tensor], **kwargs: Any) -> dict[str, torch.Tensor]:
        rows = features["input_ids"].to(self.embeddings.device)
        features["sentence_embedding"] = self.embeddings[rows]
        return features

    def get_embedding_dimension(self) -> int:
        return int(self.embeddings.shape[1])

    def save(self, output_path: str, *args: Any, safe_serialization: bool = True, **kwargs: Any) -> None:
        raise NotImplementedError("PrecomputedEmbeddings stands in for a frozen model in training; save that model.")
