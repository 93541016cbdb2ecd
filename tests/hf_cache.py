"""A test helper: a model folder laid out as a Hugging Face Hub download, for loading by repo id offline."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path


def place_in_hf_cache(folder: str | os.PathLike[str], repo_id: str, cache_dir: str | os.PathLike[str]) -> Path:
    """Place a model folder in the Hugging Face hub cache layout, as a download of ``repo_id`` would leave it.

    ``SentenceTransformer(repo_id)`` then loads it with ``HF_HUB_OFFLINE=1`` and ``HF_HUB_CACHE=cache_dir``.

    Returns:
        The snapshot folder.
    """
    folder, cache_dir = Path(folder), Path(cache_dir)
    repo_folder = cache_dir / ("models--" + repo_id.replace("/", "--"))
    commit = hashlib.sha1(repo_id.encode()).hexdigest()
    snapshot = repo_folder / "snapshots" / commit
    for file in folder.rglob("*"):
        if file.is_file():
            relative = file.relative_to(folder)
            blob = repo_folder / "blobs" / hashlib.sha256(file.read_bytes()).hexdigest()
            blob.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, blob)
            link = snapshot / relative
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(Path("../" * (len(relative.parts) + 1)) / "blobs" / blob.name)
    (repo_folder / "refs").mkdir(parents=True, exist_ok=True)
    (repo_folder / "refs" / "main").write_text(commit)
    return snapshot
