"""The whole job: the stages in order (``pipeline``), ``build`` (a published folder), ``distill`` (in memory)."""

from __future__ import annotations

from st_static.build.distill_api import distill
from st_static.build.publish import build

__all__ = ["build", "distill"]
