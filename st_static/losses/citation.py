"""The BibTeX entries of the papers whose methods this package implements (used by the losses and the model cards)."""

from __future__ import annotations

WADA_2025_BIBTEX = """
@inproceedings{wada-etal-2025-static,
    title = "Static Word Embeddings for Sentence Semantic Representation",
    author = "Wada, Takashi and Hirakawa, Yuki and Shimizu, Ryotaro and Kawashima, Takahiro and Saito, Yuki",
    booktitle = "Proceedings of the 2025 Conference on Empirical Methods in Natural Language Processing",
    month = nov,
    year = "2025",
    address = "Suzhou, China",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/2025.emnlp-main.316/",
    doi = "10.18653/v1/2025.emnlp-main.316",
    eprint = "2506.04624",
    archivePrefix = "arXiv",
}
"""

NONOMURA_2026_BIBTEX = """
@misc{nonomura-etal-2026-language-bias,
    title = "Mitigating Language Bias in Multilingual Sentence Embeddings for Cross-Lingual Similarity Estimation",
    author = "Nonomura, Kanade and Fukushima, Keita and Kondo, Risa and Kajiwara, Tomoyuki",
    year = "2026",
    note = "Ehime University and The University of Osaka",
}
"""
"""The disentangler's paper (:mod:`st_static.losses.language_bias`); its text names no venue, and its year is that of
the newest work it cites."""
