"""The build's inputs checked before the teacher pass: files, source filters, what they leave, language weights and
dimensions.

Every check here reads files or settings only (no teacher weights), so an unusable input ends a build in seconds
with one message instead of after the teacher pass.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    read_language_pairs,
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
        SettingsError: For languages beyond the first without ``--parallel`` files to learn them from.
    """
    parallel_files = settings.parallel_files()
    pair_files = [path for paths in parallel_files.values() for path in paths]
    if corpus is None and not pair_files:
        raise CorpusError("A corpus is needed: give --corpus FILE (one sentence per line) and/or --parallel files.")
    _check_paired_languages(settings, parallel_files)
    report = check_corpus(corpus, name=corpus_name(corpus)) if corpus is not None else None  # sizes and encoding
    for language, files in parallel_files.items():  # readable text, then a header and rows of at least two columns
        for path in files:
            check_pair_file(path, _parallel_entries(settings, language, [path]))
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
        _check_pair_count(_parallel_entries(settings, language, files), language, files, source_filter)
    training_filter = SourceFilter.for_training(settings)  # the pair rows the contrastive training reads
    if settings.training_leave_out_sources:  # the parallel files' rows checked again, as the training reads them
        try:
            check_pair_sources(parallel_files, training_filter, extra, corpus_paths=paths)
            for language, files in parallel_files.items():
                _check_pair_count(_parallel_entries(settings, language, files), language, files, training_filter)
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
        entry = f"--extra-pairs {language}={path}"
        check_pair_file(path, entry)
        _check_pair_count(entry, language, [path], training_filter, minimum=1)  # a few dictionary words may do
    for language, files in settings.second_pass_files().items():  # read after the refinement: checked now
        entries = [f"--second-pass-pairs {language}={path}" for path in files]
        for path, entry in zip(files, entries, strict=True):
            check_pair_file(path, entry)
        _check_pair_count(
            f"The second contrastive pass's pairs ({' '.join(entries)})", language, files, training_filter
        )
    for training in _weighted_trainings(settings):  # refused now rather than after the extraction
        _check_language_weights(training, settings, training_filter)
    return InputSizes(corpus_sentences=sentences)


def _check_paired_languages(settings: BuildSettings, parallel_files: dict[str, list[str]]) -> None:
    """Refuse languages beyond the first without ``--parallel`` files: a table built from the corpus alone learns
    the first language only, while its metadata (and ``st-static evaluate``) would claim the others too."""
    if len(settings.languages) < 2 or parallel_files:
        return
    first, others = settings.languages[0], settings.languages[1:]
    raise SettingsError(
        f"--languages {','.join(settings.languages)} names {', '.join(others)} but no --parallel file pairs "
        f"{first} with {'it' if len(others) == 1 else 'them'}: a table built from the corpus alone learns {first} "
        f"only. Give --parallel LANG=FILE ({first} first) for {', '.join(others)}, or --languages {first}."
    )


def _parallel_entries(settings: BuildSettings, language: str, paths: list[str]) -> str:
    """The ``--parallel`` options that gave ``paths`` (of ``language``), as written: ``LANG=FILE`` or a plain FILE."""
    named = set(settings.parallel or [])
    return " ".join(
        f"--parallel {language}={path}" if f"{language}={path}" in named else f"--parallel {path}" for path in paths
    )


def _check_pair_count(
    name: str, language: str, paths: list[str], source_filter: SourceFilter, minimum: int = MIN_PAIRS
) -> None:
    """Refuse pair files of ``language`` that give fewer than ``minimum`` pairs with text on both sides.

    Args:
        name: How the message names the files (the options that gave them); it starts the message.
        language: The language the files pair with the first one.
        paths: The files, read through ``source_filter``.
        source_filter: The filter of the rows the build reads.
        minimum: The fewest usable pairs.

    Raises:
        CorpusError: If the files give fewer.
    """
    usable = sum(len(read_pairs(path, source_filter)) for path in paths)
    if usable >= minimum:
        return
    kept = f", of the rows {source_filter.describe()} keeps," if source_filter.active else ""
    raise CorpusError(
        f"{name}: only {usable} translation pair(s){kept} have text on both sides for {language}; at least "
        f"{minimum} {'is' if minimum == 1 else 'are'} needed (rows whose first or second column is empty are left "
        "out)."
    )


@dataclass(frozen=True)
class _PairTraining:
    """A contrastive training on several language pairs, as a ``--language-weights`` check needs it."""

    name: str
    """How a message names it (``the contrastive training``)."""
    batch_option: str
    """The option that sets its batch size."""
    batch_size: int
    files: dict[str, list[str]]
    """``{language: pair files}``: each language's dataset (its batch size comes from these)."""
    training_only: dict[str, list[str]]
    """``{language: pair files}`` that join a language's training split only."""
    options: dict[str, str]
    """``{language: the options that gave its files}``."""


def _weighted_trainings(settings: BuildSettings) -> list[_PairTraining]:
    """The contrastive trainings whose rounds ``--language-weights`` weighs and whose batch size is known before the
    extraction: the refinement (unless a distillation dataset trains beside the pairs) and the second pass, each
    when it trains on two or more language pairs with a translation-pair loss."""
    if not any(weight > 1 for weight in (settings.refinement.language_weights or {}).values()):
        return []
    from st_static.losses import LOSSES
    from st_static.training.refinement import loss_names

    names = loss_names(settings.refinement, crosslingual=True)
    entry = LOSSES.get(names[0])
    if entry is None or entry.data != "translation_pairs":  # no language pair trains (an unknown loss fails later)
        return []
    trainings: list[_PairTraining] = []
    parallel = settings.parallel_files()
    if len(names) == 1 and len(parallel) > 1:
        extra = {language: [path] for language, path in (settings.extra_pairs or {}).items()}
        options = {
            language: " ".join(
                [_parallel_entries(settings, language, paths)]
                + [f"--extra-pairs {language}={path}" for path in extra.get(language, [])]
            )
            for language, paths in parallel.items()
        }
        chosen = settings.refinement.batch_size
        trainings.append(_PairTraining("the contrastive training", "--batch-size", chosen, parallel, extra, options))
    second = settings.second_pass_files()
    if len(second) > 1:
        options = {
            language: " ".join(f"--second-pass-pairs {language}={path}" for path in paths)
            for language, paths in second.items()
        }
        chosen = settings.second_pass.second_pass_batch_size
        trainings.append(
            _PairTraining("the second contrastive pass", "--second-pass-batch-size", chosen, second, {}, options)
        )
    return trainings


def _check_language_weights(training: _PairTraining, settings: BuildSettings, source_filter: SourceFilter) -> None:
    """Refuse a ``--language-weights`` weight beyond the batches its language's training split can make in
    ``training``, which :func:`~st_static.training.refinement.refine` would refuse only when the training starts.
    Certain only: a language's split is read as the training reads it (its pairs, less those held out for validation,
    plus at most the pairs of its training-only files), and the batch is the one the training takes (the fewest
    pairs of a language, when a language has fewer than a batch).

    Raises:
        SettingsError: Naming the language, its weight, its training pairs and the batch, if they make fewer
            batches than its weight.
    """
    weights = settings.refinement.language_weights or {}
    planned = _planned_splits(training, settings, source_filter)
    if planned is None:
        return
    size = min(batch for batch, _ in planned.values())
    smallest = f"{settings.languages[0]}-{min(planned, key=lambda language: planned[language][0])}"
    for language, (_, trained) in planned.items():
        extra = training.training_only.get(language, [])  # the training keeps at most these of them
        bound = trained + sum(len(read_pairs(path, source_filter)) for path in extra)
        if bound // size < weights.get(language, 1):
            raise _weight_refusal(training, language, weights[language], bound, size, smallest)


def _weight_refusal(
    training: _PairTraining, language: str, weight: int, pairs: int, size: int, smallest: str
) -> SettingsError:
    """The refusal of ``language``'s ``weight``: its at most ``pairs`` training pairs make too few batches of
    ``size`` (set by the ``smallest`` language's pairs when below the chosen batch size)."""
    most = pairs // size
    batch_of = f"{size} ({training.batch_option})"
    if size < training.batch_size:
        batch_of = f"{size} ({training.batch_option} {training.batch_size} shrinks to the {size} pairs of {smallest})"
    return SettingsError(
        f"--language-weights {language}={weight}: {training.name} takes {weight} batches of {language}'s pairs per "
        f"round, but its pair files ({training.options[language]}) leave at most {pairs:,} training pair(s) (the "
        f"validation split held out), {most} batch(es) of {batch_of}: lower its weight to {max(most, 1)} or less, "
        f"or give {language} more pairs."
    )


def _planned_splits(
    training: _PairTraining, settings: BuildSettings, source_filter: SourceFilter
) -> dict[str, tuple[int, int]] | None:
    """``{language: (its batch size, its training pairs less the training-only ones)}`` as
    :func:`~st_static.training.refine` fits them to the pairs; ``None`` when a language has too few pairs to train
    (the training says so)."""
    from st_static.training.datasets import check_translation_pairs, pair_name, plan_split

    planned: dict[str, tuple[int, int]] = {}
    for (_, language), pairs in read_language_pairs(training.files, settings.languages[0], source_filter).items():
        first, _ = check_translation_pairs(pairs, pair_name((settings.languages[0], language)))
        if len(first) < 2:
            return None
        name = pair_name((settings.languages[0], language))
        batch, held_out = plan_split(len(first), training.batch_size, settings.refinement.validation_size, name)
        planned[language] = (batch, len(first) - held_out)
    return planned


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
