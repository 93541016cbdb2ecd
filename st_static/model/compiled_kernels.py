"""The compiled loops of the fast path (the ``fast`` extra: numba): ASCII texts -> vectors in one pass, rows -> vectors.

Each text is read once: its bytes cut into words (runs of ``[A-Za-z0-9]``; the caller lowercases the bytes first
when the tokenizer lowercases), each word looked up as it is read in an open-addressing hash table (the 64-bit FNV-1a
hash of the key's bytes places it; its first 8 bytes, its length and the stored rest of a longer key verify it:
:func:`build_table`), an unknown word read as WordPiece reads it (its longest known prefix, then the greedy longest
continuation pieces ``##...``; nothing when it is too long or the pieces get stuck), the row of each ASCII symbol
with a fallback row and the empty-text row (the sentinel) added; the rows are summed into the text's row of the
output, which then holds their mean, L2-normalised or not: the rules of
:class:`~st_static.model.ascii_words.AsciiWordRows` and the arithmetic of :func:`st_static.encode`.

Plain functions under numba's ``njit``: ``cache=True`` (compiled on first use, then loaded from ``__pycache__`` in a
later process), ``nogil=True`` (other Python threads run meanwhile). Without numba this module still imports
(:data:`NUMBA_MISSING` holds the error) and nothing here is called: :mod:`st_static.model.compiled_rows` falls back to
today's path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

NUMBA_MISSING: ImportError | None = None
try:
    from numba import config, njit, prange
except ImportError as error:  # the fast extra is not installed: the plain functions stay, never called
    NUMBA_MISSING = error
    prange = range
    config = None

    def njit(*args: Any, **kwargs: Any) -> Callable[[Callable], Callable]:
        return lambda function: function


JIT_DISABLED = bool(config is not None and config.DISABLE_JIT)
"""``NUMBA_DISABLE_JIT=1``: these would run as plain Python, slower than today's path, which then runs instead."""
FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)
HASH_MASK = (1 << 64) - 1
CONTINUATION_BYTE = ord("#")
CONTINUATION_STATE = np.uint64(
    (((((0xCBF29CE484222325 ^ CONTINUATION_BYTE) * 0x100000001B3) & HASH_MASK) ^ CONTINUATION_BYTE) * 0x100000001B3)
    & HASH_MASK
)
"""The hash state after ``##``: a continuation piece is looked up as its vocabulary key ``##piece``."""
CONTINUATION_HEAD = CONTINUATION_BYTE | CONTINUATION_BYTE << 8
HEAD_BYTES = 8
LENGTH_BITS = 20
LENGTH_MASK = (1 << LENGTH_BITS) - 1
"""A key's length is at most this (keys: at most WordPiece's ``max_input_chars_per_word`` bytes)."""
EMPTY = -1
"""The second field of an empty slot."""
MISSING = -1
"""What a look-up of a key the table lacks gives (rows are >= 0)."""
WORD_BYTE = -2
"""``byte_rows`` of an ASCII letter or digit; ``-1``: a byte that reads nothing; ``>= 0``: a symbol's row."""

# params: what the loop reads besides the arrays
P_DROPPED, P_WORDS_END, P_SENTINEL, P_MAX_WORD, P_LONGEST_WORD, P_LONGEST_PIECE, P_PIECES_READ, P_NORMALIZE = range(8)
PARAMS = 8
NORM_EPSILON = 1e-12  # torch.nn.functional.normalize's default, as row_sums.NORM_EPSILON


@njit(cache=True, nogil=True)
def _key(data: np.ndarray, start: int, stop: int, piece: bool) -> tuple[int, int, int]:
    """``(hash, head, length)`` of the key ``data[start:stop]`` (``piece``: of ``##`` + it): its FNV-1a hash and its
    first 8 bytes (little-endian, zeros after a shorter key) as int64 bits, and its length in bytes."""
    value = CONTINUATION_STATE if piece else FNV_OFFSET
    head = np.uint64(CONTINUATION_HEAD if piece else 0)
    position = 2 if piece else 0
    for index in range(start, stop):
        byte = np.uint64(data[index])
        value = (value ^ byte) * FNV_PRIME
        if position < HEAD_BYTES:
            head |= byte << np.uint64(8 * position)
        position += 1
    return np.int64(value), np.int64(head), position


@njit(cache=True, nogil=True)
def build_table(keys: np.ndarray, key_starts: np.ndarray, rows: np.ndarray, capacity: int) -> tuple:
    """The hash table of the keys ``keys[key_starts[i]:key_starts[i + 1]]`` (distinct) -> ``rows[i]``.

    Returns:
        ``(slots, slot_keys)``: the ``(capacity, 2)`` int64 slots (``capacity`` a power of two), ``(head, row << 20 |
        length)`` (:func:`_key`; :data:`EMPTY` second for an empty slot), 16 bytes each, and where each slot's key
        starts in ``keys`` (read only for keys longer than their head).
    """
    slots = np.full((capacity, 2), EMPTY, dtype=np.int64)
    slot_keys = np.zeros(capacity, dtype=np.int64)
    mask = capacity - 1
    for index in range(rows.size):
        start, stop = key_starts[index], key_starts[index + 1]
        value, head, length = _key(keys, start, stop, False)
        slot = value & mask
        while slots[slot, 1] != EMPTY:
            slot = (slot + 1) & mask
        slots[slot, 0] = head
        slots[slot, 1] = (rows[index] << LENGTH_BITS) | length
        slot_keys[slot] = start
    return slots, slot_keys


@njit(cache=True, nogil=True)
def _probe(
    value: int, head: int, length: int, data: np.ndarray, tail: int, slots: np.ndarray, slot_keys: np.ndarray,
    keys: np.ndarray,
) -> int:  # fmt: skip
    """The row of the key whose hash, head and length are these, the bytes after its head being ``data[tail:]``, or
    :data:`MISSING`."""
    mask = slots.shape[0] - 1
    slot = value & mask
    while True:
        info = slots[slot, 1]
        if info == EMPTY:
            return MISSING
        if slots[slot, 0] == head and (info & LENGTH_MASK) == length:
            same = True
            key_start = slot_keys[slot] + HEAD_BYTES
            for offset in range(length - HEAD_BYTES):  # nothing for a key of at most 8 bytes
                if keys[key_start + offset] != data[tail + offset]:
                    same = False
                    break
            if same:
                return info >> LENGTH_BITS
        slot = (slot + 1) & mask


@njit(cache=True, nogil=True)
def _find(data: np.ndarray, start: int, stop: int, piece: bool, slots: np.ndarray, slot_keys: np.ndarray,
          keys: np.ndarray) -> int:  # fmt: skip
    """The row of the word ``data[start:stop]`` (``piece``: of the continuation ``##`` + it), or :data:`MISSING`."""
    value, head, length = _key(data, start, stop, piece)
    tail = start + HEAD_BYTES - (length - (stop - start))
    return _probe(value, head, length, data, tail, slots, slot_keys, keys)


@njit(cache=True, nogil=True)
def _take(row: int, out_row: np.ndarray, table: np.ndarray, params: np.ndarray) -> int:
    """Add ``row`` to ``out_row``: 0 when it reads nothing (dropped, none), 1 for a fallback row, 2 for a word's."""
    if row < 0 or row == params[P_DROPPED]:
        return 0
    vector = table[row]
    for column in range(out_row.size):
        out_row[column] += vector[column]
    return 2 if row < params[P_WORDS_END] else 1


@njit(cache=True, nogil=True)
def _pieces(
    data: np.ndarray, start: int, stop: int, add: bool, out_row: np.ndarray, table: np.ndarray, slots: np.ndarray,
    slot_keys: np.ndarray, keys: np.ndarray, params: np.ndarray,
) -> tuple[bool, int, int]:  # fmt: skip
    """WordPiece's greedy longest continuation pieces of ``data[start:stop]``: ``(cut, rows read, word rows read)``,
    the rows added to ``out_row`` when ``add``; ``cut`` is False when a position has no piece (the word then reads
    nothing)."""
    read = 0
    words = 0
    while start < stop:
        end = min(stop, start + params[P_LONGEST_PIECE])
        row = MISSING
        while end > start:
            row = _find(data, start, end, True, slots, slot_keys, keys)
            if row != MISSING:
                break
            end -= 1
        if row == MISSING:
            return False, read, words
        if add:
            kind = _take(row, out_row, table, params)
            read += kind > 0
            words += kind == 2
        start = end
    return True, read, words


@njit(cache=True, nogil=True)
def _unknown_word(
    data: np.ndarray, start: int, stop: int, out_row: np.ndarray, table: np.ndarray, slots: np.ndarray,
    slot_keys: np.ndarray, keys: np.ndarray, params: np.ndarray,
) -> tuple[int, int]:  # fmt: skip
    """Add the rows WordPiece gives the word ``data[start:stop]`` that is no key: its longest known prefix's and its
    pieces', or none (too long, no known prefix, pieces stuck); ``(rows read, word rows read)``."""
    if stop - start > params[P_MAX_WORD]:
        return 0, 0
    row = MISSING
    end = start + min(stop - start - 1, params[P_LONGEST_WORD])
    while end > start:
        row = _find(data, start, end, False, slots, slot_keys, keys)
        if row != MISSING:
            break
        end -= 1
    if row == MISSING:
        return 0, 0
    cut, _, _ = _pieces(data, end, stop, False, out_row, table, slots, slot_keys, keys, params)
    if not cut:
        return 0, 0
    kind = _take(row, out_row, table, params)
    read, words = np.int64(kind > 0), np.int64(kind == 2)
    if params[P_PIECES_READ]:
        _, more, more_words = _pieces(data, end, stop, True, out_row, table, slots, slot_keys, keys, params)
        read += more
        words += more_words
    return read, words


@njit(cache=True, nogil=True)
def _finish(out_row: np.ndarray, read: int, words: int, params: np.ndarray) -> None:
    """The sum of a text's rows -> its vector: the mean normalised (as ``Normalize`` after the mean), or the plain
    mean over the word rows (over every row read when it has none)."""
    if params[P_NORMALIZE]:
        if read > 0:
            out_row /= np.float32(read)
        total = 0.0
        for column in range(out_row.size):
            total += np.float64(out_row[column]) * np.float64(out_row[column])
        norm = max(np.sqrt(total), NORM_EPSILON)
        for column in range(out_row.size):
            out_row[column] = out_row[column] / norm
        return
    count = words if words > 0 else read
    if count > 0:
        out_row /= np.float32(count)


@njit(cache=True, nogil=True)
def _text(
    data: np.ndarray, start: int, stop: int, out_row: np.ndarray, table: np.ndarray, slots: np.ndarray,
    slot_keys: np.ndarray, keys: np.ndarray, byte_rows: np.ndarray, params: np.ndarray,
) -> None:  # fmt: skip
    """One text's vector into ``out_row``: one pass over its bytes, a word's hash and head taken as it is read."""
    out_row[:] = 0.0
    kind = _take(params[P_SENTINEL], out_row, table, params)
    read, words = np.int64(kind > 0), np.int64(kind == 2)
    index = start
    while index < stop:
        byte_row = byte_rows[data[index]]
        if byte_row != WORD_BYTE:
            kind = _take(byte_row, out_row, table, params)
            read += kind > 0
            words += kind == 2
            index += 1
            continue
        value = FNV_OFFSET
        head = np.uint64(0)
        end = index
        while end < stop and byte_rows[data[end]] == WORD_BYTE:
            byte = np.uint64(data[end])
            value = (value ^ byte) * FNV_PRIME
            if end - index < HEAD_BYTES:
                head |= byte << np.uint64(8 * (end - index))
            end += 1
        row = _probe(np.int64(value), np.int64(head), end - index, data, index + HEAD_BYTES, slots, slot_keys, keys)
        if row == MISSING:
            more, more_words = _unknown_word(data, index, end, out_row, table, slots, slot_keys, keys, params)
            read += more
            words += more_words
        else:
            kind = _take(row, out_row, table, params)
            read += kind > 0
            words += kind == 2
        index = end
    _finish(out_row, read, words, params)


@njit(cache=True, nogil=True, parallel=True)
def texts_parallel(
    data: np.ndarray, starts: np.ndarray, targets: np.ndarray, out: np.ndarray, table: np.ndarray, slots: np.ndarray,
    slot_keys: np.ndarray, keys: np.ndarray, byte_rows: np.ndarray, params: np.ndarray,
) -> None:  # fmt: skip
    """The vectors of the texts ``data[starts[i]:starts[i + 1] - 1]`` into ``out[targets[i]]``, texts spread over the
    threads (numba's ``prange``)."""
    for index in prange(targets.size):
        out_row = out[targets[index]]
        _text(data, starts[index], starts[index + 1] - 1, out_row, table, slots, slot_keys, keys, byte_rows, params)


@njit(cache=True, nogil=True)
def texts_serial(
    data: np.ndarray, starts: np.ndarray, targets: np.ndarray, out: np.ndarray, table: np.ndarray, slots: np.ndarray,
    slot_keys: np.ndarray, keys: np.ndarray, byte_rows: np.ndarray, params: np.ndarray,
) -> None:  # fmt: skip
    """:func:`texts_parallel` on the calling thread (small batches; a call while another thread runs the parallel
    loop)."""
    for index in range(targets.size):
        out_row = out[targets[index]]
        _text(data, starts[index], starts[index + 1] - 1, out_row, table, slots, slot_keys, keys, byte_rows, params)


@njit(cache=True, nogil=True, parallel=True)
def rows_parallel(
    rows: np.ndarray, offsets: np.ndarray, out: np.ndarray, table: np.ndarray, params: np.ndarray
) -> None:
    """Tokenization already done: text ``i``'s vector from ``rows[offsets[i]:offsets[i + 1]]`` into ``out[i]``, the
    same sums and means as :func:`texts_parallel` (the limit of the loop: ``benchmarks/serving.py``'s rows only)."""
    for index in prange(offsets.size - 1):
        out_row = out[index]
        out_row[:] = 0.0
        read = 0
        words = 0
        for position in range(offsets[index], offsets[index + 1]):
            kind = _take(rows[position], out_row, table, params)
            read += kind > 0
            words += kind == 2
        _finish(out_row, read, words, params)
