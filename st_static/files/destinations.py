"""Safe destinations: where a folder or a file output may be written, checked before any work starts."""

from __future__ import annotations

import logging
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from st_static.errors import UnsafeDestinationError
from st_static.files.atomic import PathLike

logger = logging.getLogger(__name__)


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


TEMPORARY_NAME_BYTES = 40
"""How much longer than an output's name the temporary names written next to it get (``.NAME.tmp-PID-ID``, a build's
``NAME.work`` and its staging name), with room to spare."""


def _check_name_length(given: Path, target: Path, what: str) -> None:
    """Refuse a name that is legal but too long for the temporary names written next to it."""
    parent = target.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    try:
        limit = os.pathconf(parent, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        limit = 255
    length = len(os.fsencode(target.name))
    if length + TEMPORARY_NAME_BYTES > limit:
        raise UnsafeDestinationError(
            f"Cannot write the {what} {given}: its name is {length} bytes long, and st-static writes it through "
            f"temporary names up to {TEMPORARY_NAME_BYTES} bytes longer, while names in {parent} are at most "
            f"{limit} bytes. Choose a name of at most {limit - TEMPORARY_NAME_BYTES} bytes."
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
    input folder, a path whose folder cannot be written (a missing parent is created later), and a name too long
    for the temporary names written next to it (:data:`TEMPORARY_NAME_BYTES` more than the file system allows).

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
    _check_name_length(given, target, what)
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
    folder protects everything inside it), a path whose folder cannot be written, and a name too long for the
    temporary names written next to it. A missing parent folder is allowed (the writer creates it) when the nearest
    existing folder above it is writable.

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
    _check_name_length(given, target, what)
    return target
