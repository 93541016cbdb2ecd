"""Deprecated: this is :mod:`st_static.pipeline.distill_api` under its old name (the same module object)."""

from __future__ import annotations

import sys

import st_static.pipeline.distill_api

sys.modules[__name__] = st_static.pipeline.distill_api
