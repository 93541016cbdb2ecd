"""Checks of a saved model's files, run by :meth:`StaticWordAverage.load` before anything is built from them.

Each check returns the problem as a sentence, or ``None``; the loader raises it as a ``ModelFolderError`` naming
the folder. What is refused, and why:

* a ``tokenizer.json`` whose normaliser, pre-tokeniser, model, decoder or extras are not exactly what
  :func:`st_static.model.tokenization.build_word_tokenizer` writes, with or without the fallback rows of
  :func:`~st_static.model.tokenization.add_fallback_layout` (every st-static folder, compressed, pruned or an
  ensemble, has that structure). Anything else can change what the words are, or run a hostile regex: the Rust
  regex engine panics on a pattern like ``(a+)+$`` after two dozen characters;
* a table that is not floating point, holds NaN or infinite values, or holds a value beyond
  :data:`MAX_TABLE_MAGNITUDE` (such values are finite but overflow when a text's rows are summed);
* a model2vec-layout table (``embeddings`` + ``mapping`` + ``weights``) whose mapping points outside it;
* an ``st_static_config.json`` that is not a JSON object, or whose ``metadata`` or ``files`` entries are malformed;
* any other JSON file a load reads (``config_sentence_transformers.json``, each later module's ``config.json``,
  model2vec's ``config.json``) that is not a JSON object Python can parse, or a
  ``config_sentence_transformers.json`` whose keys sentence-transformers would fail on (or that names another
  ``model_type``: sentence-transformers would build another model);
* a ``modules.json`` that is not a list of modules with a ``type`` and a relative ``path``, that names a class
  outside sentence-transformers and st-static (loading it would import and run that class's code), or whose first
  module is not in the folder itself (a bare ``SentenceTransformer`` would read another table than st-static);
* a ``tokenizer.json`` or ``model.safetensors`` whose sha256 differs from the one recorded in
  ``st_static_config.json`` at save time (``"files": {name: sha256}``). Folders saved before the hashes were
  recorded have no ``files`` entry and load unchecked. The hashes catch edits (two token ids swapped makes two
  words swap vectors, and every other check passes); they are no signature: whoever edits the files can also
  edit the config.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path, PureWindowsPath
from typing import Any

import torch
from packaging.version import InvalidVersion, Version

from st_static.files import file_sha256
from st_static.model.tokenization import (
    CONTINUATION_PREFIX,
    FALLBACK_ISOLATED_PATTERN,
    FALLBACK_REMOVED_PATTERN,
    NFC_SPACELESS_ISOLATED_PATTERN,
    SENTINEL,
    SPACELESS_CHUNK_PATTERN,
    SPACELESS_ISOLATED_PATTERN,
    UNKNOWN_TOKEN,
    WORD_SEPARATOR_PATTERN,
)

# No real table comes near this: teacher embeddings, PCA outputs and trained rows are O(1) to O(100), and int8
# codes are at most 127. It keeps every sum finite: the mean of n rows needs a float32 sum of at most n * 1e6
# (finite for n < 3e32 words), and Normalize squares values of at most 1e6 (1e12 each, times the dimension).
MAX_TABLE_MAGNITUDE = 1e6
# The longest word the WordPiece model may try to match. Its greedy longest-prefix search costs about L^2 look-ups
# per unknown word of L characters: a megabyte of 100-letter unknown words takes ~9 s, of 1000-letter ones ~2 min.
# st-static writes 100 (``DEFAULT_MAX_WORD_CHARS``); this leaves room for a deliberately larger setting.
MAX_WORD_CHARS_LIMIT = 256
FILES_KEY = "files"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NORMALIZERS = (
    {"type": "NFC"},
    {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]},
)
_PREPEND_SENTINEL = {"type": "Prepend", "prepend": SENTINEL}
# With fallback rows (st_static.model.tokenization.add_fallback_layout): NFKC (NFC in tables laid out before
# compatibility folding), the sentinel prepended last.
_FALLBACK_NORMALIZERS = tuple(
    {"type": "Sequence", "normalizers": [{"type": form}, *lowercase, _PREPEND_SENTINEL]}
    for form in ("NFKC", "NFC")
    for lowercase in ([], [{"type": "Lowercase"}])
)


def _split(pattern: str, behavior: str) -> dict[str, object]:
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior, "invert": False}


_PRE_TOKENIZER = _split(WORD_SEPARATOR_PATTERN, "Removed")
# Either layout, in a table with words of scripts written without spaces: their long runs are cut too.
_PLAIN_FORMS = ([_PRE_TOKENIZER], [_PRE_TOKENIZER, _split(SPACELESS_CHUNK_PATTERN, "Isolated")])
_FALLBACK_FORMS = tuple(
    [_split(FALLBACK_REMOVED_PATTERN, "Removed"), _split(isolated, "Isolated")]
    for isolated in (FALLBACK_ISOLATED_PATTERN, SPACELESS_ISOLATED_PATTERN, NFC_SPACELESS_ISOLATED_PATTERN)
)
_MODEL_KEYS = {"type", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab"}


# ------------------------------------------------------------------------------------------------ tokenizer.json
def tokenizer_structure_problem(state: object) -> str | None:
    """What makes a parsed ``tokenizer.json`` differ from the word tokenizer st-static writes, or ``None``.

    Only the vocabulary may differ (and ``max_input_chars_per_word``, up to :data:`MAX_WORD_CHARS_LIMIT`); the
    vocabulary's layout is checked afterwards by :func:`st_static.model.tokenization.token_targets`.
    """
    if not isinstance(state, dict):
        return f"it is a JSON {type(state).__name__}, not an object"
    fallback = state.get("normalizer") in _FALLBACK_NORMALIZERS
    if state.get("normalizer") not in _NORMALIZERS and not fallback:
        return (
            f"its normalizer is {_describe(state.get('normalizer'))}, "
            "not NFC (+ Lowercase) or NFKC/NFC (+ Lowercase) + the sentinel"
        )
    pre_tokenizer = state.get("pre_tokenizer")
    if fallback and not _is_fallback_pre_tokenizer(pre_tokenizer):
        return (
            f"its pre-tokenizer is {_describe(pre_tokenizer)}, not the split on non-letters that keeps symbols, "
            "which a normalizer with the fallback sentinel needs"
        )
    if not fallback and not _is_splits(pre_tokenizer, _PLAIN_FORMS):
        return f"its pre-tokenizer is {_describe(pre_tokenizer)}, not the split on non-letters"
    for part in ("post_processor", "truncation", "padding"):
        if state.get(part) is not None:
            return f"it has a {part} ({_describe(state[part])})"
    if state.get("added_tokens"):
        return f"it has added tokens ({_describe(state['added_tokens'])})"
    decoder = state.get("decoder")
    if decoder is not None and (
        not isinstance(decoder, dict)
        or {"cleanup": True, **decoder}.keys() != {"type", "prefix", "cleanup"}
        or (decoder["type"], decoder["prefix"]) != ("WordPiece", CONTINUATION_PREFIX)
        or not isinstance(decoder.get("cleanup", True), bool)
    ):
        return f"its decoder is {_describe(decoder)}, not WordPiece"
    return _model_problem(state.get("model"))


def _is_fallback_pre_tokenizer(pre_tokenizer: object) -> bool:
    return _is_splits(pre_tokenizer, _FALLBACK_FORMS)


def _is_splits(pre_tokenizer: object, forms: tuple[list[dict[str, object]], ...]) -> bool:
    """Whether ``pre_tokenizer`` is one of ``forms``: its splits (one alone, or a ``Sequence``) in order."""
    if isinstance(pre_tokenizer, dict) and pre_tokenizer.get("type") == "Split":
        splits: object = [pre_tokenizer]
    elif isinstance(pre_tokenizer, dict) and set(pre_tokenizer) == {"type", "pretokenizers"}:
        splits = pre_tokenizer["pretokenizers"] if pre_tokenizer["type"] == "Sequence" else None
    else:
        return False
    if not isinstance(splits, list) or not all(isinstance(split, dict) for split in splits):
        return False
    return [{"invert": False, **split} for split in splits] in forms


def _model_problem(model: object) -> str | None:
    if not isinstance(model, dict) or model.get("type") != "WordPiece":
        return f"its model is {_describe(model)}, not WordPiece"
    if set(model) != _MODEL_KEYS:
        return f"its WordPiece model has the fields {sorted(model)}, expected {sorted(_MODEL_KEYS)}"
    if model["unk_token"] != UNKNOWN_TOKEN or model["continuing_subword_prefix"] != CONTINUATION_PREFIX:
        return (
            f"its WordPiece model uses unk_token={model['unk_token']!r} and continuing_subword_prefix="
            f"{model['continuing_subword_prefix']!r}, not {UNKNOWN_TOKEN!r} and {CONTINUATION_PREFIX!r}"
        )
    limit = model["max_input_chars_per_word"]
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_WORD_CHARS_LIMIT:
        return f"its max_input_chars_per_word is {limit!r}, not an integer between 1 and {MAX_WORD_CHARS_LIMIT}"
    if not isinstance(model["vocab"], dict):
        return "its vocabulary is not a JSON object"
    return None


def _describe(value: object, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ------------------------------------------------------------------------------------------------ st_static_config
def config_problem(config: object) -> str | None:
    """What is malformed in a parsed ``st_static_config.json``, or ``None``."""
    if not isinstance(config, dict):
        return f"it is a JSON {type(config).__name__}, not a JSON object"
    metadata = config.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return f"its metadata is a {_json_type(metadata)}, not a JSON object"
    files = config.get(FILES_KEY)
    if files is None:
        return None
    if not isinstance(files, dict):
        return f"its {FILES_KEY!r} entry is a {_json_type(files)}, not a JSON object of file name -> sha256"
    for name, digest in files.items():
        if not isinstance(digest, str) or not _SHA256.match(digest):
            return f"its {FILES_KEY!r} entry gives {name!r} the hash {digest!r}, not a sha256 hex digest"
    return None


def _json_type(value: object) -> str:
    names = {list: "list", str: "string", int: "number", float: "number", bool: "boolean", dict: "object"}
    return names.get(type(value), type(value).__name__)


# ------------------------------------------------------------------------------- config_sentence_transformers.json
def st_config_problem(config: object) -> str | None:
    """What in a parsed ``config_sentence_transformers.json`` sentence-transformers fails on, or reads as another
    kind of model than a ``SentenceTransformer``, or ``None``."""
    if not isinstance(config, dict):
        return f"it is a JSON {_json_type(config)}, not a JSON object"
    model_type = config.get("model_type", "SentenceTransformer")
    if model_type != "SentenceTransformer":
        return f"its model_type is {_describe(model_type)}, not 'SentenceTransformer'"
    prompts = config.get("prompts") or {}
    if not isinstance(prompts, dict) or not all(isinstance(text, str | None) for text in prompts.values()):
        return f"its prompts are {_describe(prompts)}, not a JSON object of prompt name -> text"
    for key in ("default_prompt_name", "similarity_fn_name"):
        if not isinstance(config.get(key), str | None):
            return f"its {key} is {_describe(config[key])}, not a string"
    default_prompt = config.get("default_prompt_name")
    if default_prompt is not None and default_prompt not in prompts:
        return f"its default_prompt_name {default_prompt!r} is not one of its prompts {sorted(prompts)}"
    truncate_dim = config.get("truncate_dim")
    if truncate_dim is not None and (
        isinstance(truncate_dim, bool) or not isinstance(truncate_dim, int) or truncate_dim < 1
    ):
        return f"its truncate_dim is {_describe(truncate_dim)}, not a positive integer"
    versions = config.get("__version__") or {}
    if not isinstance(versions, dict) or not all(isinstance(value, str) for value in versions.values()):
        return f"its __version__ is {_describe(versions)}, not a JSON object of package -> version"
    if "sentence_transformers" in versions:
        try:
            Version(versions["sentence_transformers"])
        except InvalidVersion:
            return f"its sentence_transformers version {versions['sentence_transformers']!r} is not a version"
    return None


# ------------------------------------------------------------------------------------------------ modules.json
SENTENCE_TRANSFORMERS_PREFIX = "sentence_transformers."
TABLE_FILES = "tokenizer.json and model.safetensors"


def modules_problem(modules: object, st_static_types: Collection[str]) -> str | None:
    """What is wrong with a parsed ``modules.json``, or ``None``.

    Every entry must name a sentence-transformers class (``sentence_transformers.*``) or one of
    ``st_static_types`` and a relative ``path`` inside the folder; the first (the table) the folder itself.
    """
    if not isinstance(modules, list) or not modules:
        return f"it is {_describe(modules)}, not a list of modules"
    for index, module in enumerate(modules):
        if not isinstance(module, dict) or not isinstance(module.get("type"), str):
            return f"its entry {index} is {_describe(module)}, not a module with a type"
        kind, path = module["type"], module.get("path")
        if not kind.startswith(SENTENCE_TRANSFORMERS_PREFIX) and kind not in st_static_types:
            return (
                f"its entry {index} names the class {kind!r}, which is neither a sentence-transformers nor an "
                "st-static module (st-static never loads other classes: that would run their code)"
            )
        windows_path = PureWindowsPath(path) if isinstance(path, str) else None
        if windows_path is None or windows_path.anchor or ".." in windows_path.parts or "\0" in path:
            return f"its entry {index} has the path {path!r}, not a relative path inside the folder"
        if index == 0 and windows_path.parts:
            return (
                f'its entry 0 has the path {path!r}, not the folder itself (""): a bare SentenceTransformer would '
                f"read the table in {path!r} while st-static and model2vec read the folder's own {TABLE_FILES}, two "
                "different models (st-static saves the table in the folder itself)"
            )
    return None


# ------------------------------------------------------------------------------------------------ file hashes
def file_hashes(folder: str | os.PathLike[str], names: Iterable[str]) -> dict[str, str]:
    """``{name: sha256}`` of the files ``names`` in ``folder``: the ``files`` entry a save records."""
    return {name: file_sha256(Path(folder) / name) for name in sorted(names)}


def changed_files(config: Mapping[str, Any], paths: Mapping[str, str | os.PathLike[str]]) -> list[str]:
    """The names in ``paths`` (name -> local file) whose sha256 differs from the one ``config`` records.

    Files the config records no hash for (folders saved before hashes were recorded) are not checked.
    """
    recorded = config.get(FILES_KEY) or {}
    return [name for name, path in paths.items() if name in recorded and recorded[name] != file_sha256(path)]


# ------------------------------------------------------------------------------------------------ the table
def table_problem(table: torch.Tensor, what: str = "the table") -> str | None:
    """Why ``table`` cannot be averaged safely (not floating point, non-finite, absurd values), or ``None``."""
    if not torch.is_floating_point(table):
        return f"{what} is {str(table.dtype).removeprefix('torch.')}, not floating point"
    if table.numel() == 0:
        return None
    finite = torch.isfinite(table)
    if not finite.all():
        return f"{what} contains {int((~finite).sum())} NaN or infinite value(s)"
    largest = float(table.abs().max())
    if largest > MAX_TABLE_MAGNITUDE:
        return (
            f"{what} holds a value of magnitude {largest:.3g}, larger than {MAX_TABLE_MAGNITUDE:g} "
            "(no real table comes near it; sums of such rows overflow to NaN)"
        )
    return None


def model2vec_layout_problem(
    embeddings: torch.Tensor, mapping: torch.Tensor | None, weights: torch.Tensor | None
) -> str | None:
    """Why a model2vec-layout table (``embeddings`` rows, token -> row ``mapping``, per-token ``weights``) cannot
    be folded into one row per token, or ``None``."""
    if embeddings.ndim != 2:
        return f"embeddings has shape {tuple(embeddings.shape)}, not (rows, dim)"
    num_tokens = embeddings.shape[0]
    if mapping is not None:
        if mapping.ndim != 1 or mapping.dtype.is_floating_point or mapping.dtype == torch.bool:
            return f"mapping is {mapping.dtype} of shape {tuple(mapping.shape)}, not a list of integer rows"
        if mapping.numel() and (int(mapping.min()) < 0 or int(mapping.max()) >= embeddings.shape[0]):
            return f"mapping points at rows outside the {embeddings.shape[0]} rows of embeddings"
        num_tokens = mapping.shape[0]
    if weights is not None:
        if weights.shape != (num_tokens,):
            return f"weights has shape {tuple(weights.shape)}, expected ({num_tokens},): one scale per token"
        return table_problem(weights, "weights")
    return None
