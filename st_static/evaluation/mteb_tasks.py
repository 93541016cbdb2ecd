"""MTEB glue: run ``mteb`` tasks or benchmarks on a model, and wrap local STS files as ``mteb`` tasks.

``mteb`` downloads its task data from the Hugging Face Hub, so :func:`run_mteb` works only where the Hub (or a
filled ``datasets`` cache) is reachable. :func:`local_sts_task` builds a real ``mteb`` STS task from a local
file, which runs offline through the same ``mteb.evaluate`` code.

English MTEB, with Hub access::

    st-static evaluate MODEL --mteb "MTEB(eng, v2)"            # the 41 tasks of the English benchmark
    st-static evaluate MODEL --mteb STSBenchmark,SICK-R,STS12,STS13,STS14,STS15,STS16   # the STS part
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from st_static.data_files import read_scored_pairs
from st_static.errors import StStaticError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

INSTALL_HINT = 'MTEB evaluation needs the `mteb` package: pip install "st-static[eval]"'


class MTEBError(StStaticError, RuntimeError):
    """An MTEB run could not be done (unknown task, no Hub access, mteb missing)."""


def _import_mteb() -> Any:
    try:
        import mteb
    except ImportError as error:
        raise MTEBError(INSTALL_HINT) from error
    return mteb


def split_task_names(spec: str) -> list[str]:
    """Split ``"STS12,MTEB(eng, v2)"`` on commas outside parentheses: ``["STS12", "MTEB(eng, v2)"]``."""
    names = [name.strip() for name in re.split(r",(?![^()]*\))", spec)]
    return [name for name in names if name]


def resolve_tasks(names: list[str]) -> list[Any]:
    """The ``mteb`` task objects for task or benchmark names (a benchmark expands to its tasks).

    Raises:
        MTEBError: If a name is neither a task nor a benchmark.
    """
    mteb = _import_mteb()
    tasks: list[Any] = []
    for name in names:
        try:
            tasks.extend(mteb.get_benchmark(name).tasks)
            continue
        except Exception:  # not a benchmark name: try it as a task
            pass
        try:
            tasks.extend(mteb.get_tasks(tasks=[name]))
        except Exception as error:
            raise MTEBError(f"{name!r} is neither an MTEB task nor an MTEB benchmark ({error}).") from error
        if not tasks or tasks[-1].metadata.name != name:
            raise MTEBError(f"{name!r} is neither an MTEB task nor an MTEB benchmark.")
    return tasks


def run_mteb(
    model: SentenceTransformer,
    tasks: list[Any],
    batch_size: int = 64,
    prompt: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Run ``mteb.evaluate`` on ``tasks`` and return their main scores x100, keyed ``"mteb:<task name>"``.

    Args:
        model: The model.
        tasks: ``mteb`` task objects (from :func:`resolve_tasks` or :func:`local_sts_task`).
        batch_size: Encoding batch size.
        prompt: A prompt for every input; ``None`` uses the model's own prompt settings.

    Raises:
        MTEBError: If a task's data cannot be downloaded (no Hub access) or a task fails.
    """
    mteb = _import_mteb()
    encode_kwargs: dict[str, Any] = {"batch_size": batch_size}
    if prompt:
        encode_kwargs["prompt"] = prompt
    try:
        model_result = mteb.evaluate(
            model,
            tasks,
            cache=None,
            encode_kwargs=encode_kwargs,
            show_progress_bar=False,
            raise_error=True,
        )
    except (ConnectionError, OSError) as error:
        raise MTEBError(
            f"MTEB could not load the task data ({error}); mteb downloads it from the Hugging Face Hub, which is "
            "not reachable from here. Run --mteb where the Hub is reachable, or evaluate local files with --data."
        ) from error
    main_metrics = {task.metadata.name: task.metadata.main_score for task in tasks}
    results: dict[str, dict[str, Any]] = {}
    for task_result in model_result.task_results:
        results[f"mteb:{task_result.task_name}"] = {
            "metric": main_metrics.get(task_result.task_name, "main_score"),
            "score": 100.0 * float(task_result.get_score()),
            "splits": sorted(task_result.scores),
            "kind": "mteb",
        }
    return results


def local_task_metadata(name: str, description: str, task_type: str, language: str, main_score: str) -> Any:
    """mteb ``TaskMetadata`` of a task whose data is read from local files (no Hub dataset, one ``test`` split)."""
    from mteb.abstasks.task_metadata import TaskMetadata

    return TaskMetadata(
        name=name,
        dataset={"path": f"local/{name}", "revision": "local"},
        description=description,
        reference=None,
        type=task_type,
        category="t2t",
        modalities=["text"],
        eval_splits=["test"],
        eval_langs=[language],
        main_score=main_score,
        date=None,
        domains=None,
        task_subtypes=None,
        license=None,
        annotations_creators=None,
        dialect=None,
        sample_creation=None,
        bibtex_citation=None,
    )


def local_sts_task(
    path: str | os.PathLike[str],
    name: str | None = None,
    language: str = "eng-Latn",
    min_score: float = 0,
    max_score: float = 5,
) -> Any:
    """An ``mteb`` STS task (``AbsTaskSTS``) over a local ``sentence1``/``sentence2``/``score`` file, split "test".

    The data is read here, so evaluating the task needs no network. Its main score is ``cosine_spearman``.
    """
    _import_mteb()
    from datasets import Dataset, DatasetDict
    from mteb.abstasks.sts import AbsTaskSTS

    pairs = read_scored_pairs(path)
    task_name = name or f"Local-{os.path.splitext(os.path.basename(path))[0]}"
    metadata = local_task_metadata(task_name, f"STS pairs read from {path}.", "STS", language, "cosine_spearman")

    class LocalSTSTask(AbsTaskSTS):
        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            if self.data_loaded:
                return
            columns = {"sentence1": pairs.sentences1, "sentence2": pairs.sentences2, "score": pairs.scores}
            self.dataset = DatasetDict({"test": Dataset.from_dict(columns)})
            self.data_loaded = True

    LocalSTSTask.metadata = metadata
    LocalSTSTask.min_score = min_score
    LocalSTSTask.max_score = max_score
    LocalSTSTask.__name__ = "LocalSTSTask_" + re.sub(r"\W", "_", task_name)
    return LocalSTSTask()
