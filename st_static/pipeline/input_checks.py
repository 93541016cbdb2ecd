"""The build's inputs checked before the teacher pass: files, source filters, what they leave, and dimensions.

Every check here reads files or settings only (no teacher weights), so an unusable input ends a build in seconds
with one message instead of after the teacher pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from st_static.data_files import read_translation_pairs
from st_static.extraction.corpus import (
    MIN_CORPUS_SENTENCES,
    CorpusError,
    CorpusFiles,
    CorpusSource,
    check_corpus,
    check_corpus_language,
    check_pair_file,
    corpus_name,
    corpus_paths,
)
from st_static.extraction.pair_sources import (
    PairSourceError,
    SourceFilter,
    check_corpus_sources,
    check_pair_sources,
    read_pairs,
)
from st_static.reduction.pca import removed_components_for
from st_static.settings import BuildSettings, SettingsError

MIN_PAIRS = MIN_CORPUS_SENTENCES
"""Fewer translation pairs (with text on both sides) than this per paired language cannot make a table."""


@dataclass(frozen=True)
class InputSizes:
    """What the checks counted."""

    corpus_sentences: int | None = None
    """The first language's sentences the build reads (after a source filter); ``None`` without a corpus."""


def check_input_files(settings: BuildSettings, corpus: CorpusSource | None, source_filter: SourceFilter) -> InputSizes:
    """Check every file a build reads, and what a source filter leaves of them, before the teacher is loaded.

    Args:
        settings: The build's settings (pair files, extra pairs, passages, languages).
        corpus: The first language's sentences (files, or given in memory), if any.
        source_filter: The filter of ``keep_sources`` / ``leave_out_sources``.

    Returns:
        The sizes found.

    Raises:
        CorpusError, DataFormatError, PairSourceError: For an input the build cannot use.
    """
    parallel_files = settings.parallel_files()
    pair_files = [path for paths in parallel_files.values() for path in paths]
    if corpus is None and not pair_files:
        raise CorpusError("A corpus is needed: give --corpus FILE (one sentence per line) and/or --parallel files.")
    report = check_corpus(corpus, name=corpus_name(corpus)) if corpus is not None else None  # sizes and encoding
    for path in pair_files:  # readable text, then a header and rows of at least two columns
        check_corpus(path, name=Path(path).name, min_sentences=1, kind="Translation-pair file")
        read_translation_pairs(path)
    paths = corpus_paths(corpus) if corpus is not None else []
    corpus_filtered = check_corpus_sources(paths, source_filter)
    extra = list((settings.extra_pairs or {}).values())
    check_pair_sources(parallel_files, source_filter, extra, bool(corpus_filtered), corpus_paths=paths)
    sentences = report.sentences if report is not None else None
    if isinstance(corpus, CorpusFiles) and corpus.source_filter.active:  # what the build reads: the kept lines
        sentences = sum(1 for _ in corpus)
        if sentences < MIN_CORPUS_SENTENCES:
            raise CorpusError(
                f"{corpus_name(corpus)}: {corpus.source_filter.describe()} keeps only {sentences} sentence(s); at "
                f"least {MIN_CORPUS_SENTENCES} are needed. Loosen the patterns or add corpus files."
            )
    for language, files in parallel_files.items():
        _check_pair_count(language, files, source_filter)
    if settings.training_leave_out_sources:  # the rows the contrastive training reads
        training_filter = SourceFilter.for_training(settings)
        try:
            check_pair_sources(parallel_files, training_filter, extra, corpus_paths=paths)
            for language, files in parallel_files.items():
                _check_pair_count(language, files, training_filter)
        except (PairSourceError, CorpusError) as error:
            patterns = ",".join(settings.training_leave_out_sources)
            raise type(error)(
                f"The contrastive training's pairs (--training-leave-out-sources {patterns}): {error}"
            ) from None
    if corpus is not None:  # the first language's text (also when a cached extraction would skip the check)
        check_corpus_language(corpus, settings.languages[0], corpus_name(corpus))
    if settings.passages:  # missing, empty, binary, UTF-16 or JSON: refused before the teacher pass
        try:
            check_corpus(settings.passages, name=str(settings.passages), min_sentences=1)
        except CorpusError as error:
            raise CorpusError(f"passages: {error}") from None
    for language, path in (settings.extra_pairs or {}).items():  # read after the teacher pass: checked now
        check_pair_file(path, f"extra pairs ({language})")
    for language, files in settings.second_pass_files().items():  # read after the refinement: checked now
        for path in files:
            check_pair_file(path, f"second-pass pairs ({language})")
        try:
            _check_pair_count(language, files, SourceFilter.for_training(settings))
        except CorpusError as error:
            raise CorpusError(f"The second contrastive pass's pairs (--second-pass-pairs): {error}") from None
    return InputSizes(corpus_sentences=sentences)


def _check_pair_count(language: str, paths: list[str], source_filter: SourceFilter) -> None:
    """Refuse a paired language whose files give fewer than :data:`MIN_PAIRS` pairs with text on both sides."""
    usable = sum(len(read_pairs(path, source_filter)) for path in paths)
    if usable >= MIN_PAIRS:
        return
    names = ", ".join(Path(path).name for path in paths)
    kept = f", of the rows {source_filter.describe()} keeps," if source_filter.active else ""
    raise CorpusError(
        f"{names}: only {usable} translation pair(s){kept} have text on both sides for {language}; at least "
        f"{MIN_PAIRS} are needed (rows whose first or second column is empty are left out)."
    )


def check_dimensions(settings: BuildSettings, teacher_dim: int | None, sizes: InputSizes) -> None:
    """Check ``--dim`` and the removed components against the teacher's width and the PCA's sentences.

    Args:
        settings: The build's settings.
        teacher_dim: The teacher's sentence-vector width, when its folder says (``None``: not checked).
        sizes: What :func:`check_input_files` counted.

    Raises:
        SettingsError: If ``dim`` plus the removed components exceed the teacher's width, or ``pca_sample_size``
            leaves a sentence-level PCA too few sentences.
        CorpusError: If a one-language build's corpus has too few sentences for a sentence-level PCA to ``dim``.
    """
    dim = settings.reduction.dim
    removed = settings.reduction.removed_components
    if teacher_dim is not None:
        if dim > teacher_dim:
            raise SettingsError(
                f"--dim {dim} is larger than the teacher's {teacher_dim} dimensions: PCA cannot add dimensions. Use "
                f"--dim {teacher_dim} or less."
            )
        if removed is None:
            removed = removed_components_for(teacher_dim)
        if dim + removed > teacher_dim:
            raise SettingsError(
                f"--dim {dim} after removing {removed} leading component(s) needs {dim + removed} dimensions, but the "
                f"teacher has {teacher_dim}: use --dim {teacher_dim - removed} or less, or --removed-components "
                f"{teacher_dim - dim}."
            )
    removed = removed or 0
    sentences = sizes.corpus_sentences
    if settings.crosslingual or settings.reduction.pca_level != "sentence" or sentences is None:
        return
    if settings.extraction.pca_sample_size <= dim + removed:
        raise SettingsError(
            f"pca_sample_size {settings.extraction.pca_sample_size} is too small: a PCA to {dim} dimensions (after "
            f"removing {removed}) needs more than {dim + removed} sentences."
        )
    if sentences <= dim + removed:
        raise CorpusError(
            f"The corpus has {sentences} sentence(s): a PCA to {dim} dimensions (after removing {removed}) needs more "
            f"than {dim + removed}. Give a larger corpus or a smaller --dim."
        )
