"""One writer per working folder: a lock file inside the folder, with its holder's pid and command next to it."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from st_static.errors import FolderInUseError, OutputWriteError, UnsafeDestinationError
from st_static.files.atomic import WRITE_ERRNOS, PathLike, write_json_atomically
from st_static.files.destinations import check_destination

LOCK_FILE_NAME = ".st-static.lock"
OWNER_FILE_NAME = LOCK_FILE_NAME + ".owner"


def is_work_folder(folder: PathLike) -> bool:
    """Whether ``folder`` is a working folder st-static locked before (it holds the lock file)."""
    return (Path(folder) / LOCK_FILE_NAME).is_file()


def check_work_folder(folder: PathLike, *, inputs: Iterable[PathLike | None] = ()) -> Path:
    """Check that ``folder`` may be a working folder (a stage cache), and return it resolved.

    Allowed: a new path, an empty folder, or an earlier working folder (:func:`is_work_folder`). Refused, as an
    output folder is (:func:`~st_static.files.destinations.check_destination`): a symbolic link, a file, the
    current or home folder or a folder above them, a system folder, a folder holding or inside an input of the
    run; and any other non-empty folder (a model folder, a user's folder): stages would land among its files.

    Raises:
        UnsafeDestinationError: Saying why and what to do instead.
    """
    target = check_destination(folder, replaceable=lambda _: True, inputs=inputs, what="work folder")
    if target.is_dir() and any(target.iterdir()) and not is_work_folder(target):
        raise UnsafeDestinationError(
            f"{Path(folder).expanduser()} is a folder with other files in it, not an st-static work folder (it has no "
            f"{LOCK_FILE_NAME}): the build's stages would land among them. Give a new or empty folder, or the work "
            "folder of an earlier build."
        )
    return target


def _describe_owner(owner_file: Path) -> str:
    try:
        owner = json.loads(owner_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "another process"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(owner.get("started", 0)))
    return f"process {owner.get('pid')} (`{owner.get('command', '?')}`, since {started})"


def _holds_only_the_lock(folder: Path) -> bool:
    try:
        return [entry.name for entry in folder.iterdir()] == [LOCK_FILE_NAME]
    except OSError:
        return False


@contextlib.contextmanager
def folder_lock(folder: PathLike, *, remove_if_unused: bool = False) -> Iterator[None]:
    """Hold the exclusive lock of the working folder ``folder`` (created if missing) for the block.

    The lock lives in a hidden file inside the folder, with the holder's pid and command next to it, so nothing
    is left beside the folder. Re-entrant within a process; a second process fails at once instead of waiting.

    Args:
        folder: The working folder.
        remove_if_unused: Remove the folder again when this call created it and the block left nothing in it but
            the lock (a run that failed its checks leaves no empty work folder behind).

    Raises:
        FolderInUseError: If another process holds the lock; the message names it.
    """
    folder = Path(folder).resolve()
    lock_path = folder / LOCK_FILE_NAME
    owner_file = folder / OWNER_FILE_NAME
    lock = FileLock(str(lock_path), timeout=0, is_singleton=True, thread_local=False)
    outermost = not lock.is_locked
    created = not folder.exists()
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
    unused = False
    try:
        if outermost:
            owner = {"pid": os.getpid(), "command": " ".join(sys.argv), "started": time.time()}
            write_json_atomically(owner_file, owner)
        yield
    finally:
        if outermost:
            owner_file.unlink(missing_ok=True)
            unused = created and remove_if_unused and _holds_only_the_lock(folder)
            if unused:  # unlinked while held: a process that opens the name later locks a new file
                with contextlib.suppress(OSError):
                    lock_path.unlink()
        lock.release()
        if unused:
            with contextlib.suppress(OSError):
                folder.rmdir()  # only if still empty
