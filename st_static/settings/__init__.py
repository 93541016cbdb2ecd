"""What a build does: one settings dataclass per stage, nested in :class:`BuildSettings`.

Every default is written once, in this package. The command line derives its options from these fields (the ``help`` in
each field's metadata is the option's help text), and each stage's cache key hashes ``asdict`` of that stage's own
settings, so a new field reaches both without further code. Values are checked when a settings object is made.

The package's modules: :mod:`~st_static.settings.base` (the field helper, the checks, :class:`SettingsError`),
:mod:`~st_static.settings.extraction` (step 1), :mod:`~st_static.settings.training` (PCA, refinement,
second pass, disentangler), :mod:`~st_static.settings.build` (:class:`BuildSettings`). Every public name is
importable from ``st_static.settings``.
"""

from __future__ import annotations

from st_static.settings.base import STORAGE_FORMATS, SettingsError, check_device, setting
from st_static.settings.build import BuildSettings, language_file, settings_fields
from st_static.settings.extraction import ExtractionSettings
from st_static.settings.training import (
    DISENTANGLE_CONSTRAINTS,
    DISENTANGLE_MAX_EPOCHS,
    DisentangleSettings,
    ReductionSettings,
    RefinementSettings,
    SecondPassSettings,
)

__all__ = [
    "DISENTANGLE_CONSTRAINTS",
    "DISENTANGLE_MAX_EPOCHS",
    "STORAGE_FORMATS",
    "BuildSettings",
    "DisentangleSettings",
    "ExtractionSettings",
    "ReductionSettings",
    "RefinementSettings",
    "SecondPassSettings",
    "SettingsError",
    "check_device",
    "language_file",
    "setting",
    "settings_fields",
]
