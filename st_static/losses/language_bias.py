"""The disentangler's losses (Nonomura et al.): a sentence embedding split into a meaning part and a language part.

A model ending with :class:`~st_static.model.meaning_map.MeaningMap` gives each text its meaning part
``m(e) = W e`` (``sentence_embedding``) and its full embedding ``e`` (``full_embedding``); the language part is
``l(e) = e - m(e)``. For a batch of translation pairs ``(x_i, y_i)`` and ``j`` another pair of the batch:

- intra-component (:class:`MeaningComponentLoss`): ``L_mean = 2 (1 - cos(m(x_i), m(y_i))) + max(0, cos(m(x_i),
  m(x_j))) + max(0, cos(m(y_i), m(y_j)))`` and ``L_lang = 2 - cos(l(x_i), l(x_j)) - cos(l(y_i), l(y_j))``, averaged
  over ``i`` and every ``j != i``;
- inter-component (:class:`ComponentInteractionLoss`): ``L_cross = 4 - cos(e_xi, m(y_i) + l(x_i)) - cos(e_yi,
  m(x_i) + l(y_i)) - cos(e_xi, m(x_i) + l(x_j)) - cos(e_yi, m(y_i) + l(y_j))`` with ``j = i - 1`` (the batch rolled
  by one) and ``L_sep = max(0, cos(m(x_i), l(x_i))) + max(0, cos(m(y_i), l(y_i)))``, averaged over ``i``;
- both (:class:`LanguageBiasLoss`): their weighted sum.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from torch import Tensor, nn

from st_static.losses.citation import NONOMURA_2026_BIBTEX
from st_static.model.meaning_map import FULL_EMBEDDING, MeaningMap
from st_static.settings import DISENTANGLE_CONSTRAINTS

Constraints = Literal["intra", "inter", "both"]
CONSTRAINTS: tuple[str, ...] = DISENTANGLE_CONSTRAINTS


def _unit(vectors: Tensor) -> Tensor:
    return F.normalize(vectors, p=2, dim=-1)


def _cosine(first: Tensor, second: Tensor) -> Tensor:
    """Row-wise cosine similarity (0 where a row is zero)."""
    return (_unit(first) * _unit(second)).sum(dim=-1)


def _mean_over_other_rows(similarities: Tensor) -> Tensor:
    """The mean of a ``(K, K)`` matrix's off-diagonal entries: over ``i`` and every ``j != i``."""
    size = similarities.shape[0]
    return (similarities.sum() - similarities.diagonal().sum()) / (size * (size - 1))


def _mean_dot_over_other_rows(rows: Tensor) -> Tensor:
    """The mean of ``rows[i] . rows[j]`` over ``i`` and every ``j != i``, without the ``(K, K)`` matrix:
    ``(|sum of rows|^2 - sum of |row|^2) / (K (K - 1))``."""
    size = rows.shape[0]
    total = rows.sum(dim=0)
    return (total @ total - (rows * rows).sum()) / (size * (size - 1))


def meaning_component_loss(
    meaning_x: Tensor, meaning_y: Tensor, full_x: Tensor, full_y: Tensor, language_weight: float = 1.0
) -> Tensor:
    """The intra-component constraints of one batch: ``L_mean + language_weight * L_lang`` (module docstring).

    Args:
        meaning_x: ``(K, dim)`` meaning parts of the first sentences.
        meaning_y: ``(K, dim)`` meaning parts of their translations, in the same order.
        full_x: ``(K, dim)`` full embeddings of the first sentences.
        full_y: ``(K, dim)`` full embeddings of the translations.
        language_weight: The weight of ``L_lang``.

    Returns:
        A scalar. A batch of one pair has no ``j``: its loss is the first term of ``L_mean`` alone.
    """
    loss = 2.0 * (1.0 - _cosine(meaning_x, meaning_y)).mean()
    if meaning_x.shape[0] < 2:
        return loss + 0.0 * (full_x.sum() + full_y.sum())
    units_x, units_y = _unit(meaning_x), _unit(meaning_y)
    apart = _mean_over_other_rows(F.relu(units_x @ units_x.T)) + _mean_over_other_rows(F.relu(units_y @ units_y.T))
    language_x, language_y = _unit(full_x - meaning_x), _unit(full_y - meaning_y)
    alike = _mean_dot_over_other_rows(language_x) + _mean_dot_over_other_rows(language_y)
    return loss + apart + language_weight * (2.0 - alike)


def component_interaction_loss(meaning_x: Tensor, meaning_y: Tensor, full_x: Tensor, full_y: Tensor) -> Tensor:
    """The inter-component constraints of one batch: ``L_cross + L_sep`` (module docstring), ``j = i - 1``.

    Args: as :func:`meaning_component_loss` (without the weight).

    Returns:
        A scalar (a batch of one pair takes ``j = i``).
    """
    language_x, language_y = full_x - meaning_x, full_y - meaning_y
    other_x, other_y = language_x.roll(1, dims=0), language_y.roll(1, dims=0)
    cross = (
        4.0
        - _cosine(full_x, meaning_y + language_x)
        - _cosine(full_y, meaning_x + language_y)
        - _cosine(full_x, meaning_x + other_x)
        - _cosine(full_y, meaning_y + other_y)
    )
    separation = F.relu(_cosine(meaning_x, language_x)) + F.relu(_cosine(meaning_y, language_y))
    return cross.mean() + separation.mean()


def language_bias_loss(
    meaning_x: Tensor,
    meaning_y: Tensor,
    full_x: Tensor,
    full_y: Tensor,
    *,
    intra_weight: float = 1.0,
    inter_weight: float = 1.0,
    language_weight: float = 1.0,
) -> Tensor:
    """``intra_weight * (L_mean + language_weight * L_lang) + inter_weight * (L_cross + L_sep)``; a zero weight skips
    its part."""
    total = (meaning_x.sum() + meaning_y.sum()) * 0.0
    if intra_weight:
        total = total + intra_weight * meaning_component_loss(meaning_x, meaning_y, full_x, full_y, language_weight)
    if inter_weight:
        total = total + inter_weight * component_interaction_loss(meaning_x, meaning_y, full_x, full_y)
    return total


def constraint_weights(constraints: str) -> tuple[float, float]:
    """``(intra_weight, inter_weight)`` of ``intra``, ``inter`` or ``both``.

    Raises:
        ValueError: For another name.
    """
    if constraints not in CONSTRAINTS:
        raise ValueError(f"constraints must be one of {', '.join(CONSTRAINTS)}, got {constraints!r}.")
    return float(constraints != "inter"), float(constraints != "intra")


def _check_weight(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value < float("inf"):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}.")
    return float(value)


class _ComponentLoss(nn.Module):
    """What the three losses share: the model check and the two parts of each column."""

    def __init__(self, model: SentenceTransformer) -> None:
        super().__init__()
        modules = list(model) if isinstance(model, SentenceTransformer) else []
        if not modules or not isinstance(modules[-1], MeaningMap):
            last = type(modules[-1]).__name__ if modules else type(model).__name__
            raise ValueError(
                f"{type(self).__name__} needs a model that ends with st_static's MeaningMap (it reads each text's "
                f"meaning part and full embedding), got one ending with {last}: append "
                "MeaningMap(model.get_embedding_dimension()) to the model."
            )
        self.model = model

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        meanings, fulls = [], []
        for features in sentence_features:
            output = self.model(features)
            meanings.append(output["sentence_embedding"])
            fulls.append(output[FULL_EMBEDDING])
        return self.compute_loss_from_embeddings(meanings, labels, full_embeddings=fulls)

    def compute_loss_from_embeddings(
        self, embeddings: list[Tensor], labels: Tensor | None = None, *, full_embeddings: list[Tensor]
    ) -> Tensor:
        """The loss from each column's meaning parts (``embeddings``) and full embeddings; ``labels`` are ignored."""
        if len(embeddings) != 2 or len(full_embeddings) != 2:
            raise ValueError(
                f"{type(self).__name__} expects exactly two text columns (a sentence and its translation), "
                f"got {len(embeddings)}."
            )
        return self._loss(embeddings[0], embeddings[1], full_embeddings[0], full_embeddings[1])

    def _loss(self, meaning_x: Tensor, meaning_y: Tensor, full_x: Tensor, full_y: Tensor) -> Tensor:
        raise NotImplementedError

    @property
    def citation(self) -> str:
        return NONOMURA_2026_BIBTEX


class MeaningComponentLoss(_ComponentLoss):
    def __init__(self, model: SentenceTransformer, language_weight: float = 1.0) -> None:
        """
        The intra-component constraints of the disentangler: the meaning parts of a sentence and its translation
        are pulled together and those of two sentences of one language pushed apart (to orthogonal, no further),
        while the language parts of two sentences of one language are pulled together:

        ``L = L_mean + language_weight * L_lang`` (the module docstring of :mod:`st_static.losses.language_bias`).

        Args:
            model: A SentenceTransformer ending with :class:`~st_static.model.meaning_map.MeaningMap` (the model
                before it frozen, e.g. a static table with ``Normalize``).
            language_weight: The weight of ``L_lang`` (1 in the paper); lower keeps more of the language part in
                the meaning part, which can keep monolingual similarities.

        References:
            - Mitigating Language Bias in Multilingual Sentence Embeddings for Cross-Lingual Similarity Estimation
              (Nonomura, Fukushima, Kondo, Kajiwara), Eqs. 2-4.

        Requirements:
            1. (sentence, translation) pairs; each batch holds pairs of one language pair (``j`` is another
               sentence of the same language).
            2. Batches of at least 2 pairs (one pair has no ``j``); the paper uses 512.

        Inputs:
            +--------------------------------------+--------+
            | Inputs                               | Labels |
            +======================================+========+
            | (sentence_lang1, sentence_lang2)     | none   |
            +--------------------------------------+--------+

        Recommendations:
            - Use ``BatchSamplers.NO_DUPLICATES`` so that no text is its own ``j``.

        Relations:
            - :class:`ComponentInteractionLoss` holds the inter-component constraints; :class:`LanguageBiasLoss`
              sums both (the paper's best for encoder models).
            - :class:`~st_static.losses.BilingualContrastiveLoss` trains the table itself on the same pairs.
            - :func:`st_static.training.train_meaning_map` trains the map with these losses and the paper's
              settings; :func:`st_static.training.fold_meaning_map` folds it into a static table.

        Example:
            ::

                import numpy as np
                from datasets import Dataset
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from sentence_transformers.base.modules import Normalize

                from st_static import StaticWordAverage
                from st_static.losses import MeaningComponentLoss
                from st_static.model.meaning_map import MeaningMap

                words = ["the", "cat", "dog", "sleeps", "runs", "die", "der", "katze", "hund", "schläft", "läuft"]
                vectors = np.random.default_rng(0).standard_normal((len(words), 32)).astype(np.float32)
                table = StaticWordAverage.from_word_vectors(words, vectors)
                table.requires_grad_(False)  # the table stays frozen: only the map trains
                model = SentenceTransformer(modules=[table, Normalize(), MeaningMap(32)])

                train_dataset = Dataset.from_dict({
                    "english": ["the cat sleeps", "the dog runs", "the cat runs", "the dog sleeps"],
                    "german": ["die katze schläft", "der hund läuft", "die katze läuft", "der hund schläft"],
                })
                loss = MeaningComponentLoss(model)

                trainer = SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss)
                trainer.train()
        """
        super().__init__(model)
        self.language_weight = _check_weight("language_weight", language_weight)

    def _loss(self, meaning_x: Tensor, meaning_y: Tensor, full_x: Tensor, full_y: Tensor) -> Tensor:
        return meaning_component_loss(meaning_x, meaning_y, full_x, full_y, self.language_weight)

    def get_config_dict(self) -> dict[str, Any]:
        return {"language_weight": self.language_weight}


class ComponentInteractionLoss(_ComponentLoss):
    def __init__(self, model: SentenceTransformer) -> None:
        """
        The inter-component constraints of the disentangler: a sentence's embedding is rebuilt from its
        translation's meaning part and its own language part, and from its own meaning part and another sentence's
        language part (``L_cross``), while a text's meaning and language parts are kept from pointing the same way
        (``L_sep``):

        ``L = L_cross + L_sep`` (the module docstring of :mod:`st_static.losses.language_bias`; ``j`` is the pair
        before ``i`` in the batch).

        Args:
            model: A SentenceTransformer ending with :class:`~st_static.model.meaning_map.MeaningMap`.

        References:
            - Mitigating Language Bias in Multilingual Sentence Embeddings for Cross-Lingual Similarity Estimation
              (Nonomura, Fukushima, Kondo, Kajiwara), Eqs. 5-7.

        Requirements:
            1. (sentence, translation) pairs; each batch holds pairs of one language pair.
            2. Batches of at least 2 pairs (one pair is its own ``j``).

        Inputs:
            +--------------------------------------+--------+
            | Inputs                               | Labels |
            +======================================+========+
            | (sentence_lang1, sentence_lang2)     | none   |
            +--------------------------------------+--------+

        Relations:
            - :class:`MeaningComponentLoss` holds the intra-component constraints; :class:`LanguageBiasLoss` sums
              both. The paper finds these constraints alone best for LLM-based embedders.

        Example:
            ::

                import numpy as np
                from datasets import Dataset
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from sentence_transformers.base.modules import Normalize

                from st_static import StaticWordAverage
                from st_static.losses import ComponentInteractionLoss
                from st_static.model.meaning_map import MeaningMap

                words = ["the", "cat", "dog", "sleeps", "runs", "die", "der", "katze", "hund", "schläft", "läuft"]
                vectors = np.random.default_rng(0).standard_normal((len(words), 32)).astype(np.float32)
                table = StaticWordAverage.from_word_vectors(words, vectors)
                table.requires_grad_(False)
                model = SentenceTransformer(modules=[table, Normalize(), MeaningMap(32)])

                train_dataset = Dataset.from_dict({
                    "english": ["the cat sleeps", "the dog runs", "the cat runs", "the dog sleeps"],
                    "german": ["die katze schläft", "der hund läuft", "die katze läuft", "der hund schläft"],
                })
                loss = ComponentInteractionLoss(model)

                trainer = SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss)
                trainer.train()
        """
        super().__init__(model)

    def _loss(self, meaning_x: Tensor, meaning_y: Tensor, full_x: Tensor, full_y: Tensor) -> Tensor:
        return component_interaction_loss(meaning_x, meaning_y, full_x, full_y)

    def get_config_dict(self) -> dict[str, Any]:
        return {}


class LanguageBiasLoss(_ComponentLoss):
    def __init__(
        self,
        model: SentenceTransformer,
        constraints: Constraints = "both",
        language_weight: float = 1.0,
        intra_weight: float = 1.0,
        inter_weight: float = 1.0,
    ) -> None:
        """
        The disentangler's constraints, intra-component, inter-component or both, as one loss:

        ``L = intra_weight * (L_mean + language_weight * L_lang) + inter_weight * (L_cross + L_sep)``

        with the weight of a family left out by ``constraints`` set to 0.

        Args:
            model: A SentenceTransformer ending with :class:`~st_static.model.meaning_map.MeaningMap`.
            constraints: ``intra`` (:class:`MeaningComponentLoss`), ``inter`` (:class:`ComponentInteractionLoss`)
                or ``both`` (their sum, the paper's best for encoder models).
            language_weight: The weight of ``L_lang`` within the intra-component constraints.
            intra_weight: The weight of the intra-component constraints (with ``both`` or ``intra``).
            inter_weight: The weight of the inter-component constraints (with ``both`` or ``inter``).

        References:
            - Mitigating Language Bias in Multilingual Sentence Embeddings for Cross-Lingual Similarity Estimation
              (Nonomura, Fukushima, Kondo, Kajiwara): "Both" combines the two families as SEED does.

        Requirements:
            1. (sentence, translation) pairs; each batch holds pairs of one language pair.
            2. Batches of at least 2 pairs; the paper uses 512.

        Inputs:
            +--------------------------------------+--------+
            | Inputs                               | Labels |
            +======================================+========+
            | (sentence_lang1, sentence_lang2)     | none   |
            +--------------------------------------+--------+

        Relations:
            - Equals :class:`MeaningComponentLoss` with ``constraints="intra"`` and
              :class:`ComponentInteractionLoss` with ``constraints="inter"`` (weights 1).
            - :func:`st_static.training.train_meaning_map` trains with it.

        Example:
            ::

                import numpy as np
                from datasets import Dataset
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from sentence_transformers.base.modules import Normalize

                from st_static import StaticWordAverage
                from st_static.losses import LanguageBiasLoss
                from st_static.model.meaning_map import MeaningMap

                words = ["the", "cat", "dog", "sleeps", "runs", "die", "der", "katze", "hund", "schläft", "läuft"]
                vectors = np.random.default_rng(0).standard_normal((len(words), 32)).astype(np.float32)
                table = StaticWordAverage.from_word_vectors(words, vectors)
                table.requires_grad_(False)
                model = SentenceTransformer(modules=[table, Normalize(), MeaningMap(32)])

                train_dataset = Dataset.from_dict({
                    "english": ["the cat sleeps", "the dog runs", "the cat runs", "the dog sleeps"],
                    "german": ["die katze schläft", "der hund läuft", "die katze läuft", "der hund schläft"],
                })
                loss = LanguageBiasLoss(model, constraints="both", language_weight=0.5)

                trainer = SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss)
                trainer.train()
        """
        super().__init__(model)
        chosen_intra, chosen_inter = constraint_weights(constraints)
        self.constraints = constraints
        self.language_weight = _check_weight("language_weight", language_weight)
        self.intra_weight = _check_weight("intra_weight", intra_weight) * chosen_intra
        self.inter_weight = _check_weight("inter_weight", inter_weight) * chosen_inter

    def _loss(self, meaning_x: Tensor, meaning_y: Tensor, full_x: Tensor, full_y: Tensor) -> Tensor:
        return language_bias_loss(
            meaning_x,
            meaning_y,
            full_x,
            full_y,
            intra_weight=self.intra_weight,
            inter_weight=self.inter_weight,
            language_weight=self.language_weight,
        )

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "constraints": self.constraints,
            "language_weight": self.language_weight,
            "intra_weight": self.intra_weight,
            "inter_weight": self.inter_weight,
        }
