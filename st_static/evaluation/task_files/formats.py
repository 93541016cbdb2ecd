"""Task file formats: the task types, finding and reading task files and retrieval folders, their errors."""

from __future__ import annotations

import csv
import fnmatch
import io
import math
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from st_static.data_files import DataFormatError, open_data_file, unreadable_row
from st_static.errors import StStaticError
from st_static.model.languages import LANGUAGE_NAMES

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
_COLUMNS = {
    CLASSIFICATION: ("text", "label", "split"),
    CLUSTERING: ("text", "label"),
    PAIR_CLASSIFICATION: ("sentence1", "sentence2", "label"),
}
RETRIEVAL_FILES = ("corpus.tsv", "queries.tsv", "qrels.tsv")
MAX_QRELS_SCORE = 1_000_000
"""The largest relevance grade (in absolute value) a ``qrels.tsv`` may hold: mteb's scorer (``pytrec_eval``) keeps
grades as 32-bit integers, and one past 2**31 wraps around to a wrong score or exhausts memory."""
TASKS_FOLDER = "tasks"
"""The folder of a data folder that holds task files (``DATA/tasks/``)."""


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


def _check_regular_file(path: Path) -> None:
    """Raise a :class:`TaskFileError` unless ``path`` is a regular file (not a device, fifo or socket, which
    could be read forever)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError as error:
        raise TaskFileNotFoundError(f"{path}: no such task file.") from error
    except OSError as error:
        raise TaskFileError(f"{path}: cannot be read ({error.strerror or error}).") from error
    if not stat.S_ISREG(mode):
        raise TaskFileError(f"{path}: not a regular file (a device, fifo or socket); a task file is a TSV file.")


def _open_text(path: Path) -> io.TextIOWrapper:
    """A regular file opened as UTF-8 text for ``csv``, a leading BOM dropped (read as
    :func:`~st_static.data_files.open_data_file` reads it).

    Raises:
        TaskFileError: If ``path`` is not a regular file.
        TaskFileNotFoundError: If it does not exist.
    """
    _check_regular_file(path)
    return io.TextIOWrapper(open_data_file(path), encoding="utf-8-sig", newline="")


def _header(path: Path) -> list[str]:
    try:
        with _open_text(path) as handle:
            return next(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE), [])
    except csv.Error as error:
        raise unreadable_row(path, 1, error, TaskFileError) from error
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
        missing = [file for file in RETRIEVAL_FILES if not (path / file).exists()]
        if missing:
            needed = ", ".join(RETRIEVAL_FILES)
            raise TaskFileError(f"{path}: a retrieval task folder needs {needed}; missing {', '.join(missing)}.")
        for file in RETRIEVAL_FILES:
            _check_regular_file(path / file)
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


def distinct_names(tasks: Sequence[tuple[str, Path]]) -> list[str]:
    """Names for ``(name, path)`` tasks, no two alike, so that no result overwrites another: tasks that share a
    name are named by the end of their path instead (``a/my.tsv`` and ``b/my.tsv``, with as many folders as it
    takes to tell them apart); the others keep their name.
    """
    members_of: dict[str, list[int]] = {}
    for index, (name, _) in enumerate(tasks):
        members_of.setdefault(name, []).append(index)
    names = [name for name, _ in tasks]
    for members in members_of.values():
        if len(members) < 2:
            continue
        parts = [Path(os.path.abspath(tasks[index][1])).parts[1:] for index in members]  # without the root
        depth = 2  # the folder and the file
        while depth < max(map(len, parts)) and len({tail[-depth:] for tail in parts}) < len(members):
            depth += 1
        for index, tail in zip(members, parts, strict=True):
            names[index] = "/".join(tail[-depth:])
    taken: set[str] = set()
    for index, name in enumerate(names):  # the same path twice, or a path-named task equal to another's name
        unique, number = name, 2
        while unique in taken:
            unique, number = f"{name} ({number})", number + 1
        taken.add(unique)
        names[index] = unique
    return names


# ----------------------------------------------------------------------------------------------------- reading


def _read_rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, list[str]]]:
    """``(line number, [values of columns])`` of a header-first TSV (quoting off), empty lines skipped."""
    try:
        with _open_text(path) as handle:
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
    except csv.Error as error:
        raise unreadable_row(path, reader.line_num, error, TaskFileError) from error
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


def read_labelled_pairs(path: str | os.PathLike[str]) -> list[tuple[str, str, int]]:
    """Read a pair-classification file: ``(sentence1, sentence2, label)`` with labels 0/1, at least one 1.

    Raises:
        TaskFileError: If a column is missing, a label is not 0 or 1, or no pair has label 1 (average precision
            is then undefined).
    """
    path = Path(path)
    rows = _read_rows(path, _COLUMNS[PAIR_CLASSIFICATION])
    bad = next(((line, values[2]) for line, values in rows if values[2] not in ("0", "1")), None)
    if bad is not None:
        raise TaskFileError(f"{path}:{bad[0]}: label {bad[1]!r} is not 0 or 1.")
    if all(values[2] == "0" for _, values in rows):
        raise TaskFileError(
            f"{path}: none of the {len(rows)} pairs has label 1; average precision needs a positive pair."
        )
    return [(values[0], values[1], int(values[2])) for _, values in rows]


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
            not a whole number from -:data:`MAX_QRELS_SCORE` to :data:`MAX_QRELS_SCORE`, or when no query has a
            relevant document.
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
        if abs(score) > MAX_QRELS_SCORE:
            raise TaskFileError(
                f"{qrels_path}:{line_number}: score {score_text!r} is out of range "
                f"(a relevance grade from -{MAX_QRELS_SCORE:,} to {MAX_QRELS_SCORE:,})."
            )
        if score >= 1:
            relevant.setdefault(query_id, {})[doc_id] = int(score)
    if not relevant:
        raise TaskFileError(f"{qrels_path}: no query has a relevant document (score >= 1).")
    kept_queries = {query_id: text for query_id, text in queries.items() if query_id in relevant}
    return RetrievalData(corpus, kept_queries, relevant)


TaskData = LabelledTexts | list[tuple[str, str, int]] | RetrievalData
"""What the reader of a task's type returns (:func:`read_labelled_texts`, :func:`read_labelled_pairs`,
:func:`read_retrieval_folder`)."""


@dataclass(frozen=True)
class TaskContents:
    """A task with its file (or folder) read: scored by ``mteb_task`` and ``run_task`` without reading it again."""

    task: TaskFile
    data: TaskData


def read_task_contents(task: TaskFile | str | os.PathLike[str]) -> TaskContents:
    """Read a task file or folder with the reader of its type.

    Raises:
        TaskFileError: If the file does not follow its format.
    """
    task = task if isinstance(task, TaskFile) else task_file(task)
    data: TaskData
    if task.type == RETRIEVAL:
        data = read_retrieval_folder(task.path)
    elif task.type == PAIR_CLASSIFICATION:
        data = read_labelled_pairs(task.path)
    else:
        data = read_labelled_texts(task.path, with_split=task.type == CLASSIFICATION)
    return TaskContents(task, data)


def task_file_texts(task: TaskContents | TaskFile | str | os.PathLike[str]) -> list[str]:
    """Every text a task embeds (as written and stripped), once each: for embedding them elsewhere first (e.g. in
    another process, then scoring with :func:`~st_static.evaluation.encoders.lookup_encoder`).

    Raises:
        TaskFileError: If the file does not follow its format.
    """
    data = (task if isinstance(task, TaskContents) else read_task_contents(task)).data
    if isinstance(data, RetrievalData):
        texts = [*data.corpus.values(), *data.queries.values()]
    elif isinstance(data, LabelledTexts):
        texts = data.texts
    else:
        texts = [text for first, second, _ in data for text in (first, second)]
    return list(dict.fromkeys(variant for text in texts for variant in (text, text.strip())))
