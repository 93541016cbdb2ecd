"""Similarity distillation (Wada et al., 2025, Eqs. 2-3): match the teacher's in-batch similarity distributions."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from sentence_transformers.sentence_transformer.losses.matryoshka import ForwardDecorator
from sentence_transformers.util import cos_sim
from torch import Tensor, nn

from st_static.losses.citation import WADA_2025_BIBTEX
from st_static.losses.registry import register_loss
from st_static.settings import RefinementSettings


def check_temperature(temperature: float) -> float:
    """Return ``temperature`` as a float, or raise a ``ValueError`` if it is not a positive finite number."""
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not 0 < temperature < math.inf:
        raise ValueError(f"temperature must be a positive finite number, got {temperature!r}.")
    return float(temperature)


def check_teacher_blocks(
    teacher_dims: Sequence[int] | None, teacher_weights: Sequence[float] | None
) -> tuple[tuple[int, ...], tuple[float, ...]] | None:
    """``teacher_dims`` and ``teacher_weights`` checked and with the weights scaled to sum to 1 (``None`` for one
    teacher), or a ``ValueError`` naming what is wrong."""
    if teacher_dims is None and teacher_weights is None:
        return None
    if teacher_dims is None or teacher_weights is None or len(teacher_dims) != len(teacher_weights):
        raise ValueError(
            f"Give teacher_dims and teacher_weights together, one width and one weight per teacher; got "
            f"{teacher_dims!r} and {teacher_weights!r}."
        )
    if not teacher_dims or any(isinstance(dim, bool) or not isinstance(dim, int) or dim < 1 for dim in teacher_dims):
        raise ValueError(f"teacher_dims must be positive integers, one per teacher, got {list(teacher_dims)!r}.")
    numbers = all(isinstance(weight, int | float) and not isinstance(weight, bool) for weight in teacher_weights)
    if not numbers or not all(0 <= weight < math.inf for weight in teacher_weights) or not sum(teacher_weights):
        raise ValueError(f"teacher_weights must be finite, non-negative and not all 0, got {list(teacher_weights)!r}.")
    total = float(sum(teacher_weights))
    return tuple(teacher_dims), tuple(float(weight) / total for weight in teacher_weights)


def teacher_probabilities(
    teacher_embeddings: Tensor,
    temperature: float,
    diagonal: Tensor,
    blocks: tuple[tuple[int, ...], tuple[float, ...]] | None = None,
) -> tuple[Tensor, Tensor]:
    """The teacher's in-batch neighbour distributions (each row's softmax over ``j != i``) and cosines.

    With ``blocks`` (widths and weights, see :func:`check_teacher_blocks`) the embeddings are several teachers'
    side by side, the last block taking any columns past the widths: the distribution is the weighted mean of
    each teacher's own, and the cosines are the weighted mean of theirs."""
    if blocks is None:
        cosines = cos_sim(teacher_embeddings, teacher_embeddings)
        return (cosines / temperature).masked_fill(diagonal, -math.inf).softmax(dim=1), cosines
    dims, weights = blocks
    if teacher_embeddings.shape[1] < sum(dims):
        raise ValueError(
            f"The teacher embeddings are {teacher_embeddings.shape[1]} wide, fewer than the teachers' widths "
            f"{list(dims)} add up to ({sum(dims)})."
        )
    starts = [sum(dims[:index]) for index in range(len(dims))]
    ends = [*starts[1:], teacher_embeddings.shape[1]]
    probabilities = torch.zeros_like(diagonal, dtype=teacher_embeddings.dtype)
    mixed_cosines = torch.zeros_like(probabilities)
    for start, end, weight in zip(starts, ends, weights, strict=True):
        if weight == 0:
            continue
        block = teacher_embeddings[:, start:end]
        cosines = cos_sim(block, block)
        probabilities += weight * (cosines / temperature).masked_fill(diagonal, -math.inf).softmax(dim=1)
        mixed_cosines += weight * cosines
    return probabilities, mixed_cosines


def similarity_distillation_loss(
    student_embeddings: Tensor,
    teacher_embeddings: Tensor,
    temperature: float = RefinementSettings.temperature,
    similarity_mse_weight: float = RefinementSettings.similarity_mse_weight,
    teacher_dims: Sequence[int] | None = None,
    teacher_weights: Sequence[float] | None = None,
) -> Tensor:
    """The similarity distillation loss of one batch (Wada et al., 2025, Eqs. 2-3).

    ``L = -1/K sum_i sum_{j != i} softmax_tau(T)_ij * log softmax_tau(S)_ij``, where ``S`` and ``T`` are the
    student's and teacher's cosine similarity matrices and each row's softmax runs over ``j != i``.

    Args:
        student_embeddings: ``(K, student_dim)`` student sentence embeddings (need not be normalised; zero
            vectors have similarity 0 to everything).
        teacher_embeddings: ``(K, teacher_dim)`` teacher sentence embeddings; no gradient flows into them.
        temperature: The softmax temperature ``tau``.
        similarity_mse_weight: Weight of a term ``mean_{i != j} (S_ij - T_ij)^2`` that also matches the absolute
            cosine similarities (the softmax only sees each row's differences); 0 leaves the paper's loss.
        teacher_dims: For several teachers: the widths of their embeddings, which ``teacher_embeddings`` holds
            side by side (the last block also takes any columns past them). The target is then
            ``sum_t w_t softmax_tau(T_t)``, the weighted mean of each teacher's distribution, so each keeps its
            own nearest neighbours.
        teacher_weights: Each teacher's share of that mean (scaled to sum to 1); with ``teacher_dims`` only.

    Returns:
        A scalar. For ``K < 2`` there is no pair to compare and the loss is 0 (still attached to the graph).
    """
    blocks = check_teacher_blocks(teacher_dims, teacher_weights)
    batch_size = student_embeddings.shape[0]
    if batch_size < 2:
        return student_embeddings.sum() * 0.0
    diagonal = torch.eye(batch_size, dtype=torch.bool, device=student_embeddings.device)
    with torch.no_grad():
        teacher_probs, teacher_similarities = teacher_probabilities(teacher_embeddings, temperature, diagonal, blocks)
    student_similarities = cos_sim(student_embeddings, student_embeddings)
    student_logits = (student_similarities / temperature).masked_fill(diagonal, -math.inf)
    # log_softmax gives -inf on the masked diagonal, where the teacher's probability is 0: zero those terms
    # instead of multiplying 0 by -inf.
    student_log_probs = student_logits.log_softmax(dim=1).masked_fill(diagonal, 0.0)
    loss = -(teacher_probs * student_log_probs).sum(dim=1).mean()
    if similarity_mse_weight:
        differences = (student_similarities - teacher_similarities).masked_fill(diagonal, 0.0)
        loss = loss + similarity_mse_weight * differences.square().sum() / (batch_size * (batch_size - 1))
    return loss


@register_loss("distillation", data="teacher_embeddings")
class SimilarityDistillationLoss(nn.Module):
    def __init__(
        self,
        model: SentenceTransformer,
        temperature: float = RefinementSettings.temperature,
        similarity_mse_weight: float = RefinementSettings.similarity_mse_weight,
        teacher_dims: Sequence[int] | None = None,
        teacher_weights: Sequence[float] | None = None,
    ) -> None:
        """
        Distils a teacher's *in-batch similarity structure* into a student: for every sentence in a batch, the
        student's softmax distribution over its similarities to the other sentences is trained towards the
        teacher's distribution (a cross entropy). This is the refinement step of static word embeddings in
        Wada et al. (2025):

        ``L = -1/K sum_i sum_{j != i} softmax_tau(T)_ij * log softmax_tau(S)_ij``

        with ``T`` and ``S`` the teacher's and student's ``K x K`` cosine similarity matrices and each row's
        softmax taken over ``j != i`` (the diagonal is masked). Only similarities are compared, so the student's
        embedding dimension may differ from the teacher's (e.g. a table reduced by PCA). The teacher is never
        run during training: its sentence embeddings are precomputed and passed as labels.

        Args:
            model: The student SentenceTransformer model, e.g. a static word embedding model.
            temperature: Softmax temperature ``tau`` applied to both similarity matrices. The paper uses 0.05.
            similarity_mse_weight: Weight of an extra term, the mean squared difference of the student's and the
                teacher's off-diagonal cosine similarities (absolute geometry, which the softmax ignores); 0 (the
                default) is the paper's loss.
            teacher_dims: Distil several teachers at once: the widths of their embeddings, given side by side in
                the labels (the last block also takes any columns past them, such as a zero column). The target
                distribution is the weighted mean of each teacher's own (``sum_t w_t softmax_tau(T_t)``), so every
                teacher keeps its nearest neighbours; mixing their cosines first would blur them into one ranking.
                ``None`` (the default): the labels are one teacher's.
            teacher_weights: Each teacher's share of that mean (scaled to sum to 1), with ``teacher_dims``.

        References:
            - Static Word Embeddings for Sentence Semantic Representation (Wada et al., EMNLP 2025):
              https://aclanthology.org/2025.emnlp-main.316/

        Requirements:
            1. A single text column.
            2. The teacher's sentence embeddings of those texts in a ``label`` column, shape
               ``(batch_size, teacher_dim)``.
            3. Batches of at least 3 texts: with 1 or 2 texts each softmax has at most one candidate and the
               loss is identically 0. The paper uses batches of 128.

        Inputs:
            +------------------+-----------------------------------------------------+
            | Inputs           | Labels                                              |
            +==================+=====================================================+
            | single sentences | teacher embeddings ``(batch_size, teacher_dim)``    |
            +------------------+-----------------------------------------------------+
            | single sentences | several teachers' embeddings side by side,          |
            |                  | ``(batch_size, sum(teacher_dims))``                 |
            +------------------+-----------------------------------------------------+

        Relations:
            - :class:`~sentence_transformers.sentence_transformer.losses.MSELoss` regresses the teacher's
              embeddings themselves, which needs equal dimensions; this loss only matches similarities.
            - :class:`~sentence_transformers.sentence_transformer.losses.DistillKLDivLoss` also matches softmaxed
              similarity distributions, but over teacher *scores* given per (query, candidate) column rather than
              over all in-batch pairs.
            - :class:`~st_static.losses.BilingualContrastiveLoss` is the paper's refinement for cross-lingual
              models, trained on translation pairs instead of a teacher.
            - :func:`st_static.training.refine_by_distillation` runs this loss with the paper's settings (Adam,
              sparse updates of the table, validation loss, early stopping).
            - Inside :class:`~sentence_transformers.sentence_transformer.losses.MatryoshkaLoss`, which truncates
              any label as wide as a student dimension, give the teacher embeddings a width that is not one of
              the Matryoshka dimensions (append a zero column: it leaves cosine similarities unchanged).
              Otherwise this loss raises an error rather than compare truncated teacher embeddings.

        Example:
            ::

                import numpy as np
                from datasets import Dataset
                from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
                from sentence_transformers.base.modules import Normalize

                from st_static import StaticWordAverage
                from st_static.losses import SimilarityDistillationLoss

                words = ["the", "a", "cat", "dog", "sat", "ran", "on", "in", "mat", "park", "sun", "rain"]
                vectors = np.random.default_rng(0).standard_normal((len(words), 32)).astype(np.float32)
                module = StaticWordAverage.from_word_vectors(words, vectors)
                student = SentenceTransformer(modules=[module, Normalize()])
                teacher = SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2")

                sentences = [
                    "the cat sat on the mat", "a dog ran in the park", "the sun is out",
                    "a cat in the rain", "the dog sat on a mat", "rain in the park",
                ]
                train_dataset = Dataset.from_dict({"sentence": sentences, "label": teacher.encode(sentences)})
                loss = SimilarityDistillationLoss(student)

                trainer = SentenceTransformerTrainer(model=student, train_dataset=train_dataset, loss=loss)
                trainer.train()
        """
        super().__init__()
        self.model = model
        self.temperature = check_temperature(temperature)
        if isinstance(similarity_mse_weight, bool) or not 0 <= similarity_mse_weight < math.inf:
            raise ValueError(f"similarity_mse_weight must be 0 or a positive number, got {similarity_mse_weight!r}.")
        self.similarity_mse_weight = float(similarity_mse_weight)
        self.teacher_blocks = check_teacher_blocks(teacher_dims, teacher_weights)

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor) -> Tensor:
        embeddings = embed_columns(self.model, sentence_features)
        return self.compute_loss_from_embeddings(embeddings, labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        """The loss from the student's embeddings (one column) and the teacher's embeddings (labels)."""
        if len(embeddings) != 1:
            raise ValueError(
                f"{type(self).__name__} expects exactly one text column (the sentences the teacher embedded), "
                f"got {len(embeddings)}."
            )
        student_embeddings = embeddings[0]
        teacher_embeddings = self._check_teacher_embeddings(labels, student_embeddings)
        dims, weights = self.teacher_blocks or (None, None)
        return similarity_distillation_loss(
            student_embeddings, teacher_embeddings, self.temperature, self.similarity_mse_weight, dims, weights
        )

    def _check_teacher_embeddings(self, labels: Tensor | None, student_embeddings: Tensor) -> Tensor:
        name = type(self).__name__
        if not isinstance(labels, Tensor):
            raise ValueError(
                f"{name} needs the teacher's sentence embeddings in a 'label' column, but the batch has no labels."
            )
        batch_size = student_embeddings.shape[0]
        if labels.ndim != 2 or labels.shape[0] != batch_size:
            raise ValueError(
                f"{name} expects teacher embeddings of shape (batch_size, teacher_dim) = ({batch_size}, ...), "
                f"got {tuple(labels.shape)}."
            )
        if not torch.is_floating_point(labels):
            raise ValueError(f"{name} expects float teacher embeddings, got {labels.dtype}.")
        if not torch.isfinite(labels).all():
            raise ValueError(f"{name}: the teacher embeddings contain NaN or infinite values.")
        forward = getattr(self.model, "forward", None)
        if isinstance(forward, ForwardDecorator) and labels.shape[1] == forward.dim:
            raise ValueError(
                f"{name} inside MatryoshkaLoss: the teacher embeddings are {labels.shape[1]} wide, as wide as the "
                "current Matryoshka dimension. MatryoshkaLoss truncates labels as wide as the student's embeddings "
                "to each Matryoshka dimension, which would give wrong teacher similarities, and truncated labels "
                "cannot be told apart from these. Append a zero column to the teacher embeddings (cosine "
                "similarities are unchanged), as st_static.training.refine_by_distillation does."
            )
        return labels.detach().to(student_embeddings.dtype)

    def get_config_dict(self) -> dict[str, Any]:
        config: dict[str, Any] = {"temperature": self.temperature, "similarity_mse_weight": self.similarity_mse_weight}
        if self.teacher_blocks is not None:
            config["teacher_dims"], config["teacher_weights"] = (list(part) for part in self.teacher_blocks)
        return config

    @property
    def citation(self) -> str:
        return WADA_2025_BIBTEX
