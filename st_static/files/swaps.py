"""Folders built under a temporary name and swapped into place; repair of interrupted swaps; carrying a folder's
other entries over into its replacement."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import logging
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from st_static.errors import OutputWriteError
from st_static.files.atomic import PathLike, apply_umask_modes, write_errno
from st_static.files.destinations import check_destination

logger = logging.getLogger(__name__)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover_interrupted_swaps(destination: PathLike) -> None:
    """Repair what a process killed while publishing ``destination`` left next to it.

    A ``.NAME.old-PID`` folder (the previous version, moved aside) is put back when nothing is at ``destination``
    and removed otherwise; ``.NAME.tmp-PID-*`` staging folders and files of dead processes are removed.
    """
    target = Path(destination).resolve()
    if not target.parent.is_dir():
        return
    pattern = re.compile(rf"^\.{re.escape(target.name)}\.(old|tmp)-(\d+)(-.*)?$")
    for entry in sorted(target.parent.iterdir()):
        match = pattern.match(entry.name)
        if match is None or _process_alive(int(match.group(2))):
            continue
        if match.group(1) == "old" and not target.exists():
            os.rename(entry, target)
            logger.warning("Restored %s from %s, left by an interrupted save.", target, entry.name)
        elif entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths in one atomic step (Linux ``renameat2(RENAME_EXCHANGE)``); ``False`` where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    result = renameat2(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), rename_exchange)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(code, os.strerror(code), str(second))


def publish_folder(staging: PathLike, destination: PathLike) -> None:
    """Move the finished folder ``staging`` to ``destination``, replacing what is there.

    With an existing destination, the two folders are exchanged atomically where the OS can (the old content
    then sits in ``staging`` and is removed); elsewhere the old folder is renamed aside first, and
    :func:`recover_interrupted_swaps` restores it if the process dies between the two renames.
    """
    source, target = Path(staging), Path(destination)
    apply_umask_modes(source)
    if not target.exists():
        os.rename(source, target)
        return
    if _exchange(source, target):
        shutil.rmtree(source, ignore_errors=True)
        return
    backup = target.with_name(f".{target.name}.old-{os.getpid()}")
    shutil.rmtree(backup, ignore_errors=True)
    os.rename(target, backup)
    os.rename(source, target)
    shutil.rmtree(backup, ignore_errors=True)


@contextlib.contextmanager
def staged_folder(
    destination: PathLike,
    *,
    replaceable: Callable[[Path], bool] | None = None,
    inputs: Iterable[PathLike | None] = (),
    force: bool = False,
    what: str = "output folder",
) -> Iterator[Path]:
    """Build a folder under a temporary name and publish it at ``destination`` when the block succeeds.

    The destination is checked (:func:`check_destination`) before the block runs and again just before the swap;
    leftovers of an interrupted earlier swap are repaired first (:func:`recover_interrupted_swaps`). When the block
    raises, nothing changes at ``destination`` and the staging folder is removed.

    Yields:
        The empty staging folder to fill (next to ``destination``, on the same file system).
    """
    inputs = list(inputs)
    checks = {"replaceable": replaceable, "inputs": inputs, "force": force, "what": what}
    target = check_destination(destination, **checks)
    staging = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        recover_interrupted_swaps(target)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-{os.getpid()}-", dir=target.parent))
        yield staging
        check_destination(target, **checks)  # again: the block may have run for hours
        publish_folder(staging, target)
    except Exception as error:
        code = write_errno(error)
        if code is None:
            raise
        reason = error.strerror if isinstance(error, OSError) and not isinstance(error, OutputWriteError) else None
        filename = error.filename if isinstance(error, OSError) else None
        filename = Path(filename).name if isinstance(filename, str) and staging is not None else filename
        raise OutputWriteError(
            code,
            f"Cannot write the {what} {target}: {reason or os.strerror(code)}"
            f"{f' ({filename})' if filename else ''}. Nothing was changed at {target}; free space or choose a "
            "writable folder.",
        ) from error
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


def _link_or_copy(source: str, destination: str) -> None:
    """Hard-link ``source`` at ``destination`` (same bytes, no copy); copy a regular file where links fail."""
    try:
        os.link(source, destination, follow_symlinks=False)
    except OSError:
        if not stat.S_ISREG(os.lstat(source).st_mode):
            logger.warning("Not carried over (neither a file nor a folder): %s", source)
            return
        shutil.copy2(source, destination, follow_symlinks=False)


def carry_over(
    source: PathLike, staging: PathLike, *, leave: Iterable[str] = (), only: Iterable[str] | None = None
) -> list[str]:
    """Put the entries of the folder ``source`` into the staging folder ``staging``, except those named in ``leave``.

    For a folder rewritten in place: what the writer does not write (an evaluation, a training record, the user's
    notes) goes into the staged folder, so the swap keeps it. Files are hard-linked where the file system allows
    (byte-identical, nothing copied) and copied otherwise; symbolic links stay links. Call it after the writer has
    written, so that nothing writes through a link: an entry the writer wrote is kept (with a warning) instead.

    Args:
        source: The folder being replaced.
        staging: The staged folder that replaces it.
        leave: Names not to carry over (the writer's own entries, which it wrote anew or dropped on purpose).
        only: Carry over only these names (those present).

    Returns:
        The names of the entries carried over.
    """
    source, staging = Path(source), Path(staging)
    skipped, wanted = set(leave), set(only) if only is not None else None
    carried: list[str] = []
    for entry in sorted(source.iterdir()):
        if entry.name in skipped or (wanted is not None and entry.name not in wanted):
            continue
        target = staging / entry.name
        if target.exists() or target.is_symlink():
            logger.warning("Kept the new %s; the earlier one in %s was not carried over.", entry.name, source)
            continue
        if entry.is_symlink():
            os.symlink(os.readlink(entry), target)
        elif entry.is_dir():
            shutil.copytree(entry, target, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(str(entry), str(target))
        carried.append(entry.name)
    return carried
