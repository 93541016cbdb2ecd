"""Refinement losses of static word embeddings (Wada et al., 2025), as sentence-transformers losses."""

from __future__ import annotations

from st_static.losses.bilingual_contrastive import BilingualContrastiveLoss, bilingual_contrastive_loss
from st_static.losses.registry import LOSSES, RegisteredLoss, make_loss, register_loss, registered_loss
from st_static.losses.similarity_distillation import SimilarityDistillationLoss, similarity_distillation_loss

__all__ = [
    "LOSSES",
    "BilingualContrastiveLoss",
    "RegisteredLoss",
    "SimilarityDistillationLoss",
    "bilingual_contrastive_loss",
    "make_loss",
    "register_loss",
    "registered_loss",
    "similarity_distillation_loss",
]
