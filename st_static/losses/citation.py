"""The BibTeX entry of the paper whose method this package implements (used by the losses and the model cards)."""

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
