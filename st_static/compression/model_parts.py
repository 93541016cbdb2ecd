"""Taking a static model apart into its float table and the modules after it, and putting it back together."""

from __future__ import annotations

import logging

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Dense
from sentence_transformers.sentence_transformer.modules import StaticEmbedding
from torch import nn

from st_static.model.empty_text import attach_empty_text_dense, is_empty_text_dense
from st_static.model.static_word_average import StaticWordAverage

logger = logging.getLogger(__name__)


def is_linear_dense(module: nn.Module) -> bool:
    """Whether ``module`` is a ``Dense`` that is a plain matrix product (no bias, identity activation)."""
    return (
        isinstance(module, Dense)
        and not module.bias
        and not module.use_residual
        and isinstance(module.activation_function, nn.Identity)
        and module.module_input_name == "sentence_embedding"
        and module.module_output_name == "sentence_embedding"
    )


def float_pipeline(model: SentenceTransformer) -> tuple[StaticWordAverage, list[nn.Module]]:
    """Split a static model into a float32 :class:`StaticWordAverage` and the modules that follow it.

    Linear ``Dense`` layers directly after the table (the column scale of the int8-column format, or any other
    bias-free linear map) are folded into the table: the mean of rows followed by a matrix product equals the
    mean of the transformed rows. The empty text's ``Dense`` (:mod:`st_static.model.empty_text`) is left out:
    :func:`rebuild` adds a fresh one. Compressed tables come back dequantised (``metadata.quantization`` cleared).

    Args:
        model: A ``SentenceTransformer`` whose first module is a static embedding.

    Returns:
        ``(module, rest)``: a new float32 module (the input model is left untouched) and the remaining modules.

    Raises:
        TypeError: If ``model`` is not a ``SentenceTransformer`` starting with a static embedding.
    """
    if not isinstance(model, SentenceTransformer):
        raise TypeError(f"Expected a SentenceTransformer, got {type(model).__name__}.")
    modules = list(model)
    first = modules[0] if modules else None
    if not isinstance(first, StaticEmbedding):
        raise TypeError(f"Expected a static model (StaticEmbedding first), got {type(first).__name__}.")
    if isinstance(first, StaticWordAverage):
        first.sync_token_rows()
        module = StaticWordAverage(first.tokenizer, first.word_vectors.detach().cpu().clone(), metadata=first.metadata)
    else:
        module = StaticWordAverage.from_static_embedding(first)
    module.metadata.quantization = None  # a float32 table now: a save must not call it compressed
    rest = [later for later in modules[1:] if not is_empty_text_dense(later)]  # rebuild adds it back
    table = module.word_vectors.detach()
    folded = 0
    while rest and is_linear_dense(rest[0]):
        table = table @ rest.pop(0).linear.weight.detach().cpu().float().T
        folded += 1
    if folded:
        logger.debug("Folded %d linear Dense module(s) into the table.", folded)
        module = StaticWordAverage(module.tokenizer, table, metadata=module.metadata)
    return module, rest


def rebuild(model: SentenceTransformer, modules: list[nn.Module]) -> SentenceTransformer:
    """A new ``SentenceTransformer`` made of ``modules``, keeping ``model``'s prompts and similarity settings, with
    the empty text's ``Dense`` where the table needs one (:mod:`st_static.model.empty_text`)."""
    rebuilt = SentenceTransformer(
        modules=modules,
        device=str(model.device),
        prompts=dict(model.prompts),
        default_prompt_name=model.default_prompt_name,
        similarity_fn_name=model.similarity_fn_name,
        truncate_dim=model.truncate_dim,
    )
    return attach_empty_text_dense(rebuilt)


def to_float32(model: SentenceTransformer) -> SentenceTransformer:
    """The float32 equivalent of a (possibly compressed) static model, with any linear ``Dense`` folded away."""
    module, rest = float_pipeline(model)
    return rebuild(model, [module, *rest])


def column_scale_dense(column_scale: torch.Tensor) -> Dense:
    """The ``Dense`` layer that multiplies each dimension by its scale: a diagonal matrix, no bias."""
    dim = column_scale.shape[0]
    return Dense(
        dim,
        dim,
        bias=False,
        activation_function=nn.Identity(),
        init_weight=torch.diag(column_scale.detach().to(torch.float32)),
    )
