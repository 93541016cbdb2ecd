"""``st-static`` command line: one module per command, all registered on :data:`app`."""

from __future__ import annotations

from st_static.cli import (  # noqa: F401  (register the commands)
    build,
    card,
    compress,
    corpus,
    disentangle,
    embed,
    evaluate,
    extend,
    extract,
    fallback,
    info,
    mine,
    pairs,
    pieces,
    push,
)
from st_static.cli.app import app

__all__ = ["app"]
