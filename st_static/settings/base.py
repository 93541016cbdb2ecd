"""What every settings class shares: the field helper (default, help text, command-line form), the checks of
values, :class:`SettingsError`, and the storage formats."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import MISSING, field
from typing import Any

from st_static.errors import StStaticError

STORAGE_FORMATS = ("float32", "float16", "int8-row", "int8-column", "binary")
"""The storage formats of :mod:`st_static.model.storage` (kept equal by ``tests/test_pieces.py``)."""


class SettingsError(StStaticError, ValueError):
    """A setting has a value it cannot take."""


def check_device(device: str | None) -> None:
    """Refuse a ``device`` that torch cannot parse (``None``: the best available, always accepted).

    Raises:
        SettingsError: Naming the device.
    """
    if device is None:
        return
    import torch

    try:
        torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise SettingsError(f"device {device!r} is not a torch device ({error}).") from None


def setting(default: Any = MISSING, help: str = "", *, factory: Any = MISSING, cli: str = "") -> Any:
    """A settings field: its default, its help text and (``cli``) how the command line writes it.

    ``cli``: ``""`` (the field's own type), ``"comma"`` (a comma-separated list), ``"repeat"`` (a repeatable
    option), ``"pairs"`` (repeatable ``KEY=VALUE``), ``"comma-pairs"`` (comma-separated ``KEY=VALUE``, values of the
    field's value type), ``"skip"`` (not an option).
    """
    metadata = {"help": help, "cli": cli}
    if factory is not MISSING:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def positive_int(settings: object, *names: str) -> None:
    """Refuse a field of ``names`` that is not a positive int (``bool`` is none)."""
    for name in names:
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SettingsError(f"{name} must be a positive integer, got {value!r}.")


MAX_SEED = 2**32 - 1
"""The largest seed: numpy's seeding (``np.random.seed``, which the trainer's ``set_seed`` calls) stops there."""


def is_seed(value: object) -> bool:
    """Whether ``value`` is a seed every library takes: an int (not a ``bool``) from 0 to :data:`MAX_SEED`."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SEED


def seed_values(settings: object, *names: str) -> None:
    """Refuse a field of ``names`` that is not a seed (:func:`is_seed`), naming the setting and its option."""
    for name in names:
        value = getattr(settings, name)
        if not is_seed(value):
            raise SettingsError(
                f"{name} (--{name.replace('_', '-')}) must be a seed, an integer from 0 to {MAX_SEED} (numpy's seeds "
                f"stop there), got {value!r}."
            )


def positive_number(settings: object, *names: str) -> None:
    """Refuse a field of ``names`` that is not a finite positive number."""
    for name in names:
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
            raise SettingsError(f"{name} must be a positive number, got {value!r}.")


def checked_language_counts(values: Any, name: str, noun: str, example: str) -> dict[str, int] | None:
    """``values`` checked as ``{language: positive int}`` (``None`` or ``{}``: ``None``), for the field ``name``
    whose values are each a ``noun`` (``"size"``).

    Raises:
        SettingsError: For a value that is not a mapping, an empty language or a count that is not a positive int.
    """
    if values is None or (isinstance(values, Mapping) and not values):
        return None
    if not isinstance(values, Mapping):
        raise SettingsError(f"{name} must map languages to {noun}s (e.g. {example}), got {values!r}.")
    checked: dict[str, int] = {}
    for language, count in values.items():
        if not isinstance(language, str) or not language.strip():
            raise SettingsError(f"{name}: {language!r} is not a language code.")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise SettingsError(f"{name}: {language}'s {noun} must be a positive integer, got {count!r}.")
        checked[language.strip()] = count
    return checked
