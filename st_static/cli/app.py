"""The ``st-static`` command-line application object; commands register themselves with :func:`command`.

Every command turns the project's errors (:class:`~st_static.errors.StStaticError`) into one ``error:`` line and exit
code 1; ``st-static --debug COMMAND`` shows the traceback instead. Anything else is a bug and keeps its traceback.
Heavy libraries (torch, sentence-transformers) are imported inside the commands, so ``--help`` answers at once.

A command stopped by Ctrl-C or SIGTERM (a scheduler's kill, ``timeout``, ``docker stop``) unwinds like an error, so
staged folders and temporary files are removed and locks released, then prints one line saying so and exits with
128 + the signal number (130, 143). The SIGTERM handler is installed when the command line runs, never on import;
a SIGTERM that arrives while a module is being imported stops the command once the import is done.
"""

from __future__ import annotations

import functools
import signal
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from st_static.errors import StStaticError
from st_static.signals import sigterm_raises_terminated, stop_signal


class CommandLine(typer.Typer):
    """The ``st-static`` application: a ``typer.Typer`` that, when run as a program, turns SIGTERM into
    :class:`Terminated` for the length of the command."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with sigterm_raises_terminated():
            return super().__call__(*args, **kwargs)


app = CommandLine(
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


def _report_stop(error: KeyboardInterrupt, resume: str | None) -> int:
    """Print the one line of a command stopped by a signal; return its exit code (128 + the signal number)."""
    number = stop_signal(error)
    name = "SIGTERM" if number == signal.SIGTERM else "Ctrl-C (SIGINT)"
    hint = resume or "nothing half-written was left (outputs are published whole or not at all)"
    end_of_progress_line = "\n" if sys.stderr.isatty() else ""
    typer.echo(f"{end_of_progress_line}error: stopped by {name}; {hint}.", err=True)
    return 128 + int(number)


def command(
    *names: str, resume: str | None = None, group: typer.Typer | None = None, **options: Any
) -> Callable[[Command], Command]:
    """Register a command on :data:`app` whose project errors become one ``error:`` line (exit 1).

    Args:
        *names: The command's name (default: the function's).
        resume: What to do after a stop by Ctrl-C or SIGTERM (e.g. how a rerun resumes), said in the stop's line.
        group: The command group to register it on (``st-static GROUP NAME``; default: :data:`app` itself).
        **options: Passed to ``typer.Typer.command``.
    """

    def register(function: Command) -> Command:
        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except StStaticError as error:
                if _options["debug"]:
                    raise
                raise fail(str(error).strip()) from error
            except KeyboardInterrupt as error:  # Ctrl-C, or SIGTERM (Terminated) when run as a program
                raise typer.Exit(code=_report_stop(error, resume)) from error

        if hasattr(function, "__signature__"):
            run.__signature__ = function.__signature__  # type: ignore[attr-defined]
        (group or app).command(*names, **options)(run)
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
