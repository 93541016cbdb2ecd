"""``st-static`` command line: one module per command, all registered on :data:`app`."""

from __future__ import annotations

from st_static.cli import (
    evaluate,  # noqa: F401  (registers the command)
    info,  # noqa: F401  (registers the command)
)
from st_static.cli.app import app

# isort: split
from st_static.cli import compress  # noqa: F401  (registers the command)

__all__ = ["app"]
from st_static.cli import card, push  # noqa: F401  (register the commands)
