"""The empty text in a bare ``SentenceTransformer``: a ``Dense`` module that adds a tiny bias after the table.

A table with fallback rows gives every non-empty text the empty-text row through its tokenizer (the prepended
sentinel, :mod:`st_static.model.tokenization`), but no tokenizer setting reaches ``""``: normalisers skip empty
strings and sentence-transformers' ``StaticEmbedding`` encodes without special tokens, so ``""`` has no token and
its mean is zero. A saved folder therefore puts one more module between the table and ``Normalize``: a ``Dense``
layer with the identity matrix and a bias of norm :data:`EMPTY_TEXT_BIAS_NORM` pointing along the empty-text row.
``""`` then becomes that bias, which ``Normalize`` makes the unit vector of the empty-text row, the vector
st-static gives it (:class:`~st_static.model.word_rows.WordRows` gives the empty text that row). Every other text's
mean is at least the empty-text row over its token count, orders of magnitude larger and (for a text with nothing
but the sentinel) parallel to the bias, so its direction does not change beyond float rounding.

st-static adds the module when it saves (:func:`with_empty_text_dense`) and drops it when it loads
(:func:`drop_empty_text_dense`): in memory, :class:`~st_static.model.static_word_average.StaticWordAverage` handles
the empty text itself. model2vec reads the table only, so it gives ``""`` the zero vector (and every other text
the same vector as st-static).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Dense, Normalize
from torch import nn

from st_static.errors import ModelFolderError

EMPTY_TEXT_BIAS_NORM = 1e-10
"""The bias's norm: above ``Normalize``'s epsilon (1e-12), far below any text's mean."""
_LARGEST_BIAS_NORM = 1e-6
_SAME_DIRECTION = 0.999


def is_empty_text_dense(module: nn.Module) -> bool:
    """Whether ``module`` is the empty text's ``Dense``: the identity matrix plus a tiny bias, no activation."""
    if not (
        isinstance(module, Dense)
        and module.bias
        and not module.use_residual
        and isinstance(module.activation_function, nn.Identity)
        and module.in_features == module.out_features
        and module.module_input_name == "sentence_embedding"
        and module.module_output_name == "sentence_embedding"
    ):
        return False
    weight = module.linear.weight.detach()
    bias_norm = float(torch.linalg.vector_norm(module.linear.bias.detach().float()))
    return bool(torch.equal(weight, torch.eye(module.in_features, dtype=weight.dtype, device=weight.device))) and (
        0.0 < bias_norm <= _LARGEST_BIAS_NORM
    )


def is_empty_text_dense_config(config: object) -> bool:
    """Whether a ``Dense`` module's saved ``config.json`` can be the empty text's (its weights are checked on load)."""
    return (
        isinstance(config, dict)
        and config.get("bias") is True
        and config.get("in_features") == config.get("out_features")
        and config.get("activation_function", "torch.nn.modules.linear.Identity") == "torch.nn.modules.linear.Identity"
        and not config.get("use_residual", False)
    )


def empty_text_dense(model: SentenceTransformer) -> Dense | None:
    """The empty text's ``Dense`` for ``model``, or ``None`` when it needs none.

    A model needs it when its table has fallback rows and a bare ``SentenceTransformer`` can load it: the table,
    then only bias-free linear ``Dense`` layers (an int8-column scale), then ``Normalize``. The bias points along
    the empty-text row as those layers map it.
    """
    modules = list(model)
    first = modules[0] if modules else None
    fallback = getattr(first, "fallback", None)  # a StaticWordAverage's (not imported: it imports this module)
    if fallback is None:
        return None
    later = [module for module in modules[1:] if not is_empty_text_dense(module)]
    if not later or type(later[-1]) is not Normalize or not all(_is_linear(module) for module in later[:-1]):
        return None
    row = first.word_vectors.detach()[fallback.sentinel_row].to("cpu", torch.float32)
    for module in later[:-1]:
        row = module.linear.weight.detach().to("cpu", torch.float32) @ row
    norm = float(torch.linalg.vector_norm(row))
    if norm == 0.0:
        return None
    dim = row.shape[0]
    return Dense(
        dim,
        dim,
        bias=True,
        activation_function=nn.Identity(),
        init_weight=torch.eye(dim),
        init_bias=row * (EMPTY_TEXT_BIAS_NORM / norm),
    ).to(first.embedding.weight.device)


def _is_linear(module: nn.Module) -> bool:
    return (
        isinstance(module, Dense)
        and not module.bias
        and not module.use_residual
        and isinstance(module.activation_function, nn.Identity)
    )


@contextlib.contextmanager
def with_empty_text_dense(model: SentenceTransformer) -> Iterator[None]:
    """Within the block, ``model`` holds a fresh empty-text ``Dense`` just before its final ``Normalize`` (for a save)
    instead of any it had; afterwards its modules are what they were."""
    dense = empty_text_dense(model)
    if dense is None:
        yield
        return
    original = dict(model._modules)
    names = list(original)
    kept = [name for name in names if not is_empty_text_dense(original[name])]
    modules = {name: original[name] for name in kept[:-1]}
    modules[_free_name(kept, "empty_text")] = dense
    modules[kept[-1]] = original[kept[-1]]
    model._modules.clear()
    model._modules.update(modules)
    try:
        yield
    finally:
        model._modules.clear()
        model._modules.update(original)


def _free_name(modules: list[str], name: str) -> str:
    index = 0
    while f"{name}{index or ''}" in modules:
        index += 1
    return f"{name}{index or ''}"


def drop_empty_text_dense(model: SentenceTransformer, name: str) -> None:
    """Remove the empty text's ``Dense`` from a loaded model whose table has fallback rows (st-static gives the
    empty text its row itself); a model without fallback rows keeps any it has.

    Raises:
        ModelFolderError: If the bias does not point along the empty-text row (the folder mixes two models).
    """
    if getattr(model[0], "fallback", None) is None:
        return
    expected = empty_text_dense(model)
    for key, module in list(model._modules.items()):
        if not is_empty_text_dense(module):
            continue
        if expected is not None:
            bias, wanted = (
                torch.nn.functional.normalize(dense.linear.bias.detach().double().cpu(), dim=0, eps=1e-300)
                for dense in (module, expected)
            )
            if float(bias @ wanted) < _SAME_DIRECTION:
                raise ModelFolderError(
                    f"{name}: the empty text's Dense module does not point along the table's empty-text row; the "
                    "folder mixes files from different models. Re-save the model with st_static.save_model."
                )
        del model._modules[key]
