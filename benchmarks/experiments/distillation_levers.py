"""Levers on the distillation that the build's settings cannot express, tried on one cached build.

    python -m benchmarks.experiments.distillation_levers --work models/swe-minilm-256.work --data ../shared/data \
        --second-teacher-work models/swe-all-mpnet-base-v2-256d.work \
        --output benchmarks/results/2026-11-23-distillation-levers.md

Every variant starts from the build's PCA-stage table (sentence PCA with ABTT, ``--pca-dim``) and trains it on the
build's cached teacher targets with the build's distillation: ``similarity_distillation_loss`` (temperature 0.05)
on centred teacher embeddings, batches of 512, sparse Adam at lr 3e-3, 5,000 steps, validation loss on 4,096
held-out sentences every 500 steps (the table with the lowest one is kept), then the refinement's ridge map for
rows no batch reached. It is a plain torch loop rather than the sentence-transformers trainer, so that the batches
and the loss can change; its ``baseline`` row reproduces the build (compare with the model's ``evaluation.json``).
Variants:
- ``cosine MSE x w``: adds ``w * mean((S - T)^2)`` over the off-diagonal cosine similarities, so the loss also sees
  how far apart unrelated sentences are, not only who is nearest.
- ``joint teacher``: the targets are the two teachers' centred, normalised embeddings concatenated (their cosine
  matrices averaged); needs ``--second-teacher-work`` built on the same sentences.
- ``word-drop/swap variants``: 10,000 sentences each get a copy with one word dropped and one with one word replaced
  by a frequent corpus word, encoded by the teacher and batched next to their source sentence, so a batch holds
  near-paraphrases the loss must tell apart as the teacher does.
- ``words alone``: every vocabulary word, encoded alone by the teacher, joins the training sentences.
- ``extra corpus``: the lines of each ``--extra-corpus`` file (text of another kind than the build's corpus), encoded
  by the teacher, join the training sentences; with ``--extra-weight k`` each appears k times per epoch.
- ``short sentences x k``: training sentences of at most 10 words are drawn k times per epoch (k = 2, 4), leaning
  the distillation towards short, caption-like text.
- ``mean+max pooling``: the student's sentence vector is its normalised mean word vector next to ``w`` times its
  normalised element-wise maximum (w = 0.5 and 1), in training and in the scores.
- ``token table``: a table over the teacher's sub-word tokens instead of words (``--token-table``: a model2vec
  folder, e.g. ``model2vec.distill`` of the same teacher at 256 dimensions), trained with the same distillation on
  the same sentences; scored alone (mean of token vectors) and next to the baseline word table (each block
  normalised, equal weights).
- ``word + token table, trained together``: the word table and that token table trained as one student, folded
  back into word rows afterwards (a word's token part is the sum of its tokens' rows). ``sum``: a word's vector is
  its row plus the mean of its tokens' rows (one 256-wide word table; token rows start at zero). ``concat``: the
  normalised mean of word rows next to the normalised mean of the words' token rows (512 wide).
After training, the baseline table is also changed without training: centred and with its top principal components
(over corpus sentence vectors) removed, and with every row's norm shrunk to its square root.
Choose on the dev columns; stsb-en-test is printed for the record only.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from benchmarks.common import (
    DEV_TASKS,
    REPO,
    TEST_TASKS,
    dev_mean,
    load_model,
    propagate_refinement,
    similarity_distillation_loss,
    task_evaluator,
    task_table_header,
    write_report,
)
from st_static.model.metadata import ModelMetadata

VALIDATION_SIZE = 4096
LEVERS = (
    "mse",
    "joint-teacher",
    "variants",
    "words-alone",
    "extra-corpus",
    "max-pooling",
    "short-sentences",
    "token-table",
    "word-token-joint",
    "post-hoc",
    "student-temperature",
)


def stage_folder(work: Path, stage: str, **expected: object) -> Path:
    """The one cached ``stage`` folder of ``work`` with these settings (extraction: its ``stats.json`` settings;
    other stages: the model's metadata)."""
    found = []
    for folder in sorted(work.glob(f"{stage}-*")):
        if stage == "extraction":
            data = json.loads((folder / "stats.json").read_text())["settings"]
        else:
            config = json.loads((folder / "st_static_config.json").read_text())
            data = ModelMetadata.from_dict(config.get("metadata"), source=str(folder)).to_dict()
        if all(data.get(key) == value for key, value in expected.items()):
            found.append(folder)
    if len(found) != 1:
        raise SystemExit(f"error: {len(found)} {stage} folders in {work} match {expected}; expected one.")
    return found[0]


def centred(targets: np.ndarray) -> np.ndarray:
    return (targets - targets.mean(axis=0)).astype(np.float32)


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def encode_with_teacher(teacher: str, texts: list[str], cache: Path) -> np.ndarray:
    """The teacher's sentence embeddings of ``texts``, cached in ``cache`` (an ``.npy`` file)."""
    if cache.is_file():
        return np.load(cache)
    from sentence_transformers import SentenceTransformer

    embeddings = SentenceTransformer(teacher, device="cpu").encode(texts, batch_size=128, show_progress_bar=True)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache.with_suffix(".tmp.npy"), embeddings.astype(np.float32))
    cache.with_suffix(".tmp.npy").rename(cache)
    return embeddings.astype(np.float32)


def sentence_variants(sentences: list[str], count: int, seed: int = 1) -> tuple[list[str], list[int]]:
    """For ``count`` sentences of 4-30 words: one copy without a random word and one with a word swapped for a
    frequent corpus word (drawn by the square root of its count). Returns the copies and their source indices."""
    rng = np.random.default_rng(seed)
    counts = Counter(word.lower() for text in sentences[:50_000] for word in re.findall(r"[A-Za-z]+", text))
    pool = [word for word, _ in counts.most_common(20_000)]
    weights = np.sqrt(np.array([counts[word] for word in pool], dtype=np.float64))
    weights /= weights.sum()
    candidates = [index for index, text in enumerate(sentences) if 4 <= len(text.split()) <= 30]
    texts, sources = [], []
    for index in rng.choice(candidates, size=min(count, len(candidates)), replace=False):
        words = sentences[index].split()
        alphabetic = [position for position, word in enumerate(words) if re.search(r"[A-Za-z]", word)]
        if len(alphabetic) < 3:
            continue
        dropped = int(rng.choice(alphabetic))
        texts.append(" ".join(words[:dropped] + words[dropped + 1 :]))
        swapped = list(words)
        position = int(rng.choice(alphabetic))
        swapped[position] = str(rng.choice(pool, p=weights))
        texts.append(" ".join(swapped))
        sources += [int(index), int(index)]
    return texts, sources


class Lever:
    """One distillation run over a fixed set of texts with teacher targets."""

    def __init__(
        self,
        pca_folder: Path,
        texts: list[str],
        targets: np.ndarray,
        arguments: argparse.Namespace,
        max_weight: float = 0.0,
    ) -> None:
        self.max_weight = max_weight
        self.model = load_model(str(pca_folder))
        self.module = self.model[0]
        self.num_words = self.module.num_words
        self.before = self.module.word_vectors.detach().clone()
        rows, offsets = self.module.token_ids(texts)
        self.rows = rows
        self.starts = offsets
        self.lengths = np.diff(np.append(offsets, len(rows)))
        self.targets = torch.from_numpy(np.ascontiguousarray(targets, dtype=np.float32))
        self.arguments = arguments

    def embed(self, table: torch.Tensor, batch: np.ndarray) -> torch.Tensor:
        pieces = [self.rows[self.starts[i] : self.starts[i] + self.lengths[i]] for i in batch]
        sizes = torch.tensor([len(piece) for piece in pieces])
        flat = torch.from_numpy(np.concatenate(pieces))
        known = (flat < self.num_words).float()  # the [UNK] row counts for nothing, as in the model
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), sizes.cumsum(0)[:-1]])
        sums = F.embedding_bag(flat, table, offsets, mode="sum", per_sample_weights=known, sparse=True)
        bags = torch.repeat_interleave(torch.arange(len(batch)), sizes)
        counts = torch.zeros(len(batch)).index_add_(0, bags, known)
        means = sums / counts.clamp(min=1.0)[:, None]
        if not self.max_weight:
            return means
        # embedding_bag's max mode has no sparse gradient: pad each bag's rows and take the maximum
        positions = torch.arange(len(flat)) - torch.repeat_interleave(offsets, sizes)
        padded = torch.full((len(batch), max(int(sizes.max()), 1), table.shape[1]), -1e4)
        padded = padded.index_put((bags, positions), F.embedding(flat, table, sparse=True))
        maxima = padded.max(dim=1).values
        maxima = torch.where(maxima <= -1e3, torch.zeros_like(maxima), maxima)  # empty texts
        return torch.cat([F.normalize(means, dim=1), self.max_weight * F.normalize(maxima, dim=1)], dim=1)

    def loss(
        self, student: torch.Tensor, teacher: torch.Tensor, mse_weight: float, student_temperature: float | None = None
    ) -> torch.Tensor:
        if student_temperature is None:
            loss = similarity_distillation_loss(student, teacher, 0.05)
        else:  # the teacher's distribution at 0.05, the student's at its own temperature
            diagonal = torch.eye(len(student), dtype=torch.bool)
            teacher_cosines = F.normalize(teacher, dim=1) @ F.normalize(teacher, dim=1).T
            teacher_probs = (teacher_cosines / 0.05).masked_fill(diagonal, -math.inf).softmax(dim=1)
            student_cosines = F.normalize(student, dim=1) @ F.normalize(student, dim=1).T
            logits = (student_cosines / student_temperature).masked_fill(diagonal, -math.inf)
            loss = -(teacher_probs * logits.log_softmax(dim=1).masked_fill(diagonal, 0.0)).sum(dim=1).mean()
        if mse_weight:
            off_diagonal = ~torch.eye(len(student), dtype=torch.bool)
            student_cosines = F.normalize(student, dim=1) @ F.normalize(student, dim=1).T
            teacher_cosines = F.normalize(teacher, dim=1) @ F.normalize(teacher, dim=1).T
            loss = loss + mse_weight * ((student_cosines - teacher_cosines)[off_diagonal] ** 2).mean()
        return loss

    def train(
        self,
        batches: Callable[[int], Iterator[np.ndarray]],
        validation: np.ndarray,
        mse_weight: float = 0.0,
        student_temperature: float | None = None,
    ) -> dict[str, object]:
        torch.manual_seed(0)
        table = torch.nn.Parameter(torch.cat([self.before, torch.zeros(1, self.before.shape[1])]))
        optimizer = torch.optim.SparseAdam([table], lr=3e-3)

        def validation_loss() -> float:
            with torch.no_grad():
                chunks = [validation[start : start + 512] for start in range(0, len(validation), 512)]
                values = [
                    self.loss(self.embed(table, chunk), self.targets[chunk], 0.0, student_temperature).item()
                    for chunk in chunks
                ]
                return float(np.mean(values))

        best = (validation_loss(), 0, table.detach().clone())
        step, epoch, started = 0, 0, time.perf_counter()
        while step < self.arguments.steps:
            for batch in batches(epoch):
                loss = self.loss(self.embed(table, batch), self.targets[batch], mse_weight, student_temperature)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                step += 1
                if step % 500 == 0:
                    value = validation_loss()
                    if value < best[0]:
                        best = (value, step, table.detach().clone())
                if step >= self.arguments.steps:
                    break
            epoch += 1
        trained = best[2][: self.num_words].numpy()
        table_after, _ = propagate_refinement(self.before.numpy(), trained)
        return {
            "table": table_after,
            "best_step": best[1],
            "best_validation_loss": best[0],
            "train_seconds": time.perf_counter() - started,
        }

    def scores(self, table: np.ndarray, evaluate: Callable) -> dict[str, float]:
        if self.max_weight:
            return {task: result["score"] for task, result in evaluate(self.pooled_encoder(table)).items()}
        with torch.no_grad():
            self.module.word_vectors.copy_(torch.from_numpy(np.ascontiguousarray(table, dtype=np.float32)))
            self.module.sync_token_rows()
        return {task: result["score"] for task, result in evaluate(self.model).items()}

    def pooled_encoder(self, table: np.ndarray) -> Callable[[list[str]], np.ndarray]:
        """An encoder giving the student's mean+max vectors of texts with ``table``."""
        trained = torch.from_numpy(np.ascontiguousarray(table, dtype=np.float32))
        rows = torch.cat([trained, torch.zeros(1, table.shape[1])])  # the [UNK] row

        def encode(texts: list[str]) -> np.ndarray:
            pooled = Lever.__new__(Lever)
            pooled.num_words, pooled.max_weight = self.num_words, self.max_weight
            pooled.rows, pooled.starts = self.module.token_ids(list(texts))
            pooled.lengths = np.diff(np.append(pooled.starts, len(pooled.rows)))
            with torch.no_grad():
                batches = np.array_split(np.arange(len(texts)), max(1, len(texts) // 4096))
                return np.concatenate([pooled.embed(rows, batch).numpy() for batch in batches])

        return encode


class TokenLever(Lever):
    """The distillation on a table over a tokenizer's sub-word tokens (a model2vec folder's table and tokenizer)."""

    def __init__(self, folder: Path, texts: list[str], targets: np.ndarray, arguments: argparse.Namespace) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.unknown = self.tokenizer.token_to_id("[UNK]")
        self.before = torch.from_numpy(load_file(folder / "model.safetensors")["embeddings"].astype(np.float32))
        self.num_words, self.max_weight = len(self.before), 0.0
        self.rows, self.starts, self.lengths = self.token_rows(texts)
        self.targets = torch.from_numpy(np.ascontiguousarray(targets, dtype=np.float32))
        self.arguments = arguments

    def token_rows(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Concatenated token rows (the padding row for a text without known tokens), offsets and lengths."""
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        pieces = [[i for i in encoding.ids if i != self.unknown] or [self.num_words] for encoding in encodings]
        lengths = np.array([len(piece) for piece in pieces])
        flat = np.array([row for piece in pieces for row in piece], dtype=np.int64)
        return flat, np.append(0, lengths.cumsum()[:-1]), lengths

    def encoder(self, table: np.ndarray) -> Callable[[list[str]], np.ndarray]:
        rows = torch.cat(
            [torch.from_numpy(np.ascontiguousarray(table, dtype=np.float32)), torch.zeros(1, table.shape[1])]
        )

        def encode(texts: list[str]) -> np.ndarray:
            saved = self.rows, self.starts, self.lengths
            self.rows, self.starts, self.lengths = self.token_rows(texts)
            try:
                with torch.no_grad():
                    return self.embed(rows, np.arange(len(texts))).numpy()
            finally:
                self.rows, self.starts, self.lengths = saved

        return encode

    def scores(self, table: np.ndarray, evaluate: Callable) -> dict[str, float]:
        return {task: result["score"] for task, result in evaluate(self.encoder(table)).items()}


class WordTokenLever(Lever):
    """The word table and a sub-word token table trained as one student (rows: words, [UNK], tokens)."""

    def __init__(self, token_folder: Path, mode: str, *lever_arguments: Any) -> None:
        """``lever_arguments``: those of :class:`Lever` (the word table's PCA folder, texts, targets, arguments)."""
        super().__init__(*lever_arguments)
        arguments = self.arguments
        tokens = TokenLever(token_folder, [], np.zeros((0, 1)), arguments)
        self.mode, self.words = mode, self.num_words
        vocabulary = self.module.vocabulary[: self.words]
        encodings = tokens.tokenizer.encode_batch(list(vocabulary), add_special_tokens=False)
        pieces = [[i + self.words + 1 for i in encoding.ids if i != tokens.unknown] for encoding in encodings]
        self.token_counts = np.array([len(piece) for piece in pieces] + [0])  # [UNK] has no tokens
        self.token_starts = np.append(0, self.token_counts.cumsum()[:-1])
        self.token_flat = np.array([i for piece in pieces for i in piece], dtype=np.int64)
        start = tokens.before if mode == "concat" else torch.zeros_like(tokens.before)
        self.before = torch.cat([self.before, torch.zeros(1, self.before.shape[1]), start])
        self.num_words = len(self.before)  # every row trains

    def embed(self, table: torch.Tensor, batch: np.ndarray) -> torch.Tensor:
        pieces = [self.rows[self.starts[i] : self.starts[i] + self.lengths[i]] for i in batch]
        sizes = np.array([len(piece) for piece in pieces])
        flat = np.concatenate(pieces)
        known = flat < self.words
        words_of = np.repeat(np.arange(len(batch)), sizes)
        counts = self.token_counts[np.where(known, flat, self.words)]
        token_ids = np.concatenate(
            [self.token_flat[self.token_starts[r] : self.token_starts[r] + counts[j]] for j, r in enumerate(flat)]
            + [np.zeros(0, dtype=np.int64)]
        )
        token_bags = torch.from_numpy(np.repeat(words_of, counts))
        weights = torch.from_numpy(known.astype(np.float32))
        offsets = torch.from_numpy(np.append(0, sizes.cumsum()[:-1]))
        word_sums = F.embedding_bag(
            torch.from_numpy(flat), table, offsets, mode="sum", per_sample_weights=weights, sparse=True
        )
        word_counts = torch.zeros(len(batch)).index_add_(0, torch.from_numpy(words_of), weights).clamp(min=1.0)
        token_vectors = F.embedding(torch.from_numpy(token_ids), table, sparse=True)
        if self.mode == "sum":  # each word adds the mean of its tokens' rows
            share = torch.from_numpy(np.repeat(1.0 / np.maximum(counts, 1), counts).astype(np.float32))
            token_sums = torch.zeros_like(word_sums).index_add(0, token_bags, token_vectors * share[:, None])
            return (word_sums + token_sums) / word_counts[:, None]
        token_sums = torch.zeros_like(word_sums).index_add(0, token_bags, token_vectors)
        token_counts = torch.zeros(len(batch)).index_add_(0, token_bags, torch.ones(len(token_ids))).clamp(min=1.0)
        means = (word_sums / word_counts[:, None], token_sums / token_counts[:, None])
        return torch.cat([F.normalize(means[0], dim=1), F.normalize(means[1], dim=1)], dim=1)

    def scores(self, table: np.ndarray, evaluate: Callable) -> dict[str, float]:
        """Scores of the folded word table(s): what a saved model would hold."""
        word_rows, token_rows = table[: self.words], table[self.words + 1 :]
        folded = np.zeros_like(word_rows)
        np.add.at(
            folded,
            np.repeat(np.arange(self.words), self.token_counts[:-1]),
            token_rows[self.token_flat - self.words - 1],
        )
        if self.mode == "sum":
            return super().scores(word_rows + folded / np.maximum(self.token_counts[:-1], 1)[:, None], evaluate)

        def blocks(texts: list[str]) -> np.ndarray:
            halves = []
            for rows in (word_rows, folded):
                with torch.no_grad():
                    self.module.word_vectors.copy_(torch.from_numpy(np.ascontiguousarray(rows, dtype=np.float32)))
                    self.module.sync_token_rows()
                halves.append(unit_rows(self.model.encode(list(texts), batch_size=4096)))
            return np.concatenate(halves, axis=1)

        return {task: result["score"] for task, result in evaluate(blocks).items()}


def random_batches(train: np.ndarray, size: int) -> Callable[[int], Iterator[np.ndarray]]:
    def batches(epoch: int) -> Iterator[np.ndarray]:
        order = np.random.default_rng([0, epoch]).permutation(train)
        for start in range(0, len(order) - size + 1, size):
            yield order[start : start + size]

    return batches


def family_batches(train: np.ndarray, children: dict[int, list[int]], size: int) -> Callable[[int], Iterator]:
    """Random batches of training sentences, each followed by its variants (if it has any)."""

    def batches(epoch: int) -> Iterator[np.ndarray]:
        batch: list[int] = []
        for parent in np.random.default_rng([0, epoch]).permutation(train):
            batch += [int(parent), *children.get(int(parent), [])]
            if len(batch) >= size:
                yield np.array(batch[:size])
                batch = []

    return batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="Stage cache of a build (OUT.work).")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--teacher", default=None, help="Teacher for the new encodings (default: the build's).")
    parser.add_argument("--second-teacher-work", type=Path, help="Stage cache of a build from a second teacher.")
    parser.add_argument("--sentences-per-word", type=int, default=5)
    parser.add_argument("--pca-dim", type=int, default=256)
    parser.add_argument("--removed-components", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--variants", type=int, default=10_000, help="Sentences that get word-drop/swap copies.")
    parser.add_argument("--extra-corpus", type=Path, action="append", default=[], help="Extra training text.")
    parser.add_argument("--extra-weight", type=int, default=1, help="Times each extra line is seen per epoch.")
    parser.add_argument("--token-table", type=Path, help="model2vec folder whose token table the lever trains.")
    parser.add_argument("--cache", type=Path, default=REPO / "runs" / "distillation-levers")
    parser.add_argument(
        "--only",
        default=",".join(LEVERS),
        help=f"Comma-separated levers to run after the baseline: {', '.join(LEVERS)}.",
    )
    parser.add_argument("--output", type=Path, required=True)
    arguments = parser.parse_args()
    torch.set_num_threads(1)

    extraction = stage_folder(arguments.work, "extraction", sentences_per_word=arguments.sentences_per_word)
    pca = stage_folder(
        arguments.work,
        "pca",
        sentences_per_word=arguments.sentences_per_word,
        pca={"dim": arguments.pca_dim, "level": "sentence", "removed_components": arguments.removed_components},
    )
    teacher = arguments.teacher or json.loads((extraction / "stats.json").read_text())["settings"]["teacher"]
    from benchmarks.common import resolve_teacher

    cache_name = re.sub(r"\W+", "-", teacher).strip("-")
    teacher = resolve_teacher(teacher)
    sentences = (extraction / "targets" / "sentences.txt").read_text(encoding="utf-8").split("\n")[:-1]
    raw_targets = np.load(extraction / "targets" / "teacher_embeddings.npy")
    mean = raw_targets.mean(axis=0)
    targets = centred(raw_targets)
    count = len(sentences)
    order = np.random.default_rng(0).permutation(count)
    validation, train = order[:VALIDATION_SIZE], order[VALIDATION_SIZE:]
    evaluate = task_evaluator(arguments.data, tasks=",".join(DEV_TASKS + TEST_TASKS))
    run = Run(arguments, pca, sentences, targets, mean, train, validation, teacher, cache_name, evaluate)
    wanted = {name.strip() for name in arguments.only.split(",") if name.strip()}
    if wanted - set(LEVERS):
        raise SystemExit(f"error: unknown lever(s) {', '.join(sorted(wanted - set(LEVERS)))}.")
    baseline = run.base.train(run.batches(), validation)
    run.record("baseline (the build's distillation)", run.base, baseline)
    for weight in (1.0, 10.0) if "mse" in wanted else ():
        run.record(f"cosine MSE x {weight:g}", run.base, run.base.train(run.batches(), validation, weight))
    if arguments.second_teacher_work and "joint-teacher" in wanted:
        run.joint_teacher(arguments.second_teacher_work)
    for temperature in (0.035, 0.07) if "student-temperature" in wanted else ():
        outcome = run.base.train(run.batches(), validation, student_temperature=temperature)
        run.record(f"student temperature {temperature:g} (teacher 0.05)", run.base, outcome)
    if "variants" in wanted:
        run.sentence_variants()
    if "words-alone" in wanted:
        run.words_alone()
    for extra in arguments.extra_corpus if "extra-corpus" in wanted else ():
        run.extra_corpus(extra, arguments.extra_weight)
    short = np.array([index for index in train if len(sentences[index].split()) <= 10])
    for weight in (2, 4) if "short-sentences" in wanted else ():
        mixed = np.concatenate([train, *[short] * (weight - 1)])
        outcome = run.base.train(random_batches(mixed, 512), validation)
        run.record(f"{len(short):,} sentences of <= 10 words drawn x {weight}", run.base, outcome)
    for weight in (0.5, 1.0) if "max-pooling" in wanted else ():
        lever = Lever(pca, sentences, targets, arguments, max_weight=weight)
        run.record(f"mean+max pooling (max x {weight:g})", lever, lever.train(run.batches(), validation))
    if arguments.token_table and "token-table" in wanted:
        run.token_table(arguments.token_table, baseline["table"])
    for mode in ("sum", "concat") if arguments.token_table and "word-token-joint" in wanted else ():
        lever = WordTokenLever(arguments.token_table, mode, pca, sentences, targets, arguments)
        run.record(f"word + token table trained together ({mode})", lever, lever.train(run.batches(), validation))
    if "post-hoc" in wanted:
        run.post_hoc(baseline["table"])
    write_table(run.rows, arguments)


@dataclass
class Run:
    """What every lever shares: the build's cached sentences and targets, the split, the teacher, the results."""

    arguments: argparse.Namespace
    pca: Path
    sentences: list[str]
    targets: np.ndarray
    mean: np.ndarray
    train: np.ndarray
    validation: np.ndarray
    teacher: str
    cache_name: str
    evaluate: Callable
    rows: list[dict[str, object]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.base = Lever(self.pca, self.sentences, self.targets, self.arguments)

    def batches(self) -> Callable[[int], Iterator[np.ndarray]]:
        return random_batches(self.train, 512)

    def record(self, name: str, lever: Lever, outcome: dict[str, object]) -> None:
        scores = lever.scores(outcome["table"], self.evaluate)
        self.rows.append({"variant": name, **{k: v for k, v in outcome.items() if k != "table"}, "scores": scores})
        print(json.dumps(self.rows[-1]), flush=True)

    def joint_teacher(self, second_work: Path) -> None:
        """Targets of both teachers, centred, normalised and concatenated (their cosines averaged)."""
        second = stage_folder(second_work, "extraction", sentences_per_word=self.arguments.sentences_per_word)
        if (second / "targets" / "sentences.txt").read_text(encoding="utf-8").split("\n")[:-1] != self.sentences:
            raise SystemExit("error: the second teacher's build read other sentences.")
        second_targets = centred(np.load(second / "targets" / "teacher_embeddings.npy"))
        joint = np.concatenate([unit_rows(self.targets), unit_rows(second_targets)], axis=1) / math.sqrt(2.0)
        lever = Lever(self.pca, self.sentences, joint, self.arguments)
        outcome = lever.train(self.batches(), self.validation)
        self.record("joint teacher (+ second teacher, equal weights)", lever, outcome)

    def sentence_variants(self) -> None:
        """Word-drop/swap copies of sentences, encoded by the teacher and batched with their source."""
        count = len(self.sentences)
        texts, sources = sentence_variants(self.sentences, self.arguments.variants)
        cache = self.arguments.cache / f"{self.cache_name}-variants-{self.arguments.variants}.npy"
        variant_targets = encode_with_teacher(self.teacher, texts, cache) - self.mean
        lever = Lever(self.pca, self.sentences + texts, np.concatenate([self.targets, variant_targets]), self.arguments)
        children: dict[int, list[int]] = {}
        for offset, source in enumerate(sources):
            children.setdefault(source, []).append(count + offset)
        outcome = lever.train(family_batches(self.train, children, 512), self.validation)
        self.record(f"word-drop/swap variants of {len(texts) // 2:,} sentences, batched with them", lever, outcome)

    def words_alone(self) -> None:
        """Every vocabulary word, encoded alone by the teacher, mixed into the training sentences."""
        count = len(self.sentences)
        words = [word for word in self.base.module.vocabulary[: self.base.num_words] if word and word != "[UNK]"]
        cache = self.arguments.cache / f"{self.cache_name}-words-alone.npy"
        word_targets = encode_with_teacher(self.teacher, words, cache) - self.mean
        lever = Lever(self.pca, self.sentences + words, np.concatenate([self.targets, word_targets]), self.arguments)
        mixed = np.concatenate([self.train, np.arange(count, count + len(words))])
        outcome = lever.train(random_batches(mixed, 512), self.validation)
        self.record(f"{len(words):,} words alone join the training sentences", lever, outcome)

    def extra_corpus(self, path: Path, weight: int) -> None:
        """The lines of ``path``, encoded by the teacher, mixed ``weight`` times into the training sentences."""
        count = len(self.sentences)
        lines = [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
        cache = self.arguments.cache / f"{self.cache_name}-extra-{path.stem}-{len(lines)}.npy"
        extra_targets = encode_with_teacher(self.teacher, lines, cache) - self.mean
        lever = Lever(self.pca, self.sentences + lines, np.concatenate([self.targets, extra_targets]), self.arguments)
        mixed = np.concatenate([self.train, *[np.arange(count, count + len(lines))] * weight])
        outcome = lever.train(random_batches(mixed, 512), self.validation)
        self.record(f"{len(lines):,} lines of {path.name} (x{weight}) join the training sentences", lever, outcome)

    def token_table(self, folder: Path, word_table: np.ndarray) -> None:
        """A sub-word token table trained like the word table; alone, then next to the baseline word table."""
        lever = TokenLever(folder, self.sentences, self.targets, self.arguments)
        outcome = lever.train(self.batches(), self.validation)
        self.record(f"token table of {folder.name}, distilled", lever, outcome)
        token_encoder = lever.encoder(outcome["table"])
        with torch.no_grad():
            self.base.module.word_vectors.copy_(torch.from_numpy(np.ascontiguousarray(word_table, dtype=np.float32)))
            self.base.module.sync_token_rows()

        def both(texts: list[str]) -> np.ndarray:
            words = self.base.model.encode(list(texts), batch_size=4096)
            return np.concatenate([unit_rows(words), unit_rows(token_encoder(texts))], axis=1)

        scores = {task: result["score"] for task, result in self.evaluate(both).items()}
        self.rows.append({"variant": "baseline word table + distilled token table (ensemble)", "scores": scores})
        print(json.dumps(self.rows[-1]), flush=True)

    def post_hoc(self, trained: np.ndarray) -> None:
        """The trained table changed without training: centred and ABTT, or with its row norms shrunk."""
        corpus_vectors = self.base.model.encode(self.sentences[:100_000], batch_size=4096, normalize_embeddings=False)
        centre = corpus_vectors.mean(axis=0)
        components = np.linalg.svd(corpus_vectors - centre, full_matrices=False)[2]
        table = trained - centre
        for removed in (0, 1, 2):
            top = components[:removed]
            changed = table - (table @ top.T) @ top if removed else table
            self.record(f"baseline, centred, top {removed} components removed", self.base, {"table": changed})
        shrunk = trained / np.sqrt(np.maximum(np.linalg.norm(trained, axis=1, keepdims=True), 1e-12))
        self.record("baseline, row norms shrunk to their square root", self.base, {"table": shrunk})


def write_table(rows: list[dict[str, object]], arguments: argparse.Namespace) -> None:
    columns = [*DEV_TASKS, *TEST_TASKS]
    command = " ".join(sys.argv[1:])
    lines = [
        "# Distillation levers beyond the build's settings",
        "",
        f"Command: `python -m benchmarks.experiments.distillation_levers {command}`. Spearman x100 (msrp-dev: "
        "average precision x100). Choose on dev; stsb-en-test is reported only. What each variant changes: the "
        "script's docstring.",
        "",
        *task_table_header("variant", ["dev mean", "best step", "best val. loss", "train s"]),
    ]
    for row in rows:
        scores = row["scores"]
        loss = row.get("best_validation_loss")
        seconds = row.get("train_seconds")
        cells = [f"{scores[task]:.2f}" for task in columns] + [
            f"{dev_mean(scores):.2f}",
            str(row.get("best_step", "-")),
        ]
        cells += [f"{loss:.4f}" if loss is not None else "-", f"{seconds:.0f}" if seconds is not None else "-"]
        lines.append(f"| {row['variant']} | " + " | ".join(cells) + " |")
    write_report(arguments.output, lines, rows)


if __name__ == "__main__":
    main()
