"""``distill``: a static model from a teacher in one call, returned in memory (save it when you want to)."""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from st_static.extraction.corpus import CorpusError
from st_static.files import check_work_folder, folder_lock
from st_static.pipeline.run import Evaluator, run_pipeline, with_overrides
from st_static.settings import BuildSettings
from st_static.teachers import DEFAULT_TEACHER, find_teacher

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from st_static.extraction.corpus import CorpusSource

logger = logging.getLogger(__name__)


def distill(
    teacher: str | os.PathLike[str] | SentenceTransformer = DEFAULT_TEACHER,
    corpus: CorpusSource | None = None,
    *,
    parallel: list[str | os.PathLike[str]]
    | Mapping[str, str | os.PathLike[str] | list[str | os.PathLike[str]]]
    | None = None,
    languages: list[str] | tuple[str, ...] | None = None,
    settings: BuildSettings | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    evaluate: Evaluator | None = None,
    **overrides: Any,
) -> SentenceTransformer:
    """Distil a static word embedding model from a Sentence Transformer.

    Example::

        import st_static

        model = st_static.distill("sentence-transformers/all-MiniLM-L6-v2", "corpus.txt", dim=256)
        model.encode(["The weather is lovely today."])
        model.save_pretrained("swe-minilm-256")  # loads anywhere with SentenceTransformer("swe-minilm-256")

    Args:
        teacher: A Hub id, a local folder, a registry name (``minilm``) or a loaded ``SentenceTransformer``.
        corpus: The sentences to distil on: a text file (one per line), a list of str, or a ``datasets.Dataset``
            with a ``text`` column. Small corpora work but give weak tables (a warning says so).
        parallel: Translation-pair files for a cross-lingual table: ``{language: [files]}`` (or ``{language:
            file}``), a list of ``"LANG=FILE"`` strings, or one file per paired language (file *i* pairs the first
            language with ``languages[i + 1]``); see :class:`~st_static.settings.BuildSettings`.
        languages: The table's languages (default ``["en"]``); the first is the corpus's.
        settings: Full build settings; ``teacher``, ``parallel``, ``languages`` and ``overrides`` change them.
        work_dir: Where the stages are cached, so a later call with the same inputs resumes (default: a temporary
            folder, removed afterwards): a new or empty folder, or an earlier call's (checked as ``st-static build
            --work-dir`` is: never a link, a file, the current folder or a folder holding an input).
        evaluate: Scores the model after each stage (see :func:`st_static.evaluation.task_evaluator`).
        **overrides: Any field of the build's stage settings by name, e.g. ``dim=128``, ``steps=2000``,
            ``sentences_per_word=20``, ``vocab_size=50_000``.

    Returns:
        The distilled model (``StaticWordAverage`` + ``Normalize``), not saved anywhere.
    """
    from sentence_transformers import SentenceTransformer

    chosen = settings or BuildSettings()
    changes: dict[str, Any] = dict(overrides)
    if parallel is not None:
        changes["parallel"] = _parallel_entries(parallel)
    if languages is not None:
        changes["languages"] = list(languages)
    with tempfile.TemporaryDirectory(prefix="st-static-distill-") as scratch:
        if isinstance(teacher, SentenceTransformer):
            changes["teacher"] = str(_save_loaded_teacher(teacher, Path(scratch)))
        else:
            changes["teacher"] = str(teacher)
        files = _corpus_file_list(corpus)
        if files is not None:
            changes["corpus"] = files
        chosen = with_overrides(chosen, **changes)
        if work_dir is not None:  # a folder of the caller's: checked as a build's --work-dir
            teacher_folder = [chosen.extraction.teacher] if os.path.isdir(chosen.extraction.teacher) else []
            work = check_work_folder(work_dir, inputs=[*chosen.inputs, *teacher_folder])
        else:
            work = Path(scratch) / "work"
        in_memory = corpus if corpus is not None and files is None else None
        with folder_lock(work, remove_if_unused=True):
            result = run_pipeline(chosen, work, corpus=in_memory, evaluate=evaluate)
    return result.model


def _parallel_entries(
    parallel: list[str | os.PathLike[str]] | Mapping[str, str | os.PathLike[str] | list[str | os.PathLike[str]]],
) -> list[str] | Mapping[str, Any]:
    """``parallel`` for ``BuildSettings`` (which turns a mapping into ``LANG=FILE`` entries): one file, a list."""
    if isinstance(parallel, Mapping):
        return parallel
    if isinstance(parallel, str | os.PathLike):
        return [str(parallel)]
    return [str(path) for path in parallel]


def _corpus_file_list(corpus: CorpusSource | None) -> list[str] | None:
    """The corpus files ``corpus`` names (a path, or a list of ``pathlib.Path``), else ``None`` (sentences).

    Raises:
        CorpusError: For a short list of str that are all names of existing files: sentences or files is
            ambiguous there, so the caller must pass ``pathlib.Path`` objects for files.
    """
    if isinstance(corpus, str | os.PathLike):
        return [str(corpus)]
    if isinstance(corpus, list | tuple) and corpus and all(isinstance(item, os.PathLike) for item in corpus):
        return [str(item) for item in corpus]
    if (
        isinstance(corpus, list | tuple)
        and 0 < len(corpus) <= 16
        and all(isinstance(item, str) and Path(item).is_file() for item in corpus)
    ):
        raise CorpusError(
            f"The corpus {list(corpus)!r} is a list of file names: give several corpus files as pathlib.Path "
            "objects (a list of str is a list of sentences)."
        )
    return None


def _save_loaded_teacher(teacher: SentenceTransformer, scratch: Path) -> Path:
    """Save an in-memory teacher where the stages can load it, under its own name when it has one."""
    card = teacher.model_card_data
    name = card.model_id or card.base_model or "teacher"
    known = find_teacher(name)
    base = known.repo_id.split("/")[-1] if known is not None else Path(str(name)).name
    folder = scratch / (base if base not in ("", ".", "..") else "teacher")  # never the scratch folder's parent
    teacher.save_pretrained(str(folder))
    return folder
