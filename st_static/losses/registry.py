"""The losses a build can refine with, by name. A loss registers itself with the data it trains on::

    @register_loss("my-loss", data="teacher_embeddings")
    class MyLoss(nn.Module):
        def __init__(self, model: SentenceTransformer, temperature: float = 0.05) -> None: ...

The build then accepts ``--loss my-loss``; the loss is constructed with the refinement settings its ``__init__``
names (``temperature`` above), so a new hyper-parameter is one new field of ``RefinementSettings``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

from st_static.settings import SettingsError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from torch import nn

    from st_static.settings import RefinementSettings

DataKind = Literal["teacher_embeddings", "translation_pairs"]
"""``teacher_embeddings``: sentences with the teacher's embeddings as labels (columns ``sentence``, ``label``);
``translation_pairs``: translation pairs of one language pair per batch (columns ``sentence1``, ``sentence2``)."""
LossClass = TypeVar("LossClass", bound=type)


@dataclass(frozen=True)
class RegisteredLoss:
    """A loss the build can use: its name, class and the data it trains on."""

    name: str
    loss_class: type
    data: DataKind


LOSSES: dict[str, RegisteredLoss] = {}
"""Registered losses by name."""


def register_loss(name: str, data: DataKind) -> Callable[[LossClass], LossClass]:
    """Class decorator: make a loss available to the build as ``name``."""

    def register(loss_class: LossClass) -> LossClass:
        LOSSES[name] = RegisteredLoss(name, loss_class, data)
        return loss_class

    return register


def registered_loss(name: str) -> RegisteredLoss:
    """The registry entry of ``name``.

    Raises:
        SettingsError: If no loss of that name is registered.
    """
    if name not in LOSSES:
        raise SettingsError(f"Unknown loss {name!r}; registered losses: {', '.join(sorted(LOSSES))}.")
    return LOSSES[name]


def make_loss(name: str, model: SentenceTransformer, settings: RefinementSettings) -> nn.Module:
    """Construct the loss ``name`` for ``model`` with the settings its ``__init__`` names, wrapped in
    ``MatryoshkaLoss`` when ``settings.matryoshka_dims`` is set."""
    from sentence_transformers.sentence_transformer.losses import MatryoshkaLoss

    entry = registered_loss(name)
    parameters = inspect.signature(entry.loss_class).parameters
    arguments = {key: getattr(settings, key) for key in parameters if key != "model" and hasattr(settings, key)}
    loss = entry.loss_class(model, **arguments)
    return MatryoshkaLoss(model, loss, list(settings.matryoshka_dims)) if settings.matryoshka_dims else loss
