"""Task-type evaluation on local files (classification, clustering, retrieval, pair classification) through ``mteb``.

Each task file becomes a real ``mteb`` task (``AbsTaskClassification``, ``AbsTaskClusteringLegacy``,
``AbsTaskRetrieval``, ``AbsTaskPairClassification``) whose ``load_data`` reads the file: ``mteb.evaluate`` scores it
offline, with mteb's own code. The formats (the data README's ``tasks/`` section, README "Evaluate"):

* classification: a TSV with ``text``, ``label``, ``split`` (``train``/``test``); logistic regression fitted on the
  train embeddings, accuracy on test.
* clustering: a TSV with ``text``, ``label``; k-means with k = number of labels, V-measure.
* retrieval: a folder with ``corpus.tsv`` (``id``, ``text``), ``queries.tsv`` (``id``, ``text``) and ``qrels.tsv``
  (``query_id``, ``doc_id``, ``score``; >= 1 is relevant); cosine ranking, nDCG@10; a query without a known word
  (a zero vector) retrieves nothing.
* pair classification: a TSV with ``sentence1``, ``sentence2``, ``label`` (0/1); average precision of cosine.

A score is x100. Needs the ``eval`` extra (``mteb``).

Example::

    from st_static.evaluation.task_files import evaluate_task_files

    scores = evaluate_task_files(model, "data", languages=["en"])  # {task: {"metric", "score", "type", ...}}
"""

from __future__ import annotations

from st_static.evaluation.task_files.formats import (
    CLASSIFICATION,
    CLUSTERING,
    MAIN_METRICS,
    MAX_QRELS_SCORE,
    PAIR_CLASSIFICATION,
    RETRIEVAL,
    RETRIEVAL_FILES,
    TASK_TYPES,
    TASKS_FOLDER,
    LabelledTexts,
    RetrievalData,
    TaskContents,
    TaskData,
    TaskFile,
    TaskFileError,
    TaskFileNotFoundError,
    default_task_files,
    distinct_names,
    find_task_files,
    is_task_path,
    read_labelled_pairs,
    read_labelled_texts,
    read_retrieval_folder,
    read_task_contents,
    split_task_arguments,
    task_file,
    task_file_languages,
    task_file_texts,
)
from st_static.evaluation.task_files.mteb_adapters import (
    INSTALL_HINT,
    mteb_encoder,
    mteb_search_model,
    mteb_task,
)
from st_static.evaluation.task_files.run import (
    evaluate_task_file,
    evaluate_task_files,
    run_task,
    task_evaluators,
)
from st_static.evaluation.task_files.summary import (
    TYPE_LABELS,
    sts_mean,
    summary_markdown,
    task_mean,
    type_means,
)

__all__ = [
    "CLASSIFICATION",
    "CLUSTERING",
    "INSTALL_HINT",
    "MAIN_METRICS",
    "MAX_QRELS_SCORE",
    "PAIR_CLASSIFICATION",
    "RETRIEVAL",
    "RETRIEVAL_FILES",
    "TASKS_FOLDER",
    "TASK_TYPES",
    "TYPE_LABELS",
    "LabelledTexts",
    "RetrievalData",
    "TaskContents",
    "TaskData",
    "TaskFile",
    "TaskFileError",
    "TaskFileNotFoundError",
    "default_task_files",
    "distinct_names",
    "evaluate_task_file",
    "evaluate_task_files",
    "find_task_files",
    "is_task_path",
    "mteb_encoder",
    "mteb_search_model",
    "mteb_task",
    "read_labelled_pairs",
    "read_labelled_texts",
    "read_retrieval_folder",
    "read_task_contents",
    "run_task",
    "split_task_arguments",
    "sts_mean",
    "summary_markdown",
    "task_evaluators",
    "task_file",
    "task_file_languages",
    "task_file_texts",
    "task_mean",
    "type_means",
]
