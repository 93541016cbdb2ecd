"""A static table in 16 bits (``model.half()``, ``.to(torch.bfloat16)``): the fallback rows are 1e-3 and 1e-7 of a
word row, which float16 rounds to a few bits or to zero, and so are the means of texts that read nothing else (the
empty text, a lone emoji); ``Normalize`` then gives them another direction or NaN. :class:`StaticWordAverage` keeps
float32 copies of those rows while its table is in 16 bits (:func:`keep_float32_rows`), takes a 16-bit model's means
in float32 over them (:func:`float32_means`) and scales a tiny mean up by a power of two before the cast
(:func:`scaled_for_16_bits`): its direction, all that ``Normalize`` keeps, survives."""

from __future__ import annotations

import torch
from torch import nn

HALF_TINY_MEAN = 2.0**-7
"""A 16-bit model's mean whose largest component is below this is scaled up before it is cast to 16 bits."""

Float32Rows = tuple[torch.Tensor, torch.Tensor]
"""Token ids and their rows in float32."""


def keep_float32_rows(weight: torch.Tensor, token_rows: torch.Tensor, start: int, stop: int) -> Float32Rows | None:
    """The tokens whose rows are ``[start, stop)`` of the table (the fallback rows) and a float32 copy of their rows,
    or ``None`` when ``weight`` is not float32 (a copy kept from before stays the one to read)."""
    if weight.dtype != torch.float32:
        return None
    rows = token_rows.to(weight.device)
    tokens = torch.nonzero((rows >= start) & (rows < stop)).flatten()
    return tokens, weight.detach()[tokens].clone()


def after_cast(weight: torch.Tensor, kept: Float32Rows | None) -> Float32Rows | None:
    """What to keep after a move or cast of the table ``weight``: nothing in float32 (the rows put back as they were,
    so ``.half().float()`` gives them back), else the copy on the table's device."""
    if kept is None:
        return None
    tokens, rows = kept[0].to(weight.device), kept[1].to(weight.device)
    if weight.dtype == torch.float32:
        with torch.no_grad():
            weight[tokens] = rows
        return None
    return tokens, rows


def float32_means(
    input_ids: torch.Tensor,
    offsets: torch.Tensor,
    weight: torch.Tensor,
    kept: Float32Rows | None,
    padding_idx: int,
) -> torch.Tensor:
    """Each text's mean row of a 16-bit table, taken in float32 (a long text's sum overflows in 16 bits) over the
    float32 copies of the rows ``kept``, tiny means scaled up, cast back to the table's dtype."""
    full = weight.float()
    if kept is not None:
        full[kept[0]] = kept[1]
    means = nn.functional.embedding_bag(input_ids, full, offsets, mode="mean", padding_idx=padding_idx)
    return scaled_for_16_bits(means).to(weight.dtype)


def scaled_for_16_bits(means: torch.Tensor) -> torch.Tensor:
    """``means`` (float32) with each row whose largest component is below :data:`HALF_TINY_MEAN` scaled by a power of
    two to a largest component in ``[1, 2)``."""
    largest = means.abs().amax(dim=1, keepdim=True)
    tiny = (largest > 0) & (largest < HALF_TINY_MEAN)
    exponent = torch.floor(torch.log2(torch.where(tiny, largest, torch.ones_like(largest))))
    return torch.where(tiny, means * torch.exp2(-exponent), means)
