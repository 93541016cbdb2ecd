"""Deprecated: the orchestrator moved to :mod:`st_static.pipeline` (``st_static.build`` looks like build output to
``.gitignore`` templates). The old paths keep working for a release, with a ``DeprecationWarning``: this package and
its modules ``pipeline`` (now ``st_static.pipeline.run``), ``publish`` and ``distill_api`` are the new modules."""

from __future__ import annotations

import warnings

from st_static.pipeline import build, distill

warnings.warn(
    "st_static.build is deprecated: import st_static.pipeline (build, distill; the stages: st_static.pipeline.run).",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["build", "distill"]
