"""What ``st-static push`` uploads from a model folder, and what it must never upload.

Only the files a save writes go up (:data:`ROOT_FILES`, :data:`TRAINING_FILES`, and ``config.json`` /
``model.safetensors`` in the module folders ``modules.json`` names, e.g. ``1_Normalize`` or ``1_Dense``); anything
else in the folder (notes, a planted ``pytorch_model.bin``, left-overs of interrupted writes) is skipped and
listed. A folder holding a symbolic link or another non-regular file anywhere is refused: uploading would follow
the link and send whatever it points at. The files are copied (without following links) into a private folder,
which is what the checks read and what is uploaded, so nothing can change between the check and the upload.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from st_static.model.saved_files import MODEL_ROOT_FILES, module_folders

ROOT_FILES = (*MODEL_ROOT_FILES, "evaluation.json", "stage_scores.json", "stage_scores.md")
TRAINING_FILES = ("training/training_history.json", "training/training_curve.png")
MODULE_FILES = ("config.json", "model.safetensors")
_WINDOWS_ABSOLUTE = re.compile(r"^([A-Za-z]:[\\/]|\\\\)")


@dataclass(frozen=True)
class UploadPlan:
    """The files of a folder that go up and those that do not (relative POSIX paths; skipped folders end in /)."""

    files: tuple[str, ...]
    skipped: tuple[str, ...]


def links_and_special_files(folder: str | os.PathLike[str]) -> list[str]:
    """Every symbolic link, and every entry that is neither a regular file nor a folder, under ``folder``."""
    found: list[str] = []
    for relative, entry in _walk(Path(folder)):
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode):
            found.append(f"{relative} is a symbolic link (to {os.readlink(entry.path)})")
        elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            found.append(f"{relative} is not a regular file")
    return found


def plan_upload(folder: str | os.PathLike[str]) -> UploadPlan:
    """Split the regular files under ``folder`` into those a save writes (uploaded) and the rest (skipped)."""
    folder = Path(folder)
    allowed = set(ROOT_FILES) | set(TRAINING_FILES)
    allowed.update(f"{name}/{file}" for name in module_folders(folder) for file in MODULE_FILES)
    allowed_folders = {path.rpartition("/")[0] for path in allowed if "/" in path}
    files: list[str] = []
    skipped: list[str] = []
    for relative, entry in _walk(folder, descend=lambda relative: relative in allowed_folders):
        if entry.is_dir(follow_symlinks=False):
            if relative not in allowed_folders:
                skipped.append(relative + "/")
        elif relative in allowed and entry.is_file(follow_symlinks=False):
            files.append(relative)
        else:
            skipped.append(relative)
    return UploadPlan(files=tuple(sorted(files)), skipped=tuple(sorted(skipped)))


def copy_files(folder: str | os.PathLike[str], files: tuple[str, ...], destination: str | os.PathLike[str]) -> None:
    """Copy ``files`` (relative paths) from ``folder`` into ``destination``, refusing to follow a symbolic link.

    Raises:
        OSError: If a file became a link or vanished since it was listed.
    """
    for relative in files:
        target = Path(destination) / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(Path(folder) / relative, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(descriptor, "rb") as source, open(target, "wb") as copy:
            if not stat.S_ISREG(os.fstat(source.fileno()).st_mode):
                raise OSError(f"{relative} is not a regular file")
            shutil.copyfileobj(source, copy, 1 << 20)


def local_paths(data: object, where: str = "metadata") -> list[str]:
    """Every string in ``data`` (JSON: nested dicts and lists, e.g. the metadata's) that is a path of this machine.

    A path of this machine: a value starting with ``/``, a drive letter (``C:\\``) or ``\\\\``, or containing the
    user's home folder. Returned as ``"metadata.key[0] = '...'"``.
    """
    found: list[str] = []
    if isinstance(data, dict):
        for key, value in data.items():
            found.extend(local_paths(value, f"{where}.{key}"))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found.extend(local_paths(value, f"{where}[{index}]"))
    elif isinstance(data, str) and _is_local_path(data):
        shown = data if len(data) <= 80 else data[:77] + "..."
        found.append(f"{where} = {shown!r}")
    return found


def _is_local_path(text: str) -> bool:
    home = os.path.expanduser("~")
    in_home = len(home.rstrip("/\\")) > 1 and home in text
    return text.startswith("/") or bool(_WINDOWS_ABSOLUTE.match(text)) or in_home


def _walk(
    folder: Path, descend: Callable[[str], bool] | None = None, prefix: str = ""
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """``(relative path, entry)`` of everything under ``folder``, never following links; ``descend(relative)`` says
    which folders to enter (all by default)."""
    with os.scandir(folder) as entries:
        listed = sorted(entries, key=lambda entry: entry.name)
    for entry in listed:
        relative = prefix + entry.name
        yield relative, entry
        if entry.is_dir(follow_symlinks=False) and (descend is None or descend(relative)):
            yield from _walk(Path(entry.path), descend, relative + "/")
