"""Refinement losses of static word embeddings (Wada et al., 2025), as sentence-transformers losses."""

from __future__ import annotations

from st_static.losses.bilingual_contrastive import BilingualContrastiveLoss, bilingual_contrastive_loss
from st_static.losses.similarity_distillation import SimilarityDistillationLoss, similarity_distillation_loss

__all__ = [
    "BilingualContrastiveLoss",
    "SimilarityDistillationLoss",
    "bilingual_contrastive_loss",
    "similarity_distillation_loss",
]
