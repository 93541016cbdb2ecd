"""The empty text in a bare ``SentenceTransformer``: a ``Dense`` module that adds a tiny bias after the table.

A table with fallback rows gives every non-empty text the empty-text row through its tokenizer (the prepended
sentinel, :mod:`st_static.model.tokenization`), but no tokenizer setting reaches ``""``: normalisers skip empty
strings and sentence-transformers' ``StaticEmbedding`` encodes without special tokens, so ``""`` has no token and
its mean is zero. A saved folder therefore puts one more module between the table and ``Normalize``: a ``Dense``
layer whose matrix is a power of two times the identity (:func:`empty_text_scale`) and whose bias points along the
empty-text row. ``""`` then becomes that bias, which ``Normalize`` makes the unit vector of the empty-text row, the
vector st-static gives it (:class:`~st_static.model.word_rows.WordRows` gives the empty text that row). Every other
text's vector is its mean times the scale plus the bias: the bias over the scale (the bias the table sees) is about
1e-8 of a word row, 1e-5 of a fallback character's, and parallel to a text with nothing but the sentinel, so no
direction moves by more than that. The two numbers are chosen for 16 bits: the bias's largest entry is
:data:`BIAS_LARGEST_ENTRY`, inside float16's range, so a bare ``SentenceTransformer(folder).half()`` gives ``""`` the
empty-text direction (a bias of norm 2e-12 became zero, and ``Normalize`` divided zero by zero), and the scale keeps
the largest mean times the scale below float16's largest norm.

In memory the module is an :class:`EmptyTextDense`: the same ``Dense`` (recorded in ``modules.json`` under
sentence-transformers' ``Dense`` name, so a bare load needs no st-static) whose matrix and bias are buffers, so no
optimiser trains it (the sentence-transformers trainer, st-static's, or one given every tensor of the model).
st-static puts one into every model it returns that needs one (:func:`attach_empty_text_dense`: a load, a build, new
fallback rows, a compression), so sentence-transformers' own ``save_pretrained`` writes it as well, and every
st-static save writes a fresh one (:func:`with_empty_text_dense`). ``StaticWordAverage`` gives the empty text its
row itself, so the module changes no vector in memory beyond float rounding. A load checks the saved one
(:func:`restore_empty_text_dense`): one that a fine-tune of a bare load trained (sentence-transformers builds a
trainable ``Dense`` from the folder, which st-static cannot freeze) is folded into the table, whose rows then give
the fine-tuned vectors; a folder without one gets it back with a warning. model2vec reads the table only, so it
gives ``""`` the zero vector (and every other text the same vector as st-static).
"""

from __future__ import annotations

import contextlib
import logging
import math
import weakref
from collections.abc import Iterator

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Dense, Normalize
from torch import nn

from st_static.errors import ModelFolderError
from st_static.tensors import TensorStamp

logger = logging.getLogger(__name__)

BIAS_LARGEST_ENTRY = 2.0**-18
"""The bias's largest entry: 64 steps of float16's smallest subnormal, so a ``.half()`` copy keeps its direction
(cosine above 0.999)."""
LARGEST_SCALED_NORM = 2.0**14
"""The largest norm a mean may have once scaled: a quarter of float16's largest number, so ``Normalize`` of a
``.half()`` copy does not overflow."""
_LARGEST_SCALE = 2.0**14
_LARGEST_BIAS_OVER_SCALE = 1e-4
_SAME_DIRECTION = 0.999


class _FixedLinear(nn.Module):
    """``nn.Linear``'s computation and state-dict keys (``weight``, ``bias``) with both tensors as buffers."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("weight", weight.detach().clone())
        self.register_buffer("bias", bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(x, self.weight, self.bias)


class EmptyTextDense(Dense):
    """The empty text's ``Dense`` as st-static holds it in memory: ``scale`` times the identity plus ``bias``, never
    trained.

    It saves exactly a ``Dense``'s files and is recorded under ``Dense``'s name (a bare ``SentenceTransformer``
    builds a plain ``Dense`` from them); its matrix and bias are buffers, not parameters, so no optimiser reaches
    them, and ``requires_grad_`` cannot make them trainable.

    Args:
        bias: The bias along the empty-text row (:func:`empty_text_bias`).
        scale: The matrix's diagonal (:func:`empty_text_scale`); 1 in folders saved before it was added.
    """

    def __init__(self, bias: torch.Tensor, scale: float = 1.0) -> None:
        dim = int(bias.shape[0])
        super().__init__(dim, dim, bias=True, activation_function=nn.Identity())
        weight = torch.eye(dim, dtype=bias.dtype, device=bias.device) * scale
        self.linear = _FixedLinear(weight, bias)

    def _get_name(self) -> str:
        return "EmptyTextDense"


# Recorded in modules.json as sentence-transformers' Dense (it writes exactly Dense's files): see StaticWordAverage.
EmptyTextDense.__module__ = Dense.__module__
EmptyTextDense.__name__ = Dense.__name__


_CHECKED_DENSE: weakref.WeakKeyDictionary[nn.Module, tuple[TensorStamp, TensorStamp, bool]] = (
    weakref.WeakKeyDictionary()
)
"""Plain ``Dense`` modules already compared with the identity: their tensors' stamps and the answer (held weakly: no
state is written into the module, so copies and pickles of a model carry none)."""


def is_empty_text_dense(module: nn.Module) -> bool:
    """Whether ``module`` is the empty text's ``Dense``: an :class:`EmptyTextDense` (whatever dtype a model cast moved
    it to), or a positive multiple of the identity matrix plus a bias that is tiny beside it, no activation.

    A plain ``Dense`` (a bare load's) has its matrix compared with the identity once: the answer is kept, keyed by the
    module, until its matrix or bias is replaced or written in place (:class:`~st_static.tensors.TensorStamp`), so
    ``st_static.encode`` on a bare load checks its pipeline in microseconds.
    """
    if isinstance(module, EmptyTextDense):
        return True
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
    weight, bias = module.linear.weight, module.linear.bias
    checked = _CHECKED_DENSE.get(module)
    if checked is not None and checked[0].matches(weight) and checked[1].matches(bias):
        return checked[2]
    matrix = weight.detach()
    scale = float(matrix[0, 0])
    bias_norm = float(torch.linalg.vector_norm(bias.detach().float()))
    identity = torch.eye(module.in_features, dtype=matrix.dtype, device=matrix.device)
    answer = (
        scale > 0.0
        and bool(torch.equal(matrix, identity * scale))
        and 0.0 < bias_norm <= _LARGEST_BIAS_OVER_SCALE * scale
    )
    _CHECKED_DENSE[module] = (TensorStamp(weight), TensorStamp(bias), answer)
    return answer


def is_empty_text_dense_config(config: object) -> bool:
    """Whether a ``Dense`` module's saved ``config.json`` can be the empty text's (its weights are checked on load)."""
    return (
        isinstance(config, dict)
        and config.get("bias") is True
        and config.get("in_features") == config.get("out_features")
        and config.get("activation_function", "torch.nn.modules.linear.Identity") == "torch.nn.modules.linear.Identity"
        and not config.get("use_residual", False)
    )


def empty_text_dense(model: SentenceTransformer) -> EmptyTextDense | None:
    """The empty text's ``Dense`` for ``model``, or ``None`` when it needs none.

    A model needs it when its table has fallback rows and a bare ``SentenceTransformer`` can load it: the table,
    then only bias-free linear ``Dense`` layers (an int8-column scale), then ``Normalize``. The bias points along
    the empty-text row as those layers map it; the matrix's scale follows the largest row as they map it.
    """
    modules = list(model)
    first = modules[0] if modules else None
    fallback = getattr(first, "fallback", None)  # a StaticWordAverage's (not imported: it imports this module)
    if fallback is None:
        return None
    later = [module for module in modules[1:] if not is_empty_text_dense(module)]
    if not later or type(later[-1]) is not Normalize or not all(_is_linear(module) for module in later[:-1]):
        return None
    table = first.word_vectors.detach()
    row = table[fallback.sentinel_row].to("cpu", torch.float32)
    largest_norm = float(torch.linalg.vector_norm(table.float(), dim=1).max())
    for module in later[:-1]:
        weight = module.linear.weight.detach().to("cpu", torch.float32)
        row = weight @ row
        largest_norm *= float(torch.linalg.matrix_norm(weight, ord=2))
    if float(row.abs().max()) == 0.0:
        return None
    scale = empty_text_scale(largest_norm, int(row.shape[0]))
    return EmptyTextDense(empty_text_bias(row), scale).to(first.embedding.weight.device)


def empty_text_bias(row: torch.Tensor) -> torch.Tensor:
    """The bias for an empty-text ``row`` (as the layers after the table map it): its direction, with a largest entry
    of :data:`BIAS_LARGEST_ENTRY`."""
    row = row.to(torch.float32)
    return row * (BIAS_LARGEST_ENTRY / float(row.abs().max()))


def empty_text_scale(largest_norm: float, dim: int) -> float:
    """The matrix's scale: the largest power of two (from 1 to 2^14) that keeps both the largest mean
    (``largest_norm``, a table row's) and a tiny mean that a 16-bit ``StaticWordAverage`` scaled up (a largest entry
    below 2: :mod:`st_static.model.half_precision`) below :data:`LARGEST_SCALED_NORM`."""
    largest = max(largest_norm, 2.0 * math.sqrt(dim), 1e-30)
    return float(min(_LARGEST_SCALE, max(1.0, 2.0 ** math.floor(math.log2(LARGEST_SCALED_NORM / largest)))))


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


def attach_empty_text_dense(model: SentenceTransformer) -> SentenceTransformer:
    """Give ``model`` a fresh :class:`EmptyTextDense` before its final ``Normalize`` where it needs one (instead of
    any it had), so that any save of it, sentence-transformers' own included, writes the module; return ``model``."""
    return _place_empty_text_dense(model, empty_text_dense(model))


def _place_empty_text_dense(model: SentenceTransformer, dense: EmptyTextDense | None) -> SentenceTransformer:
    """``model`` with ``dense`` (``empty_text_dense(model)``, which reads every row's norm) before its final
    ``Normalize`` instead of any empty-text ``Dense`` it had; none when ``dense`` is ``None``."""
    held = [name for name, module in model._modules.items() if is_empty_text_dense(module)]
    names = [name for name in model._modules if name not in held]
    modules = {name: model._modules[name] for name in names}
    if dense is not None:
        modules = {name: modules[name] for name in names[:-1]}
        modules[held[0] if held else _free_name(names, "empty_text")] = dense
        modules[names[-1]] = model._modules[names[-1]]
    model._modules.clear()
    model._modules.update(modules)
    return model


def restore_empty_text_dense(model: SentenceTransformer, name: str) -> None:
    """Replace the empty text's ``Dense`` a load built (a plain, trainable ``Dense``) by an :class:`EmptyTextDense`
    in a model whose table has fallback rows; a model without fallback rows keeps any it has.

    A ``Dense`` in its place that is no longer a multiple of the identity plus a tiny bias was trained with the table (a
    fine-tune of a bare ``SentenceTransformer``): it is folded into the table (each row ``r`` becomes
    ``W r + b``; every text but ``""`` has at least the empty-text row, so each mean becomes ``W mean + b``, the
    vector the fine-tuned model gave to every text without a dropped token, which a bare ``StaticEmbedding`` counts
    in its mean and st-static does not). A folder saved without the module gets it back, with a warning.

    Raises:
        ModelFolderError: If the bias does not point along the empty-text row (the folder mixes two models).
    """
    if getattr(model[0], "fallback", None) is None:
        return
    trained = _trained_empty_text_dense(model)
    if trained is not None:
        _fold_into_table(model, trained, name)
    expected = empty_text_dense(model)
    found = False
    for module in list(model._modules.values()):
        if not is_empty_text_dense(module):
            continue
        found = True
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
    if expected is not None and not found and trained is None:
        logger.warning(
            "%s: the table has fallback rows but the folder has no empty-text Dense module before Normalize (it was "
            "saved without st-static's save, e.g. by save_pretrained of a model st-static did not return), so a "
            'bare SentenceTransformer gives "" the zero vector. st-static adds it back; re-save the model with '
            "st_static.save_model to write it.",
            name,
        )
    _place_empty_text_dense(model, expected)


def _trained_empty_text_dense(model: SentenceTransformer) -> str | None:
    """The name of a ``Dense`` in the empty text's place (just before the final ``Normalize``, with a bias, square,
    no activation) that is not a multiple of the identity plus a tiny bias, or ``None``."""
    names = list(model._modules)
    if len(names) < 3 or type(model._modules[names[-1]]) is not Normalize:
        return None
    module = model._modules[names[-2]]
    if not isinstance(module, Dense) or is_empty_text_dense(module) or len(names) != 3:
        return None
    square = module.in_features == module.out_features
    if not (module.bias and square and not module.use_residual and isinstance(module.activation_function, nn.Identity)):
        return None
    if module.module_input_name != "sentence_embedding" or module.module_output_name != "sentence_embedding":
        return None
    return names[-2]


def _fold_into_table(model: SentenceTransformer, key: str, name: str) -> None:
    first_key = next(iter(model._modules))
    first, dense = model._modules[first_key], model._modules[key]
    weight = dense.linear.weight.detach().to("cpu", torch.float32)
    bias = dense.linear.bias.detach().to("cpu", torch.float32)
    table = first.word_vectors.detach().to("cpu", torch.float32)
    rows = table @ weight.T + bias
    # the Dense scaled every mean (by the power of two of empty_text_scale, then as trained): the folded rows are
    # scaled back to the table's median row norm, which Normalize makes no difference to
    rows *= float(torch.linalg.vector_norm(table, dim=1).median()) / max(
        float(torch.linalg.vector_norm(rows, dim=1).median()), 1e-30
    )
    folded = type(first)(first.tokenizer, rows, metadata=first.metadata).to(first.embedding.weight.device)
    logger.warning(
        "%s: its empty-text Dense module was trained (a fine-tune of a bare SentenceTransformer trains it): folded "
        "into the table, which now gives the fine-tuned vectors. Re-save the model with st_static.save_model so "
        "that model2vec and a bare load read the same table. Fine-tune a model loaded with st_static.load_model, "
        "whose empty-text module no optimiser trains.",
        name,
    )
    model._modules[first_key] = folded
    del model._modules[key]
