"""Changes to a built table that need no new build, scored on the task files' dev/test halves and on STS.

    python -m benchmarks.experiments.task_posthoc models/swe-minilm-256 \
        --targets models/swe-minilm-256.work/extraction-HASH/targets --teacher sentence-transformers/all-MiniLM-L6-v2 \
        --data ../shared/data --output benchmarks/results/2026-11-25-task-posthoc.md

Each variant is a function of the built table, so it answers "is the word vectors' content the limit, or how they
are weighted, mapped or pooled?" without a teacher pass:

* word weighting: every row scaled by a frequency weight from ``wordfreq`` (SIF ``a / (a + p(w))``, or
  ``(-log p(w)) ** alpha``), i.e. a weighted mean with the weights folded into the table;
* a linear map of the sentence space (ridge regression of the student's sentence vectors of the distillation
  sentences onto the teacher's), folded into the table;
* the teacher's one-word sentence embedding of every vocabulary word as a table of its own, and concatenated with
  the built table (normalised blocks, weight ``w`` on the second);
* reading only the first ``n`` words of every text.

Task scores come from ``benchmarks.task_levers`` (dev halves to choose on, test halves reported).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from benchmarks.common import command_line, resolve_teacher, task_evaluator
from benchmarks.task_levers import STS_DEV, STS_TEST, report, scored_row, task_scores

Encode = Callable[[list[str]], np.ndarray]


class Encoder:
    """The ``encode`` that ``task_scores`` and the STS evaluator call, around a plain function."""

    def __init__(self, function: Encode) -> None:
        self.function = function

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        vectors = self.function(list(texts))
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def __call__(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts)


def table_encoder(model: object, table: np.ndarray) -> Encoder:
    """``model`` with its word table replaced by ``table`` (same rows)."""
    import copy

    from st_static import encode

    variant = copy.deepcopy(model)
    variant[0].embedding.weight = torch.nn.Parameter(torch.tensor(table, dtype=torch.float32))  # type: ignore[index]
    variant[0]._numpy_table = None  # type: ignore[index]
    return Encoder(lambda texts: encode(variant, texts))


def frequency_weights(words: list[str], rows: int) -> np.ndarray:
    """``wordfreq`` frequency of every row's word (sub-word pieces without ``##``; a floor of 1e-8)."""
    from wordfreq import word_frequency

    frequencies = [word_frequency(word.removeprefix("##"), "en") for word in words]
    return np.maximum(np.array(frequencies + [0.0] * (rows - len(words))), 1e-8)


def linear_map(model: object, targets: Path, ridge: float, center: bool) -> np.ndarray:
    """Ridge map from the student's normalised sentence vectors to the teacher's (normalised, optionally centred)."""
    from st_static import encode

    teacher = np.load(targets / "teacher_embeddings.npy").astype(np.float64)
    sentences = (targets / "sentences.txt").read_text(encoding="utf-8").split("\n")[: len(teacher)]
    student = encode(model, sentences).astype(np.float64)
    known = np.linalg.norm(student, axis=1) > 0
    x, y = student[known], teacher[known]
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    if center:
        y -= y.mean(axis=0)
    gram = x.T @ x
    return np.linalg.solve(gram + ridge * np.trace(gram) / len(gram) * np.eye(len(gram)), x.T @ y)


def variants(model: object, arguments: argparse.Namespace) -> dict[str, Encoder]:
    """Every post-hoc variant of ``model``'s table, by name."""
    from sentence_transformers import SentenceTransformer

    from st_static import encode

    table = model[0].embedding.weight.detach().numpy().astype(np.float64)  # type: ignore[index]
    words = list(model[0].vocabulary)  # type: ignore[index]
    frequency = frequency_weights(words, len(table))[:, None]
    found: dict[str, Encoder] = {"built table": Encoder(lambda texts: encode(model, texts))}
    for a in (1e-3, 1e-4):
        found[f"SIF weights a={a:g}"] = table_encoder(model, table * (a / (a + frequency)))
    for alpha in (0.5, 1.0):
        found[f"(-log p)^{alpha:g} weights"] = table_encoder(model, table * (-np.log(frequency)) ** alpha)
    for center in (False, True):
        weight = linear_map(model, arguments.targets, 1e-3, center)
        found[f"linear map to the teacher{' (centred)' if center else ''}"] = table_encoder(model, table @ weight)
    teacher = SentenceTransformer(resolve_teacher(arguments.teacher), device="cpu")
    alone = teacher.encode(words, batch_size=512, convert_to_numpy=True)
    alone_table = np.zeros((len(table), alone.shape[1]))
    alone_table[: len(words)] = alone - alone.mean(axis=0)
    alone_encoder = table_encoder(model, alone_table)
    found["teacher's one-word embeddings as the table"] = alone_encoder
    built = found["built table"]
    for weight in (0.5, 1.0):

        def concatenated(texts: list[str], weight: float = weight) -> np.ndarray:
            return np.concatenate([built.encode(texts), weight * alone_encoder.encode(texts)], axis=1)

        found[f"built + one-word table, w={weight:g}"] = Encoder(concatenated)
    for count in (32, 128):
        found[f"first {count} words of each text"] = Encoder(
            lambda texts, count=count: encode(model, [" ".join(text.split()[:count]) for text in texts])
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="an st-static model folder")
    parser.add_argument("--targets", type=Path, required=True, help="WORK/extraction-*/targets of its build")
    parser.add_argument("--teacher", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()

    from st_static import load_model

    model = load_model(arguments.model)
    evaluate_sts = task_evaluator(arguments.data, ",".join((*STS_DEV, *STS_TEST)))
    rows = []
    for name, encoder in variants(model, arguments).items():
        sts = {task: result["score"] for task, result in evaluate_sts(encoder).items()}
        rows.append(scored_row(name, sts, task_scores(encoder, arguments.data / "tasks")))
        print(json.dumps(rows[-1]), flush=True)
    report(rows, arguments.output, command_line("benchmarks.experiments.task_posthoc"), "Post-hoc task levers")


if __name__ == "__main__":
    main()
