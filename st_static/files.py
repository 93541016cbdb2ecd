"""Writing files and folders safely: the one place st-static publishes what it writes.

* :func:`write_file_atomically` (and its text/JSON forms): a temporary file in the same folder, then one rename,
  so a reader sees the old file or the new one, never half of one.
* :func:`staged_folder`: a folder built under a hidden temporary name next to its destination, then swapped into
  place (one atomic exchange on Linux, so concurrent writers of one destination each publish a whole folder and
  the last one wins; two renames elsewhere). Before any work starts the destination is checked
  (:func:`check_destination`): a file, the current or home folder, a folder holding an input of the run, or a
  non-empty folder of something else is refused instead of replaced.
* :func:`check_file_destination`: the same check for a file output (``--json``, ``--output``): a folder, a device
  or pipe, a symbolic link, a file the run reads or an unwritable place is refused before the run starts.
* :func:`folder_lock`: one writer per working folder (a build's stage cache); a second process is told who
  holds it.
* :func:`recover_interrupted_swaps`: what a process killed in the middle of a swap left behind is restored or
  removed by the next run.
* :func:`carry_over`: a folder rewritten in place keeps what the writer does not write (linked into the staging
  folder before the swap).

Everything published gets the modes the user's umask gives (a staging folder from ``mkdtemp`` is 0700 and
safetensors writes 0600; both are widened to what ``mkdir``/``open`` would have made).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from safetensors import SafetensorError

from st_static.errors import FolderInUseError, OutputWriteError, UnsafeDestinationError

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]
_UMASK_LOCK = threading.Lock()
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})
"""Errors that mean "this place cannot be written" (reported as :class:`OutputWriteError`)."""


# ---------------------------------------------------------------------------------------------------- modes
def current_umask() -> int:
    """The process's file-mode creation mask."""
    status = Path("/proc/self/status")
    with contextlib.suppress(OSError):
        for line in status.read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def apply_umask_modes(path: PathLike) -> None:
    """Give ``path`` (and, for a folder, everything in it) the modes a fresh ``mkdir``/``open`` would get."""
    mask = current_umask()
    root = Path(path)
    entries = [root, *root.rglob("*")] if root.is_dir() and not root.is_symlink() else [root]
    for entry in entries:
        if entry.is_symlink():
            continue
        os.chmod(entry, (0o777 if entry.is_dir() else 0o666) & ~mask)


# ---------------------------------------------------------------------------------------------------- files
def write_file_atomically(path: PathLike, write: Callable[[Path], object]) -> Path:
    """Call ``write(temporary_path)``, then rename the temporary file onto ``path``.

    Args:
        path: The file to write; its folder must exist.
        write: Writes the complete file at the path it is given.

    Returns:
        ``path`` as a ``Path``.
    """
    destination = Path(path)
    temporary = destination.with_name(f".{destination.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        write(temporary)
        apply_umask_modes(temporary)
        os.replace(temporary, destination)
    except Exception as error:
        code = write_errno(error)
        if code is None:
            raise
        raise OutputWriteError(
            code,
            f"Cannot write {destination}: {os.strerror(code)}. The previous file, if any, is unchanged; free space "
            "or choose a writable folder.",
            str(destination),
        ) from error
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
    return destination


def write_errno(error: BaseException) -> int | None:
    """The errno of a write failure that means "this place cannot be written" (:data:`WRITE_ERRNOS`), or ``None``.

    Python's own writers raise ``OSError``; the Rust writers do not: safetensors raises ``SafetensorError`` and
    tokenizers a bare ``Exception``, both with the system's message ("No space left on device (os error 28)").
    """
    if isinstance(error, OSError):
        return error.errno if error.errno in WRITE_ERRNOS else None
    if not isinstance(error, SafetensorError) and type(error) is not Exception:
        return None
    message = str(error)
    for code in sorted(WRITE_ERRNOS):
        if f"os error {code})" in message or os.strerror(code) in message:
            return code
    return None


def write_text_atomically(path: PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return write_file_atomically(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


def write_json_atomically(path: PathLike, document: Any, **dumps_arguments: Any) -> Path:
    """Write ``document`` as indented JSON to ``path`` atomically (NaN refused: JSON has no such value)."""
    arguments = {"indent": 2, "ensure_ascii": False, "allow_nan": False, **dumps_arguments}
    return write_text_atomically(path, json.dumps(document, **arguments) + "\n")


# ---------------------------------------------------------------------------------------------------- destinations
SYSTEM_FOLDERS = (
    *("/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt", "/opt"),
    *("/proc", "/root", "/run", "/sbin", "/snap", "/srv", "/sys", "/tmp", "/usr", "/var", "/usr/local", "/usr/bin"),
    *("/usr/lib", "/usr/share", "/var/cache", "/var/lib", "/var/log", "/var/tmp", "/Applications", "/Library"),
    *("/System", "/Users", "/Volumes", "/private", "/private/tmp", "/private/var", "/cores"),
)
"""Folders of the operating system: never an output, even with ``force``."""
HOME_FOLDERS = (".cache", ".config", ".local", ".local/share", ".ssh", ".gnupg", ".cache/huggingface")
"""Folders of the home folder that programs keep their own files in: never an output, even with ``force``."""


def _protected_folders() -> list[Path]:
    """Folders that are never an output: the current folder, home, the root, and every folder above them."""
    protected: set[Path] = set()
    for anchor in (Path.cwd(), Path.home()):
        anchor = anchor.resolve()
        protected.update([anchor, *anchor.parents])
    return sorted(protected)


def _system_folders() -> set[Path]:
    """Folders of the system and of programs (:data:`SYSTEM_FOLDERS`, :data:`HOME_FOLDERS`, the temporary
    folder, Python's prefixes, the Hugging Face cache), resolved."""
    home = Path.home()
    folders = [*map(Path, SYSTEM_FOLDERS), *(home / name for name in HOME_FOLDERS), Path(tempfile.gettempdir())]
    folders += [Path(prefix) for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}]
    folders += [
        Path(os.environ[name]) for name in ("HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME") if os.environ.get(name)
    ]
    return {folder.expanduser().resolve() for folder in folders}


def _kind_of(path: Path) -> str | None:
    """What a non-regular, non-folder entry at ``path`` is ("a device", "a named pipe", ...), or ``None``."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    kinds = {
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISFIFO: "a named pipe (FIFO)",
        stat.S_ISSOCK: "a socket",
    }
    return next((name for test, name in kinds.items() if test(mode)), None)


def _same_entry(first: Path, second: Path) -> bool:
    """Whether two paths name the same file (same path, or the same inode through another name)."""
    if first == second:
        return True
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


def _check_inputs(given: Path, target: Path, inputs: Iterable[PathLike | None], what: str, folder: bool) -> None:
    """Refuse ``target`` when it is one of ``inputs``, lies inside an input folder, or (a folder) holds an input."""
    for item in inputs:
        if item is None or not str(item):
            continue
        source = Path(item).expanduser().resolve()
        if _same_entry(source, target) or target.is_relative_to(source):
            where = "is" if _same_entry(source, target) else f"is inside {item}, which is"
            raise UnsafeDestinationError(
                f"{given} {where} an input of this run; writing the {what} there would replace what the run reads. "
                "Choose another path."
            )
        if folder and source.is_relative_to(target):
            raise UnsafeDestinationError(
                f"{given} contains {item}, an input of this run; writing the {what} there would replace it. "
                "Choose another folder."
            )


def _check_parent(given: Path, target: Path, what: str) -> None:
    """Refuse ``target`` when its folder (or the nearest existing folder above it) cannot receive new entries."""
    parent = target.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UnsafeDestinationError(f"Cannot write the {what} {given}: {parent} is not a folder.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UnsafeDestinationError(
            f"Cannot write the {what} {given}: the folder {parent} is not writable. Choose a writable folder."
        )


def check_destination(
    destination: PathLike | None,
    *,
    replaceable: Callable[[Path], bool] | None = None,
    inputs: Iterable[PathLike | None] = (),
    force: bool = False,
    what: str = "output folder",
) -> Path:
    """Check that ``destination`` may receive a new folder, and return it resolved.

    Allowed: a path that does not exist, an empty folder, a folder ``replaceable`` accepts (an earlier st-static
    output), or, with ``force``, any other folder. Never allowed, even with ``force``: an empty path, a file (or a
    device, pipe or socket), a symbolic link, the current folder, the home folder or a folder above either, a
    folder of the system or of other programs (``/etc``, ``/usr``, ``~/.cache``, Python's prefix, ...), a folder
    that contains one of ``inputs`` (the corpus, the teacher, the models being read, ...) or lies inside an
    input folder, and a path whose folder cannot be written (a missing parent is created later).

    Raises:
        UnsafeDestinationError: Saying why and what to do instead.
    """
    if destination is None or not str(destination).strip():
        raise UnsafeDestinationError(f"The {what} is empty: give the path of a new folder.")
    given = Path(destination).expanduser()
    if given.is_symlink():
        raise UnsafeDestinationError(f"{given} is a symbolic link; give the folder it points to, or a new path.")
    target = given.resolve()
    if target in _protected_folders():
        raise UnsafeDestinationError(
            f"{given} is {target}, which holds the current folder or the home folder; give a new folder for the "
            f"{what} (e.g. {given / 'my-model'})."
        )
    if target in _system_folders():
        raise UnsafeDestinationError(
            f"{given} is {target}, a folder of the system or of other programs, never an output (not even with "
            f"--force); give a new folder for the {what} (e.g. {given / 'my-model'})."
        )
    if target.exists() and not target.is_dir():
        kind = _kind_of(target) or "a file"
        raise UnsafeDestinationError(f"{given} is {kind}, not a folder; give a new folder for the {what}.")
    _check_inputs(given, target, inputs, what, folder=True)
    _check_parent(given, target, what)
    if target.is_dir() and any(target.iterdir()):
        if replaceable is not None and replaceable(target):
            return target
        if not force:
            raise UnsafeDestinationError(
                f"{given} is a folder with other files in it (not an st-static output); choose a new or empty "
                "folder, or pass --force (force=True) to replace it and delete what it holds."
            )
        logger.warning("Replacing %s and everything in it (force).", target)
    return target


def check_file_destination(
    destination: PathLike | None, *, inputs: Iterable[PathLike | None] = (), what: str = "output file"
) -> Path:
    """Check that ``destination`` may receive a file (written atomically, replacing a regular file), and return it.

    Call it before any work, so that a bad path fails at once instead of after the work. Never allowed: an empty
    path, a symbolic link, a folder, a device, pipe or socket, one of ``inputs`` (the files the run reads; an input
    folder protects everything inside it), and a path whose folder cannot be written. A missing parent folder is
    allowed (the writer creates it) when the nearest existing folder above it is writable.

    Raises:
        UnsafeDestinationError: Saying why and what to do instead.
    """
    if destination is None or not str(destination).strip():
        raise UnsafeDestinationError(f"The {what} is empty: give the path of a file to write.")
    given = Path(destination).expanduser()
    if given.is_symlink():
        raise UnsafeDestinationError(f"{given} is a symbolic link; give the file it points to, or a new path.")
    target = given.resolve()
    if target.is_dir():
        raise UnsafeDestinationError(f"{given} is a folder; give the path of the {what} to write (a file name).")
    kind = _kind_of(target)
    if kind is not None:
        raise UnsafeDestinationError(f"{given} is {kind}, not a regular file; give the path of a regular file.")
    _check_inputs(given, target, inputs, what, folder=False)
    _check_parent(given, target, what)
    return target


# ---------------------------------------------------------------------------------------------------- locks
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


# ---------------------------------------------------------------------------------------------------- folder swaps
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


def file_sha256(path: PathLike) -> str:
    """The sha256 of a file's bytes, as hex."""
    with Path(path).open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def content_digest(path: PathLike) -> str:
    """``size:sha256`` of a file's bytes: a cache key that changes when the content does, wherever the file is."""
    return f"{Path(path).stat().st_size}:{file_sha256(path)}"
