"""Is a cross-lingual table's gap between cross-lingual and monolingual STS a per-language offset or map? (issue 68)

    python -m benchmarks.experiments.language_offsets MODELS/swe-multilingual-e5-small-en-de-ja-zh-extra \
        --parallel de=../shared/data/parallel/en-de.tsv --parallel ja=../shared/data/parallel/en-ja.tsv \
        --parallel zh=../shared/data/parallel/en-zh.tsv --parallel de=../shared/data/parallel/everyday/en-de.tsv \
        --parallel ja=../shared/data/parallel/everyday/en-ja.tsv \
        --parallel zh=../shared/data/parallel/everyday/en-zh.tsv \
        --data ../shared/data --output benchmarks/results/DATE-language-offsets.md

The disentangler's one meaning map for every row was flat on the four-language table. A static table could instead
give each row its own language's map (a row's language from its script or the corpus that brought it), which folds
exactly for a text whose rows are all of one language. Before building that, this script measures its upper bound: the
language of every evaluation text is *told* (the side of the file it is on), and the text's vector (the table's mean
of rows, before ``Normalize``) goes through its language's transform:

- ``centred``: minus its language's mean vector over the foreign (or English) side of a pair file (``alpha`` x the
  mean; the English side's mean for English texts): a per-language offset, the language part at its simplest;
- ``mapped into English``: a ridge least-squares map of the unit foreign vectors onto their English translations'
  (each pair file's group on its own: ``parallel/`` and ``parallel/everyday/``), English texts unchanged.

Scores: cross-lingual STS (``stsb-en-XX-test``) and monolingual STS (``stsb-XX-test``), reported only; Tatoeba and Tux
Paint dev halves (both directions). Nothing here chooses a setting for a shipped model.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.common import (
    ISO_639_3,
    command_line,
    evaluate_sts,
    evaluate_translation_retrieval,
    load_model,
    log,
    machine,
    write_report,
)
from benchmarks.text_vectors import TextVectors
from st_static.data_files import read_translation_pairs
from st_static.evaluation.sts import read_sts_file

Transform = Callable[[np.ndarray, str], np.ndarray]
"""(raw mean-of-rows vectors of texts of one language, that language) -> vectors to compare by cosine."""


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def table_vectors(folder: Path) -> TextVectors:
    """A table's mean of rows per text (its first module alone: no ``Normalize``), each text encoded once."""
    from sentence_transformers import SentenceTransformer

    model = load_model(str(folder), device="cpu")
    return TextVectors(SentenceTransformer(modules=[model[0]], device="cpu"), normalize=False)


def told_encoder(vectors: TextVectors, transform: Transform, language_of: dict[str, str]) -> Callable:
    """An encoder that applies each text's language's transform (the language told by ``language_of``)."""

    def encode(texts: list[str]) -> np.ndarray:
        raw = vectors(list(texts))
        out = np.empty_like(raw)
        by_language: dict[str, list[int]] = defaultdict(list)
        for index, text in enumerate(texts):
            by_language[language_of[text]].append(index)
        for language, indices in by_language.items():
            out[indices] = transform(raw[indices], language)
        return unit(out)

    return encode


def evaluation_files(data: Path, languages: list[str]) -> dict[str, tuple[str, Path, str, str]]:
    """``name -> (kind, path, language of side 1, language of side 2)``."""
    files: dict[str, tuple[str, Path, str, str]] = {}
    for language in languages:
        files[f"stsb-en-{language}-test"] = ("sts", data / "sts" / f"stsb-en-{language}-test.tsv", "en", language)
    for language in ["en", *languages]:
        files[f"stsb-{language}-test"] = ("sts", data / "sts" / f"stsb-{language}-test.tsv", language, language)
    for language in languages:
        code = ISO_639_3.get(language, language)
        files[f"tatoeba-{language}"] = ("translation", data / "tatoeba" / f"{code}-eng.tsv", "en", language)
        files[f"tuxpaint-{language}"] = ("translation", data / "xling" / "tuxpaint" / f"{code}-eng.tsv", "en", language)
    return {name: entry for name, entry in files.items() if entry[1].is_file()}


def score(vectors: TextVectors, transform: Transform, files: dict[str, tuple[str, Path, str, str]]) -> dict:
    scores = {}
    for name, (kind, path, first, second) in files.items():
        if kind == "sts":
            pairs = read_sts_file(path)
            sides = (pairs.sentences1, pairs.sentences2)
        else:
            translation = read_translation_pairs(path)
            sides = ([pair[0] for pair in translation], [pair[1] for pair in translation])
        language_of = {text: first for text in sides[0]} | {text: second for text in sides[1]}
        encoder = told_encoder(vectors, transform, language_of)
        result = evaluate_sts(encoder, path) if kind == "sts" else evaluate_translation_retrieval(encoder, path, False)
        scores[name] = float(result["score"])
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--parallel", action="append", required=True, help="LANG=FILE (English first)")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--alphas", default="0.5,1", help="Shares of the language mean taken off")
    parser.add_argument("--ridge", default="1,10", help="Ridge penalties of the maps into English")
    parser.add_argument("--sample", type=int, default=5_000, help="Pairs per file for the language means")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()

    groups: dict[str, dict[str, list[tuple[str, str]]]] = defaultdict(dict)
    for entry in args.parallel:
        language, _, file = entry.partition("=")
        groups[Path(file).parent.name][language] = read_translation_pairs(Path(file))
    languages = sorted({language for group in groups.values() for language in group})
    vectors = table_vectors(args.model)
    files = evaluation_files(args.data, languages)

    generator = np.random.default_rng(0)
    english, foreign = [], defaultdict(list)
    for group in groups.values():
        for language, pairs in group.items():
            chosen = generator.permutation(len(pairs))[: args.sample]
            english += [pairs[index][0] for index in chosen]
            foreign[language] += [pairs[index][1] for index in chosen]
    means = {"en": vectors(english).mean(axis=0)}
    means |= {language: vectors(texts).mean(axis=0) for language, texts in foreign.items()}
    log("language mean norms: " + ", ".join(f"{lang} {np.linalg.norm(mean):.3f}" for lang, mean in means.items()))

    variants: dict[str, Transform] = {"baseline": lambda raw, language: raw}
    for alpha in (float(value) for value in args.alphas.split(",")):
        variants[f"centred, alpha {alpha:g}"] = lambda raw, language, alpha=alpha: raw - alpha * means[language]
    for group_name, group in groups.items():
        for penalty in (float(value) for value in args.ridge.split(",")):
            maps = {}
            for language, pairs in group.items():
                source = unit(vectors([pair[1] for pair in pairs]))
                target = unit(vectors([pair[0] for pair in pairs]))
                gram = source.T @ source + penalty * np.eye(source.shape[1], dtype=np.float32)
                maps[language] = np.linalg.solve(gram, source.T @ target)

            def mapped(raw: np.ndarray, language: str, maps: dict = maps) -> np.ndarray:
                return raw if language == "en" else unit(raw) @ maps[language]

            variants[f"mapped into English ({group_name}/, ridge {penalty:g})"] = mapped

    rows = {}
    for name, transform in variants.items():
        rows[name] = score(vectors, transform, files)
        log(f"{name}: {rows[name]}")

    cross = [f"stsb-en-{language}-test" for language in languages]
    mono = [f"stsb-{language}-test" for language in ["en", *languages]]
    tatoeba = [f"tatoeba-{language}" for language in languages]
    tuxpaint = [f"tuxpaint-{language}" for language in languages]
    columns = [*cross, *mono]
    lines = [
        f"# Language offsets and maps on {args.model.name} (each text's language told)",
        "",
        f"Command: `{command_line('benchmarks.experiments.language_offsets')}`",
        "",
        f"Machine: {machine()[0]} (beside a build). Scores x100: STS Spearman (test files, reported only); Tatoeba "
        "and Tux Paint dev halves, retrieval accuracy, mean of both directions. Upper bounds: the language of every "
        "text is the side of the file it is on.",
        "",
        "| variant | cross-lingual STS | " + " | ".join(columns) + " | Tatoeba (dev) | Tux Paint (dev) |",
        "|---|" + "---:|" * (len(columns) + 3),
    ]
    for name, scores in rows.items():
        cells = [np.mean([scores[c] for c in cross]), *(scores[c] for c in columns)]
        cells += [np.mean([scores[t] for t in tatoeba]), np.mean([scores[t] for t in tuxpaint])]
        lines.append(f"| {name} | " + " | ".join(f"{value:.2f}" for value in cells) + " |")
    lines += [
        "",
        "Language mean norms (mean of rows, the table's scale): "
        + ", ".join(f"{lang} {np.linalg.norm(mean):.3f}" for lang, mean in means.items())
        + ".",
    ]
    write_report(args.output, lines, rows)


if __name__ == "__main__":
    main()
