"""Tensors leaving their device: the one place that turns a torch tensor into a numpy array.

``Tensor.numpy()`` refuses a tensor on ``cuda`` or ``mps`` (and one that needs grad), so code that reads a table a
model may hold on an accelerator goes through :func:`to_numpy`; ``tests/test_tensors.py`` checks that no other
module calls ``.numpy()``.
"""

from __future__ import annotations

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
