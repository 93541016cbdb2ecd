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

The package's modules, one job each: :mod:`~st_static.files.atomic` (atomic files, modes, digests),
:mod:`~st_static.files.destinations` (safe destinations), :mod:`~st_static.files.locks` (work-folder locks),
:mod:`~st_static.files.swaps` (staged folders, recovery, carry-over). Every public name is importable from
``st_static.files``.
"""

from __future__ import annotations

from st_static.files.atomic import (
    WRITE_ERRNOS,
    PathLike,
    apply_umask_modes,
    content_digest,
    current_umask,
    file_key,
    file_sha256,
    write_errno,
    write_file_atomically,
    write_json_atomically,
    write_text_atomically,
)
from st_static.files.destinations import (
    HOME_FOLDERS,
    SYSTEM_FOLDERS,
    check_destination,
    check_file_destination,
)
from st_static.files.locks import LOCK_FILE_NAME, check_work_folder, folder_lock, is_work_folder
from st_static.files.swaps import carry_over, publish_folder, recover_interrupted_swaps, staged_folder

__all__ = [
    "HOME_FOLDERS",
    "LOCK_FILE_NAME",
    "SYSTEM_FOLDERS",
    "WRITE_ERRNOS",
    "PathLike",
    "apply_umask_modes",
    "carry_over",
    "check_destination",
    "check_file_destination",
    "check_work_folder",
    "content_digest",
    "current_umask",
    "file_key",
    "file_sha256",
    "folder_lock",
    "is_work_folder",
    "publish_folder",
    "recover_interrupted_swaps",
    "staged_folder",
    "write_errno",
    "write_file_atomically",
    "write_json_atomically",
    "write_text_atomically",
]
