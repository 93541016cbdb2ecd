"""``st-static compress``: ensemble, prune, truncate and quantise saved static models into a new folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from st_static.cli.app import command, fail

FOLD_NORM_LINES = 20_000


def _fold_norm_texts(path: Path, count: int) -> list[str]:
    """The first ``count`` non-empty lines of ``--fold-norms``, checked as a ``--parallel`` file's text is (not
    binary, UTF-16 or JSON; some word)."""
    from st_static.extraction.corpus import CorpusError, sample_lines

    try:
        return sample_lines(path, count, "--fold-norms file")
    except CorpusError as error:
        raise fail(str(error)) from None


def _fold_norms_file(fold_norms: Path | None) -> Path | None:
    """``--fold-norms`` as a file: the word ``corpus`` (where no such file exists) is the default English corpus."""
    from st_static.corpus_fetch import CORPUS_KEYWORD, default_english_corpus

    if fold_norms is None or str(fold_norms) != CORPUS_KEYWORD or fold_norms.exists():
        return fold_norms
    path, why_not_full = default_english_corpus(progress=lambda line: typer.echo(line, err=True))
    if why_not_full is not None:
        typer.echo(f"--fold-norms corpus: the full English corpus cannot be fetched ({why_not_full}); the bundled one")
    return path


def _parse_weights(text: str) -> list[float]:
    """``--weights 2,1,1`` as floats."""
    try:
        return [float(part) for part in text.split(",")]
    except ValueError:
        raise fail(f"--weights {text!r}: expected comma-separated numbers, e.g. 2,1,1.") from None


def _check_weights(weights: list[float], count: int) -> None:
    """Refuse ensemble weights for one model, a count other than the models', or a weight that is not positive."""
    if count < 2:
        raise fail("--weight/--weights only apply to an ensemble (two or more models).")
    if len(weights) != count:
        raise fail(f"got {len(weights)} --weight value(s) for {count} model(s).")
    from st_static.compression.ensemble import ensemble_weight_problem

    if problem := ensemble_weight_problem(weights):
        raise fail(f"--weight/--weights: {problem}.")


def _check_sizes(
    model: Any, vocab_size: int | None, dim: int | None, ranking: dict[str, float] | list[str] | None
) -> None:
    """Refuse a ``--vocab-size`` or ``--dim`` larger than the table, and ``--frequencies`` ranking none of its words."""
    module = model[0]
    words = getattr(module, "num_vocabulary_words", module.num_words)
    if vocab_size is not None and vocab_size > words:
        raise fail(f"--vocab-size {vocab_size}: the table has only {words} words; give at most {words}.")
    if dim is not None and dim > module.embedding_dim:
        raise fail(f"--dim {dim}: the table has only {module.embedding_dim} dimensions.")
    if ranking is not None and set(ranking).isdisjoint(module.vocabulary):
        raise fail(
            f"--frequencies: none of its {len(ranking)} words is a word of the model (expected 'word<TAB>count' "
            "lines or one word per line, in the model's case), so it would rank nothing."
        )


def _check_wordllama_specs(models: list[str]) -> None:
    """Refuse a malformed or unavailable ``wordllama:CONFIG:DIM`` member before any member is read."""
    from st_static.compression.members import WORDLLAMA_PREFIX
    from st_static.compression.token_tables import wordllama_files
    from st_static.errors import StStaticError

    for name in models:
        if name.startswith(WORDLLAMA_PREFIX):
            try:
                wordllama_files(name)
            except (ValueError, StStaticError) as error:
                raise fail(str(error)) from None


def _check_vocab_size_bound(members: list[Any], vocab_size: int | None) -> None:
    """Refuse a ``--vocab-size`` over the members' tokens together (the ensemble's words are fewer) before the
    ensemble is built; :func:`_check_sizes` checks it against the built table."""
    from st_static.compression.members import TokenTable

    if vocab_size is None:
        return
    tokenizers = [member.tokenizer if isinstance(member, TokenTable) else member[0].tokenizer for member in members]
    tokens = sum(tokenizer.get_vocab_size() for tokenizer in tokenizers)
    if vocab_size > tokens:
        raise fail(
            f"--vocab-size {vocab_size}: the members have {tokens} tokens together, so the ensemble has fewer "
            "words; give at most its number of words."
        )


def _check_distinct_members(models: list[str]) -> None:
    """Refuse a member given twice (one folder by two names included): it would double the table's size for what a
    larger weight gives."""
    from st_static.files import file_key

    seen: dict[object, str] = {}
    for name in models:
        key = file_key(name) if Path(name).exists() else name
        if key in seen:
            raise fail(
                f"{name}: the same member as {seen[key]}; give each member once (a larger --weights entry makes it "
                "count more)."
            )
        seen[key] = name


def _member_name(name: str) -> str:
    """How a member is recorded: a folder by its name (never a path of this machine), else as given."""
    return Path(name).name if Path(name).is_dir() else name


FOLD_EVALUATION_TASKS = "stsb-en-test,sick-dev,bbc-news-*,chatterbot-qa-en,rotten-tomatoes-sentiment"


def _fold_evaluator(data: Path) -> Callable[[Any], dict[str, dict[str, Any]]]:
    """The scorer of ``--eval-data``'s tasks, its files read and checked now (before any model is built)."""
    from st_static.errors import StStaticError
    from st_static.evaluation.suite import task_evaluator

    try:
        return task_evaluator(data, FOLD_EVALUATION_TASKS)
    except (StStaticError, OSError, ValueError) as error:
        raise fail(f"--eval-data: {error}") from error


def _with_fold_differences(
    folded: object, exact: object, evaluate: Callable[[Any], dict[str, dict[str, Any]]]
) -> object:
    """``folded`` with folded-minus-exact scores (stsb-en-test, sick-dev, the English task mean) in its metadata."""
    from st_static.evaluation.task_files.summary import task_mean

    typer.echo("scoring the exact and the folded ensemble (--eval-data) ...")
    scores = [evaluate(model) for model in (exact, folded)]
    differences = {
        task: round(scores[1][task]["score"] - scores[0][task]["score"], 2)
        for task in ("stsb-en-test", "sick-dev")
        if task in scores[0]
    }
    means = [task_mean(results) for results in scores]
    if None not in means:
        differences["English task mean"] = round(means[1] - means[0], 2)
    for task, value in differences.items():
        typer.echo(f"  {task}: folded - exact = {value:+.2f}")
    module = folded[0]  # type: ignore[index]
    ensemble_record = module.metadata.ensemble
    module.metadata.ensemble = ensemble_record.updated(
        folded=ensemble_record.folded.updated(score_differences=differences)
    )
    return folded


def _megabytes(num_bytes: int) -> str:
    return f"{num_bytes / 1e6:.2f} MB"


@command()
def compress(
    models: Annotated[
        list[str],
        typer.Argument(
            help="Model folder(s) or Hub repo id(s); two or more make an ensemble. An ensemble member may be any "
            "static model: a st-static table, a model2vec folder, a sentence-transformers StaticEmbedding folder, "
            "or wordllama:CONFIG:DIM (a table packaged with the wordllama library, e.g. wordllama:l2_supercat:256)."
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder to write (replaced atomically if it exists).")],
    storage: Annotated[
        str,
        typer.Option("--storage", "-s", help="Table storage format: float32, float16, int8-row, int8-column, binary."),
    ] = "float32",
    vocab_size: Annotated[
        int | None, typer.Option("--vocab-size", "-k", help="Keep only the K most frequent words.")
    ] = None,
    frequencies: Annotated[
        Path | None,
        typer.Option(
            "--frequencies",
            help="Word frequencies for pruning: 'word<TAB>count' lines or one word per line, most frequent "
            "first. Default: the model's metadata word_counts, else row order.",
        ),
    ] = None,
    dim: Annotated[int | None, typer.Option("--dim", help="Keep only the first DIM dimensions of the table.")] = None,
    weight: Annotated[
        list[float] | None,
        typer.Option("--weight", "-w", help="Ensemble weight of each model, in order (repeat the option)."),
    ] = None,
    weights: Annotated[
        str | None,
        typer.Option("--weights", help="Ensemble weights of all models at once, comma-separated (e.g. 2,1,1)."),
    ] = None,
    fold_norms: Annotated[
        Path | None,
        typer.Option(
            "--fold-norms",
            help="Ensembles: fold the per-member normalisation into the table, scaled by the members' mean norms "
            "over the first 20,000 lines of this text file (e.g. the training corpus; 'corpus': the English corpus "
            "st-static build reads without --corpus), so that the ensemble loads with a bare SentenceTransformer.",
        ),
    ] = None,
    eval_data: Annotated[
        Path | None,
        typer.Option(
            "--eval-data",
            help="With --fold-norms: score the exact ensemble and the folded one on this data folder's stsb-en-test, "
            "sick-dev and English task files, and record folded minus exact in the metadata (the card says it).",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace --output even if it is a non-empty folder that is not a model.")
    ] = False,
) -> None:
    """Write a compact or combined copy of static models: ensemble -> prune -> truncate -> quantise.

    Quantised, pruned and truncated models load with a bare SentenceTransformer(path). Ensembles load with
    st_static.load_model (or SentenceTransformer(path, trust_remote_code=True) where st-static is installed), or
    with a bare SentenceTransformer(path) when built with --fold-norms.
    """
    from st_static.compression import (
        STORAGE_FORMATS,
        BlockNormalize,
        ensemble,
        fold_block_normalization,
        folder_size,
        prune_vocabulary,
        quantize,
        read_frequencies,
        read_member,
        truncate_dimensions,
    )
    from st_static.compression.members import WORDLLAMA_PREFIX
    from st_static.errors import MissingExtraError
    from st_static.files import check_destination
    from st_static.model.save_load import holds_st_static_output, load_model, save_model

    if storage not in STORAGE_FORMATS:
        raise fail(f"--storage {storage!r}: unknown storage format; choose one of {', '.join(STORAGE_FORMATS)}.")
    if weights is not None:
        if weight:
            raise fail("give the ensemble weights with --weights or with --weight, not both.")
        weight = _parse_weights(weights)
    if weight:
        _check_weights(weight, len(models))
    _check_distinct_members(models)
    if len(models) == 1 and models[0].startswith(WORDLLAMA_PREFIX):
        raise fail(
            f"{models[0]}: a WordLlama table only joins an ensemble (give two or more models); compressing one "
            "model takes a st-static folder or repo id."
        )
    _check_wordllama_specs(models)
    if vocab_size is not None and vocab_size < 1:
        raise fail(f"--vocab-size {vocab_size}: give a positive number of words to keep.")
    if dim is not None and dim < 1:
        raise fail(f"--dim {dim}: give a positive number of dimensions to keep.")
    if dim is not None and len(models) > 1:
        raise fail(
            "--dim does not apply to an ensemble: cutting it would drop whole member blocks; truncate the members "
            "first (st-static compress MEMBER --dim DIM)."
        )
    if frequencies is not None and vocab_size is None:
        raise fail("--frequencies only applies with --vocab-size.")
    if fold_norms is not None and len(models) < 2:
        raise fail("--fold-norms only applies to an ensemble (two or more models).")
    fold_norms = _fold_norms_file(fold_norms)
    if eval_data is not None and fold_norms is None:
        raise fail("--eval-data only applies with --fold-norms (it measures what folding costs).")
    if eval_data is not None and not eval_data.is_dir():
        raise fail(f"--eval-data {eval_data}: not a folder.")
    inputs = [*(name for name in models if Path(name).exists()), frequencies, fold_norms]
    check_destination(output, replaceable=holds_st_static_output, inputs=inputs, force=force)  # before any work
    norm_texts = _fold_norm_texts(fold_norms, FOLD_NORM_LINES) if fold_norms is not None else None
    evaluate = _fold_evaluator(eval_data) if eval_data is not None else None
    try:
        ranking = read_frequencies(frequencies) if frequencies is not None else None
    except ValueError as error:
        raise fail(f"--frequencies: {error}") from error
    try:
        if len(models) > 1:
            members = [read_member(name) for name in models]
            _check_vocab_size_bound(members, vocab_size)
            model = ensemble(members, weight, names=[_member_name(n) for n in models])
        else:
            model = load_model(models[0])
        _check_sizes(model, vocab_size, dim, ranking)
        if norm_texts is not None:
            exact = model
            try:
                model = fold_block_normalization(model, norm_texts)
            except ValueError as error:  # a member reads no word of the texts
                raise fail(f"--fold-norms {fold_norms}: {error}") from error
            if evaluate is not None:
                model = _with_fold_differences(model, exact, evaluate)
        if vocab_size is not None:
            model = prune_vocabulary(model, vocab_size, ranking)
        if dim is not None:
            model = truncate_dimensions(model, dim)
        model = quantize(model, storage)
        destination = save_model(model, output, force=force, inputs=inputs)
    except (ValueError, MissingExtraError) as error:  # the compression functions' argument checks, a missing extra
        raise fail(str(error)) from error

    inputs = sum(folder_size(name) for name in models if Path(name).is_dir())
    module = model[0]
    is_ensemble = any(isinstance(later, BlockNormalize) for later in model)
    typer.echo(f"wrote {destination}")
    words = getattr(module, "num_vocabulary_words", module.num_words)  # without the fallback rows
    typer.echo(f"  words: {words}, dimensions: {module.embedding_dim}, storage: {storage}")
    size_line = f"  size on disk: {_megabytes(folder_size(destination))}"
    if inputs:
        size_line += f" (input: {_megabytes(inputs)})"
    typer.echo(size_line)
    if is_ensemble:
        typer.echo("  loads with st_static.load_model (ensemble: needs st-static)")
    else:
        typer.echo("  loads with a bare SentenceTransformer(path)")
