"""Refinement losses of static word embeddings (Wada et al., 2025) and the disentangler's losses (Nonomura et al.),
as sentence-transformers losses."""

from __future__ import annotations

from st_static.losses.bilingual_contrastive import BilingualContrastiveLoss, bilingual_contrastive_loss
from st_static.losses.language_bias import (
    ComponentInteractionLoss,
    LanguageBiasLoss,
    MeaningComponentLoss,
    component_interaction_loss,
    language_bias_loss,
    meaning_component_loss,
)
from st_static.losses.registry import LOSSES, RegisteredLoss, make_loss, register_loss, registered_loss
from st_static.losses.similarity_distillation import SimilarityDistillationLoss, similarity_distillation_loss

__all__ = [
    "LOSSES",
    "BilingualContrastiveLoss",
    "ComponentInteractionLoss",
    "LanguageBiasLoss",
    "MeaningComponentLoss",
    "RegisteredLoss",
    "SimilarityDistillationLoss",
    "bilingual_contrastive_loss",
    "component_interaction_loss",
    "language_bias_loss",
    "make_loss",
    "meaning_component_loss",
    "register_loss",
    "registered_loss",
    "similarity_distillation_loss",
]
