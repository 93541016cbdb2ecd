"""``python -m st_static.cli``: the ``st-static`` command."""

from __future__ import annotations

from st_static.cli import app

app()
