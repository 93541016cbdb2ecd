"""How much of a language's dev bitext would a vocabulary cap read as whole words? Chooses ``--language-vocab-sizes``.

    python -m benchmarks.experiments.caption_coverage --pairs fr=../shared/data/parallel/everyday/en-fr.tsv \\
        --pairs fr=MODELS/en-fr-debian.tsv --caps 16000,24000,32000,48000 --data ../shared/data \\
        --output benchmarks/results/DATE-caption-coverage.md

A language's words are ranked as the build ranks them: by the sentences of its side of its ``--pairs`` files they
occur in, case kept (English is lowercased), words in fewer than two sentences left out. For each cap the share of the
words of the language's Tux Paint dev captions (letters only; a capitalised or lower-case form of a kept word counts,
as the table reads them) that are among its first ``cap`` words; the last column counts every word of two sentences.
No teacher, no table: a cap above the words the pairs hold adds no rows.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.common import command_line, log, machine, write_report
from benchmarks.experiments.language_shares import bitext_files, parse_pairs
from st_static.data_files import read_translation_pairs
from st_static.extraction.vocabulary import (
    build_vocabulary,
    count_word_sentences,
    word_normalizer,
    word_pre_tokenizer,
)
from st_static.model.languages import LOWERCASED_LANGUAGES
from st_static.settings import ExtractionSettings


def ranked_words(files: list[Path], language: str) -> list[str]:
    """The language's words as the build chooses them (``build_vocabulary``, no cap), most sentences first."""
    sentences = list(dict.fromkeys(pair[1] for path in files for pair in read_translation_pairs(path)))
    lowercase = language in LOWERCASED_LANGUAGES
    counts = count_word_sentences(sentences, lowercase=lowercase)
    return build_vocabulary(
        counts, size=len(counts), min_sentences=ExtractionSettings.min_sentences, lowercase=lowercase
    ).words


def caption_words(path: Path, language: str) -> list[str]:
    """The words (letters only) of the other-language side of a Tux Paint file, as the table splits them."""
    normalizer, pre_tokenizer = word_normalizer(language in LOWERCASED_LANGUAGES), word_pre_tokenizer()
    return [
        word
        for _, caption in read_translation_pairs(path)
        for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(caption))
        if word.isalpha()
    ]


def coverage(words: list[str], ranked: list[str], cap: int) -> float:
    """The share of ``words`` whose form as given, lower-cased or capitalised is in the first ``cap`` of ``ranked``."""
    kept = set(ranked[:cap])
    return sum(any(form in kept for form in (word, word.lower(), word.capitalize())) for word in words) / len(words)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", action="append", required=True, help="LANG=FILE (English first column)")
    parser.add_argument("--caps", default="16000,24000,32000,48000")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    caps = [int(cap) for cap in args.caps.split(",")]
    cpu, system = machine()
    lines = [
        "# Tux Paint dev caption words read whole, per vocabulary cap",
        "",
        f"Command: `{command_line('benchmarks.experiments.caption_coverage', argv)}`",
        f"Machine: {cpu}, {system}.",
        "",
        "| language | words in 2+ sentences | caption words | "
        + " | ".join(f"cap {cap:,}" for cap in caps)
        + " | every word |",
        "| --- | ---: | ---: | " + " | ".join("---:" for _ in caps) + " | ---: |",
    ]
    for language, files in parse_pairs(args.pairs).items():
        log(f"counting {language}")
        ranked = ranked_words(files, language)
        [captions] = [path for name, path in bitext_files(args.data, language).items() if name.startswith("tuxpaint")]
        words = caption_words(captions, language)
        shares = [coverage(words, ranked, cap) for cap in caps] + [coverage(words, ranked, len(ranked))]
        cells = " | ".join(f"{value:.3f}" for value in shares)
        lines.append(f"| {language} | {len(ranked):,} | {len(words):,} | {cells} |")
    write_report(args.output, lines)


if __name__ == "__main__":
    main()
