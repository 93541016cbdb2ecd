"""Where a model to load is: a local folder (not a file, a broken link or a link loop), else a Hub repo that is in
the Hugging Face cache or on a reachable Hub. Checked first, so that a load says that, not "tokenizer.json is
missing"."""

from __future__ import annotations

import errno
import os
import stat

from st_static.errors import ModelFolderError
from st_static.model.saved_files import MODULES_FILE_NAME, TOKENIZER_FILE_NAME
from st_static.teachers import is_repo_id


def check_model_source(
    name: str,
    *,
    revision: str | None = None,
    token: bool | str | None = None,
    cache_folder: str | None = None,
    local_files_only: bool = False,
) -> None:
    """Raise unless ``name`` is a local folder, or a Hub repo id whose files can be fetched.

    Args:
        name: A local folder or a Hub repo id (``org/name``).
        revision, token, cache_folder, local_files_only: As ``SentenceTransformer`` takes them, for a repo id.

    Raises:
        ModelFolderError: If ``name`` is a symbolic link loop, a broken link, a file or unreadable; or neither a
            local path nor a repo id; or a repo id that is not cached while the Hub is off (offline mode), has no
            such repo or revision, or cannot be reached.
    """
    try:
        status = os.stat(name)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ModelFolderError(
                f"{name} is a symbolic link loop (or its path passes through one): it cannot be resolved to a folder."
            ) from None
        if os.path.islink(name):
            raise ModelFolderError(
                f"{name} is a symbolic link to {os.readlink(name)}, which does not exist (a broken link)."
            ) from None
        if error.errno not in (errno.ENOENT, errno.ENOTDIR):
            raise ModelFolderError(f"{name} cannot be read ({error.strerror}).") from None
        if not is_repo_id(name):
            raise ModelFolderError(f"{name}: no such model folder.") from None
        _check_hub_repo(name, revision, token, cache_folder, local_files_only)
        return
    if not stat.S_ISDIR(status.st_mode):
        raise ModelFolderError(f"{name} is a file, not a model folder.")


def _check_hub_repo(
    repo_id: str, revision: str | None, token: bool | str | None, cache_folder: str | None, local_files_only: bool
) -> None:
    """Fail at once for a repo id that is not cached and cannot be fetched (one request, without retries)."""
    from huggingface_hub import HfApi, constants, try_to_load_from_cache
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    for file_name in (MODULES_FILE_NAME, TOKENIZER_FILE_NAME):
        if try_to_load_from_cache(repo_id, file_name, cache_dir=cache_folder, revision=revision) is not None:
            return  # cached (or known to be absent from the repo: the file checks say which)
    where = f"{repo_id} is not a folder here and not in the Hugging Face cache"
    if constants.HF_HUB_OFFLINE or local_files_only:
        raise ModelFolderError(f"{where}, and the Hub is not asked (offline mode: HF_HUB_OFFLINE or local_files_only).")
    try:
        HfApi().model_info(repo_id, revision=revision, token=token, timeout=constants.HF_HUB_ETAG_TIMEOUT)
    except GatedRepoError:
        return  # it exists; the download says what access it needs
    except RevisionNotFoundError as error:
        raise ModelFolderError(f"{where}, and the Hugging Face Hub has no revision {revision!r} of it.") from error
    except RepositoryNotFoundError as error:
        raise ModelFolderError(
            f"{where}, and the Hugging Face Hub has no such model (or it is private: pass a token)."
        ) from error
    except Exception as error:  # any failure to reach the Hub (DNS, proxy, TLS, timeout) means the same here
        first_line = (str(error).strip().splitlines() or [""])[0]
        raise ModelFolderError(
            f"{where}, and the Hugging Face Hub could not be reached ({type(error).__name__}: {first_line})."
        ) from error
