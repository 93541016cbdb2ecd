"""Saving and loading whole static models: atomic folders, checked loads."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Dense
from sentence_transformers.sentence_transformer.modules import StaticEmbedding
from torch import nn

from st_static.errors import StStaticError, UnsafeDestinationError
from st_static.files import carry_over, staged_folder
from st_static.model.empty_text import is_empty_text_dense_config, restore_empty_text_dense, with_empty_text_dense
from st_static.model.folder_checks import st_config_problem
from st_static.model.metadata import ModelMetadata
from st_static.model.model2vec_config import (
    MODEL2VEC_CONFIG_FILE_NAME,
    foreign_config_keys,
    model2vec_config_problem,
    model2vec_incompatibility,
    modules_incompatibility,
    pipeline_incompatibility,
)
from st_static.model.model_source import check_model_source
from st_static.model.module_files import check_module_files, record_module_hashes
from st_static.model.saved_files import (
    MODULE_CONFIG_FILE_NAME,
    MODULES_FILE_NAME,
    ST_CONFIG_FILE_NAME,
    TOKENIZER_FILE_NAME,
    WEIGHTS_FILE_NAME,
    model_file_names,
    read_json_object,
    read_modules,
    saved_by_sentence_transformers,
)
from st_static.model.static_word_average import CONFIG_FILE_NAME, ModelFolderError, StaticWordAverage
from st_static.model.storage import restore_storage
from st_static.model_card import attach_card_data
from st_static.model_card.evaluation_table import EVALUATION_FILE_NAME

logger = logging.getLogger(__name__)
LOADED_FROM_ATTRIBUTE = "_st_static_loaded_from"
"""The attribute :func:`load_model` sets on a model loaded from a local folder: that folder, resolved."""


def holds_st_static_output(folder: Path) -> bool:
    """Whether ``folder`` is something st-static wrote: a model folder, or a stage/extraction folder holding one."""
    return (folder / CONFIG_FILE_NAME).is_file() or (folder / "model" / CONFIG_FILE_NAME).is_file()


def model_folder_inputs(name: str | os.PathLike[str]) -> list[Path]:
    """What a command that loads the model ``name`` reads there, for the output checks (``inputs`` of
    :func:`st_static.files.check_file_destination`).

    An st-static folder: the model's own files and module folders (so ``evaluation.json`` or notes may be written
    next to them); another local folder: the whole folder (its loader may read any file in it); a Hub id: nothing.
    """
    folder = Path(name).expanduser()
    if not folder.is_dir():
        return []
    if (folder / CONFIG_FILE_NAME).is_file():
        return [folder / entry for entry in model_file_names(folder)]
    return [folder]


def write_model(model: SentenceTransformer, folder: str | os.PathLike[str], **save_kwargs: Any) -> Path:
    """Write ``model`` into the existing (staging) folder ``folder``, with the st-static card for a static model.

    A table with fallback rows is saved with the empty text's ``Dense`` module before ``Normalize``
    (:mod:`st_static.model.empty_text`), fresh whatever the model held. Use :func:`save_model` for a
    destination that users see; this is the step it runs inside its staging folder.
    """
    if isinstance(model[0], StaticEmbedding):
        attach_card_data(model)
    with with_empty_text_dense(model):
        model.save_pretrained(str(folder), **save_kwargs)
    if modules_incompatibility(model) is not None or model.truncate_dim is not None:  # the table's own save
        (Path(folder) / MODEL2VEC_CONFIG_FILE_NAME).unlink(missing_ok=True)  # sees neither: model2vec has neither
    record_module_hashes(folder)
    return Path(folder)


def save_model(
    model: SentenceTransformer,
    path: str | os.PathLike[str],
    *,
    force: bool = False,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    **save_kwargs: Any,
) -> Path:
    """Save ``model`` to ``path`` atomically: write a sibling temporary folder, then swap it into place.

    An interrupted save leaves the previous folder (if any) untouched and no partial folder under ``path``.
    A static model gets the st-static model card (:func:`st_static.model_card.attach_card_data`).

    A save in place (back into the folder the model was loaded from, with :func:`load_model` or a bare
    ``SentenceTransformer``) replaces the model's own files and keeps everything else the folder holds
    (``evaluation.json``, ``stage_scores.*``, ``training/``, your notes), byte for byte; the card keeps showing
    ``evaluation.json``. Any other save replaces the folder as a whole.

    Args:
        model: The model to save.
        path: The destination folder: new, empty, or an earlier st-static model (replaced).
        force: Also replace a non-empty folder that is not an st-static model (its files are deleted).
        inputs: Files or folders this save was made from; ``path`` must not contain any of them.
        **save_kwargs: Passed to ``SentenceTransformer.save_pretrained``.

    Returns:
        The destination path.

    Raises:
        TypeError: If ``model`` is not a ``SentenceTransformer``.
        ValueError: If its ``truncate_dim`` is not a positive int up to its dimension (a load would refuse it).
        UnsafeDestinationError: If ``path`` is empty, a file, the current or home folder, holds an input, or is a
            non-empty folder of other files (without ``force``).
        FolderInUseError: If another process is writing the same destination.
    """
    if not isinstance(model, SentenceTransformer):
        raise TypeError(f"save_model saves a SentenceTransformer, got {type(model).__name__}.")
    if path is None or not str(path).strip():
        raise UnsafeDestinationError("The model folder is empty: give the path of a new folder to save to.")
    _check_truncate_dim(model)
    in_place = _folder_saved_in_place(model, Path(path))
    with (
        staged_folder(
            path, replaceable=holds_st_static_output, inputs=inputs, force=force, what="model folder"
        ) as staging,
        _as_word_average(model, Path(path)),
    ):
        if in_place is None:
            write_model(model, staging, **save_kwargs)
        else:  # keep what the save does not write; the card shows the evaluation it finds in the staged folder
            own = model_file_names(in_place)
            shown = carry_over(in_place, staging, leave=own, only=[EVALUATION_FILE_NAME])
            write_model(model, staging, **save_kwargs)
            carry_over(in_place, staging, leave=[*own, *shown])
    return Path(path).resolve()


def _check_truncate_dim(model: SentenceTransformer) -> None:
    """Refuse a ``truncate_dim`` that a load refuses (not a positive int) or that exceeds the dimension."""
    truncate_dim = model.truncate_dim
    if truncate_dim is None:
        return
    dim = model.get_embedding_dimension() if hasattr(model, "get_embedding_dimension") else None
    if isinstance(truncate_dim, bool) or not isinstance(truncate_dim, int) or truncate_dim < 1:
        raise ValueError(f"truncate_dim must be a positive int (or None), got {truncate_dim!r}.")
    if isinstance(dim, int) and truncate_dim > dim:
        raise ValueError(f"truncate_dim {truncate_dim} exceeds the model's {dim} dimensions.")


def _folder_saved_in_place(model: SentenceTransformer, destination: Path) -> Path | None:
    """The st-static model folder ``destination`` (resolved) if ``model`` was loaded from it, else ``None``.

    Loaded from it: by :func:`load_model` (which records the folder), or by a bare ``SentenceTransformer(folder)``
    (a plain ``StaticEmbedding`` with the folder's vocabulary, the case :func:`_as_word_average` handles).
    """
    folder = destination.expanduser().resolve()
    if not (folder / CONFIG_FILE_NAME).is_file():
        return None
    if getattr(model, LOADED_FROM_ATTRIBUTE, None) == folder:
        return folder
    first = model[0] if len(model) else None
    if isinstance(first, StaticEmbedding) and not isinstance(first, StaticWordAverage):
        return folder if _has_saved_tokenizer(folder, first.tokenizer.to_str()) else None
    return None


def _has_saved_tokenizer(folder: Path, tokenizer_json: str) -> bool:
    """Whether ``folder/tokenizer.json`` holds the tokenizer ``tokenizer_json`` (a vocabulary saved there)."""
    try:
        saved = json.loads((folder / TOKENIZER_FILE_NAME).read_text(encoding="utf-8"))
        return bool(saved == json.loads(tokenizer_json))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return False


@contextlib.contextmanager
def _as_word_average(model: SentenceTransformer, destination: Path) -> Iterator[None]:
    """Save a bare-loaded st-static table (ST's plain ``StaticEmbedding``) as a :class:`StaticWordAverage`.

    A model loaded with ``SentenceTransformer(folder)`` and fine-tuned has lost the metadata and hashes that
    ``st_static_config.json`` held; saved as a ``StaticWordAverage`` it gets them (and model2vec's ``config.json``)
    back. The metadata comes from the destination's config when that folder holds the same vocabulary (a save in
    place); the model itself is left as it was.
    """
    first = model[0] if len(model) else None
    if not isinstance(first, StaticEmbedding) or isinstance(first, StaticWordAverage):
        yield
        return
    try:
        module = StaticWordAverage.from_static_embedding(first).to(first.embedding.weight.device)
    except (ValueError, TypeError):  # not an st-static word tokenizer: another kind of static model
        yield
        return
    module.metadata = _earlier_metadata(module, destination)
    if module.metadata.is_empty():
        logger.warning(
            "The model was loaded with a bare SentenceTransformer, which drops st-static's metadata (teacher, "
            "stages, ...): saving it without. Load with st_static.load_model to keep it."
        )
    name = next(iter(model._modules))
    model._modules[name] = module
    try:
        yield
    finally:
        model._modules[name] = first


def _earlier_metadata(module: StaticWordAverage, folder: Path) -> ModelMetadata:
    """The metadata of the st-static model in ``folder`` if it has ``module``'s vocabulary, else an empty one.

    Raises:
        ModelFolderError: If that metadata holds a known key of the wrong type (naming the key and the file).
    """
    try:
        config = json.loads((folder / CONFIG_FILE_NAME).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return ModelMetadata()
    metadata = config.get("metadata") if isinstance(config, dict) else None
    if not _has_saved_tokenizer(folder, module.tokenizer.to_str()) or not isinstance(metadata, dict):
        return ModelMetadata()
    return ModelMetadata.from_dict(metadata, source=str(folder / CONFIG_FILE_NAME))


def load_model(
    model_name_or_path: str | os.PathLike[str], device: str | None = "cpu", **kwargs: Any
) -> SentenceTransformer:
    """Load a static model, checking its files, with :class:`StaticWordAverage` as its first module.

    A bare ``SentenceTransformer(path)`` also works; this adds the checks (complete, uncorrupted files; table
    and vocabulary that agree) and the word-level API of :class:`StaticWordAverage`.

    Args:
        model_name_or_path: A local folder or a Hub repo id.
        device: Device to load on.
        **kwargs: Passed to ``SentenceTransformer`` (``revision``, ``token``, ``cache_folder``, ...).

    Raises:
        ModelFolderError: If the folder is not a valid static model.
    """
    name = str(model_name_or_path)
    hub_kwargs = {
        key: kwargs[key] for key in ("revision", "token", "cache_folder", "local_files_only") if key in kwargs
    }
    module = check_model_folder(name, **hub_kwargs)
    # st-static's own modules (e.g. the ensemble's BlockNormalize) are resolved to the installed classes by
    # their exact modules.json type; trust_remote_code stays off for everything else.
    load_with_classes = getattr(SentenceTransformer, "_load_with_module_classes", None)
    try:
        if load_with_classes is not None:
            model = load_with_classes(name, st_static_module_classes(), device=device, **kwargs)
        else:
            model = SentenceTransformer(name, device=device, **kwargs)
    except StStaticError:
        raise
    except (OSError, ValueError, TypeError, KeyError, RuntimeError, ImportError) as error:
        # What the checks above cannot see: a later module's config that its class refuses, a Dense layer whose
        # weights do not fit its config, requirements the folder declares, a download that failed midway.
        raise ModelFolderError(
            f"{name}: sentence-transformers cannot load the model ({type(error).__name__}: {error})"
        ) from error
    if not isinstance(model[0], StaticEmbedding):
        raise ModelFolderError(f"{name}: the first module is {type(model[0]).__name__}, not a static embedding.")
    module = restore_storage(module)  # a float16 (int8-row, binary) folder saves again as it was stored
    model._modules[next(iter(model._modules))] = module.to(model.device)
    if module.folded_column_scale is not None:
        _drop_column_scale_module(model, module.folded_column_scale, name)
    restore_empty_text_dense(model, name)
    attach_card_data(model)  # later saves regenerate the card instead of copying the loaded README
    if os.path.isdir(name):  # a save back into this folder is a save in place (save_model keeps what it holds)
        setattr(model, LOADED_FROM_ATTRIBUTE, Path(name).resolve())
    return model


def check_model_folder(name: str, **hub_kwargs: Any) -> StaticWordAverage:
    """Check every file of the model folder (or Hub repo) ``name`` before :func:`load_model` builds from them;
    return its module.

    That ``name`` is a folder, or a Hub repo that can be fetched; the checks of :meth:`StaticWordAverage.load`;
    ``modules.json``: present, naming only sentence-transformers and st-static classes
    (:func:`st_static_module_classes`), the table in the folder itself; every other JSON file a load reads
    (``config_sentence_transformers.json``, each later module's ``config.json``, model2vec's ``config.json``):
    JSON objects Python parses, with keys of the types sentence-transformers expects; and model2vec's
    ``config.json`` in agreement with the folder. Use :func:`load_model` for the whole check (``st-static info``
    does): it also loads the model.

    Args:
        name: A local folder or a Hub repo id.
        **hub_kwargs: ``revision``, ``token``, ``cache_folder``, ``local_files_only``.

    Raises:
        ModelFolderError: Naming the folder, the file and the problem; or saying why ``name`` is not a folder
            (:func:`~st_static.model.model_source.check_model_source`).
    """
    check_model_source(name, **hub_kwargs)
    module = StaticWordAverage.load(name, **hub_kwargs)
    modules_path = StaticWordAverage.load_file_path(name, filename=MODULES_FILE_NAME, **hub_kwargs)
    if modules_path is None and _is_model2vec_folder(name, **hub_kwargs):
        raise ModelFolderError(
            f"{name}: a model2vec folder ({MODEL2VEC_CONFIG_FILE_NAME}, {WEIGHTS_FILE_NAME}, {TOKENIZER_FILE_NAME}; no "
            f"{MODULES_FILE_NAME}), not a sentence-transformers one. Convert it with sentence-transformers: "
            f"SentenceTransformer(modules=[StaticEmbedding.from_model2vec({name!r}), Normalize()])"
            ".save_pretrained(NEW) "
            "(StaticEmbedding from sentence_transformers.sentence_transformer.modules, Normalize from "
            "sentence_transformers.base.modules). st-static then loads NEW if its tokenizer is st-static's word "
            "tokenizer; a sub-word table loads with sentence-transformers or model2vec."
        )
    if modules_path is None:
        raise ModelFolderError(
            f"{name}: {MODULES_FILE_NAME} is missing, so this is not a complete model (an interrupted save?); "
            "re-save it with st_static.save_model."
        )
    modules = read_modules(name, modules_path, st_static_module_classes())
    if os.path.isdir(name):
        _check_module_folders(name, modules)
    json_files = _check_json_files(name, modules, **hub_kwargs)
    if os.path.isdir(name):
        weights = StaticWordAverage.load_file_path(name, filename=WEIGHTS_FILE_NAME)
        resaved = weights is not None and saved_by_sentence_transformers(weights)
        config_path = os.path.join(name, CONFIG_FILE_NAME)
        config = read_json_object(name, config_path, CONFIG_FILE_NAME) if os.path.isfile(config_path) else None
        check_module_files(name, modules, config, table_resaved=resaved)
    model2vec = json_files.get(MODEL2VEC_CONFIG_FILE_NAME)
    foreign = foreign_config_keys(model2vec) if model2vec is not None else []
    if foreign:
        logger.warning(
            "%s: %s holds keys model2vec never writes (%s): another library (e.g. SetFit) saved its own config "
            "there, so model2vec's StaticModel may not give this model's vectors. st_static.save_model into the "
            "folder writes model2vec's config again.",
            name,
            MODEL2VEC_CONFIG_FILE_NAME,
            ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else ""),
        )
        model2vec = None
    if model2vec is not None:
        reason = model2vec_incompatibility(module.metadata, module.folded_column_scale is not None)
        later = [
            entry["type"]
            for entry in modules[1:]
            if not (
                module.fallback is not None
                and entry["type"].endswith(".Dense")
                and is_empty_text_dense_config(json_files.get(f"{entry['path']}/{MODULE_CONFIG_FILE_NAME}"))
            )
        ]
        reason = reason or pipeline_incompatibility(later)
        truncate_dim = json_files.get(ST_CONFIG_FILE_NAME, {}).get("truncate_dim")
        if reason is None and truncate_dim is not None:
            reason = f"the model keeps the first {truncate_dim} dimensions (truncate_dim), and model2vec returns all"
        problem = f"model2vec cannot give this model's vectors: {reason}" if reason else None
        problem = problem or model2vec_config_problem(model2vec, module.embedding_dim)
        if problem is not None:
            raise ModelFolderError(
                f"{name}: {MODEL2VEC_CONFIG_FILE_NAME} (read by model2vec) disagrees with the model: {problem}. "
                "Delete it, or re-save the model with st_static.save_model, which writes it where model2vec gives "
                "the same vectors."
            )
    return module


def _is_model2vec_folder(name: str, **hub_kwargs: Any) -> bool:
    """Whether ``name`` holds model2vec's files only: its ``config.json`` (``model_type: model2vec``) and no
    ``st_static_config.json``."""
    if StaticWordAverage.load_file_path(name, filename=CONFIG_FILE_NAME, **hub_kwargs) is not None:
        return False
    path = StaticWordAverage.load_file_path(name, filename=MODEL2VEC_CONFIG_FILE_NAME, **hub_kwargs)
    try:
        config = json.loads(Path(path).read_text(encoding="utf-8")) if path is not None else None
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(config, dict) and (
        config.get("model_type") == "model2vec" or "StaticModel" in (config.get("architectures") or [])
    )


def _check_module_folders(name: str, modules: list[dict[str, Any]]) -> None:
    """Refuse module folders (and their entries) that lead out of the model folder, e.g. through a link to ``/etc``."""
    root = Path(name).resolve()
    for module in modules[1:]:
        folder = Path(name) / str(module.get("path", ""))
        entries = [folder, *(folder.iterdir() if folder.is_dir() else [])]
        outside = next((entry for entry in entries if not entry.resolve().is_relative_to(root)), None)
        if outside is not None:
            raise ModelFolderError(
                f"{name}: {outside.relative_to(name)} leads out of the model folder (to {outside.resolve()}); a "
                "model's module folders and files lie inside it. Replace the link by the folder it should hold."
            )


def _check_json_files(name: str, modules: list[dict[str, Any]], **hub_kwargs: Any) -> dict[str, dict[str, Any]]:
    """Read every JSON file besides the table's that a load of ``name`` reads; return them by relative path."""
    checks: dict[str, Callable[[dict[str, Any]], str | None] | None] = {ST_CONFIG_FILE_NAME: st_config_problem}
    checks |= {f"{module['path']}/{MODULE_CONFIG_FILE_NAME}": None for module in modules[1:]}
    checks[MODEL2VEC_CONFIG_FILE_NAME] = None
    found = {}
    for relative, problem in checks.items():
        subfolder, _, file_name = relative.rpartition("/")
        path = StaticWordAverage.load_file_path(name, filename=file_name, subfolder=subfolder, **hub_kwargs)
        if path is not None:
            found[relative] = read_json_object(name, path, relative, problem)
    return found


def st_static_module_classes() -> dict[str, type[nn.Module]]:
    """The st-static module classes a saved model may name in ``modules.json``, keyed by that type string."""
    from st_static.compression.ensemble import BlockNormalize  # imported here: compression imports this module

    return {f"{BlockNormalize.__module__}.{BlockNormalize.__name__}": BlockNormalize}


def _drop_column_scale_module(model: SentenceTransformer, column_scale: torch.Tensor, name: str) -> None:
    """Remove the ``Dense`` that applies an int8-column table's scale, now folded into the first module."""
    names = list(model._modules)
    dense = model[1] if len(names) > 1 else None
    expected = torch.diag(column_scale.to(torch.float32))
    if (
        not isinstance(dense, Dense)
        or dense.bias
        or not isinstance(dense.activation_function, nn.Identity)
        or dense.linear.weight.shape != expected.shape
        or not torch.allclose(dense.linear.weight.detach().float().cpu(), expected, rtol=1e-6, atol=0.0)
    ):
        raise ModelFolderError(
            f"{name}: the table stores int8 codes with a column scale, but the second module is not the Dense "
            "layer that applies that scale; the folder mixes files from different models."
        )
    del model._modules[names[1]]
