"""Bilingual contrastive refinement (Wada et al., 2025, Eqs. 4-5): symmetric InfoNCE over translation pairs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from sentence_transformers.util import cos_sim
from torch import Tensor, nn

from st_static.losses.citation import WADA_2025_BIBTEX
from st_static.losses.registry import register_loss
from st_static.losses.similarity_distillation import check_temperature
from st_static.settings import RefinementSettings


def bilingual_contrastive_loss(
    embeddings1: Tensor, embeddings2: Tensor, temperature: float = RefinementSettings.temperature
) -> Tensor:
    """The bilingual contrastive loss of one batch of translation pairs (Wada et al., 2025, Eqs. 4-5).

    ``L = -1/K sum_i [log softmax_tau(U)_ii + log softmax_tau(U^T)_ii]`` with ``U_ij`` the cosine similarity of
    the ``i``-th language-1 sentence and the ``j``-th language-2 sentence; rows and columns both count.

    Args:
        embeddings1: ``(K, dim)`` embeddings of the language-1 sentences.
        embeddings2: ``(K, dim)`` embeddings of their translations, in the same order.
        temperature: The softmax temperature ``tau``.

    Returns:
        A scalar; 0 for ``K <= 1`` (a single pair has no negatives), still attached to the graph.
    """
    batch_size = embeddings1.shape[0]
    if batch_size < 2:
        return (embeddings1.sum() + embeddings2.sum()) * 0.0
    logits = cos_sim(embeddings1, embeddings2) / temperature
    targets = torch.arange(batch_size, device=logits.device)
    return F.cross_entropy(logits, targets) + F.cross_entropy(logits.T, targets)


@register_loss("contrastive", data="translation_pairs")
class BilingualContrastiveLoss(nn.Module):
    def __init__(self, model: SentenceTransformer, temperature: float = RefinementSettings.temperature) -> None:
        """
        Pulls each sentence towards its translation and away from the other translations in the batch, in both
        directions (language 1 -> language 2 and language 2 -> language 1). This is the refinement step of
        cross-lingual static word embeddings in Wada et al. (2025):

        ``L = -1/K sum_i [log softmax_tau(U)_ii + log softmax_tau(U^T)_ii]``

        with ``U`` the ``K x K`` cosine similarities between the language-1 and the language-2 sentences of a
        batch of ``K`` translation pairs. The two directions are *summed*, as in the paper.

        Args:
            model: The SentenceTransformer model, e.g. a cross-lingual static word embedding model.
            temperature: Softmax temperature ``tau``. The paper uses 0.05 (a scale of 20).

        References:
            - Static Word Embeddings for Sentence Semantic Representation (Wada et al., EMNLP 2025):
              https://aclanthology.org/2025.emnlp-main.316/

        Requirements:
            1. (sentence, translation) pairs; the other translations in the batch are the negatives.
            2. Batches of at least 2 pairs (one pair has no negatives and gives a loss of 0). The paper uses 128.

        Inputs:
            +--------------------------------------+--------+
            | Inputs                               | Labels |
            +======================================+========+
            | (sentence_lang1, sentence_lang2)     | none   |
            +--------------------------------------+--------+

        Recommendations:
            - Use ``BatchSamplers.NO_DUPLICATES`` (:class:`docs <sentence_transformers.base.sampler.BatchSamplers>`)
              so that a sentence repeated in a batch is not its own negative.

        Relations:
            - Equals twice :class:`~sentence_transformers.sentence_transformer.losses.MultipleNegativesRankingLoss`
              with ``scale=1 / temperature``, ``directions=("query_to_doc", "doc_to_query")`` and
              ``partition_mode="per_direction"``, which averages the two directions instead of summing them.
            - :class:`~st_static.losses.SimilarityDistillationLoss` is the paper's refinement for monolingual models.
            - :func:`st_static.training.refine_by_translation` runs this loss with the paper's settings, summed
              over language pairs for more than two languages.

        Example:
            ::

                import numpy as np
                from datasets import Dataset
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from sentence_transformers.base.modules import Normalize

                from st_static import StaticWordAverage
                from st_static.losses import BilingualContrastiveLoss

                words = ["the", "cat", "dog", "sleeps", "runs", "die", "der", "katze", "hund", "schläft", "läuft"]
                vectors = np.random.default_rng(0).standard_normal((len(words), 32)).astype(np.float32)
                model = SentenceTransformer(modules=[StaticWordAverage.from_word_vectors(words, vectors), Normalize()])

                train_dataset = Dataset.from_dict({
                    "english": ["the cat sleeps", "the dog runs", "the cat runs", "the dog sleeps"],
                    "german": ["die katze schläft", "der hund läuft", "die katze läuft", "der hund schläft"],
                })
                loss = BilingualContrastiveLoss(model)

                trainer = SentenceTransformerTrainer(model=model, train_dataset=train_dataset, loss=loss)
                trainer.train()
        """
        super().__init__()
        self.model = model
        self.temperature = check_temperature(temperature)

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> Tensor:
        embeddings = embed_columns(self.model, sentence_features)
        return self.compute_loss_from_embeddings(embeddings, labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        """The loss from the embeddings of the two columns; ``labels`` are ignored."""
        if len(embeddings) != 2:
            raise ValueError(
                f"{type(self).__name__} expects exactly two text columns (a sentence and its translation), "
                f"got {len(embeddings)}."
            )
        return bilingual_contrastive_loss(embeddings[0], embeddings[1], self.temperature)

    def get_config_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature}

    @property
    def citation(self) -> str:
        return WADA_2025_BIBTEX
