"""Analyses of a word table from the paper (Wada et al., 2025, section 5), as numbers and matplotlib figures.

* :func:`mean_norm_by_tag` / :func:`plot_norms_by_tag`: mean word-vector norm per part of speech (Figure 2).
* :func:`component_extremes` / :func:`plot_component_extremes`: words with the smallest and largest values on a
  principal component (Table 8).
* :func:`language_separation` / :func:`plot_language_separation`: silhouette score of two languages' vectors
  and 2-D PCA scatter plots before and after removing the top components (ABTT, Figure 1).

The plots need the ``eval`` extra (``pip install "st-static[eval]"``); they return a ``matplotlib`` ``Figure``
without touching pyplot's global state (save it with ``figure.savefig(path)``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.decomposition import PCA

from benchmarks.analysis.pos_tags import TAG_ORDER
from benchmarks.common import fit_pca, language_silhouette, static_module

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from sentence_transformers import SentenceTransformer

    from st_static import StaticWordAverage


def _figure(**kwargs: Any) -> Figure:
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError('The analysis plots need matplotlib: pip install "st-static[eval]"') from error
    return Figure(**kwargs)


def word_table(model: SentenceTransformer | StaticWordAverage) -> tuple[list[str], np.ndarray]:
    """The vocabulary (row order) and the ``(num_words, dim)`` table of a static model."""
    module = static_module(model)
    return list(module.vocabulary), module.word_vectors.detach().cpu().numpy().astype(np.float32)


def mean_norm_by_tag(
    words: Sequence[str],
    vectors: np.ndarray,
    word_tags: Mapping[str, str],
    relative: bool = True,
) -> dict[str, float]:
    """Mean L2 norm of the vectors of the words of each tag.

    Args:
        words: Words, one per row of ``vectors``.
        vectors: The word vectors.
        word_tags: Word -> tag (e.g. from :func:`~benchmarks.analysis.pos_tags.read_word_tags`); words that are
            not in it are ignored, and so are tagged words missing from ``words``.
        relative: Divide by the largest tag mean (the paper divides by that of proper nouns, always the largest).

    Returns:
        Tag -> mean norm, in :data:`~benchmarks.analysis.pos_tags.TAG_ORDER` order for known tags.

    Raises:
        ValueError: If no tagged word is in ``words``.
    """
    if len(words) != len(vectors):
        raise ValueError(f"Got {len(words)} words for {len(vectors)} vectors.")
    norms = np.linalg.norm(np.asarray(vectors, dtype=np.float64), axis=1)
    by_tag: dict[str, list[float]] = defaultdict(list)
    for word, norm in zip(words, norms, strict=True):
        tag = word_tags.get(word)
        if tag is not None:
            by_tag[tag].append(float(norm))
    if not by_tag:
        raise ValueError("None of the tagged words is in the vocabulary.")
    means = {tag: float(np.mean(values)) for tag, values in by_tag.items()}
    order = [tag for tag in TAG_ORDER if tag in means] + sorted(set(means) - set(TAG_ORDER))
    scale = max(means.values()) if relative else 1.0
    return {tag: means[tag] / scale for tag in order}


def plot_norms_by_tag(norms_by_model: Mapping[str, Mapping[str, float]], title: str | None = None) -> Figure:
    """Grouped bars of :func:`mean_norm_by_tag` results, one colour per model (e.g. the stages E1, E2, E3)."""
    tags: list[str] = []
    for norms in norms_by_model.values():
        tags += [tag for tag in norms if tag not in tags]
    figure = _figure(figsize=(max(6.0, 1.1 * len(tags)), 3.8), layout="constrained")
    axes = figure.subplots()
    width = 0.8 / max(1, len(norms_by_model))
    positions = np.arange(len(tags))
    for index, (label, norms) in enumerate(norms_by_model.items()):
        heights = [norms.get(tag, np.nan) for tag in tags]
        axes.bar(positions + index * width, heights, width, label=label)
    axes.set_xticks(positions + width * (len(norms_by_model) - 1) / 2, tags, rotation=30, ha="right")
    axes.set_ylabel("mean norm (relative)")
    axes.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    axes.set_title(title or "Word-vector norm by part of speech")
    return figure


def component_extremes(
    words: Sequence[str],
    vectors: np.ndarray,
    components: Sequence[int] = (1, 2, 6),
    count: int = 5,
    top_words: int | None = 10_000,
    fit_vectors: np.ndarray | None = None,
) -> dict[int, tuple[list[str], list[str]]]:
    """Words with the smallest and largest values on principal components (1-based, as in the paper).

    Args:
        words: Words, one per row of ``vectors``, most frequent first (as st-static vocabularies are ordered).
        vectors: The word vectors.
        components: 1-based component numbers.
        count: Words per end.
        top_words: Consider only the first (most frequent) words; ``None`` for all.
        fit_vectors: Vectors to fit the PCA on, e.g. sentence vectors (the paper's sentence-level PCA); by
            default the word vectors themselves.

    Returns:
        ``{component: (smallest words, largest words)}``, the largest in decreasing order.
    """
    vectors = np.asarray(vectors, dtype=np.float64)
    fit = vectors if fit_vectors is None else np.asarray(fit_vectors, dtype=np.float64)
    highest = max(components)
    if min(components) < 1 or highest > min(fit.shape):
        raise ValueError(f"Components must be between 1 and {min(fit.shape)}, got {list(components)}.")
    pca = PCA(n_components=highest).fit(fit)
    limit = len(words) if top_words is None else min(top_words, len(words))
    values = pca.transform(vectors[:limit])
    result = {}
    for component in components:
        order = np.argsort(values[:, component - 1], kind="stable")
        result[component] = ([words[i] for i in order[:count]], [words[i] for i in order[::-1][:count]])
    return result


def plot_component_extremes(
    words: Sequence[str], vectors: np.ndarray, component: int = 1, count: int = 10, **kwargs: Any
) -> Figure:
    """Horizontal bars of the ``count`` smallest and largest words on one component (``kwargs`` as above)."""
    smallest, largest = component_extremes(words, vectors, (component,), count, **kwargs)[component]
    figure = _figure(figsize=(7.0, 0.3 * 2 * count + 1.2), layout="constrained")
    axes = figure.subplots()
    labels = smallest + largest[::-1]
    positions = np.arange(len(labels))
    colours = ["tab:blue"] * len(smallest) + ["tab:orange"] * len(largest)
    axes.barh(positions, [-1] * len(smallest) + [1] * len(largest), color=colours)
    axes.set_yticks(positions, labels)
    axes.set_xticks([-1, 1], ["smallest", "largest"])
    axes.set_title(f"Words at both ends of principal component {component}")
    return figure


def without_top_components(vectors: np.ndarray, removed_components: int) -> np.ndarray:
    """The library's ABTT (:func:`st_static.reduction.pca.fit_pca`) fitted on ``vectors``: every component kept
    after the first ``removed_components``.

    Raises:
        ValueError: If no component would be left.
    """
    vectors = np.asarray(vectors, dtype=np.float64)
    kept = min(vectors.shape[1], len(vectors) - 1) - removed_components
    if removed_components < 0 or kept < 1:
        raise ValueError(f"Cannot drop {removed_components} of {min(vectors.shape)} components.")
    return fit_pca(vectors, kept, removed_components, level="word").apply(vectors)


def language_separation(
    vectors1: np.ndarray, vectors2: np.ndarray, removed_components: int | None = None
) -> dict[str, float]:
    """Silhouette score of the two languages before and after ABTT (fitted on both sets together).

    Args:
        vectors1: One language's word or sentence vectors.
        vectors2: The other language's.
        removed_components: Components ABTT drops; default ``max(1, floor(dim / 100))``.

    Returns:
        ``{"before": silhouette, "after_abtt": silhouette, "removed_components": r}``.
    """
    vectors1, vectors2 = np.asarray(vectors1, np.float64), np.asarray(vectors2, np.float64)
    removed = max(1, vectors1.shape[1] // 100) if removed_components is None else removed_components
    after = without_top_components(np.concatenate([vectors1, vectors2]), removed)
    return {
        "before": language_silhouette(vectors1, vectors2),
        "after_abtt": language_silhouette(after[: len(vectors1)], after[len(vectors1) :]),
        "removed_components": float(removed),
    }


def plot_language_separation(
    vectors1: np.ndarray,
    vectors2: np.ndarray,
    labels: tuple[str, str] = ("en", "other"),
    removed_components: int | None = None,
    after: tuple[np.ndarray, np.ndarray] | None = None,
) -> Figure:
    """2-D PCA scatter plots of two languages' vectors before and after ABTT, with silhouette scores.

    Args:
        vectors1: First language's vectors (e.g. 1,000 language-specific words, as in the paper).
        vectors2: Second language's vectors.
        labels: Legend names of the two languages.
        removed_components: Components ABTT drops (default ``max(1, floor(dim / 100))``).
        after: Already-transformed vectors of both languages (e.g. the pipeline's PCA stage); by default ABTT is
            fitted here on both sets together.
    """
    vectors1, vectors2 = np.asarray(vectors1, np.float64), np.asarray(vectors2, np.float64)
    removed = max(1, vectors1.shape[1] // 100) if removed_components is None else removed_components
    if after is None:
        transformed = without_top_components(np.concatenate([vectors1, vectors2]), removed)
        after = (transformed[: len(vectors1)], transformed[len(vectors1) :])
    panels = [("before ABTT", vectors1, vectors2), (f"after ABTT (r = {removed})", *after)]
    figure = _figure(figsize=(10.0, 4.6), layout="constrained")
    for axes, (title, first, second) in zip(figure.subplots(1, 2), panels, strict=True):
        points = PCA(n_components=2).fit_transform(np.concatenate([first, second]))
        axes.scatter(*points[: len(first)].T, s=6, alpha=0.6, label=labels[0], color="tab:blue")
        axes.scatter(*points[len(first) :].T, s=6, alpha=0.6, label=labels[1], color="tab:orange")
        silhouette = language_silhouette(first, second)
        axes.set_title(f"{title}: silhouette {silhouette:.3f}")
        axes.set_xlabel("PC1")
        axes.set_ylabel("PC2")
        axes.legend(markerscale=3)
    return figure
