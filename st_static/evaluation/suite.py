"""The evaluation suite: find the known data files in a folder and evaluate a model on each of them."""

from __future__ import annotations

import fnmatch
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from st_static.errors import StStaticError
from st_static.evaluation.encoders import Encoder
from st_static.evaluation.pair_classification import evaluate_pair_classification, read_paraphrase_file
from st_static.evaluation.sts import evaluate_sts, read_sts_file
from st_static.evaluation.task_files import (
    distinct_names,
    evaluate_task_file,
    find_task_files,
    read_task_contents,
    task_file_languages,
)
from st_static.evaluation.translation import evaluate_translation_retrieval, read_bitext_file
from st_static.model.languages import two_letter_code

logger = logging.getLogger(__name__)


class NoEvaluationDataError(StStaticError, ValueError):
    """A data folder holds none of the files the suite knows."""


class DataFolderNotFoundError(StStaticError, FileNotFoundError):
    """A data folder that does not exist or is not a folder."""


@dataclass(frozen=True)
class EvaluationTask:
    """One data file and how to evaluate on it."""

    name: str
    kind: str
    path: Path


# (glob relative to the data folder, kind, task-name prefix); the task name is the prefix + the file stem
# (DEVELOPING.md: stsb-en-test, sick-dev, tatoeba-deu-eng, tuxpaint-fra-eng, msrp-dev).
KNOWN_FILES: tuple[tuple[str, str, str], ...] = (
    ("sts/stsb-*.tsv", "sts", ""),
    ("sts/sick-*.tsv", "sts", ""),
    ("tatoeba/*.tsv", "translation", "tatoeba-"),
    ("xling/tuxpaint/*.tsv", "translation", "tuxpaint-"),
    ("pairclass/msrp-*.tsv", "pair_classification", ""),
)
BITEXT_PREFIXES = ("tatoeba", "tuxpaint")
"""First parts of the names of bitext tasks, whose files are named by ISO 639-3 codes (``tatoeba-fra-eng``) and hold
dev halves (the test halves are withheld)."""

_EVALUATORS: dict[str, Callable[[Encoder, Any], dict[str, Any]]] = {  # a task's path, or its read file
    "sts": evaluate_sts,
    "translation": evaluate_translation_retrieval,
    "pair_classification": evaluate_pair_classification,
    "task": evaluate_task_file,  # DATA/tasks/ or a user's task file, run through mteb (result "type": its task type)
}


def find_tasks(
    data_dir: str | os.PathLike[str], include: str | None = None, task_files: bool = True
) -> list[EvaluationTask]:
    """The known data files under ``data_dir`` (see :data:`KNOWN_FILES`); other files are ignored.

    Args:
        data_dir: A folder holding ``sts/``, ``tatoeba/``, ``xling/tuxpaint/`` and ``pairclass/`` files (see
            :data:`KNOWN_FILES`) and ``tasks/`` (task files, see :mod:`st_static.evaluation.task_files`; kind
            ``"task"``).
        include: Keep only tasks whose name matches this glob, or one of these comma-separated globs (e.g.
            ``"stsb-en-*"`` or ``"stsb-en-test,sick-dev"``).
        task_files: Include ``tasks/``.

    Raises:
        DataFolderNotFoundError: If ``data_dir`` is not a folder (a ``FileNotFoundError``).
        NoEvaluationDataError: If no known file is there.
    """
    root = Path(data_dir)
    if not root.is_dir():
        problem = "is a file, not a data folder" if root.exists() else "no such data folder"
        raise DataFolderNotFoundError(f"{root}: {problem}.")
    globs = None if include is None else [glob.strip() for glob in include.split(",") if glob.strip()]
    tasks = []
    for pattern, kind, prefix in KNOWN_FILES:
        for path in sorted(root.glob(pattern)):
            name = path.stem if path.stem.startswith(prefix) else prefix + path.stem
            if path.is_file() and (globs is None or any(fnmatch.fnmatch(name, glob) for glob in globs)):
                tasks.append(EvaluationTask(name, kind, path))
    if task_files and (root / "tasks").is_dir():
        tasks += [EvaluationTask(task.name, "task", task.path) for task in find_task_files(root, include=include)]
    if not tasks:
        known = ", ".join([pattern for pattern, _, _ in KNOWN_FILES] + ["tasks/"] * task_files)
        raise NoEvaluationDataError(f"{root}: no evaluation file found (looked for {known}).")
    return tasks


_READERS: dict[str, Callable[[Path], object]] = {
    "sts": read_sts_file,
    "translation": read_bitext_file,
    "pair_classification": read_paraphrase_file,
    "task": read_task_contents,
}

ReadTasks = Mapping[tuple[str, str], object]
"""The read files of tasks by :func:`task_key`, as :func:`check_tasks` returns them."""


def task_key(task: EvaluationTask) -> tuple[str, str]:
    """What makes two tasks one evaluation: their kind and the real path of their file."""
    return task.kind, os.path.realpath(task.path)


def check_tasks(tasks: list[EvaluationTask]) -> ReadTasks:
    """Read every task's file once, with the reader its evaluation uses, so that a file it would refuse fails now.

    Returns:
        The read files, for :func:`evaluate_tasks` to score without reading them again.

    Raises:
        st_static.data_files.DataFormatError: Naming the first file (and row) that cannot be evaluated.
    """
    read: dict[tuple[str, str], object] = {}
    for task in tasks:
        key = task_key(task)
        if key not in read:
            read[key] = _READERS[task.kind](task.path)
    return read


def evaluate_tasks(
    encoder: Encoder, tasks: list[EvaluationTask], show_progress_bar: bool = False, contents: ReadTasks | None = None
) -> dict[str, dict[str, Any]]:
    """Evaluate ``encoder`` on every task: on its file as ``contents`` (from :func:`check_tasks`) holds it, or as read
    now.

    A file named twice is evaluated once; tasks that share a name are named by their paths' ends instead
    (:func:`~st_static.evaluation.task_files.distinct_names`).

    Returns:
        ``{task_name: result}``; every result has ``metric``, ``score`` (x100) and ``kind``.

    Raises:
        st_static.data_files.DataFormatError: If a file is corrupt (named in the message).
    """
    tasks = distinct_tasks(tasks)
    results: dict[str, dict[str, Any]] = {}
    for task in tqdm(tasks, desc="Evaluating", disable=not show_progress_bar):
        logger.info("Evaluating on %s (%s)", task.name, task.path)
        data = (contents or {}).get(task_key(task), task.path)
        result = _EVALUATORS[task.kind](encoder, data)
        results[task.name] = {**result, "kind": task.kind}
    return results


def distinct_tasks(tasks: list[EvaluationTask]) -> list[EvaluationTask]:
    """``tasks`` without repeats of a file, renamed where names clash (``a/my.tsv``, ``b/my.tsv``)."""
    seen: set[tuple[str, str]] = set()
    unique = []
    for task in tasks:
        key = task_key(task)
        if key not in seen:
            seen.add(key)
            unique.append(task)
    names = distinct_names([(task.name, task.path) for task in unique])
    return [replace(task, name=name) for task, name in zip(unique, names, strict=True)]


def task_evaluator(
    data_dir: str | os.PathLike[str],
    tasks: str | None = None,
    prompt: str | None = None,
    languages: list[str] | None = None,
) -> Callable[[Any], dict[str, dict[str, Any]]]:
    """A function scoring a model on the data files in ``data_dir`` (only tasks matching ``tasks`` globs).

    Task files (``tasks/``) are scored only when ``tasks`` names them. Without ``tasks``, ``languages`` keeps the dev
    and test files in those languages (:func:`default_tasks`: a cross-lingual build scores its own languages' STS,
    Tatoeba and Tux Paint files, not the other 18). Every selected file is read now, and only now: each score is of
    the files as they were when the evaluator was made.

    Raises:
        FileNotFoundError, NoEvaluationDataError: If the folder or the tasks are missing (checked now).
        st_static.data_files.DataFormatError: If a selected file cannot be evaluated (checked now).
    """
    from st_static.evaluation.encoders import model_encoder

    selected = find_tasks(data_dir, include=tasks, task_files=tasks is not None)
    if tasks is None and languages:
        selected = default_tasks(selected, languages)
        if not selected:
            raise NoEvaluationDataError(f"{data_dir}: no dev or test file in the languages {', '.join(languages)}.")
    contents = check_tasks(selected)

    def evaluate(model: Any) -> dict[str, dict[str, Any]]:
        return evaluate_tasks(model_encoder(model, prompt=prompt), selected, contents=contents)

    return evaluate


EVALUATION_SPLITS = ("dev", "test")
"""Splits evaluated by default (train files are for training, not for scores)."""


def task_languages(name: str) -> set[str]:
    """The languages a task's texts are in, as models list them, from its name (``stsb-en-de-test`` -> {en, de};
    ``tuxpaint-fra-eng`` -> {fr, en}; task files: see :func:`~st_static.evaluation.task_files.task_file_languages`)."""
    parts = name.split("-")
    if parts[0] in BITEXT_PREFIXES:
        return {two_letter_code(part) for part in parts[1:]}
    if parts[0] == "stsb":
        return set(parts[1:-1])
    return {"en"}  # sick, msrp


def task_split(name: str) -> str:
    """The split of a task (the last part of its name: dev, test or train; Tatoeba and Tux Paint files are dev
    halves)."""
    return "dev" if name.split("-", 1)[0] in BITEXT_PREFIXES else name.rsplit("-", 1)[-1]


def default_tasks(tasks: list[EvaluationTask], languages: list[str] | None) -> list[EvaluationTask]:
    """The dev and test tasks and the task files in ``languages`` (all languages when ``None``), in the order found."""
    wanted = set(languages) if languages else None
    return [
        task
        for task in tasks
        if (task.kind == "task" or task_split(task.name) in EVALUATION_SPLITS)
        and (wanted is None or (task_file_languages if task.kind == "task" else task_languages)(task.name) <= wanted)
    ]
