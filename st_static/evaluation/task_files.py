"""Task-type evaluation on local files (classification, clustering, retrieval, pair classification) through ``mteb``.

Each task file becomes a real ``mteb`` task (``AbsTaskClassification``, ``AbsTaskClusteringLegacy``,
``AbsTaskRetrieval``, ``AbsTaskPairClassification``) whose ``load_data`` reads the file: ``mteb.evaluate`` scores it
offline, with mteb's own code. The formats (the data README's ``tasks/`` section, README "Evaluate"):

* classification: a TSV with ``text``, ``label``, ``split`` (``train``/``test``); logistic regression fitted on the
  train embeddings, accuracy on test.
* clustering: a TSV with ``text``, ``label``; k-means with k = number of labels, V-measure.
* retrieval: a folder with ``corpus.tsv`` (``id``, ``text``), ``queries.tsv`` (``id``, ``text``) and ``qrels.tsv``
  (``query_id``, ``doc_id``, ``score``; >= 1 is relevant); cosine ranking, nDCG@10.
* pair classification: a TSV with ``sentence1``, ``sentence2``, ``label`` (0/1); average precision of cosine.

A score is x100. Needs the ``eval`` extra (``mteb``).

Example::

    from st_static.evaluation.task_files import evaluate_task_files

    scores = evaluate_task_files(model, "data", languages=["en"])  # {task: {"metric", "score", "type", ...}}
"""

from __future__ import annotations

import contextlib
import csv
import fnmatch
import logging
import math
import os
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from st_static.data_files import DataFormatError
from st_static.errors import StStaticError
from st_static.evaluation.encoders import Encoder, model_encoder
from st_static.model.languages import LANGUAGE_NAMES

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

INSTALL_HINT = 'Task evaluation needs the `mteb` package: pip install "st-static[eval]"'

CLASSIFICATION = "classification"
CLUSTERING = "clustering"
RETRIEVAL = "retrieval"
PAIR_CLASSIFICATION = "pair_classification"
TASK_TYPES = (CLASSIFICATION, CLUSTERING, RETRIEVAL, PAIR_CLASSIFICATION)
"""Task types, in the order summaries show them."""
MAIN_METRICS = {
    CLASSIFICATION: "accuracy",
    CLUSTERING: "v_measure",
    RETRIEVAL: "ndcg_at_10",
    PAIR_CLASSIFICATION: "cosine_ap",
}
_MTEB_TYPES = {
    CLASSIFICATION: "Classification",
    CLUSTERING: "Clustering",
    RETRIEVAL: "Retrieval",
    PAIR_CLASSIFICATION: "PairClassification",
}
_COLUMNS = {
    CLASSIFICATION: ("text", "label", "split"),
    CLUSTERING: ("text", "label"),
    PAIR_CLASSIFICATION: ("sentence1", "sentence2", "label"),
}
RETRIEVAL_FILES = ("corpus.tsv", "queries.tsv", "qrels.tsv")
TASKS_FOLDER = "tasks"
"""The folder of a data folder that holds task files (``DATA/tasks/``)."""
_MTEB_LANGUAGES = {"en": "eng-Latn", "de": "deu-Latn", "ja": "jpn-Jpan", "zh": "cmn-Hans", "fr": "fra-Latn"}


class TaskFileError(DataFormatError):
    """A task file or folder does not follow its documented format (the message names the file and row)."""


class TaskFileNotFoundError(StStaticError, FileNotFoundError):
    """A task file or folder named by the user does not exist."""


@dataclass(frozen=True)
class TaskFile:
    """One task: its name (file or folder stem), type (one of :data:`TASK_TYPES`) and path."""

    name: str
    type: str
    path: Path


# ----------------------------------------------------------------------------------------------------- finding


def _header(path: Path) -> list[str]:
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return next(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE), [])
    except UnicodeDecodeError as error:
        raise TaskFileError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start}).") from error


def task_file(path: str | os.PathLike[str]) -> TaskFile:
    """The task a file or retrieval folder holds, its type told by the columns (or the folder's three files).

    Raises:
        TaskFileNotFoundError: If ``path`` does not exist (a ``FileNotFoundError``).
        TaskFileError: If it is neither a classification, clustering or pair-classification TSV nor a retrieval
            folder.
    """
    path = Path(path)
    if not path.exists():
        raise TaskFileNotFoundError(f"{path}: no such task file or folder.")
    name = path.name if path.is_dir() else path.stem
    if path.is_dir():
        missing = [file for file in RETRIEVAL_FILES if not (path / file).is_file()]
        if missing:
            needed = ", ".join(RETRIEVAL_FILES)
            raise TaskFileError(f"{path}: a retrieval task folder needs {needed}; missing {', '.join(missing)}.")
        return TaskFile(name, RETRIEVAL, path)
    header = set(_header(path))
    for task_type, columns in _COLUMNS.items():  # classification before clustering: it has one column more
        if set(columns) <= header:
            return TaskFile(name, task_type, path)
    raise TaskFileError(
        f"{path}: not a task file: expected the columns text, label, split (classification), text, label "
        f"(clustering) or sentence1, sentence2, label (pair classification); the header is {sorted(header)}."
    )


def is_task_path(path: Path) -> bool:
    """Whether ``path`` looks like a task: a ``.tsv`` file or a folder with the retrieval files."""
    if path.is_dir():
        return all((path / file).is_file() for file in RETRIEVAL_FILES)
    return path.is_file() and path.suffix == ".tsv"


def find_task_files(data_dir: str | os.PathLike[str], include: str | None = None) -> list[TaskFile]:
    """The tasks in ``data_dir/tasks/`` (or in ``data_dir`` itself when it has no ``tasks/``), sorted by name.

    Args:
        data_dir: A data folder (``DATA/tasks/``) or a folder of task files.
        include: Keep only tasks whose name matches one of these comma-separated globs.

    Returns:
        The tasks; empty when the folder holds none.
    """
    root = Path(data_dir)
    folder = root / TASKS_FOLDER if (root / TASKS_FOLDER).is_dir() else root
    if not folder.is_dir():
        return []
    globs = None if include is None else [glob.strip() for glob in include.split(",") if glob.strip()]
    tasks = []
    for path in sorted(folder.iterdir()):
        name = path.name if path.is_dir() else path.stem
        if is_task_path(path) and (globs is None or any(fnmatch.fnmatch(name, glob) for glob in globs)):
            tasks.append(task_file(path))
    return tasks


def split_task_arguments(spec: str) -> tuple[str | None, list[TaskFile]]:
    """Split a ``--tasks`` value into name globs (comma-joined, ``None`` if none) and task files named by path.

    An entry is a path when it exists, ends in ``.tsv`` or contains a ``/``.

    Raises:
        TaskFileNotFoundError: If a path entry does not exist.
        TaskFileError: If a path entry is not a task file or folder.
    """
    globs, files = [], []
    for entry in (part.strip() for part in spec.split(",")):
        if not entry:
            continue
        if os.path.exists(entry) or entry.endswith(".tsv") or "/" in entry or os.sep in entry:
            files.append(task_file(entry))
        else:
            globs.append(entry)
    return (",".join(globs) if globs else None), files


def task_file_languages(name: str) -> set[str]:
    """The languages of a task, from the language codes among its name's parts (``chatterbot-qa-de`` -> {de});
    English when it names none."""
    codes = {part for part in name.lower().split("-") if part in LANGUAGE_NAMES}
    return codes or {"en"}


def default_task_files(tasks: list[TaskFile], languages: Sequence[str] | None) -> list[TaskFile]:
    """The tasks whose languages the model has (every task when ``languages`` is ``None``)."""
    if not languages:
        return list(tasks)
    wanted = set(languages)
    return [task for task in tasks if task_file_languages(task.name) <= wanted]


# ----------------------------------------------------------------------------------------------------- reading


def _read_rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, list[str]]]:
    """``(line number, [values of columns])`` of a header-first TSV (quoting off), empty lines skipped."""
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
            header = next(reader, None)
            if header is None:
                raise TaskFileError(f"{path}: the file is empty (expected a header with {', '.join(columns)}).")
            missing = [column for column in columns if column not in header]
            if missing:
                raise TaskFileError(f"{path}: missing column(s) {', '.join(missing)}; the header is {header}.")
            indices = [header.index(column) for column in columns]
            rows = []
            for line_number, row in enumerate(reader, start=2):
                if not row:
                    continue
                if len(row) <= max(indices):
                    raise TaskFileError(
                        f"{path}:{line_number}: expected {len(header)} tab-separated fields, got {len(row)}."
                    )
                rows.append((line_number, [row[index] for index in indices]))
    except UnicodeDecodeError as error:
        raise TaskFileError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start}).") from error
    if not rows:
        raise TaskFileError(f"{path}: no rows.")
    return rows


@dataclass(frozen=True)
class LabelledTexts:
    """Texts with a label each (and, for classification, a split each)."""

    texts: list[str]
    labels: list[str]
    splits: list[str] | None = None


def read_labelled_texts(path: str | os.PathLike[str], with_split: bool) -> LabelledTexts:
    """Read a classification (``with_split``) or clustering file.

    Raises:
        TaskFileError: If a column is missing, a split is not train/test, or there are fewer than two labels
            (classification: in the train half).
    """
    path = Path(path)
    columns = _COLUMNS[CLASSIFICATION] if with_split else _COLUMNS[CLUSTERING]
    rows = _read_rows(path, columns)
    for line_number, values in rows:
        if not values[1].strip():
            raise TaskFileError(f"{path}:{line_number}: empty label.")
        if with_split and values[2] not in ("train", "test"):
            raise TaskFileError(f"{path}:{line_number}: split {values[2]!r} is not 'train' or 'test'.")
    data = LabelledTexts(
        [values[0] for _, values in rows],
        [values[1] for _, values in rows],
        [values[2] for _, values in rows] if with_split else None,
    )
    if data.splits is not None:
        train_labels = {label for label, split in zip(data.labels, data.splits, strict=True) if split == "train"}
        if "test" not in data.splits:
            raise TaskFileError(f"{path}: no 'test' row (a classification file needs a train and a test half).")
        if len(train_labels) < 2:
            raise TaskFileError(f"{path}: the train half needs at least two labels, it has {len(train_labels)}.")
    elif len(set(data.labels)) < 2:
        raise TaskFileError(f"{path}: clustering needs at least two labels, the file has {len(set(data.labels))}.")
    return data


@dataclass(frozen=True)
class RetrievalData:
    """A retrieval task: documents and queries by id, and each query's relevant documents (id -> grade >= 1)."""

    corpus: dict[str, str]
    queries: dict[str, str]
    relevant: dict[str, dict[str, int]]


def _texts_by_id(path: Path) -> dict[str, str]:
    texts: dict[str, str] = {}
    for line_number, (identifier, text) in _read_rows(path, ("id", "text")):
        if not identifier:
            raise TaskFileError(f"{path}:{line_number}: empty id.")
        if identifier in texts:
            raise TaskFileError(f"{path}:{line_number}: id {identifier!r} occurs twice.")
        texts[identifier] = text
    return texts


def read_retrieval_folder(path: str | os.PathLike[str]) -> RetrievalData:
    """Read a retrieval folder (``corpus.tsv``, ``queries.tsv``, ``qrels.tsv``); queries without a relevant
    document are left out.

    Raises:
        TaskFileError: On a duplicate id, a qrels row naming an unknown query or document or with a score that is
            not a whole number, or when no query has a relevant document.
    """
    folder = Path(path)
    corpus = _texts_by_id(folder / "corpus.tsv")
    queries = _texts_by_id(folder / "queries.tsv")
    qrels_path = folder / "qrels.tsv"
    relevant: dict[str, dict[str, int]] = {}
    for line_number, (query_id, doc_id, score_text) in _read_rows(qrels_path, ("query_id", "doc_id", "score")):
        if query_id not in queries:
            raise TaskFileError(f"{qrels_path}:{line_number}: query_id {query_id!r} is not in queries.tsv.")
        if doc_id not in corpus:
            raise TaskFileError(f"{qrels_path}:{line_number}: doc_id {doc_id!r} is not in corpus.tsv.")
        try:
            score = float(score_text)
        except ValueError:
            score = math.nan
        if not math.isfinite(score) or score != int(score):
            raise TaskFileError(f"{qrels_path}:{line_number}: score {score_text!r} is not a whole number.")
        if score >= 1:
            relevant.setdefault(query_id, {})[doc_id] = int(score)
    if not relevant:
        raise TaskFileError(f"{qrels_path}: no query has a relevant document (score >= 1).")
    kept_queries = {query_id: text for query_id, text in queries.items() if query_id in relevant}
    return RetrievalData(corpus, kept_queries, relevant)


def task_file_texts(task: TaskFile | str | os.PathLike[str]) -> list[str]:
    """Every text a task embeds (as written and stripped), once each: for embedding them elsewhere first (e.g. in
    another process, then scoring with :func:`~st_static.evaluation.encoders.lookup_encoder`).

    Raises:
        TaskFileError: If the file does not follow its format.
    """
    task = task if isinstance(task, TaskFile) else task_file(task)
    if task.type == RETRIEVAL:
        data = read_retrieval_folder(task.path)
        texts = [*data.corpus.values(), *data.queries.values()]
    elif task.type == PAIR_CLASSIFICATION:
        texts = [text for _, values in _read_rows(task.path, _COLUMNS[PAIR_CLASSIFICATION]) for text in values[:2]]
    else:
        texts = read_labelled_texts(task.path, with_split=task.type == CLASSIFICATION).texts
    return list(dict.fromkeys(variant for text in texts for variant in (text, text.strip())))


# ----------------------------------------------------------------------------------------------------- mteb glue


def _import_mteb() -> Any:
    try:
        import mteb
    except ImportError as error:
        from st_static.evaluation.mteb_tasks import MTEBError

        raise MTEBError(INSTALL_HINT) from error
    return mteb


def _metadata(task: TaskFile, language: str) -> Any:
    from mteb.abstasks.task_metadata import TaskMetadata

    return TaskMetadata(
        name=task.name,
        dataset={"path": f"local/{task.name}", "revision": "local"},
        description=f"Local {task.type.replace('_', ' ')} task read from {task.path.name}.",
        reference=None,
        type=_MTEB_TYPES[task.type],
        category="t2t",
        modalities=["text"],
        eval_splits=["test"],
        eval_langs=[language],
        main_score=MAIN_METRICS[task.type],
        date=None,
        domains=None,
        task_subtypes=None,
        license=None,
        annotations_creators=None,
        dialect=None,
        sample_creation=None,
        bibtex_citation=None,
    )


def mteb_task(task: TaskFile | str | os.PathLike[str]) -> Any:
    """A real ``mteb`` task over a local task file or folder; its ``load_data`` reads the file (no Hub).

    Classification trains mteb's logistic regression on the whole train half once (``n_experiments=1``, no
    undersampling); clustering is mteb's k-means (k = number of labels) over all texts at once; retrieval ranks
    the whole corpus by cosine.

    Raises:
        MTEBError: If ``mteb`` is not installed.
        TaskFileError: If the file does not follow its format (read when the task loads its data).
    """
    _import_mteb()
    from datasets import Dataset, DatasetDict
    from mteb.abstasks.classification import AbsTaskClassification
    from mteb.abstasks.clustering_legacy import AbsTaskClusteringLegacy
    from mteb.abstasks.pair_classification import AbsTaskPairClassification
    from mteb.abstasks.retrieval import AbsTaskRetrieval

    task = task if isinstance(task, TaskFile) else task_file(task)
    languages = sorted(task_file_languages(task.name))
    language = _MTEB_LANGUAGES.get(languages[0], "eng-Latn") if len(languages) == 1 else "eng-Latn"
    source = task

    def label_ids(labels: list[str]) -> list[int]:
        index = {label: number for number, label in enumerate(sorted(set(labels)))}
        return [index[label] for label in labels]

    if task.type == CLASSIFICATION:

        class LocalClassificationTask(AbsTaskClassification):
            samples_per_label = 2**62  # the whole train half
            n_experiments = 1

            def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
                if self.data_loaded:
                    return
                data = read_labelled_texts(source.path, with_split=True)
                labels = label_ids(data.labels)
                splits: dict[str, dict[str, list[Any]]] = {"train": {"text": [], "label": []}}
                splits["test"] = {"text": [], "label": []}
                for text, label, split in zip(data.texts, labels, data.splits or [], strict=True):
                    splits[split]["text"].append(text)
                    splits[split]["label"].append(label)
                self.dataset = DatasetDict({name: Dataset.from_dict(columns) for name, columns in splits.items()})
                self.data_loaded = True

        task_class: type = LocalClassificationTask
    elif task.type == CLUSTERING:

        class LocalClusteringTask(AbsTaskClusteringLegacy):
            def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
                if self.data_loaded:
                    return
                data = read_labelled_texts(source.path, with_split=False)
                one_set = {"sentences": [data.texts], "labels": [label_ids(data.labels)]}
                self.dataset = DatasetDict({"test": Dataset.from_dict(one_set)})
                self.data_loaded = True

        task_class = LocalClusteringTask
    elif task.type == RETRIEVAL:

        class LocalRetrievalTask(AbsTaskRetrieval):
            k_values = (1, 3, 5, 10, 20, 100)

            def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
                if self.data_loaded:
                    return
                data = read_retrieval_folder(source.path)
                corpus = Dataset.from_dict(
                    {"id": list(data.corpus), "text": list(data.corpus.values()), "title": [""] * len(data.corpus)}
                )
                queries = Dataset.from_dict({"id": list(data.queries), "text": list(data.queries.values())})
                split = {"corpus": corpus, "queries": queries, "relevant_docs": data.relevant, "top_ranked": None}
                self.dataset = {"default": {"test": split}}
                self.data_loaded = True

        task_class = LocalRetrievalTask
    else:

        class LocalPairClassificationTask(AbsTaskPairClassification):
            def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
                if self.data_loaded:
                    return
                rows = _read_rows(source.path, _COLUMNS[PAIR_CLASSIFICATION])
                bad = next(((line, values[2]) for line, values in rows if values[2] not in ("0", "1")), None)
                if bad is not None:
                    raise TaskFileError(f"{source.path}:{bad[0]}: label {bad[1]!r} is not 0 or 1.")
                columns = {
                    "sentence1": [[values[0] for _, values in rows]],  # one row holding every pair (mteb's v1 shape)
                    "sentence2": [[values[1] for _, values in rows]],
                    "labels": [[int(values[2]) for _, values in rows]],
                }
                self.dataset = DatasetDict({"test": Dataset.from_dict(columns)})
                self.data_loaded = True

        task_class = LocalPairClassificationTask

    task_class.metadata = _metadata(task, language)
    task_class.__name__ += "_" + re.sub(r"\W", "_", task.name)
    return task_class()


def mteb_encoder(encoder: Encoder) -> Any:
    """An ``mteb`` encoder (cosine similarity) over a text -> vector function, so mteb runs st-static's fast path.

    mteb hands over every text of a call at once; ``encoder`` embeds them in one go (the fast path for st-static
    tables, ``SentenceTransformer.encode`` sorted by length for other models).
    """
    _import_mteb()
    from mteb.models.abs_encoder import AbsEncoder
    from mteb.models.model_meta import ModelMeta, ScoringFunction

    class LocalEncoder(AbsEncoder):
        def __init__(self, function: Encoder) -> None:
            self.model = None
            self.function = function
            self.mteb_model_meta = ModelMeta.create_empty(
                {"name": "st-static/local-encoder", "revision": "local", "similarity_fn_name": ScoringFunction.COSINE}
            )

        def encode(self, inputs: Any, **kwargs: Any) -> np.ndarray:
            texts = [text for batch in inputs for text in batch["text"]]
            return np.asarray(self.function(texts), dtype=np.float32)

    return LocalEncoder(encoder)


def run_task(encoder: Encoder, task: TaskFile | str | os.PathLike[str]) -> dict[str, Any]:
    """Score ``encoder`` on one task file through ``mteb.evaluate``.

    Returns:
        ``{"metric", "score" (x100), "type", "size"}``; ``size`` counts test texts, or queries for retrieval.

    Raises:
        TaskFileError: If the file does not follow its format.
        MTEBError: If mteb is missing or fails on the task.
    """
    mteb = _import_mteb()
    from st_static.evaluation.mteb_tasks import MTEBError

    task = task if isinstance(task, TaskFile) else task_file(task)
    mteb_object = mteb_task(task)
    mteb_object.load_data()  # format errors surface here, not wrapped by mteb
    with warnings.catch_warnings(), _quiet_datasets():
        warnings.simplefilter("ignore")  # sklearn convergence notes of mteb's fixed 100-iteration classifier
        try:
            model_result = mteb.evaluate(
                mteb_encoder(encoder),
                [mteb_object],
                cache=None,
                encode_kwargs={"batch_size": 1024, "show_progress_bar": False},
                show_progress_bar=False,
                raise_error=True,
            )
        except Exception as error:
            raise MTEBError(f"mteb failed on task {task.name} ({task.path}): {error}") from error
    (task_result,) = model_result.task_results
    return {
        "metric": MAIN_METRICS[task.type],
        "score": 100.0 * float(task_result.get_score()),
        "type": task.type,
        "size": _task_size(mteb_object, task.type),
    }


@contextlib.contextmanager
def _quiet_datasets() -> Iterator[None]:
    """Switch off the progress bars of ``datasets`` (mteb maps its tables) for the duration."""
    from datasets.utils import logging as datasets_logging

    enabled = datasets_logging.is_progress_bar_enabled()
    datasets_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            datasets_logging.enable_progress_bar()


def _task_size(mteb_object: Any, task_type: str) -> int:
    dataset = mteb_object.dataset
    if task_type == RETRIEVAL:
        return len(dataset["default"]["test"]["queries"])
    if task_type in (CLUSTERING, PAIR_CLASSIFICATION):
        first_column = dataset["test"].column_names[0]
        return len(dataset["test"][0][first_column])
    return len(dataset["test"])


def evaluate_task_file(encoder: Encoder, path: str | os.PathLike[str]) -> dict[str, Any]:
    """:func:`run_task` for one path (the evaluator the suite calls for ``DATA/tasks/`` files)."""
    return run_task(encoder, path)


def evaluate_task_files(
    model: SentenceTransformer | Encoder,
    data_dir: str | os.PathLike[str] | None = None,
    tasks: str | Sequence[str | os.PathLike[str] | TaskFile] | None = None,
    languages: Sequence[str] | None = None,
    prompt: str | None = None,
    batch_size: int = 1024,
) -> dict[str, dict[str, Any]]:
    """Score a model on task files: those of ``data_dir`` (in ``languages``) and/or the given ones.

    Args:
        model: A ``SentenceTransformer`` (st-static tables take the fast path) or a text -> vector function.
        data_dir: A data folder with ``tasks/`` (or a folder of task files).
        tasks: Task files or folders, or comma-separated globs choosing among ``data_dir``'s tasks by name.
        languages: Keep ``data_dir``'s tasks in these languages (e.g. ``["en"]``); ``None``: all.
        prompt: Text prepended to every input.
        batch_size: Batch size of ``SentenceTransformer.encode``.

    Returns:
        ``{task name: {"metric", "score" (x100), "type", "size"}}`` in the order run.

    Raises:
        TaskFileError: If a file does not follow its format (named with its row).
        MTEBError: If mteb is missing.
        ValueError: If no task is chosen.
    """
    chosen: list[TaskFile] = []
    globs: list[str] = []
    if isinstance(tasks, str):
        globs = [part.strip() for part in tasks.split(",") if part.strip()]
    elif tasks is not None:
        chosen = [item if isinstance(item, TaskFile) else task_file(item) for item in tasks]
    if data_dir is not None:
        found = find_task_files(data_dir, include=",".join(globs) if globs else None)
        chosen += found if globs else default_task_files(found, languages)
    if not chosen:
        raise ValueError("No task to evaluate: pass a data folder with tasks/ or task files.")
    encoder = model_encoder(model, prompt=prompt, batch_size=batch_size)
    return {task.name: run_task(encoder, task) for task in chosen}


# ----------------------------------------------------------------------------------------------------- summaries


def type_means(results: dict[str, dict[str, Any]]) -> dict[str, tuple[float, int]]:
    """``{task type: (mean score, number of tasks)}`` over results with a ``type``, in :data:`TASK_TYPES` order."""
    scores: dict[str, list[float]] = {}
    for result in results.values():
        score = result.get("score")
        if result.get("type") in TASK_TYPES and isinstance(score, int | float):
            scores.setdefault(result["type"], []).append(float(score))
    return {kind: (float(np.mean(scores[kind])), len(scores[kind])) for kind in TASK_TYPES if kind in scores}


def task_mean(results: dict[str, dict[str, Any]]) -> float | None:
    """The mean score over every task-type result (each task counts once), or ``None`` without any."""
    scores = [
        float(result["score"])
        for result in results.values()
        if result.get("type") in TASK_TYPES and isinstance(result.get("score"), int | float)
    ]
    return float(np.mean(scores)) if scores else None


def sts_mean(results: dict[str, dict[str, Any]]) -> float | None:
    """The mean Spearman over the STS results, or ``None`` without any."""
    scores = [
        float(result["score"])
        for result in results.values()
        if result.get("kind") == "sts" and isinstance(result.get("score"), int | float)
    ]
    return float(np.mean(scores)) if scores else None


TYPE_LABELS = {
    CLASSIFICATION: "classification (accuracy)",
    CLUSTERING: "clustering (V-measure)",
    RETRIEVAL: "retrieval (nDCG@10)",
    PAIR_CLASSIFICATION: "pair classification (cosine AP)",
}


def summary_markdown(results: dict[str, dict[str, Any]]) -> str:
    """A table of the mean per task type, the task mean and the STS mean (empty without task-type results)."""
    means = type_means(results)
    if not means:
        return ""
    lines = ["| task type | tasks | mean |", "| --- | ---: | ---: |"]
    lines += [f"| {TYPE_LABELS[kind]} | {count} | {mean:.2f} |" for kind, (mean, count) in means.items()]
    overall = task_mean(results)
    count = sum(count for _, count in means.values())
    lines.append(f"| **task mean** | {count} | **{overall:.2f}** |")
    sts = sts_mean(results)
    if sts is not None:
        sts_count = sum(1 for result in results.values() if result.get("kind") == "sts")
        lines.append(f"| STS mean (Spearman) | {sts_count} | {sts:.2f} |")
    return "\n".join(lines)


def task_evaluators() -> dict[str, Callable[[Encoder, Path], dict[str, Any]]]:
    """The suite's evaluator for each task type (all run the file through mteb)."""
    return dict.fromkeys(TASK_TYPES, evaluate_task_file)
