"""How many rows does each language of a many-language table need? Its rarest words left out, scored on dev bitext.

    python -m benchmarks.experiments.language_shares MODELS/swe-multilingual-e5-small-13 \
        --pairs fr=../shared/data/parallel/everyday/en-fr.tsv --pairs es=../shared/data/parallel/everyday/en-es.tsv \
        --sizes 2000,4000,8000 --data ../shared/data --output benchmarks/results/DATE-language-shares.md

Issue 65 asks for a share of the rows per language chosen on dev data. A built table's rows do not say which language
gave them, so each language's words are ranked by the sentences of its side of the ``--pairs`` files they occur in
(as the build counts them). For every language and every size in ``--sizes``, the words of that language ranked below
the size are left out (words that also occur in another language's sentences, the English sides included, stay), the
table is pruned to the rest (``st_static.compression.prune_vocabulary``: a word left out then reads its longest kept
prefix, or nothing) and the language's dev bitext is scored: the Tux Paint and Tatoeba files of ``--data`` that pair
it with English (dev halves; both directions). Only the language's own rows change, so each row of the table is that
language's choice alone. Nothing here trains; every file read for scores is a dev half.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks.common import command_line, load_model, log, machine, write_report
from st_static.compression.pruning import prune_vocabulary
from st_static.data_files import read_translation_pairs
from st_static.evaluation.encoders import model_encoder
from st_static.evaluation.suite import find_tasks, task_languages
from st_static.evaluation.translation import evaluate_translation_retrieval
from st_static.extraction.vocabulary import count_word_sentences
from st_static.model.languages import LOWERCASED_LANGUAGES

PIVOT = "en"


def parse_pairs(items: list[str]) -> dict[str, list[Path]]:
    """``LANG=FILE`` entries as ``{language: [files]}``, in the order given."""
    files: dict[str, list[Path]] = {}
    for item in items:
        language, separator, path = item.partition("=")
        if not separator or not language or not path:
            raise SystemExit(f"--pairs takes LANG=FILE, got {item!r}.")
        files.setdefault(language, []).append(Path(path))
    return files


def sentence_counts(files: dict[str, list[Path]]) -> dict[str, Counter[str]]:
    """For every language (and the pivot, over every file's first side), each word's count of sentences."""
    sides: dict[str, list[str]] = {PIVOT: []}
    for language, paths in files.items():
        pairs = [pair for path in paths for pair in read_translation_pairs(path)]
        sides[PIVOT] += [first for first, _ in pairs]
        sides[language] = [second for _, second in pairs]
    return {
        language: count_word_sentences(list(dict.fromkeys(texts)), lowercase=language in LOWERCASED_LANGUAGES)
        for language, texts in sides.items()
    }


def own_ranked_words(language: str, counts: dict[str, Counter[str]], vocabulary: set[str]) -> list[str]:
    """The table's words that only ``language``'s sentences hold, most sentences first."""
    elsewhere = set().union(*(words for other, words in counts.items() if other != language))
    return [
        word
        for word, _ in sorted(counts[language].items(), key=lambda item: (-item[1], item[0]))
        if word in vocabulary and word not in elsewhere
    ]


def bitext_files(data: Path, language: str) -> dict[str, Path]:
    """The dev bitext files of ``data`` that pair ``language`` with English (``tuxpaint-fra-eng``, ...)."""
    return {
        task.name: task.path
        for task in find_tasks(data, task_files=False)
        if task.kind == "translation" and task_languages(task.name) == {language, PIVOT}
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--pairs", action="append", default=[], help="LANG=FILE, as the build read them (repeat)")
    parser.add_argument("--sizes", default="2000,4000,8000", help="rows kept of each language's own words")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()

    sizes = sorted({int(size) for size in args.sizes.split(",")})
    files = parse_pairs(args.pairs)
    model = load_model(args.model)
    vocabulary = model[0].vocabulary
    num_words = model[0].num_vocabulary_words
    counts = sentence_counts(files)
    rows: list[dict[str, object]] = []
    for language in files:
        tasks = bitext_files(args.data, language)
        if not tasks:
            log(f"{language}: no dev bitext in {args.data}; skipped")
            continue
        own = own_ranked_words(language, counts, set(vocabulary))
        for size in [*[size for size in sizes if size < len(own)], len(own)]:
            dropped = set(own[size:])
            kept = [word for word in vocabulary[:num_words] if word not in dropped]
            pruned = prune_vocabulary(model, len(kept), frequencies=kept) if dropped else model
            encoder = model_encoder(pruned)
            scores = {name: evaluate_translation_retrieval(encoder, path)["score"] for name, path in tasks.items()}
            rows.append(
                {"language": language, "own_words": len(own), "kept": size, "left_out": len(dropped), **scores}
                | {"mean": float(np.mean(list(scores.values())))}
            )
            log(f"{language} {size:,} of {len(own):,}: " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items()))

    names = sorted({key for row in rows for key in row if key.startswith(("tatoeba", "tuxpaint"))})
    lines = [
        "# Rows per language of a many-language table, chosen on dev bitext",
        "",
        f"Command: `{command_line('benchmarks.experiments.language_shares')}`",
        f"Machine: {machine()[0]}. Model: `{args.model.name}` ({num_words:,} words).",
        "",
        "A language's own words are the table's words that only its side of the pairs holds; the rarest beyond "
        "*kept* are left out (the last row of each language keeps them all). Dev halves only.",
        "",
        "| language | own words | kept | left out | " + " | ".join(names) + " | mean |",
        "| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in names) + " | ---: |",
    ]
    for row in rows:
        cells = [f"{row[name]:.2f}" if name in row else "" for name in names]
        lines.append(
            f"| {row['language']} | {row['own_words']:,} | {row['kept']:,} | {row['left_out']:,} | "
            + " | ".join(cells)
            + f" | {row['mean']:.2f} |"
        )
    write_report(args.output, lines, rows)


if __name__ == "__main__":
    main()
