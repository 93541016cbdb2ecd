"""The compiled fast path (the ``fast`` extra: ``pip install "st-static[fast]"``, numba): ASCII texts -> vectors in
one parallel pass, without a Python object per word.

:func:`compiled_vectors` is what :func:`st_static.encode` runs for a batch: the ASCII texts are joined into one
buffer of bytes and read by :func:`~st_static.model.compiled_kernels.texts_parallel` (words, look-ups in a hash table
built once per model (:class:`CompiledLookup`), the rows' mean and its normalisation, written into the output in
place), the other texts (anything NFKC or the Rust tokenizer's rules could read differently) by today's path, their
vectors put in their places. Without numba, for a table off the CPU or not in float32, or a tokenizer the ASCII
look-up does not reproduce, it gives ``None`` and the caller runs today's path.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from st_static.errors import MissingExtraError

if TYPE_CHECKING:
    from st_static.model.ascii_words import AsciiWordRows
    from st_static.model.static_word_average import StaticWordAverage

logger = logging.getLogger(__name__)

FAST_EXTRA = 'pip install "st-static[fast]"'
ENABLED = True
"""Whether :func:`compiled_vectors` runs the compiled loop (``benchmarks/serving.py`` turns it off for today's path)."""
MIN_TEXTS = 2
"""Smaller calls take today's path (one query: the ASCII look-up and numpy, a few microseconds), unless the one text
is longer than :data:`LONG_TEXT_CHARS`."""
LONG_TEXT_CHARS = 4096
PARALLEL_MIN_TEXTS = 64
"""Batches of fewer texts (and fewer than :data:`PARALLEL_MIN_CHARS` characters) run on the calling thread: waking
the other threads costs more than they save."""
PARALLEL_MIN_CHARS = 1 << 14
CHUNK_CHARS = 1 << 24
"""About the most characters joined into one buffer (a longer text is a buffer of its own)."""

_KERNELS: ModuleType | bool | None = False  # False: not imported yet; None: numba is missing
_PARALLEL = threading.Lock()
"""Held while a thread runs the parallel loop: another thread's call meanwhile runs on its own thread (numba's
workqueue threading layer aborts the process on concurrent parallel calls)."""
_FORKED = False
"""Whether this process was forked (``os.fork``, multiprocessing's fork start method): its loops run on its own thread
(GNU OpenMP, numba's ``omp`` layer, can hang in a forked child of a process that ran parallel regions)."""


def _after_fork() -> None:
    global _FORKED
    _FORKED = True


os.register_at_fork(after_in_child=_after_fork)


def load_kernels(required: bool = False) -> ModuleType | None:
    """:mod:`st_static.model.compiled_kernels` when numba is installed, else ``None``.

    Raises:
        MissingExtraError: With ``required``, if numba is not installed (the message names the extra), or cannot
            compile (``NUMBA_DISABLE_JIT``, no folder to cache in).
    """
    global _KERNELS
    if _KERNELS is False:
        try:
            kernels = importlib.import_module("st_static.model.compiled_kernels")
        except RuntimeError as error:  # numba found no writable folder for its cache: today's path, said once
            logger.warning("The compiled fast path is off (%s); st_static.encode uses the Python look-ups.", error)
            kernels = None
        usable = kernels is not None and kernels.NUMBA_MISSING is None and not kernels.JIT_DISABLED
        _KERNELS = kernels if usable else None
    if _KERNELS is None and required:
        raise MissingExtraError(f"The compiled fast path needs numba: {FAST_EXTRA}.")
    return _KERNELS  # type: ignore[return-value]


class CompiledLookup:
    """The ASCII look-up of a model as the compiled loop reads it: every key (the words, and the continuation pieces as
    ``##piece``) in an open-addressing hash table (:func:`~st_static.model.compiled_kernels.build_table`), the row of
    each byte (a letter or digit, a symbol's fallback row, nothing) and the rules' numbers.

    Args:
        ascii_rows: The model's :class:`~st_static.model.ascii_words.AsciiWordRows`.
        kernels: :mod:`st_static.model.compiled_kernels`.
    """

    def __init__(self, ascii_rows: AsciiWordRows, kernels: ModuleType) -> None:
        pieces = ((b"##" + piece, row) for piece, row in ascii_rows.continuations.items())
        keys = (*ascii_rows.word_rows.items(), *pieces)
        entries = [(key, row) for key, row in keys if len(key) <= kernels.LENGTH_MASK]  # longer: never a word
        lengths = np.fromiter((len(key) for key, _ in entries), dtype=np.int64, count=len(entries))
        key_starts = np.zeros(len(entries) + 1, dtype=np.int64)
        np.cumsum(lengths, out=key_starts[1:])
        self.keys = np.frombuffer(b"".join(key for key, _ in entries), dtype=np.uint8).copy()
        rows = np.fromiter((row for _, row in entries), dtype=np.int64, count=len(entries))
        capacity = 1 << max(4, (2 * len(entries) - 1).bit_length())  # at most half full
        self.slots, self.slot_keys = kernels.build_table(self.keys, key_starts, rows, capacity)
        self.byte_rows = np.full(256, -1, dtype=np.int64)
        for code in range(256):
            if chr(code).isascii() and chr(code).isalnum():
                self.byte_rows[code] = kernels.WORD_BYTE
        for symbol, row in ascii_rows.symbol_rows.items():
            self.byte_rows[ord(symbol)] = row
        self.lowercase = ascii_rows.lowercase
        self.dropped_row = ascii_rows.dropped_row
        self.sentinel_row = -1 if ascii_rows.sentinel_row is None else ascii_rows.sentinel_row
        self.rules = (
            ascii_rows.max_word_chars,
            ascii_rows.longest_word,
            ascii_rows.longest_continuation,
            int(ascii_rows.pieces_read_rows),
        )
        self._params: dict[tuple[int, bool], np.ndarray] = {}

    def params(self, words_end: int, normalize: bool) -> np.ndarray:
        """The loop's numbers (:data:`~st_static.model.compiled_kernels.PARAMS` of them) for these arguments."""
        params = self._params.get((words_end, normalize))
        if params is None:
            max_word, longest_word, longest_piece, pieces_read = self.rules
            params = np.array(
                [self.dropped_row, words_end, self.sentinel_row, max_word, longest_word, longest_piece, pieces_read,
                 int(normalize)],
                dtype=np.int64,
            )  # fmt: skip
            self._params[(words_end, normalize)] = params
        return params

    def encode(
        self,
        kernels: ModuleType,
        texts: Sequence[str],
        targets: np.ndarray,
        output: np.ndarray,
        table: np.ndarray,
        params: np.ndarray,
    ) -> None:
        """The vectors of the ASCII ``texts`` into ``output[targets]``, a buffer of at most about
        :data:`CHUNK_CHARS` characters at a time."""
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        ends = np.cumsum(lengths + 1)
        start = 0
        while start < len(texts):
            before = ends[start - 1] if start else 0
            stop = max(int(np.searchsorted(ends, before + CHUNK_CHARS, side="right")), start + 1)
            starts = np.empty(stop - start + 1, dtype=np.int64)
            starts[0] = 0
            starts[1:] = ends[start:stop] - before
            data = "\n".join(texts[start:stop]).encode("ascii")
            if self.lowercase:
                data = data.lower()  # ASCII letters only, as the tokenizer's lowercasing of ASCII text
            arrays = (np.frombuffer(data, dtype=np.uint8), starts, targets[start:stop], output, table)
            arrays += (self.slots, self.slot_keys, self.keys, self.byte_rows, params)
            large = stop - start >= PARALLEL_MIN_TEXTS or len(data) >= PARALLEL_MIN_CHARS
            parallel = large and not _FORKED and _PARALLEL.acquire(blocking=False)
            if parallel:
                try:
                    kernels.texts_parallel(*arrays)
                finally:
                    _PARALLEL.release()
            else:
                kernels.texts_serial(*arrays)
            start = stop


def compiled_lookup(ascii_rows: AsciiWordRows, kernels: ModuleType) -> CompiledLookup:
    """The :class:`CompiledLookup` of ``ascii_rows``, built on first use and kept with it (a copy or a pickle of the
    model drops it with the look-up it belongs to)."""
    lookup = ascii_rows.__dict__.get("_compiled")
    if lookup is None:
        lookup = ascii_rows._compiled = CompiledLookup(ascii_rows, kernels)
    return lookup


def compiled_vectors(
    module: StaticWordAverage,
    texts: list[str],
    normalize: bool,
    other_vectors: Callable[[list[str]], np.ndarray],
) -> np.ndarray | None:
    """Every text's vector, the ASCII texts' by the compiled loop, the others' by ``other_vectors`` (today's path);
    ``None`` when the compiled loop does not apply (see the module's docstring; fewer than :data:`MIN_TEXTS` short
    texts).

    Args:
        module: The model's table.
        texts: The texts (prompts already prepended).
        normalize: L2-normalise the means (else the plain mean, as :func:`st_static.encode`).
        other_vectors: Today's path: texts -> their ``(len(texts), dim)`` float32 vectors.
    """
    if not ENABLED or (len(texts) < MIN_TEXTS and not (texts and len(texts[0]) > LONG_TEXT_CHARS)):
        return None
    kernels = load_kernels()
    ascii_rows = module.word_rows.ascii
    if kernels is None or ascii_rows is None:
        return None
    table = module.numpy_table()
    if table is None:
        return None
    lookup = compiled_lookup(ascii_rows, kernels)
    output = np.empty((len(texts), table.shape[1]), dtype=np.float32)
    targets = np.arange(len(texts), dtype=np.int64)
    if not all(map(str.isascii, texts)):
        is_ascii = np.fromiter(map(str.isascii, texts), dtype=bool, count=len(texts))
        others = np.flatnonzero(~is_ascii)
        output[others] = other_vectors([texts[index] for index in others])
        targets = np.flatnonzero(is_ascii)
        texts = [texts[index] for index in targets]
    if len(texts):
        lookup.encode(kernels, texts, targets, output, table, lookup.params(module.fallback_start, normalize))
    return output
