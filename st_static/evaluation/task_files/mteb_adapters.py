"""The ``mteb`` side of task files: an ``mteb`` task object per task file and an ``mteb`` encoder adapter."""

from __future__ import annotations

import os
import re
from typing import Any, cast

import numpy as np

from st_static.evaluation.encoders import Encoder
from st_static.evaluation.task_files.formats import (
    CLASSIFICATION,
    CLUSTERING,
    MAIN_METRICS,
    PAIR_CLASSIFICATION,
    RETRIEVAL,
    LabelledTexts,
    RetrievalData,
    TaskContents,
    TaskData,
    TaskFile,
    read_task_contents,
    task_file,
    task_file_languages,
)

INSTALL_HINT = 'Task evaluation needs the `mteb` package: pip install "st-static[eval]"'

_MTEB_TYPES = {
    CLASSIFICATION: "Classification",
    CLUSTERING: "Clustering",
    RETRIEVAL: "Retrieval",
    PAIR_CLASSIFICATION: "PairClassification",
}
_MTEB_LANGUAGES = {"en": "eng-Latn", "de": "deu-Latn", "ja": "jpn-Jpan", "zh": "cmn-Hans", "fr": "fra-Latn"}


CLUSTERING_EXPERIMENTS = 10
"""k-means runs (bootstrap samples) whose mean V-measure a clustering task reports (mteb's default)."""


def _import_mteb() -> Any:
    try:
        import mteb
    except ImportError as error:
        from st_static.evaluation.mteb_tasks import MTEBError

        raise MTEBError(INSTALL_HINT) from error
    return mteb


def _metadata(task: TaskFile, language: str) -> Any:
    from st_static.evaluation.mteb_tasks import local_task_metadata

    description = f"Local {task.type.replace('_', ' ')} task read from {task.path.name}."
    return local_task_metadata(task.name, description, _MTEB_TYPES[task.type], language, MAIN_METRICS[task.type])


def _task_data(task: TaskContents | TaskFile) -> TaskData:
    """The data of a task: those already read, or its file read now."""
    return (task if isinstance(task, TaskContents) else read_task_contents(task)).data


def mteb_task(task: TaskContents | TaskFile | str | os.PathLike[str]) -> Any:
    """A real ``mteb`` task over a local task file or folder; its ``load_data`` reads the file (no Hub), or takes the
    data of :class:`TaskContents` (read before).

    Classification trains mteb's logistic regression on the whole train half once (``n_experiments=1``, no
    undersampling); clustering is mteb's bootstrapped k-means (k = number of labels; the mean V-measure of
    :data:`CLUSTERING_EXPERIMENTS` runs, each over as many texts drawn with replacement as the file holds: one
    k-means run's V-measure moves by about 5 points with its initialisation alone); retrieval ranks the whole corpus
    by cosine.

    Raises:
        MTEBError: If ``mteb`` is not installed.
        TaskFileError: If the file does not follow its format (read when the task loads its data).
    """
    _import_mteb()
    from datasets import Dataset, DatasetDict
    from mteb.abstasks.classification import AbsTaskClassification
    from mteb.abstasks.clustering import AbsTaskClustering
    from mteb.abstasks.pair_classification import AbsTaskPairClassification
    from mteb.abstasks.retrieval import AbsTaskRetrieval

    source = task if isinstance(task, TaskContents | TaskFile) else task_file(task)
    task = source.task if isinstance(source, TaskContents) else source
    languages = sorted(task_file_languages(task.name))
    language = _MTEB_LANGUAGES.get(languages[0], "eng-Latn") if len(languages) == 1 else "eng-Latn"

    def label_ids(labels: list[str], first: set[str] | None = None) -> list[int]:
        """Labels as numbers in sorted order, those in ``first`` numbered before the others."""
        first = first or set()
        order = sorted(set(labels), key=lambda label: (label not in first, label))
        index = {label: number for number, label in enumerate(order)}
        return [index[label] for label in labels]

    if task.type == CLASSIFICATION:

        class LocalClassificationTask(AbsTaskClassification):
            samples_per_label = 2**62  # the whole train half
            n_experiments = 1

            def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
                if self.data_loaded:
                    return
                data = cast(LabelledTexts, _task_data(source))
                # The test half's labels get the first numbers: mteb takes a test half with two labels for a
                # binary task and scores its average precision with label 1 as positive, which must then exist.
                # Accuracy does not depend on the numbering.
                test_labels = {
                    label for label, split in zip(data.labels, data.splits or [], strict=True) if split == "test"
                }
                labels = label_ids(data.labels, first=test_labels)
                splits: dict[str, dict[str, list[Any]]] = {"train": {"text": [], "label": []}}
                splits["test"] = {"text": [], "label": []}
                for text, label, split in zip(data.texts, labels, data.splits or [], strict=True):
                    splits[split]["text"].append(text)
                    splits[split]["label"].append(label)
                self.dataset = DatasetDict({name: Dataset.from_dict(columns) for name, columns in splits.items()})
                self.data_loaded = True

        task_class: type = LocalClassificationTask
    elif task.type == CLUSTERING:

        class LocalClusteringTask(AbsTaskClustering):
            max_fraction_of_documents_to_embed = None  # every text
            n_clusters = CLUSTERING_EXPERIMENTS

            def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
                if self.data_loaded:
                    return
                data = cast(LabelledTexts, _task_data(source))
                self.max_documents_per_cluster = len(data.texts)  # each experiment: a bootstrap sample of the file
                rows = {"sentences": list(data.texts), "labels": label_ids(data.labels)}
                self.dataset = DatasetDict({"test": Dataset.from_dict(rows)})
                self.data_loaded = True

        task_class = LocalClusteringTask
    elif task.type == RETRIEVAL:

        class LocalRetrievalTask(AbsTaskRetrieval):
            k_values = (1, 3, 5, 10, 20, 100)

            def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
                if self.data_loaded:
                    return
                data = cast(RetrievalData, _task_data(source))
                corpus = Dataset.from_dict(
                    {"id": list(data.corpus), "text": list(data.corpus.values()), "title": [""] * len(data.corpus)}
                )
                queries = Dataset.from_dict({"id": list(data.queries), "text": list(data.queries.values())})
                relevant = {query: dict(documents) for query, documents in data.relevant.items()}  # mteb's own copy
                split = {"corpus": corpus, "queries": queries, "relevant_docs": relevant, "top_ranked": None}
                self.dataset = {"default": {"test": split}}
                self.data_loaded = True

        task_class = LocalRetrievalTask
    else:

        class LocalPairClassificationTask(AbsTaskPairClassification):
            def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
                if self.data_loaded:
                    return
                pairs = cast(list[tuple[str, str, int]], _task_data(source))
                columns = {
                    "sentence1": [[first for first, _, _ in pairs]],  # one row holding every pair (mteb's v1 shape)
                    "sentence2": [[second for _, second, _ in pairs]],
                    "labels": [[label for _, _, label in pairs]],
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


def mteb_search_model(encoder: Encoder) -> Any:
    """An ``mteb`` search model for retrieval tasks: mteb's own cosine search over :func:`mteb_encoder`, except
    that a query whose vector is zero (no word the model knows) retrieves nothing.

    Such a query has cosine 0 with every document; left to mteb, the tie order (document ids) ranks its documents
    and could give it credit for a relevant one. Retrieving nothing scores it 0 (nDCG, recall, MRR), and it still
    counts in the mean.
    """
    _import_mteb()
    from mteb.models.search_wrappers import SearchEncoderWrapper
    from mteb.types import PromptType

    class QueryNotingEncoder:
        """Embeds through ``encoder`` and notes which rows of the last query batch are zero."""

        def __init__(self) -> None:
            self.inner = mteb_encoder(encoder)
            self.mteb_model_meta = self.inner.mteb_model_meta
            self.zero_query_rows: np.ndarray = np.zeros(0, dtype=bool)

        def encode(self, inputs: Any, **kwargs: Any) -> np.ndarray:
            vectors = self.inner.encode(inputs, **kwargs)
            if kwargs.get("prompt_type") == PromptType.query:
                self.zero_query_rows = ~np.any(vectors, axis=1)
            return vectors

        def similarity(self, embeddings1: Any, embeddings2: Any) -> Any:
            return self.inner.similarity(embeddings1, embeddings2)

    class LocalSearch:
        def __init__(self) -> None:
            self.encoder = QueryNotingEncoder()
            self.wrapper = SearchEncoderWrapper(self.encoder)
            self.mteb_model_meta = self.encoder.mteb_model_meta

        def index(self, corpus: Any, **kwargs: Any) -> None:
            self.wrapper.index(corpus, **kwargs)

        def search(self, queries: Any, **kwargs: Any) -> dict[str, dict[str, float]]:
            results = self.wrapper.search(queries, **kwargs)
            zero_rows = self.encoder.zero_query_rows
            if len(zero_rows) != len(queries):
                raise RuntimeError(f"Noted {len(zero_rows)} query vectors for {len(queries)} queries.")
            for query_id in np.asarray(queries["id"], dtype=object)[zero_rows]:
                results[query_id] = {}
            return results

    return LocalSearch()
