"""Fallback rows from the teacher: every text gets a unit vector, and a text with a known word keeps its own.

A word table gives a text without a known word (``""``, ``"?"``, ``"🙂"``, ``"東京"`` in an English table) the zero
vector, which clients turn into NaN scores or arbitrary search results. :func:`add_fallback_rows` gives the table
the rows of the fallback layout (:mod:`st_static.model.tokenization`):

* one row per *fallback character*: each single character the teacher's tokenizer has as a piece and the table
  has no row for (punctuation, symbols, letters of other scripts; not ASCII letters or digits), encoded alone by the
  teacher (``teacher.encode("?")``);
* the *empty-text row*: the teacher's vector of ``""`` (what the teacher gives a text with nothing in it), which
  every text reads once.

A ridge map fitted on vocabulary words (the teacher's vector of the word alone -> the word's row) carries those
vectors into the table's space, as completion does for missing words (:mod:`st_static.extraction.completion`).
The rows are then scaled down: a fallback character's to :data:`FALLBACK_CHARACTER_SCALE` times a word row's
norm (medians), the empty-text row to :data:`EMPTY_TEXT_SCALE` times it at most (float16 holds zero there:
:data:`EMPTY_TEXT_LARGEST_ENTRY`). Since a text's vector is the mean of its
rows, normalised:

* a text with a known word keeps its direction (its fallback rows weigh 1e-3 of a word's: a cosine change below
  1e-5 for ``"Hello, world!"``), so the table's scores do not move;
* a text with unknown characters only points where their rows do (``"東京"``, ``"Привет"``, ``"?"``);
* any other text (``""``, ``" "``, an unknown emoji) is the empty-text row.

The rule is a weighting, not a condition ("fallback rows count only when no word is known" is not expressible in
the Rust tokenizer that a bare sentence-transformers load and model2vec run: a tokenizer maps each piece on its
own, and ``StaticEmbedding`` averages every id it gets), so every path computes the same mean.
"""

from __future__ import annotations

import json
import logging
import os
import unicodedata
from typing import Any

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer

from st_static.compression.model_parts import float_pipeline, rebuild
from st_static.errors import StStaticError
from st_static.extraction.ridge import RidgeMap, mean_cosine
from st_static.model.metadata import FallbackRecord
from st_static.model.static_word_average import StaticWordAverage
from st_static.model.tokenization import (
    DROPPED,
    INFERENCE_FORM,
    add_fallback_layout,
    is_fallback_character,
    remove_fallback_layout,
    token_targets,
)
from st_static.settings import check_device
from st_static.teachers import strip_subword_markers
from st_static.tensors import to_numpy

logger = logging.getLogger(__name__)

FALLBACK_CHARACTER_SCALE = 1e-3
"""A fallback character's row norm (median) over a word row's (median)."""
EMPTY_TEXT_SCALE = 1e-7
"""The empty-text row's norm over a word row's (median), at most: its largest entry is at most
:data:`EMPTY_TEXT_LARGEST_ENTRY`."""
EMPTY_TEXT_LARGEST_ENTRY = 2.0**-26
"""The empty-text row's largest entry, at most: below half of float16's smallest step, so a bare
``SentenceTransformer(folder).half()`` holds zero there, and a text with nothing else (``" "``, an unknown emoji)
gets the empty text's ``Dense`` bias alone, which points the same way (:mod:`st_static.model.empty_text`), instead of
a row that float16 rounded to a step or two in a random direction."""
MIN_WORDS = 10
"""The fewest vocabulary words a table needs to map the teacher's space into it."""
FIT_WORDS = 5000
"""Vocabulary words (spread evenly over the rows) whose teacher vectors fit the map into the table's space."""


def teacher_characters(teacher_tokenizer: Tokenizer) -> list[str]:
    """The single characters the teacher's tokenizer has as pieces (``?``, ``東``, ``##п`` -> ``п``), by piece id.

    A byte-level tokenizer's pieces are bytes written as characters: only its printable ASCII ones are characters.
    """
    state = json.loads(teacher_tokenizer.to_str())
    byte_level = "ByteLevel" in json.dumps(state.get("pre_tokenizer")) or "ByteLevel" in json.dumps(
        state.get("decoder")
    )
    characters: dict[str, None] = {}
    for piece, _ in sorted(teacher_tokenizer.get_vocab(with_added_tokens=False).items(), key=lambda item: item[1]):
        character = strip_subword_markers(piece)
        if len(character) != 1 or (byte_level and not (character.isascii() and character.isprintable())):
            continue
        characters[character] = None
    return list(characters)


def fallback_characters(module: StaticWordAverage, teacher_tokenizer: Tokenizer) -> list[str]:
    """The characters that get a fallback row: the teacher's (:func:`teacher_characters`), as the table reads them
    (NFKC, lowercased for a lowercase table: U+FF1F is ``?``), that can have one (``is_fallback_character``) and do not
    already read a row of the table (a word, or a case variant of one)."""
    base = remove_fallback_layout(module.tokenizer)
    targets, _ = token_targets(base)
    vocab = base.get_vocab(with_added_tokens=False)
    chosen: dict[str, None] = {}
    for piece in teacher_characters(teacher_tokenizer):
        character = unicodedata.normalize(INFERENCE_FORM, piece.lower() if module.lowercase else piece)
        if not is_fallback_character(character, module.lowercase):
            continue
        if character in vocab and targets[vocab[character]] != DROPPED:
            continue
        chosen[character] = None
    return list(chosen)


def _load_recorded_teacher(
    teacher: str | os.PathLike[str] | None, module: StaticWordAverage, device: str | None
) -> SentenceTransformer:
    from st_static.extraction.teacher_model import load_given_or_recorded_teacher, load_teacher

    return load_given_or_recorded_teacher(
        teacher,
        module.metadata.teacher,
        lambda name: load_teacher(name, device=device),
        "the teacher it was distilled from",
    )


def fallback_rows(
    module: StaticWordAverage,
    teacher: SentenceTransformer,
    characters: list[str],
    *,
    prompt: str | None = None,
    fit_words: int = FIT_WORDS,
    batch_size: int = 256,
) -> tuple[np.ndarray, dict[str, Any]]:
    """The fallback rows of ``module``'s table: the empty-text row, then one row per character.

    Args:
        module: A float table (its fallback rows, if any, are ignored).
        teacher: The teacher the table was distilled from.
        characters: The fallback characters (:func:`fallback_characters`).
        prompt: The prompt the teacher reads texts with (the table's ``metadata.prompt``); ``None``: the teacher's
            default prompt, if any.
        fit_words: How many vocabulary words fit the map.
        batch_size: Texts per teacher batch.

    Returns:
        ``(rows, report)``: ``(1 + len(characters), dim)`` float32 rows and what was measured.

    Raises:
        FallbackRowsError: If the table has fewer than :data:`MIN_WORDS` vocabulary words to fit the map on.
    """
    words = module.vocabulary
    check_takes_fallback_rows(module, [])
    table = to_numpy(module.word_vectors.detach().float())[: len(words)]
    sample = np.unique(np.linspace(0, len(words) - 1, min(fit_words, len(words))).round().astype(np.int64))
    texts = [words[row] for row in sample] + ["", *characters]
    vectors = teacher.encode(texts, prompt=prompt, batch_size=batch_size, convert_to_numpy=True)
    source, target = vectors[: len(sample)].astype(np.float64), table[sample]

    order = np.random.default_rng(0).permutation(len(sample))
    test, train = order[: len(order) // 10], order[len(order) // 10 :]
    report: dict[str, Any] = {"characters": len(characters), "fitted_on": len(sample)}
    if len(test) >= 10:
        probe = RidgeMap.fit(source[train], target[train])
        report["held_out_cosine"] = mean_cosine(probe(source[test]), target[test])
    mapping = RidgeMap.fit(source, target)
    mapped = mapping(vectors[len(sample) :])

    word_norm = float(np.median(np.linalg.norm(table, axis=1)))
    report.update({"character_scale": FALLBACK_CHARACTER_SCALE, "empty_text_scale": EMPTY_TEXT_SCALE})
    return scale_fallback_rows(mapped[0], mapped[1:], word_norm), report


def scale_fallback_rows(empty: np.ndarray, characters: np.ndarray, word_norm: float) -> np.ndarray:
    """The empty-text row then the characters' rows (``dim`` and ``(count, dim)``, any scale), scaled against a word
    row of norm ``word_norm``: the characters' median norm to :data:`FALLBACK_CHARACTER_SCALE` times it, the empty
    text's to :data:`EMPTY_TEXT_SCALE` times it with a largest entry of at most :data:`EMPTY_TEXT_LARGEST_ENTRY`."""
    direction = empty / max(float(np.linalg.norm(empty)), 1e-30)
    largest_norm = EMPTY_TEXT_LARGEST_ENTRY / max(float(np.abs(direction).max()), 1e-30)
    rows = [direction[None, :] * min(EMPTY_TEXT_SCALE * word_norm, largest_norm)]
    if len(characters):
        character_norm = max(float(np.median(np.linalg.norm(characters, axis=1))), 1e-30)
        rows.append(characters * (FALLBACK_CHARACTER_SCALE * word_norm / character_norm))
    return np.concatenate(rows).astype(np.float32)


class FallbackRowsError(StStaticError, ValueError):
    """The model cannot take fallback rows as it is (too few words, or an unfolded ensemble whose members know
    different words)."""


def check_takes_fallback_rows(module: StaticWordAverage, rest: list[torch.nn.Module]) -> None:
    """Refuse a table of fewer than :data:`MIN_WORDS` vocabulary words (too few to map the teacher's space into it),
    and an unfolded ensemble in which a member lacks some of the table's words.

    Its ``BlockNormalize`` scales each member's block to unit length, so the tiny fallback rows would give a member
    that knows none of a text's words a vector at full weight (a text keeps its own vector only if every member
    knows one of its words). A folded ensemble (a plain table ending with ``Normalize``) takes them.

    Raises:
        FallbackRowsError: Naming the number of words, or the number a member lacks and the fix (fold the ensemble
            first).
    """
    if module.num_vocabulary_words < MIN_WORDS:
        raise FallbackRowsError(
            f"Fallback rows need at least {MIN_WORDS} vocabulary words to map the teacher's space, got "
            f"{module.num_vocabulary_words}."
        )
    block_dims = next((getattr(later, "block_dims", None) for later in rest if hasattr(later, "block_dims")), None)
    if block_dims is None:
        return
    words = module.word_vectors.detach()[: module.num_vocabulary_words].float().cpu()
    lacking = torch.zeros(words.shape[0], dtype=torch.bool)
    for block in torch.split(words, list(block_dims), dim=1):
        lacking |= block.abs().sum(dim=1) == 0
    if bool(lacking.any()):
        raise FallbackRowsError(
            f"fallback rows on an unfolded ensemble whose members know different words ({int(lacking.sum())} of "
            f"{len(words)} words are unknown to a member) would move texts with a known word: BlockNormalize gives "
            "a member that knows none of a text's words its fallback vector at full weight. Fold the ensemble first "
            "(st-static compress MEMBER... --fold-norms CORPUS, or st_static.compression.fold_block_normalization), "
            "then add fallback rows to the folded one."
        )


def add_fallback_rows(
    model: SentenceTransformer,
    teacher: SentenceTransformer | str | os.PathLike[str] | None = None,
    *,
    prompt: str | None = None,
    characters: list[str] | None = None,
    device: str | None = None,
) -> tuple[SentenceTransformer, dict[str, Any]]:
    """A copy of a static model with fallback rows: every text then gets a unit vector (see this module's docstring).

    Works on a built model folder as loaded (``st_static.load_model`` or a bare ``SentenceTransformer``) and at the
    end of a build; fallback rows the model already has are replaced. A compressed table comes back as float32
    (quantise afterwards). A text with a known word keeps its vector to within float rounding of the fallback rows'
    weight (1e-3 of a word's per unknown character).

    Args:
        model: A static ``SentenceTransformer``.
        teacher: The teacher the table was distilled from: a loaded model, or its Hub id or folder; default: the
            one the table records (``metadata.teacher``).
        prompt: The prompt the teacher reads texts with; ``None``: the one the table records (``metadata.prompt``),
            else the teacher's default.
        characters: The fallback characters; default: :func:`fallback_characters`.
        device: Where to load a teacher given by name.

    Returns:
        ``(model, report)``: the new model (``metadata.fallback`` records what was added) and the report.

    Raises:
        TeacherError: If no teacher is given and the table records none, or the teacher cannot be loaded.
        SettingsError: If ``device`` is not a torch device.
        FallbackRowsError: For a table of fewer than :data:`MIN_WORDS` words, or an unfolded ensemble whose members
            know different words (:func:`check_takes_fallback_rows`; checked before the teacher is loaded).
    """
    check_device(device)
    storage = getattr(getattr(model[0], "metadata", None), "quantization", None) if len(model) else None
    module, rest = float_pipeline(model)
    if storage not in (None, "float32"):
        logger.warning("The %s table comes back float32 with its fallback rows; quantise it again.", storage)
    check_takes_fallback_rows(module, rest)
    if not isinstance(teacher, SentenceTransformer):
        teacher = _load_recorded_teacher(teacher, module, device)
    teacher_tokenizer: Tokenizer = teacher[0].tokenizer._tokenizer
    if characters is None:
        characters = fallback_characters(module, teacher_tokenizer)
    if prompt is None:
        prompt = module.metadata.prompt
    rows, report = fallback_rows(module, teacher, characters, prompt=prompt or None)
    kept = module.fallback_start  # the words and the subword pieces
    table = torch.cat([module.word_vectors.detach()[:kept].float().cpu(), torch.from_numpy(rows)])
    tokenizer = add_fallback_layout(module.tokenizer, characters)
    metadata = module.metadata.updated(
        fallback=FallbackRecord(
            characters=len(characters),
            character_scale=FALLBACK_CHARACTER_SCALE,
            empty_text_scale=EMPTY_TEXT_SCALE,
            fitted_on=report["fitted_on"],
            held_out_cosine=report.get("held_out_cosine"),
        )
    )
    completed = StaticWordAverage(tokenizer, table, metadata=metadata)
    logger.info("Added fallback rows: the empty text's and %d characters'.", len(characters))
    return rebuild(model, [completed, *rest]), report
