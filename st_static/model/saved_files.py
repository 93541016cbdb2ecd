"""The files of a saved model folder: their names, and reading each with the checks of :mod:`.folder_checks`.

``tokenizer.json`` (its structure checked before the Rust side compiles it), ``st_static_config.json`` (a JSON
object with a dict ``metadata``), ``model.safetensors`` (never a pickle; model2vec layouts folded) and
``modules.json`` (sentence-transformers and st-static classes only), and any other JSON file (a JSON object that
Python parses, checked by a given function).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file
from sentence_transformers.sentence_transformer.modules import StaticEmbedding
from tokenizers import Tokenizer

from st_static.errors import ModelFolderError
from st_static.model.folder_checks import (
    config_problem,
    model2vec_layout_problem,
    modules_problem,
    table_problem,
    tokenizer_structure_problem,
)
from st_static.model.metadata import ModelMetadata

CONFIG_FILE_NAME = "st_static_config.json"
WEIGHTS_FILE_NAME = "model.safetensors"
TOKENIZER_FILE_NAME = "tokenizer.json"
MODULES_FILE_NAME = "modules.json"
ST_CONFIG_FILE_NAME = "config_sentence_transformers.json"
MODULE_CONFIG_FILE_NAME = "config.json"  # of each module after the table (Normalize, Dense, BlockNormalize)
FORMAT_VERSION = 1
# Files whose sha256 a save records in the config's "files" entry and a load verifies.
HASHED_FILES = (TOKENIZER_FILE_NAME, WEIGHTS_FILE_NAME)
# The files a save writes at the top of a model folder (next to the module folders modules.json names).
MODEL_ROOT_FILES = (
    MODULES_FILE_NAME,
    "config_sentence_transformers.json",
    CONFIG_FILE_NAME,
    WEIGHTS_FILE_NAME,
    TOKENIZER_FILE_NAME,
    "README.md",
    "config.json",  # model2vec's config (st_static.model.model2vec_config)
)
_MODULE_FOLDER = re.compile(r"^[A-Za-z0-9_][\w.-]*$")


def module_folders(folder: str | os.PathLike[str]) -> list[str]:
    """The module folders ``modules.json`` names (plain folder names only; none if it is missing or malformed)."""
    try:
        modules = json.loads((Path(folder) / MODULES_FILE_NAME).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return []
    if not isinstance(modules, list):
        return []
    paths = [module.get("path") for module in modules if isinstance(module, dict)]
    return [path for path in paths if isinstance(path, str) and _MODULE_FOLDER.match(path)]


def model_file_names(folder: str | os.PathLike[str]) -> list[str]:
    """The names of the model's own entries in ``folder``: the files a save writes and the module folders.

    Everything else in a model folder (``evaluation.json``, ``training/``, a user's notes) is not part of the model.
    """
    return [*MODEL_ROOT_FILES, *module_folders(folder)]


def read_text(name: str, path: str, file_name: str) -> str:
    """The text of ``path`` (``file_name`` of the model ``name``), which must be a readable UTF-8 file.

    Raises:
        ModelFolderError: If it is not UTF-8, or cannot be read (a folder, no permission).
    """
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ModelFolderError(f"{name}: {file_name} is corrupt ({error}).") from error
    except OSError as error:  # a folder in its place, no permission
        raise ModelFolderError(f"{name}: {file_name} cannot be read ({error.strerror or error}).") from error


def parse_json(name: str, text: str, file_name: str) -> Any:
    """Parse ``text``, the content of ``file_name`` of the model ``name``.

    Raises:
        ModelFolderError: If it is not JSON, or JSON Python refuses to parse: nested deeper than the interpreter's
            recursion limit, holding an integer of more than 4,300 digits, or ``NaN``/``Infinity`` (no JSON values,
            which Python would read as numbers every later check passes).
    """
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError as error:
        raise ModelFolderError(f"{name}: {file_name} is corrupt (its JSON is nested too deeply to parse).") from error
    except ValueError as error:  # JSONDecodeError, or an integer of more digits than Python converts
        reason: object = error
        if "integer string conversion" in str(error):
            reason = f"it holds an integer of over {sys.get_int_max_str_digits():,} digits"
        raise ModelFolderError(f"{name}: {file_name} is corrupt ({reason}).") from error


def _refuse_constant(name: str) -> Any:
    """``json.loads``'s hook for ``NaN``, ``Infinity`` and ``-Infinity``: refuse them."""
    raise ValueError(f"it holds {name}, which is not a JSON value")


def read_json_file(name: str, path: str, file_name: str) -> Any:
    """Parse the UTF-8 JSON file ``path`` (``file_name`` of the model ``name``); see :func:`parse_json`."""
    return parse_json(name, read_text(name, path, file_name), file_name)


def read_json_object(
    name: str, path: str, file_name: str, problem: Callable[[dict[str, Any]], str | None] | None = None
) -> dict[str, Any]:
    """Parse the JSON file ``path`` (``file_name`` of the model ``name``), which must hold a JSON object.

    Args:
        name: The folder or Hub id, for messages.
        path: The local file.
        file_name: How messages name the file.
        problem: A check of the parsed object: what is malformed in it, or ``None``.

    Raises:
        ModelFolderError: If the file is not UTF-8 JSON Python parses (:func:`parse_json`), not an object, or
            ``problem`` finds something.
    """
    value = read_json_file(name, path, file_name)
    try:
        if not isinstance(value, dict):
            reason = f"it is a JSON {type(value).__name__}, not a JSON object"
        else:
            reason = None if problem is None else problem(value)
    except RecursionError as error:  # parsed, but too deep to describe
        raise ModelFolderError(f"{name}: {file_name} is corrupt (its JSON is nested too deeply).") from error
    if reason is not None:
        raise ModelFolderError(f"{name}: {file_name} is malformed: {reason}.")
    return value


def read_tokenizer(name: str, path: str) -> Tokenizer:
    """Parse ``tokenizer.json``, refusing any structure but the word tokenizer's before the Rust side compiles it."""
    text = read_text(name, path, TOKENIZER_FILE_NAME)
    state = parse_json(name, text, TOKENIZER_FILE_NAME)
    try:
        problem = tokenizer_structure_problem(state)
    except RecursionError as error:  # parsed, but too deep to describe
        raise ModelFolderError(f"{name}: {TOKENIZER_FILE_NAME} is corrupt (its JSON is nested too deeply).") from error
    if problem is not None:
        raise ModelFolderError(
            f"{name}: Not a st-static word tokenizer: {problem}. Only {TOKENIZER_FILE_NAME} files written by "
            "st-static are loaded; re-save the model with st-static."
        )
    try:
        return Tokenizer.from_str(text)
    except Exception as error:  # tokenizers raises a bare Exception on a malformed file
        raise ModelFolderError(f"{name}: {TOKENIZER_FILE_NAME} is corrupt ({error}).") from error


def saved_by_sentence_transformers(path: str) -> bool:
    """Whether the weights file holds only ``StaticEmbedding``'s own ``embedding.weight`` (st-static never does)."""
    try:
        with safe_open(path, framework="pt") as weights:
            return list(weights.keys()) == ["embedding.weight"]
    except (SafetensorError, OSError):
        return False


def read_config(name: str, path: str) -> dict[str, Any]:
    """Parse ``st_static_config.json``, check its shape and format version (none newer than :data:`FORMAT_VERSION`)
    and parse its metadata (:meth:`.ModelMetadata.from_dict`)."""
    config = read_json_file(name, path, CONFIG_FILE_NAME)
    problem = config_problem(config)
    if problem is not None:
        raise ModelFolderError(f"{name}: {CONFIG_FILE_NAME} is malformed: {problem}.")
    version = config.get("format_version", FORMAT_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ModelFolderError(f"{name}: {CONFIG_FILE_NAME} is malformed: its format_version {version!r} is no format.")
    if version > FORMAT_VERSION:
        raise ModelFolderError(
            f"{name}: {CONFIG_FILE_NAME} has format_version {version}, written by a newer st-static; this one reads "
            f"format {FORMAT_VERSION} only. Upgrade st-static (pip install -U st-static)."
        )
    config["metadata"] = ModelMetadata.from_dict(config.get("metadata"), source=f"{name}: {CONFIG_FILE_NAME}")
    return config


def read_table(name: str, path: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The token table of ``model.safetensors`` (model2vec layouts folded) and its ``column_scale``, if any."""
    try:
        weights = load_file(path)
    except (SafetensorError, OSError, RuntimeError, ValueError) as error:
        raise ModelFolderError(f"{name}: {WEIGHTS_FILE_NAME} is corrupt or truncated ({error}).") from error
    if "embedding.weight" in weights:
        table = weights["embedding.weight"]
        if "embeddings" in weights:  # what model2vec reads must be the same table
            _check_same_tables(name, table, weights)
    elif "embeddings" in weights:
        mapping, token_scale = weights.get("mapping"), weights.get("weights")
        problem = model2vec_layout_problem(weights["embeddings"], mapping, token_scale)
        if problem is None and not torch.is_floating_point(weights["embeddings"]) and token_scale is None:
            dtype = str(weights["embeddings"].dtype).removeprefix("torch.")
            problem = f"embeddings is {dtype}, not floating point, and has no per-token weights"
        if problem is not None:
            raise ModelFolderError(f"{name}: {WEIGHTS_FILE_NAME}: {problem}.")
        table = StaticEmbedding._fold_model2vec_weights(weights["embeddings"], mapping, token_scale)
    else:
        raise ModelFolderError(f"{name}: {WEIGHTS_FILE_NAME} has no embedding table.")
    column_scale = weights.get("column_scale")
    for tensor, what in ((table, "the table"), (column_scale, "column_scale")):
        problem = None if tensor is None else table_problem(tensor, what)
        if problem is not None:
            raise ModelFolderError(f"{name}: {WEIGHTS_FILE_NAME} holds a table st-static refuses: {problem}.")
    return table, column_scale


def _check_same_tables(name: str, table: torch.Tensor, weights: dict[str, torch.Tensor]) -> None:
    """Refuse a weights file whose model2vec table (``embeddings``, with its ``mapping`` and ``weights``) is not
    ``table``, the ``embedding.weight`` sentence-transformers and st-static read."""
    mapping, token_scale = weights.get("mapping"), weights.get("weights")
    same = model2vec_layout_problem(weights["embeddings"], mapping, token_scale) is None
    if same:
        folded = StaticEmbedding._fold_model2vec_weights(weights["embeddings"], mapping, token_scale)
        same = folded.shape == table.shape and folded.dtype == table.dtype and torch.equal(folded, table)
    if not same:
        raise ModelFolderError(
            f"{name}: {WEIGHTS_FILE_NAME} holds two different tables: embedding.weight, which sentence-transformers "
            "and st-static read, and embeddings, which model2vec reads; re-save the model with st_static.save_model."
        )


def read_modules(name: str, path: str, st_static_types: Collection[str]) -> list[dict[str, Any]]:
    """Parse ``modules.json`` and check that it names only sentence-transformers classes and ``st_static_types``."""
    modules = read_json_file(name, path, MODULES_FILE_NAME)
    problem = modules_problem(modules, st_static_types)
    if problem is not None:
        raise ModelFolderError(f"{name}: {MODULES_FILE_NAME}: {problem}.")
    return modules
