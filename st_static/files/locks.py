"""One writer per working folder: a lock file inside the folder, with its holder's pid and command next to it."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from st_static.errors import FolderInUseError, OutputWriteError
from st_static.files.atomic import WRITE_ERRNOS, PathLike, write_json_atomically

LOCK_FILE_NAME = ".st-static.lock"


def _describe_owner(owner_file: Path) -> str:
    try:
        owner = json.loads(owner_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "another process"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(owner.get("started", 0)))
    return f"process {owner.get('pid')} (`{owner.get('command', '?')}`, since {started})"


@contextlib.contextmanager
def folder_lock(folder: PathLike) -> Iterator[None]:
    """Hold the exclusive lock of the working folder ``folder`` (created if missing) for the block.

    The lock lives in a hidden file inside the folder, with the holder's pid and command next to it, so nothing
    is left beside the folder. Re-entrant within a process; a second process fails at once instead of waiting.

    Raises:
        FolderInUseError: If another process holds the lock; the message names it.
    """
    folder = Path(folder).resolve()
    lock_path = folder / LOCK_FILE_NAME
    owner_file = folder / (LOCK_FILE_NAME + ".owner")
    lock = FileLock(str(lock_path), timeout=0, is_singleton=True, thread_local=False)
    outermost = not lock.is_locked
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except Timeout as error:
        raise FolderInUseError(
            f"{folder} is in use by {_describe_owner(owner_file)}; wait for it to finish, or write to another folder."
        ) from error
    except OSError as error:
        if error.errno not in WRITE_ERRNOS:
            raise
        raise OutputWriteError(
            error.errno,
            f"Cannot write the working folder {folder}: {error.strerror}. Nothing was changed; free space or "
            "choose a writable folder (--work-dir).",
        ) from error
    try:
        if outermost:
            owner = {"pid": os.getpid(), "command": " ".join(sys.argv), "started": time.time()}
            write_json_atomically(owner_file, owner)
        yield
    finally:
        if outermost:
            owner_file.unlink(missing_ok=True)
        lock.release()
