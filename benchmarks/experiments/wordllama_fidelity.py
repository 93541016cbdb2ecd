"""Issue 64 experiment: does the WordLlama block's low agreement with WordLlama's own vectors cost the ensemble?

An ensemble's WordLlama block reads each word alone (lowercased, as our table's keys are, and cut from punctuation, as
our tables split text), so it agrees with WordLlama's own ``embed`` (the whole text through its SentencePiece
tokenizer, case kept, no pre-tokenizer) at a mean cosine of about 0.91 (``benchmarks.ensembles``). Here the ensemble
is computed text by text, with WordLlama's block read four ways: its own (the whole text as given), the text
lowercased, the text with punctuation cut off words, and both (about what the union table reads). The other members
read the text as they do; the blocks are normalised, weighted and concatenated (the seed's equation 1). Every row is
scored on the English task files' dev halves (test halves reported only).

    python -m benchmarks.experiments.wordllama_fidelity --ours MODELS/swe-nomic-minilm-256d \\
        --potion MODELS/teachers/potion-base-8M --weights 3,1,1 --data ../shared/data \\
        --output benchmarks/results/DATE-wordllama-fidelity.md
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.common import command_line, log, machine, task_scores, write_report
from st_static import load_model
from st_static.compression.members import cosine_agreement
from st_static.compression.token_tables import TokenTable, read_token_table, read_wordllama

WORDLLAMA = "wordllama:l2_supercat:256"
WORD_OR_SYMBOL = re.compile(r"\w+|[^\w\s]")

READINGS: dict[str, Callable[[str], str]] = {
    "own (text as given)": lambda text: text,
    "lowercased": str.lower,
    "punctuation cut off": lambda text: " ".join(WORD_OR_SYMBOL.findall(text)),
    "lowercased, punctuation cut off": lambda text: " ".join(WORD_OR_SYMBOL.findall(text.lower())),
}
"""How the WordLlama block reads a text: the name of the row and the text WordLlama is given."""


def unit(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to norm 1 (zero rows stay zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


class TextEnsemble:
    """The ensemble of three members computed text by text; ``encode`` as ``benchmarks.common.task_scores`` calls it."""

    def __init__(
        self, ours: object, potion: TokenTable, wordllama: TokenTable, weights: list[float], reading: Callable
    ) -> None:
        self.ours, self.potion, self.wordllama, self.weights, self.reading = ours, potion, wordllama, weights, reading

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        blocks = [
            unit(self.ours.encode(texts, batch_size=1024)),  # type: ignore[attr-defined]
            unit(self.potion.encode(texts)),
            unit(self.wordllama.encode([self.reading(text) for text in texts])),
        ]
        return unit(np.concatenate([weight * block for weight, block in zip(self.weights, blocks, strict=True)], 1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ours", type=Path, required=True, help="a st-static table")
    parser.add_argument("--potion", type=Path, required=True, help="potion-base-8M (a model2vec folder)")
    parser.add_argument("--weights", default="3,1,1", help="ours, potion, wordllama (chosen on dev elsewhere)")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--agreement-lines", type=int, default=1000)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    weights = [float(weight) for weight in args.weights.split(",")]
    ours, potion, wordllama = load_model(str(args.ours)), read_token_table(str(args.potion)), read_wordllama(WORDLLAMA)
    lines = [line.strip() for line in (args.data / "corpus" / "en-modern.txt").open(encoding="utf-8")]
    lines = [line for line in lines if line][: args.agreement_lines]
    own = wordllama.encode(lines)
    rows = []
    for name, reading in READINGS.items():
        log(f"scoring the ensemble with WordLlama read {name}")
        agreement = float(cosine_agreement(wordllama.encode([reading(line) for line in lines]), own).mean())
        tasks = task_scores(TextEnsemble(ours, potion, wordllama, weights, reading), args.data / "tasks")
        rows.append((name, agreement, tasks))
    task_names = list(rows[0][2])
    cpu, system = machine()
    lines_out = [
        "# The WordLlama block read as WordLlama reads a text, and as our table reads it",
        "",
        f"Command: `{command_line('benchmarks.experiments.wordllama_fidelity', argv)}`",
        f"Machine: {cpu}, {system}. Members: ours = `{args.ours.name}`, potion = `{args.potion.name}`, "
        f"wordllama = `{WORDLLAMA}`; weights {args.weights}.",
        "",
        f"Agreement: mean cosine with WordLlama's own vectors on the first {len(lines):,} lines of `en-modern.txt`. "
        "Task columns: dev half / test half (test reported only).",
        "",
        "| WordLlama reads the text | agreement | " + " | ".join(task_names) + " | task dev mean | task test mean |",
        "| --- | ---: | " + " | ".join("---:" for _ in task_names) + " | ---: | ---: |",
    ]
    for name, agreement, tasks in rows:
        cells = [f"{dev:.2f} / {test:.2f}" for dev, test in tasks.values()]
        dev_mean = np.mean([dev for dev, _ in tasks.values()])
        test_mean = np.mean([test for _, test in tasks.values()])
        means = f"{dev_mean:.2f} | {test_mean:.2f}"
        lines_out.append(f"| {name} | {agreement:.4f} | " + " | ".join(cells) + f" | {means} |")
    write_report(args.output, lines_out)


if __name__ == "__main__":
    main()
