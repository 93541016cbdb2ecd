"""``st-static`` command line: one module per command, all registered on :data:`app`."""

from __future__ import annotations

from st_static.cli import build, card, compress, evaluate, extract, fallback, info, pieces, push  # noqa: F401  (register the commands)
from st_static.cli.app import app

__all__ = ["app"]
