"""Files written whole or not at all: a temporary file in the same folder, then one rename; the modes the umask
gives; the errors that mean a place cannot be written; content digests."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from safetensors import SafetensorError

from st_static.errors import OutputWriteError

PathLike = str | os.PathLike[str]
_UMASK_LOCK = threading.Lock()
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})
"""Errors that mean "this place cannot be written" (reported as :class:`OutputWriteError`)."""


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


def file_sha256(path: PathLike) -> str:
    """The sha256 of a file's bytes, as hex."""
    with Path(path).open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def content_digest(path: PathLike) -> str:
    """``size:sha256`` of a file's bytes: a cache key that changes when the content does, wherever the file is."""
    return f"{Path(path).stat().st_size}:{file_sha256(path)}"


def file_key(path: PathLike) -> tuple[int, int] | str:
    """What tells files apart: device and inode of an existing file (every name of one file, hard links included,
    gives the same key), else its real path."""
    try:
        info = os.stat(path)
    except OSError:
        return os.path.realpath(path)
    return (info.st_dev, info.st_ino)
