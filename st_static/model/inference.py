"""The fast path: embed texts with a static model straight from its table, bypassing ``SentenceTransformer.encode``."""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Dense, Normalize
from sentence_transformers.sentence_transformer.modules import StaticEmbedding

from st_static.model.compiled_rows import LONG_TEXT_CHARS, compiled_vectors
from st_static.model.empty_text import EmptyTextDense, is_empty_text_dense
from st_static.model.row_sums import (
    SMALL_TEXT_ROWS,
    known_counts,
    mean_counts,
    normalize_rows,
    sum_rows,
    text_vector,
)
from st_static.model.static_word_average import StaticWordAverage, check_texts
from st_static.model.tokenization import is_word_tokenizer
from st_static.tensors import TensorStamp


class PlainLookup:
    """The look-up of a bare-loaded ``StaticEmbedding`` (:func:`static_module`): the :class:`StaticWordAverage` built
    from its table and tokenizer, with what it was built from, so that it is built once and rebuilt only when the
    module's tokenizer is replaced or its table replaced, moved or written in place
    (:class:`~st_static.tensors.TensorStamp`)."""

    __slots__ = ("module", "tokenizer", "weight")

    def __init__(self, static: StaticEmbedding) -> None:
        self.tokenizer = static.tokenizer
        self.weight = TensorStamp(static.embedding.weight)
        self.module = StaticWordAverage.from_static_embedding(static).eval()

    def matches(self, static: StaticEmbedding) -> bool:
        """Whether ``static`` still has the tokenizer and the table this look-up was built from."""
        return static.__dict__.get("tokenizer") is self.tokenizer and self.weight.matches(
            _tensor_at(static, ("embedding",), "weight")
        )


_PLAIN_LOOKUPS: weakref.WeakKeyDictionary[StaticEmbedding, PlainLookup] = weakref.WeakKeyDictionary()
"""Bare-loaded modules -> their look-ups, held weakly (no state is written into the module: a copy or a pickle of the
model carries none, and ``model.eval()``/``.to()`` never reach the private copy)."""


def plain_lookup(static: StaticEmbedding) -> PlainLookup | None:
    """The look-up :func:`static_module` keeps for a bare-loaded ``StaticEmbedding`` (``None`` before its first use)."""
    return _PLAIN_LOOKUPS.get(static)


def _tensor_at(module: torch.nn.Module, owners: tuple[str, ...], name: str) -> torch.Tensor | None:
    """The parameter or buffer ``name`` of the submodule ``owners`` (``("linear",)``) of ``module``, read from the
    module dicts without ``nn.Module.__getattr__`` (microseconds on the one-query path); ``None`` where it has none."""
    for owner in owners:
        module = module._modules.get(owner)
        if module is None:
            return None
    tensor = module._parameters.get(name)
    return module._buffers.get(name) if tensor is None else tensor


class CheckedPipeline:
    """A ``SentenceTransformer`` as :func:`encode` last checked it (:func:`check_pipeline`): its modules, the
    :class:`StaticWordAverage` to read and, for the modules a bare load made (its ``StaticEmbedding``, its empty text's
    plain ``Dense``), the stamps of their tensors and the table's tokenizer. While the model has the same modules and
    those are unchanged, the next call checks nothing else; a module added, removed or replaced, one of those tensors
    replaced, moved or written in place (:class:`~st_static.tensors.TensorStamp`), or the tokenizer replaced, and the
    pipeline is checked again. (``load_model``'s modules, ``StaticWordAverage`` and ``EmptyTextDense``, pass the checks
    by their type, so only their identity is kept.)"""

    __slots__ = ("modules", "static", "tensors", "tokenizer")

    def __init__(self, model: SentenceTransformer, static: StaticWordAverage) -> None:
        self.modules = tuple(model._modules.values())
        self.static = static
        plain = [module for module in self.modules if not isinstance(module, StaticWordAverage | EmptyTextDense)]
        stamps = []
        for module in plain:
            for path, tensor in (*module.named_parameters(), *module.named_buffers()):
                *owners, name = path.split(".")
                stamps.append((module, tuple(owners), name, TensorStamp(tensor)))
        self.tensors = tuple(stamps)
        first = self.modules[0] if self.modules else None
        self.tokenizer = None if isinstance(first, StaticWordAverage) else getattr(first, "tokenizer", None)

    def matches(self, model: SentenceTransformer) -> bool:
        """Whether ``model`` is still the pipeline this record was made from."""
        if tuple(model._modules.values()) != self.modules:  # modules compare by identity (nn.Module has no __eq__)
            return False
        if self.tokenizer is not None and self.modules[0].__dict__.get("tokenizer") is not self.tokenizer:
            return False
        for module, owners, name, stamp in self.tensors:  # a loop without calls but one: microseconds count here
            for owner in owners:
                module = module._modules.get(owner)
                if module is None:
                    return False
            tensor = module._parameters.get(name)
            if not stamp.matches(module._buffers.get(name) if tensor is None else tensor):
                return False
        return True


_CHECKED_PIPELINES: dict[int, tuple[weakref.ref, CheckedPipeline]] = {}
"""``id(model)`` -> (a weak reference to the model, its :class:`CheckedPipeline`); an entry leaves with its model. No
state is written into the model, so a copy or a pickle of it carries none."""


def checked_static_module(model: SentenceTransformer) -> StaticWordAverage:
    """:func:`check_pipeline`, then :func:`static_module`, both skipped while the model is the pipeline they last
    passed (:class:`CheckedPipeline`): what :func:`encode` runs on every call.

    Raises:
        TypeError: As :func:`check_pipeline` and :func:`static_module`.
    """
    entry = _CHECKED_PIPELINES.get(id(model))
    if entry is not None and entry[0]() is model and entry[1].matches(model):
        return entry[1].static
    check_pipeline(model)
    static = static_module(model)
    key = id(model)
    _CHECKED_PIPELINES[key] = (
        weakref.ref(model, lambda _, key=key: _CHECKED_PIPELINES.pop(key, None)),
        CheckedPipeline(model, static),
    )
    return static


def static_module(model: SentenceTransformer | StaticEmbedding) -> StaticWordAverage:
    """The :class:`StaticWordAverage` at the input of ``model`` (converted from a bare ``StaticEmbedding``).

    A bare ``StaticEmbedding`` (``SentenceTransformer(folder)``) is converted on first use (its table checked, the
    look-ups made: about what :func:`st_static.load_model` does at load) and the result kept (:class:`PlainLookup`),
    so later calls cost what they cost after ``load_model``.

    Raises:
        TypeError: If the model does not start with a static embedding module whose tokenizer is st-static's.
    """
    module = model[0] if isinstance(model, SentenceTransformer) else model
    if isinstance(module, StaticWordAverage):
        return module
    if isinstance(module, StaticEmbedding):
        lookup = _PLAIN_LOOKUPS.get(module)
        if lookup is None or not lookup.matches(module):
            if not is_word_tokenizer(module.tokenizer):
                raise TypeError(
                    "Expected an st-static word model, but this StaticEmbedding has a subword tokenizer "
                    "(e.g. model2vec's); use model.encode instead."
                )
            lookup = _PLAIN_LOOKUPS[module] = PlainLookup(module)
        return lookup.module
    raise TypeError(f"Expected a static model (StaticEmbedding first), got {type(module).__name__}.")


def encode(
    model: SentenceTransformer | StaticEmbedding,
    texts: str | Sequence[str],
    batch_size: int = 8192,
    normalize: bool = True,
    prompt: str | None = None,
    prompt_name: str | None = None,
) -> np.ndarray:
    """Embed texts with a static model, returning float32 numpy vectors.

    Gives the same vectors as ``model.encode(texts)`` for a model saved by st-static (``StaticWordAverage``
    followed by ``Normalize``), several times faster: with numba (``pip install "st-static[fast]"``) a batch's ASCII
    texts are read, looked up and averaged in one compiled pass over both cores (:mod:`st_static.model.compiled_rows`);
    otherwise (and for other texts) ASCII texts are read by dict look-ups instead of the Rust tokenizer
    (:mod:`st_static.model.word_rows`), small batches are summed in numpy without torch's per-call overhead, and the
    per-batch machinery of ``SentenceTransformer.encode`` is skipped. Lone surrogates count
    as U+FFFD (dropped); texts of any length are read in bounded memory. Prompts work as in ``model.encode``:
    ``prompt``, else ``model.prompts[prompt_name]``, else the model's default prompt is prepended to every text.

    Args:
        model: A static ``SentenceTransformer`` (or its first module).
        texts: A str or a sequence of str.
        batch_size: Texts read per batch.
        normalize: L2-normalise (as the saved pipeline does). ``False`` gives the plain mean of word vectors.
        prompt: Text prepended to every text (``prompt_name`` is then ignored).
        prompt_name: The name of one of the model's ``prompts`` to prepend. Without either, the model's
            ``default_prompt_name`` (if set) chooses the prompt, as ``model.encode`` does.

    Returns:
        ``(len(texts), dim)`` array, or ``(dim,)`` for a single str; ``dim`` is the model's ``truncate_dim`` when
        set (the first ``truncate_dim`` components, as ``model.encode`` gives). Texts without a known word give
        zeros, unless the table has fallback rows (:func:`st_static.add_fallback_rows`): then every text gets a unit
        vector.

    Raises:
        TypeError: If ``texts`` is not a str or a sequence of str, ``batch_size`` is not an int, or the model has
            modules after its static embedding other than ``Normalize`` (this path would skip them).
        ValueError: If ``batch_size`` is not positive, or ``prompt_name`` is not one of the model's prompts.
    """
    single = isinstance(texts, str)
    if isinstance(texts, np.ndarray) and texts.ndim != 1:
        raise TypeError(f"Expected a str or a sequence of str, got a {texts.ndim}-d numpy array.")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int | np.integer):
        raise TypeError(f"batch_size must be an int, got {type(batch_size).__name__}: {batch_size!r}.")
    text_list = check_texts(texts)
    # a pipeline's checks and its look-ups are made once (CheckedPipeline): a bare load costs what load_model's does
    module = checked_static_module(model) if isinstance(model, SentenceTransformer) else static_module(model)
    prompt = resolve_prompt(model, prompt, prompt_name)
    if prompt:
        text_list = [prompt + text for text in text_list]
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}.")
    batch_size = int(batch_size)
    truncate_dim = model.truncate_dim if isinstance(model, SentenceTransformer) else None
    if len(text_list) == 1 and len(text_list[0]) <= LONG_TEXT_CHARS:  # one query: the ASCII look-up's rows
        one = _one_text_vector(module, text_list[0], normalize)
        if one is not None:
            vector = one[:truncate_dim]
            return vector if single else vector[None, :]
    # a batch: the compiled loop for the ASCII texts where numba is installed (model/compiled_rows.py), else today's
    output = compiled_vectors(
        module, text_list, normalize, lambda others: batch_vectors(module, others, batch_size, normalize)
    )
    if output is None:
        output = batch_vectors(module, text_list, batch_size, normalize)
    if truncate_dim is not None:
        output = np.ascontiguousarray(output[:, :truncate_dim])
    return output[0] if single else output


def batch_vectors(module: StaticWordAverage, texts: list[str], batch_size: int, normalize: bool) -> np.ndarray:
    """Today's path for a batch: the texts' rows (:class:`~st_static.model.word_rows.WordRows`: the ASCII look-up,
    the Rust tokenizer for the rest), summed by ``embedding_bag``, ``batch_size`` texts at a time; one text in numpy.
    """
    read_rows = module.word_rows.rows
    first = read_rows(texts[:batch_size])
    if len(texts) == 1 and len(first[0]) <= SMALL_TEXT_ROWS:
        table = module.numpy_table()
        if table is not None:  # one query: numpy only, a few microseconds
            words_end = module.fallback_start
            return text_vector(table, first[0], module.num_words, normalize, words_end)[None, :]
    weight = module.embedding.weight.detach()
    if weight.dtype != torch.float32:  # a .half() or bfloat16 model: sums of long texts overflow in 16 bits
        weight = weight.float()
    output = np.empty((len(texts), weight.shape[1]), dtype=np.float32)
    for start in range(0, len(texts), batch_size):
        rows, offsets = first if start == 0 else read_rows(texts[start : start + batch_size])
        batch = output[start : start + len(offsets)]
        batch[:] = sum_rows(weight, rows, offsets, module.num_words)
        if normalize:  # the mean, then Normalize: the operations of sentence-transformers' path, bit for bit
            batch /= np.maximum(known_counts(rows, offsets, module.num_words), 1.0)[:, None]
            normalize_rows(batch)
        else:  # the plain mean of the words' (and pieces') rows; the tiny fallback rows add, and do not count
            words_end = module.fallback_start
            batch /= np.maximum(mean_counts(rows, offsets, module.num_words, words_end), 1.0)[:, None]
    return output


def _one_text_vector(module: StaticWordAverage, text: str, normalize: bool) -> np.ndarray | None:
    """One short ASCII text's vector in numpy (the ASCII look-up's rows, then :func:`text_vector`), or ``None`` when
    the general path must read it (not ASCII, long, no ASCII look-up, or a table off the CPU)."""
    rows_of = module.word_rows
    if rows_of.ascii is None or len(text) > rows_of.max_piece_chars or not text.isascii():
        return None
    rows = rows_of.ascii.text_rows(text)
    table = module.numpy_table() if len(rows) <= SMALL_TEXT_ROWS else None
    if table is None:
        return None
    words_end = module.fallback_start
    return text_vector(table, np.array(rows, dtype=np.int64), module.num_words, normalize, words_end)


def resolve_prompt(
    model: SentenceTransformer | StaticEmbedding, prompt: str | None = None, prompt_name: str | None = None
) -> str | None:
    """The prompt ``model.encode`` would prepend: ``prompt``, else ``prompts[prompt_name]``, else the default prompt.

    Raises:
        ValueError: If ``prompt_name`` is not one of the model's prompts (a bare module has none).
    """
    if prompt is not None:
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}: {prompt!r:.80}.")
        return prompt
    prompts = model.prompts if isinstance(model, SentenceTransformer) else {}
    if prompt_name is not None:
        if prompt_name not in prompts:
            raise ValueError(f"Prompt name {prompt_name!r} is not one of the model's prompts {sorted(prompts)}.")
        return prompts[prompt_name]
    default_name = model.default_prompt_name if isinstance(model, SentenceTransformer) else None
    return prompts.get(default_name) if default_name is not None else None


def check_pipeline(model: SentenceTransformer) -> None:
    """Raise a ``TypeError`` unless every module after the static embedding is a ``Normalize`` (or the empty text's
    ``Dense``, :mod:`st_static.model.empty_text`, whose vector this path gives the empty text itself)."""
    for later in list(model)[1:]:
        if is_empty_text_dense(later):
            continue
        if not (isinstance(later, Normalize) and later.module_input_name == "sentence_embedding"):
            # st_static.load_model folds an int8-column scale's Dense into the table; other modules (an ensemble's
            # BlockNormalize, a MeaningMap, ...) stay whatever loaded the model
            hint = (
                " Use model.encode, or load it with st_static.load_model (which folds an int8-column scale into the "
                "table)."
                if isinstance(later, Dense)
                else " Use model.encode."
            )
            raise TypeError(
                f"The fast path handles a static embedding followed by Normalize only; this model also has "
                f"{type(later).__name__}.{hint}"
            )
