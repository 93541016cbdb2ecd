"""The ``st-static`` command-line application object; commands register themselves on it."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="st-static",
    help="Build, evaluate and publish static word embedding models distilled from Sentence Transformers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def fail(message: str, exit_code: int = 1) -> typer.Exit:
    """Print ``message`` to stderr and return the ``typer.Exit`` to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=exit_code)


@app.callback()
def main() -> None:
    """Build, evaluate and publish static word embedding models distilled from Sentence Transformers."""
