"""The whole job: the stages in order (``run``), ``build`` (a published folder), ``distill`` (in memory)."""

from __future__ import annotations

from st_static.pipeline.distill_api import distill
from st_static.pipeline.publish import build

__all__ = ["build", "distill"]
