"""The losses a build can refine with, by name. A loss registers itself with the data it trains on::

    @register_loss("my-loss", data="teacher_embeddings")
    class MyLoss(nn.Module):
        def __init__(self, model: SentenceTransformer, temperature: float = 0.05) -> None: ...

The build then accepts ``--loss my-loss``; the loss is constructed with the refinement settings its ``__init__``
names (``temperature`` above), so a new hyper-parameter is one new field of ``RefinementSettings``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

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


def make_loss(
    name: str,
    model: SentenceTransformer,
    settings: RefinementSettings,
    arguments: Mapping[str, Any] | None = None,
) -> nn.Module:
    """Construct the loss ``name`` for ``model`` with the settings its ``__init__`` names and ``arguments`` (what
    the data decides, such as several teachers' widths), wrapped in ``MatryoshkaLoss`` when
    ``settings.matryoshka_dims`` is set.

    Raises:
        SettingsError: If the loss is not registered or takes no parameter of one of ``arguments``' names.
    """
    from sentence_transformers.sentence_transformer.losses import MatryoshkaLoss

    entry = registered_loss(name)
    parameters = inspect.signature(entry.loss_class).parameters
    unknown = sorted(set(arguments or {}) - set(parameters))
    if unknown:
        raise SettingsError(f"The {name} loss takes no {', '.join(unknown)}.")
    values = {key: getattr(settings, key) for key in parameters if key != "model" and hasattr(settings, key)}
    loss = entry.loss_class(model, **values, **(arguments or {}))
    return MatryoshkaLoss(model, loss, list(settings.matryoshka_dims)) if settings.matryoshka_dims else loss
