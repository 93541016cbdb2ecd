"""The fast path: embed texts with a static model straight from its table, bypassing ``SentenceTransformer.encode``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from sentence_transformers.sentence_transformer.modules import StaticEmbedding

from st_static.model.empty_text import is_empty_text_dense
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


def static_module(model: SentenceTransformer | StaticEmbedding) -> StaticWordAverage:
    """The :class:`StaticWordAverage` at the input of ``model`` (converted from a bare ``StaticEmbedding``).

    Raises:
        TypeError: If the model does not start with a static embedding module whose tokenizer is st-static's.
    """
    module = model[0] if isinstance(model, SentenceTransformer) else model
    if isinstance(module, StaticWordAverage):
        return module
    if isinstance(module, StaticEmbedding):
        cached = getattr(module, "_st_static_module", None)
        if cached is None:
            if not is_word_tokenizer(module.tokenizer):
                raise TypeError(
                    "Expected an st-static word model, but this StaticEmbedding has a subword tokenizer "
                    "(e.g. model2vec's); use model.encode instead."
                )
            cached = StaticWordAverage.from_static_embedding(module).eval()
            # Not a registered submodule: model.eval()/.to() must not reach this private copy.
            object.__setattr__(module, "_st_static_module", cached)
        return cached
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
    followed by ``Normalize``), several times faster: ASCII texts are read by dict look-ups instead of the Rust
    tokenizer (:mod:`st_static.model.word_rows`), small batches are summed in numpy without torch's per-call
    overhead, and the per-batch machinery of ``SentenceTransformer.encode`` is skipped. Lone surrogates count
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
    if isinstance(model, SentenceTransformer):
        check_pipeline(model)
    prompt = resolve_prompt(model, prompt, prompt_name)
    if prompt:
        text_list = [prompt + text for text in text_list]
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}.")
    batch_size = int(batch_size)
    truncate_dim = model.truncate_dim if isinstance(model, SentenceTransformer) else None
    module = static_module(model)
    if len(text_list) == 1:  # one query: the rows straight from the ASCII look-up where it applies
        one = _one_text_vector(module, text_list[0], normalize)
        if one is not None:
            vector = one[:truncate_dim]
            return vector if single else vector[None, :]
    read_rows = module.word_rows.rows
    first = read_rows(text_list[:batch_size])
    if len(text_list) == 1 and len(first[0]) <= SMALL_TEXT_ROWS:
        table = module.numpy_table()
        if table is not None:  # one query: numpy only, a few microseconds
            words_end = module.fallback_start
            vector = text_vector(table, first[0], module.num_words, normalize, words_end)[:truncate_dim]
            return vector if single else vector[None, :]
    weight = module.embedding.weight.detach()
    if weight.dtype != torch.float32:  # a .half() or bfloat16 model: sums of long texts overflow in 16 bits
        weight = weight.float()
    output = np.empty((len(text_list), weight.shape[1]), dtype=np.float32)
    for start in range(0, len(text_list), batch_size):
        rows, offsets = first if start == 0 else read_rows(text_list[start : start + batch_size])
        batch = output[start : start + len(offsets)]
        batch[:] = sum_rows(weight, rows, offsets, module.num_words)
        if normalize:  # the mean, then Normalize: the operations of sentence-transformers' path, bit for bit
            batch /= np.maximum(known_counts(rows, offsets, module.num_words), 1.0)[:, None]
            normalize_rows(batch)
        else:  # the plain mean of the words' (and pieces') rows; the tiny fallback rows add, and do not count
            words_end = module.fallback_start
            batch /= np.maximum(mean_counts(rows, offsets, module.num_words, words_end), 1.0)[:, None]
    if truncate_dim is not None:
        output = np.ascontiguousarray(output[:, :truncate_dim])
    return output[0] if single else output


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
            raise TypeError(
                f"The fast path handles a static embedding followed by Normalize only; this model also has "
                f"{type(later).__name__}. Use model.encode, or load it with st_static.load_model (which folds "
                "an int8-column scale into the table)."
            )
