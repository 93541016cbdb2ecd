"""The project's errors: every failure st-static reports on purpose derives from :class:`StStaticError`.

The command line turns a ``StStaticError`` into one ``error:`` line and exit code 1; anything else is a bug and
keeps its traceback. Each subclass also derives from the built-in error it stands for (``ValueError``,
``RuntimeError``, ``OSError``), so code written against those keeps working.
"""

from __future__ import annotations


class StStaticError(Exception):
    """Base of st-static's own errors: a message meant for the user, saying what is wrong and what to do."""


class UnsafeDestinationError(StStaticError, ValueError):
    """An output path that must not be written or replaced (a file, a folder of other files, an input's folder)."""


class FolderInUseError(StStaticError, RuntimeError):
    """Another process holds the lock of a folder this run needs to write."""


class OutputWriteError(StStaticError, OSError):
    """An output could not be written (disk full, read-only or not writable); nothing was changed."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


class MissingExtraError(StStaticError, ImportError):
    """An optional dependency a requested feature needs is not installed (the message names the extra)."""


class ModelFolderError(StStaticError, ValueError):
    """A saved model folder is missing a file, is corrupt, or its parts disagree."""
