"""Tensors leaving their device: the one place that turns a torch tensor into a numpy array.

``Tensor.numpy()`` refuses a tensor on ``cuda`` or ``mps`` (and one that needs grad), so code that reads a table a
model may hold on an accelerator goes through :func:`to_numpy`; ``tests/test_tensors.py`` checks that no other
module calls ``.numpy()``. :class:`TensorStamp` tells whether a tensor is still the one a cache was built from.
"""

from __future__ import annotations

import weakref

import numpy as np
import torch


def to_numpy(tensor: torch.Tensor, dtype: torch.dtype | None = None) -> np.ndarray:
    """``tensor`` as a numpy array, from any device: detached, moved to the CPU, then converted.

    A CPU tensor is not copied (the array shares its memory, as ``Tensor.numpy()`` does); a tensor on another device
    is copied to the CPU.

    Args:
        tensor: Any tensor.
        dtype: Convert to this dtype first (on the tensor's device), e.g. ``torch.float32`` for a bfloat16 tensor,
            which numpy cannot hold. ``None`` keeps the dtype.

    Returns:
        The array.
    """
    tensor = tensor.detach()
    if dtype is not None:
        tensor = tensor.to(dtype)
    return tensor.cpu().numpy()


class TensorStamp:
    """What a cache built from a tensor checks before it is reused: the same tensor object, on the same memory, not
    written in place since (its version counter, which every in-place operation on it or on a ``detach()``-ed view
    bumps: optimiser steps, ``load_state_dict``, ``weight[i] = ...`` under ``no_grad``).

    Writes through ``tensor.data`` keep the version counter, so a cache cannot see them; a model cast or moved
    (``.half()``, ``.to(device)``) changes the memory. The tensor is held by a weak reference only.

    Args:
        tensor: The tensor the cache is built from.
    """

    __slots__ = ("_pointer", "_tensor", "_version")

    def __init__(self, tensor: torch.Tensor) -> None:
        self._tensor = weakref.ref(tensor)
        self._version = tensor._version
        self._pointer = tensor.data_ptr()

    def matches(self, tensor: torch.Tensor | None) -> bool:
        """Whether ``tensor`` is the stamped tensor, unchanged (``None``, a tensor removed, never is)."""
        return (
            tensor is not None
            and self._tensor() is tensor
            and tensor._version == self._version
            and tensor.data_ptr() == self._pointer
        )
