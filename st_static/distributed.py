"""Several processes under ``torchrun``: which one this is, and waiting for each other. One process is a no-op.

The first process (rank 0) writes every folder; the others compute their share (the teacher pass is sharded, the
refinement runs as DDP through the trainer) and wait for it at :func:`barrier`.
"""

from __future__ import annotations

import atexit
import os

import torch


def launched_processes() -> int:
    """How many processes ``torchrun`` started (1 without torchrun)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_first_process() -> bool:
    """Whether this is the process that writes (rank 0 under torchrun, or the only one); needs no process group."""
    return int(os.environ.get("RANK", "0")) == 0


def process_rank() -> tuple[int, int]:
    """``(rank, world_size)``, initialising a gloo/nccl process group when launched by torchrun."""
    if launched_processes() <= 1:
        return 0, 1
    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group(backend=process_group_backend())
        # A process group left to the interpreter's teardown can abort the process ("terminate called without
        # an active exception") while its peer exits; close it explicitly instead.
        atexit.register(_close_process_group)
    return torch.distributed.get_rank(), torch.distributed.get_world_size()


def process_group_backend() -> str:
    """The process group's backends: gloo for CPU tensors (the teacher pass sums its counts on the CPU, which nccl
    alone refuses), nccl for CUDA tensors where there are GPUs."""
    return "cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo"


def process_device(device: str | None) -> str | None:
    """The device for this process: ``device`` itself, or under torchrun with GPUs its own ``cuda:LOCAL_RANK``."""
    if device is None and launched_processes() > 1 and torch.cuda.is_available():
        return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    return device


def barrier() -> None:
    """Wait until every process gets here (nothing to wait for in a single process)."""
    if process_rank()[1] > 1:
        torch.distributed.barrier()


def _close_process_group() -> None:
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
