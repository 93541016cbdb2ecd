"""benchmarks.analysis: norms by part of speech, component extremes, language separation, the Brown converter."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.analysis.plots import (
    component_extremes,
    language_separation,
    mean_norm_by_tag,
    plot_component_extremes,
    plot_language_separation,
    plot_norms_by_tag,
    without_top_components,
    word_table,
)
from benchmarks.analysis.pos_tags import brown_base_tag, brown_word_tags, read_word_tags, write_word_tags

from .conftest import WORDS


def test_mean_norm_by_tag_known_values():
    words = ["the", "cat", "dog", "Paris", "zzz"]
    vectors = np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 4.0], [6.0, 8.0], [100.0, 0.0]])
    tags = {"the": "Article", "cat": "Noun", "dog": "Noun", "Paris": "Proper Noun", "absent": "Verb"}
    assert mean_norm_by_tag(words, vectors, tags, relative=False) == {"Article": 1.0, "Noun": 3.0, "Proper Noun": 10.0}
    assert mean_norm_by_tag(words, vectors, tags) == {"Article": 0.1, "Noun": 0.3, "Proper Noun": 1.0}
    with pytest.raises(ValueError, match="None of the tagged words"):
        mean_norm_by_tag(["x"], vectors[:1], tags)


def test_component_extremes_orders_words_along_the_top_component():
    rng = np.random.default_rng(0)
    positions = np.linspace(-5, 5, 11)
    vectors = np.stack([positions, 0.01 * rng.normal(size=11), 0.01 * rng.normal(size=11)], axis=1)
    words = [f"w{i}" for i in range(11)]
    smallest, largest = component_extremes(words, vectors, components=(1,), count=2, top_words=None)[1]
    assert {tuple(smallest), tuple(largest)} == {("w0", "w1"), ("w10", "w9")}  # PCA's sign is arbitrary


def test_abtt_removes_the_language_direction():
    rng = np.random.default_rng(0)
    meaning = rng.normal(size=(200, 20))
    language = np.zeros(20)
    language[0] = 8.0  # a dominant language-identity direction
    english, other = meaning[:100] + language, meaning[100:] - language
    separation = language_separation(english, other, removed_components=1)
    assert separation["before"] > 0.3
    assert abs(separation["after_abtt"]) < 0.05
    assert without_top_components(np.concatenate([english, other]), 1).shape == (200, 19)


def test_plots_are_figures(word_model, tmp_path):
    words, vectors = word_table(word_model)
    assert words == WORDS and vectors.shape == (len(WORDS), 16)
    norms = mean_norm_by_tag(words, vectors, {"the": "Article", "cat": "Noun", "mat": "Noun"})
    figures = [
        plot_norms_by_tag({"model": norms, "again": norms}),
        plot_component_extremes(words, vectors, component=1, count=3),
        plot_language_separation(vectors[:7], vectors[7:], removed_components=1),
    ]
    for index, figure in enumerate(figures):
        figure.savefig(tmp_path / f"{index}.png")
        assert (tmp_path / f"{index}.png").stat().st_size > 1000


def test_brown_converter(tmp_path):
    (tmp_path / "ca01").write_text(
        "\tThe/at Fulton/np-tl County/nn-tl said/vbd ./. the/at notice/nn notice/vb notice/nn 1990/cd\n"
        "\tBill/np bill/nn Bill/np It's/pps+bez\n"
    )
    (tmp_path / "README").write_text("not a corpus file/xx")
    rows = brown_word_tags(tmp_path)
    tags = {word: (tag, count) for word, tag, count, _ in rows}
    assert tags["the"] == ("Article", 2)
    assert tags["notice"] == ("Noun", 3)  # most frequent tag wins
    assert tags["bill"] == ("Proper Noun", 3)  # lowercase key: Bill/np twice, bill/nn once
    assert tags["1990"] == ("Numeral", 1)
    assert "." not in tags and "xx" not in str(rows)
    assert brown_base_tag("NP$-TL") == "np" and brown_base_tag("fw-nn") == "nn" and brown_base_tag("do*") == "do"
    write_word_tags(rows, tmp_path / "tags.tsv")
    assert read_word_tags(tmp_path / "tags.tsv", limit=2) == {rows[0][0]: rows[0][1], rows[1][0]: rows[1][1]}
