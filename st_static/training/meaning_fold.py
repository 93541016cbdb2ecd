"""The disentangler folded into a static table: every row ``r`` becomes ``W r``, so the table holds meaning parts.

A static model's vector is ``Normalize(mean of rows)``, and the meaning map is ``m(e) = W e`` on that unit vector. The
mean is linear, so ``W`` times the mean of rows is the mean of the rows ``W r``, and after ``Normalize`` the folded
table gives every text the direction of its meaning part: words, pieces, fallback rows and the empty-text row alike
(the map has no bias, which the tiny fallback rows could not carry: :class:`~st_static.model.meaning_map.MeaningMap`).
The folded model has the chain a build writes (the table, the empty text's ``Dense``, ``Normalize``), so a bare
``SentenceTransformer(folder)``, :func:`st_static.load_model`, :func:`st_static.encode` and model2vec read it alike;
a compressed table is folded in float and stored in its format again.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize

from st_static.compression.model_parts import float_pipeline, rebuild
from st_static.model.meaning_map import MeaningMap
from st_static.model.metadata import MeaningMapRecord
from st_static.model.static_word_average import StaticWordAverage
from st_static.model.storage import CompactStaticWordAverage
from st_static.training.disentangle import (
    DEFAULT_MAX_EPOCHS,
    DisentangleError,
    MeaningMapResult,
    TranslationPairs,
    train_meaning_map,
)

STAGE = "disentangle"
"""The stage name the metadata records after folding."""


def check_disentangle_model(model: SentenceTransformer) -> None:
    """Refuse a model the disentangler cannot fold into: not a static table followed by ``Normalize``, not
    cross-lingual (its metadata names fewer than two languages), or already holding meaning parts.

    Raises:
        DisentangleError: Saying which.
    """
    modules = list(model) if isinstance(model, SentenceTransformer) else []
    if not modules or not isinstance(modules[0], StaticWordAverage):
        raise DisentangleError("The disentangler folds into a static table (st-static's StaticWordAverage first).")
    try:
        _, rest = float_pipeline(model)
    except TypeError as error:
        raise DisentangleError(str(error)) from None
    if len(rest) != 1 or not isinstance(rest[0], Normalize):
        names = ", ".join(type(module).__name__ for module in rest) or "nothing"
        raise DisentangleError(
            f"The disentangler folds into a table followed by Normalize only; this one is followed by {names}."
        )
    metadata = modules[0].metadata
    if len(metadata.languages or []) < 2:
        raise DisentangleError(
            f"The model is not cross-lingual (its languages: {', '.join(metadata.languages or []) or 'not recorded'}): "
            "the disentangler separates the language of translations, so it needs a table built with --parallel."
        )
    if metadata.meaning_map is not None:
        raise DisentangleError(
            "The table already holds meaning parts (its metadata records a meaning map): disentangle the table it "
            "was made from."
        )


def fold_meaning_map(
    model: SentenceTransformer, meaning_map: MeaningMap, record: MeaningMapRecord | None = None
) -> SentenceTransformer:
    """The static ``model`` with ``meaning_map`` folded into its table: every row ``r`` becomes ``W r`` (module
    docstring); the input model is left untouched.

    Args:
        model: A static table followed by ``Normalize`` (compressed or not).
        meaning_map: A trained map without a bias, as wide as the table.
        record: Recorded in the metadata as ``meaning_map`` (with the stage ``disentangle``) when given.

    Returns:
        The folded model: the table (in ``model``'s storage format), the empty text's ``Dense`` where it needs one,
        ``Normalize``.

    Raises:
        DisentangleError: If the map has a bias, the widths differ, or ``model`` is not a table followed by
            ``Normalize``.
    """
    if meaning_map.bias:
        raise DisentangleError(
            "A meaning map with a bias cannot be folded into a static table: the fallback rows are far smaller than a "
            "word row, so a bias added to every row would swamp them (train it with bias=False)."
        )
    storage = model[0].storage if isinstance(model[0], CompactStaticWordAverage) else "float32"
    module, rest = float_pipeline(model)
    if len(rest) != 1 or not isinstance(rest[0], Normalize):
        raise DisentangleError("fold_meaning_map folds into a static table followed by Normalize only.")
    if meaning_map.dim != module.embedding_dim:
        raise DisentangleError(
            f"The meaning map is {meaning_map.dim}-dimensional and the table {module.embedding_dim}-dimensional."
        )
    weight = meaning_map.weight.detach().to("cpu", torch.float32)
    rows = module.word_vectors.detach().to("cpu", torch.float32) @ weight.T
    metadata = module.metadata.copy()
    if record is not None:
        metadata.meaning_map = record
        metadata.add_stage(STAGE)
    folded = rebuild(model, [StaticWordAverage(module.tokenizer, rows, metadata=metadata), Normalize()])
    if storage == "float32":
        return folded
    from st_static.compression.quantization import quantize

    return quantize(folded, storage)


def disentangle_table(
    model: SentenceTransformer,
    pairs: TranslationPairs,
    *,
    constraints: str = "both",
    language_weight: float = 1.0,
    max_pairs: int | None = None,
    max_epochs: int = DEFAULT_MAX_EPOCHS,
    file_names: Sequence[str] | None = None,
    seed: int = 0,
    device: str | None = None,
) -> tuple[SentenceTransformer, MeaningMapResult]:
    """Train the disentangler's meaning map after a cross-lingual static table and fold it in.

    Args:
        model: A cross-lingual static table (:func:`check_disentangle_model`); left untouched.
        pairs: ``{(pivot, other): [(sentence, translation), ...]}``.
        constraints: ``intra``, ``inter`` or ``both``.
        language_weight: The weight of ``L_lang`` in the intra-component constraints.
        max_pairs: At most this many pairs in all, or ``None``.
        max_epochs: Most epochs (early stopping ends most runs sooner).
        file_names: The pair files' names (never their paths), recorded in the metadata.
        seed: Seed of the split and the training.
        device: ``"cpu"`` keeps training on the CPU.

    Returns:
        ``(folded model, result of the training)``; the metadata records ``meaning_map`` and the stage.

    Raises:
        DisentangleError: For a model or pairs the disentangler cannot use.
    """
    check_disentangle_model(model)
    result = train_meaning_map(
        model,
        pairs,
        constraints=constraints,
        language_weight=language_weight,
        max_pairs=max_pairs,
        max_epochs=max_epochs,
        seed=seed,
        device=device,
    )
    return fold_meaning_map(model, result.meaning_map, result.record(file_names)), result
