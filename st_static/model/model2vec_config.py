"""``config.json`` for model2vec: a saved st-static folder also loads in ``model2vec.StaticModel`` (no torch).

model2vec's numpy-only ``StaticModel.from_pretrained(folder)`` reads ``config.json``, ``tokenizer.json`` and the
``embeddings`` tensor of ``model.safetensors`` (with ``mapping`` and per-token ``weights`` when present, as the
compact storage formats write them). It averages the vectors of a text's tokens, leaving out ``[UNK]``; an
st-static table gives every other dropped token the zero row, so that mean points the same way as ours, and
with ``normalize: true`` model2vec returns exactly the saved pipeline's unit vectors. With fallback rows that holds
for every text but ``""``, which model2vec gives zeros (it has no token; the saved pipeline's empty-text ``Dense``,
:mod:`st_static.model.empty_text`, is what gives it a vector elsewhere). ``max_length: null`` turns
off model2vec's default truncation to 512 tokens (and to 512 times the median token length in characters).

Folders that cannot give their vectors there get no ``config.json`` (model2vec then refuses them): an
``int8-column`` table, whose per-dimension scale is applied by a ``Dense`` module after the table, an ensemble,
whose ``BlockNormalize`` normalises each member's block separately, and any model whose table is not followed by
exactly one ``Normalize``. A load refuses a ``config.json`` that disagrees with its folder
(:func:`model2vec_config_problem`, :func:`pipeline_incompatibility`): model2vec would return other vectors. A
``config.json`` with keys model2vec never writes (:func:`foreign_config_keys`) is another library's (SetFit writes
its own over ours): the load warns that model2vec's view of the folder is off and goes on; a save in place writes
model2vec's again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from st_static.files import write_text_atomically
from st_static.model.empty_text import is_empty_text_dense

if TYPE_CHECKING:
    from st_static.model.metadata import ModelMetadata

MODEL2VEC_CONFIG_FILE_NAME = "config.json"
MODEL2VEC_KEYS = frozenset(
    {
        "model_type",
        "architectures",
        "hidden_dim",
        "normalize",
        "max_length",
        "tokenizer_name",
        "apply_pca",
        "apply_zipf",
        "sif_coefficient",
        "seq_length",
        "pooling",
        "embedding_dtype",
        "vocabulary_quantization",
        "head_config",
        "language",
    }
)
"""The keys model2vec writes in ``config.json`` (its ``StaticModelConfig``)."""
DEFAULT_MAX_LENGTH = 512  # model2vec's, when config.json has no max_length


def model2vec_incompatibility(metadata: ModelMetadata, has_column_scale: bool) -> str | None:
    """Why model2vec cannot reproduce a table's vectors, or ``None`` when it can.

    Args:
        metadata: The module's metadata (``ensemble`` marks an ensemble).
        has_column_scale: Whether the saved table holds int8 codes with a per-dimension scale (``int8-column``).
    """
    if metadata.ensemble and not metadata.ensemble.folded:
        return (
            "an ensemble normalises each member's block of the vector separately (BlockNormalize), a step "
            "model2vec does not have"
        )
    if has_column_scale:
        return (
            "an int8-column table applies its per-dimension scale in a Dense module after the table, and "
            "model2vec scales whole rows only; quantise with int8-row for a table that model2vec reads"
        )
    return None


def pipeline_incompatibility(later_modules: Sequence[str]) -> str | None:
    """Why model2vec cannot give the vectors of a model whose modules after the table are ``later_modules`` (their
    classes as ``modules.json`` names them), or ``None`` when it can: exactly one sentence-transformers
    ``Normalize``."""
    names = [kind.rsplit(".", 1)[-1] for kind in later_modules]
    if names == ["Normalize"] and later_modules[0].startswith("sentence_transformers."):
        return None
    if not names:
        return (
            "the model has no Normalize module, and model2vec's mean of token vectors has another length than the "
            "mean of word vectors"
        )
    return f"its modules after the table ({', '.join(names)}) are not the one Normalize model2vec applies"


def modules_incompatibility(modules: Iterable[object]) -> str | None:
    """:func:`pipeline_incompatibility` of a model's modules (a ``SentenceTransformer``), the table first.

    The empty text's ``Dense`` (:mod:`st_static.model.empty_text`) does not count: model2vec gives every text but
    ``""`` the same vector without it.
    """
    later = [module for module in list(modules)[1:] if not is_empty_text_dense(module)]
    return pipeline_incompatibility([f"{type(module).__module__}.{type(module).__name__}" for module in later])


def model2vec_config_problem(config: Mapping[str, Any], embedding_dim: int) -> str | None:
    """What in a parsed model2vec ``config.json`` makes model2vec return other vectors than the model (a table
    followed by ``Normalize``), or ``None``."""
    normalize = config.get("normalize", False)  # model2vec's default
    if normalize is not True:
        return (
            f"it says normalize: {json.dumps(normalize)}, but the model ends with Normalize: model2vec would return "
            "vectors of other lengths"
        )
    if config.get("max_length", DEFAULT_MAX_LENGTH) is not None:
        return (
            f"its max_length is {json.dumps(config.get('max_length', DEFAULT_MAX_LENGTH))} (model2vec's default "
            f"{DEFAULT_MAX_LENGTH} when absent): model2vec would cut the longer texts the model reads whole"
        )
    hidden_dim = config.get("hidden_dim", embedding_dim)
    if hidden_dim != embedding_dim:
        return f"its hidden_dim is {json.dumps(hidden_dim)}, but the table has {embedding_dim} dimensions"
    return None


def foreign_config_keys(config: Mapping[str, Any]) -> list[str]:
    """The keys of a ``config.json`` that model2vec never writes: another library saved the folder over it (SetFit's
    ``save_pretrained`` writes its own ``config.json`` there, huggingface_hub's mixin config)."""
    return sorted(key for key in config if key not in MODEL2VEC_KEYS)


def model2vec_config(embedding_dim: int) -> dict[str, Any]:
    """The ``config.json`` that makes model2vec encode like the saved pipeline (table + ``Normalize``)."""
    return {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "hidden_dim": embedding_dim,
        "normalize": True,
        "max_length": None,
    }


def write_model2vec_config(
    folder: str | Path, embedding_dim: int, metadata: ModelMetadata, has_column_scale: bool = False
) -> None:
    """Write ``config.json`` for model2vec into a model folder, or remove a stale one if model2vec cannot load it.

    Args:
        folder: The folder the table was saved to.
        embedding_dim: The table's dimension.
        metadata: The module's metadata.
        has_column_scale: Whether the saved table is ``int8-column``.
    """
    path = Path(folder) / MODEL2VEC_CONFIG_FILE_NAME
    if model2vec_incompatibility(metadata, has_column_scale) is not None:
        path.unlink(missing_ok=True)
        return
    write_text_atomically(path, json.dumps(model2vec_config(embedding_dim), indent=2, sort_keys=True))
