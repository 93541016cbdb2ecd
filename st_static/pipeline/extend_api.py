"""``st_static.extend``: a finished table with rows for the words of a user's documents that it lacks.

The documents are checked and their words counted before the teacher is loaded; the new rows come from
:mod:`st_static.extraction.extend` and go after the table's words, before its fallback rows
and its subword pieces (:meth:`~st_static.model.static_word_average.StaticWordAverage.with_words`), so every row
the table had keeps its values bit for bit and every known word reads what it read before.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from st_static.extraction.corpus import (
    CorpusError,
    CorpusSource,
    check_corpus,
    check_corpus_language,
    corpus_files,
    corpus_name,
    corpus_paths,
    iter_sentences,
)
from st_static.model.metadata import ExtendRecord
from st_static.settings import ExtractionSettings
from st_static.teachers import TeacherError, default_prompt, is_repo_id

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from st_static.extraction.extend import NormChoice

logger = logging.getLogger(__name__)

EXTEND_STAGE = "extend"
LANGUAGE_ADVICE = (
    "the table splits words as {language_name} does, and extend keeps a table's language: give documents in "
    "{language_name} (--corpus), or extend a table built for {guess_name} (st-static build --languages {guess})."
)
"""What a refused language tells the user of ``extend``, which has no ``--languages``: the table decides it."""


def documents_source(corpus: CorpusSource | Sequence[str | os.PathLike[str]]) -> CorpusSource:
    """The corpus source of ``corpus``: a file, a sequence of ``Path`` objects (several files read as one), texts
    (a list of str, a ``datasets.Dataset``) as they are."""
    if isinstance(corpus, Sequence) and corpus and all(isinstance(item, os.PathLike) for item in corpus):
        return corpus_files(list(corpus))
    return corpus


def document_files(source: CorpusSource) -> list[str]:
    """How the extend record names the documents: their file names (never paths), else the in-memory description."""
    paths = corpus_paths(source)
    return [path.name for path in paths] if paths else [corpus_name(source)]


def extend(
    model: SentenceTransformer,
    corpus: CorpusSource | Sequence[str | os.PathLike[str]],
    teacher: SentenceTransformer | str | os.PathLike[str] | None = None,
    min_count: int = 2,
    *,
    numbers: bool = False,
    sentences_per_word: int | None = None,
    norm: NormChoice = "rare",
    device: str | None = None,
    teacher_precision: str = "auto",
) -> SentenceTransformer:
    """A copy of a static model with rows for the words of ``corpus`` that its table lacks.

    The teacher reads the documents' sentences holding each new word (the extraction stage's method), and a map
    fitted on the table's own words found there carries the vectors into the table
    (:mod:`st_static.extraction.extend`). Every row the table had keeps its value bit for bit; piece and fallback rows
    stay, after the new words. A float16 table stays float16; other compressed tables come back as float32 (quantise
    again). ``metadata.extend`` records what was added, and the model card says it.

    Args:
        model: A static ``SentenceTransformer`` (``st_static.load_model`` or a bare load of a saved table).
        corpus: The documents: a UTF-8 text file (one document per line), several files (a sequence of
            ``pathlib.Path``), a list of str, or a ``datasets.Dataset`` with a ``text`` column.
        teacher: The teacher the table was distilled from: a loaded model, a Hub id or a folder; default: the one
            the table records (``metadata.teacher``).
        min_count: The fewest occurrences in the documents that give a word a row.
        numbers: Also add words made of digits only.
        sentences_per_word: The shortest sentences the teacher reads per new word; default: the table's build's.
        norm: How the new rows are scaled (:data:`st_static.extraction.extend.NORM_CHOICES`).
        device: Where to load a teacher given by name.
        teacher_precision: The teacher's number format (``auto``: bfloat16 where the hardware computes it natively).

    Returns:
        The extended model.

    Raises:
        CorpusError: If the documents are missing, empty, not UTF-8 text, or hold no word the table lacks that
            occurs ``min_count`` times (all checked before the teacher is loaded).
        TeacherError: If no teacher is given and the table records none, or it cannot be loaded.
    """
    from sentence_transformers import SentenceTransformer

    from st_static.compression.model_parts import float_pipeline, rebuild
    from st_static.compression.quantization import CompactStaticWordAverage, quantize_table
    from st_static.extraction.extend import count_document_words, document_sentences, document_words, new_word_rows
    from st_static.model.tokenization import normalization_form

    module, rest = float_pipeline(model)  # a float32 copy: the input's storage is read from the input itself
    first = model[0]
    storage = getattr(first, "storage", None) or getattr(getattr(first, "metadata", None), "quantization", None)
    metadata = module.metadata
    source = documents_source(corpus)
    name = corpus_name(source)
    check_corpus(source, name=name, min_sentences=1)
    if metadata.languages and len(metadata.languages) == 1:
        check_corpus_language(source, metadata.languages[0], name, advice=LANGUAGE_ADVICE)
    texts = list(iter_sentences(source))
    counts = count_document_words(texts, module.lowercase, form=normalization_form(module.tokenizer))
    words = document_words(module, counts, min_count=min_count, numbers=numbers)
    if not words.new:
        raise CorpusError(
            f"{name}: every word seen {min_count} or more times is in the table already (or is a number: see "
            "numbers); nothing to add. Give more documents, or a lower min_count."
        )
    logger.info("%d words of %s are new to the table (e.g. %s).", len(words.new), name, ", ".join(words.new[:5]))

    teacher_name = None if isinstance(teacher, SentenceTransformer) else (teacher or metadata.teacher)
    if teacher_name is None and not isinstance(teacher, SentenceTransformer):
        raise TeacherError(
            "The table records no teacher (metadata.teacher); give the teacher it was distilled from with --teacher "
            "(teacher= in st_static.extend): its Hub id, alias or folder."
        )
    prompt = metadata.prompt
    if prompt is None:
        prompt = default_prompt(teacher_name) if teacher_name is not None else ""
    loaded = (
        teacher
        if isinstance(teacher, SentenceTransformer)
        else _load_teacher(teacher_name, teacher, device, teacher_precision)
    )
    new = new_word_rows(
        module,
        loaded,
        document_sentences(texts),
        words,
        prompt=prompt,
        sentences_per_word=sentences_per_word or metadata.sentences_per_word or ExtractionSettings.sentences_per_word,
        norm=norm,
    )
    if not new.words:
        raise CorpusError(f"{name}: the teacher found none of the new words in sentences it could read.")
    record = ExtendRecord(
        words=len(new.words),
        files=document_files(source),
        min_count=min_count,
        fitted_on=new.report["fitted_on"],
        held_out_cosine=new.report.get("held_out_cosine"),
        norm=norm,
    )
    updated = metadata.with_stage(
        EXTEND_STAGE,
        vocab_size=module.num_vocabulary_words + len(new.words),
        extend=[*(metadata.extend or []), record],
    )
    counts = updated.word_counts
    if counts is not None and len(counts) == module.num_vocabulary_words:
        updated.word_counts = [*counts, *map(float, new.counts)]
    if storage not in (None, "float32", "float16"):
        logger.warning("The %s table comes back as float32 with the new words; quantise it again.", storage)
        updated.quantization = None
    updated.quantization = storage if storage == "float16" else None
    extended = module.with_words(new.words, new.rows, metadata=updated)
    if storage == "float16":  # float16 of float16 values: the old rows are unchanged
        half = quantize_table(extended.word_vectors.detach(), storage).dequantize()
        extended = CompactStaticWordAverage(extended.tokenizer, half, metadata=updated, storage=storage)
    logger.info("Added %d words from %s (map fitted on %d words).", len(new.words), name, record.fitted_on)
    return rebuild(model, [extended, *rest])


def _load_teacher(
    name: str | os.PathLike[str], given: str | os.PathLike[str] | None, device: str | None, precision: str
) -> SentenceTransformer:
    """The teacher ``name``; when it cannot be loaded, the error says how to give it (``--teacher``).

    Raises:
        TeacherError: Naming the teacher, why it cannot be loaded, and ``--teacher``.
    """
    from st_static.extraction.teacher_model import load_teacher

    try:
        return load_teacher(str(name), device=device, precision=precision)
    except TeacherError as error:
        if given is not None:
            raise TeacherError(f"--teacher {given}: {error}") from error
        copy = (
            f"a copy fetched where the Hub can be reached (hf download {name} --local-dir DIR)"
            if is_repo_id(str(name)) and not Path(name).exists()
            else "its folder on this machine"
        )
        raise TeacherError(
            f"{error} extend reads the new words with the teacher the table records (metadata.teacher): give it with "
            f"--teacher (teacher= in st_static.extend): --teacher DIR, {copy}, or its Hub id or alias once it is in "
            "the Hugging Face cache."
        ) from error


def extend_inputs(
    model: str | os.PathLike[str], corpus: Sequence[str | os.PathLike[str]], teacher: str | None
) -> list[str]:
    """What an ``st-static extend`` reads, which its output must not hold: the model folder, documents, teacher."""
    inputs = [str(path) for path in corpus]
    if Path(model).exists():
        inputs.append(str(model))
    if teacher is not None and Path(teacher).exists():
        inputs.append(teacher)
    return inputs
