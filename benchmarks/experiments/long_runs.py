"""Long runs of Chinese or Japanese without punctuation: read in pieces, or as one unknown word.

    python -m benchmarks.experiments.long_runs MODELS/swe-multilingual-e5-small-en-de-ja-zh-extra \
        --data ../shared/data --output benchmarks/results/DATE-long-runs.md

WordPiece makes a pre-token longer than its limit (100 characters) ``[UNK]``. A run of a script written without
spaces is one pre-token, so before the cut (``st_static.model.tokenization.SPACELESS_CHUNK_PATTERN``) a sentence of
more than 100 such characters without punctuation read no row at all. Texts that give such runs: ``--sentences``
consecutive Tatoeba sentences (the public dev halves) joined with their punctuation removed, as chat, titles or
scraped text give them; each is retrieved against the same sentences' English, joined with spaces. The table is
read twice: as saved, and with the pre-tokeniser of a table built before the cut (same rows, same words).
"""

from __future__ import annotations

import argparse
import re
import unicodedata
from pathlib import Path

import numpy as np

from benchmarks.common import command_line, load_average, log, machine, with_tokenizer_state, write_report

TATOEBA = {"ja": "jpn", "zh": "cmn"}
RUN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uff10-\uff5a]+")
"""A run of the space-less scripts (and the full-width letters and digits written inside them)."""


def without_punctuation(text: str) -> str:
    """``text`` without its punctuation and spaces (ASCII and CJK)."""
    return "".join(char for char in text if not char.isspace() and not unicodedata.category(char).startswith("P"))


def without_the_cut(model: object) -> object:
    """The same table with the pre-tokeniser of a table built before the cut of long runs."""
    import json

    from st_static.model.tokenization import fallback_pre_tokenizer, has_fallback_pre_tokenizer, word_pre_tokenizer

    plain = fallback_pre_tokenizer() if has_fallback_pre_tokenizer(model[0].tokenizer) else word_pre_tokenizer()  # type: ignore[index]
    return with_tokenizer_state(model, lambda state: state.update(pre_tokenizer=json.loads(plain.__getstate__())))


def accuracy(model: object, english: list[str], foreign: list[str]) -> np.ndarray:
    """Per text, the mean of [foreign i finds English i] and [English i finds foreign i]."""
    english_vectors = model.encode(english, normalize_embeddings=True)  # type: ignore[attr-defined]
    foreign_vectors = model.encode(foreign, normalize_embeddings=True)  # type: ignore[attr-defined]
    similarity = foreign_vectors @ english_vectors.T
    rows = np.arange(len(similarity))
    return ((similarity.argmax(axis=1) == rows).astype(float) + (similarity.argmax(axis=0) == rows)) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--languages", default="ja,zh")
    parser.add_argument("--sentences", type=int, default=6, help="Tatoeba sentences joined into one text")
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()

    from st_static import load_model
    from st_static.data_files import read_translation_pairs
    from st_static.model.tokenization import DEFAULT_MAX_WORD_CHARS

    saved = load_model(arguments.model)
    variants = {"before the cut": without_the_cut(saved), "as saved": saved}
    count = arguments.sentences
    lines = [
        "# Long runs of Chinese or Japanese without punctuation",
        "",
        f"Command: `{command_line('benchmarks.experiments.long_runs')}`",
        f"Machine: {machine()[0]}; load average {load_average()}.",
        f"Model: `{Path(arguments.model).name}`. Texts: {count} consecutive Tatoeba dev sentences joined with their "
        "punctuation removed, retrieved against their English (accuracy x100, mean of both directions). A long run: "
        f"one of more than {DEFAULT_MAX_WORD_CHARS} characters of the script.",
        "",
        "| language | texts | with a long run | table read | accuracy, all texts | accuracy, texts with a long run |",
        "| --- | ---: | ---: | --- | ---: | ---: |",
    ]
    rows = []
    for language in arguments.languages.split(","):
        pairs = read_translation_pairs(arguments.data / "tatoeba" / f"{TATOEBA[language]}-eng.tsv")
        total = len(pairs)
        english = [" ".join(pairs[(start + step) % total][0] for step in range(count)) for start in range(total)]
        foreign = [
            "".join(without_punctuation(pairs[(start + step) % total][1]) for step in range(count))
            for start in range(total)
        ]
        long = np.array([max(map(len, RUN.findall(text)), default=0) > DEFAULT_MAX_WORD_CHARS for text in foreign])
        for name, model in variants.items():
            correct = accuracy(model, english, foreign)
            on_long = float(correct[long].mean() * 100) if long.any() else float("nan")
            row = {"language": language, "texts": total, "long": int(long.sum()), "read": name}
            row |= {"all": float(correct.mean() * 100), "long_texts": on_long}
            rows.append(row)
            lines.append(f"| {language} | {total} | {int(long.sum())} | {name} | {row['all']:.1f} | {on_long:.1f} |")
            log(f"{language} {name}: {row['all']:.1f} / {on_long:.1f}")
    write_report(arguments.output, lines, rows)


if __name__ == "__main__":
    main()
