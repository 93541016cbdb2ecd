"""Rows for subword pieces: what a word the table lacks reads after its longest known prefix.

The word tokenizer gives an unknown word the row of its longest known prefix, and WordPiece cuts the rest into
continuation pieces (``misspeling`` -> ``miss`` ``##pel`` ``##ing``). Without piece rows those pieces read nothing,
so ``doomscrolling`` reads ``doom`` and ``zelenskyy`` reads ``ze``. :func:`add_piece_rows` gives the pieces rows in
the table's own space, with no teacher pass: every vocabulary word, cut as if it were unknown (its longest *other*
known prefix, then pieces), is an equation ``row(prefix) + sum(rows of its pieces) = row(word)``, and the piece rows
are the ridge least-squares solution of all of them (a sparse problem with one unknown row per piece). A sentence
is the normalised sum of its rows, so an unknown word then adds what its pieces predict the word's row to be.

The pieces are the teacher's own continuation tokens (``##ing``; SentencePiece and byte-level pieces that do not
start a word) as the table reads them, plus every single letter or digit of the vocabulary, so that any word of
those characters is cut into pieces to the end. Known words are matched whole and keep exactly their rows.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy import sparse
from scipy.sparse.linalg import splu
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer, models

from st_static.compression.model_parts import float_pipeline, rebuild
from st_static.errors import StStaticError
from st_static.extraction.ridge import mean_cosine
from st_static.model.languages import is_spaceless_token
from st_static.model.metadata import PiecesRecord
from st_static.model.static_word_average import StaticWordAverage
from st_static.model.tokenization import (
    CONTINUATION_PREFIX,
    DROPPED,
    INFERENCE_FORM,
    UNKNOWN_TOKEN,
    add_piece_layout,
    is_piece,
    remove_piece_layout,
    token_targets,
)
from st_static.tensors import to_numpy

logger = logging.getLogger(__name__)

MAX_PIECE_CHARS = 12
"""Longer continuation tokens of the teacher are left out (they are whole words in all but name)."""
PIECES_VERSION = 4
"""Bumped when the pieces a fit keeps change (2: a SentencePiece teacher's pieces; a piece no word uses is dropped;
3: pieces NFKC changes, which the fallback layout never reads, are left out; 4: the finished table's layout cuts
long runs with :data:`~st_static.model.tokenization.INFERENCE_CHUNK_PATTERN`)."""
RIDGE = 1.0
"""The ridge penalty on the piece rows, relative to one equation per vocabulary word (chosen on held-out words)."""
HELD_OUT = 0.05
"""The share of the vocabulary held out to report how well the pieces predict a word's row."""
MIN_WORDS = 10
"""The fewest vocabulary words a table needs for its piece rows to be fitted."""
_WORD_START_MARKERS = ("\u2581", "\u0120")  # SentencePiece's "▁", byte-level BPE's "Ġ"


class PiecesError(StStaticError, ValueError):
    """The table cannot take piece rows (too few vocabulary words to fit them on)."""


def is_word_piece(tokenizer: Tokenizer) -> bool:
    """Whether ``tokenizer`` is a WordPiece tokenizer (continuations marked, ``##ing``), not SentencePiece or BPE."""
    return isinstance(tokenizer.model, models.WordPiece)


def teacher_pieces(teacher_tokenizer: Tokenizer, lowercase: bool) -> list[str]:
    """The teacher's continuation tokens as the table reads them (NFKC, lowercased for a lowercase table).

    WordPiece tokens that start with ``##``; for SentencePiece and byte-level vocabularies, the tokens that do not
    start a word (no ``▁`` / ``Ġ``). Tokens that cannot be pieces (:func:`is_piece`) or are longer than
    :data:`MAX_PIECE_CHARS` are left out.
    """
    vocab = teacher_tokenizer.get_vocab(with_added_tokens=False)
    # The model says whether continuations are marked: a SentencePiece vocabulary holds tokens such as "###" too.
    prefix = teacher_tokenizer.model.continuing_subword_prefix if is_word_piece(teacher_tokenizer) else None
    pieces: dict[str, None] = {}
    for token, _ in sorted(vocab.items(), key=lambda item: item[1]):
        if prefix is not None:
            if not token.startswith(prefix) or len(token) == len(prefix):
                continue
            piece = token[len(prefix) :]
        elif token.startswith(_WORD_START_MARKERS) or token.startswith("<") or token.startswith("["):
            continue
        else:
            piece = token
        piece = unicodedata.normalize(INFERENCE_FORM, piece.lower() if lowercase else piece)
        if len(piece) <= MAX_PIECE_CHARS and is_piece(piece, lowercase) and not is_spaceless_token(piece):
            pieces[piece] = None
    return list(pieces)


def candidate_pieces(module: StaticWordAverage, teacher_tokenizer: Tokenizer | None = None) -> list[str]:
    """The pieces to give rows: the teacher's continuation tokens (:func:`teacher_pieces`), then every single
    letter or digit of the vocabulary words (outside scripts without spaces), so every such word is cut to its end."""
    chosen: dict[str, None] = {}
    if teacher_tokenizer is not None:
        chosen.update(dict.fromkeys(teacher_pieces(teacher_tokenizer, module.lowercase)))
    characters = sorted({character for word in module.vocabulary for character in word})
    for character in characters:
        if is_piece(character, module.lowercase) and not is_spaceless_token(character):
            chosen.setdefault(character, None)
    return list(chosen)


@dataclass(frozen=True)
class _Cut:
    """A word cut as WordPiece cuts an unknown word: its prefix's row and the indices of its pieces."""

    prefix_row: int
    pieces: list[int]


class _Cutter:
    """Cuts words as the word tokenizer with ``pieces`` would cut them if they were unknown."""

    def __init__(self, tokenizer: Tokenizer, pieces: Sequence[str]) -> None:
        base = remove_piece_layout(tokenizer)
        targets, num_words = token_targets(base)
        vocab = base.get_vocab(with_added_tokens=False)
        self.dropped = num_words
        self.starts: dict[str, int] = {}
        continuations: dict[str, int] = {}
        for token, token_id in vocab.items():
            if token == UNKNOWN_TOKEN:
                continue
            if token.startswith(CONTINUATION_PREFIX):
                continuations[token[len(CONTINUATION_PREFIX) :]] = -1
            else:
                row = int(targets[token_id])
                self.starts[token] = num_words if row == DROPPED else row
        for index, piece in enumerate(pieces):
            continuations[piece] = index
        self.continuations = continuations
        self.longest_start = max(map(len, self.starts), default=0)
        self.longest_piece = max(map(len, continuations), default=0)

    def cut(self, word: str) -> _Cut | None:
        """``word`` cut by its longest known prefix other than itself and greedy pieces, or ``None`` if WordPiece
        would make it unknown (no prefix, or a rest no continuation covers)."""
        for end in range(min(len(word) - 1, self.longest_start), 0, -1):
            row = self.starts.get(word[:end])
            if row is None:
                continue
            pieces: list[int] = []
            start = end
            while start < len(word):
                for stop in range(min(len(word), start + self.longest_piece), start, -1):
                    index = self.continuations.get(word[start:stop])
                    if index is not None:
                        if index >= 0:
                            pieces.append(index)
                        start = stop
                        break
                else:
                    return None
            return _Cut(row, pieces)
        return None


def fit_piece_rows(
    table: np.ndarray,
    cuts: list[_Cut | None],
    num_pieces: int,
    ridge: float = RIDGE,
    held_out: float = HELD_OUT,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Solve for the piece rows: ``table[prefix] + sum(pieces) ~ table[word]`` for every word with a cut.

    Args:
        table: The float table; rows ``[0, len(cuts))`` are the words, ``table[cut.prefix_row]`` a prefix's row
            (the ``len(table)``-th, dropped, row counts as zero).
        cuts: Each word's cut (:class:`_Cutter`), ``None`` for a word that has none.
        num_pieces: The number of pieces (columns of the problem).
        ridge: The ridge penalty.
        held_out: The share of the words held out for the report (fitted on all of them afterwards).
        seed: Chooses the held-out words.

    Returns:
        ``(rows, uses, report)``: ``(num_pieces, dim)`` float32 piece rows (zero for a piece no word uses), how many
        words' cuts use each piece, and the held-out words' mean cosine to their rows with the prefix alone and with
        the pieces.
    """
    padded = np.concatenate([table, np.zeros((1, table.shape[1]), dtype=table.dtype)]).astype(np.float64)
    words = np.array([index for index, cut in enumerate(cuts) if cut is not None and cut.pieces], dtype=np.int64)
    prefix_rows = np.array([cuts[index].prefix_row for index in words], dtype=np.int64)  # type: ignore[union-attr]
    columns = [cuts[index].pieces for index in words]  # type: ignore[union-attr]
    lengths = np.fromiter(map(len, columns), dtype=np.int64, count=len(columns))
    design = sparse.csr_matrix(
        (np.ones(int(lengths.sum())), np.concatenate(columns), np.concatenate([[0], np.cumsum(lengths)])),
        shape=(len(words), num_pieces),
    )
    residuals = padded[words] - padded[prefix_rows]

    def solve(rows: np.ndarray) -> np.ndarray:
        part = design[rows]
        normal = (part.T @ part + ridge * sparse.identity(num_pieces)).tocsc()
        return splu(normal).solve(np.asarray(part.T @ residuals[rows]))

    order = np.random.default_rng(seed).permutation(len(words))
    test, train = order[: int(len(order) * held_out)], order[int(len(order) * held_out) :]
    report: dict[str, Any] = {"fitted_on": len(words)}
    if len(test) >= 10:
        probe = solve(train)
        predicted = padded[prefix_rows[test]] + design[test] @ probe
        report["held_out_cosine_prefix"] = mean_cosine(padded[prefix_rows[test]], padded[words[test]])
        report["held_out_cosine"] = mean_cosine(predicted, padded[words[test]])
    rows = solve(np.arange(len(words))) if len(words) else np.zeros((num_pieces, table.shape[1]))
    uses = np.asarray(design.sum(axis=0)).ravel().astype(np.int64)
    return rows.astype(np.float32), uses, report


def piece_rows(
    module: StaticWordAverage, pieces: Sequence[str], ridge: float = RIDGE
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The rows of ``pieces`` for ``module``'s table (:func:`fit_piece_rows` over its vocabulary)."""
    cutter = _Cutter(module.tokenizer, pieces)
    words = module.vocabulary
    table = to_numpy(module.word_vectors.detach().float())
    # The cuts' prefix rows index the table without its piece rows (the layout the cutter reads).
    without_pieces = np.delete(table, module.piece_rows, axis=0)
    cuts = [cutter.cut(word) for word in words]
    return fit_piece_rows(without_pieces, cuts, len(pieces), ridge=ridge)


def add_piece_rows(
    model: SentenceTransformer,
    teacher_tokenizer: Tokenizer | None = None,
    *,
    pieces: Sequence[str] | None = None,
    ridge: float = RIDGE,
) -> tuple[SentenceTransformer, dict[str, Any]]:
    """A copy of a static model whose unknown words read subword pieces (see this module's docstring).

    Works on a built model folder as loaded and at the end of a build; piece rows the model already has are
    replaced. Known words, fallback rows and every text without an unknown word keep their vectors exactly.
    A compressed table comes back as float32 (quantise afterwards).

    Args:
        model: A static ``SentenceTransformer``.
        teacher_tokenizer: The teacher's tokenizer, whose continuation tokens become pieces; ``None``: single
            letters and digits only.
        pieces: The candidate pieces (without ``##``); default: :func:`candidate_pieces`. Those no vocabulary
            word's cut uses get no row.
        ridge: The ridge penalty of the fit.

    Returns:
        ``(model, report)``: the new model (``metadata.pieces`` records what was added) and the fit's report
        (``candidates``, ``pieces`` kept, ``fitted_on`` and the held-out cosines).

    Raises:
        PiecesError: If the table has fewer than :data:`MIN_WORDS` vocabulary words.
    """
    module, rest = float_pipeline(model)
    if module.num_vocabulary_words < MIN_WORDS:
        raise PiecesError(
            f"Piece rows need at least {MIN_WORDS} vocabulary words to fit, got {module.num_vocabulary_words}."
        )
    if pieces is None:
        pieces = candidate_pieces(module, teacher_tokenizer)
    candidates = list(pieces)
    rows, uses, report = piece_rows(module, candidates, ridge=ridge)
    # A piece no word's cut uses would keep a zero row that reads nothing where shorter pieces read something.
    # Dropping it changes no cut (the greedy match never chose it) and no other row (its column is independent).
    used = np.flatnonzero(uses > 0)
    pieces, rows = [candidates[index] for index in used], rows[used]
    report.update(candidates=len(candidates), pieces=len(pieces))
    vectors = module.word_vectors.detach().float().cpu()
    words = module.num_vocabulary_words
    fallback = vectors[module.fallback_start :]
    table = torch.cat([vectors[:words], torch.from_numpy(rows), fallback])
    tokenizer = add_piece_layout(module.tokenizer, pieces)
    metadata = module.metadata.updated(
        pieces=PiecesRecord(
            pieces=len(pieces),
            used=len(pieces),
            fitted_on=report["fitted_on"],
            ridge=ridge,
            held_out_cosine_prefix=report.get("held_out_cosine_prefix"),
            held_out_cosine=report.get("held_out_cosine"),
        )
    )
    logger.info("Added %d piece rows, fitted on %d words.", len(pieces), report["fitted_on"])
    return rebuild(model, [StaticWordAverage(tokenizer, table, metadata=metadata), *rest]), report
