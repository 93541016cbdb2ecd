"""How ``st-static extend`` should scale its new rows: does the table, with rows for the documents' new words scaled
one way or another, order the similarities of those documents' sentences as the teacher does?

    python -m benchmarks.experiments.extend_norms models/swe-minilm-256 DOCS.txt \
        [--output FILE.md]

The sentences are those extend's teacher pass reads (the shortest holding each new word); the score is the Spearman
correlation of the student's and the teacher's pairwise cosines over them. ``none`` is the table without the new
rows (an unknown word reads its longest known prefix); the others add the same mapped directions at the norms of
``st_static.extraction.extend.NORM_CHOICES``, and ``rare`` halved and doubled.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

import st_static
from st_static.extraction.corpus import iter_sentences
from st_static.extraction.extend import (
    RARE_COUNT,
    count_document_words,
    document_sentences,
    document_words,
    norm_targets,
)
from st_static.extraction.extract import extract_word_vectors
from st_static.extraction.ridge import RidgeMap
from st_static.extraction.selection import select_sentences
from st_static.extraction.teacher_model import load_teacher
from st_static.model.tokenization import build_word_tokenizer
from st_static.tensors import to_numpy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="An st-static model folder with a recorded teacher.")
    parser.add_argument("documents", help="A UTF-8 text file, one document per line.")
    parser.add_argument("--output", type=Path, help="Also write the table to this Markdown file.")
    args = parser.parse_args()
    started = time.perf_counter()
    model = st_static.load_model(args.model)
    module = model[0]
    texts = list(iter_sentences(args.documents))
    words = document_words(module, count_document_words(texts, module.lowercase), 2)
    teacher = load_teacher(module.metadata.teacher, precision="auto")
    teacher_tokenizer = teacher[0].tokenizer._tokenizer
    selection = select_sentences(
        document_sentences(texts),
        build_word_tokenizer(words.new, teacher_tokenizer=teacher_tokenizer, lowercase=module.lowercase),
        sentences_per_word=module.metadata.sentences_per_word or 5,
        pca_sample_size=0,
    )
    vocabulary = [*words.new, *words.known]
    result = extract_word_vectors(
        teacher,
        selection.sentences,
        build_word_tokenizer(vocabulary, teacher_tokenizer=teacher_tokenizer, lowercase=module.lowercase),
        prompt=module.metadata.prompt or "",
    )
    count = len(words.new)
    seen = result.occurrences > 0
    table = to_numpy(module.word_vectors.detach())[: module.num_vocabulary_words]
    row_of = {word: row for row, word in enumerate(module.vocabulary)}
    known = [word for word, ok in zip(words.known, seen[count:], strict=True) if ok]
    source, target = result.word_vectors[count:][seen[count:]], table[[row_of[word] for word in known]]
    fit_counts = np.array([words.known_counts[word] for word in known])
    mapped = RidgeMap.fit(source, target)(result.word_vectors[:count][seen[:count]])
    new = [word for word, ok in zip(words.new, seen[:count], strict=True) if ok]
    targets = norm_targets(np.linalg.norm(table, axis=1), np.linalg.norm(target, axis=1), fit_counts)

    sentences = selection.sentences
    teacher_vectors = result.sentence_embeddings / np.linalg.norm(result.sentence_embeddings, axis=1, keepdims=True)
    upper = np.triu_indices(len(sentences), 1)
    reference = (teacher_vectors @ teacher_vectors.T)[upper]

    def score(candidate: object) -> float:
        vectors = st_static.encode(candidate, sentences)
        return float(spearmanr((vectors @ vectors.T)[upper], reference).statistic)

    unit = mapped / np.linalg.norm(mapped, axis=1, keepdims=True)
    rows = {
        "mapped": mapped,
        "median": unit * targets["median"],
        "rare": unit * targets["rare"],
        "rare x0.5": unit * targets["rare"] * 0.5,
        "rare x2": unit * targets["rare"] * 2.0,
    }
    rare = int((fit_counts <= RARE_COUNT).sum())
    lines = [
        f"{len(texts):,} documents of `{Path(args.documents).name}`, {len(new):,} new words (seen 2+ times), "
        f"{len(sentences):,} sentences, map fitted on {len(known):,} known words ({rare} seen at most"
        f" {RARE_COUNT} times); norms: table median {targets['median']:.3f}, known rare median "
        f"{targets['rare']:.3f}, mapped median {float(np.median(np.linalg.norm(mapped, axis=1))):.3f}.",
        "",
        "| new rows | Spearman (student vs teacher cosines) |",
        "|---|---:|",
        f"| none (prefix rule) | {score(model):.4f} |",
    ]
    for name, chosen in rows.items():
        lines.append(f"| {name} | {score(module.with_words(new, chosen.astype(np.float32))):.4f} |")
    lines += ["", f"({time.perf_counter() - started:.0f} s)"]
    text = "\n".join(lines)
    print(text)
    if args.output is not None:
        args.output.write_text(f"# extend: the norm of new rows\n\n{text}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
