"""The files of the modules after the table (``1_Dense/``, ``2_Normalize/``): hashed on save, checked on load.

A save records the sha256 of every file in the module folders ``modules.json`` names in ``st_static_config.json``'s
``files`` entry, next to the table's (keys such as ``1_Dense/model.safetensors``), after the whole folder is
written. A load refuses a module folder that is a file, a recorded file that is missing or changed, and a module's
``model.safetensors`` that safetensors cannot read, each named. One change is accepted: a folder whose table
sentence-transformers re-saved (a bare load fine-tuned and saved in place) has its module files re-saved too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from safetensors import SafetensorError, safe_open

from st_static.errors import ModelFolderError
from st_static.files import file_sha256, write_text_atomically
from st_static.model.folder_checks import FILES_KEY
from st_static.model.saved_files import CONFIG_FILE_NAME, WEIGHTS_FILE_NAME, module_folders


def record_module_hashes(folder: str | os.PathLike[str]) -> None:
    """Add the sha256 of every file in ``folder``'s module folders to its ``st_static_config.json`` (if it has one)."""
    root = Path(folder)
    config_path = root / CONFIG_FILE_NAME
    if not config_path.is_file():
        return
    config = json.loads(config_path.read_text(encoding="utf-8"))
    hashes = {
        f"{module}/{entry.name}": file_sha256(entry)
        for module in module_folders(root)
        if (root / module).is_dir()
        for entry in sorted((root / module).iterdir())
        if entry.is_file()
    }
    if not hashes:
        return
    config[FILES_KEY] = {**(config.get(FILES_KEY) or {}), **hashes}
    write_text_atomically(config_path, json.dumps(config, indent=2, sort_keys=True))


def check_module_files(
    name: str, modules: list[dict[str, Any]], config: Mapping[str, Any] | None, table_resaved: bool
) -> None:
    """Check the module folders of the local model folder ``name`` (``modules`` as ``modules.json`` lists them).

    Args:
        name: The model folder.
        modules: The entries of ``modules.json``, the table first.
        config: The parsed ``st_static_config.json`` (``None`` when absent).
        table_resaved: Whether sentence-transformers re-saved the table (changed module files are then accepted).

    Raises:
        ModelFolderError: Naming the file: a module folder that is a file, a recorded file missing or changed
            since the save, a ``model.safetensors`` that cannot be read.
    """
    root = Path(name)
    recorded = (config or {}).get(FILES_KEY) or {}
    for entry in modules[1:]:
        path = str(entry.get("path", ""))
        folder = root / path
        if folder.exists() and not folder.is_dir():
            raise ModelFolderError(
                f"{name}: {path} is a file, not the module folder {json.dumps(path)} that modules.json names; "
                "restore the folder, or re-save the model with st_static.save_model."
            )
        files = {key: root / key for key in recorded if key.startswith(f"{path}/")}
        missing = [key for key, file in files.items() if not file.is_file()]
        if missing:
            raise ModelFolderError(
                f"{name}: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing (recorded in "
                f"{CONFIG_FILE_NAME} when the model was saved); restore it, or re-save the model with "
                "st_static.save_model."
            )
        changed = [key for key, file in files.items() if file_sha256(file) != recorded[key]]
        if changed and not table_resaved:
            raise ModelFolderError(
                f"{name}: {' and '.join(changed)} {'has' if len(changed) == 1 else 'have'} changed since the model "
                f"was saved (sha256 differs from the one in {CONFIG_FILE_NAME}), so every vector would change; "
                "restore the original, or re-save the model with st_static.save_model if the change was intended."
            )
        weights = folder / WEIGHTS_FILE_NAME
        if weights.is_file():
            try:
                with safe_open(str(weights), framework="pt") as opened:
                    for key in opened.keys():  # noqa: SIM118 (safe_open is no mapping)
                        opened.get_tensor(key)
            except (SafetensorError, OSError, RuntimeError, ValueError) as error:
                raise ModelFolderError(
                    f"{name}: {path}/{WEIGHTS_FILE_NAME} is corrupt or truncated ({error}); restore it, or re-save "
                    "the model with st_static.save_model."
                ) from error
