"""What a cross-lingual table's Tatoeba gap to its teacher is made of: text without rows, rows the completion
added, words the pairs rarely show.

    python -m benchmarks.experiments.tatoeba_gap MODELS/x --work MODELS/x.work \
        --teacher TEACHERS/multilingual-e5-small --prompt 'query: ' --data ../shared/data --languages de,ja,zh \
        --output benchmarks/results/DATE-tatoeba-gap.md

For each language's Tatoeba file (the public dev halves), every foreign sentence is read as the table reads it (its
tokenizer) and sorted into groups by:

- **coverage**: every letter reads a word row (``covered``), or some letter reads a piece row (of an unknown word), a
  fallback row or nothing (``has text without rows``);
- **completion rows**: whether one of its tokens reads a row the completion stage added (the teacher's own token
  vector, with no sentence of the pairs behind it; the completion's words are those of the ``completion-*`` folder
  that the ``extraction-*`` folder lacks);
- **pair frequency**: the fewest times one of its word rows occurs in the foreign side of the pair files
  (``--pairs``, default the build's ``DATA/parallel/en-xx.tsv`` and ``extra/en-xx.tsv``): ``rarest < 10`` or ``>= 10``.

Per group: sentences, the table's and the teacher's retrieval accuracy (mean of both directions, each sentence's
own row of the 500 x 500 similarity matrix), and the gap x the group's share = its part of the whole gap.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import command_line, log, write_report

TATOEBA = {"de": "deu", "ja": "jpn", "zh": "cmn"}
RARE = 10
"""A word row seen fewer times than this in the foreign side of the pairs is rare."""


def correct_both_ways(english: np.ndarray, foreign: np.ndarray) -> np.ndarray:
    """Per pair i, the mean of [the foreign row i finds English i] and [English i finds foreign i] (0, 0.5 or 1)."""
    english = english / np.linalg.norm(english, axis=1, keepdims=True)
    foreign = foreign / np.linalg.norm(foreign, axis=1, keepdims=True)
    similarity = foreign @ english.T
    rows = np.arange(len(similarity))
    return ((similarity.argmax(axis=1) == rows).astype(float) + (similarity.argmax(axis=0) == rows)) / 2


def read_pairs(path: Path) -> tuple[list[str], list[str]]:
    """The English and the foreign column of a Tatoeba file."""
    from st_static.data_files import read_translation_pairs

    pairs = read_translation_pairs(path)
    return [english for english, _ in pairs], [foreign for _, foreign in pairs]


class RowReader:
    """How a table's tokenizer reads text: each token's row and its kind (word, completion word, fallback, none)."""

    def __init__(self, model: Any, completion_words: set[str]) -> None:
        from st_static.model.tokenization import DROPPED, SENTINEL, fallback_layout, piece_rows_of, token_targets

        self.tokenizer = model[0].tokenizer
        self.sentinel = SENTINEL
        self.targets, self.num_words = token_targets(self.tokenizer)
        self.dropped = DROPPED
        vocab = self.tokenizer.get_vocab(with_added_tokens=False)
        self.completion_rows = {vocab[word] for word in completion_words if word in vocab}
        layout = fallback_layout(self.tokenizer, vocab)
        pieces = piece_rows_of(self.tokenizer, vocab)
        self.word_rows = pieces.start if len(pieces) else self.num_words if layout is None else layout.sentinel_row
        """Rows below this are words (above: the pieces of unknown words, then the fallback rows)."""

    def rows(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        """Per text, ``(row or -1, letters)`` for each token (the sentinel and symbols skipped)."""
        read = []
        for text, encoding in zip(texts, self.tokenizer.encode_batch(texts, add_special_tokens=False), strict=True):
            tokens = []
            for token, token_id, (start, end) in zip(encoding.tokens, encoding.ids, encoding.offsets, strict=True):
                if token == self.sentinel:  # the empty-text row every text reads (its offsets are the first letter's)
                    continue
                row = int(self.targets[token_id])
                letters = sum(1 for character in text[start:end] if character.isalnum())
                tokens.append((row if row != self.dropped else -1, letters))
            read.append(tokens)
        return read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", type=Path, help="the finished cross-lingual table")
    parser.add_argument("--work", type=Path, required=True, help="its work folder (extraction-*, completion-*)")
    parser.add_argument("--teacher", required=True)
    parser.add_argument("--prompt", default="")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--languages", default="de,ja,zh")
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()

    from sentence_transformers import SentenceTransformer

    from st_static.model.save_load import load_model

    model = load_model(arguments.model)
    teacher = SentenceTransformer(arguments.teacher, device="cpu")
    completion_words = words_added_by_completion(arguments.work)
    reader = RowReader(model, completion_words)
    lines = [
        "# Where the cross-lingual table loses to its teacher on Tatoeba",
        "",
        f"Command: `{command_line('benchmarks.experiments.tatoeba_gap')}`",
        "",
        "Tatoeba dev halves (500 pairs a language); accuracy x100, mean of both directions; part of gap: the group's "
        "gap times its share of the sentences (the parts add up to the whole gap).",
        "",
        "| language | group | sentences | table | teacher | gap | part of gap |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    rows: list[dict[str, Any]] = []
    for language in arguments.languages.split(","):
        english, foreign = read_pairs(arguments.data / "tatoeba" / f"{TATOEBA[language]}-eng.tsv")
        table = correct_both_ways(model.encode(english), model.encode(foreign))
        prompted = [arguments.prompt + text for text in english + foreign]
        taught = teacher.encode(prompted, batch_size=64)
        teacher_correct = correct_both_ways(taught[: len(english)], taught[len(english) :])
        frequency = pair_frequency(reader, arguments.data, language)
        groups = sentence_groups(reader.rows(foreign), reader, frequency)
        for name, members in groups.items():
            if not members.any():
                continue
            share = members.mean()
            row = {
                "language": language,
                "group": name,
                "sentences": int(members.sum()),
                "table": 100 * table[members].mean(),
                "teacher": 100 * teacher_correct[members].mean(),
            }
            row["gap"] = row["teacher"] - row["table"]
            row["part"] = row["gap"] * share
            rows.append(row)
            lines.append(
                f"| {language} | {name} | {row['sentences']} | {row['table']:.1f} | {row['teacher']:.1f} | "
                f"{row['gap']:+.1f} | {row['part']:+.1f} |"
            )
            log(str(row))
    write_report(arguments.output, lines, rows)


def words_added_by_completion(work: Path) -> set[str]:
    """The words of the newest ``completion-*`` table that the newest ``extraction-*`` table lacks."""

    def words(prefix: str) -> set[str]:
        folders = sorted(work.glob(f"{prefix}-*"), key=lambda path: path.stat().st_mtime)
        folders = [folder for folder in folders if (folder / "model").is_dir()]
        if not folders:
            return set()
        from tokenizers import Tokenizer

        return set(Tokenizer.from_file(str(folders[-1] / "model" / "tokenizer.json")).get_vocab())

    return words("completion") - words("extraction")


def pair_frequency(reader: RowReader, data: Path, language: str) -> Counter[int]:
    """How often each row occurs in the foreign side of the build's pair files for ``language``."""
    from st_static.extraction.pair_sources import read_pairs as read_pair_file

    counts: Counter[int] = Counter()
    for path in (data / "parallel" / f"en-{language}.tsv", data / "parallel" / "extra" / f"en-{language}.tsv"):
        if path.is_file():
            foreign = [second for _, second in read_pair_file(path)]
            for start in range(0, len(foreign), 20000):
                for tokens in reader.rows(foreign[start : start + 20000]):
                    counts.update(row for row, _ in tokens if 0 <= row < reader.word_rows)
    return counts


def sentence_groups(
    read: list[list[tuple[int, int]]], reader: RowReader, frequency: Counter[int]
) -> dict[str, np.ndarray]:
    """Boolean masks over the sentences: all, by coverage, by completion rows, by pair frequency."""
    uncovered, completed, rare = [], [], []
    for tokens in read:
        letters = [(row, count) for row, count in tokens if count > 0]
        uncovered.append(any(row < 0 or row >= reader.word_rows for row, _ in letters))
        completed.append(any(row in reader.completion_rows for row, _ in letters))
        words = [row for row, _ in letters if 0 <= row < reader.word_rows]
        rare.append(bool(words) and min(frequency[row] for row in words) < RARE)
    uncovered_mask, completed_mask, rare_mask = (np.array(mask, dtype=bool) for mask in (uncovered, completed, rare))
    return {
        "all": np.ones(len(read), dtype=bool),
        "covered": ~uncovered_mask,
        "has text without rows": uncovered_mask,
        "covered, no completion row": ~uncovered_mask & ~completed_mask,
        "covered, a completion row": ~uncovered_mask & completed_mask,
        f"covered, rarest word >= {RARE} in pairs": ~uncovered_mask & ~rare_mask,
        f"covered, rarest word < {RARE} in pairs": ~uncovered_mask & rare_mask,
    }


if __name__ == "__main__":
    main()
