"""Out-of-vocabulary rate of models on the words of evaluation files (word occurrences and distinct words).

    python -m benchmarks.oov_rate --data ../shared/data --tasks stsb-en-test,sick-dev \
        --model "corpus only=MODELS/without-completion" --model "completed=MODELS/swe-minilm-256" \
        --output benchmarks/results/DATE-oov-rate.md

Words are split as the model splits them (:func:`st_static.model.tokenization.split_words`) and case-folded as it does;
a word is out of vocabulary when it has no row of its own (it then falls back to a case variant or a prefix).
"""

from __future__ import annotations

import argparse
import csv
from collections import Counter
from pathlib import Path

from benchmarks.common import load_model, split_words


def task_words(path: Path) -> Counter[str]:
    """Occurrences of every word in both sentence columns of a task file."""
    words: Counter[str] = Counter()
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            for column in ("sentence1", "sentence2"):
                words.update(split_words(row[column]))
    return words


def oov(words: Counter[str], vocabulary: set[str], lowercase: bool) -> tuple[float, float, list[str]]:
    """Share of occurrences and of distinct words without a row, and the most frequent of those words."""
    missing = Counter()
    for word, count in words.items():
        key = word.lower() if lowercase else word
        if key not in vocabulary:
            missing[key] += count
    return (
        sum(missing.values()) / sum(words.values()),
        len(missing) / len({word.lower() if lowercase else word for word in words}),
        [word for word, _ in missing.most_common(12)],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--tasks", default="stsb-en-test,sick-dev")
    parser.add_argument("--model", action="append", required=True, help="LABEL=FOLDER")
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()

    candidates = {
        task: [arguments.data / folder / f"{task}.tsv" for folder in ("sts", "pairclass")]
        for task in arguments.tasks.split(",")
    }
    files = {task: next(path for path in paths if path.exists()) for task, paths in candidates.items()}
    words = {task: task_words(path) for task, path in files.items()}
    lines = [
        "# Out-of-vocabulary words on evaluation files",
        "",
        "Command: `python -m benchmarks.oov_rate --tasks "
        + arguments.tasks
        + " "
        + " ".join(f"--model {item.split('=')[0]}=MODELS/..." for item in arguments.model)
        + "`.",
        "",
        "| model | words in table | "
        + " | ".join(f"{task} OOV (occurrences / distinct)" for task in files)
        + " | most frequent OOV words |",
        "| --- | ---: | " + " | ".join("---:" for _ in files) + " | --- |",
    ]
    for item in arguments.model:
        label, _, folder = item.partition("=")
        module = load_model(folder)[0]
        vocabulary = set(module.vocabulary)
        results = {task: oov(counts, vocabulary, module.lowercase) for task, counts in words.items()}
        examples = next(iter(results.values()))[2]
        lines.append(
            f"| {label} | {len(vocabulary):,} | "
            + " | ".join(f"{100 * by_count:.2f}% / {100 * by_word:.2f}%" for by_count, by_word, _ in results.values())
            + f" | {', '.join(examples)} |"
        )
    text = "\n".join(lines) + "\n"
    if arguments.output:
        arguments.output.parent.mkdir(parents=True, exist_ok=True)
        arguments.output.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
