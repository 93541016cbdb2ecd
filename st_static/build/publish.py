"""Deprecated: this is :mod:`st_static.pipeline.publish` under its old name (the same module object)."""

from __future__ import annotations

import sys

import st_static.pipeline.publish

sys.modules[__name__] = st_static.pipeline.publish
