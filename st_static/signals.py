"""Stop signals as exceptions: SIGTERM raised in the main thread like Ctrl-C's ``KeyboardInterrupt``.

A run stopped by a scheduler's kill, ``timeout`` or ``docker stop`` then unwinds as it does on Ctrl-C: staged folders
and temporary files are removed, locks released. The command line installs the handler for the length of a command
(never on import), and so does a soup's seed trained in a child process.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's ``KeyboardInterrupt`` so that the same clean-up runs."""


_IMPORT_MACHINERY = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")
_RETRY_SECONDS = 0.05


def _raise_terminated(signal_number: int, frame: FrameType | None) -> None:
    """Raise :class:`Terminated`, except inside an import: a module stopped halfway (numpy's, torch's) breaks the
    clean-up that follows, so the signal is sent again a moment later until the import is done."""
    if _inside_import(frame):
        timer = threading.Timer(_RETRY_SECONDS, os.kill, (os.getpid(), signal_number))
        timer.daemon = True
        timer.start()
        return
    raise Terminated(signal_number)


def _inside_import(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_filename in _IMPORT_MACHINERY:
            return True
        frame = frame.f_back
    return False


@contextmanager
def sigterm_raises_terminated() -> Iterator[None]:
    """For the length of the block, SIGTERM raises :class:`Terminated` in the main thread (the command line, a soup's
    seed trained in a child process); outside the main thread signals stay as they are."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread
        previous = None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def stop_signal(error: KeyboardInterrupt) -> signal.Signals:
    """The signal that stopped a run: SIGTERM for :class:`Terminated`, else Ctrl-C's SIGINT."""
    return signal.SIGTERM if isinstance(error, Terminated) else signal.SIGINT
