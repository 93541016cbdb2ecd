"""The ``st-static`` command-line application object; commands register themselves with :func:`command`.

Every command turns the project's errors (:class:`~st_static.errors.StStaticError`) into one ``error:`` line and exit
code 1; ``st-static --debug COMMAND`` shows the traceback instead. Anything else is a bug and keeps its traceback.
Heavy libraries (torch, sentence-transformers) are imported inside the commands, so ``--help`` answers at once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from st_static.errors import StStaticError

app = typer.Typer(
    name="st-static",
    help="Build, evaluate and publish static word embedding models distilled from Sentence Transformers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
Command = TypeVar("Command", bound=Callable[..., Any])
_options = {"debug": False}


def fail(message: str, exit_code: int = 1) -> typer.Exit:
    """Print ``message`` to stderr and return the ``typer.Exit`` to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=exit_code)


def command(*names: str, **options: Any) -> Callable[[Command], Command]:
    """Register a command on :data:`app` whose project errors become one ``error:`` line (exit 1)."""

    def register(function: Command) -> Command:
        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except StStaticError as error:
                if _options["debug"]:
                    raise
                raise fail(str(error).strip()) from error

        if hasattr(function, "__signature__"):
            run.__signature__ = function.__signature__  # type: ignore[attr-defined]
        app.command(*names, **options)(run)
        return function

    return register


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"st-static {version('st-static')}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks instead of one error line.")] = False,
) -> None:
    """Build, evaluate and publish static word embedding models distilled from Sentence Transformers."""
    _options["debug"] = debug
